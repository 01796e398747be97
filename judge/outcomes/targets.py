"""Quality targets of a dataset, stored, and their crossings alerted once: after validity.

A campaign's ``targets`` (``min_acceptance_rate``, ``max_reject_rate``, ``max_issue_rate``)
are stored per dataset when a command is given ``--campaign`` (:func:`set_targets`);
later reports and the MCP tools read them from there. :func:`evaluate` computes the
report against them and records **transitions**: a target crossed now and not crossed at
the last evaluation is a new crossing (returned, and handed to ``notify`` — the webhook
event ``acceptance.quality_target_crossed``); a target no longer crossed is cleared, so a
recovered target crossed again alerts again; an unchanged state alerts nothing. A changed
limit is a new target (its state starts over).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.outcomes.store import OutcomeError, OutcomeStore
from judge.outcomes.validity import TARGETS, report

EVENT = "acceptance.quality_target_crossed"


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def check_targets(targets: dict[str, Any]) -> dict[str, float]:
    """``targets`` with known names and limits from 0 to 1; an error names the bad one."""
    bad = sorted(set(targets) - set(TARGETS))
    if bad:
        raise OutcomeError(f"targets: unknown {', '.join(bad)}; known: {', '.join(TARGETS)}")
    for name, limit in targets.items():
        if isinstance(limit, bool) or not isinstance(limit, int | float) or \
                not math.isfinite(limit) or not 0 <= limit <= 1:
            raise OutcomeError(f"targets.{name}: must be a number from 0 to 1 (got {limit!r})")
    return {k: float(v) for k, v in targets.items()}


def set_targets(store: OutcomeStore, dataset: str, targets: dict[str, Any],
                campaign: str | None = None) -> None:
    """Make ``targets`` the dataset's targets (others removed; an unchanged limit keeps
    its crossing state)."""
    targets = check_targets(targets)
    ds = store.dataset(dataset)
    q = S.quality_targets
    now = datetime.now(UTC)
    with store._write() as conn, conn.begin():
        have = {r.target: r for r in conn.execute(
            sa.select(q).where(q.c.dataset_id == ds.dataset_id)).all()}
        gone = sorted(set(have) - set(targets))
        if gone:
            conn.execute(q.delete().where(q.c.dataset_id == ds.dataset_id,
                                          q.c.target.in_(gone)))
        for name, limit in sorted(targets.items()):
            old = have.get(name)
            where = (q.c.dataset_id == ds.dataset_id, q.c.target == name)
            if old is None:
                conn.execute(q.insert().values(dataset_id=ds.dataset_id, target=name,
                                               limit_value=limit, campaign=campaign,
                                               set_at=now))
            elif old.limit_value != limit:
                conn.execute(q.update().where(*where).values(
                    limit_value=limit, campaign=campaign, set_at=now, crossed_at=None,
                    crossed_value=None))
            elif old.campaign != campaign:
                conn.execute(q.update().where(*where).values(campaign=campaign))


def _rows(store: OutcomeStore, dataset_id: int) -> dict[str, Any]:
    q = S.quality_targets
    with store.engine.connect() as conn:
        return {r.target: r for r in conn.execute(
            sa.select(q).where(q.c.dataset_id == dataset_id).order_by(q.c.target)).all()}


def stored_targets(store: OutcomeStore, dataset: str) -> dict[str, float]:
    """The dataset's targets: name -> limit."""
    ds = store.dataset(dataset)
    return {k: r.limit_value for k, r in _rows(store, ds.dataset_id).items()}


def listing(store: OutcomeStore, dataset: str) -> list[dict[str, Any]]:
    """Every stored target, whether it is crossed now (current verdicts) and since when its
    crossing was alerted (read-only)."""
    ds = store.dataset(dataset)
    rows = _rows(store, ds.dataset_id)
    rep = report(store, dataset, {k: r.limit_value for k, r in rows.items()}, log=False)
    crossed = {a["target"] for a in rep["alerts"]}
    return [{"target": name, "metric": name.split("_", 1)[1], "limit": r.limit_value,
             "value": rep[name.split("_", 1)[1]], "crossed": name in crossed,
             "campaign": r.campaign, "set_at": _iso(r.set_at),
             "alerted_at": _iso(r.crossed_at)} for name, r in rows.items()]


def evaluate(store: OutcomeStore, dataset: str,
             notify: Callable[[str, list[dict[str, Any]]], Any] | None = None
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report against the stored targets and the crossings new since the last
    evaluation (recorded before ``notify(dataset, events)`` is called with them)."""
    ds = store.dataset(dataset)
    rows = _rows(store, ds.dataset_id)
    rep = report(store, dataset, {k: r.limit_value for k, r in rows.items()})
    crossed = {a["target"]: a for a in rep["alerts"]}
    q = S.quality_targets
    now = datetime.now(UTC)
    events = []
    with store._write() as conn, conn.begin():
        for name, r in rows.items():
            where = (q.c.dataset_id == ds.dataset_id, q.c.target == name)
            if name in crossed and r.crossed_at is None:
                a = crossed[name]
                done = conn.execute(q.update().where(*where, q.c.crossed_at.is_(None)).values(
                    crossed_at=now, crossed_value=a["value"]))
                if done.rowcount != 1:  # a concurrent evaluation recorded it first
                    continue
                events.append({"dataset": ds.name, "campaign": r.campaign, "target": name,
                               "metric": name.split("_", 1)[1], "value": a["value"],
                               "limit": a["limit"], "checked": rep["checked"],
                               "counts": rep["counts"], "crossed_at": _iso(now)})
            elif name not in crossed and r.crossed_at is not None and \
                    rep[name.split("_", 1)[1]] is not None:  # recovered
                conn.execute(q.update().where(*where).values(crossed_at=None,
                                                             crossed_value=None))
    if events and notify is not None:
        notify(ds.name, events)
    return rep, events
