"""Labels made through the review queue, and ``rcjudge review stats``.

Beside the operator labels (``judge.ledgers.store``): a label made from the queue
(``judge.learn.select`` picked its run, a person labelled it on the page) is written with
a ``review_labels`` row (migration 0009) saying which judge version's queue picked it,
with which strategy, at what rank and score, why, and the labeller's note, all in one
transaction. A label made from a sampling round's pick (``sample``, ``sample-uniform``:
``judge.learn.draw``) also keeps the round and its inclusion probability π (migration
0011), checked against the round's recorded draw before anything is written. A label from
a file (``labels import``) or one API post has no such row: its strategy reads ``unqueued``.

:func:`review_stats` counts every stored label (relabels too) and the runs they cover,
per strategy, per task and per labeller; per strategy also how many of those labels say
the picking version's success answer was wrong (the share a label taught it something).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal, get_args

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.ledgers import schema as S
from judge.ledgers.errors import LedgerError
from judge.ledgers.records import Label
from judge.ledgers.rounds import SAMPLING_STRATEGIES, check_draw
from judge.ledgers.store import Ledger, _insert_ignore, _integrity

#: The queue's ranking strategies (``judge.learn.select``; the review page serves these),
#: and the strategy of a label from elsewhere.
Strategy = Literal["committee", "uncertainty", "random", "coverage"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
UNQUEUED = "unqueued"
#: Every strategy a stored review row may name: the ranking ones and the sampling rounds'.
StoredStrategy = Literal["committee", "uncertainty", "random", "coverage", "sample",
                         "sample-uniform"]


class Review(BaseModel):
    """What the queue knew when a label was made through it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judge_version: str = Field(min_length=1, description="The version whose queue picked it.")
    strategy: StoredStrategy = Field(description="The strategy that picked the run.")
    rank: int = Field(ge=1, description="The run's place in the queue (1 = first).")
    score: float = Field(description="The run's score under the strategy.")
    reason: str = Field(description="The pick's reason line.")
    note: str | None = Field(None, description="The labeller's note, if any.")
    round_id: int | None = Field(None, ge=1, description="The sampling round that drew the "
                                 "run (sampling strategies only).")
    pi: float | None = Field(None, gt=0, le=1, description="Its inclusion probability in "
                             "that round (sampling strategies only).")

    @model_validator(mode="after")
    def _round_with_sampling(self) -> Review:
        sampled = self.strategy in SAMPLING_STRATEGIES
        if sampled and (self.round_id is None or self.pi is None):
            raise ValueError(f"strategy {self.strategy!r} draws a sampling round: round_id "
                             "and pi are required")
        if not sampled and (self.round_id is not None or self.pi is not None):
            raise ValueError(f"strategy {self.strategy!r} draws no round: round_id and pi "
                             "belong to the sampling strategies only")
        return self


def add_reviewed_labels(ledger: Ledger, items: Sequence[tuple[Label, Review | None]]) -> int:
    """Write labels, each with its :class:`Review` row (None: none), in one transaction.

    A label already stored (same run, labeller and time) is skipped with its review.
    Returns how many labels were new.

    Raises:
        LedgerError: a label's run is not recorded, a row breaks a constraint, or a review
            names a sampling round that did not draw its run with that π (nothing written).
    """
    with ledger.transaction() as tx:
        tx.check_owned([label.run_id for label, _ in items], "label")
        return write_reviewed_labels(tx.conn, items)


def write_reviewed_labels(conn: sa.Connection,
                          items: Sequence[tuple[Label, Review | None]]) -> int:
    """:func:`add_reviewed_labels` inside the caller's transaction."""
    new = 0
    stmt = _insert_ignore(conn.dialect.name, "operator_labels")
    for label, review in items:
        if review is not None and review.round_id is not None:
            check_draw(conn, label.run_id, review.judge_version, review.round_id, review.pi)
        try:
            got = conn.execute(stmt, label.model_dump()).first()
            if got is None:
                continue
            new += 1
            if review is not None:
                conn.execute(sa.insert(S.review_labels).values(
                    label_id=got[0], **review.model_dump()))
        except sa.exc.IntegrityError as exc:
            raise _integrity(exc, f"label of run {label.run_id!r}") from exc
    return new


def review_of(label_id: int, ledger: Ledger) -> Review | None:
    """The review row of a stored label, or None (not made through the queue)."""
    t = S.review_labels
    with ledger.engine.connect() as conn:
        row = conn.execute(sa.select(t).where(t.c.label_id == label_id)).first()
    if row is None:
        return None
    return Review(**{k: v for k, v in row._mapping.items() if k != "label_id"})


def review_stats(ledger: Ledger) -> dict[str, Any]:
    """Labels and labelled runs per strategy, per task and per labeller (module docstring)."""
    lab, rv, r, j = S.operator_labels, S.review_labels, S.runs, S.judgments
    if ledger.blind:
        raise LedgerError("review stats read every run's task: open the ledger unblinded")
    stmt = (sa.select(lab.c.run_id, lab.c.labeled_by, lab.c.success, r.c.task_id,
                      rv.c.strategy, j.c.success.label("judged_success"))
            .join(r, (r.c.run_id == lab.c.run_id) & (r.c.owner == ledger.owner))
            .outerjoin(rv, rv.c.label_id == lab.c.label_id)
            .outerjoin(j, (j.c.run_id == lab.c.run_id) & (j.c.judge_version == rv.c.judge_version))
            .order_by(lab.c.label_id))
    with ledger.engine.connect() as conn:
        rows = conn.execute(stmt).all()
    return {"labels": len(rows), "runs": len({row.run_id for row in rows}),
            "by_strategy": _count(rows, lambda row: row.strategy or UNQUEUED, "strategy",
                                  wrong=True),
            "by_task": _count(rows, lambda row: row.task_id, "task"),
            "by_labeller": _count(rows, lambda row: row.labeled_by, "labeled_by")}


def _count(rows: Sequence[Any], key: Any, name: str, wrong: bool = False) -> list[dict]:
    """One entry per key: labels, distinct runs (and success answers the label overturned);
    most labels first, then by key."""
    groups: dict[str, list] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    out = []
    for k, members in groups.items():
        entry = {name: k, "labels": len(members), "runs": len({m.run_id for m in members})}
        if wrong:
            judged = [m for m in members if m.judged_success is not None]
            entry["judge_wrong"] = sum(bool(m.judged_success) != bool(m.success) for m in judged)
        out.append(entry)
    return sorted(out, key=lambda e: (-e["labels"], e[name]))
