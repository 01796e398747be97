"""bench.active at a tiny size: real synthetic bundles, the tiny judge's real models, the
queue's real ranking; the curves land on the label counts asked, every strategy of a seed
starts from the same labels, and a second run reads the feature cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.active import fit_head, head_p, labels_to_reach, main, mean_steps


def test_fit_head_separates_a_separable_set_and_shrinks_with_l2():
    x = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    loose, tight = fit_head(x, y, 0.01), fit_head(x, y, 100.0)
    assert list(head_p(x, loose) > 0.5) == [False, False, True, True]
    assert loose[0] > tight[0] > 0
    assert abs(tight[1]) < 1e-6  # symmetric data: no bias either way
    # one class only: the bias goes toward it, finite
    w = fit_head(x, np.ones(4), 1.0)
    assert np.all(head_p(x, w) > 0.5) and np.all(np.isfinite(w))


def test_labels_to_reach_and_the_seeds_mean():
    steps = [{"labels": 10, "accuracy": 0.6}, {"labels": 15, "accuracy": 0.8},
             {"labels": 20, "accuracy": 0.7}]
    assert labels_to_reach(steps, 0.8) == 15
    assert labels_to_reach(steps, 0.9) is None
    assert labels_to_reach(steps, 0.8, held=True) is None  # 0.7 after it
    assert labels_to_reach(steps, 0.7, held=True) == 15
    assert labels_to_reach(steps, 0.6, held=True) == 10
    other = [{"labels": 10, "accuracy": 0.8}, {"labels": 15, "accuracy": 0.6}]
    assert mean_steps([{"steps": steps}, {"steps": other}]) == [
        {"labels": 10, "accuracy": pytest.approx(0.7)},
        {"labels": 15, "accuracy": pytest.approx(0.7)}]


def test_the_bench_at_a_tiny_size(tiny_models, make_bundles, tmp_path, capsys):
    bundles = make_bundles(36, seed=5, width=96, height=64, fps=5, duration_s=3.0)
    first = tmp_path / "first"  # 30 of them first, as links: the cache is per bundle
    first.mkdir()
    for b in bundles[:30]:
        (first / b.name).symlink_to(b)
    out = tmp_path / "active"
    argv = ["--judge", "tiny", "--out", str(out), "--labels", "6,10", "--seeds", "0,1",
            "--initial", "4", "--batch", "2", "--bootstrap", "50"]
    assert main(["--bundles", str(first), *argv]) == 0
    assert "hidden states of 30 runs" in capsys.readouterr().err
    argv = ["--bundles", str(bundles[0].parent), *argv, "--png", str(tmp_path / "curves.png")]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert "hidden states of 6 runs" in printed.err  # only those not cached yet
    result = json.loads((out / "curves.json").read_text())
    assert result["runs"]["pool"] + result["runs"]["test"] == 36
    assert len(result["curves"]) == 6  # three strategies, two seeds
    for c in result["curves"]:
        assert [s["labels"] for s in c["steps"]] == [4, 6, 8, 10]
        assert list(c["points"]) == ["6", "10"]
        assert set(c["points"]["10"]) == {"labels", "accuracy", "ece", "ece_raw",
                                          "accuracy_ci", "positives"}
        lo, hi = c["points"]["10"]["accuracy_ci"]
        assert lo <= c["points"]["10"]["accuracy"] <= hi
    for seed in (0, 1):  # one start per seed: every strategy's first point is the same
        firsts = {json.dumps(c["steps"][0]) for c in result["curves"] if c["seed"] == seed}
        assert len(firsts) == 1
    assert "| 10 | **committee** | mean |" in printed.out
    assert "random's mean accuracy at 10 labels" in printed.out
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(argv) == 0  # the cache: no model is loaded again
    assert "hidden states" not in capsys.readouterr().err
