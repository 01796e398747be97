"""Exempt failures (``success`` false, ``counts_against_policy`` false) leave the task's
evaluation rows: for every metric, the evidence, the 14 checks and the hedge alike.

A table without the column (the gold set, any hand-made table) counts every row,
exactly as before the column existed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.unit.verdict.helpers import ART, ds_row, spec_row, table
from verdict import build_cards, card_to_dict
from verdict.checks import run_checks
from verdict.engine import build_from_inputs
from verdict.reference import Reference
from verdict.tables import COLUMNS, load_inputs

SCHEMA = pa.schema([*COLUMNS["evaluation_run"].items(), ("counts_against_policy", pa.bool_())])

#: (success, failure_reason, cycle_sec, counts_against_policy) of task t.
MIXED = [
    (True, None, 10.0, False), (True, None, 11.0, False), (True, None, 12.0, False),
    (False, "grasp.slip", 13.0, True), (False, "grasp.slip", 14.0, True),
    (False, "env.object_missing", 30.0, False), (False, "env.object_missing", 31.0, False),
    (False, "env.object_missing", 32.0, False),
]
SPEC = [spec_row("t", target=0.5, limit=0.9, max_cycle=13.0)]


def ev_table(task: str, rows: list[tuple], column: bool = True) -> pa.Table:
    """Evaluation rows with (or without) the counts_against_policy column."""
    dicts = [{"task_id": task, "model_artifact": ART, "episode_id": f"{task}-{i}",
              "success": s, "failure_reason": r, "cycle_sec": c, "counts_against_policy": k}
             for i, (s, r, c, k) in enumerate(rows)]
    if column:
        return pa.Table.from_pylist(dicts, schema=SCHEMA)
    return table("evaluation_run", dicts)


def cards_of(ev: pa.Table, spec: list | None = None) -> tuple[list[dict[str, Any]], Reference]:
    inputs = load_inputs(ev, table("task_spec", spec or SPEC), table("dataset_index",
                                                                      [ds_row("t")]), ART)
    return [card_to_dict(c) for c in build_from_inputs(inputs)], Reference(inputs)


def values(card: dict[str, Any]) -> tuple:
    return (card["verdict"], card["success_rate"], card["failure_total"],
            card["top_failure_reason"], card["top_failure_count"], card["top_failure_share"],
            card["cycle_sec_median"])


def counts(card: dict[str, Any]) -> dict[tuple[str, str | None], Any]:
    return {(e["field"], e["agg"]): e["value"] for e in card["evidence"]
            if e["source"] == "evaluation_run"}


def test_exempt_failures_leave_every_metric_and_the_evidence() -> None:
    (card,), ref = cards_of(ev_table("t", MIXED))
    # counted: 3 successes + 2 grasp.slip → 3/5 = 0.6 ≥ 0.5; 2 failures < 3: no skew;
    # median of 10 11 12 13 14 = 12 ≤ 13 (the exempt 30 31 32 are not in it)
    assert values(card) == ("배포 후보", 0.6, 2, "grasp.slip", 2, 1.0, 12.0)
    assert counts(card) == {("episode_id", "count"): 5, ("success", "count"): 3,
                            ("cycle_sec", "median"): 12.0}
    assert card["hedge"] == ("정책 책임이 아닌 실패 3회(counts_against_policy false)는 평가 "
                             "행에서 뺐습니다. 실패가 2회로 3회에 못 미쳐 쏠림 판정은 "
                             "건너뛰었습니다.")
    assert run_checks([card], ref).passed


def test_without_the_column_every_row_counts_as_before() -> None:
    (card,), ref = cards_of(ev_table("t", MIXED, column=False))
    # 3/8 = 0.375 → 0.38 < 0.5; env.object_missing 3 of 5 failures = 0.6;
    # median of 8 values: (13 + 14) / 2
    assert values(card) == ("성공률 미달", 0.38, 5, "env.object_missing", 3, 0.6, 13.5)
    assert run_checks([card], ref).passed
    nulls = [(s, r, c, None) for s, r, c, _ in MIXED]  # a column of nulls: every row counts
    (same,), _ = cards_of(ev_table("t", nulls))
    assert values(same) == values(card)


def test_the_checks_apply_the_same_rule() -> None:
    (counted,), ref = cards_of(ev_table("t", MIXED))
    (every_row,), ref_all = cards_of(ev_table("t", MIXED, column=False))
    report = run_checks([every_row], ref)  # a card that counted the exempt rows
    assert [(r.number, r.reason) for _, r in report.failures()] == [
        (3, "success_rate=0.38, expected 0.6"),
        (4, "failure_total=5, expected 2; top_failure_reason='env.object_missing', expected "
            "'grasp.slip'; top_failure_count=3, expected 2; top_failure_share=0.6, expected "
            "1.0"),
        (6, "cycle_sec_median=13.5, expected 12.0"),
        (13, "evaluation_run.episode_id: count recomputes to 5, card says 8"),
    ]
    assert {r.number for _, r in run_checks([counted], ref_all).failures()} == {3, 4, 6, 13}


def test_only_a_false_success_with_a_false_flag_is_exempt() -> None:
    rows = [
        (None, None, 10.0, False),                 # success empty: counted, rate null
        (False, "grasp.miss", 11.0, None),         # flag empty: counted
        (False, "hardware.estop", 12.0, False),    # exempt
        (True, None, 13.0, False),                 # a success with false: counted
        (False, "", 14.0, True),                   # empty reason, counts
    ]
    (card,), ref = cards_of(ev_table("t", rows))
    # 4 rows: failures grasp.miss and "" → 2; top grasp.miss 1/2 = 0.5; median of
    # 10 11 13 14 = 12; the rate is null because one success is empty (rule 3 skipped)
    assert values(card) == ("배포 후보", None, 2, "grasp.miss", 1, 0.5, 12.0)
    assert counts(card)[("episode_id", "count")] == 4
    assert run_checks([card], ref).passed


def test_a_task_with_only_exempt_rows_is_not_evaluated() -> None:
    rows = [(False, "env.object_missing", 10.0, False), (False, "operator.early_stop", 11.0,
                                                          False)]
    (card,), ref = cards_of(ev_table("t", rows))
    assert (card["verdict"], card["blocked_cause"]) == ("학습에 없는 조건", "평가 미실시")
    assert values(card)[1:] == (None,) * 6
    assert card["hedge"] == (f"evaluation_run 에 이번 회차({ART}) 행이 정책 책임이 아닌 실패 "
                             "2회(counts_against_policy false)뿐이라 성공률·실패·주기 값은 "
                             "비어 있습니다.")
    assert card["missing"]["success_rate"] == ("evaluation_run 행 없음 (정책 책임이 아닌 실패 "
                                               "2행 제외)")
    assert run_checks([card], ref).passed


def test_the_column_is_read_from_csv_and_jsonl(tmp_path: Path) -> None:
    head = "task_id,model_artifact,episode_id,success,failure_reason,cycle_sec," \
           "counts_against_policy\n"
    csv = tmp_path / "ev.csv"
    csv.write_text(head + "".join(
        f"t,{ART},t-{i},{str(s).lower()},{r or ''},{c},{'' if k is None else str(k).lower()}\n"
        for i, (s, r, c, k) in enumerate(MIXED)), encoding="utf-8")
    jsonl = tmp_path / "ev.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ev_table("t", MIXED).to_pylist()),
                     encoding="utf-8")
    for path in (csv, jsonl):
        (card,) = build_cards(path, table("task_spec", SPEC), table("dataset_index",
                                                                   [ds_row("t")]), ART)
        assert values(card_to_dict(card)) == ("배포 후보", 0.6, 2, "grasp.slip", 2, 1.0, 12.0)
