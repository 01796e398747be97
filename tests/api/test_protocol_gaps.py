"""Issue 29 item 7: protocol gaps: Allow lists every method, header errors name the header,
duplicate JSON keys and NUL refused."""

from __future__ import annotations

from tests.api.conftest import bearer


def test_allow_lists_every_method_of_the_path_on_405_and_options(client, live_key):
    path = "/api/v1/datasets/lab/kitchen/sequences/seq_x/outcome/"
    r = client.patch(path, json={}, headers=bearer(live_key))
    assert (r.status_code, r.headers["allow"]) == (405, "GET, OPTIONS, PUT")
    r = client.options(path)
    assert (r.status_code, r.headers["allow"]) == (204, "GET, OPTIONS, PUT")
    r = client.delete("/api/v1/datasets/", headers=bearer(live_key))
    assert (r.status_code, r.headers["allow"]) == (405, "GET, OPTIONS, POST")


def test_duplicate_keys_and_nul_are_refused(client, live_key):
    h = {**bearer(live_key), "Content-Type": "application/json"}
    r = client.post("/api/v1/datasets/", content=b'{"owner": "a", "owner": "b", "slug": "s"}',
                    headers=h)
    assert (r.status_code, r.json()["detail"]) == (400, "malformed JSON: duplicate key 'owner'")
    r = client.post("/api/v1/datasets/", content=b'{"owner": "a\\u0000", "slug": "s"}',
                    headers=h)
    assert (r.status_code, r.json()["detail"]) == (
        422, "owner: contains a NUL character at character 1")
