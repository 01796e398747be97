"""The truth ``rcjudge eval`` scores against: a label file, or the ledger's operator labels.

First stage of the eval (then :mod:`judge.learn.evaluate` joins it with the judgments,
then :mod:`judge.learn.report` renders the scores). A label file has the columns of
``rcjudge labels import`` (``judge.ledgers.labels``), each parsed and checked by the same
code, plus one optional column, ``near_threshold`` (a boolean, or empty when not known),
which ``labels import`` refuses: it is a fact of the bench's truth, not of an operator's
label. As in the ledger, a run's current label is its latest ``labeled_at``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.errors import JudgeError
from judge.ledgers.errors import RowError
from judge.ledgers.labels import COLUMNS, _bool, _rows, parse_row
from judge.ledgers.records import Label
from judge.ledgers.store import Ledger

NEAR = "near_threshold"


class EvalError(JudgeError, ValueError):
    """An eval that cannot run: unknown version, nothing to score, a bad input file."""


@dataclass(frozen=True)
class Truth:
    """What is true of one run: its current label, and whether it was near the threshold."""

    label: Label
    near_threshold: bool | None = None


def read_truth_file(path: str | Path, taxonomy: Taxonomy | None = None) -> dict[str, Truth]:
    """The current label of every run in a label file (the latest ``labeled_at`` wins).

    The standard columns are parsed and checked exactly as ``rcjudge labels import`` does
    (:func:`judge.ledgers.labels.parse_row`); ``near_threshold`` may be added, a boolean
    or empty.

    Raises:
        EvalError: the file is missing or has the wrong suffix, or any row is bad (all
            listed, in one line).
    """
    path = Path(path)
    if not path.is_file():
        raise EvalError(f"--labels {path}: label file not found")
    if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
        raise EvalError(f"--labels {path}: suffix {path.suffix!r}; expected .csv or .jsonl")
    taxonomy = taxonomy or load_taxonomy()
    problems: list[str] = []
    current: dict[str, tuple[Any, int, Truth]] = {}
    seen: dict[tuple, int] = {}
    for line, raw in _rows(path, optional=(NEAR,)):  # the reader of `labels import`
        if isinstance(raw, RowError):
            problems.append(str(raw))
            continue
        label = parse_row(line, {c: raw[c] for c in COLUMNS}, taxonomy)
        near_raw = raw.get(NEAR)
        near = None if near_raw is None or near_raw == "" else _bool(near_raw)
        if near is None and near_raw not in (None, ""):
            problems.append(f"line {line}: {NEAR}: {near_raw!r} is not a boolean; expected "
                            "true/false/1/0/yes/no or empty")
        if isinstance(label, list):
            problems.extend(str(e) for e in label)
            continue
        key = (label.run_id, label.labeled_by, label.labeled_at)
        if key in seen:
            problems.append(f"line {line}: row: duplicate of line {seen[key]} "
                            "(same run_id, labeled_by, labeled_at)")
            continue
        seen[key] = line
        held = current.get(label.run_id)
        if held is None or (label.labeled_at, line) > held[:2]:
            current[label.run_id] = (label.labeled_at, line, Truth(label, near))
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more"
                                           if len(problems) > 5 else "")
        raise EvalError(f"--labels {path}: {len(problems)} error(s): {shown}")
    return {rid: t for rid, (_, _, t) in current.items()}


def ledger_truth(ledger: Ledger) -> dict[str, Truth]:
    """The ledger's current operator label of every labelled run."""
    return {rid: Truth(s.label) for rid, s in ledger.current_labels().items()}
