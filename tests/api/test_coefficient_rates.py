"""The coefficients table's rectified rate, end to end through the API: a key judges 44 runs
of one tier-A cell, draws a sampling round on its review page, labels the draws, and
``GET /v1/coefficients`` serves the cell's rectified rate with its interval beside the
judge-only ``success_rate``; insufficient and tier-B cells never get one."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from judge.api.auth import RIGHTS
from judge.api.coefficient_rates import TIER_B, Rectifier
from judge.api.routes import create_app
from judge.api.service import JudgeService
from judge.ensemble.version import JudgeVersion
from judge.learn.draw import open_picks
from judge.ledgers.rounds import read_frames
from judge.review.routes import KeyDesk, add_review
from tests.api.conftest import (  # noqa: F401  (pg_db: a fixture)
    SCRIPT,
    TMP_ROOTS,
    bearer,
    fake_judges,
    pg_db,
    request_for,
)


def fake_version(name: str) -> JudgeVersion:
    """fake-v1's config, for the page (its models are never loaded there)."""
    return JudgeVersion(name=name, models=[
        {"name": f"m{i}", "backend": "fake", "options": {"script": SCRIPT}} for i in range(3)])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service(request, tmp_path):
    """The Judge API on SQLite, or on PostgreSQL connected as the API's role (rcjudge_api),
    whose grants the table's read and the page's round must live within."""
    if request.param == "sqlite":
        svc = JudgeService(f"sqlite:///{tmp_path / 'api.db'}", judges=fake_judges(),
                           bundle_roots=TMP_ROOTS)
        yield svc
        svc.close()
        return
    import sqlalchemy as sa

    from judge.ledgers.store import make_engine

    url, test_schema = request.getfixturevalue("pg_db")
    JudgeService(url, judges=fake_judges(), test_schema=test_schema).close()  # owner migrates
    role = sa.make_url(make_engine(url).url).set(username="rcjudge_api")
    svc = JudgeService(role.render_as_string(hide_password=False), judges=fake_judges(),
                       test_schema=test_schema, bundle_roots=TMP_ROOTS)
    with svc.modes["live"].engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT current_user").scalar_one() == "rcjudge_api"
    yield svc
    svc.close()


def test_a_cell_gets_its_owners_sampled_labels_rectified_rate(service, make_bundles):
    bundles = make_bundles(44, seed=41, width=96, height=64, fps=10)
    app = create_app(service)
    add_review(app, KeyDesk(service, fake_version))
    key = service.create_key("ana", "live", sorted(RIGHTS))[0]
    with TestClient(app) as client:
        for b in bundles:  # fake-v1 says failure (grasp.slip, counted) to every run
            r = client.post("/v1/judgments", json=request_for(str(b)), headers=bearer(key))
            assert r.status_code == 200, r.text
        (cell,) = client.get("/v1/coefficients", headers=bearer(key)).json()["data"]
        assert (cell["n"], cell["status"], cell["success_rate"]) == (44, "ok", 0.0)
        assert (cell["rectified_rate"], cell["rectified_interval"], cell["rectified_runs"],
                cell["rectified_labels"], cell["rectified_note"]) == (None, None, 0, 0, None)
        # the key's review page draws a uniform round of 15 and it labels every draw (each
        # a success, against the judge's failure), stopping when the round owes nothing
        # (one more call would draw round 2)
        owner = service.modes["live"].ledger_of(service.authenticate(f"Bearer {key}"))
        body = {"judge_version": "fake-v1", "strategy": "sample-uniform", "n": 15}
        card = client.post("/review/api/next", headers=bearer(key), json=body).json()["card"]
        while card is not None:
            r = client.post("/review/api/labels", headers=bearer(key), json={
                "run_id": card["run_id"], "judge_version": "fake-v1",
                "pick": card["pick"], "attempt": True, "success": True})
            assert r.status_code == 201, r.text
            card = (client.post("/review/api/next", headers=bearer(key), json=body).json()[
                "card"] if open_picks(owner, "fake-v1", "sample-uniform") else None)
        with service.modes["live"].engine.connect() as conn:
            rounds, _ = read_frames(conn)
        assert list(rounds) == [1]
        k, frame = rounds[1].drawn, rounds[1].candidates
        assert 5 <= k < 30 and frame < 44  # train's test part is never a candidate
        (cell,) = client.get("/v1/coefficients", headers=bearer(key)).json()["data"]
    # k labels, all successes, under 30: the labels' exact interval [(α/2)^(1/k), 1], over
    # the round's frame (the runs the rectified rate covers)
    assert (cell["success_rate"], cell["rectified_rate"], cell["rectified_method"]) == (
        0.0, 1.0, "clopper-pearson")
    assert cell["rectified_interval"] == [round(0.025 ** (1 / k), 6), 1.0]
    assert (cell["rectified_labels"], cell["rectified_runs"]) == (k, frame)
    assert cell["rectified_note"] == (
        f"{k} labels (under 30): the labels' exact interval; the judge cannot narrow a "
        "finite-sample interval this small (docs/rates.md)")


def test_insufficient_and_tier_b_cells_get_no_rectified_value():
    from judge.api.protocol import CoefficientCell

    cell = CoefficientCell(cell_id="cell_x", policy="p", body="b", task_family="f", tier="A",
                           judge_version="v", task_families=["f"], tasks=5, broadened=False,
                           n=12, status="insufficient", success_rate=None, exempt_failures=0)
    rectify = Rectifier(ledger=None)  # neither reads the ledger
    assert rectify(cell, []) == cell
    tier_b = cell.model_copy(update={"tier": "B", "n": 40, "status": "ok",
                                     "success_rate": 0.5})
    assert rectify(tier_b, []).rectified_note == TIER_B
    assert rectify(tier_b, []).rectified_rate is None
