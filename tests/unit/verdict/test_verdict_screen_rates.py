"""Rectified rates beside the cards (issue 37, item 5): matching, the mark, the file's checks.

The rates come as ``judge.learn.rates.CellRates.to_dict()`` documents (what ``rcjudge rates
--json`` writes); the verdict package reads them as plain data. The mark's cases are worked
by hand on the spec's rule 3 (half-up to 2 decimals, strictly below the target).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge.learn.rates import RateRow, rates
from rcjudge.cli import main
from verdict.errors import VerdictInputError
from verdict.screen.rates import card_rates, flip, read_rates


def _card(verdict: str, rate: float | None, target: float | None = 0.9) -> dict:
    ev = [] if target is None else [{"source": "task_spec", "field": "target_success_rate",
                                     "agg": None, "value": target}]
    return {"task_id": "t", "model_artifact": "pol@1", "verdict": verdict,
            "success_rate": rate, "evidence": ev}


@pytest.mark.parametrize(("verdict", "rate", "low", "high", "want"), [
    ("배포 후보", 1.0, 0.30, 0.61, "whole"),    # every value of the interval is below 0.9
    ("배포 후보", 1.0, 0.85, 0.97, "part"),     # 0.85 fires, 0.97 does not
    ("배포 후보", 1.0, 0.895, 0.97, None),      # half-up: 0.895 -> 0.90, not below 0.9
    ("배포 후보", 1.0, 0.8949, 0.97, "part"),   # 0.8949 -> 0.89: below
    ("성공률 미달", 0.6, 0.50, 0.70, None),     # fires over the whole interval, as it did
    ("성공률 미달", 0.6, 0.50, 0.95, "part"),
    ("성공률 미달", 0.6, 0.92, 0.99, "whole"),  # the rule would not fire anywhere
    ("실패 유형 쏠림", 0.8, 0.10, 0.50, "whole"),  # passed rule 3; the interval would not
    ("작업 주기 초과", 0.95, 0.91, 0.99, None),
    ("학습에 없는 조건", 1.0, 0.1, 0.2, None),  # rule 3 is never reached
])
def test_the_mark_follows_rule_3_inside_the_interval(verdict, rate, low, high, want) -> None:
    assert flip(_card(verdict, rate), low, high, 0.9) == want


def test_no_mark_without_a_rate_a_target_or_an_interval() -> None:
    assert flip(_card("배포 후보", None), 0.1, 0.2, 0.9) is None  # success empty
    assert flip(_card("배포 후보", 1.0), 0.1, 0.2, None) is None
    assert flip(_card("배포 후보", 1.0), None, None, 0.9) is None  # too few labels


def _cell(cell: list[str], low: float | None, high: float | None, est: float | None = 0.5
          ) -> dict:
    return {"cell": cell, "n_runs": 40, "n_labels": 10, "design": "uniform",
            "rectified": {"estimate": est, "low": low, "high": high, "method": "ppi++",
                          "note": ""}}


def test_a_card_takes_its_tasks_cell_of_its_artifacts_policy() -> None:
    cards = [_card("배포 후보", 1.0) | {"task_id": "pick"},
             _card("배포 후보", 1.0) | {"task_id": "push"},
             _card("성공률 미달", 0.6, None) | {"task_id": "wipe"}]
    cells = [_cell(["acme/pol@1", "pick"], 0.3, 0.6), _cell(["acme/pol@2", "pick"], 0.9, 1.0),
             _cell(["acme/pol@1", "push"], 0.95, 0.99),
             _cell(["acme/pol@1", "wipe"], 0.95, 0.99), _cell(["other/pol@1", "wipe"], 0.1, 0.2)]
    got = card_rates(cards, ("policy", "task"), cells)
    assert set(got) == {"pick", "push"}  # wipe: two vendors' pol@1, ambiguous: not shown
    assert (got["pick"].cell, got["pick"].low, got["pick"].flip) == (("acme/pol@1", "pick"),
                                                                     0.3, "whole")
    assert got["push"].flip is None
    # a target from the tables where the card's evidence has none (a skew card)
    skew = [_card("실패 유형 쏠림", 0.8, None) | {"task_id": "pick"}]
    assert card_rates(skew, ("task", "policy"), [_cell(["pick", "acme/pol@1"], 0.1, 0.5)],
                      {"pick": 0.7})["pick"].flip == "whole"
    assert card_rates(skew, ("task",), [_cell(["pick"], 0.1, 0.5)])["pick"].flip is None


@pytest.mark.parametrize(("doc", "message"), [
    ({"by": ["policy", "body"], "cells": []}, "a card is one task of one artifact"),
    ({"by": ["task", "task"], "cells": []}, "by: expected distinct keys"),
    ({"by": ["task"], "cells": [{"cell": ["a", "b"]}]}, r"cells\[0\]\.cell: expected 1 strings"),
    ({"by": ["task"], "cells": [_cell(["a"], 0.1, 0.2) | {"n_runs": -1}]},
     r"cells\[0\]\.n_runs: expected a count"),
    ({"by": ["task"], "cells": [_cell(["a"], 0.1, 1.5)]},
     r"cells\[0\]\.rectified\.high: expected a number in \[0, 1\] or null, got 1\.5"),
    ({"by": ["task"], "cells": [_cell(["a"], 0.1, None)]}, "low and high go together"),
    ("nope", "expected a JSON object with by and cells"),
])
def test_a_bad_rates_document_is_one_line_naming_the_field(doc, message) -> None:
    with pytest.raises(VerdictInputError, match=message):
        read_rates(doc, "rates.json")


def judge_rates(tasks: dict[str, tuple[int, int, int]]) -> dict:
    """The judge's side: ``CellRates.to_dict()`` by task from rows where the judge voted
    success on every run (P 0.9) and a uniform sample of ``n`` of ``N`` runs was labelled,
    ``k`` of them successes: task -> (N, n, k)."""
    rows = []
    for task, (n_runs, n, k) in tasks.items():
        for i in range(n_runs):
            y = (i < k) if i < n else None
            rows.append(RateRow(f"{task}-{i:03d}", (task,), 0.9, True, y,
                                None if y is None else n / n_runs))
    return {"by": ["task"], "cells": [c.to_dict() for c in rates(rows)]}


def test_verdict_build_shows_the_rectified_rate_beside_success_rate(gold_dir: Path,
                                                                    tmp_path: Path) -> None:
    # lid-press-K: 배포 후보 at 1.0 (target 0.9); its labels say 6 of 10: Clopper-Pearson
    # [0.262, 0.878] (under 30 labels), all below 0.9: the verdict changes over the interval.
    # box-close-F: 배포 후보 at 0.9 (target 0.85); 9 of 10 labels: [0.5550, 0.9975]
    # (shown half-up: 0.55, 1.00): 0.85 is inside: part.
    doc = judge_rates({"lid-press-K": (40, 10, 6), "box-close-F": (40, 10, 9)})
    lid = doc["cells"][1]["rectified"]
    assert (lid["method"], round(lid["estimate"], 3), round(lid["low"], 4),
            round(lid["high"], 4)) == ("clopper-pearson", 0.6, 0.2624, 0.8784)
    path = tmp_path / "rates.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    page = tmp_path / "screen.html"
    assert main(["verdict", "--evaluation-run", str(gold_dir / "evaluation_run.jsonl"),
                 "--task-spec", str(gold_dir / "task_spec.csv"), "--dataset-index",
                 str(gold_dir / "dataset_index.csv"), "--artifact", "RLDX-1-rc7",
                 "--out", str(tmp_path / "cards.json"), "--html", str(page),
                 "--rates", str(path)]) == 0
    html = page.read_text(encoding="utf-8")
    lid_row = html.split('data-task="lid-press-K"', 1)[1].split("</details>", 1)[0]
    assert lid_row.startswith(' data-flip="whole">')
    assert "0.60 [0.26, 0.88]" in lid_row
    assert "clopper-pearson · 10 labels of 40 runs · target 0.9" in lid_row
    box = html.split('data-task="box-close-F"', 1)[1].split("</details>", 1)[0]
    assert box.startswith(' data-flip="part">') and "0.90 [0.55, 1.00]" in box
    assert html.count("data-flip=") == 2 + 2  # the two rows and their marks
    assert "보정 성공률 2개, 판정이 바뀔 수 있는 카드 2개" in html
    cards = json.loads((tmp_path / "cards.json").read_text(encoding="utf-8"))
    assert [c["success_rate"] for c in cards if c["task_id"] == "lid-press-K"] == [1.0]
    assert main(["verdict", "build", "--cards", str(tmp_path / "cards.json"), "--rates",
                 str(tmp_path / "missing.json"), "--html", str(page)]) == 1
