"""Issue 36 item 4: ``POST /api/v1/datasets/`` tells no one whether another's dataset exists,
and a key creates datasets only in its own namespace (its name; docs/outcomes.md).

Before: a key creating ``victim/private`` (which it may not read; a read answers 404) got
409 "already exists", and ``victim/evil`` was created and listed to the victim.
"""

from __future__ import annotations

from judge.outcomes.store import OutcomeStore
from tests.api.conftest import bearer

RW = ["datasets:read", "datasets:write"]


def create(client, key: str, owner: str, slug: str, public: bool = False):
    return client.post("/api/v1/datasets/", json={"owner": owner, "slug": slug,
                                                   "public": public}, headers=bearer(key))


def test_another_namespace_is_refused_alike_whether_the_dataset_exists(client, service):
    victim = service.create_key("victim", "live", RW)[0]
    attacker = service.create_key("attacker", "live", RW)
    assert create(client, victim, "victim", "private").status_code == 201
    assert client.get("/api/v1/datasets/victim/private/",
                      headers=bearer(attacker[0])).status_code == 404
    taken, free = (create(client, attacker[0], "victim", slug, True)
                   for slug in ("private", "evil"))
    detail = (f"owner 'victim': key {attacker[1].key_id} creates datasets only in its own "
              "namespace 'attacker' (the key's name)")
    assert (taken.status_code, taken.json()["detail"]) == (403, detail)
    assert (free.status_code, free.json()) == (taken.status_code, taken.json())
    listed = client.get("/api/v1/datasets/", headers=bearer(victim)).json()["results"]
    assert [d["uid"] for d in listed] == ["victim/private"]
    assert OutcomeStore(service.modes["live"].engine).list_datasets() == [
        {"dataset": "victim/private", "public": False, "sequences": 0, "access": "edit",
         "created_at": listed[0]["created_at"]}]


def test_a_key_creates_in_its_namespace_and_is_told_of_its_own(client, service):
    key = service.create_key("acme", "live", RW)[0]
    sibling = service.create_key("acme", "live", RW)[0]  # the same owner's second key
    r = create(client, key, "acme", "kitchen")
    assert (r.status_code, r.json()) == (201, {"dataset": "acme/kitchen", "public": False,
                                               "access": "edit"})
    again = create(client, sibling, "acme", "kitchen")
    assert (again.status_code, again.json()["detail"]) == (409, "dataset acme/kitchen: "
                                                                "already exists")


def test_a_key_whose_name_is_no_namespace_creates_none(client, service):
    key, who = service.create_key("Lab Robots", "live", RW)
    r = create(client, key, "Lab", "x")
    assert (r.status_code, r.json()["detail"]) == (403, (
        f"owner 'Lab': key {who.key_id} creates datasets only in its own namespace, and "
        "its name 'Lab Robots' is none (1-100 letters, digits, '.', '_' or '-'); the "
        "operator creates datasets for it (rcjudge datasets create)"))
