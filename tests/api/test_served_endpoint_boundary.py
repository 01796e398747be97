"""A served model's endpoint comes from the server's judge versions, never from a request.

``POST /v1/judgments`` and ``POST /v1/rejudge-jobs`` name a judge version. Were a file path
accepted there, a caller could point the service at a version file of their own whose
served model's ``base_url`` is theirs: the service would send their server its frames and
its API key. Both bodies take version names only; a path is a 422 naming ``judge``, and the
endpoint written in that file hears nothing.
"""

from __future__ import annotations

import pytest
import yaml
from fastapi.testclient import TestClient

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.service import JudgeService
from tests.api.conftest import TMP_ROOTS, bearer, request_for
from tests.served_stub import StubServer


@pytest.fixture
def planted(tmp_path):
    """A version file under the bundle roots whose three models point at a stub server."""
    with StubServer() as stub:
        path = tmp_path / "evil.yaml"
        path.write_text(yaml.safe_dump({"name": "evil", "models": [
            {"name": f"m{i}", "backend": "openai", "min_answer_mass": 0,
             "endpoint": {"base_url": stub.url, "model": "stub-model"}} for i in range(3)]}))
        yield path, stub


@pytest.fixture
def real_client(tmp_path):
    """A service that loads judge versions as ``rcjudge serve`` does (the real loader)."""
    svc = JudgeService(f"sqlite:///{tmp_path / 'api.db'}", bundle_roots=TMP_ROOTS)
    key = svc.create_key("tester", "live", sorted(RIGHTS))[0]
    with TestClient(create_app(svc), raise_server_exceptions=False) as c:
        yield c, key
    svc.close()


@pytest.mark.parametrize("judge", ["{path}", "{name}.yaml", "../{name}"])
def test_judgment_request_names_no_version_file(planted, real_client, api_bundles, judge):
    path, stub = planted
    client, key = real_client
    named = judge.format(path=path, name=path.stem)
    r = client.post("/v1/judgments", json=request_for(api_bundles[0], judge=named),
                    headers=bearer(key))
    assert r.status_code == 422, r.text
    assert [p["name"] for p in r.json()["invalid_params"]] == ["judge"]
    assert stub.requests == []  # the planted endpoint heard nothing


def test_rejudge_request_names_no_version_file(planted, real_client):
    path, stub = planted
    client, key = real_client
    r = client.post("/v1/rejudge-jobs", json={"judge": str(path)}, headers=bearer(key))
    assert r.status_code == 422, r.text
    assert [p["name"] for p in r.json()["invalid_params"]] == ["judge"]
    assert stub.requests == []
