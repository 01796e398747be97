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
def test_what_the_role_may_read(api_conn):
    rows = api_conn.exec_driver_sql("SELECT task_key, tier, family FROM tier_b_tasks").all()
    assert rows == [("tk_1", "B", "tabletop.pick_place")]
    assert api_conn.exec_driver_sql("SELECT count(*) FROM tier_b_tasks").scalar_one() == 1
    assert api_conn.exec_driver_sql("SELECT current_user").scalar_one() == "rcjudge_api"


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
        assert upgrade(engine) == "0006"
        assert [c["name"] for c in sa.inspect(engine).get_columns("tier_b_tasks")] == [
            "task_key", "tier", "family", *CONTENT]
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_the_api_serves_connected_as_its_role(schema, api_bundles, pg_db):
    from fastapi.testclient import TestClient

    from judge.api.routes import create_app
    from judge.api.service import JudgeService
    from tests.api.conftest import bearer, fake_judges, request_for

    base = make_engine(PG_URL).url.render_as_string(hide_password=False)
    owner_url = f"{base}?options=-csearch_path%3D{schema}"
    test_schema = pg_db[1]
    JudgeService(owner_url, judges=fake_judges(),  # the owner migrates and grants
                 test_schema=test_schema).close()
    role_url = sa.make_url(base).set(username="rcjudge_api").render_as_string(
        hide_password=False) + f"?options=-csearch_path%3D{schema}"
    service = JudgeService(role_url, judges=fake_judges(), test_schema=test_schema)
    try:
        with service.modes["live"].engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_user").scalar_one() == "rcjudge_api"
        key = service.create_key("pg", "live", ["judgments:write", "usage:read"])[0]
        with TestClient(create_app(service)) as c:
            r = c.post("/v1/judgments", json=request_for(api_bundles[0]),
                       headers={**bearer(key), "Idempotency-Key": "pg-1"})
            assert r.status_code == 200, r.text
            assert c.get("/v1/usage", headers=bearer(key)).json()["calls"] == 1
    finally:
        service.close()
