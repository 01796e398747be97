"""Issue 29 items 2 and 3: bundles are read only under the roots the operator configured.

Every refusal is one 422 with the same text (no server path, no existence oracle), no
charge, and no connection to anything: an FTP listener on loopback sees no client.
"""

from __future__ import annotations

import shutil
import socket
import threading

import pytest
from fastapi.testclient import TestClient

from judge.api.bundle_roots import REFUSED, BundleRoots
from judge.api.routes import create_app
from judge.api.service import JudgeService
from judge.errors import ConfigError
from tests.api.conftest import bearer, fake_judges, request_for


@pytest.fixture
def served(tmp_path, api_bundles, make_bundles):
    root = tmp_path / "srv" / "bundles"
    root.mkdir(parents=True)
    inside = shutil.copytree(api_bundles[0], root / "run-1")
    other = tmp_path / "srv" / "other"
    shutil.copytree(api_bundles[1], other / "run-7")
    (root / "key.pem").write_text("secret\n")
    svc = JudgeService(f"sqlite:///{tmp_path / 'r.db'}", judges=fake_judges(),
                       bundle_roots=[str(root)])
    key = svc.create_key("t", "live", ["judgments:write", "usage:read"])[0]
    with TestClient(create_app(svc), raise_server_exceptions=False) as c:
        yield c, key, root, inside, api_bundles[1]
    svc.close()


@pytest.fixture
def ftp_listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    seen, stop = [], threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            seen.append(1)
            conn.sendall(b"220 hi\r\n")
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1], seen
    stop.set()
    t.join()
    srv.close()


def post(client, key, doc):
    return client.post("/v1/judgments", json=doc, headers=bearer(key))


def test_only_bundles_under_a_root_are_judged(served, ftp_listener):
    client, key, root, inside, outside_bundle = served
    port, seen = ftp_listener
    assert post(client, key, request_for(str(inside))).status_code == 200
    attacks = [f"ftp://127.0.0.1:{port}/x", "github://x:y@/", "zip://x::file:///etc/passwd",
               f"simplecache::ftp://127.0.0.1:{port}/x", "http://169.254.169.254/latest",
               "../../etc/passwd", "/etc/passwd", "/etc", str(root / "key.pem"),
               str(root / "nowhere"), f"{root}/../other/run-7", f"file://{root}/../other/run-7",
               "run-1", "s3://bucket/prefix/x"]
    details = set()
    for uri in attacks:
        doc = request_for(outside_bundle)
        doc["bundle_uri"] = uri
        r = post(client, key, doc)
        assert r.status_code == 422, (uri, r.text)
        details.add(r.json()["detail"])
    assert details == {REFUSED}
    assert str(root) not in REFUSED
    assert seen == []  # the server never connected to the listener
    usage = client.get("/v1/usage", headers=bearer(key)).json()
    assert usage["calls"] == 1  # only the bundle under the root was charged


def test_normalisation_of_roots_and_uris(tmp_path):
    roots = BundleRoots([str(tmp_path / "a"), "s3://bucket/prefix"])
    (tmp_path / "a" / "y").mkdir(parents=True)
    (tmp_path / "a" / "y" / "manifest.json").write_text("{}")
    assert roots.admit(f"{tmp_path}/a/./x/../y") == str((tmp_path / "a" / "y").resolve())
    assert roots.admit("s3://bucket/prefix/a/./b/") == "s3://bucket/prefix/a/b"
    for uri in ("s3://bucket/prefixx/a", "s3://bucket/prefix/../other/a",
                "s3://bucket/prefix/%2e%2e/other", "s3://key:secret@bucket/prefix/a",
                "s3://bucket:9000/prefix/a", "s3://bucket/prefix/a?endpoint_url=http://x",
                "s3://other/prefix/a", f"{tmp_path}/ab", "gs://bucket/prefix/a"):
        with pytest.raises(Exception) as exc:
            roots.admit(uri)
        assert (exc.value.status, exc.value.detail) == (422, REFUSED), uri
    with pytest.raises(ConfigError, match="--bundle-root 'ftp://h/x'"):
        BundleRoots(["ftp://h/x"])
