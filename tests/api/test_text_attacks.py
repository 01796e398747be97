"""Issue 29 item 1: a stored string that cannot be encoded must never break reads.

A lone surrogate (the JSON escape ``\\ud800``) or a NUL in any stored string is refused
with 422 naming the field and nothing is stored; a row that was stored before this check
is served with the field replaced and flagged (never a 500), and ``rcjudge db check``
reports it.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.outcomes.store import OutcomeStore
from rcjudge.cli import main
from tests.api.conftest import bearer

DS = "/api/v1/datasets/lab/kitchen"
SUR = "\ud800"


@pytest.fixture
def lab(client, service):
    key = service.create_key("lab", "live", ["datasets:read", "datasets:write"])[0]
    r = client.post("/api/v1/datasets/", json={"owner": "lab", "slug": "kitchen"},
                    headers=bearer(key))
    assert r.status_code == 201, r.text
    store = OutcomeStore(service.modes["live"].engine)
    uid = store.add_sequence("lab/kitchen", "a" * 64, "/b/0", length_s=30.0)
    return key, uid, store


def _raw(body: dict) -> bytes:
    return json.dumps(body).encode()  # ensure_ascii: "\ud800" travels as the JSON escape


SPAN = {"start_ts": 0, "end_ts": 1}
ATTACKS = [
    ({"mistake_type": SUR}, "mistake_type"),
    ({"mistake_type": "a\x00b"}, "mistake_type"),
    ({"subtasks": [{"label": SUR, **SPAN}]}, "subtasks[0].label"),
    ({"hand_actions": {"left": [{"action": SUR, **SPAN}]}}, "hand_actions.left[0].action"),
    ({"leakage_groups": {"location": SUR}}, "leakage_groups.location"),
    ({"source_metadata": {"k": SUR}}, "source_metadata.k"),
    ({"source_metadata": {SUR: "v"}}, "source_metadata.'\\ud800'"),
]


@pytest.mark.parametrize(("extra", "field"), ATTACKS)
def test_bad_text_is_refused_naming_the_field_and_not_stored(client, lab, extra, field):
    key, uid, _ = lab
    url = f"{DS}/sequences/{uid}/outcome/"
    r = client.put(url, content=_raw({"outcome": "failure", **extra}),
                   headers={**bearer(key), "Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith(f"{field}: ")
    assert client.get(url, headers=bearer(key)).status_code == 404
    assert client.get(f"{url}history/", headers=bearer(key)).status_code == 404
    assert client.get(f"{DS}/sequence-outcomes/", headers=bearer(key)).json()["results"] == []


def test_a_stored_unencodable_row_is_served_flagged_and_found(client, service, lab, capsys):
    key, uid, _ = lab
    url = f"{DS}/sequences/{uid}/outcome/"
    assert client.put(url, json={"outcome": "failure"}, headers=bearer(key)).status_code == 200
    t = S.sequence_outcomes
    with service.modes["live"].engine.begin() as conn:  # a row stored before the check
        label = conn.execute(sa.select(t.c.label)).scalar_one()
        conn.execute(t.update().values(label={**label, "mistake_type": SUR,
                                              "source_metadata": {"k": "a\x00"}}))
    for path in (url, f"{url}history/", f"{DS}/sequence-outcomes/"):
        r = client.get(path, headers=bearer(key))
        assert r.status_code == 200, (path, r.text)
    got = client.get(url, headers=bearer(key)).json()
    assert (got["mistake_type"], got["source_metadata"], got["unencodable_fields"]) == (
        "\ufffd", {"k": "a\ufffd"}, ["mistake_type", "source_metadata.k"])
    db = service.modes["live"].engine.url.render_as_string(hide_password=False)
    assert main(["sequence-outcomes", "history", "lab", "kitchen", uid, "--db", db,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["mistake_type"] == "\ufffd"
    assert main(["db", "check", "--db", db, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["unencodable"] == [{"table": "sequence_outcomes", "dataset": "lab/kitchen",
                                      "sequence_uid": uid, "version": 1,
                                      "fields": ["mistake_type", "source_metadata.k"]}]
