"""Every error is problem+json with status = HTTP status; hostile bodies are 4xx, never 5xx."""

from __future__ import annotations

import json

import pytest

from judge.api.routes import MAX_BODY
from tests.api.conftest import bearer, request_for


def raw_post(client, key, content: bytes, ctype="application/json"):
    return client.post("/v1/judgments", content=content,
                       headers={**bearer(key), "Content-Type": ctype})


def assert_problem(r, status, detail=None):
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    doc = r.json()
    assert doc["status"] == status and isinstance(doc["detail"], str)
    assert doc["type"] == "about:blank" and isinstance(doc["title"], str)
    if detail is not None:
        assert doc["detail"] == detail
    return doc


@pytest.mark.parametrize(("body", "status", "detail"), [
    (b'{"bundle_uri": ', 400,
     "request body: not valid JSON: Expecting value (line 1, column 16)"),
    (b'{"seed": NaN}', 400, "seed: NaN is not JSON (numbers must be finite)"),
    (b'{"seed": -Infinity}', 400, "seed: -Infinity is not JSON (numbers must be finite)"),
    (b'{"seed": 1.' + b"9" * 99 + b"}", 400, "seed: a number of 101 characters (at most 100)"),
    # well-formed JSON, a value no column holds (issue 36 item 9): 422 naming the field
    (b'{"seed": ' + b"9" * 101 + b"}", 422, "seed: integer of 101 digits is outside the "
     "64-bit range [-9223372036854775808, 9223372036854775807]"),
    (b'{"seed": ' + b"9" * 5000 + b"}", 422, "seed: integer of 5000 digits is outside the "
     "64-bit range [-9223372036854775808, 9223372036854775807]"),
    (b'{"seed": 1e999}', 400, "seed: number 1e999 is out of range (not a finite double)"),
    (b'[' * 33 + b']' * 33, 400, "request body: not valid JSON: nested deeper than 32 levels"),
    (b'[' * 100000 + b']' * 100000, 413, None),  # over the size limit
    (b'{"seed": "\xff\xfe"}', 400, "request body: not valid JSON: invalid UTF-8 at byte 10"),
])
def test_hostile_bodies_are_4xx(client, live_key, body, status, detail):
    r = raw_post(client, live_key, body)
    if len(body) > MAX_BODY:
        assert_problem(r, 413, f"request body of {len(body)} bytes is over the "
                               f"{MAX_BODY}-byte limit")
    else:
        assert_problem(r, status, detail)


def test_deep_nesting_under_the_limit_reaches_validation(client, live_key):
    body = b'{"env": ' + b'[' * 30 + b']' * 30 + b"}"
    assert_problem(raw_post(client, live_key, body), 422)


def test_deep_nesting_past_the_recursion_limit_is_400(client, live_key):
    body = b'[' * 20000 + b']' * 20000  # under 64 KiB, deeper than Python's recursion limit
    assert_problem(raw_post(client, live_key, body), 400,
                   "request body: not valid JSON: nested deeper than 32 levels")


def test_wrong_content_type_is_415(client, live_key, api_bundles):
    body = json.dumps(request_for(api_bundles[0])).encode()
    assert_problem(raw_post(client, live_key, body, "text/plain"), 415,
                   "Content-Type 'text/plain': send application/json")
    assert_problem(raw_post(client, live_key, body, ""), 415,
                   "Content-Type '(none)': send application/json")


def test_body_over_the_limit_without_length_is_413(client, live_key):
    def chunks():
        for _ in range(MAX_BODY // 1024 + 2):
            yield b" " * 1024

    r = client.post("/v1/judgments", content=chunks(),
                    headers={**bearer(live_key), "Content-Type": "application/json"})
    assert_problem(r, 413, f"request body is over the {MAX_BODY}-byte limit")


def test_not_an_object_and_wrong_types_are_422(client, live_key, api_bundles):
    assert_problem(raw_post(client, live_key, b"[1, 2]"), 422)
    doc = request_for(api_bundles[0])
    doc["body"]["dof"] = "twenty"
    d = assert_problem(raw_post(client, live_key, json.dumps(doc).encode()), 422)
    assert "body.dof" in d["detail"]


def test_unknown_path_and_method_are_problems(client, live_key):
    assert_problem(client.get("/v1/nothing", headers=bearer(live_key)), 404,
                   "no such endpoint: /v1/nothing")
    r = client.delete("/v1/usage", headers=bearer(live_key))
    assert_problem(r, 405, "DELETE is not allowed on /v1/usage")
    assert r.headers["allow"] == "GET, OPTIONS"
