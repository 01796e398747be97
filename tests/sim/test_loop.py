"""The loop end to end on physics truth, small: v1 judges -> labels -> train v2 -> re-judge ->
eval --compare. It proves the loop runs and v2's scores land in the report; how good v2 is
is the benchmark's question (bench/judge_quality.py, docs/judge-quality.md), not this test's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.sim, pytest.mark.ray, pytest.mark.slow]


def rcjudge(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_v1_to_v2_loop_on_physics_rollouts(tmp_path, tiny_models):
    from judge.ledgers.store import Ledger
    from judge.sim.generate import make_config, write_sim_set

    bundles = tmp_path / "bundles"
    write_sim_set(bundles, 16, make_config(seed=5, tasks=("pick-place", "drawer-open"),
                                           width=96, height=64, fps=8, duration_s=2.0,
                                           group_size=1), workers=2)
    db = f"sqlite:///{tmp_path / 'l.db'}"
    at = "2026-12-01T00:00:00Z"
    rcjudge("batch", str(bundles), "--judge", "tiny", "--db", db)
    with Ledger.open(db) as ledger:
        v1_before = {r: ledger.get_judgment(r, "tiny") for r in ledger.judged_run_ids("tiny")}
    rcjudge("truth-labels", str(bundles), "--out", str(tmp_path / "labels.csv"),
            "--labeled-at", at)
    rcjudge("truth-labels", str(bundles), "--out", str(tmp_path / "truth.csv"),
            "--labeled-at", at, "--near-threshold")
    rcjudge("labels", "import", str(tmp_path / "labels.csv"), "--db", db)
    v2 = tmp_path / "tiny-loop.yaml"
    trained = json.loads(rcjudge("train", "--from", "tiny", "--out", "tiny-loop", "--config",
                                 str(v2), "--db", db, "--epochs", "1", "--max-steps", "2",
                                 "--test-fraction", "0.3", "--json").stdout)
    rcjudge("rejudge", "--from", "tiny", "--to", str(v2), "--db", db)
    report = json.loads(rcjudge("eval", "--judge", "tiny", "--compare", str(v2), "--labels",
                                str(tmp_path / "truth.csv"), "--db", db, "--bootstrap", "50",
                                "--json").stdout)

    with Ledger.open(db) as ledger:
        assert ledger.counts()["judgments"] == 32  # v2's rows beside v1's
        assert {r: ledger.get_judgment(r, "tiny") for r in v1_before} == v1_before  # untouched
    split = trained["split"]
    assert sum(split.values()) == 16 and split["test"] >= 1
    runs = report["runs"]
    assert runs["trained_on"]["count"] == 16 - split["test"]  # v2 never scored on its data
    assert runs["scored"] == split["test"]
    for name in ("tiny", "tiny-loop"):
        scores = report["versions"][name]
        assert scores["success"]["n"] == split["test"]
        assert 0.0 <= scores["success"]["accuracy"] <= 1.0
        assert scores["success"]["ece"] is not None and len(scores["success"]["bins"]) == 10
    assert report["versions"]["tiny-loop"]["training"]["parent"] == "tiny"
