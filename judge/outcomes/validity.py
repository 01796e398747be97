"""Technical validity in the ledger database: verdicts, reviews, quality targets, filters.

The machine verdict of each sequence's capture (:func:`judge.outcomes.acceptance.
check_capture`) is stored in ``acceptance`` beside, never inside, its outcome label. A
reviewer may confirm or change it (who, when, a note); the **effective verdict** is the
review's when there is one. Quality targets are thresholds on a dataset's acceptance,
reject and issue rates (issue: any criterion failed); crossing one is an alert, logged
(``rcjudge.outcomes`` logger, WARNING) and listed by ``rcjudge acceptance report``.

The two filters keep the axes apart: :func:`select` with ``clean=True`` keeps every
sequence whose capture is accepted *whatever its outcome* (failures stay), and with
``outcomes=[…]`` keeps every sequence with such a label *whatever its capture* and shows
the verdict beside it (a broken sensor is never hidden behind a success).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.outcomes.acceptance import VERDICTS, Campaign, check_capture
from judge.outcomes.store import NotFound, OutcomeError, OutcomeStore

_log = logging.getLogger("rcjudge.outcomes")
TARGETS = ("min_acceptance_rate", "max_reject_rate", "max_issue_rate")


def check_dataset(store: OutcomeStore, dataset: str,
                  campaign: Campaign | None = None) -> list[dict[str, Any]]:
    """Check every sequence's capture of ``dataset``; store and return the results."""
    ds = store.dataset(dataset)
    results = []
    for seq in store.sequences(ds):
        res = check_capture(seq["bundle_uri"], campaign)
        if res["bundle_hash"] != seq["bundle_hash"]:
            raise OutcomeError(f"{seq['bundle_uri']}: bundle hash {res['bundle_hash'][:12]}… "
                               f"is not the sequence's {seq['bundle_hash'][:12]}…")
        results.append({"sequence_uid": seq["sequence_uid"], **res})
    a = S.acceptance
    now = datetime.now(UTC)
    with store._write() as conn, conn.begin():  # all or nothing
        for r in results:
            where = (a.c.dataset_id == ds.dataset_id, a.c.sequence_uid == r["sequence_uid"])
            if conn.execute(sa.select(a.c.sequence_uid).where(*where)).first():
                conn.execute(a.update().where(*where).values(
                    verdict=r["verdict"], criteria=r["criteria"], checked_at=now))
            else:
                conn.execute(a.insert().values(
                    dataset_id=ds.dataset_id, sequence_uid=r["sequence_uid"],
                    verdict=r["verdict"], criteria=r["criteria"], checked_at=now))
    return results


def review(store: OutcomeStore, dataset: str, sequence_uid: str, verdict: str, by: str,
           note: str | None = None) -> dict[str, Any]:
    """Record a reviewer's verdict (confirming or changing the machine's)."""
    if verdict not in VERDICTS:
        raise OutcomeError(f"--verdict {verdict!r}: expected one of {', '.join(VERDICTS)}")
    if not by:
        raise OutcomeError("--by: who reviews is required")
    ds = store.dataset(dataset)
    a = S.acceptance
    where = (a.c.dataset_id == ds.dataset_id, a.c.sequence_uid == sequence_uid)
    with store._write() as conn, conn.begin():
        if conn.execute(sa.select(a.c.verdict).where(*where)).first() is None:
            raise NotFound(f"sequence {sequence_uid!r} of {ds.name}: not checked yet "
                           "(rcjudge acceptance check)")
        conn.execute(a.update().where(*where).values(
            review_verdict=verdict, reviewed_by=by, reviewed_at=datetime.now(UTC),
            review_note=note))
    return get(store, dataset, sequence_uid)


def _row(r: Any) -> dict[str, Any]:
    return {"sequence_uid": r.sequence_uid, "machine_verdict": r.verdict,
            "verdict": r.review_verdict or r.verdict, "criteria": r.criteria,
            "checked_at": r.checked_at.isoformat(),
            "review": None if r.review_verdict is None else {
                "verdict": r.review_verdict, "by": r.reviewed_by,
                "at": r.reviewed_at.isoformat(), "note": r.review_note}}


def get(store: OutcomeStore, dataset: str, sequence_uid: str) -> dict[str, Any]:
    ds = store.dataset(dataset)
    a = S.acceptance
    with store.engine.connect() as conn:
        r = conn.execute(sa.select(a).where(a.c.dataset_id == ds.dataset_id,
                                            a.c.sequence_uid == sequence_uid)).first()
    if r is None:
        raise NotFound(f"sequence {sequence_uid!r} of {ds.name}: not checked yet")
    return _row(r)


def all_results(store: OutcomeStore, dataset: str) -> dict[str, dict[str, Any]]:
    ds = store.dataset(dataset)
    a = S.acceptance
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(a).where(a.c.dataset_id == ds.dataset_id)).all()
    return {r.sequence_uid: _row(r) for r in rows}


def report(store: OutcomeStore, dataset: str, targets: dict[str, float], *,
           log: bool = True) -> dict[str, Any]:
    """Counts and rates of the checked captures (effective verdicts) and the targets they
    cross (each logged as a WARNING unless ``log`` is False)."""
    bad = sorted(set(targets) - set(TARGETS))
    if bad:
        raise OutcomeError(f"targets: unknown {', '.join(bad)}; known: {', '.join(TARGETS)}")
    rows = list(all_results(store, dataset).values())
    n = len(rows)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    counts["issue"] = sum(any(c["status"] == "fail" for c in r["criteria"].values())
                          for r in rows)
    rates = {"acceptance_rate": counts["accept"] / n if n else None,
             "reject_rate": counts["reject"] / n if n else None,
             "issue_rate": counts["issue"] / n if n else None}
    alerts = []
    for name, limit in sorted(targets.items()):
        kind, metric = name.split("_", 1)
        value = rates[metric]
        if value is None:
            continue
        if (kind == "min" and value < limit) or (kind == "max" and value > limit):
            alerts.append({"target": name, "limit": limit, "value": round(value, 4)})
            if log:
                _log.warning("quality target crossed: %s %s: %s = %.4f (limit %s)", dataset,
                             name, metric, value, limit)
    return {"dataset": dataset, "checked": n, "counts": counts,
            **{k: None if v is None else round(v, 4) for k, v in rates.items()},
            "alerts": alerts}


def select(store: OutcomeStore, dataset: str, *, clean: bool = False,
           outcomes: list[str] | None = None) -> list[dict[str, Any]]:
    """Sequences with both axes side by side, filtered on one axis only.

    ``clean``: effective verdict ``accept`` (any outcome). ``outcomes``: the current
    label's outcome is one of them (any verdict; the verdict is shown).
    """
    ds = store.dataset(dataset)
    labels = store.current_labels(ds)
    checks = all_results(store, dataset)
    rows = []
    for seq in store.sequences(ds):
        uid = seq["sequence_uid"]
        label, check = labels.get(uid), checks.get(uid)
        row = {"sequence_uid": uid, "outcome": label["outcome"] if label else None,
               "verdict": check["verdict"] if check else None}
        if clean and row["verdict"] != "accept":
            continue
        if outcomes is not None and row["outcome"] not in outcomes:
            continue
        rows.append(row)
    return sorted(rows, key=lambda r: r["sequence_uid"])
