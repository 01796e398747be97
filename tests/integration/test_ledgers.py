"""The three ledgers on SQLite and a real PostgreSQL: migrations, idempotency,
transactional failure, a SIGKILL mid-batch, and calibration-set membership.

Every test runs twice: on a fresh SQLite file and (``postgres`` marker) in a
fresh PostgreSQL schema ``rcj_<random>`` that is dropped afterwards. The
fixtures and record factories here are shared with ``test_ledgers_io.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from judge.api.protocol import Attribution, Task
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.ledgers import CalibrationRow, Label, Ledger, LedgerError, Run, Written
from judge.ledgers.schema import metadata
from judge.ledgers.store import make_engine, upgrade

PG_URL = os.environ.get("RCJUDGE_PG_URL", "postgresql://127.0.0.1:5432/test")
REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 9, 16, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class DB:
    """Where a test's ledger lives: a URL, plus a PostgreSQL schema of its own."""

    url: str
    schema: str | None = None

    @property
    def cli_url(self) -> str:
        """One URL carrying the schema too (psycopg passes ``options`` to the server)."""
        if self.schema is None:
            return self.url
        return f"{self.url}?options={quote(f'-csearch_path={self.schema}')}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        yield DB(f"sqlite:///{tmp_path / 'data' / 'rcjudge.db'}")
        return
    schema = f"rcj_{secrets.token_hex(6)}"
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    try:
        yield DB(PG_URL, schema)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()


@pytest.fixture
def ledger(db: DB):
    with Ledger.open(db.url, schema=db.schema) as led:
        yield led


# --- small hand-made records ------------------------------------------------------------
def attribution(task: str = "tabletop.pick_place.mug_022", version: str = "6.0.2") -> Attribution:
    return Attribution.model_validate({
        "policy": {"vendor": "example-lab", "name": "policy-a", "version": version,
                   "checkpoint": "sha256:9f3c"},
        "body": {"arm": "xArm7", "hand": "WujiHand2", "dof": 20, "mount_h_mm": 740,
                 "calibrated_at": "2026-09-16"},
        "task": {"id": task, "tier": "A"},
        "env": {"lighting_k": 4200, "clutter": 3, "friction_mu": 0.42},
        "seed": "0x5F3A9C21",
        "reset": {"type": "manual", "seconds": 42, "operator_min": 2.4},
    })


def make_run(name: str, task: str = "tabletop.pick_place.mug_022", cycle_sec: float = 12.5,
             version: str = "6.0.2") -> Run:
    return Run(run_id=name, bundle_uri=f"gs://rc-runs/{name}/",
               bundle_hash=hashlib.sha256(name.encode()).hexdigest(),
               attribution=attribution(task, version), duration_s=14.0, cycle_sec=cycle_sec,
               recorded_at=T0)


def make_judgment(run: Run, judge_version: str = "rc-judge-v1", attempt: bool = True,
                  success: bool = False, failure_class: str | None = "grasp.slip",
                  attempt_confidence: float = 0.91, success_confidence: float = 0.86,
                  construct: bool = False) -> Judgment:
    answers = tuple(
        ModelAnswer(model=m, p_attempt=0.9, p_success=0.2 if not success else 0.8,
                    p_attempt_raw=0.88, p_success_raw=0.25, failure_class=failure_class,
                    p_failure_class=0.6 if failure_class else None)
        for m in ("qwen2-vl", "idefics3", "llava"))
    fields = dict(
        run_id=run.run_id, bundle_uri=run.bundle_uri, bundle_hash=run.bundle_hash,
        task_id=run.attribution.task.id, judge_version=judge_version, attempt=attempt,
        success=success, failure_class=failure_class, counts_against_policy=True,
        attempt_confidence=attempt_confidence, success_confidence=success_confidence,
        answers=answers, frames=16,
        timings=StageTimings(intake_s=0.04, frames_s=1.2, models_s=6.0, vote_s=0.01),
        cost=Cost(gpu_s=5.5, cpu_s=1.25, usd=0.13))
    return Judgment.model_construct(**fields) if construct else Judgment(**fields)


def label(run_id: str, attempt: bool, success: bool, failure_class: str | None,
          minute: int, by: str = "op-kim") -> Label:
    return Label(run_id=run_id, attempt=attempt, success=success, failure_class=failure_class,
                 labeled_by=by, labeled_at=T0.replace(minute=minute))


# --- migrations ---------------------------------------------------------------------------
def test_migrations_create_exactly_the_schema_and_both_views(ledger: Ledger):
    with ledger.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        assert MigrationContext.configure(conn).get_current_revision() == "0011"
        for view in ("current_operator_labels", "calibration_set"):
            assert conn.execute(sa.text(f"SELECT count(*) FROM {view}")).scalar_one() == 0


def test_open_migrates_step_by_step_and_is_a_noop_at_head(db: DB):
    engine = make_engine(db.url, schema=db.schema)
    try:
        assert upgrade(engine, "0001") == "0001"
        assert set(sa.inspect(engine).get_view_names()) == set()
        assert upgrade(engine) == "0011"
        assert upgrade(engine) == "0011"
        assert set(sa.inspect(engine).get_view_names()) == {"current_operator_labels",
                                                             "calibration_set"}
    finally:
        engine.dispose()


def test_0004_moves_dof_and_mount_height_into_columns_and_keeps_every_row(db: DB):
    engine = make_engine(db.url, schema=db.schema)
    try:
        assert upgrade(engine, "0003") == "0003"
        cols = ("run_id, bundle_uri, bundle_hash, policy_vendor, policy_name, policy_version, "
                "policy_checkpoint, body_arm, body_hand, body_calibrated_at, task_id, task_tier, "
                "env, seed, attribution_extra, duration_s, cycle_sec, recorded_at")
        with engine.begin() as conn:
            conn.execute(sa.text(f"INSERT INTO runs ({cols}) VALUES ('r1', '/b/r1', :h, 'v', "
                                 "'p', '1', 'c', 'arm', 'hand', '2026-01-01', 't', 'A', "
                                 ":env, 's', :extra, 6.0, 5.0, :at)"),
                         {"h": "a" * 64, "env": '{"x": 1}', "at": T0,
                          "extra": '{"body.dof": 20, "body.mount_h_mm": 740, '
                                   '"reset": {"type": "manual"}}'})
            conn.execute(sa.text("INSERT INTO operator_labels (run_id, attempt, success, "
                                 "labeled_by, labeled_at) VALUES ('r1', :t, :f, 'op', :at)"),
                         {"t": True, "f": False, "at": T0})
        assert upgrade(engine) == "0011"
        with engine.connect() as conn:
            row = conn.execute(sa.text("SELECT body_dof, body_mount_h_mm, attribution_extra "
                                       "FROM runs")).one()
            labels = conn.execute(sa.text("SELECT count(*) FROM current_operator_labels"))
            assert labels.scalar_one() == 1
            # 0006 backfills public_task_id: the task id of a tier-A run
            assert conn.execute(sa.text("SELECT public_task_id FROM runs")).scalar_one() == "t"
        extra = row[2] if isinstance(row[2], dict) else json.loads(row[2])
        assert (row[0], row[1], extra) == (20, 740.0, {"reset": {"type": "manual"}})
    finally:
        engine.dispose()


def test_0010_gives_each_run_to_the_key_that_judged_it_first(db: DB):
    """Runs every judgment of which the API wrote (``api_owned``) become the first key's;
    a run the CLI judged, even if a key was linked to it later, stays local."""
    engine = make_engine(db.url, schema=db.schema)
    try:
        assert upgrade(engine, "0009") == "0009"
        cols = ("run_id, bundle_uri, bundle_hash, policy_vendor, policy_name, policy_version, "
                "policy_checkpoint, body_arm, body_hand, body_calibrated_at, task_id, task_tier, "
                "duration_s, cycle_sec, recorded_at")
        jcols = ("run_id, judge_version, attempt, success, counts_against_policy, "
                 "attempt_confidence, success_confidence, answers, timings, cost_usd, gpu_s, "
                 "cpu_s, frames, judged_at")
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE api_owned (key_id TEXT, judgment_id INTEGER, "
                                 "first_at TIMESTAMP)"))
            for i, run in enumerate(("api-shared", "api-one", "cli", "never-judged")):
                conn.execute(sa.text(f"INSERT INTO runs ({cols}) VALUES (:r, '/b', :h, 'v', "
                                     "'p', '1', 'c', 'arm', 'hand', '2026-01-01', 't', 'A', "
                                     "6.0, 5.0, :at)"), {"r": run, "h": f"{i}" * 64, "at": T0})
            for run, version in (("api-shared", "v1"), ("api-shared", "v2"), ("api-one", "v1"),
                                 ("cli", "v1"), ("cli", "v2")):
                conn.execute(sa.text(f"INSERT INTO judgments ({jcols}) VALUES (:r, :v, :t, :t, "
                                     ":t, 0.9, 0.9, '[]', '{}', 0.1, 1.0, 1.0, 8, :at)"),
                             {"r": run, "v": version, "t": True, "at": T0})
            jid = dict(((r, v), j) for j, r, v in conn.execute(sa.text(
                "SELECT judgment_id, run_id, judge_version FROM judgments")))
            # api-shared: key_b linked to key_a's run later (the defect); cli: only its v2
            # was also returned to a key
            for key, judgment, minute in (("key_a", ("api-shared", "v1"), 1),
                                          ("key_b", ("api-shared", "v1"), 5),
                                          ("key_b", ("api-shared", "v2"), 6),
                                          ("key_c", ("api-one", "v1"), 2),
                                          ("key_c", ("cli", "v2"), 3)):
                conn.execute(sa.text("INSERT INTO api_owned VALUES (:k, :j, :at)"),
                             {"k": key, "j": jid[judgment], "at": T0.replace(minute=minute)})
        assert upgrade(engine, "0010") == "0010"
        with engine.connect() as conn:
            owners = dict(conn.execute(sa.text("SELECT run_id, owner FROM runs")).all())
        assert owners == {"api-shared": "key_a", "api-one": "key_c", "cli": "local",
                          "never-judged": "local"}
    finally:
        engine.dispose()


def test_two_owners_of_one_bundle_have_two_runs_and_see_only_their_own(ledger: Ledger):
    """Issue 36: a run is its owner's; the bundle hash is no access right."""
    key = ledger.owned_by("key_Lab9")
    run = make_run("run-001")
    assert ledger.record(run, make_judgment(run)) == Written(True, True, "run-001")
    # the same bytes, same folder, same facts, from another owner: its own run and judgment
    assert key.record(run, make_judgment(run)) == Written(True, True, "run-001~key_Lab9")
    # other facts from that owner: refused, its own run named; the local run untouched
    moved = run.model_copy(update={"cycle_sec": 13.0})
    with pytest.raises(LedgerError, match=r"^run 'run-001~key_Lab9' .* other facts: cycle_sec "
                                          r"\(12.5 recorded, 13.0 given\)$"):
        key.record(moved, make_judgment(run, judge_version="rc-judge-v2"))
    # a folder name the owner has taken, other bytes: the hash goes before the owner
    other = run.model_copy(update={"bundle_hash": "f" * 64})
    assert key.record(other, make_judgment(other)).run_id == "run-001-ffffffff~key_Lab9"
    key.add_labels([label("run-001~key_Lab9", True, True, None, 1, by="op-lab")])
    ledger.add_labels([label("run-001", True, False, "grasp.slip", 2)])
    assert (ledger.counts(), key.counts()) == (
        {"runs": 1, "judgments": 1, "operator_labels": 1},
        {"runs": 2, "judgments": 2, "operator_labels": 1})
    assert ledger.get_run("run-001~key_Lab9") is None and key.get_run("run-001") is None
    assert key.get_judgment("run-001", "rc-judge-v1") is None
    assert key.judged_run_ids("rc-judge-v1") == {"run-001~key_Lab9", "run-001-ffffffff~key_Lab9"}
    assert ledger.judged_bundle_hashes("rc-judge-v1") == {run.bundle_hash}
    assert key.labels("run-001") == [] and ledger.labels("run-001~key_Lab9") == []
    assert set(key.current_labels()) == {"run-001~key_Lab9"}
    assert [r.run_id for r in key.calibration_set()] == ["run-001~key_Lab9"]
    assert ledger.calibration_set() == []  # the local label agrees with the local judgment
    # nothing can be written on another owner's run
    with pytest.raises(LedgerError, match=r"^label of run 'run-001': run not recorded$"):
        key.add_labels([label("run-001", True, True, None, 3, by="intruder")])
    with pytest.raises(LedgerError, match=r"^judgment of run 'run-001~key_Lab9' by "
                                          r"'rc-judge-v2': run not recorded"):
        ledger.record_judgment(make_judgment(run, judge_version="rc-judge-v2").model_copy(
            update={"run_id": "run-001~key_Lab9"}))
    assert ledger.labels("run-001")[0].label.labeled_by == "op-kim"


def test_a_blind_ledger_names_the_fields_that_differ_never_a_value(ledger: Ledger):
    blind = Ledger(ledger.engine, blind=True, owner="key_Lab9")
    run = make_run("run-001")
    blind.record(run, make_judgment(run))
    moved = run.model_copy(update={"cycle_sec": 13.0, "attribution": attribution(
        version="9.9.9")})
    with pytest.raises(LedgerError) as err:
        blind.record(moved, make_judgment(run, judge_version="rc-judge-v2"))
    assert str(err.value) == (
        f"run 'run-001~key_Lab9' (bundle {run.bundle_hash}) is already recorded with other "
        "facts: policy.version, cycle_sec; send the facts it was recorded with, or judge it "
        "as another bundle")


def test_workers_opening_a_fresh_ledger_at_once_migrate_it_once(db: DB, tmp_path: Path):
    code = ("import sys; from judge.ledgers import Ledger; "
            "Ledger.open(sys.argv[1], schema=sys.argv[2] or None).close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, db.url, db.schema or ""],
                              cwd=REPO, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    with Ledger.open(db.url, schema=db.schema) as led, led.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).all() == [
            ("0011",)]


def test_bad_urls_and_unknown_revisions_are_one_line_errors(db: DB, tmp_path: Path):
    with pytest.raises(LedgerError, match=r"unsupported database 'mysql'"):
        make_engine("mysql://h/db")
    with pytest.raises(LedgerError, match=r"cannot create the folder /proc/rcj/x: No such"):
        make_engine("sqlite:////proc/rcj/x/ledger.db")
    with pytest.raises(LedgerError, match=r"schema 'x': only for PostgreSQL"):
        make_engine(f"sqlite:///{tmp_path / 'x.db'}", schema="x")
    engine = make_engine(db.url, schema=db.schema)
    try:
        with pytest.raises(LedgerError, match=r"migration to '0099' failed"):
            upgrade(engine, "0099")
    finally:
        engine.dispose()


def test_default_url_uses_rcjudge_db_then_the_data_dir(monkeypatch, tmp_path: Path):
    from judge.ledgers.store import default_url, resolve_url

    monkeypatch.delenv("RCJUDGE_DB", raising=False)
    monkeypatch.delenv("RCJUDGE_DATA", raising=False)
    monkeypatch.setenv("RCJUDGE_HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{tmp_path / 'home' / 'rcjudge.db'}"
    monkeypatch.setenv("RCJUDGE_DATA", str(tmp_path / "d"))
    assert default_url() == f"sqlite:///{tmp_path / 'd' / 'rcjudge.db'}"
    monkeypatch.setenv("RCJUDGE_DB", "postgresql://127.0.0.1:5432/test")
    assert resolve_url(None) == "postgresql+psycopg://127.0.0.1:5432/test"
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"


# --- writes: round trip and idempotency ------------------------------------------------
def test_record_round_trips_run_and_judgment(ledger: Ledger):
    run = make_run("run-001")
    judgment = make_judgment(run)
    assert ledger.record(run, judgment, judged_at=T0) == Written(run=True, judgment=True,
                                                                 run_id="run-001")
    assert ledger.get_run("run-001") == run
    assert ledger.get_judgment("run-001", "rc-judge-v1") == judgment
    assert ledger.get_run("nope") is None
    assert ledger.get_judgment("run-001", "rc-judge-v9") is None
    assert ledger.counts() == {"runs": 1, "judgments": 1, "operator_labels": 0}
    with ledger.engine.connect() as conn:
        row = conn.execute(sa.text("SELECT policy_vendor, policy_name, policy_version, "
                                   "policy_checkpoint, body_arm, body_hand, body_calibrated_at,"
                                   " task_id, task_tier, seed FROM runs")).one()
    assert tuple(row) == ("example-lab", "policy-a", "6.0.2", "sha256:9f3c", "xArm7",
                          "WujiHand2", "2026-09-16", "tabletop.pick_place.mug_022", "A",
                          "0x5F3A9C21")


def test_same_run_and_judge_version_twice_leaves_one_row(ledger: Ledger):
    run = make_run("run-001")
    first = make_judgment(run, success=False)
    assert ledger.record(run, first) == Written(run=True, judgment=True, run_id="run-001")
    assert ledger.record(run, first) == Written(run=False, judgment=False, run_id="run-001")
    # the same version again with other answers: still one row, the first one kept
    again = make_judgment(run, success=True, failure_class=None, success_confidence=0.99)
    assert ledger.record_judgment(again) is False
    assert ledger.record_run(run.attribution, run_id=run.run_id, bundle_uri=run.bundle_uri,
                             bundle_hash=run.bundle_hash, duration_s=14.0,
                             cycle_sec=12.5) is False
    assert ledger.get_judgment("run-001", "rc-judge-v1") == first
    assert ledger.counts() == {"runs": 1, "judgments": 1, "operator_labels": 0}
    # a new judge version writes a new row beside the old one
    assert ledger.record_judgment(make_judgment(run, judge_version="rc-judge-v2")) is True
    assert ledger.counts()["judgments"] == 2
    assert ledger.judge_versions() == ["rc-judge-v1", "rc-judge-v2"]
    assert ledger.judged_run_ids("rc-judge-v2") == {"run-001"}


def test_a_run_is_its_bundle_hash_whatever_its_path_or_folder_name(ledger: Ledger):
    run = make_run("run-001")
    ledger.record(run, make_judgment(run))
    # the same bundle through another mount and folder name: the same run, kept as run-001
    elsewhere = run.model_copy(update={"run_id": "copy-of-001",
                                       "bundle_uri": "/mnt/other/copy-of-001"})
    written = ledger.record(elsewhere, make_judgment(elsewhere, judge_version="rc-judge-v2"))
    assert written == Written(run=False, judgment=True, run_id="run-001")
    assert ledger.get_judgment("run-001", "rc-judge-v2").run_id == "run-001"
    assert ledger.get_run("run-001").bundle_uri == "gs://rc-runs/run-001/"  # the first URI kept
    # a different bundle in a folder of the same name is another run, with its own id
    other = run.model_copy(update={"bundle_hash": "f" * 64})
    written = ledger.record(other, make_judgment(other))
    assert written == Written(run=True, judgment=True, run_id="run-001-ffffffff")
    assert ledger.judged_bundle_hashes("rc-judge-v1") == {run.bundle_hash, "f" * 64}
    assert ledger.counts() == {"runs": 2, "judgments": 3, "operator_labels": 0}


def test_the_same_bundle_with_other_facts_is_refused(ledger: Ledger):
    run = make_run("run-001")
    ledger.record(run, make_judgment(run))
    moved = run.model_copy(update={"cycle_sec": 13.0, "bundle_uri": "gs://elsewhere/"})
    with pytest.raises(LedgerError, match=(
            rf"^run 'run-001' \(bundle {run.bundle_hash}\) is already recorded with other "
            r"facts: cycle_sec \(12.5 recorded, 13.0 given\)$")):
        ledger.record(moved, make_judgment(run, judge_version="rc-judge-v2"))
    assert ledger.counts() == {"runs": 1, "judgments": 1, "operator_labels": 0}


def test_a_judgment_needs_its_run_and_the_same_bundle(ledger: Ledger):
    run = make_run("run-001")
    with pytest.raises(LedgerError, match=(
            r"^judgment of run 'run-001' by 'rc-judge-v1': run not recorded; record the run "
            r"first \(Ledger.record\)$")):
        ledger.record_judgment(make_judgment(run))
    ledger.record(run, make_judgment(run))
    other = make_run("run-009")
    wrong = make_judgment(other, judge_version="rc-judge-v2").model_copy(
        update={"run_id": "run-001"})
    with pytest.raises(LedgerError, match=r"judged bundle [0-9a-f]{64} / task 'tabletop"):
        ledger.record_judgment(wrong)
    assert ledger.counts()["judgments"] == 1


# --- transactional failure -----------------------------------------------------------------
def test_an_exception_inside_the_transaction_leaves_no_row(ledger: Ledger):
    run = make_run("run-001")
    with pytest.raises(RuntimeError, match="boom"), ledger.transaction() as tx:
        assert tx.record_run(run) is True
        assert tx.record_judgment(make_judgment(run)) is True
        tx.add_labels([label("run-001", True, False, "grasp.slip", 1)])
        raise RuntimeError("boom")
    assert ledger.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}


def test_a_row_breaking_a_constraint_rolls_back_its_run(ledger: Ledger):
    run = make_run("run-001")
    bad = make_judgment(run, attempt_confidence=1.5, construct=True)  # past pydantic
    with pytest.raises(LedgerError, match=(
            r"^judgment of run 'run-001' by 'rc-judge-v1': refused by the database: .*"
            r"ck_judgments_attempt_confidence_range")):
        ledger.record(run, bad)
    assert ledger.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}
    assert ledger.get_run("run-001") is None
    # the ledger still works after the failed transaction
    assert ledger.record(run, make_judgment(run)) == Written(run=True, judgment=True,
                                                             run_id="run-001")


def test_a_label_of_an_unknown_run_is_refused(ledger: Ledger):
    with pytest.raises(LedgerError, match=r"^label of run 'ghost': run not recorded$"):
        ledger.add_labels([label("ghost", True, True, None, 1)])
    assert ledger.counts()["operator_labels"] == 0


# --- a crash mid-batch ---------------------------------------------------------------------
CHILD = """
import sys, time
from test_ledgers import make_judgment, make_run
from judge.ledgers import Ledger

url, schema, hold = sys.argv[1], sys.argv[2] or None, sys.argv[3] == "hold"
ledger = Ledger.open(url, schema=schema)
for i in range(100000):
    run = make_run(f"run-{i:05d}", cycle_sec=10.0 + i)
    if hold and i == 25:
        with ledger.transaction() as tx:
            tx.record_run(run)
            tx.record_judgment(make_judgment(run))
            print("HOLD", flush=True)
            time.sleep(120)
    ledger.record(run, make_judgment(run))
    print(i, flush=True)
"""


def _run_and_kill(db: DB, tmp_path: Path, hold: bool) -> list[int]:
    """Start the child writer, SIGKILL it (in a held transaction or after 40 commits)."""
    script = tmp_path / "writer.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": f"{Path(__file__).parent}{os.pathsep}{REPO}"}
    proc = subprocess.Popen(
        [sys.executable, str(script), db.url, db.schema or "", "hold" if hold else "run"],
        stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    committed: list[int] = []
    try:
        for line in proc.stdout:
            if line.strip() == "HOLD" or len(committed) >= 40:
                break
            committed.append(int(line))
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return committed


def _assert_complete(ledger: Ledger, ids: list[str]) -> None:
    for run_id in ids:
        i = int(run_id.split("-")[1])
        run = ledger.get_run(run_id)
        assert run == make_run(run_id, cycle_sec=10.0 + i).model_copy(
            update={"recorded_at": run.recorded_at})
        assert ledger.get_judgment(run_id, "rc-judge-v1") == make_judgment(run)


def test_sigkill_inside_a_transaction_keeps_every_commit_and_no_half_row(db: DB, tmp_path):
    committed = _run_and_kill(db, tmp_path, hold=True)
    assert committed == list(range(25))
    with Ledger.open(db.url, schema=db.schema) as ledger:
        with ledger.engine.connect() as conn:
            runs = conn.execute(sa.text("SELECT run_id FROM runs ORDER BY run_id")).scalars()
            runs = list(runs)
        assert runs == [f"run-{i:05d}" for i in range(25)]  # run-00025 was mid-transaction
        assert ledger.counts() == {"runs": 25, "judgments": 25, "operator_labels": 0}
        _assert_complete(ledger, runs)


def test_sigkill_mid_batch_keeps_every_commit_complete(db: DB, tmp_path):
    committed = _run_and_kill(db, tmp_path, hold=False)
    assert committed == list(range(40))
    with Ledger.open(db.url, schema=db.schema) as ledger:
        with ledger.engine.connect() as conn:
            runs = list(conn.execute(sa.text("SELECT run_id FROM runs")).scalars())
            judged = list(conn.execute(sa.text("SELECT run_id FROM judgments")).scalars())
        # every reported commit is there; the writer runs ahead of what the pipe has shown
        # when the kill lands (lines buffered, commits in flight), so more may be: a prefix
        # of the writer's order, each complete, with no gap
        assert set(runs) >= {f"run-{i:05d}" for i in committed}
        assert sorted(runs) == [f"run-{i:05d}" for i in range(len(runs))]
        assert sorted(judged) == sorted(runs)  # a run and its judgment: both or neither
        _assert_complete(ledger, runs)


# --- the calibration set --------------------------------------------------------------------
def _calibration_world(ledger: Ledger) -> dict[str, Run]:
    """Four runs, two judge versions, labels agreeing and disagreeing (see the asserts)."""
    runs = {n: make_run(f"run-{n}") for n in "ABCD"}
    said = {  # run: (v1 attempt, success, class), (v2 ...)
        "A": ((True, False, "grasp.slip"), (True, False, "grasp.drop")),
        "B": ((True, True, None), (True, False, "grasp.slip")),
        "C": ((True, False, "grasp.slip"), (False, False, None)),
        "D": ((True, False, "grasp.slip"), (True, True, None)),
    }
    for n, versions in said.items():
        for version, (att, suc, cls) in zip(("v1", "v2"), versions, strict=True):
            ledger.record(runs[n], make_judgment(runs[n], version, att, suc, cls))
    ledger.add_labels([
        label("run-A", True, False, "grasp.slip", 1),
        label("run-B", True, True, None, 30, by="op-lee"),   # newer, inserted first
        label("run-B", True, False, "grasp.slip", 5),        # older: not current
        label("run-C", False, False, None, 2),               # no class given
    ])                                                       # run-D: no label
    return runs


def _members(rows: list[CalibrationRow]) -> list[tuple]:
    return [(r.judge_version, r.run_id, r.attempt_disagrees, r.success_disagrees,
             r.class_disagrees) for r in rows]


def test_calibration_set_membership(ledger: Ledger):
    _calibration_world(ledger)
    assert _members(ledger.calibration_set()) == [
        ("v1", "run-C", True, False, False),   # judged an attempt; operator: no attempt
        ("v2", "run-A", False, False, True),   # grasp.drop vs the operator's grasp.slip
        ("v2", "run-B", False, True, False),   # the latest label says success
    ]
    assert _members(ledger.calibration_set("v1")) == [("v1", "run-C", True, False, False)]
    assert [r.run_id for r in ledger.calibration_set("v2")] == ["run-A", "run-B"]
    assert ledger.calibration_set("v9") == []
    b = ledger.calibration_set("v2")[1]
    assert (b.label_attempt, b.label_success, b.label_failure_class, b.labeled_by,
            b.labeled_at) == (True, True, None, "op-lee", T0.replace(minute=30))
    assert (b.attempt, b.success, b.failure_class, b.task_id) == (
        True, False, "grasp.slip", "tabletop.pick_place.mug_022")
    assert b.label_id == ledger.current_labels()["run-B"].label_id
    assert [s.label.labeled_by for s in ledger.labels("run-B")] == ["op-kim", "op-lee"]
    # it is a real view
    with ledger.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT judge_version, run_id FROM calibration_set "
                                    "ORDER BY judge_version, run_id")).all()
    assert [tuple(r) for r in rows] == [("v1", "run-C"), ("v2", "run-A"), ("v2", "run-B")]


def test_a_blind_ledger_reads_the_same_set_without_task_ids_of_tier_b(ledger: Ledger):
    """The Judge API's ledger (blind): the view's rows, from the tables, task_id only where
    it may be read; a tier-B run's task is never read (docs/api.md, tier-B isolation)."""
    _calibration_world(ledger)
    b_run = make_run("run-Z")
    b_run = b_run.model_copy(update={"attribution": b_run.attribution.model_copy(update={
        "task": Task(id="tabletop.pick_place.secret_007", tier="B")})})
    ledger.record(b_run, make_judgment(b_run, "v1", success=False))
    ledger.add_labels([label("run-Z", True, True, None, 3)])
    blind = Ledger(ledger.engine, blind=True)
    seen = [r for r in ledger.calibration_set()]
    got = blind.calibration_set()
    assert [r.task_id for r in got] == [None if r.run_id == "run-Z" else r.task_id
                                        for r in seen]
    assert [r.task_id for r in seen if r.run_id == "run-Z"] == ["tabletop.pick_place.secret_007"]
    strip = [{**vars(r), "task_id": None} for r in seen]
    assert [{**vars(r), "task_id": None} for r in got] == strip
    assert [{**vars(r), "task_id": None} for r in blind.calibration_set("v2")] == [
        x for x in strip if x["judge_version"] == "v2"]
    # the run of a tier-B task cannot be rebuilt blind; a tier-A one can, whole
    with pytest.raises(LedgerError, match=r"run 'run-Z' is a tier-B run: its task id is not "
                                          r"readable through this connection"):
        blind.get_run("run-Z")
    assert blind.get_run("run-A") == ledger.get_run("run-A")
    # blind writes: the same tier-B bundle again is the recorded run, its judgment kept once
    with blind.transaction() as tx:
        assert tx.resolve_run(b_run) == (False, "run-Z")
        assert tx.record_judgment(make_judgment(b_run, "v1")) is False
    with ledger.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT task_id, public_task_id FROM runs WHERE run_id = "
                                    "'run-Z'")).one() == ("tabletop.pick_place.secret_007", None)


def test_a_newer_label_moves_judgments_in_and_out_of_the_set(ledger: Ledger):
    _calibration_world(ledger)
    # run-C relabelled later: an attempt that failed by slipping
    assert ledger.add_labels([label("run-C", True, False, "grasp.slip", 45)]) == 1
    assert ledger.add_labels([label("run-C", True, False, "grasp.slip", 45)]) == 0  # same
    assert _members(ledger.calibration_set()) == [
        ("v2", "run-A", False, False, True),
        ("v2", "run-B", False, True, False),
        ("v2", "run-C", True, False, True),    # v2 said no attempt, no class
    ]
    assert ledger.counts() == {"runs": 4, "judgments": 8, "operator_labels": 5}
