"""The labels each trained version saw: what a rectified rate of it may never use.

Beside the operator labels (migration 0011). ``rcjudge train`` (and ``average``,
``calibrate``) record, with the version it makes, its parent, where its labels came from,
and every labelled run it used, with the label's id (None when the label came from a file)
and the part: ``train`` (the gradient), ``validation`` (early stopping) or ``calibration``
(the Platt maps). A version's errors on those runs look small by construction, so they
cannot rectify its rates (``judge.learn.rate_inputs``).

A version saw what it used and everything its parent saw (its weights start from the
parent's): :func:`seen_runs` walks the ``parent`` chain for as long as the ledger records
it. A version trained against another ledger has no record here; the rates layer then
reads its ``training.used_runs`` file (bundle hashes) instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.ledgers.errors import LedgerError
from judge.ledgers.store import Ledger, _integrity

PARTS = ("train", "validation", "calibration")


@dataclass(frozen=True)
class Seen:
    """The runs a version and its recorded ancestors used."""

    judge_version: str
    runs: frozenset[str]
    chain: tuple[str, ...]  # the versions whose records were read: itself, its parent, …
    recorded: bool  # the ledger records this version's own training


def check_unrecorded(ledger: Ledger, judge_version: str) -> None:
    """Refuse a version name the ledger already records a training of (before any work).

    Raises:
        LedgerError: one line naming the version and its parent.
    """
    t = S.trained_versions
    with ledger.engine.connect() as conn:
        parent = conn.execute(sa.select(t.c.parent)
                              .where(t.c.judge_version == judge_version)).scalar()
    if parent is not None:
        raise LedgerError(f"{judge_version}: the ledger already records a training of this "
                          f"version (from {parent}); a version's name is never reused")


def record_training(ledger: Ledger, judge_version: str, parent: str, labels_from: str,
                    rows: Iterable[tuple[str, int | None, str]]) -> int:
    """Write a version's training record: (run id, label id or None, part) per run used,
    in one transaction; returns how many runs.

    Raises:
        LedgerError: the version is recorded already, a run is not in the ledger, a part is
            not one of :data:`PARTS`.
    """
    rows = sorted(set(rows))
    if bad := [p for _, _, p in rows if p not in PARTS]:
        raise LedgerError(f"training record of {judge_version}: part {bad[0]!r}; expected one "
                          f"of {', '.join(PARTS)}")
    with ledger.transaction() as tx:
        try:
            tx.conn.execute(sa.insert(S.trained_versions).values(
                judge_version=judge_version, parent=parent, labels_from=labels_from,
                recorded_at=datetime.now(UTC)))
            if rows:
                tx.conn.execute(sa.insert(S.training_labels), [
                    {"judge_version": judge_version, "run_id": rid, "label_id": lid,
                     "part": part} for rid, lid, part in rows])
        except sa.exc.IntegrityError as exc:
            raise _integrity(exc, f"training record of {judge_version}") from exc
    return len(rows)


def label_rows(ledger: Ledger, used: Sequence[tuple[str, object, str]],
               from_file: bool) -> list[tuple[str, int | None, str]]:
    """(run id, label id, part) of each (run id, label used, part): the id of the ledger's
    current label of the run when it is the label used, else None (a label file's, or one
    changed since it was read)."""
    current = {} if from_file else ledger.current_labels()
    out = []
    for rid, label, part in used:
        stored = current.get(rid)
        out.append((rid, stored.label_id if stored is not None and stored.label == label
                    else None, part))
    return out


def seen_runs(ledger: Ledger, judge_version: str) -> Seen:
    """Every run ``judge_version`` or a recorded ancestor trained, validated or calibrated on."""
    t, lab = S.trained_versions, S.training_labels
    chain: list[str] = []
    runs: set[str] = set()
    version: str | None = judge_version
    with ledger.engine.connect() as conn:
        while version is not None and version not in chain:
            parent = conn.execute(sa.select(t.c.parent)
                                  .where(t.c.judge_version == version)).scalar()
            if parent is None:
                break
            chain.append(version)
            runs.update(conn.execute(sa.select(lab.c.run_id)
                                     .where(lab.c.judge_version == version)).scalars())
            version = parent
    return Seen(judge_version, frozenset(runs), tuple(chain),
                bool(chain) and chain[0] == judge_version)


def runs_of_bundles(ledger: Ledger, bundle_hashes: Iterable[str]) -> frozenset[str]:
    """The ledger's run ids of these bundle hashes (those it holds)."""
    hashes, out = sorted(set(bundle_hashes)), set()
    r = S.runs
    with ledger.engine.connect() as conn:
        for i in range(0, len(hashes), 500):
            out.update(conn.execute(sa.select(r.c.run_id)
                                    .where(r.c.bundle_hash.in_(hashes[i:i + 500]))).scalars())
    return frozenset(out)
