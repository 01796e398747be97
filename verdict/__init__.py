"""Verdict engine: "what to collect next" cards from three tables (spec/verdict.md).

Reads ``evaluation_run``, ``task_spec`` and ``dataset_index`` only (never
``judge`` internals); :func:`build_cards` is the entry point, :mod:`verdict.checks`
the 14 automatic checks, :mod:`verdict.grade` the self-grading runner and
:mod:`verdict.screen` the HTML screen.
"""

from __future__ import annotations

from verdict.engine import build_cards
from verdict.model import ENGINE_VERSION, Card, Evidence, card_from_dict, card_to_dict

__version__ = ENGINE_VERSION
__all__ = ["ENGINE_VERSION", "Card", "Evidence", "build_cards", "card_from_dict",
           "card_to_dict"]
