"""The runs an API key may review: its own, and those of the datasets it may edit.

Where it sits: between the Judge API's keys (``judge.api``) and the review queue
(``judge.learn.select``), which reads a :class:`Reach` as it reads a one-owner ledger.

A run is its owner's (``runs.owner``, issue 36): nothing of one owner reaches another except
through an explicit grant. The grant the review page honours is a **dataset grant**
(``rcjudge datasets grant DATASET KEY_ID edit``, table ``dataset_grants``):

* a run **belongs to** dataset D when D holds a sequence of the run's bundle
  (``sequences.bundle_hash`` = ``runs.bundle_hash``) **and** the run's owner is one of D's
  members: a key holding an ``edit`` grant on D (the key that created D holds one), or, for
  runs the local operator wrote from the CLI (``batch``, ``import``), D was created from the
  CLI (``created_by`` empty). The same bytes judged by an owner who is not a member are not
  D's: a bundle hash is never an access right;
* a key **reviews** the runs it owns and the runs of every dataset on which it holds an
  ``edit`` grant, whoever judged them. A ``read`` grant or a public dataset shows the
  dataset's outcomes (docs/outcomes.md), not its runs' queue: a label is a write.

The label a key writes on another owner's run is stored with that run (in its owner's
ledger: ``operator_labels``, ``review_labels``), with ``labeled_by`` the key's name.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from judge.ledgers import schema as S


def _members(r: sa.Table, d: sa.Table) -> sa.ColumnElement:
    """SQL: the run's owner (``r.owner``) is a member of dataset ``d`` (module docstring)."""
    g = S.dataset_grants.alias("owner_grant")
    return sa.or_(
        sa.and_(r.c.owner == S.LOCAL_OWNER, d.c.created_by.is_(None)),
        sa.exists().where(g.c.dataset_id == d.c.dataset_id, g.c.key_id == r.c.owner,
                          g.c.access == "edit"))


def shared_runs(key_id: str) -> sa.Select:
    """SQL: the run ids of the datasets ``key_id`` holds an edit grant on."""
    r, s, d = S.runs, S.sequences, S.datasets
    mine = S.dataset_grants.alias("viewer_grant")
    return (sa.select(r.c.run_id)
            .join(s, s.c.bundle_hash == r.c.bundle_hash)
            .join(d, d.c.dataset_id == s.c.dataset_id)
            .join(mine, (mine.c.dataset_id == d.c.dataset_id) & (mine.c.key_id == key_id)
                  & (mine.c.access == "edit"))
            .where(_members(r, d)))


@dataclass(frozen=True)
class Reach:
    """The runs ``key_id`` may review in one mode's database, read as the queue reads a
    ledger (``engine``, ``blind``, :meth:`mine`, :meth:`judge_versions`)."""

    engine: Engine
    key_id: str
    blind: bool = True

    def mine(self, run_id: sa.ColumnElement) -> sa.ColumnElement:
        """SQL: ``run_id`` is a run of the key's or of a dataset it may edit."""
        own = sa.select(S.runs.c.run_id).where(S.runs.c.owner == self.key_id)
        return sa.or_(run_id.in_(own), run_id.in_(shared_runs(self.key_id)))

    def judge_versions(self) -> list[str]:
        """Judge versions with a judgment of a run in reach, sorted."""
        j = S.judgments
        with self.engine.connect() as conn:
            return list(conn.execute(sa.select(j.c.judge_version).distinct()
                                     .where(self.mine(j.c.run_id))
                                     .order_by(j.c.judge_version)).scalars())

    def owner_of(self, run_id: str) -> str | None:
        """The owner of ``run_id`` when it is in reach, else None (whoever's it is)."""
        r = S.runs
        with self.engine.connect() as conn:
            return conn.execute(sa.select(r.c.owner).where(
                r.c.run_id == run_id, self.mine(r.c.run_id))).scalar()

    def read_only(self) -> list[str]:
        """Datasets the key holds only a read grant on (named when its queue is empty)."""
        d, g = S.datasets, S.dataset_grants
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(d.c.owner, d.c.slug).join(
                g, g.c.dataset_id == d.c.dataset_id).where(
                g.c.key_id == self.key_id, g.c.access == "read")
                .order_by(d.c.owner, d.c.slug)).all()
        return [f"{o}/{s}" for o, s in rows]
