"""The dataset and sequence routes in the shapes the public Avala SDK reads (docs/api.md, the
SDK call table): the dataset list is a cursor page, a dataset is read by owner/slug, a
sequence carries ``uid`` and is read by itself; refusals are 404s naming what is missing."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from judge.api.service import JudgeService
from judge.outcomes.store import OutcomeStore
from tests.api.conftest import TMP_ROOTS, bearer, fake_judges

H = [f"{i:x}" * 64 for i in range(3)]  # three bundle hashes: 000…, 111…, 222…
UIDS = ["seq_" + h[:32] for h in H]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service(request, tmp_path):
    """The API's service on SQLite and on PostgreSQL (the dataset page's order and cursor
    comparisons are the database's)."""
    if request.param == "sqlite":
        url, test_schema = f"sqlite:///{tmp_path / 'api.db'}", "rcjudge_test"
    else:
        url, test_schema = request.getfixturevalue("pg_db")
    svc = JudgeService(url, judges=fake_judges(), test_schema=test_schema,
                       bundle_roots=TMP_ROOTS)
    yield svc
    svc.close()


@pytest.fixture
def world(client, service):
    """``rw`` owns acme/kitchen (3 sequences) and b/z; ``other`` owns acme/lab (public) and
    acme/secret (private); ``stranger`` reads only what is public."""
    # two keys of the owner acme (a key creates datasets in its name's namespace, issue 36)
    rw = service.create_key("acme", "live", ["datasets:read", "datasets:write"])[0]
    other = service.create_key("acme", "live", ["datasets:read", "datasets:write"])[0]
    stranger = service.create_key("stranger", "live", ["datasets:read"])[0]
    for key, owner, slug, public in ((rw, "acme", "kitchen", False), (other, "acme", "lab", True),
                                     (other, "acme", "secret", False)):
        r = client.post("/api/v1/datasets/", json={"owner": owner, "slug": slug,
                                                    "public": public}, headers=bearer(key))
        assert r.status_code == 201, r.text
    store = OutcomeStore(service.modes["live"].engine)
    store.create_dataset("b/z", key_id=service.authenticate(f"Bearer {rw}").key_id)
    for i, h in enumerate(H):
        store.add_sequence("acme/kitchen", h, f"/b/{i}", length_s=[30.0, None, 12.5][i])
    return rw, other, stranger


def _created(client, key, name):
    return next(d["created_at"] for d in client.get("/api/v1/datasets/?limit=100",
                                                     headers=bearer(key)).json()["results"]
                if d["uid"] == name)


def test_dataset_list_is_a_cursor_page(client, world):
    rw, _, stranger = world
    page = client.get("/api/v1/datasets/", headers=bearer(rw)).json()
    assert list(page) == ["results", "next", "previous"]
    assert page["results"] == [
        {"uid": "acme/kitchen", "name": "kitchen", "slug": "kitchen", "owner_name": "acme",
         "public": False, "access": "edit", "item_count": 3, "is_sequence": True,
         "data_type": "mcap", "status": "created",
         "created_at": _created(client, rw, "acme/kitchen")},
        {"uid": "acme/lab", "name": "lab", "slug": "lab", "owner_name": "acme",
         "public": True, "access": "read", "item_count": 0, "is_sequence": True,
         "data_type": "mcap", "status": "created", "created_at": _created(client, rw, "acme/lab")},
        {"uid": "b/z", "name": "z", "slug": "z", "owner_name": "b", "public": False,
         "access": "edit", "item_count": 0, "is_sequence": True,
         "data_type": "mcap", "status": "created", "created_at": _created(client, rw, "b/z")}]
    assert (page["next"], page["previous"]) == (None, None)
    assert [d["uid"] for d in client.get("/api/v1/datasets/", headers=bearer(stranger))
            .json()["results"]] == ["acme/lab"]


def test_dataset_list_pages_by_cursor(client, world):
    rw = world[0]
    p1 = client.get("/api/v1/datasets/?limit=2", headers=bearer(rw)).json()
    assert ([d["uid"] for d in p1["results"]], p1["previous"]) == (
        ["acme/kitchen", "acme/lab"], None)
    nxt = urlsplit(p1["next"])
    assert (nxt.path, parse_qs(nxt.query)["limit"]) == ("/api/v1/datasets/", ["2"])
    p2 = client.get(p1["next"], headers=bearer(rw)).json()
    assert ([d["uid"] for d in p2["results"]], p2["next"]) == (["b/z"], None)
    back = client.get(p2["previous"], headers=bearer(rw)).json()
    assert ([d["uid"] for d in back["results"]], back["previous"]) == (
        ["acme/kitchen", "acme/lab"], None)
    assert urlsplit(back["next"]).query == nxt.query
    r = client.get("/api/v1/datasets/?cursor=nope", headers=bearer(rw))
    assert (r.status_code, r.json()["detail"]) == (400, "cursor 'nope': not a cursor of this list")
    assert client.get("/api/v1/datasets/?limit=0", headers=bearer(rw)).status_code == 422
    assert client.get("/api/v1/datasets/?limit=101", headers=bearer(rw)).status_code == 422


def test_dataset_by_owner_and_slug(client, world):
    rw, other, stranger = world
    r = client.get("/api/v1/datasets/acme/kitchen/", headers=bearer(rw))
    assert r.status_code == 200, r.text
    assert r.json() == {"uid": "acme/kitchen", "name": "kitchen", "slug": "kitchen",
                        "owner_name": "acme", "public": False, "access": "edit",
                        "item_count": 3, "is_sequence": True,
                        "data_type": "mcap", "status": "created",
                        "created_at": _created(client, rw, "acme/kitchen")}
    assert client.get("/api/v1/datasets/acme/lab/", headers=bearer(stranger)).json()[
        "access"] == "read"
    for key, path in ((stranger, "acme/kitchen"), (rw, "acme/secret"), (rw, "acme/none")):
        r = client.get(f"/api/v1/datasets/{path}/", headers=bearer(key))
        assert (r.status_code, r.headers["content-type"], r.json()["detail"]) == (
            404, "application/problem+json", f"dataset {path}: not found")
    assert client.get("/api/v1/datasets/acme/kitchen/", headers={
        "X-Avala-Api-Key": other}).status_code == 404


def test_sequences_carry_uid_and_are_read_one_by_one(client, world):
    rw, _, stranger = world
    base = "/api/v1/datasets/acme/kitchen/sequences/"
    r = client.put(f"{base}{UIDS[1]}/outcome/", json={"outcome": "failure",
                                                        "evaluation_membership": "held_out_eval"},
                   headers=bearer(rw))
    assert r.status_code == 200, r.text
    rows = [{"uid": UIDS[0], "dataset_uid": "acme/kitchen", "bundle_hash": H[0],
             "length_s": 30.0, "outcome": None, "outcome_version": None,
             "evaluation_membership": None},
            {"uid": UIDS[1], "dataset_uid": "acme/kitchen", "bundle_hash": H[1],
             "length_s": None, "outcome": "failure", "outcome_version": 1,
             "evaluation_membership": "held_out_eval"},
            {"uid": UIDS[2], "dataset_uid": "acme/kitchen", "bundle_hash": H[2],
             "length_s": 12.5, "outcome": None, "outcome_version": None,
             "evaluation_membership": None}]
    page = client.get(base, headers=bearer(rw)).json()
    assert page == {"results": rows, "next": None, "previous": None}
    p1 = client.get(f"{base}?limit=2", headers=bearer(rw)).json()
    assert p1["results"] == rows[:2]
    assert client.get(p1["next"], headers=bearer(rw)).json()["results"] == rows[2:]
    for row in rows:
        r = client.get(f"{base}{row['uid']}/", headers=bearer(rw))
        assert (r.status_code, r.json()) == (200, row)
    r = client.get(f"{base}seq_nope/", headers=bearer(rw))
    assert (r.status_code, r.json()["detail"]) == (
        404, "sequence 'seq_nope': not in dataset acme/kitchen")
    r = client.get(f"{base}{UIDS[0]}/", headers=bearer(stranger))
    assert (r.status_code, r.json()["detail"]) == (404, "dataset acme/kitchen: not found")
    r = client.get(f"/api/v1/datasets/acme/lab/sequences/{UIDS[0]}/", headers=bearer(rw))
    assert (r.status_code, r.json()["detail"]) == (
        404, f"sequence '{UIDS[0]}': not in dataset acme/lab")


def test_the_new_routes_are_in_the_outcome_schema(client):
    spec = client.get("/api/v1/openapi.json").json()
    ops = {(m.upper(), p) for p, item in spec["paths"].items() for m in item}
    assert {("GET", "/api/v1/datasets/"), ("GET", "/api/v1/datasets/{owner}/{slug}/"),
            ("GET", "/api/v1/datasets/{owner}/{slug}/sequences/"),
            ("GET", "/api/v1/datasets/{owner}/{slug}/sequences/{sequence_uid}/")} <= ops
    ok = spec["paths"]["/api/v1/datasets/"]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/DatasetPage"}
    page = spec["components"]["schemas"]["DatasetPage"]
    assert sorted(page["properties"]) == ["next", "previous", "results"]
    seq = spec["components"]["schemas"]["SequenceOut"]
    assert "uid" in seq["required"] and "sequence_uid" not in seq["properties"]
