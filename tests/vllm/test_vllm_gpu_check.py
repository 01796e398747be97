"""``bench.gpu_check --tiny`` through the vllm backend (dummy weights), in ``.venv-vllm``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.vllm
ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_tiny_through_vllm(tmp_path):
    out = tmp_path / "gpu_check.json"
    subprocess.run([sys.executable, "-m", "bench.gpu_check", "--tiny", "--repeats", "2",
                    "--models", "gemma3-12b", "--out", str(out)], cwd=ROOT, check=True,
                   timeout=600, capture_output=True)
    report = json.loads(out.read_text())
    assert report["backend"] == "vllm" and report["vllm_importable"] is True
    r = report["models"]["gemma3-12b"]
    assert "error" not in r, r
    assert r["prefix_reuse"] is True
    assert min(r["pair_cold_ms"], r["pair_warm_ms"], r["success_after_attempt_ms"]) > 0
