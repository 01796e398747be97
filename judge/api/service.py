"""The Judge API's logic, callable without HTTP: keys, idempotency, judging, metering.

:class:`JudgeService` opens two databases, one per key mode: ``live`` (the URL given)
and ``test`` (a sibling SQLite file ``<name>-test.db``, or the PostgreSQL schema
``rcjudge_test``). A request is served from the database of its key's mode only, so a
test key cannot read or write live data: the live ledger is not reachable from its code
path. Keys live in the live database.

One judged call (:meth:`JudgeService.submit`) is steps 1–7 of spec/judge_api.md:
intake, frames, the three models, the vote (:class:`judge.ensemble.judge.Judge`), then
one transaction writing the run, the judgment, its anonymous ``coefficients`` row, the
charge and the idempotency record. The routes (``judge.api.routes``) only translate HTTP.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from judge.api import auth
from judge.api import tables as T
from judge.api.bundle_roots import BundleRoots
from judge.api.catalog import CatalogMixin
from judge.api.common import Caller, Reply, canonical, insert_ignore, iso, now_utc
from judge.api.errors import ApiError, problem
from judge.api.protocol import ChargedTo, Job, JobResult, JudgmentRequest, JudgmentResponse
from judge.api.webhooks import WebhookMixin
from judge.bundle.intake import missing_attribution
from judge.ensemble.judge import Judge, admit, prepare_admitted
from judge.ledgers import schema as S
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger, make_engine, resolve_url, upgrade
from rcjudge.errors import RcjudgeError

PRICE_CENTS = 60  # $0.60 per judged call (spec/judge_api.md, step 7)
#: ``coefficients.block`` of a copy: another owner's judgment of bytes already counted,
#: never published (:meth:`JudgeService._counted_already`).
COPY_BLOCK = 0
IDEMPOTENCY_TTL = timedelta(hours=24)
IN_FLIGHT_TIMEOUT = timedelta(minutes=15)  # a first request still "in flight" after this died
TEST_SCHEMA = "rcjudge_test"
API_ROLE = "rcjudge_api"  # created by ledger migration 0005 (PostgreSQL)


def test_url(url: str, schema: str = TEST_SCHEMA) -> tuple[str, str | None]:
    """The test-mode database beside ``url``: (URL, PostgreSQL schema or None)."""
    parsed = sa.make_url(resolve_url(url))
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database or ""
        if db in ("", ":memory:"):
            raise ApiError(500, "the API needs a file or server database, not :memory:")
        stem, dot, ext = db.rpartition(".")
        return str(parsed.set(database=f"{stem}-test.{ext}" if dot else f"{db}-test")), None
    return resolve_url(url), schema


class _Mode:
    """One mode's database: the ledgers plus the API tables."""

    def __init__(self, url: str, schema: str | None, mode: str = "live") -> None:
        if schema is not None:
            boot = make_engine(url)
            with boot.begin() as conn:
                exists = conn.exec_driver_sql(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %(s)s", {"s": schema}).first()
                if exists is None:
                    conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            boot.dispose()
        self.engine = make_engine(url, schema=schema)
        upgrade(self.engine)
        T.metadata.create_all(self.engine)
        if self.engine.dialect.name == "postgresql":
            self._grant_api_role()
        self.ledger = Ledger(self.engine, blind=True)  # reads no tier-B content column
        self.task_secret = self._setting("task_key_secret", lambda: secrets.token_hex(32))
        # which mode's data this database holds, for processes that open it without the
        # API (judge.api.outcome_hooks.database_mode: the webhook target rules)
        self._setting("mode", lambda: mode)

    def _setting(self, name: str, make: Callable[[], str]) -> str:
        s = T.settings
        with self.write() as conn, conn.begin():
            row = conn.execute(sa.select(s.c.value).where(s.c.name == name)).first()
            if row is None:  # a concurrent first open may have written it: keep theirs
                conn.execute(insert_ignore(conn, s, ["name"]).values(name=name, value=make()))
                row = conn.execute(sa.select(s.c.value).where(s.c.name == name)).first()
            return row.value

    def task_key(self, task_id: str) -> str:
        """A task's key in ``coefficients``: HMAC-SHA256 under this database's secret."""
        import hmac

        return hmac.new(bytes.fromhex(self.task_secret), task_id.encode(),
                        hashlib.sha256).hexdigest()[:32]

    def _grant_api_role(self) -> None:
        """As the owner: let ``rcjudge_api`` (migration 0005) use the API's own tables."""
        with self.engine.begin() as conn:
            me = conn.exec_driver_sql("SELECT current_user").scalar_one()
            if me == API_ROLE:
                return
            names = ", ".join(t.name for t in T.metadata.sorted_tables)
            conn.exec_driver_sql(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {names} "
                                 f"TO {API_ROLE}")
            # the review page's undo deletes a label it wrote (judge.review.store.undo)
            conn.exec_driver_sql(f"GRANT DELETE ON operator_labels, review_labels TO {API_ROLE}")
            # the review page's sampling rounds (judge.learn.draw.sampling_round)
            conn.exec_driver_sql(f"GRANT INSERT ON sampling_rounds, sampling_frames "
                                 f"TO {API_ROLE}")
            conn.execute(sa.text(f"DO $$ BEGIN EXECUTE format('GRANT USAGE ON ALL SEQUENCES "
                                 f"IN SCHEMA %I TO {API_ROLE}', current_schema()); END $$"))

    def write(self) -> Any:
        return self.engine.connect().execution_options(ledger_write=True)

    def ledger_of(self, caller: Caller) -> Ledger:
        """The caller's ledger: the runs its key owns (``runs.owner``), and nothing else."""
        return self.ledger.owned_by(caller.key_id)


class JudgeService(CatalogMixin, WebhookMixin):
    """Everything the HTTP API does, as plain method calls.

    Args:
        url: the live database (SQLite or PostgreSQL URL; the ledger default when None).
        judges: judge version name -> a loaded :class:`Judge` (default: load by name, once).
        workers: threads for asynchronous jobs and webhook deliveries.
        test_schema: on PostgreSQL, the schema of the test-mode database.
        bundle_roots: the only folders / object-store prefixes bundles are read from
            (:class:`judge.api.bundle_roots.BundleRoots`); none: every judgment is refused.
    """

    def __init__(self, url: str | None = None, *,
                 judges: Callable[[str], Judge] | None = None, workers: int = 2,
                 test_schema: str = TEST_SCHEMA,
                 bundle_roots: Iterable[str] = ()) -> None:
        from judge.ledgers.store import default_url

        url = url or default_url()
        self.modes = {"live": _Mode(url, None),
                      "test": _Mode(*test_url(url, test_schema), mode="test")}
        self._judges: dict[str, Judge] = {}
        self._load_judge = judges or Judge
        self.bundle_roots = BundleRoots(bundle_roots)
        self._judge_lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rcjudge-api")

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for m in self.modes.values():
            m.engine.dispose()

    # --- keys -----------------------------------------------------------------------
    def create_key(self, name: str, mode: str, rights: list[str],
                   dataset: str | None = None) -> tuple[str, Caller]:
        """A new key (returned once, never stored) and its record.

        With ``dataset`` (``owner/slug``, existing in the key's mode database) every
        judgment made through the key puts its run into that dataset with a model label
        (:meth:`judge_now`); the key gets edit on it and must hold ``datasets:write``.
        """
        if mode not in auth.MODES:
            raise ApiError(422, f"mode {mode!r}: expected one of {', '.join(auth.MODES)}")
        try:
            granted = auth.check_rights(rights)
        except ValueError as exc:
            raise ApiError(422, f"rights_granted: {exc}", param="rights_granted") from None
        store = None
        if dataset is not None:
            from judge.outcomes.store import NotFound, OutcomeError, OutcomeStore

            if "datasets:write" not in granted:
                raise ApiError(422, f"a key that labels into dataset {dataset} needs the "
                               "right datasets:write", param="dataset")
            store = OutcomeStore(self.modes[mode].engine)
            try:
                dataset = store.dataset(dataset).name
            except OutcomeError as exc:
                where = f" (in the {mode}-mode database)" if isinstance(exc, NotFound) else ""
                raise ApiError(422, f"{exc}{where}", param="dataset") from None
        key = auth.new_key(mode)
        parsed = auth.parse_key(key)
        now = now_utc()
        if store is not None:  # first: a grant to a key id never stored is inert
            store.grant(dataset, parsed.key_id, "edit")
        with self.modes["live"].write() as conn, conn.begin():
            conn.execute(sa.insert(T.api_keys).values(
                key_id=parsed.key_id, mode=mode, name=name, secret_hash=parsed.secret_hash,
                rights_granted=granted, created_at=now, revoked_at=None))
            if dataset is not None:
                conn.execute(sa.insert(T.key_datasets).values(key_id=parsed.key_id,
                                                              dataset=dataset))
        return key, Caller(parsed.key_id, name, mode, tuple(granted), now, dataset)

    def list_keys(self) -> list[dict[str, Any]]:
        """Every key's record (no secret, no hash), oldest first."""
        k, d = T.api_keys, T.key_datasets
        with self.modes["live"].engine.connect() as conn:
            rows = conn.execute(sa.select(k, d.c.dataset).outerjoin(d, d.c.key_id == k.c.key_id)
                                .order_by(k.c.created_at, k.c.key_id)).all()
        return [{"key_id": r.key_id, "name": r.name, "mode": r.mode,
                 "rights_granted": list(r.rights_granted), "dataset": r.dataset,
                 "created_at": iso(r.created_at), "revoked_at": iso(r.revoked_at)}
                for r in rows]

    def revoke_key(self, key_id: str) -> bool:
        """Revoke a key; False when it was already revoked. Unknown id: ApiError 404."""
        k = T.api_keys
        with self.modes["live"].write() as conn, conn.begin():
            row = conn.execute(sa.select(k.c.revoked_at).where(k.c.key_id == key_id)).first()
            if row is None:
                raise ApiError(404, f"key {key_id!r}: no such key")
            if row.revoked_at is not None:
                return False
            conn.execute(sa.update(k).where(k.c.key_id == key_id).values(revoked_at=now_utc()))
            return True

    def authenticate(self, authorization: str | None, header: str = "Authorization") -> Caller:
        """The caller of ``Authorization: Bearer rck_…``; ApiError 401 otherwise. ``header``:
        the header the key came in (``X-Avala-Api-Key`` is read as a bearer token), named
        in the errors."""
        challenge = {"WWW-Authenticate": 'Bearer realm="rcjudge"'}
        if not authorization:
            raise ApiError(401, "Authorization: missing; send 'Bearer rck_live_…'",
                           headers=challenge)
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, f"{header}: expected 'Bearer rck_live_…' or "
                           "'Bearer rck_test_…'", headers=challenge)
        parsed = auth.parse_key(token.strip())
        if parsed is None:
            raise ApiError(401, f"{header}: not an rcjudge key (bad format or checksum)",
                           headers=challenge)
        k, d = T.api_keys, T.key_datasets
        with self.modes["live"].engine.connect() as conn:
            row = conn.execute(sa.select(k, d.c.dataset).outerjoin(d, d.c.key_id == k.c.key_id)
                               .where(k.c.secret_hash == parsed.secret_hash)).first()
        if row is None or row.key_id != parsed.key_id or row.mode != parsed.mode:
            raise ApiError(401, f"{header}: unknown key", headers=challenge)
        if row.revoked_at is not None:
            raise ApiError(401, f"{header}: key {row.key_id} was revoked",
                           headers=challenge)
        return Caller(row.key_id, row.name, row.mode, tuple(row.rights_granted),
                      row.created_at, row.dataset)

    @staticmethod
    def require(caller: Caller, right: str) -> None:
        """ApiError 403 unless ``caller`` was granted ``right``."""
        if right not in caller.rights:
            raise ApiError(403, f"key {caller.key_id} lacks the right {right!r} "
                           f"(rights_granted: {', '.join(caller.rights) or 'none'})")

    # --- judging --------------------------------------------------------------------
    def judge_for(self, name: str) -> Judge:
        """The loaded judge of a version (loaded on first use, kept)."""
        with self._judge_lock:
            if name not in self._judges:
                try:
                    self._judges[name] = self._load_judge(name)
                except RcjudgeError as exc:
                    raise ApiError(422, f"judge: {exc}", param="judge") from None
                self._locks[name] = threading.Lock()
            return self._judges[name]

    def submit(self, caller: Caller, doc: Any, idempotency_key: str | None,
               respond_async: bool = False) -> Reply:
        """``POST /v1/judgments``: the reply, replayed byte for byte for the same key + body."""
        self.require(caller, "judgments:write")
        request = validate_request(doc)
        if idempotency_key is None:
            return self._submit(caller, request, respond_async)
        if not 1 <= len(idempotency_key) <= 255 or not idempotency_key.isascii():
            raise ApiError(400, "Idempotency-Key: 1 to 255 ASCII characters",
                           param="Idempotency-Key")
        digest = hashlib.sha256(canonical(doc)).hexdigest()
        mode = self.modes[caller.mode]
        stored = self._claim(mode, caller.key_id, idempotency_key, digest)
        if stored is not None:
            return stored
        try:
            reply = self._submit(caller, request, respond_async)
        except BaseException:
            self._release(mode, caller.key_id, idempotency_key)
            raise
        self._complete(mode, caller.key_id, idempotency_key, reply)
        return Reply(reply.status, reply.body, {**reply.headers, "Idempotency-Key":
                                                idempotency_key})

    def _claim(self, mode: _Mode, key_id: str, idem: str, digest: str) -> Reply | None:
        """Take the key (None) or answer from it: the stored reply, 409 or 422."""
        t = T.idempotency
        now = now_utc()
        where = (t.c.key_id == key_id) & (t.c.idempotency_key == idem)
        with mode.write() as conn, conn.begin():
            # expired keys of this API key go; so does a claim abandoned in flight (a crash)
            conn.execute(sa.delete(t).where((t.c.key_id == key_id) & (
                (t.c.expires_at <= now) | ((t.c.state == "in_flight")
                                           & (t.c.created_at <= now - IN_FLIGHT_TIMEOUT)))))
            row = conn.execute(sa.select(t).where(where)).first()
            if row is None:
                taken = conn.execute(insert_ignore(conn, t, ["key_id", "idempotency_key"]).values(
                    key_id=key_id, idempotency_key=idem, request_sha256=digest,
                    state="in_flight", status=None, headers=None, body=None, created_at=now,
                    expires_at=now + IDEMPOTENCY_TTL).returning(t.c.key_id)).first()
                if taken is not None:
                    return None
                row = conn.execute(sa.select(t).where(where)).first()  # a concurrent first
        if row.request_sha256 != digest:
            raise ApiError(422, f"Idempotency-Key {idem!r} was used with another request "
                           "body; use a new key for a new request", param="Idempotency-Key")
        if row.state == "in_flight":
            raise ApiError(409, f"Idempotency-Key {idem!r}: the first request with this key "
                           "is still being processed; retry later", headers={"Retry-After": "1"})
        return Reply(row.status, bytes(row.body), {**(row.headers or {}),
                                                   "Idempotency-Key": idem,
                                                   "Idempotent-Replayed": "true"})

    @staticmethod
    def _complete(mode: _Mode, key_id: str, idem: str, reply: Reply) -> None:
        t = T.idempotency
        with mode.write() as conn, conn.begin():
            conn.execute(sa.update(t).where((t.c.key_id == key_id)
                                            & (t.c.idempotency_key == idem))
                         .values(state="done", status=reply.status, headers=reply.headers,
                                 body=reply.body))

    @staticmethod
    def _release(mode: _Mode, key_id: str, idem: str) -> None:
        t = T.idempotency
        with mode.write() as conn, conn.begin():
            conn.execute(sa.delete(t).where((t.c.key_id == key_id)
                                            & (t.c.idempotency_key == idem)
                                            & (t.c.state == "in_flight")))

    def _submit(self, caller: Caller, request: JudgmentRequest, respond_async: bool) -> Reply:
        if caller.dataset is not None:  # before anything is judged or queued (a replay skips)
            from judge.api.labelling import check_dataset_key

            check_dataset_key(self.modes[caller.mode].ledger_of(caller), caller, request)
        if not respond_async:
            return Reply(200, canonical(self.judge_now(caller, request).model_dump(mode="json")))
        job_id = "job_" + secrets.token_hex(8)
        mode = self.modes[caller.mode]
        with mode.write() as conn, conn.begin():
            conn.execute(sa.insert(T.jobs).values(
                job_id=job_id, key_id=caller.key_id, kind="judgment", status="queued",
                request=request.model_dump(mode="json"), result=None, error=None,
                created_at=now_utc(), finished_at=None))
        self.pool.submit(self._run_job, caller, request, job_id)
        return Reply(202, canonical(self.job(caller, job_id).model_dump(mode="json")),
                     {"Location": f"/v1/jobs/{job_id}", "Preference-Applied": "respond-async"})

    def _run_job(self, caller: Caller, request: JudgmentRequest, job_id: str) -> None:
        mode = self.modes[caller.mode]
        j = T.jobs
        with mode.write() as conn, conn.begin():
            conn.execute(sa.update(j).where(j.c.job_id == job_id).values(status="running"))
        result, error, status = None, None, "succeeded"
        try:
            result = self.judge_now(caller, request).model_dump(mode="json")
        except ApiError as exc:
            error, status = exc.problem(), "failed"
        except Exception as exc:  # the job records it (as a synchronous call would answer
            # it: the type, never the internal text); the server keeps serving
            error, status = problem(500, f"internal error ({type(exc).__name__})"), "failed"
        with mode.write() as conn, conn.begin():
            conn.execute(sa.update(j).where(j.c.job_id == job_id).values(
                status=status, result=result, error=error, finished_at=now_utc()))

    def job(self, caller: Caller, job_id: str) -> Job:
        """A judging job of the caller's (404 for anyone else's)."""
        self.require(caller, "judgments:read")
        j = T.jobs
        with self.modes[caller.mode].engine.connect() as conn:
            row = conn.execute(sa.select(j).where(j.c.job_id == job_id,
                                                  j.c.key_id == caller.key_id)).first()
        if row is None:
            raise ApiError(404, f"job {job_id!r}: no such job for this key")
        result = None
        if row.status in ("succeeded", "failed"):
            result = JobResult(judgment=JudgmentResponse(**row.result) if row.result else None,
                               error=row.error)
        return Job(job_id=row.job_id, status=row.status, created_at=iso(row.created_at),
                   finished_at=iso(row.finished_at), result=result)

    def judge_now(self, caller: Caller, request: JudgmentRequest) -> JudgmentResponse:
        """Judge the request's bundle and write everything in one transaction (charged);
        for a key with a dataset, then its sequence and model label (:mod:`judge.api.
        labelling`)."""
        from judge.api.labelling import label_judgment

        doc = request.model_dump(mode="json", exclude_none=True)
        out = self._judge_and_write(caller, request.bundle_uri, doc, request.judge, True)
        if caller.dataset is not None:
            label_judgment(self.modes[caller.mode].ledger_of(caller), caller, out.run_id,
                           out.judge_version)
        if out.charged_to is not None:
            self.emit(caller, "judgment.completed", out.model_dump(mode="json"))
        return out

    def judge_run(self, caller: Caller, run: Run, judge_name: str, charge: bool) -> Any:
        """Judge a recorded run again (re-judge jobs): its bundle, its recorded attribution."""
        doc = run.attribution.model_dump(mode="json", exclude_none=True)
        return self._judge_and_write(caller, run.bundle_uri, doc, judge_name, charge)

    def _judge_and_write(self, caller: Caller, uri: str, doc: dict[str, Any],
                         judge_name: str, charge: bool) -> JudgmentResponse:
        uri = self.bundle_roots.admit(uri)  # before anything is opened or loaded
        judge = self.judge_for(judge_name)
        task = doc.get("task") or {}
        try:
            admitted = admit(uri, doc)
            self._check_task(caller, admitted.bundle.attribution.task.id)
            with self._locks[judge_name]:  # one set of loaded models: one call at a time
                prepared = prepare_admitted(admitted, judge.version)
                judgment = judge.judge_prepared(prepared)
        except RcjudgeError as exc:
            raise ApiError(422, self.bundle_roots.hide(public_detail(exc, task))) from None
        run = Run(run_id=prepared.run_id, bundle_uri=prepared.uri,
                  bundle_hash=prepared.bundle_hash, attribution=prepared.attribution,
                  duration_s=prepared.duration_s, cycle_sec=prepared.cycle_sec)
        mode = self.modes[caller.mode]
        try:
            with mode.ledger_of(caller).transaction() as tx:
                out, released = self._write(tx.conn, tx, caller, run, judgment, charge)
        except ApiError:
            raise
        except RcjudgeError as exc:
            raise ApiError(422, public_detail(exc, task)) from None
        if released:
            self.emit(caller, "coefficients.published", {"judge_version": judge_name,
                                                         "cells_now_published": released})
        return out

    def _write(self, conn: Connection, tx: Any, caller: Caller, run: Run,
               judgment: Any, charge: bool) -> tuple[JudgmentResponse, int]:
        _, run_id = tx.resolve_run(run)
        if judgment.run_id != run_id:
            judgment = judgment.model_copy(update={"run_id": run_id})
        new = tx.record_judgment(judgment)
        j = S.judgments
        row = conn.execute(sa.select(j).where(j.c.run_id == run_id,
                                              j.c.judge_version == judgment.judge_version)).one()
        now = now_utc()
        charged, released = None, 0
        a = run.attribution
        o = T.owned
        conn.execute(insert_ignore(conn, o, ["key_id", "judgment_id"]).values(
            key_id=caller.key_id, judgment_id=row.judgment_id, first_at=now))
        task_key = self.modes[caller.mode].task_key(a.task.id)
        tier = self._tier(conn, task_key, a.task.tier)
        if new and tier is not None:
            if conn.dialect.name == "postgresql":  # copies and releases: one writer at a time
                conn.execute(sa.text(
                    "SELECT pg_advisory_xact_lock(hashtext('rcjudge-coefficients'))"))
            values = {"policy": f"{a.policy.vendor}/{a.policy.name}@{a.policy.version}",
                      "body": f"{a.body.arm}+{a.body.hand}", "task_family": task_family(
                          a.task.id), "tier": tier, "judge_version": row.judge_version,
                      "task_key": task_key}
            copy = self._counted_already(conn, run.bundle_hash, values)
            conn.execute(sa.insert(T.coefficients).values(
                judgment_id=row.judgment_id, **values, success=row.success,
                failure_class=row.failure_class,
                counts_against_policy=row.counts_against_policy, added_at=now,
                block=COPY_BLOCK if copy else None))
            released = self._publish(conn, row.judge_version)
        if new and charge:
            conn.execute(sa.insert(T.usage).values(
                key_id=caller.key_id, judgment_id=row.judgment_id, amount_cents=PRICE_CENTS,
                rights_granted=list(caller.rights), recorded_at=now))
            charged = ChargedTo(rcsn=None, cell_id=None, key_id=caller.key_id)
        return self._response(conn, row, charged), released

    @staticmethod
    def _counted_already(conn: Connection, bundle_hash: str, values: dict[str, str]) -> bool:
        """Whether another owner's judgment of the same bytes, by the same version, with the
        same cell and task, already has a row: then this one is a copy (``COPY_BLOCK``),
        kept for its ``table_row_id`` and never counted — the table counts runs of a
        robot, not how many owners sent their bytes."""
        c, j, r = T.coefficients, S.judgments, S.runs
        return conn.execute(sa.select(c.c.row_id).join(j, j.c.judgment_id == c.c.judgment_id)
                            .join(r, r.c.run_id == j.c.run_id)
                            .where(r.c.bundle_hash == bundle_hash,
                                   *(c.c[k] == v for k, v in values.items()))
                            .limit(1)).first() is not None

    def _check_task(self, caller: Caller, task_id: str) -> None:
        """A task the operator designated tier B is judged only for the keys it named
        (:meth:`designate_tier_b`); to any other key it is a task the catalog lacks, the
        same error word for word, so no answer tells it from a task the server lacks."""
        from judge.tasks import UnknownTaskError, unknown_message

        m = self.modes[caller.mode]
        key = m.task_key(task_id)
        d, g = T.tier_b_designations, T.tier_b_grants
        with m.engine.connect() as conn:
            hidden = conn.execute(sa.select(d.c.task_key).where(
                d.c.task_key == key, ~sa.exists(sa.select(g.c.key_id).where(
                    g.c.task_key == key, g.c.key_id == caller.key_id)))).first()
        if hidden is not None:
            raise UnknownTaskError(unknown_message(task_id))

    @staticmethod
    def _tier(conn: Connection, task_key: str, declared: str) -> str | None:
        """The row's tier in the table: the operator's B list decides, never the caller.

        A task the operator designated is ``B`` whatever the caller says; a caller's own
        ``B`` on an undesignated task keeps its run out of the table (None), so it can
        neither be published as tier A against the caller's wish nor pad a tier-B cell.
        """
        d = T.tier_b_designations
        if conn.execute(sa.select(d.c.task_key).where(d.c.task_key == task_key)).first():
            return "B"
        return None if declared == "B" else declared

    def designate_tier_b(self, task_ids: Iterable[str], mode: str = "live",
                         keys: Iterable[str] = ()) -> int:
        """The operator marks tasks tier B and names the keys that may judge them (CLI
        ``rcjudge api tier-b TASK… --key KEY_ID…``); the count of newly designated tasks.

        Naming a task again adds its keys. Every other key is answered for the task as for
        one the catalog lacks (:meth:`_check_task`).

        Raises:
            ApiError: a key that is not a key of ``mode`` (422; nothing written).
        """
        keys = list(dict.fromkeys(keys))
        k = T.api_keys
        with self.modes["live"].engine.connect() as conn:
            known = set(conn.execute(sa.select(k.c.key_id).where(
                k.c.key_id.in_(keys), k.c.mode == mode)).scalars())
        for key_id in keys:
            if key_id not in known:
                raise ApiError(422, f"key {key_id!r}: no such key in {mode} mode",
                               param="key")
        m, d, g, added = self.modes[mode], T.tier_b_designations, T.tier_b_grants, 0
        with m.write() as conn, conn.begin():
            for task_id in task_ids:
                key = m.task_key(task_id)
                if not conn.execute(sa.select(d.c.task_key).where(d.c.task_key == key)).first():
                    conn.execute(d.insert().values(task_key=key, designated_at=now_utc()))
                    added += 1
                for key_id in keys:
                    conn.execute(insert_ignore(conn, g, ["task_key", "key_id"]).values(
                        task_key=key, key_id=key_id, granted_at=now_utc()))
        return added

    def _publish(self, conn: Connection, judge_version: str) -> int:
        """Release what can be published of the version's pending rows; cells it grew.

        One block per call (:func:`judge.api.coefficients.release`), in the caller's
        transaction, under the PostgreSQL advisory lock :meth:`_write` took (two writers
        never release the same pending rows two ways). A row's owners, for the owner
        rule, are the names of every key that recorded a run of the row's bytes
        (:meth:`owner_names`: from the live key table, whatever the mode).
        """
        from judge.api.coefficients import as_row, release

        c, j, r = T.coefficients, S.judgments, S.runs
        pending = conn.execute(sa.select(c).where(c.c.judge_version == judge_version,
                                                  c.c.cell_policy.is_(None),
                                                  c.c.block.is_(None))
                               .order_by(c.c.row_id)).all()
        same = r.alias("same_bytes")
        holders: dict[int, set[str]] = {}
        for row_id, owner in conn.execute(
                sa.select(c.c.row_id, same.c.owner)
                .join(j, j.c.judgment_id == c.c.judgment_id).join(r, r.c.run_id == j.c.run_id)
                .join(same, same.c.bundle_hash == r.c.bundle_hash)
                .where(c.c.row_id.in_([p.row_id for p in pending]),
                       same.c.owner != S.LOCAL_OWNER)):
            holders.setdefault(row_id, set()).add(owner)
        names = self.owner_names({o for v in holders.values() for o in v})
        rows = [as_row(p).with_owners(names[o] for o in holders.get(p.row_id, ()))
                for p in pending]
        labels = release(rows, range(len(rows)))
        if not labels:
            return 0
        block = (conn.execute(sa.select(sa.func.max(c.c.block))).scalar() or 0) + 1
        for i, (policy, body, family) in labels.items():
            conn.execute(sa.update(c).where(c.c.row_id == pending[i].row_id).values(
                block=block, cell_policy=policy, cell_body=body, cell_family=family))
        return len(set(labels.values()))

    def owner_names(self, key_ids: Iterable[str]) -> dict[str, str]:
        """key id -> the name of its key in the live key table (where keys of both modes
        live); a key id not there stands for itself. The coefficients' owner rule counts
        owners by name (docs/coefficients.md)."""
        key_ids = set(key_ids)
        k = T.api_keys
        with self.modes["live"].engine.connect() as conn:
            found = dict(conn.execute(sa.select(k.c.key_id, k.c.name).where(
                k.c.key_id.in_(key_ids))).all()) if key_ids else {}
        return {x: found.get(x, x) for x in key_ids}

    @staticmethod
    def _response(conn: Connection, row: Any, charged: ChargedTo | None) -> JudgmentResponse:
        c = T.coefficients
        cf = conn.execute(sa.select(c.c.row_id).where(
            c.c.judgment_id == row.judgment_id)).scalar()
        return JudgmentResponse(
            judgment_id=f"jd_{row.judgment_id}", run_id=row.run_id, attempt=row.attempt,
            success=row.success, failure_class=row.failure_class,
            counts_against_policy=row.counts_against_policy,
            attempt_confidence=row.attempt_confidence,
            success_confidence=row.success_confidence, charged_to=charged,
            judge_version=row.judge_version,
            table_row_id=None if cf is None else f"cf_{cf}")

    # --- metering -------------------------------------------------------------------
    def usage(self, caller: Caller, cursor: str | None = None,
              limit: int = 50) -> dict[str, Any]:
        """The caller's charges: count and exact sum of all, and one page of the lines.

        Lines go oldest first; ``cursor`` is the ``next_cursor`` of the page before
        (``us_<n>``).
        """
        self.require(caller, "usage:read")
        after = 0
        if cursor is not None:
            head, _, num = cursor.partition("_")
            if head != "us" or not num.isdigit() or len(num) > 18:
                raise ApiError(422, f"cursor {cursor!r}: not a usage cursor (us_<n>)",
                               param="cursor")
            after = int(num)
        u = T.usage
        with self.modes[caller.mode].engine.connect() as conn:
            calls, cents = conn.execute(sa.select(
                sa.func.count(), sa.func.coalesce(sa.func.sum(u.c.amount_cents), 0))
                .where(u.c.key_id == caller.key_id)).one()
            rows = conn.execute(sa.select(u.c.usage_id, u.c.judgment_id, u.c.amount_cents,
                                          u.c.rights_granted, u.c.recorded_at)
                                .where(u.c.key_id == caller.key_id, u.c.usage_id > after)
                                .order_by(u.c.usage_id).limit(limit + 1)).all()
        lines = [{"judgment_id": f"jd_{r.judgment_id}", "amount_cents": r.amount_cents,
                  "rights_granted": list(r.rights_granted), "recorded_at": iso(r.recorded_at)}
                 for r in rows[:limit]]
        more = len(rows) > limit
        return {"key_id": caller.key_id, "calls": int(calls), "amount_cents": int(cents),
                "amount_usd": cents_to_usd(int(cents)),
                "price_per_call_usd": cents_to_usd(PRICE_CENTS), "lines": lines,
                "next_cursor": f"us_{rows[limit - 1].usage_id}" if more else None}


def public_detail(exc: Exception, task: dict[str, Any]) -> str:
    """An error's first line as a caller may see it: no server paths, no tier-B task id."""
    from judge.config import configs_dir

    detail = str(exc).splitlines()[0].replace(str(configs_dir()), "configs")
    if task.get("tier") == "B" and task.get("id"):
        detail = detail.replace(str(task["id"]), "<tier-B task>")
    return detail


def cents_to_usd(cents: int) -> str:
    """Exact dollars of a whole number of cents: ``120`` -> ``"1.20"``."""
    return f"{cents // 100}.{cents % 100:02d}"


def task_family(task_id: str) -> str:
    """The coefficients cell's task family: the task id without its last part."""
    parts = task_id.split(".")
    return ".".join(parts[:-1]) if len(parts) > 1 else task_id


def validate_request(doc: Any) -> JudgmentRequest:
    """The request body as a :class:`JudgmentRequest`; 422 naming every missing field."""
    from pydantic import ValidationError

    from rcjudge.errors import describe_validation

    if not isinstance(doc, dict):
        raise ApiError(422, f"request body: expected a JSON object, got {type(doc).__name__}")
    if missing := missing_attribution(doc):
        raise ApiError(422, f"request: missing {len(missing)} required attribution field(s): "
                       + ", ".join(missing), missing=missing,
                       invalid_params=[{"name": m, "reason": "missing"} for m in missing])
    try:
        return JudgmentRequest.model_validate(doc)
    except ValidationError as exc:
        params = [{"name": ".".join(map(str, e["loc"])) or "(request body)", "reason": e["msg"]}
                  for e in exc.errors()]
        raise ApiError(422, f"request: {describe_validation(exc)}",
                       invalid_params=params) from None
