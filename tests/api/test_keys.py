"""API keys: format and checksum, stored hashed, rights on every endpoint, test vs live."""

from __future__ import annotations

import sqlalchemy as sa

from judge.api import auth
from judge.api import tables as T
from tests.api.conftest import bearer, counts, request_for


def test_key_shape_checksum_and_hash():
    key = auth.new_key("live")
    assert key.startswith("rck_live_") and len(key) == len("rck_live_") + 36
    parsed = auth.parse_key(key)
    assert parsed.mode == "live" and parsed.key_id == "key_" + key[9:21]
    assert parsed.secret_hash == auth.hash_key(key) and len(parsed.secret_hash) == 64
    # one changed character anywhere breaks the checksum
    i = 15
    typo = key[:i] + ("A" if key[i] != "A" else "B") + key[i + 1:]
    assert auth.parse_key(typo) is None
    assert auth.parse_key(key[:-1]) is None
    assert auth.parse_key("rck_prod_" + key[9:]) is None
    assert auth.checksum("rck_test_" + "0" * 30) == auth.checksum("rck_test_" + "0" * 30)
    assert auth.parse_key(auth.new_key("test")).mode == "test"


def test_key_is_stored_only_as_its_hash(service):
    key, rec = service.create_key("ci", "live", ["usage:read"])
    with service.modes["live"].engine.connect() as conn:
        rows = [tuple(map(str, r)) for r in conn.execute(sa.select(T.api_keys)).all()]
    assert all(key not in cell for row in rows for cell in row)
    assert [r["key_id"] for r in service.list_keys()] == [rec.key_id]
    assert service.list_keys()[0]["dataset"] is None  # judgments labelled nowhere
    assert set(service.list_keys()[0]) == {"key_id", "name", "mode", "rights_granted",
                                           "dataset", "created_at", "revoked_at"}


def test_unknown_right_is_refused_naming_it(service):
    import pytest

    from judge.api.errors import ApiError

    with pytest.raises(ApiError, match=r"rights_granted: unknown right\(s\): judge:all; known: "
                       r"attestations:read, "):
        service.create_key("x", "live", ["judge:all", "usage:read"])


def test_missing_bad_unknown_and_revoked_keys_are_401(client, service):
    key, rec = service.create_key("ci", "live", ["usage:read"])
    cases = {
        None: "Authorization: missing; send 'Bearer rck_live_…'",
        "Basic abc": "Authorization: expected 'Bearer rck_live_…' or 'Bearer rck_test_…'",
        "Bearer " + key[:-1] + ("x" if key[-1] != "x" else "y"):
            "Authorization: not an rcjudge key (bad format or checksum)",
        "Bearer " + auth.new_key("live"): "Authorization: unknown key",
    }
    for header, detail in cases.items():
        r = client.get("/v1/usage", headers={"Authorization": header} if header else {})
        assert r.status_code == 401, header
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["www-authenticate"] == 'Bearer realm="rcjudge"'
        assert r.json() == {"type": "about:blank", "title": "Unauthorized", "status": 401,
                            "detail": detail, "instance": "/v1/usage"}
    assert client.get("/v1/usage", headers=bearer(key)).status_code == 200
    assert service.revoke_key(rec.key_id) is True
    assert service.revoke_key(rec.key_id) is False
    r = client.get("/v1/usage", headers=bearer(key))
    assert (r.status_code, r.json()["detail"]) == (
        401, f"Authorization: key {rec.key_id} was revoked")


def test_rights_are_checked(client, service, api_bundles):
    key, rec = service.create_key("reader", "live", ["usage:read"])
    r = client.post("/v1/judgments", json=request_for(api_bundles[0]), headers=bearer(key))
    assert r.status_code == 403
    assert r.json()["detail"] == (f"key {rec.key_id} lacks the right 'judgments:write' "
                                  "(rights_granted: usage:read)")
    me = client.get("/v1/keys/me", headers=bearer(key)).json()
    assert me == {"key_id": rec.key_id, "name": "reader", "mode": "live",
                  "rights_granted": ["usage:read"], "created_at": me["created_at"]}
    assert counts(service)["judgments"] == 0


def test_test_keys_never_touch_live_data(client, service, live_key, test_key, api_bundles):
    r = client.post("/v1/judgments", json=request_for(api_bundles[0]), headers=bearer(test_key))
    assert r.status_code == 200, r.text
    assert counts(service) == {"runs": 0, "judgments": 0,
                                                     "operator_labels": 0}
    assert counts(service, "test") == {"runs": 1, "judgments": 1,
                                                     "operator_labels": 0}
    assert client.get("/v1/usage", headers=bearer(live_key)).json()["calls"] == 0
    assert client.get("/v1/usage", headers=bearer(test_key)).json()["calls"] == 1
    jid = r.json()["judgment_id"]
    assert client.get(f"/v1/judgments/{jid}", headers=bearer(live_key)).status_code == 404


def test_every_operation_checks_its_right_before_reading_the_request(client, service):
    """A key with no right at all gets 403 on every operation but /v1/keys/me: the Judge
    API's 24 others and the sequence-outcome side's 13 (400/422 never come first)."""
    key = service.create_key("nobody", "live", [])[0]
    paths = {**client.get("/openapi.json").json()["paths"],
             **client.get("/api/v1/openapi.json").json()["paths"]}
    seen = []
    for path, ops in paths.items():
        for method in ops:
            url = path.replace("{", "").replace("}", "")  # e.g. /v1/runs/run_id
            r = client.request(method.upper(), url, headers=bearer(key),
                               json={"not": "valid"} if method in ("post",) else None)
            seen.append((method.upper(), path, r.status_code))
    allowed = [s for s in seen if s[1] == "/v1/keys/me"]
    assert allowed == [("GET", "/v1/keys/me", 200)]
    assert [s for s in seen if s[1] != "/v1/keys/me" and s[2] != 403] == []
    assert len(seen) == 38
