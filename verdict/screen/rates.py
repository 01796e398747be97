"""Rectified success rates beside the cards' ``success_rate`` (issue 37), as plain data.

The verdict engine reads its three tables only and never imports the judge: the rates are
computed on the judge's side (``judge.learn.rates``; ``rcjudge rates --json`` writes them)
and come here as a JSON document::

    {"by": ["policy", "task"],            # or ["task"]; the cells' key order
     "cells": [CellRates.to_dict(), …]}   # {"cell": [...], "n_runs", "n_labels", "design",
                                          #  "judge_only", "labels_only", "rectified"}

(a bare list of cells reads as ``by`` policy, task; other top-level keys are ignored).
A card takes the cell of its ``task_id`` and, with a policy key, the policy whose
``name@version`` is the card's ``model_artifact`` (the ledger export writes it so; the
policy reads ``vendor/name@version``). The card itself is untouched: its ``success_rate``
stays the spec's; the rectified reading sits beside it.

A card is **marked** when the success-rate rule (``성공률 미달``: the rate rounded half-up
to 2 decimals is strictly below ``target_success_rate``) decides otherwise for some value
inside the rectified interval than it did for the card: ``whole`` when it does for every
value of the interval, ``part`` when the interval straddles the target. The rule is only
reached by a card the decision order lets reach it (not ``학습에 없는 조건``), with a
``success_rate`` and a known target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from verdict.errors import VerdictInputError
from verdict.exact import half_up
from verdict.model import NOT_TRAINED, RATE_BELOW

KEYS = ("policy", "task", "body", "checkpoint")


@dataclass(frozen=True)
class CardRate:
    """The rectified reading of one card's cell, and whether its verdict would change."""

    cell: tuple[str, ...]
    n_runs: int
    n_labels: int
    estimate: float | None
    low: float | None
    high: float | None
    method: str
    note: str
    flip: str | None  # "whole", "part" or None (see the module docstring)
    target: float | None


def _number(where: str, value: Any, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and 0.0 <= value <= 1.0):
        raise VerdictInputError(f"{where}: expected a number in [0, 1] or null, got {value!r}")
    return float(value)


def _count(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise VerdictInputError(f"{where}: expected a count (an integer ≥ 0), got {value!r}")
    return value


def read_rates(doc: Any, source: str) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """``(by, cells)`` of a rates document, every field the screen reads checked.

    Raises:
        VerdictInputError: one line naming ``source`` and the field at fault.
    """
    if isinstance(doc, list):
        doc = {"by": ["policy", "task"], "cells": doc}
    if not isinstance(doc, dict):
        raise VerdictInputError(f"{source}: expected a JSON object with by and cells")
    by = doc.get("by")
    if (not isinstance(by, list) or not by or not all(k in KEYS for k in by)
            or len(set(by)) != len(by)):
        raise VerdictInputError(f"{source}: by: expected distinct keys among "
                                f"{', '.join(KEYS)}, got {by!r}")
    if "task" not in by or not set(by) <= {"policy", "task"}:
        raise VerdictInputError(f"{source}: by {','.join(by)}: a card is one task of one "
                                "artifact; give rates by task or by policy,task")
    cells = doc.get("cells")
    if not isinstance(cells, list):
        raise VerdictInputError(f"{source}: cells: expected a list")
    for i, c in enumerate(cells):
        where = f"{source}: cells[{i}]"
        if not isinstance(c, dict):
            raise VerdictInputError(f"{where}: expected an object")
        cell = c.get("cell")
        if (not isinstance(cell, list) or len(cell) != len(by)
                or not all(isinstance(x, str) for x in cell)):
            raise VerdictInputError(f"{where}.cell: expected {len(by)} strings ({','.join(by)})")
        _count(f"{where}.n_runs", c.get("n_runs"))
        _count(f"{where}.n_labels", c.get("n_labels"))
        rect = c.get("rectified")
        if not isinstance(rect, dict):
            raise VerdictInputError(f"{where}.rectified: expected an object")
        for k in ("estimate", "low", "high"):
            _number(f"{where}.rectified.{k}", rect.get(k))
        if (rect.get("low") is None) != (rect.get("high") is None):
            raise VerdictInputError(f"{where}.rectified: low and high go together")
        for k in ("method", "note"):
            if not isinstance(rect.get(k, ""), str):
                raise VerdictInputError(f"{where}.rectified.{k}: expected a string")
    return tuple(by), cells


def _fires(rate: float, target: float) -> bool:
    """The spec's rule 3 on one value: rounded half-up to 2 decimals, strictly below."""
    return half_up(rate) < target


def flip(card: dict[str, Any], low: float | None, high: float | None,
         target: float | None) -> str | None:
    """``whole``, ``part`` or None: whether the success-rate rule decides otherwise than
    for the card inside [``low``, ``high``] (module docstring)."""
    if (card.get("verdict") in (None, NOT_TRAINED) or card.get("success_rate") is None
            or target is None or low is None or high is None):
        return None
    fired = card.get("verdict") == RATE_BELOW
    at_low, at_high = _fires(low, target), _fires(high, target)
    if at_low != at_high:
        return "part"
    return "whole" if at_low != fired else None


def _target(card: dict[str, Any], targets: dict[str, float]) -> float | None:
    for e in card.get("evidence") or ():
        if (isinstance(e, dict) and e.get("source") == "task_spec"
                and e.get("field") == "target_success_rate"
                and isinstance(e.get("value"), int | float)):
            return float(e["value"])
    return targets.get(card.get("task_id"))


def card_rates(cards: list[dict[str, Any]], by: tuple[str, ...], cells: list[dict[str, Any]],
               targets: dict[str, float] | None = None) -> dict[str, CardRate]:
    """task_id -> its :class:`CardRate`, for the cards whose cell is in ``cells``.

    ``targets``: task_id -> ``target_success_rate`` from the task_spec table, for cards
    whose evidence does not cite it (the tables, when the screen has them).
    """
    index: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for c in cells:
        values = dict(zip(by, c["cell"], strict=True))
        index.setdefault((values["task"], values.get("policy")), []).append(c)
    out = {}
    for card in cards:
        task, artifact = card.get("task_id"), card.get("model_artifact")
        if "policy" in by:
            found = [c for (t, policy), cs in index.items() for c in cs
                     if t == task and policy is not None and artifact
                     and policy.endswith("/" + str(artifact))]
        else:
            found = index.get((task, None), [])
        if len(found) != 1:  # none, or two vendors' policies of one name@version: not shown
            continue
        c, rect = found[0], found[0]["rectified"]
        target = _target(card, targets or {})
        out[task] = CardRate(tuple(c["cell"]), c["n_runs"], c["n_labels"], rect.get("estimate"),
                             rect.get("low"), rect.get("high"), rect.get("method", ""),
                             rect.get("note", ""), flip(card, rect.get("low"), rect.get("high"),
                                                        target), target)
    return out
