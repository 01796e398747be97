"""Importing the packages never imports torch, transformers or vLLM (nor touches CUDA)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from models.base import ModelError
from models.registry import BACKENDS, backend_class


def test_import_is_light():
    code = ("import sys, judge, judge.cli, judge.ensemble.judge, judge.bundle.decode, models, "
            "models.registry, verdict, verdict.cli; "
            "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_backend_lists_known():
    with pytest.raises(ModelError, match="unknown backend 'onnx'; known: fake, transformers, "
                                         "vllm"):
        backend_class("onnx")
    assert set(BACKENDS) == {"fake", "transformers", "vllm"}
