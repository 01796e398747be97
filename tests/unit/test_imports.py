"""Importing the packages never imports torch, transformers or vLLM (nor touches CUDA)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from models.base import ModelError
from models.registry import BACKENDS, backend_class


def test_import_is_light():
    code = ("import sys, rcjudge.cli, judge, judge.cli, judge.ensemble.judge, "
            "judge.bundle.decode, models, models.registry, verdict, verdict.cli; "
            "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_backend_lists_known():
    with pytest.raises(ModelError, match="unknown backend 'onnx'; known: fake, transformers, "
                                         "vllm"):
        backend_class("onnx")
    assert set(BACKENDS) == {"fake", "transformers", "vllm"}


def _imported_packages(folder: str) -> dict[str, set[str]]:
    """Top-level packages each module under ``folder`` imports (parsed, not executed)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found: dict[str, set[str]] = {}
    for path in sorted((root / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(root))] = names
    return found


@pytest.mark.parametrize(("folder", "forbidden"), [
    ("judge", {"bench"}),
    ("models", {"judge", "verdict", "bench"}),
    ("verdict", {"judge", "models", "bench"}),
])
def test_imports_point_down_the_design(folder, forbidden):
    """bench/ sits above everything; models/ and verdict/ never reach into judge/ (DESIGN.md)."""
    wrong = {path: sorted(names & forbidden)
             for path, names in _imported_packages(folder).items() if names & forbidden}
    assert wrong == {}


#: What parsing the CLI's arguments must not import (issue 32): each command imports its own.
HEAVY = ("torch", "ray", "transformers", "av", "pyarrow", "sqlalchemy", "numpy")


@pytest.mark.parametrize("argv", [["--help"], ["inspect", "--help"], ["train", "--help"],
                                  ["review", "next", "--help"]])
def test_parsing_the_cli_imports_no_heavy_library(argv):
    code = ("import sys\nfrom rcjudge.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         check=True)
    assert "usage: rcjudge" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_clis_tiny_profiles_are_those_models_tiny_builds():
    from judge.cli import TINY_PROFILES
    from models.tiny import PROFILES

    assert TINY_PROFILES == tuple(PROFILES)


def test_the_clis_review_strategies_are_those_the_queue_ranks_by():
    from judge.cli import REVIEW_STRATEGIES
    from judge.learn.select import STRATEGIES

    assert REVIEW_STRATEGIES == STRATEGIES
