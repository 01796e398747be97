"""Fixtures of the API tests: a service on SQLite with scripted (fake) judges, keys, bundles."""

from __future__ import annotations

import json
import tempfile

import pytest
from fastapi.testclient import TestClient

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.service import JudgeService
from judge.ensemble.judge import Judge
from judge.ensemble.version import JudgeVersion
from models.base import BackendSpec
from models.fake import FakeBackend

#: The bundle roots of the test services: every test's bundles are under the temp dir.
TMP_ROOTS = [tempfile.gettempdir()]
SCRIPT = {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"}


def fake_judge(name: str = "fake-v1", script: dict | None = None, delay_s: float = 0.0) -> Judge:
    version = JudgeVersion(name=name, models=[
        {"name": f"m{i}", "backend": "fake",
         "options": {"script": script or SCRIPT, "delay_s": delay_s}} for i in range(3)])
    backends = [FakeBackend(BackendSpec(name=m.name, backend="fake", options=m.options))
                for m in version.models]
    for b in backends:
        b.load()
    return Judge(version, backends=backends)


def fake_judges(**per_name) -> callable:
    """A judge loader: ``fake-v1`` (and any name given) -> a fake judge; others unknown."""
    from judge.errors import ConfigError

    def load(name: str) -> Judge:
        if name == "fake-v1":
            return fake_judge()
        if name in per_name:
            return per_name[name]()
        raise ConfigError(f"unknown judge version {name!r}; known: fake-v1")

    return load


@pytest.fixture
def service(tmp_path):
    svc = JudgeService(f"sqlite:///{tmp_path / 'api.db'}", judges=fake_judges(),
                       bundle_roots=TMP_ROOTS)
    yield svc
    svc.close()


@pytest.fixture
def client(service):
    with TestClient(create_app(service), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def live_key(service):
    return service.create_key("tester", "live", sorted(RIGHTS))[0]


@pytest.fixture
def test_key(service):
    return service.create_key("tester-test", "test", sorted(RIGHTS))[0]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="session")
def api_bundles(make_bundles):
    return [str(p) for p in make_bundles(3, seed=11, width=96, height=64, fps=10)]


def request_for(bundle: str, judge: str = "fake-v1") -> dict:
    """The spec's request shape for a synthetic bundle (its own attribution)."""
    attribution = json.loads(open(f"{bundle}/attribution.json").read())
    doc = {"bundle_uri": bundle, **{k: attribution[k] for k in ("policy", "body", "task")},
           "judge": judge}
    for k in ("env", "seed", "reset"):
        if attribution.get(k) is not None:
            doc[k] = attribution[k]
    return doc


@pytest.fixture
def pg_db():
    """A fresh PostgreSQL schema for the live and one for the test database: (URL, test schema)."""
    import os
    import secrets

    from judge.ledgers.store import make_engine

    base = os.environ.get("RCJUDGE_PG_URL", "postgresql://127.0.0.1:5432/test")
    live, test = f"rcj_api_{secrets.token_hex(4)}", f"rcj_apit_{secrets.token_hex(4)}"
    owner = make_engine(base)
    with owner.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {live}")
    try:
        yield f"{base}?options=-csearch_path%3D{live}", test
    finally:
        with owner.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {live} CASCADE")
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {test} CASCADE")
        owner.dispose()


def counts(service, mode: str = "live") -> dict[str, int]:
    """Rows per ledger in a mode's database, every owner's (a ledger counts its owner's)."""
    import sqlalchemy as sa

    from judge.ledgers import schema as S

    with service.modes[mode].engine.connect() as conn:
        return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
                for t in (S.runs, S.judgments, S.operator_labels)}
