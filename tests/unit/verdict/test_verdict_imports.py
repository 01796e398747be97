"""Importing the verdict package (engine, CLI, screen) pulls in no GPU or model stack."""

from __future__ import annotations

import subprocess
import sys


def test_import_is_light() -> None:
    code = ("import sys, verdict, verdict.cli, verdict.checks, verdict.grade, "
            "verdict.screen.render; "
            "heavy = sorted(m for m in ('torch', 'vllm', 'transformers', 'av', 'ray') "
            "if m in sys.modules); print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
