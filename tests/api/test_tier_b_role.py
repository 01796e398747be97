"""Tier-B isolation per connection: the API's role reads no tier-B content column (PostgreSQL).

A fresh schema is migrated by the owner; then the same database is opened as
``rcjudge_api`` and every way of reading a content column must fail with 42501.
"""

from __future__ import annotations

import os
import secrets

import pytest
import sqlalchemy as sa

from judge.ledgers.store import make_engine, upgrade

PG_URL = os.environ.get("RCJUDGE_PG_URL", "postgresql://127.0.0.1:5432/test")
CONTENT = ("task_id", "instruction", "scene_spec", "success_criteria")


@pytest.fixture(scope="module")
def schema():
    name = f"rcj_tb_{secrets.token_hex(5)}"
    owner = make_engine(PG_URL)
    with owner.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {name}")
    engine = make_engine(PG_URL, schema=name)
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO tier_b_tasks VALUES ('tk_1', 'B', 'tabletop.pick_place', "
            "'tabletop.pick_place.secret_007', 'pick the red mug', '{}', 'mug on tray')"))
        conn.execute(sa.text(
            "INSERT INTO runs (run_id, bundle_uri, bundle_hash, policy_vendor, policy_name, "
            "policy_version, policy_checkpoint, body_arm, body_hand, body_calibrated_at, "
            "task_id, task_tier, duration_s, cycle_sec, recorded_at) VALUES ('run-b', '/b', "
            ":h, 'v', 'p', '1', 'c', 'arm', 'hand', '2026-01-01', "
            "'tabletop.pick_place.secret_007', 'B', 6.0, 5.0, now())"), {"h": "b" * 64})
    engine.dispose()
    yield name
    with owner.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA {name} CASCADE")
    owner.dispose()


@pytest.fixture
def api_conn(schema):
    url = sa.make_url(make_engine(PG_URL).url).set(username="rcjudge_api")
    engine = make_engine(url.render_as_string(hide_password=False), schema=schema)
    with engine.connect() as conn:
        yield conn
    engine.dispose()


def _denied(conn, sql: str) -> str:
    with pytest.raises(sa.exc.ProgrammingError) as info:
        conn.exec_driver_sql(sql)
    conn.rollback()
    assert info.value.orig.sqlstate == "42501", sql
    return str(info.value.orig).splitlines()[0]


@pytest.mark.postgres
@pytest.mark.parametrize("sql", [
    "SELECT * FROM tier_b_tasks",
    *(f"SELECT {c} FROM tier_b_tasks" for c in CONTENT),
    *(f"SELECT task_key FROM tier_b_tasks WHERE {c} IS NOT NULL" for c in CONTENT),
    *(f"SELECT task_key FROM tier_b_tasks ORDER BY {c}" for c in CONTENT),
    "SELECT to_jsonb(t) FROM tier_b_tasks t",
    "SELECT row_to_json(t) FROM tier_b_tasks t",
    "SELECT t::text FROM tier_b_tasks t",
    "COPY tier_b_tasks TO STDOUT",
    "COPY (SELECT task_id FROM tier_b_tasks) TO STDOUT",
    "UPDATE tier_b_tasks SET tier = tier WHERE task_id = 'x'",
])
def test_content_columns_are_denied(api_conn, sql):
    assert _denied(api_conn, sql) == "permission denied for table tier_b_tasks"


@pytest.mark.postgres
@pytest.mark.parametrize("sql", [
    "SELECT * FROM runs",
    "SELECT task_id FROM runs",
    "SELECT run_id FROM runs WHERE task_id = 'tabletop.pick_place.secret_007'",
    "SELECT run_id FROM runs WHERE starts_with(task_id, 'tabletop.')",
    "SELECT run_id FROM runs ORDER BY task_id",
    "SELECT count(DISTINCT task_id) FROM runs",
    "SELECT run_id FROM runs GROUP BY run_id, task_id",
    "SELECT to_jsonb(r) FROM runs r",
    "SELECT row_to_json(r) FROM runs r",
    "SELECT r::text FROM runs r",
    "COPY runs TO STDOUT",
    "COPY runs (task_id) TO STDOUT",
    "COPY (SELECT task_id FROM runs) TO STDOUT",
    "UPDATE runs SET seed = seed WHERE task_id = 'x'",
    "INSERT INTO runs SELECT * FROM runs",
])
def test_runs_task_id_is_denied(api_conn, sql):
    """``runs.task_id`` holds tier-B task ids: closed to the role (revision 0006)."""
    assert _denied(api_conn, sql) == "permission denied for table runs"


@pytest.mark.postgres
def test_the_calibration_view_is_closed_to_the_role(api_conn):
    # its select list reads runs.task_id, so the role has no grant on it at all
    for sql in ("SELECT * FROM calibration_set", "SELECT run_id FROM calibration_set"):
        assert _denied(api_conn, sql) == "permission denied for view calibration_set"


@pytest.mark.postgres
def test_what_the_role_may_read(api_conn):
    rows = api_conn.exec_driver_sql("SELECT task_key, tier, family FROM tier_b_tasks").all()
    assert rows == [("tk_1", "B", "tabletop.pick_place")]
    assert api_conn.exec_driver_sql("SELECT count(*) FROM tier_b_tasks").scalar_one() == 1
    assert api_conn.exec_driver_sql("SELECT current_user").scalar_one() == "rcjudge_api"
    # every other column of runs; public_task_id is NULL for the tier-B run
    assert api_conn.exec_driver_sql(
        "SELECT run_id, task_tier, public_task_id, bundle_hash FROM runs").all() == [
        ("run-b", "B", None, "b" * 64)]
    assert api_conn.exec_driver_sql("SELECT count(*) FROM runs").scalar_one() == 1


@pytest.mark.postgres
def test_catalog_audit_finds_nothing_that_reopens_the_columns(schema, api_conn):
    owner = make_engine(PG_URL)
    try:
        with owner.connect() as conn:
            q = lambda sql: conn.execute(sa.text(sql), {"s": schema}).all()  # noqa: E731
            # every view in the schema runs with the caller's rights
            views = q("SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n "
                      "ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind IN "
                      "('v', 'm') ORDER BY 1")
            assert [v[0] for v in views] == ["calibration_set", "current_operator_labels"]
            assert all("security_invoker=true" in (v[1] or []) for v in views)
            # no SECURITY DEFINER function in the schema
            assert q("SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON "
                     "n.oid = p.pronamespace WHERE n.nspname = :s AND p.prosecdef") == []
            # no grant to PUBLIC on any table or column of the schema
            assert q("SELECT table_name FROM information_schema.table_privileges WHERE "
                     "table_schema = :s AND grantee = 'PUBLIC'") == []
            assert q("SELECT table_name, column_name FROM information_schema.column_privileges "
                     "WHERE table_schema = :s AND grantee = 'PUBLIC'") == []
            # the role is granted exactly the three open columns of tier_b_tasks
            cols = q("SELECT column_name, privilege_type FROM "
                     "information_schema.column_privileges WHERE table_schema = :s AND "
                     "table_name = 'tier_b_tasks' AND grantee = 'rcjudge_api' ORDER BY 1")
            assert cols == [("family", "SELECT"), ("task_key", "SELECT"), ("tier", "SELECT")]
            assert q("SELECT privilege_type FROM information_schema.table_privileges WHERE "
                     "table_schema = :s AND table_name = 'tier_b_tasks' AND "
                     "grantee = 'rcjudge_api'") == []
            # runs: INSERT on the table, SELECT on every column but task_id
            assert q("SELECT privilege_type FROM information_schema.table_privileges WHERE "
                     "table_schema = :s AND table_name = 'runs' AND "
                     "grantee = 'rcjudge_api'") == [("INSERT",)]
            run_cols = {c for (c,) in q("SELECT column_name FROM information_schema.columns "
                                        "WHERE table_schema = :s AND table_name = 'runs'")}
            readable = {c for (c,) in q(
                "SELECT column_name FROM information_schema.column_privileges WHERE "
                "table_schema = :s AND table_name = 'runs' AND grantee = 'rcjudge_api' AND "
                "privilege_type = 'SELECT'")}
            assert run_cols - readable == {"task_id"} and readable <= run_cols
            # nothing at all on the calibration view, which reads runs.task_id
            assert q("SELECT privilege_type FROM information_schema.table_privileges WHERE "
                     "table_schema = :s AND table_name = 'calibration_set' AND "
                     "grantee = 'rcjudge_api'") == []
            # member of no role (nothing to inherit or SET ROLE to), and no special powers
            assert q("SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON "
                     "r.oid = m.roleid JOIN pg_roles u ON u.oid = m.member "
                     "WHERE u.rolname = 'rcjudge_api'") == []
            assert q("SELECT rolsuper, rolbypassrls, rolinherit, rolcreaterole FROM pg_roles "
                     "WHERE rolname = 'rcjudge_api'") == [(False, False, False, False)]
            # no row-level-security trick is relied on either: the table has none
            assert q("SELECT relrowsecurity FROM pg_class c JOIN pg_namespace n ON "
                     "n.oid = c.relnamespace WHERE n.nspname = :s AND "
                     "c.relname = 'tier_b_tasks'") == [(False,)]
    finally:
        owner.dispose()
    assert _denied(api_conn, "SET ROLE postgres").startswith("permission denied to set role")


def test_sqlite_path_only_creates_the_table(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    try:
        assert upgrade(engine) == "0011"
        assert [c["name"] for c in sa.inspect(engine).get_columns("tier_b_tasks")] == [
            "task_key", "tier", "family", *CONTENT]
        assert "public_task_id" in [c["name"] for c in sa.inspect(engine).get_columns("runs")]
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_the_api_serves_connected_as_its_role(schema, api_bundles, pg_db):
    """A tier-B and a tier-A run judged end to end over HTTP while connected as the role."""
    import time

    from fastapi.testclient import TestClient

    from judge.api.auth import RIGHTS
    from judge.api.routes import create_app
    from judge.api.service import JudgeService
    from tests.api.conftest import TMP_ROOTS, bearer, fake_judge, fake_judges, request_for

    judges = fake_judges(**{"fake-v2": lambda: fake_judge("fake-v2")})
    base = make_engine(PG_URL).url.render_as_string(hide_password=False)
    owner_url = f"{base}?options=-csearch_path%3D{schema}"
    test_schema = pg_db[1]
    JudgeService(owner_url, judges=judges, test_schema=test_schema).close()  # owner migrates
    role_url = sa.make_url(base).set(username="rcjudge_api").render_as_string(
        hide_password=False) + f"?options=-csearch_path%3D{schema}"
    service = JudgeService(role_url, judges=judges, test_schema=test_schema,
                           bundle_roots=TMP_ROOTS)
    tier_b = request_for(api_bundles[0])
    tier_b["task"]["tier"] = "B"
    secret = tier_b["task"]["id"]
    tier_a = request_for(api_bundles[1])
    try:
        with service.modes["live"].engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_user").scalar_one() == "rcjudge_api"
        key = service.create_key("pg", "live", sorted(RIGHTS))[0]
        h = bearer(key)
        with TestClient(create_app(service)) as c:
            r = c.post("/v1/judgments", json=tier_b, headers={**h, "Idempotency-Key": "pg-1"})
            assert r.status_code == 200, r.text
            assert r.json()["charged_to"]["key_id"] and secret not in r.text
            run_b = r.json()["run_id"]
            # the same bundle again (another idempotency key): the recorded run, no charge
            again = c.post("/v1/judgments", json=tier_b, headers={**h, "Idempotency-Key": "pg-2"})
            assert (again.status_code, again.json()["charged_to"]) == (200, None)
            assert again.json()["judgment_id"] == r.json()["judgment_id"]
            a = c.post("/v1/judgments", json=tier_a, headers=h)
            assert a.status_code == 200, a.text
            run_a = a.json()["run_id"]
            assert c.get("/v1/usage", headers=h).json()["calls"] == 2
            runs = {x["run_id"]: x["task"] for x in c.get("/v1/runs", headers=h).json()["data"]}
            assert runs == {run_b: {"id": None, "tier": "B"}, run_a: tier_a["task"]}
            one = c.get(f"/v1/runs/{run_b}", headers=h)
            assert one.status_code == 200 and one.json()["task"] == {"id": None, "tier": "B"}
            listed = c.get("/v1/judgments", headers=h)
            assert listed.status_code == 200 and len(listed.json()["data"]) == 2
            # the judge said failure; the operator says success: a disagreement
            label = {"attempt": True, "success": True, "labeled_by": "op-1",
                     "labeled_at": "2026-12-01T10:00:00Z"}
            assert c.post(f"/v1/runs/{run_b}/labels", json=label,
                          headers=h).status_code == 201
            assert len(c.get(f"/v1/runs/{run_b}/labels", headers=h).json()["data"]) == 1
            cal = c.get("/v1/calibration-set", headers=h).json()["data"]
            assert [(x["run_id"], x["success_disagrees"]) for x in cal] == [(run_b, True)]
            coeff = c.get("/v1/coefficients", headers=h)
            assert coeff.status_code == 200 and secret not in coeff.text
            job = c.post("/v1/rejudge-jobs", json={"judge": "fake-v2"}, headers=h)
            assert job.status_code == 202, job.text
            for _ in range(400):
                done = c.get(job.headers["location"], headers=h).json()
                if done["status"] == "succeeded":
                    break
                time.sleep(0.05)
            # the tier-A run is re-judged; the tier-B one cannot be from here (no task id)
            assert (done["runs"], done["judged"]) == (2, 1)
            assert done["failed"] == [{"run_id": run_b, "detail": (
                f"run {run_b!r} is a tier-B run: its task id is not readable through this "
                "connection (tier-B isolation, docs/api.md); re-judge it offline "
                "(rcjudge rejudge)")}]
            assert secret not in str(done)
    finally:
        service.close()
    # the owner still sees the real task id of the tier-B run
    owner = make_engine(owner_url)
    try:
        with owner.connect() as conn:
            assert conn.execute(sa.text("SELECT task_id, public_task_id FROM runs WHERE "
                                        "run_id = :r"), {"r": run_b}).one() == (secret, None)
    finally:
        owner.dispose()


@pytest.mark.postgres
def test_a_dataset_key_labels_while_connected_as_the_role(schema, api_bundles, pg_db):
    """The role may create a key with a dataset and label through it (a blind ledger:
    no read of ``runs.task_id``, no DELETE on ``dataset_grants``)."""
    from fastapi.testclient import TestClient

    from judge.api.routes import create_app
    from judge.api.service import JudgeService
    from judge.outcomes.store import OutcomeStore
    from tests.api.conftest import TMP_ROOTS, bearer, fake_judges, request_for

    base = make_engine(PG_URL).url.render_as_string(hide_password=False)
    owner_url = f"{base}?options=-csearch_path%3D{schema}"
    JudgeService(owner_url, judges=fake_judges(), test_schema=pg_db[1]).close()
    role_url = sa.make_url(base).set(username="rcjudge_api").render_as_string(
        hide_password=False) + f"?options=-csearch_path%3D{schema}"
    service = JudgeService(role_url, judges=fake_judges(), test_schema=pg_db[1],
                           bundle_roots=TMP_ROOTS)
    try:
        store = OutcomeStore(service.modes["live"].engine)
        store.create_dataset("lab/role")
        key, who = service.create_key("pg-ds", "live", ["judgments:write", "datasets:read",
                                                        "datasets:write"], "lab/role")
        doc = request_for(api_bundles[1])
        with TestClient(create_app(service)) as c:
            r = c.post("/v1/judgments", json=doc, headers=bearer(key))
            assert r.status_code == 200, r.text
            uid = store.list_sequences("lab/role")["results"][0]["sequence_uid"]
            label = c.get(f"/api/v1/datasets/lab/role/sequences/{uid}/outcome/",
                          headers=bearer(key)).json()
        assert (label["source"], label["labeled_by"], label["source_metadata"]["run_id"],
                label["outcome"], label["mistake_type"]) == (
            "model", "judge:fake-v1", r.json()["run_id"], "failure", "grasp.slip")
        assert store.access(store.dataset("lab/role"), who.key_id) == "edit"
    finally:
        service.close()


def test_the_api_path_never_reads_runs_task_id_on_sqlite(tmp_path, api_bundles):
    """The same code path on SQLite (no roles): no statement reads ``runs.task_id``."""
    import time

    from fastapi.testclient import TestClient

    from judge.api.auth import RIGHTS
    from judge.api.routes import create_app
    from judge.api.service import JudgeService
    from tests.api.conftest import TMP_ROOTS, bearer, fake_judge, fake_judges, request_for

    service = JudgeService(f"sqlite:///{tmp_path / 'b.db'}", judges=fake_judges(
        **{"fake-v2": lambda: fake_judge("fake-v2")}), bundle_roots=TMP_ROOTS)
    seen: list[str] = []
    sa.event.listen(service.modes["live"].engine, "before_cursor_execute",
                    lambda conn, cur, stmt, *a: seen.append(stmt))
    doc = request_for(api_bundles[2])
    doc["task"]["tier"] = "B"
    try:
        key = service.create_key("s", "live", sorted(RIGHTS))[0]
        with TestClient(create_app(service)) as c:
            run_id = c.post("/v1/judgments", json=doc, headers=bearer(key)).json()["run_id"]
            c.post("/v1/judgments", json=doc, headers={**bearer(key), "Idempotency-Key": "k"})
            assert c.get(f"/v1/runs/{run_id}", headers=bearer(key)).json()["task"] == {
                "id": None, "tier": "B"}
            c.get("/v1/runs", headers=bearer(key))
            c.post(f"/v1/runs/{run_id}/labels", headers=bearer(key), json={
                "attempt": True, "success": True, "labeled_by": "op"})
            assert len(c.get("/v1/calibration-set", headers=bearer(key)).json()["data"]) == 1
            job = c.post("/v1/rejudge-jobs", json={"judge": "fake-v2"}, headers=bearer(key))
            for _ in range(400):
                if c.get(job.headers["location"], headers=bearer(key)).json()[
                        "status"] == "succeeded":
                    break
                time.sleep(0.05)
    finally:
        service.close()
    assert any(s.startswith("INSERT INTO runs") and "task_id" in s for s in seen)
    reads = [s for s in seen if not s.startswith("INSERT INTO runs")]
    assert [s for s in reads if "runs.task_id" in s or "FROM calibration_set" in s] == []
    assert [s for s in seen if "SELECT *" in s.upper() or ".*" in s] == []  # names its columns
    assert len(reads) > 20
