"""The labels the review page writes, and undoing one of them.

Where it sits: after the page (``judge.review.routes``), on the ledgers. A label made on
the page is an operator label with its ``review_labels`` row (the judge version whose
queue picked the run, the strategy, rank, score, reason and the labeller's note), both
written in one transaction by :func:`judge.ledgers.review.add_reviewed_labels`; ``rcjudge
train``, ``eval`` and the calibration set read it as any operator label. Undo deletes
both rows, and only of a label that the page wrote, on a run of the ledger's owner, and
whose labeller asks.
"""

from __future__ import annotations

import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.ledgers.records import Label
from judge.ledgers.review import Review, add_reviewed_labels
from judge.ledgers.store import Ledger


def write(ledger: Ledger, label: Label, review: Review | None = None) -> tuple[bool, int]:
    """Write ``label`` (with its ``review`` row): (new?, its label id). The same run,
    labeller and time again is the stored label: not new, nothing added."""
    new = add_reviewed_labels(ledger, [(label, review)]) == 1
    t = S.operator_labels
    with ledger.engine.connect() as conn:
        label_id = conn.execute(sa.select(t.c.label_id).where(
            t.c.run_id == label.run_id, t.c.labeled_by == label.labeled_by,
            t.c.labeled_at == label.labeled_at)).scalar_one()
    return new, label_id


def undo(ledger: Ledger, label_id: int, labeled_by: str) -> str | None:
    """Delete label ``label_id`` and its review row if the page wrote it for
    ``labeled_by`` on a run of the ledger's owner: the label's run id, else None (nothing
    deleted)."""
    t, r = S.operator_labels, S.review_labels
    with ledger.transaction() as tx:
        run_id = tx.conn.execute(sa.select(t.c.run_id).join(r, r.c.label_id == t.c.label_id)
                                 .where(t.c.label_id == label_id, t.c.labeled_by == labeled_by,
                                        ledger.mine(t.c.run_id))).scalar()
        if run_id is not None:
            tx.conn.execute(sa.delete(r).where(r.c.label_id == label_id))
            tx.conn.execute(sa.delete(t).where(t.c.label_id == label_id))
    return run_id
