"""Datasets, sequences, per-key rights and versioned labels on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from judge.ledgers import Ledger
from judge.outcomes.labels import OutcomeLabelError
from judge.outcomes.store import (
    Forbidden,
    NotFound,
    OutcomeError,
    OutcomeStore,
    decode_cursor,
    sequence_uid,
)
from tests.integration.test_ledgers import DB, db  # noqa: F401  (the parametrized fixture)

H1, H2 = "a" * 64, "b" * 64


@pytest.fixture
def store(db: DB):  # noqa: F811
    with Ledger.open(db.url, schema=db.schema) as led:
        yield OutcomeStore(led.engine)


def test_sequence_uid_is_derived_from_the_bundle_hash():
    assert sequence_uid("0123456789abcdef" * 4) == "seq_0123456789abcdef0123456789abcdef"
    with pytest.raises(OutcomeError, match=r"^bundle hash 'xyz': expected 64 lower-case hex"):
        sequence_uid("xyz")


def test_versions_history_and_unset_fields(store: OutcomeStore):
    store.create_dataset("acme/kitchen")
    uid = store.add_sequence("acme/kitchen", H1, "/b/1", length_s=20.0)
    assert store.add_sequence("acme/kitchen", H1, "/elsewhere/1") == uid  # same bundle
    with pytest.raises(NotFound, match=rf"^sequence '{uid}' of acme/kitchen: no outcome label$"):
        store.get_label("acme/kitchen", uid)
    v1 = store.put_label("acme/kitchen", uid, {"outcome": "failure", "progress": 0.4,
                                               "mistake_type": "slip", "source": "model",
                                               "confidence": 0.8}, labeled_by="judge")
    v2 = store.put_label("acme/kitchen", uid, {"outcome": "mistake_and_recovery"},
                         labeled_by="op-kim")
    assert (v1["version"], v2["version"], v2["is_current"]) == (1, 2, True)
    assert (v2["progress"], v2["mistake_type"], v2["source"], v2["confidence"]) == \
        (None, "", "human", None)  # not copied from v1
    hist = store.history("acme/kitchen", uid)
    assert [(h["version"], h["is_current"], h["outcome"], h["labeled_by"]) for h in hist] == [
        (2, True, "mistake_and_recovery", "op-kim"), (1, False, "failure", "judge")]
    assert store.get_label("acme/kitchen", uid) == hist[0]
    with pytest.raises(OutcomeLabelError, match=r"^subtasks\[0\]\.end_ts: must be <= the "
                                                r"sequence length 20 s \+ 1 s = 21 \(got 25\)$"):
        store.put_label("acme/kitchen", uid, {"outcome": "failure", "subtasks": [
            {"label": "x", "start_ts": 0, "end_ts": 25}]})
    assert len(store.history("acme/kitchen", uid)) == 2  # the refused write left nothing


def test_rights_per_dataset_per_key(store: OutcomeStore):
    store.create_dataset("acme/private", key_id="key_owner")
    store.create_dataset("acme/open", public=True, key_id="key_owner")
    uid = store.add_sequence("acme/private", H1, "/b/1", key_id="key_owner")
    store.put_label("acme/private", uid, {"outcome": "aborted"}, key_id="key_owner")
    assert store.get_label("acme/private", uid, key_id="key_owner")["labeled_by"] == "key_owner"
    with pytest.raises(NotFound, match=r"^dataset acme/private: not found$"):
        store.get_label("acme/private", uid, key_id="key_other")
    store.grant("acme/private", "key_other", "read")
    seen = store.get_label("acme/private", uid, key_id="key_other")
    assert "labeled_by" not in seen  # only callers who may edit see it
    with pytest.raises(Forbidden, match=r"^dataset acme/private: this key may read it but "
                                        r"not edit it$"):
        store.put_label("acme/private", uid, {"outcome": "failure"}, key_id="key_other")
    store.grant("acme/private", "key_other", "edit")
    assert store.put_label("acme/private", uid, {"outcome": "failure"},
                           key_id="key_other")["version"] == 2
    with pytest.raises(Forbidden):
        store.add_sequence("acme/open", H2, "/b/2", key_id="key_stranger")
    assert [d["dataset"] for d in store.list_datasets("key_stranger")] == ["acme/open"]
    assert [(d["dataset"], d["access"], d["sequences"]) for d in store.list_datasets()] == [
        ("acme/open", "edit", 0), ("acme/private", "edit", 1)]
    with pytest.raises(OutcomeError, match=r"^dataset acme/open: already exists$"):
        store.create_dataset("acme/open")
    with pytest.raises(OutcomeError, match=r"^dataset 'acme': slug '' must be 1-100"):
        store.create_dataset("acme")


def test_list_filters_and_pages(store: OutcomeStore):
    store.create_dataset("acme/k")
    outcomes = ["failure", "aborted", "expert_success", "failure", "intervention"]
    uids = []
    for i, outcome in enumerate(outcomes):
        uid = store.add_sequence("acme/k", f"{i:x}" * 64, f"/b/{i}")
        uids.append(uid)
        store.put_label("acme/k", uid, {"outcome": outcome, "evaluation_membership":
                                        "held_out_eval" if i % 2 else "train"})
    uids.sort()
    page1 = store.list_labels("acme/k", limit=2)
    assert [r["sequence_uid"] for r in page1["results"]] == uids[:2]
    assert page1["previous"] is None
    page2 = store.list_labels("acme/k", limit=2, cursor=page1["next"])
    assert [r["sequence_uid"] for r in page2["results"]] == uids[2:4]
    back = store.list_labels("acme/k", limit=2, cursor=page2["previous"])
    assert [r["sequence_uid"] for r in back["results"]] == uids[:2]
    last = store.list_labels("acme/k", limit=2, cursor=page2["next"])
    assert ([r["sequence_uid"] for r in last["results"]], last["next"]) == (uids[4:], None)
    got = store.list_labels("acme/k", filters={"outcome": "failure,aborted",
                                               "evaluation_membership": "held_out_eval"})
    assert sorted(r["outcome"] for r in got["results"]) == ["aborted", "failure"]
    with pytest.raises(OutcomeError, match=r"^outcome: unknown value\(s\) 'win'; known: "):
        store.list_labels("acme/k", filters={"outcome": "failure,win"})
    with pytest.raises(OutcomeError, match=r"^cursor 'zz': not a cursor of this list$"):
        store.list_labels("acme/k", cursor="zz")
    assert decode_cursor(page1["next"]) == ("after", uids[1])
