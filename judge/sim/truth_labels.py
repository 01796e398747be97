"""Truth labels: operator-label files made from generators' ``truth.json`` (sim and synth).

``rcjudge truth-labels DIR --out labels.csv`` writes, for every bundle folder under ``DIR``
that holds a ``truth.json`` (or a ``--fraction`` of them, chosen by ``--seed``), one row in
the exact format ``rcjudge labels import`` reads (``judge.ledgers.labels``): ``run_id,
attempt, success, failure_class, labeled_by, labeled_at``. ``run_id`` is the bundle folder's
name. Every row is checked with the importer's own row parser before anything is written.

The subset: each run gets the key ``sha256(f"{seed}:{run_id}")`` and the
``round(fraction * n)`` runs with the smallest keys are labelled, so the same seed and
folder always pick the same runs. Or ``--runs FILE``: exactly the runs the review queue
picked (``rcjudge review next --json``'s ``picks``, :func:`read_picks`), an operator
simulated from the generator's truth labelling what the queue asked for.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from judge.sim.errors import SimError, TruthInputError
from judge.sim.truth_mapping import TruthMapping, load_mapping, read_truth


@dataclass(frozen=True)
class TruthLabelSummary:
    """What ``truth-labels`` wrote."""

    out: str
    runs_found: int
    labeled: int
    fraction: float | None  # None: the runs were named (``runs``)
    seed: int | None


def find_truths(root: str | Path,
                mapping: TruthMapping | None = None) -> list[tuple[str, dict]]:
    """(run_id, truth) of every folder directly under ``root`` with a truth file
    (``truth.json``, or the mapping's ``file``), sorted; the label fields read through the
    mapping, in the project's spelling, over the document's own keys."""
    mapping = mapping or TruthMapping()
    root = Path(root)
    if not root.is_dir():
        raise TruthInputError(f"{root}: not a folder of bundles")
    found = []
    for path in sorted(root.glob(f"*/{mapping.file}")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TruthInputError(f"{path}: not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise TruthInputError(f"{path}: expected a JSON object, got {type(doc).__name__}")
        found.append((path.parent.name, {**doc, **read_truth(doc, mapping, str(path))}))
    return found


def pick(run_ids: list[str], fraction: float, seed: int) -> list[str]:
    """The ``round(fraction * n)`` run ids with the smallest seeded hash keys, sorted."""
    if not 0.0 <= fraction <= 1.0:
        raise SimError(f"--fraction {fraction}: expected a number in [0, 1]")
    key = {r: hashlib.sha256(f"{seed}:{r}".encode()).hexdigest() for r in run_ids}
    return sorted(sorted(run_ids, key=key.__getitem__)[: round(fraction * len(run_ids))])


def read_picks(path: str | Path) -> list[str]:
    """The run ids a review-queue file names, in its order (``rcjudge review next --json``'s
    ``picks``; :func:`judge.learn.select.read_picks` checks it).

    Raises:
        SimError: the file is missing or not that JSON, a pick without a run id, a run id
            named twice (one line naming the file and the pick).
    """
    from judge.learn.select import SelectError
    from judge.learn.select import read_picks as read_queue

    try:
        return [p["run_id"] for p in read_queue(path, "--runs")[1]]
    except SelectError as exc:
        raise SimError(str(exc)) from None


def write_truth_labels(root: str | Path, out: str | Path, fraction: float | None = None,
                       seed: int = 0, labeled_by: str = "truth",
                       labeled_at: str | None = None,
                       near_threshold: bool = False,
                       mapping: str | None = None,
                       runs: Sequence[str] | None = None) -> TruthLabelSummary:
    """Write the label file ``out`` (.csv or .jsonl) for the picked runs under ``root``.

    Args:
        fraction: label this share of the runs, picked by ``seed`` (:func:`pick`); default
            every run (1.0).
        runs: label exactly these run ids (bundle folder names; e.g. :func:`read_picks`),
            instead of a ``fraction``; each must have a truth file under ``root``.
        labeled_at: ISO 8601 time stamped on every row (default: now, UTC, to the second).
        near_threshold: add the ``near_threshold`` column (empty where the truth has none),
            which ``rcjudge eval`` reads for its near-threshold slice; ``labels import``
            refuses that column, so such a file is for eval only.
        mapping: a ``--mapping`` YAML file for truth files of another layout
            (:mod:`judge.sim.truth_mapping`); default the project's ``truth.json``.
    """
    from judge.ledgers.labels import COLUMNS, parse_row

    out = Path(out)
    if out.suffix.lower() not in (".csv", ".jsonl"):
        raise SimError(f"--out {out}: suffix {out.suffix!r}; expected .csv or .jsonl "
                       "(what rcjudge labels import reads)")
    if runs is not None and fraction is not None:
        raise SimError("--runs and --fraction: choose one (--runs names the runs to label, "
                       "--fraction draws a share of them)")
    stamp = labeled_at or datetime.now(UTC).replace(microsecond=0).isoformat()
    layout = load_mapping(mapping)
    truths = dict(find_truths(root, layout))
    if runs is not None:
        missing = [r for r in runs if r not in truths]
        if missing:
            raise SimError(f"--runs: {len(missing)} run(s) with no {layout.file} under {root}: "
                           + ", ".join(missing[:5]) + (" …" if len(missing) > 5 else ""))
        chosen = sorted(runs)
    else:
        chosen = pick(list(truths), 1.0 if fraction is None else fraction, seed)
    rows = []
    for run_id in chosen:
        t = truths[run_id]
        row = {"run_id": run_id, "attempt": "true" if t["attempt"] else "false",
               "success": "true" if t["success"] else "false",
               "failure_class": "" if t["success"] else (t["failure_class"] or ""),
               "labeled_by": labeled_by, "labeled_at": stamp}
        parsed = parse_row(len(rows) + 2, row)
        if isinstance(parsed, list):
            raise SimError(f"{Path(root) / run_id / layout.file}: "
                           + "; ".join(f"{e.field}: {e.message}" for e in parsed))
        if near_threshold:
            flag = t.get("near_threshold")
            row["near_threshold"] = "" if flag is None else ("true" if flag else "false")
        rows.append(row)
    columns = [*COLUMNS, "near_threshold"] if near_threshold else list(COLUMNS)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="") as f:
        if out.suffix.lower() == ".csv":
            writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        else:
            for row in rows:
                extra = ({"near_threshold": {"true": True, "false": False}.get(
                    row["near_threshold"])} if near_threshold else {})
                f.write(json.dumps({**row, "attempt": row["attempt"] == "true",
                                    "success": row["success"] == "true",
                                    "failure_class": row["failure_class"] or None,
                                    **extra}) + "\n")
    named = runs is not None
    return TruthLabelSummary(out=str(out), runs_found=len(truths), labeled=len(rows),
                             fraction=None if named else (1.0 if fraction is None else fraction),
                             seed=None if named else seed)
