"""The ledger store: step 5 of a judging call (after the vote, before export).

:class:`Ledger` opens a database by URL (embedded SQLite under the data
directory by default, PostgreSQL by URL), migrates it to head with Alembic, and
writes runs, judgments and operator labels. Every write is one transaction and
idempotent: a run is written once (a second write with the same facts is a
no-op, with different facts an error); a judgment is written once per
``(run_id, judge_version)`` (the first write wins; re-judging means a new judge
version). ``INSERT … ON CONFLICT DO NOTHING … RETURNING`` on both dialects
(the returned key says whether the row is new; ``rowcount`` is -1 on psycopg here).

A ledger is one owner's (``owner``, revision 0010): it records runs as that owner and
reads only that owner's runs, their judgments and their labels. The default owner,
:data:`judge.ledgers.schema.LOCAL_OWNER`, is the ledger's own operator (every CLI path);
the Judge API opens one per key (:meth:`Ledger.owned_by`). A bundle is recorded once per
owner: the same bytes from two owners are two runs, and nothing in one owner's ledger
reaches another's. A run of an owner other than the local one has the id
``<folder name>~<owner>``, so run ids of two owners never collide and the id an owner
gets never depends on another owner's runs.

A ledger opened ``blind`` (the Judge API's) never reads a tier-B content column:
``runs.task_id`` is named in no SELECT, filter or order; a run's task is read from
``runs.public_task_id`` (NULL on tier B). On PostgreSQL the API's role could not read it
anyway (revision 0006); on SQLite the same code path runs. What a blind ledger cannot
compare it does not: a tier-B run recorded again with another tier-B task id is taken to
be the recorded run, and the same-instruction check skips tier-B runs (an equality test on
a closed column would be an oracle on it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from judge.api.protocol import Attribution, Body, Policy, Reset, Task
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.ledgers import schema as S
from judge.ledgers.errors import JudgeVersionChanged, LedgerError
from judge.ledgers.records import CalibrationRow, Label, Run, StoredLabel, Written
from rcjudge.home import data_dir

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def default_url() -> str:
    """``$RCJUDGE_DB``, else ``sqlite:///<data dir>/rcjudge.db`` (:func:`rcjudge.home.data_dir`)."""
    if os.environ.get("RCJUDGE_DB"):
        return os.environ["RCJUDGE_DB"]
    return f"sqlite:///{data_dir() / 'rcjudge.db'}"


def resolve_url(url: str | None) -> str:
    """The URL to open for ``--db``: ``url`` or :func:`default_url`; a path (no ``://``) is
    that SQLite file; bare ``postgresql://`` uses psycopg 3."""
    url = url or default_url()
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().absolute()}"
    for bare in ("postgresql://", "postgres://"):
        if url.startswith(bare):
            return "postgresql+psycopg://" + url[len(bare):]
    return url


def check_exists(url: str | None) -> None:
    """Refuse an SQLite ledger file that does not exist (PostgreSQL: the server answers).

    Raises:
        LedgerError: naming the ledger and how one is made.
    """
    try:
        parsed = sa.make_url(resolve_url(url))
    except sa.exc.ArgumentError:
        return  # make_engine names the bad URL
    if parsed.get_backend_name() != "sqlite":
        return
    if parsed.database and parsed.database != ":memory:" and not Path(parsed.database).exists():
        raise LedgerError(f"--db {parsed.database}: no ledger there (rcjudge batch or "
                          "rcjudge labels import makes one; --db names another)")


def make_engine(url: str | None = None, *, schema: str | None = None) -> Engine:
    """An engine for ``url``; ``schema`` (PostgreSQL only) puts every table in that schema.

    SQLite: the folder is created, foreign keys are enforced, WAL journal with
    ``synchronous=FULL`` (a committed row survives a crash), writers wait up to
    30 s for the lock, and transactions are real (``BEGIN IMMEDIATE`` for writes).
    """
    url = resolve_url(url)
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError as exc:
        raise LedgerError(f"--db {url!r}: not a database URL ({exc})") from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise LedgerError(f"--db {url!r}: unsupported database {backend!r}; "
                          "expected sqlite:///PATH or postgresql+psycopg://HOST/DB")
    if schema is not None and (backend != "postgresql" or not _SCHEMA_NAME.match(schema)):
        raise LedgerError(f"schema {schema!r}: only for PostgreSQL, lower-case identifier")
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            folder = Path(parsed.database).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"--db {url!r}: cannot create the folder {folder}: "
                                  f"{exc.strerror}") from None
        engine = sa.create_engine(parsed, connect_args={"timeout": 30})
        _sqlite_events(engine)
        return engine
    args = {"options": f"-c search_path={schema}"} if schema else {}
    return sa.create_engine(parsed, connect_args=args, pool_pre_ping=True)


def _sqlite_events(engine: Engine) -> None:
    """SQLAlchemy's recipe for real SQLite transactions, plus our pragmas."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        write = conn.get_execution_options().get("ledger_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate the ledger database to ``revision``; return the revision it is at now."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    cfg = Config()
    cfg.set_main_option("script_location", str(files("judge.ledgers") / "migrations"))
    sqlite_db = engine.dialect.name == "sqlite"
    try:
        with engine.connect().execution_options(ledger_write=True) as conn:
            # SQLite: a table rebuild (batch mode) needs foreign keys off, which only works
            # outside a transaction: on the driver connection, before BEGIN; checked after.
            raw = conn.connection.driver_connection if sqlite_db else None
            if raw is not None:
                raw.execute("PRAGMA foreign_keys=OFF")
            try:
                with conn.begin():
                    cfg.attributes["connection"] = conn
                    command.upgrade(cfg, revision)
                if raw is not None and (bad := raw.execute("PRAGMA foreign_key_check").fetchall()):
                    raise LedgerError(f"{engine.url!r}: migration to {revision!r} left "
                                      f"{len(bad)} row(s) breaking a foreign key: {bad[:3]}")
            finally:
                if raw is not None:
                    raw.execute("PRAGMA foreign_keys=ON")
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    except sa.exc.OperationalError as exc:
        raise LedgerError(f"{engine.url!r}: cannot open the ledger database: "
                          f"{exc.orig or exc}".splitlines()[0]) from exc
    except Exception as exc:  # alembic raises CommandError/ResolutionError on unknown revisions
        if type(exc).__module__.startswith("alembic"):
            raise LedgerError(f"{engine.url!r}: migration to {revision!r} failed: {exc}") from exc
        raise


def _now() -> datetime:
    return datetime.now(UTC)


#: Conflict key and returned column of each ledger's INSERT … ON CONFLICT DO NOTHING.
_UPSERT: dict[str, tuple[list[str], str]] = {
    "runs": (["run_id"], "run_id"),
    "judgments": (["run_id", "judge_version"], "judgment_id"),
    "operator_labels": (["run_id", "labeled_by", "labeled_at"], "label_id"),
    "judge_versions": (["judge_version"], "judge_version"),
    "sampling_rounds": (["round_key"], "round_id"),
}


@cache
def _insert_ignore(dialect: str, table: str) -> Any:
    """``INSERT … ON CONFLICT (key) DO NOTHING RETURNING id`` in the dialect's construct.

    Built once and executed with parameters (building ``.values()`` per call
    costs more than the SQLite write itself).
    """
    key, returned = _UPSERT[table]
    t = S.metadata.tables[table]
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return insert(t).on_conflict_do_nothing(index_elements=key).returning(t.c[returned])


def _run_values(run: Run, owner: str) -> dict[str, Any]:
    a = run.attribution
    return {
        "owner": owner, "run_id": run.run_id, "bundle_uri": run.bundle_uri,
        "bundle_hash": run.bundle_hash,
        "policy_vendor": a.policy.vendor, "policy_name": a.policy.name,
        "policy_version": a.policy.version, "policy_checkpoint": a.policy.checkpoint,
        "body_arm": a.body.arm, "body_hand": a.body.hand, "body_dof": a.body.dof,
        "body_mount_h_mm": a.body.mount_h_mm,
        "body_calibrated_at": a.body.calibrated_at, "task_id": a.task.id,
        "task_tier": a.task.tier, "public_task_id": public_task_id(a.task.id, a.task.tier),
        "env": a.env,
        "seed": None if a.seed is None else str(a.seed),
        "attribution_extra": {"reset": a.reset.model_dump(mode="json")} if a.reset else None,
        "duration_s": run.duration_s, "cycle_sec": run.cycle_sec,
    }


def public_task_id(task_id: str, tier: str) -> str | None:
    """``runs.public_task_id``: the task id, or None for a tier-B (held-out) task."""
    return None if tier == "B" else task_id


#: Columns of ``runs`` a blind ledger (the Judge API's role) may not read (revision 0006).
CLOSED_RUN_COLUMNS = ("task_id",)


def run_columns(blind: bool) -> list[sa.Column]:
    """The columns of ``runs`` a (blind) ledger reads, named one by one."""
    return [c for c in S.runs.c if not (blind and c.name in CLOSED_RUN_COLUMNS)]


#: What a run *is* besides its bundle: compared when the same bundle is recorded again.
#: ``run_id`` and ``bundle_uri`` are not among them: the bundle hash is the identity (per
#: owner), and the same bundle read through another path or mount is the same run.
_IDENTITY_FREE = ("run_id", "bundle_uri", "owner")

#: The attribution field each compared ``runs`` column holds, as a caller names it.
_FIELD = {"policy_vendor": "policy.vendor", "policy_name": "policy.name",
          "policy_version": "policy.version", "policy_checkpoint": "policy.checkpoint",
          "body_arm": "body.arm", "body_hand": "body.hand", "body_dof": "body.dof",
          "body_mount_h_mm": "body.mount_h_mm", "body_calibrated_at": "body.calibrated_at",
          "task_id": "task.id", "task_tier": "task.tier", "public_task_id": "task.id",
          "attribution_extra": "reset"}


def owned_run_id(name: str, owner: str) -> str:
    """The id of run ``name`` of ``owner``: the name itself for the local owner, else
    ``<name>~<owner>`` (run ids of two owners never collide)."""
    return name if owner == S.LOCAL_OWNER else f"{name}~{owner}"


def _run_from_row(row: Any, blind: bool = False) -> Run:
    """The run of a ``runs`` row; ``blind`` rows lack ``task_id`` (tier B: LedgerError)."""
    if blind and row.public_task_id is None:
        raise LedgerError(f"run {row.run_id!r} is a tier-B run: its task id is not readable "
                          "through this connection (tier-B isolation, docs/api.md)")
    task_id = row.public_task_id if blind else row.task_id
    extra = row.attribution_extra or {}
    reset = extra.get("reset")
    attribution = Attribution(
        policy=Policy(vendor=row.policy_vendor, name=row.policy_name,
                      version=row.policy_version, checkpoint=row.policy_checkpoint),
        body=Body(arm=row.body_arm, hand=row.body_hand, calibrated_at=row.body_calibrated_at,
                  dof=row.body_dof, mount_h_mm=row.body_mount_h_mm),
        task=Task(id=task_id, tier=row.task_tier), env=row.env, seed=row.seed,
        reset=Reset(**reset) if reset else None)
    return Run(run_id=row.run_id, bundle_uri=row.bundle_uri, bundle_hash=row.bundle_hash,
               attribution=attribution, duration_s=row.duration_s, cycle_sec=row.cycle_sec,
               recorded_at=row.recorded_at)


def _integrity(exc: sa.exc.IntegrityError, what: str) -> LedgerError:
    detail = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return LedgerError(f"{what}: refused by the database: {detail}")


class Transaction:
    """Writes inside one open transaction (from :meth:`Ledger.transaction`).

    ``blind``: read no tier-B content column; ``owner``: whose runs it records and
    resolves (see the module's docstring).
    """

    def __init__(self, conn: Connection, blind: bool = False,
                 owner: str = S.LOCAL_OWNER) -> None:
        self.conn = conn
        self.blind = blind
        self.owner = owner

    def resolve_run(self, run: Run) -> tuple[bool, str]:
        """Write ``run`` unless its owner recorded its bundle; return (written?, its run id).

        A run is its owner and bundle hash: the same bundle under another folder name,
        path or mount is the owner's recorded run (its first run id and URI are kept);
        another owner's run of the same bytes is never looked at. A different bundle
        whose folder name the owner has taken gets ``<name>-<first 8 hex of its hash>``.

        Raises:
            LedgerError: the owner recorded the bundle with other facts (attribution,
                durations). Blind, it names the fields that differ, never a value.
        """
        values = _run_values(run, self.owner)
        r = S.runs
        for _ in range(2):  # a second pass only after losing a race to a concurrent writer
            row = self.conn.execute(sa.select(*run_columns(self.blind)).where(
                r.c.owner == self.owner, r.c.bundle_hash == run.bundle_hash)).first()
            if row is not None:
                recorded = row._mapping
                differ = [k for k, v in values.items()
                          if k not in _IDENTITY_FREE and k in recorded and recorded[k] != v]
                if differ and self.blind:
                    fields = dict.fromkeys(_FIELD.get(k, k) for k in differ)
                    raise LedgerError(f"run {recorded['run_id']!r} (bundle {run.bundle_hash}) "
                                      "is already recorded with other facts: "
                                      + ", ".join(fields) + "; send the facts it was "
                                      "recorded with, or judge it as another bundle")
                if differ:
                    raise LedgerError(f"run {recorded['run_id']!r} (bundle {run.bundle_hash}) "
                                      "is already recorded with other facts: "
                                      + "; ".join(f"{k} ({recorded[k]!r} recorded, "
                                                  f"{values[k]!r} given)" for k in differ))
                return False, recorded["run_id"]
            run_id = self._free_run_id(run.run_id, run.bundle_hash)
            stmt = _insert_ignore(self.conn.dialect.name, "runs")
            params = {**values, "run_id": run_id, "recorded_at": run.recorded_at or _now()}
            try:
                if self.conn.execute(stmt, params).first() is not None:
                    return True, run_id
            except sa.exc.IntegrityError as exc:
                raise _integrity(exc, f"run {run_id!r}") from exc
        raise LedgerError(f"run {run.run_id!r}: could not be recorded (concurrent writers)")

    def _free_run_id(self, name: str, bundle_hash: str) -> str:
        wanted = owned_run_id(name, self.owner)
        taken = self.conn.execute(sa.select(S.runs.c.run_id).where(
            S.runs.c.run_id == wanted)).first()
        return wanted if taken is None else owned_run_id(f"{name}-{bundle_hash[:8]}",
                                                         self.owner)

    def record_run(self, run: Run) -> bool:
        """Write ``run``; False when its bundle is already recorded (see :meth:`resolve_run`)."""
        return self.resolve_run(run)[0]

    def register_version(self, judge_version: str, fingerprint: str,
                         parts: dict[str, str] | None = None) -> bool:
        """Record a version's fingerprint on first use; True when new.

        Raises:
            JudgeVersionChanged: the version is recorded with another fingerprint.
        """
        v = S.judge_versions
        row = self.conn.execute(sa.select(v).where(v.c.judge_version == judge_version)).first()
        if row is not None:
            if row.fingerprint != fingerprint:
                raise JudgeVersionChanged(judge_version, row.fingerprint, fingerprint,
                                          row.parts or {}, parts or {})
            return False
        stmt = _insert_ignore(self.conn.dialect.name, "judge_versions")
        written = self.conn.execute(stmt, {"judge_version": judge_version,
                                           "fingerprint": fingerprint, "parts": parts or {},
                                           "registered_at": _now()}).first() is not None
        if not written:  # registered by a concurrent writer a moment ago: compare again
            return self.register_version(judge_version, fingerprint, parts)
        return True

    def _check_instruction(self, judgment: Judgment) -> None:
        """Refuse a judgment whose task instruction differs from the one the version used."""
        j, r = S.judgments, S.runs
        # blind: only runs whose task id may be read (public_task_id; tier B never matches)
        task = r.c.public_task_id if self.blind else r.c.task_id
        used = self.conn.execute(
            sa.select(j.c.instruction_sha256).join(r, r.c.run_id == j.c.run_id)
            .where(j.c.judge_version == judgment.judge_version,
                   task == judgment.task_id, j.c.instruction_sha256.is_not(None))
            .limit(1)).scalar()
        if used is not None and used != judgment.instruction_sha256:
            raise LedgerError(
                f"judge version {judgment.judge_version!r} judged task {judgment.task_id!r} "
                f"with another instruction (sha256 {used[:12]}…, now "
                f"{judgment.instruction_sha256[:12]}…): its entry in the task catalog "
                "changed; the same version never judges two ways, so create a new judge "
                "version (configs/judges/) to judge with the new instruction")

    def record_judgment(self, judgment: Judgment, *, judged_at: datetime | None = None) -> bool:
        """Write ``judgment``; False when its ``(run_id, judge_version)`` is already recorded.

        Raises:
            LedgerError: its run is not recorded, or was recorded with another
                bundle hash or task, or the row breaks a constraint.
        """
        what = f"judgment of run {judgment.run_id!r} by {judgment.judge_version!r}"
        if judgment.fingerprint is not None:
            self.register_version(judgment.judge_version, judgment.fingerprint)
        if judgment.instruction_sha256 is not None:
            self._check_instruction(judgment)
        r = S.runs
        task = r.c.public_task_id if self.blind else r.c.task_id
        run = self.conn.execute(sa.select(r.c.bundle_hash, task.label("task_id")).where(
            r.c.run_id == judgment.run_id, r.c.owner == self.owner)).first()
        if run is None:
            raise LedgerError(f"{what}: run not recorded; record the run first (Ledger.record)")
        task_differs = run.task_id != judgment.task_id and not (self.blind and run.task_id is None)
        if run.bundle_hash != judgment.bundle_hash or task_differs:
            raise LedgerError(
                f"{what}: judged bundle {judgment.bundle_hash} / task {judgment.task_id!r} "
                f"but the run is bundle {run.bundle_hash} / task {run.task_id!r}")
        params = {
            "run_id": judgment.run_id, "judge_version": judgment.judge_version,
            "attempt": judgment.attempt, "success": judgment.success,
            "failure_class": judgment.failure_class,
            "counts_against_policy": judgment.counts_against_policy,
            "attempt_confidence": judgment.attempt_confidence,
            "success_confidence": judgment.success_confidence,
            "answers": [a.model_dump(mode="json") for a in judgment.answers],
            "timings": judgment.timings.model_dump(mode="json"),
            "cost_usd": judgment.cost.usd, "gpu_s": judgment.cost.gpu_s,
            "cpu_s": judgment.cost.cpu_s, "frames": judgment.frames,
            "judged_at": judged_at or _now(), "fingerprint": judgment.fingerprint,
            "instruction_sha256": judgment.instruction_sha256,
        }
        stmt = _insert_ignore(self.conn.dialect.name, "judgments")
        try:
            return self.conn.execute(stmt, params).first() is not None
        except sa.exc.IntegrityError as exc:
            raise _integrity(exc, what) from exc

    def check_owned(self, run_ids: Sequence[str], what: str) -> None:
        """LedgerError naming the first of ``run_ids`` that is not a run of the owner."""
        r = S.runs
        wanted = sorted(set(run_ids))
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            mine = set(self.conn.execute(sa.select(r.c.run_id).where(
                r.c.run_id.in_(chunk), r.c.owner == self.owner)).scalars())
            if missing := [x for x in chunk if x not in mine]:
                raise LedgerError(f"{what} of run {missing[0]!r}: run not recorded")

    def add_labels(self, labels: Sequence[Label]) -> int:
        """Write operator labels; return how many were new (same run, person, time: kept once).

        Raises:
            LedgerError: a label's run is not a run of the owner, or a row breaks a
                constraint.
        """
        if not labels:
            return 0
        self.check_owned([lb.run_id for lb in labels], "label")
        stmt = _insert_ignore(self.conn.dialect.name, "operator_labels")
        try:
            return len(self.conn.execute(stmt, [lb.model_dump() for lb in labels]).all())
        except sa.exc.IntegrityError as exc:
            raise _integrity(exc, f"{len(labels)} operator label(s)") from exc


class Ledger:
    """One owner's three ledgers in one database. Open with :meth:`open`.

    ``blind``: read no tier-B content column (the Judge API's ledger); ``owner``: whose
    runs it records and reads (module docstring; the local operator by default).
    """

    def __init__(self, engine: Engine, *, blind: bool = False,
                 owner: str = S.LOCAL_OWNER) -> None:
        self.engine = engine
        self.blind = blind
        self.owner = owner

    @classmethod
    def open(cls, url: str | None = None, *, schema: str | None = None,
             migrate: bool = True, blind: bool = False, create: bool = True) -> Ledger:
        """Open (and by default migrate to head) the ledger at ``url`` (see :func:`default_url`).

        ``create=False`` (the commands that only read a ledger): an SQLite file that does not
        exist is refused, naming it, and nothing is created (a typo makes no empty ledger).
        """
        if not create:
            check_exists(url)
        engine = make_engine(url, schema=schema)
        if migrate:
            upgrade(engine)
        return cls(engine, blind=blind)

    def owned_by(self, owner: str) -> Ledger:
        """The same database as ``owner``'s ledger (same engine, same blindness)."""
        return Ledger(self.engine, blind=self.blind, owner=owner)

    def mine(self, run_id: sa.ColumnElement) -> sa.ColumnElement:
        """SQL: the ``run_id`` column holds a run of this ledger's owner."""
        r = S.runs
        return run_id.in_(sa.select(r.c.run_id).where(r.c.owner == self.owner))

    def close(self) -> None:
        """Release pooled connections."""
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction: everything in it commits together or not at all."""
        with self.engine.connect().execution_options(ledger_write=True) as conn, conn.begin():
            yield Transaction(conn, self.blind, self.owner)

    # --- writes ---------------------------------------------------------------------
    def record_run(self, attribution: Attribution, *, run_id: str, bundle_uri: str,
                   bundle_hash: str, duration_s: float, cycle_sec: float,
                   recorded_at: datetime | None = None) -> bool:
        """Write one run (see :meth:`Transaction.record_run`); False if already there."""
        run = Run(run_id=run_id, bundle_uri=bundle_uri, bundle_hash=bundle_hash,
                  attribution=attribution, duration_s=duration_s, cycle_sec=cycle_sec,
                  recorded_at=recorded_at)
        with self.transaction() as tx:
            return tx.record_run(run)

    def record_judgment(self, judgment: Judgment, *, judged_at: datetime | None = None) -> bool:
        """Write one judgment of an already recorded run; False if already there."""
        with self.transaction() as tx:
            return tx.record_judgment(judgment, judged_at=judged_at)

    def record(self, run: Run, judgment: Judgment, *,
               judged_at: datetime | None = None) -> Written:
        """Write a run and its judgment in ONE transaction (step 5 of a call).

        The judgment is kept under the run id its bundle has in the ledger
        (:meth:`Transaction.resolve_run`); ``Written.run_id`` says which.
        """
        with self.transaction() as tx:
            new, run_id = tx.resolve_run(run)
            if judgment.run_id != run_id:
                judgment = judgment.model_copy(update={"run_id": run_id})
            return Written(run=new, judgment=tx.record_judgment(judgment, judged_at=judged_at),
                           run_id=run_id)

    def register_version(self, judge_version: str, fingerprint: str,
                         parts: dict[str, str] | None = None) -> bool:
        """Record a version's fingerprint (see :meth:`Transaction.register_version`)."""
        with self.transaction() as tx:
            return tx.register_version(judge_version, fingerprint, parts)

    def version_fingerprint(self, judge_version: str) -> tuple[str, dict[str, str]] | None:
        """(fingerprint, parts) recorded for a version, or None."""
        v = S.judge_versions
        rows = self._all(sa.select(v.c.fingerprint, v.c.parts)
                         .where(v.c.judge_version == judge_version))
        return (rows[0].fingerprint, rows[0].parts or {}) if rows else None

    def add_labels(self, labels: Sequence[Label]) -> int:
        """Write operator labels in one transaction; return how many were new."""
        with self.transaction() as tx:
            return tx.add_labels(labels)

    # --- reads ----------------------------------------------------------------------
    def _all(self, stmt: sa.Executable) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(stmt).all())

    def get_run(self, run_id: str) -> Run | None:
        """The owner's recorded run, or None (another owner's run: None)."""
        r = S.runs
        rows = self._all(sa.select(*run_columns(self.blind)).where(
            r.c.run_id == run_id, r.c.owner == self.owner))
        return _run_from_row(rows[0], self.blind) if rows else None

    def get_judgment(self, run_id: str, judge_version: str) -> Judgment | None:
        """The recorded judgment (with the run's bundle URI), or None."""
        j, r = S.judgments, S.runs
        task = r.c.public_task_id if self.blind else r.c.task_id
        rows = self._all(sa.select(j, r.c.bundle_uri, r.c.bundle_hash, task.label("task_id"))
                         .join(r, r.c.run_id == j.c.run_id)
                         .where(j.c.run_id == run_id, j.c.judge_version == judge_version,
                                r.c.owner == self.owner))
        if not rows:
            return None
        row = rows[0]
        if row.task_id is None:  # blind, tier B
            raise LedgerError(f"run {run_id!r} is a tier-B run: its task id is not readable "
                              "through this connection (tier-B isolation, docs/api.md)")
        return Judgment(
            run_id=row.run_id, bundle_uri=row.bundle_uri, bundle_hash=row.bundle_hash,
            task_id=row.task_id, judge_version=row.judge_version, attempt=row.attempt,
            success=row.success, failure_class=row.failure_class,
            counts_against_policy=row.counts_against_policy,
            attempt_confidence=row.attempt_confidence,
            success_confidence=row.success_confidence,
            answers=tuple(ModelAnswer(**a) for a in row.answers), frames=row.frames,
            timings=StageTimings(**row.timings),
            cost=Cost(gpu_s=row.gpu_s, cpu_s=row.cpu_s, usd=row.cost_usd),
            fingerprint=row.fingerprint, instruction_sha256=row.instruction_sha256)

    def judged_run_ids(self, judge_version: str) -> set[str]:
        """Runs already judged by ``judge_version`` (what a resumed batch skips)."""
        j = S.judgments
        return {r[0] for r in self._all(sa.select(j.c.run_id)
                                        .where(j.c.judge_version == judge_version,
                                               self.mine(j.c.run_id)))}

    def judged_bundle_hashes(self, judge_version: str) -> set[str]:
        """Bundle hashes of the runs judged by ``judge_version`` (what a resumed batch skips)."""
        j, r = S.judgments, S.runs
        return {row[0] for row in self._all(sa.select(r.c.bundle_hash)
                                            .join(j, j.c.run_id == r.c.run_id)
                                            .where(j.c.judge_version == judge_version,
                                                   r.c.owner == self.owner))}

    def judge_versions(self) -> list[str]:
        """Judge versions with at least one judgment, sorted."""
        j = S.judgments
        return [r[0] for r in self._all(sa.select(j.c.judge_version).distinct()
                                        .where(self.mine(j.c.run_id))
                                        .order_by(j.c.judge_version))]

    def labels(self, run_id: str) -> list[StoredLabel]:
        """Every label of a run, oldest first (the last one is current)."""
        t = S.operator_labels
        rows = self._all(sa.select(t).where(t.c.run_id == run_id, self.mine(t.c.run_id))
                         .order_by(t.c.labeled_at, t.c.label_id))
        return [_stored_label(r) for r in rows]

    def current_labels(self) -> dict[str, StoredLabel]:
        """The current (latest) label of every labelled run, by run id."""
        c = S.current_operator_labels
        rows = self._all(sa.select(c).where(self.mine(c.c.run_id)))
        return {r.run_id: _stored_label(r) for r in rows}

    def calibration_set(self, judge_version: str | None = None) -> list[CalibrationRow]:
        """Judgments disagreeing with their run's current label (the ``calibration_set`` view).

        Blind, the view (whose select list reads ``runs.task_id``) is not used: the same
        rows come from ``judgments``, ``runs.public_task_id`` and ``current_operator_labels``,
        with ``task_id`` None on tier-B runs.
        """
        v = S.calibration_set if not self.blind else _blind_calibration_set()
        stmt = sa.select(*v.c).where(self.mine(v.c.run_id)).order_by(v.c.judge_version,
                                                                       v.c.run_id)
        if judge_version is not None:
            stmt = stmt.where(v.c.judge_version == judge_version)
        return [CalibrationRow(**r._mapping) for r in self._all(stmt)]

    def record_failure(self, bundle_uri: str, judge_version: str, error: str,
                       message: str) -> None:
        """Keep a bundle a batch could not judge, with its error (``batch_failures``)."""
        with self.transaction() as tx:
            tx.conn.execute(sa.insert(S.batch_failures).values(
                bundle_uri=bundle_uri, judge_version=judge_version, error=error,
                message=message, failed_at=_now()))

    def failures(self, judge_version: str | None = None) -> list[dict[str, Any]]:
        """Recorded batch failures, oldest first."""
        t = S.batch_failures
        stmt = sa.select(t).order_by(t.c.failure_id)
        if judge_version is not None:
            stmt = stmt.where(t.c.judge_version == judge_version)
        return [dict(r._mapping) for r in self._all(stmt)]

    def counts(self) -> dict[str, int]:
        """The owner's rows per ledger."""
        tables = (S.runs, S.judgments, S.operator_labels)
        with self.engine.connect() as conn:
            return {t.name: conn.execute(sa.select(sa.func.count()).select_from(t).where(
                self.mine(t.c.run_id))).scalar_one() for t in tables}


def _blind_calibration_set() -> Any:
    """The ``calibration_set`` view's rows as a subquery that reads no closed column."""
    j, r, c = S.judgments, S.runs, S.current_operator_labels
    class_disagrees = c.c.failure_class.is_not(None) & (
        j.c.failure_class.is_(None) | (j.c.failure_class != c.c.failure_class))
    return (sa.select(
        j.c.judgment_id, j.c.run_id, j.c.judge_version, r.c.public_task_id.label("task_id"),
        j.c.attempt, j.c.success, j.c.failure_class, j.c.attempt_confidence,
        j.c.success_confidence, c.c.label_id, c.c.attempt.label("label_attempt"),
        c.c.success.label("label_success"), c.c.failure_class.label("label_failure_class"),
        c.c.labeled_by, c.c.labeled_at,
        (j.c.attempt != c.c.attempt).label("attempt_disagrees"),
        (j.c.success != c.c.success).label("success_disagrees"),
        class_disagrees.label("class_disagrees"))
        .select_from(j.join(r, r.c.run_id == j.c.run_id)
                     .join(c, c.c.run_id == j.c.run_id))
        .where((j.c.attempt != c.c.attempt) | (j.c.success != c.c.success) | class_disagrees)
        .subquery("calibration_set"))


def _stored_label(r: Any) -> StoredLabel:
    return StoredLabel(label_id=r.label_id, label=Label(
        run_id=r.run_id, attempt=r.attempt, success=r.success, failure_class=r.failure_class,
        labeled_by=r.labeled_by, labeled_at=r.labeled_at))
