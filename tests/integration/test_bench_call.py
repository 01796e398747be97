"""`rcjudge bench call`: the stage table of single calls, its markdown, its chart, its errors."""

from __future__ import annotations

import json

import pytest
import yaml

from rcjudge.cli import main


def test_percentiles_and_targets_by_hand():
    from bench.call import summarize

    samples = [{"stages": {"intake": 0.01 * k, "models": 1.0 * k, "ledger": 0.02},
                "cpu_s": 0.5 * k, "gpu_s": 0.0, "usd": 1e-5 * k, "models_usd": 2e-6 * k}
               for k in range(1, 12)]  # k = 1 … 11
    s = summarize(samples, "v")
    rows = {r["stage"]: r for r in s["stages"]}
    # 11 values: p50 is the 6th (k = 6); p90 = 1 + 0.9·10 = the 10th (k = 10); p99 = 10.9
    assert (rows["intake"]["p50"], rows["intake"]["p90"], rows["intake"]["p99"]) == (
        0.06, 0.1, 0.109)
    assert rows["intake"]["target_s"] == 0.04 and rows["intake"]["p50_within_target"] is False
    assert rows["models"]["p50"] == 6.0 and rows["models"]["p50_within_target"] is True
    assert rows["ledger"]["p99"] == 0.02 and rows["ledger"]["p50_within_target"] is True
    assert s["per_call"]["cpu_s"] == {"p50": 3.0, "p90": 5.0, "p99": 5.45}
    assert s["total_p50_s"] == pytest.approx(0.06 * 1 + 6.0 + 0.02)
    assert (s["target_models_usd"], s["target_call_usd"]) == (0.13, 0.181)


def test_bench_call_on_a_fake_judge_writes_the_table_and_the_chart(make_bundles, tmp_path,
                                                                    capsys):
    folder = make_bundles(3, seed=41, width=96, height=64, fps=5)[0].parent
    path = tmp_path / "fake-bench.yaml"
    path.write_text(yaml.safe_dump({"name": "fake-bench", "models": [
        {"name": n, "backend": "fake",
         "options": {"script": {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"}}}
        for n in "abc"]}))
    out = tmp_path / "out"
    assert main(["bench", "call", "--judge", str(path), "--bundles", str(folder),
                 "--repeats", "2", "--out", str(out), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["calls"] == 6  # 3 bundles × 2 passes (the warm-up call not counted)
    assert [r["stage"] for r in s["stages"]] == ["intake", "frames", "model a", "model b",
                                                 "model c", "models", "vote", "ledger"]
    assert [r["target_s"] for r in s["stages"]] == [0.04, 1.2, None, None, None, 6.0, 0.01,
                                                   0.025]
    assert s["per_call"]["gpu_s"] == {"p50": 0.0, "p90": 0.0, "p99": 0.0}  # all on CPU
    assert s["per_call"]["cpu_s"]["p50"] > 0
    table = (out / "stages.md").read_text().splitlines()
    assert table[0] == "judge `fake-bench`, 6 calls"
    assert table[2] == "| stage | p50 | p90 | p99 | spec target |"
    assert table[4].startswith("| intake | ") and table[4].endswith(" | ~40.0 ms |")
    assert table[9].endswith(" | ~6.00 s · $0.13 |")
    assert (out / "stages.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_call_refuses_an_empty_folder_and_zero_repeats(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    # a folder without bundles: a refused input, exit 1 (rcjudge --help)
    assert main(["bench", "call", "--judge", "tiny", "--bundles", str(tmp_path / "empty")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rcjudge: error: {tmp_path / 'empty'}: no bundle") and \
        len(err.splitlines()) == 1
    assert main(["bench", "call", "--judge", "tiny", "--bundles", str(tmp_path),
                 "--repeats", "0"]) == 2
    assert capsys.readouterr().err == "rcjudge: error: --repeats 0: expected at least 1\n"
