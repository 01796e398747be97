"""Verdict engine: "what to collect next" cards from three tables (spec/verdict.md).

Reads ``evaluation_run``, ``task_spec`` and ``dataset_index`` only (never
``judge`` internals); :func:`build_cards` is the entry point, :mod:`verdict.checks`
the 14 automatic checks, :mod:`verdict.grade` the self-grading runner and
:mod:`verdict.screen` the HTML screen.

:func:`build_cards` (the engine: pyarrow, numpy) is imported on first use (PEP 562), so
``verdict.cli``'s parser costs nothing.
"""

from __future__ import annotations

from typing import Any

from verdict.model import ENGINE_VERSION, Card, Evidence, card_from_dict, card_to_dict

__version__ = ENGINE_VERSION
__all__ = ["ENGINE_VERSION", "Card", "Evidence", "build_cards", "card_from_dict",
           "card_to_dict"]


def __getattr__(name: str) -> Any:
    if name == "build_cards":
        from verdict.engine import build_cards

        return build_cards
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
