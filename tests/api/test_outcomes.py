"""The sequence-outcome routes under /api/v1: wire shape, rights per dataset, errors."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from judge.outcomes.store import OutcomeStore
from tests.api.conftest import bearer

DS = "/api/v1/datasets/acme/kitchen"


@pytest.fixture
def keys(service):
    rw = service.create_key("acme", "live", ["datasets:read", "datasets:write"])[0]
    ro = service.create_key("reader", "live", ["datasets:read", "datasets:write"])
    stranger = service.create_key("stranger", "live", ["datasets:read"])[0]
    return rw, ro, stranger


@pytest.fixture
def seqs(client, service, keys):
    rw, ro, _ = keys
    r = client.post("/api/v1/datasets/", json={"owner": "acme", "slug": "kitchen"},
                    headers=bearer(rw))
    assert r.status_code == 201, r.text
    store = OutcomeStore(service.modes["live"].engine)
    store.grant("acme/kitchen", ro[1].key_id, "read")
    return sorted(store.add_sequence("acme/kitchen", f"{i:x}" * 64, f"/b/{i}", length_s=30.0)
                  for i in range(3))


def avala(key: str) -> dict[str, str]:
    return {"X-Avala-Api-Key": key}


def test_put_get_history_with_either_header(client, keys, seqs):
    rw, ro, _ = keys
    url = f"{DS}/sequences/{seqs[0]}/outcome/"
    r = client.get(url, headers=avala(rw))
    assert r.status_code == 404
    assert r.json()["detail"] == f"sequence '{seqs[0]}' of acme/kitchen: no outcome label"
    r = client.put(url, json={"outcome": "failure", "progress": 0.4, "source": "imported",
                              "source_metadata": {"run_id": "r42"}}, headers=avala(rw))
    assert r.status_code == 200, r.text
    v1 = r.json()
    assert list(v1) == ["uid", "sequence_uid", "version", "is_current", "outcome", "progress",
                        "quality", "speed", "subtasks", "hand_actions", "mistake_type",
                        "recovery_type", "failure_stage", "autonomy_level", "model_version",
                        "evaluation_membership", "leakage_groups", "source",
                        "source_metadata", "labeled_by", "confidence", "created_at",
                        "updated_at"]
    assert (v1["version"], v1["hand_actions"], v1["labeled_by"]) == \
        (1, {"left": [], "right": []}, keys_id(client, rw))
    v2 = client.put(url, json={"outcome": "mistake_and_recovery"}, headers=bearer(rw)).json()
    assert (v2["version"], v2["progress"], v2["source"]) == (2, None, "human")
    hist = client.get(f"{url}history/", headers=bearer(ro[0])).json()
    assert isinstance(hist, list)
    assert [(h["version"], h["is_current"]) for h in hist] == [(2, True), (1, False)]
    assert all("labeled_by" not in h for h in hist)  # a reader may not edit
    assert client.get(url, headers=avala(rw)).json()["labeled_by"] == keys_id(client, rw)


def keys_id(client, key: str) -> str:
    return client.get("/v1/keys/me", headers=bearer(key)).json()["key_id"]


def test_rights_and_errors(client, keys, seqs):
    rw, ro, stranger = keys
    url = f"{DS}/sequences/{seqs[0]}/outcome/"
    r = client.put(url, json={"outcome": "failure"}, headers=bearer(ro[0]))
    assert (r.status_code, r.json()["detail"]) == (
        403, "dataset acme/kitchen: this key may read it but not edit it")
    r = client.get(url, headers=bearer(stranger))
    assert (r.status_code, r.json()["detail"]) == (404, "dataset acme/kitchen: not found")
    r = client.put(url, json={"outcome": "failure"}, headers=bearer(stranger))
    assert (r.status_code, r.json()["detail"]) == (
        403, f"key {keys_id(client, stranger)} lacks the right 'datasets:write' "
             "(rights_granted: datasets:read)")
    r = client.put(url, json={"outcome": "failure", "confidence": 0.9}, headers=bearer(rw))
    assert (r.status_code, r.headers["content-type"], r.json()["detail"]) == (
        400, "application/problem+json",
        "confidence: is allowed only with source 'model' (source is 'human')")
    r = client.put(url, json={"outcome": "failure", "hand_actions": {"left": [
        {"start_ts": 0, "end_ts": 40, "action": "reach"}]}}, headers=bearer(rw))
    assert r.json()["detail"] == ("hand_actions.left[0].end_ts: must be <= the sequence length "
                                  "30 s + 1 s = 31 (got 40)")
    r = client.get(f"{DS}/sequence-outcomes/?outcome=failure,won", headers=bearer(rw))
    assert (r.status_code, r.json()["detail"].split(";")[0]) == (
        400, "outcome: unknown value(s) 'won'")
    assert client.get(f"{DS}/sequences/seq_nope/outcome/", headers=bearer(rw)).json()[
        "detail"] == "sequence 'seq_nope': not in dataset acme/kitchen"
    r = client.get(url, headers={"X-Avala-Api-Key": "nope"})
    # the error names the header the key came in, not Authorization
    assert (r.status_code, r.json()["detail"]) == (
        401, "X-Avala-Api-Key header: not an rcjudge key (bad format or checksum)")


def test_list_pages_filters_and_sequences(client, keys, seqs):
    rw = keys[0]
    for uid, outcome in zip(seqs, ["failure", "intervention", "mistake_and_recovery"],
                            strict=True):
        client.put(f"{DS}/sequences/{uid}/outcome/", json={
            "outcome": outcome, "evaluation_membership": "train"}, headers=bearer(rw))
    page1 = client.get(f"{DS}/sequence-outcomes/?limit=2", headers=bearer(rw)).json()
    assert list(page1) == ["results", "next", "previous"]
    assert [r["sequence_uid"] for r in page1["results"]] == seqs[:2]
    assert page1["previous"] is None
    nxt = urlsplit(page1["next"])
    assert nxt.path == f"{DS}/sequence-outcomes/"
    assert parse_qs(nxt.query)["limit"] == ["2"] and "cursor" in parse_qs(nxt.query)
    page2 = client.get(page1["next"], headers=bearer(rw)).json()
    assert ([r["sequence_uid"] for r in page2["results"]], page2["next"]) == (seqs[2:], None)
    back = client.get(page2["previous"], headers=bearer(rw)).json()
    assert [r["sequence_uid"] for r in back["results"]] == seqs[:2]
    lane = client.get(f"{DS}/sequences/?outcome=mistake_and_recovery,intervention",
                      headers=bearer(rw)).json()
    assert [r["uid"] for r in lane["results"]] == seqs[1:]
    lane2 = client.get(f"{DS}/sequence-outcomes/?outcome=mistake_and_recovery,intervention",
                       headers=bearer(rw)).json()
    assert [r["sequence_uid"] for r in lane2["results"]] == seqs[1:]
    assert client.get(f"{DS}/sequence-outcomes/?limit=101", headers=bearer(rw)).status_code \
        == 422
    page = client.get("/api/v1/datasets/", headers=bearer(rw)).json()
    assert page == {"results": [
        {"uid": "acme/kitchen", "name": "kitchen", "slug": "kitchen", "owner_name": "acme",
         "public": False, "access": "edit", "item_count": 3, "is_sequence": True,
         "data_type": "mcap", "status": "created",
         "created_at": page["results"][0]["created_at"]}], "next": None, "previous": None}
