"""Fixtures of the verdict tests: small Arrow tables written by hand, the gold set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verdict.gold.make import render
from verdict.gold.tasks import SEED

HERE = Path(__file__).resolve().parent
GOLD = HERE.parents[2] / "verdict" / "gold"


@pytest.fixture(scope="session")
def seed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seven seed tasks rebuilt as raw rows (jsonl + csv), as the gold maker writes them."""
    out = tmp_path_factory.mktemp("seed")
    for name, text in render(SEED).items():
        (out / name).write_text(text, encoding="utf-8")
    return out


@pytest.fixture(scope="session")
def seed_cards() -> list[dict[str, Any]]:
    """The seven example cards of the seed, verbatim."""
    return json.loads((HERE / "data" / "verdict_cards.seed.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def gold_dir() -> Path:
    return GOLD
