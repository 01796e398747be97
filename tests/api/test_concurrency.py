"""20 concurrent identical POST /v1/judgments on a real server: one judgment, one charge."""

from __future__ import annotations

import threading

import httpx
import pytest

from judge.api.routes import create_app
from judge.api.server import running
from judge.api.service import JudgeService
from tests.api.conftest import TMP_ROOTS, bearer, counts, fake_judge, request_for


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'c.db'}", "rcjudge_test"
    return request.getfixturevalue("pg_db")


def test_twenty_concurrent_identical_posts(db, api_bundles):
    # each model call sleeps 50 ms, so the first request is in flight while the others land
    url, test_schema = db
    service = JudgeService(url, judges=lambda name: fake_judge(name, delay_s=0.05),
                           test_schema=test_schema, bundle_roots=TMP_ROOTS)
    key = service.create_key("c", "live", ["judgments:write", "usage:read"])[0]
    doc = request_for(api_bundles[0])
    headers = {**bearer(key), "Idempotency-Key": "same-20"}
    barrier = threading.Barrier(20)
    answers: list[httpx.Response] = []
    lock = threading.Lock()
    try:
        with running(create_app(service)) as url:
            def one() -> None:
                with httpx.Client(base_url=url, timeout=30) as c:
                    barrier.wait()
                    r = c.post("/v1/judgments", json=doc, headers=headers)
                with lock:
                    answers.append(r)

            threads = [threading.Thread(target=one) for _ in range(20)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            with httpx.Client(base_url=url) as c:
                after = c.post("/v1/judgments", json=doc, headers=headers)
                usage = c.get("/v1/usage", headers=bearer(key)).json()
    finally:
        service.close()
    statuses = sorted(r.status_code for r in answers)
    assert len(answers) == 20 and set(statuses) <= {200, 409}
    assert statuses.count(200) >= 1
    assert all(r.headers["content-type"] == "application/problem+json"
               and r.json()["status"] == 409 for r in answers if r.status_code == 409)
    bodies = {r.content for r in answers if r.status_code == 200} | {after.content}
    assert len(bodies) == 1  # every 200 (and the replay after) is the same bytes
    assert counts(service)["judgments"] == 1
    assert (usage["calls"], usage["amount_cents"], usage["amount_usd"]) == (1, 60, "0.60")
