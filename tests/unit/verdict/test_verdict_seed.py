"""The seed's seven example tasks, rebuilt as raw rows, reproduce the example cards."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest

from tests.unit.verdict.helpers import ART, runs, spec_row, table
from verdict import build_cards, card_to_dict
from verdict.checks import run_checks
from verdict.errors import VerdictInputError
from verdict.reference import Reference
from verdict.tables import load_inputs, read_table

FIELDS = ("task_id", "model_artifact", "verdict", "blocked_cause", "success_rate",
          "failure_total", "top_failure_reason", "top_failure_count", "top_failure_share",
          "cycle_sec_median", "more_episode_count", "recapture_site", "recapture_hand")
SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "verdict" / "schema"
                     / "verdict_card.schema.json").read_text(encoding="utf-8"))


def _cards(d: Path) -> list[dict]:
    return [card_to_dict(c) for c in build_cards(
        d / "evaluation_run.jsonl", d / "task_spec.csv", d / "dataset_index.csv", "RLDX-1-rc7")]


def test_seed_verdicts_and_numbers_reproduce(seed_dir: Path, seed_cards: list[dict]) -> None:
    ours = {c["task_id"]: c for c in _cards(seed_dir)}
    assert len(ours) == 7
    for card in seed_cards:
        assert {k: ours[card["task_id"]][k] for k in FIELDS} == {k: card[k] for k in FIELDS}


def test_seed_cards_order_and_schema(seed_dir: Path) -> None:
    cards = _cards(seed_dir)
    assert [c["task_id"] for c in cards] == [
        "cable-plug-G", "box-close-F", "pick-tray-A", "insert-conn-B", "screw-M4-C",
        "wire-route-D", "door-open-J"]
    for card in cards:
        jsonschema.validate(card, SCHEMA)


def test_checks_on_the_seed_cards_find_grasp_slip_count(seed_dir: Path,
                                                       seed_cards: list[dict]) -> None:
    inputs = load_inputs(seed_dir / "evaluation_run.jsonl", seed_dir / "task_spec.csv",
                         seed_dir / "dataset_index.csv", "RLDX-1-rc7")
    report = run_checks(seed_cards, Reference(inputs))
    assert [(t, r.number, r.reason) for t, r in report.failures()] == [
        ("insert-conn-B", 12, "evaluation_run.grasp_slip_count is not a column of evaluation_run")]
    assert report.file_findings == ()
    assert not report.passed


def test_our_seed_cards_pass_all_14_checks(seed_dir: Path) -> None:
    inputs = load_inputs(seed_dir / "evaluation_run.jsonl", seed_dir / "task_spec.csv",
                         seed_dir / "dataset_index.csv", "RLDX-1-rc7")
    report = run_checks(_cards(seed_dir), Reference(inputs))
    assert report.passed
    assert sum(len(c.results) for c in report.cards) == 7 * 14


def test_parquet_csv_jsonl_give_the_same_cards(seed_dir: Path, tmp_path: Path) -> None:
    names = ("evaluation_run", "task_spec", "dataset_index")
    src = {"evaluation_run": "evaluation_run.jsonl", "task_spec": "task_spec.csv",
           "dataset_index": "dataset_index.csv"}
    tabs = {n: read_table(seed_dir / src[n], n) for n in names}
    for n, t in tabs.items():
        pq.write_table(t, tmp_path / f"{n}.parquet")
        with open(tmp_path / f"{n}.jsonl", "w", encoding="utf-8") as fh:
            for row in t.to_pylist():
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    want = _cards(seed_dir)
    for ext in ("parquet", "jsonl"):
        got = build_cards(*(tmp_path / f"{n}.{ext}" for n in names), "RLDX-1-rc7")
        assert [card_to_dict(c) for c in got] == want


def test_missing_columns_are_all_named(tmp_path: Path) -> None:
    path = tmp_path / "task_spec.csv"
    path.write_text("task_id,required_skill,max_cycle_sec\nt,pick,12\n", encoding="utf-8")
    with pytest.raises(VerdictInputError, match=r"task_spec \(.*\): missing 3 column\(s\): "
                       r"target_success_rate, top_reason_share_limit, min_episode_count"):
        read_table(path, "task_spec")


def test_bad_inputs_are_refused_with_the_value(tmp_path: Path) -> None:
    spec = table("task_spec", [spec_row("a"), spec_row("a")])
    with pytest.raises(VerdictInputError, match="task_id must be unique, repeated: a"):
        load_inputs(table("evaluation_run", []), spec, table("dataset_index", []), ART)
    bad = table("evaluation_run", runs("a", [(True, None, 0.0)]))
    with pytest.raises(VerdictInputError, match=r"1 row\(s\) with cycle_sec ≤ 0"):
        load_inputs(bad, table("task_spec", []), table("dataset_index", []), ART)
    (tmp_path / "t.xlsx").write_bytes(b"")
    with pytest.raises(VerdictInputError, match=r"suffix '\.xlsx'; expected \.parquet, \.csv or"):
        read_table(tmp_path / "t.xlsx", "task_spec")
    with pytest.raises(VerdictInputError, match="artifact: empty"):
        load_inputs(bad, table("task_spec", []), table("dataset_index", []), "")
