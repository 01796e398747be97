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
    assert main(["labels", "import", str(out), "--db", url, "--picks", str(picks)]) == 0
    assert capsys.readouterr().out.endswith(
        f"3 label(s) for 3 run(s): 3 imported, 0 already present; 3 picked by the queue of "
        f"{picks}\n")
    # each label is stored with its pick, as the review page stores it
    assert main(["review", "stats", "--db", url, "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert [(e["strategy"], e["labels"], e["runs"]) for e in stats["by_strategy"]] == [
        ("random", 3, 3)]
    assert main(["review", "next", "--judge", "tiny", "--strategy", "random", "--n", "6",
                 "--test-fraction", "0", "--db", url, "--json"]) == 0
    left = [p["run_id"] for p in json.loads(capsys.readouterr().out)["picks"]]
    assert left == ["synth-0004-0002", "synth-0004-0001", "synth-0004-0004"]


def test_labels_import_refuses_a_bad_queue_file_before_writing(make_bundles, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger.open(url) as led:
        record(led, "synth-0004-0000", (0.5, 0.5, 0.5))
    labels = tmp_path / "labels.csv"
    labels.write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at\n"
                      "synth-0004-0000,true,true,,op,2026-12-01T00:00:00Z\n")
    pick = {"run_id": "synth-0004-0000", "rank": 1, "score": 0.25, "strategy": "random",
            "reason": "random order (seed 0)"}
    cases = {
        "no_version": ({"picks": [pick]},
                       "judge_version: expected the version whose queue picked the runs"),
        "bad_strategy": ({"judge_version": "tiny", "picks": [{**pick, "strategy": "vibes"}]},
                         "picks[0].strategy: Input should be 'committee', 'uncertainty', "
                         "'random', 'coverage', 'sample' or 'sample-uniform'"),
        "no_rank": ({"judge_version": "tiny", "picks": [{**pick, "rank": None}]},
                    "picks[0].rank: Input should be a valid integer"),
    }
    for name, (doc, why) in cases.items():
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(doc))
        assert main(["labels", "import", str(labels), "--db", url, "--picks", str(f)]) == 2
        assert capsys.readouterr().err == f"rcjudge: error: --picks {f}: {why}\n"
    with Ledger.open(url) as led:
        assert led.labels("synth-0004-0000") == []
