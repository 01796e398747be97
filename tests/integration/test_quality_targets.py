"""Stored quality targets and their crossings: once per crossing, re-armed on recovery."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from judge.ledgers import Ledger
from judge.ledgers import schema as S
from judge.outcomes.store import OutcomeError, OutcomeStore
from judge.outcomes.targets import evaluate, listing, set_targets, stored_targets
from judge.outcomes.validity import review

PASS = {"status": "pass", "reasons": []}


def criteria(failed: str | None = None) -> dict:
    return {k: ({"status": "fail", "reasons": ["x"]} if k == failed else PASS)
            for k in ("capture_health", "frame_rate", "completeness", "framing", "shake")}


@pytest.fixture
def store(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        s = OutcomeStore(ledger.engine)
        s.create_dataset("lab/q")
        s.uids = [s.add_sequence("lab/q", f"{i}" * 64, f"/b/{i}") for i in range(4)]
        yield s


def checked(store, verdicts):
    ds = store.dataset("lab/q")
    fails = {"accept": None, "quarantine": "frame_rate", "reject": "capture_health"}
    with store._write() as conn, conn.begin():
        for uid, v in zip(store.uids, verdicts, strict=True):
            conn.execute(S.acceptance.insert().values(
                dataset_id=ds.dataset_id, sequence_uid=uid, verdict=v, criteria=criteria(
                    fails[v]), checked_at=datetime.now(UTC)))


def test_transitions(store):
    sent = []

    def notify(dataset, events):
        sent.append((dataset, [(e["target"], e["value"], e["limit"]) for e in events]))

    set_targets(store, "lab/q", {"min_acceptance_rate": 0.8, "max_issue_rate": 0.5}, "a.yaml")
    assert evaluate(store, "lab/q", notify)[1] == [] and sent == []  # nothing checked yet
    assert [(t["target"], t["value"], t["crossed"]) for t in listing(store, "lab/q")] == [
        ("max_issue_rate", None, False), ("min_acceptance_rate", None, False)]
    checked(store, ["accept", "accept", "reject", "quarantine"])
    rep, new = evaluate(store, "lab/q", notify)
    assert (rep["counts"], [e["target"] for e in new]) == (
        {"accept": 2, "quarantine": 1, "reject": 1, "issue": 2}, ["min_acceptance_rate"])
    assert sent == [("lab/q", [("min_acceptance_rate", 0.5, 0.8)])]
    assert evaluate(store, "lab/q", notify)[1] == []  # unchanged: nothing
    at = listing(store, "lab/q")[1]["alerted_at"]
    # the same limit from another campaign file keeps the state; a new limit starts over
    set_targets(store, "lab/q", {"min_acceptance_rate": 0.8, "max_issue_rate": 0.5}, "b.yaml")
    assert evaluate(store, "lab/q", notify)[1] == []
    assert [(t["campaign"], t["alerted_at"]) for t in listing(store, "lab/q")] == [
        ("b.yaml", None), ("b.yaml", at)]
    set_targets(store, "lab/q", {"min_acceptance_rate": 0.6, "max_issue_rate": 0.5}, "b.yaml")
    assert [e["limit"] for e in evaluate(store, "lab/q", notify)[1]] == [0.6]
    # recovered (reviews), then crossed again: alerted again
    review(store, "lab/q", store.uids[2], "accept", "rev")
    assert evaluate(store, "lab/q", notify)[1] == []
    assert listing(store, "lab/q")[1]["alerted_at"] is None
    review(store, "lab/q", store.uids[2], "reject", "rev")
    assert [(e["target"], e["value"]) for e in evaluate(store, "lab/q", notify)[1]] == [
        ("min_acceptance_rate", 0.5)]
    assert len(sent) == 3
    set_targets(store, "lab/q", {})
    assert (stored_targets(store, "lab/q"), listing(store, "lab/q")) == ({}, [])


@pytest.mark.parametrize(("targets", "err"), [
    ({"max_issue_rate": True}, "targets.max_issue_rate: must be a number from 0 to 1 (got True)"),
    ({"max_issue_rate": -0.1}, "targets.max_issue_rate: must be a number from 0 to 1 (got -0.1)"),
    ({"issue_rate": 0.1}, "targets: unknown issue_rate; known: min_acceptance_rate, "
                          "max_reject_rate, max_issue_rate"),
])
def test_bad_targets_store_nothing(store, targets, err):
    set_targets(store, "lab/q", {"max_reject_rate": 0.2})
    with pytest.raises(OutcomeError, match=f"^{re.escape(err)}$"):
        set_targets(store, "lab/q", targets)
    assert stored_targets(store, "lab/q") == {"max_reject_rate": 0.2}
