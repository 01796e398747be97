"""``bench.gpu_check --production --tiny``: rc-judge-v1's own config end to end on CPU.

The production processors and settings of configs/judges/rc-judge-v1.yaml (SmolVLM at
longest_edge 768, Gemma padded to its square), 2-layer test widths, the transformers backend.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_check_production_tiny_runs_rc_judge_v1_end_to_end(tmp_path):
    out = tmp_path / "production.json"
    subprocess.run([sys.executable, "-m", "bench.gpu_check", "--production", "--tiny",
                    "--backend", "transformers", "--cameras", "1", "--repeats", "1",
                    "--batch", "1", "--out", str(out)], cwd=ROOT, check=True, timeout=600,
                   capture_output=True)
    report = json.loads(out.read_text())
    assert (report["version"], report["device"], report["images_per_question"]) == (
        "rc-judge-v1", "cpu", 8)
    assert list(report["models"]) == ["qwen2.5-vl-7b", "gemma3-12b", "smolvlm2-2.2b"]
    for name, r in report["models"].items():
        assert "error" not in r, (name, r)
        tokens = r["prompt_tokens"]
        assert tokens["max_model_len"] == 8192
        assert max(tokens["attempt"], tokens["success"]) <= 8192
        assert r["p50_s"] > 0 and r["judgments_per_hour"] > 0 and r["usd_per_judgment"] > 0
    t = {n: r["prompt_tokens"]["attempt"] for n, r in report["models"].items()}
    # image tokens alone: Gemma 256 a frame; SmolVLM at 768 px 5 tiles x 81 a 320x240 frame
    # (the hub's 1,536 px would be 13 x 81 = 1,053: 8,424 for 8 frames, over the context)
    assert 8 * 256 < t["gemma3-12b"] < 8 * 256 + 400
    assert 8 * 5 * 81 < t["smolvlm2-2.2b"] < 8 * 13 * 81
    ensemble = report["ensemble"]
    assert ensemble["judgments_per_hour"] == min(r["judgments_per_hour"]
                                                 for r in report["models"].values())
