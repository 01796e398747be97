"""`make demo`'s labelling step on a real ledger: the JSON `rcjudge review next --json` prints
is what `rcjudge truth-labels --runs` reads, so the simulated operator labels exactly the
runs the queue picked (SQLite; no models: the judgments are recorded by hand).
"""

from __future__ import annotations

import json

from test_review_queue import record

from judge.ledgers import Ledger
from judge.ledgers.labels import read_labels
from rcjudge.cli import main


def test_truth_labels_label_the_runs_review_next_picked(make_bundles, tmp_path, capsys):
    root = make_bundles(6, seed=4, width=96, height=64, fps=10, duration_s=2.0)[0].parent
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(url) as led:
        for i in range(6):
            record(led, f"synth-0004-{i:04d}", (0.5, 0.5, 0.5))
    assert main(["review", "next", "--judge", "tiny", "--strategy", "random", "--n", "3",
                 "--test-fraction", "0", "--db", url, "--json"]) == 0
    picks = tmp_path / "picks.json"
    picks.write_text(capsys.readouterr().out)
    # random, seed 0: the largest sha256("0:<run id>") first
    assert [p["run_id"] for p in json.loads(picks.read_text())["picks"]] == [
        "synth-0004-0003", "synth-0004-0005", "synth-0004-0000"]
    out = tmp_path / "labels.csv"
    assert main(["truth-labels", str(root), "--out", str(out), "--runs", str(picks),
                 "--labeled-by", "demo-operator", "--labeled-at", "2026-12-01T00:00:00Z"]) == 0
    labels, errors = read_labels(out)
    assert errors == []
    assert [(lb.run_id, lb.attempt, lb.success, lb.failure_class) for _, lb in labels] == [
        ("synth-0004-0000", False, False, "task.no_attempt"),
        ("synth-0004-0003", True, False, "grasp.miss"),
        ("synth-0004-0005", True, True, None)]
    assert main(["labels", "import", str(out), "--db", url]) == 0
    assert capsys.readouterr().out.endswith("3 label(s) for 3 run(s): 3 imported, "
                                            "0 already present\n")
    assert main(["review", "next", "--judge", "tiny", "--strategy", "random", "--n", "6",
                 "--test-fraction", "0", "--db", url, "--json"]) == 0
    left = [p["run_id"] for p in json.loads(capsys.readouterr().out)["picks"]]
    assert left == ["synth-0004-0002", "synth-0004-0001", "synth-0004-0004"]
