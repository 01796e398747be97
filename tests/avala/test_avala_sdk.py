"""The public Avala Python SDK (PyPI ``avala``, pinned in constraints/avala.txt), unchanged,
against a real rcjudge server on loopback (docs/api.md, "The public Avala SDK").

The server runs here, in rcjudge's environment (uvicorn in a thread, SQLite); the SDK runs
in its own (``make test-avala`` builds ``.venv-avala`` and sets ``RCJUDGE_AVALA_PYTHON``)
as a subprocess: ``tests/avala/sdk_client.py`` makes the calls and prints what it got,
and every value is checked here against what was seeded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from judge.api.routes import create_app
from judge.api.server import running
from judge.api.service import JudgeService
from judge.outcomes.labels import OUTCOMES
from judge.outcomes.store import OutcomeStore

pytestmark = pytest.mark.avala

H = [f"{i:x}" * 64 for i in range(3)]
U = ["seq_" + h[:32] for h in H]
CLIENT = Path(__file__).with_name("sdk_client.py")


@pytest.fixture
def seeded(tmp_path):
    """acme/kitchen (3 sequences) and b/z are the editor's, with a read grant on acme/kitchen
    for the reader; acme/lab (public) and acme/secret (private) are another key's."""
    service = JudgeService(f"sqlite:///{tmp_path / 'api.db'}", bundle_roots=[str(tmp_path)])
    rights = ["datasets:read", "datasets:write"]
    editor, e = service.create_key("editor", "live", rights)
    reader, r = service.create_key("reader", "live", rights)
    o = service.create_key("other", "live", rights)[1]
    store = OutcomeStore(service.modes["live"].engine)
    for key, name, public in ((e, "acme/kitchen", False), (o, "acme/lab", True),
                              (o, "acme/secret", False), (e, "b/z", False)):
        store.create_dataset(name, public=public, key_id=key.key_id)
    store.grant("acme/kitchen", r.key_id, "read")
    for i, h in enumerate(H):
        store.add_sequence("acme/kitchen", h, f"{tmp_path}/run-{i}", length_s=30.0)
    created = {d["dataset"]: datetime.fromisoformat(d["created_at"].replace("Z", "+00:00"))
               .isoformat() for d in store.list_datasets()}
    try:
        with running(create_app(service)) as base:
            yield {"base_url": f"{base}/api/v1", "editor": editor, "reader": reader,
                   "uids": U}, created
    finally:
        service.close()


def run_sdk(cfg: dict) -> dict:
    python = os.environ["RCJUDGE_AVALA_PYTHON"]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
           "AVALA_ALLOW_INSECURE_BASE_URL": "true"}  # http to loopback: the SDK's dev switch
    done = subprocess.run([python, str(CLIENT), json.dumps(cfg)], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sdk_version_is_the_pinned_one():
    """The SDK's environment is its own: the pinned avala, and none of rcjudge's server."""
    pinned = next(line.split("==")[1].strip() for line in
                  (Path(__file__).parents[2] / "constraints" / "avala.txt").read_text()
                  .splitlines() if line.startswith("avala=="))
    done = subprocess.run([os.environ["RCJUDGE_AVALA_PYTHON"], "-I", "-c",
                           "import importlib.metadata as m, importlib.util as u, sys; "
                           "print(m.version('avala'), sys.prefix, u.find_spec('fastapi'))"],
                          capture_output=True, text=True, check=True)
    version, prefix, fastapi = done.stdout.split()
    assert (version, fastapi) == (pinned, "None")
    assert os.path.realpath(prefix) != os.path.realpath(sys.prefix)


def test_sdk_datasets_calls_and_the_outcome_routes_through_its_transport(seeded):
    cfg, created = seeded
    out = run_sdk(cfg)

    def ds(uid, count):
        owner, slug = uid.split("/")
        return {"uid": uid, "name": slug, "slug": slug, "owner_name": owner,
                "item_count": count, "is_sequence": True, "data_type": "mcap",
                "status": "created", "created_at": created[uid]}

    assert out["list"] == {"items": [ds("acme/kitchen", 3), ds("acme/lab", 0), ds("b/z", 0)],
                           "next": None, "previous": None, "has_more": False}
    assert out["list_by_one"] == [["acme/kitchen"], ["acme/lab"], ["b/z"]]
    assert out["list_back"] == ["acme/kitchen"]
    assert out["get_by_slug"] == out["get_by_uid"] == ds("acme/kitchen", 3)
    assert out["get_by_slug_hidden"] == {"error": "NotFoundError", "status": 404,
                                         "message": "dataset acme/secret: not found"}
    assert out["reader_list"] == ["acme/kitchen", "acme/lab"]
    # issue 36 item 11: the SDK's filters are applied (a 422 "query parameter 'name': unknown
    # here" before); the editor reads acme/kitchen and b/z (private) and acme/lab (public)
    assert out["filters"] == {
        "name": ["acme/kitchen"], "name_none": [],
        "public": ["acme/lab"], "private": ["acme/kitchen", "b/z"], "unlisted": [],
        "mcap": ["acme/kitchen", "acme/lab", "b/z"], "image": [],
        "created": ["acme/kitchen", "acme/lab", "b/z"], "creating": [],
        "together": ["b/z"], "paged": [["acme/kitchen"], ["b/z"]],
        "reader_public": ["acme/lab"],
        "bad_visibility": {"error": "ValidationError", "status": 422, "message":
                           "query.visibility: String should match pattern "
                           "'^(private|unlisted|public)$'"}}
    assert out["nobody_list"] == {
        "error": "AuthenticationError", "status": 401,
        "message": "X-Avala-Api-Key header: not an rcjudge key (bad format or checksum)"}

    assert out["sequences"] == [U[:2], U[2:]]
    assert out["get_sequence"] == [{"uid": u, "dataset_uid": "acme/kitchen", "frames": None}
                                   for u in U]
    assert out["calibration"] == {"sequence_uid": U[0], "cameras": []}
    assert out["get_sequence_missing"] == {
        "error": "NotFoundError", "status": 404,
        "message": "sequence 'seq_nope': not in dataset acme/kitchen"}

    assert out["put"] == [[1, "failure", 0.25], [2, "mistake_and_recovery", None]]
    assert out["get_label"] == [True, 2, True]
    assert out["history"] == [[2, "mistake_and_recovery", True], [1, "failure", True]]
    assert out["lane"] == [[U[0]], [U[1]]]
    assert out["label_missing"] == {"error": "NotFoundError", "status": 404,
                                    "message": f"sequence '{U[2]}' of acme/kitchen: "
                                               "no outcome label"}
    assert out["label_bad"] == {"error": "ValidationError", "status": 400,
                                "message": f"outcome: must be one of {', '.join(OUTCOMES)} "
                                           "(got 'won')"}
    assert out["label_reader"] == {
        "error": "ForbiddenError", "status": 403,
        "message": "dataset acme/kitchen: this key may read it but not edit it"}
    assert out["label_nobody"] == out["nobody_list"]
