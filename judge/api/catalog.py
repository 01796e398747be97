"""What the Judge API reads and writes besides judging: the service's other endpoints.

Judgments, runs, operator labels, the calibration set, the taxonomy, judge versions,
re-judge jobs, coefficients and attestations, as methods of :class:`CatalogMixin` (mixed
into :class:`judge.api.service.JudgeService`). A key sees only its own runs (``runs.owner``
is its key id: the same bytes from two keys are two runs, issue 36) and the judgments its
calls wrote of them (``api_owned``), in its own mode's database; every read and write
here goes through the key's ledger (``_Mode.ledger_of``) or names the owner. A tier-B
task id is never returned, and never read: every query here names its columns and none
reads ``runs.task_id`` (the API's database role has no privilege on it, ledger revision
0006); a run's task comes from ``runs.public_task_id``, NULL on tier B.
"""

from __future__ import annotations

import secrets
from typing import Any

import sqlalchemy as sa

from judge.api import tables as T
from judge.api.coefficients import MIN_N, K, published_table
from judge.api.coefficients import table as coefficient_table
from judge.api.common import iso
from judge.api.errors import ApiError
from judge.api.protocol import (
    Attestation,
    CalibrationRow,
    CoefficientCell,
    JudgeModel,
    JudgeVersionResponse,
    LabelRequest,
    LabelResponse,
    RejudgeJob,
    RejudgeRequest,
    RunResponse,
    TaskOut,
    TaxonomyClass,
    TaxonomyFamily,
    TaxonomyResponse,
)
from judge.ensemble.taxonomy import load_taxonomy
from judge.ledgers import schema as S
from judge.ledgers.errors import LedgerError
from judge.ledgers.labels import check_label
from judge.ledgers.records import Label
from judge.ledgers.store import run_columns

PAGE = 100


def judgment_number(judgment_id: str) -> int:
    """``jd_12`` -> 12; ApiError 404 for anything else."""
    head, _, num = judgment_id.partition("_")
    if head != "jd" or not num.isdigit() or len(num) > 18:
        raise ApiError(404, f"judgment {judgment_id!r}: no such judgment (ids read jd_<n>)")
    return int(num)


def run_response(row: Any) -> RunResponse:
    """A ``runs`` row read without ``task_id`` (:data:`RUN_COLUMNS`) as the API shows it."""
    from judge.api.protocol import Body, Policy

    return RunResponse(
        run_id=row.run_id, bundle_hash=row.bundle_hash,
        policy=Policy(vendor=row.policy_vendor, name=row.policy_name,
                      version=row.policy_version, checkpoint=row.policy_checkpoint),
        body=Body(arm=row.body_arm, hand=row.body_hand, calibrated_at=row.body_calibrated_at,
                  dof=row.body_dof, mount_h_mm=row.body_mount_h_mm),
        task=TaskOut(id=None if row.task_tier == "B" else row.public_task_id,
                     tier=row.task_tier),
        env=row.env, seed=row.seed, reset=(row.attribution_extra or {}).get("reset"),
        duration_s=row.duration_s, cycle_sec=row.cycle_sec, recorded_at=iso(row.recorded_at))


#: What the API reads of ``runs``: every column but the closed ``task_id``.
RUN_COLUMNS = run_columns(blind=True)


def checked_label(run_id: str, attempt: bool, success: bool, failure_class: str | None,
                  labeled_by: str, labeled_at: str | None) -> Label:
    """The label as ``rcjudge labels import`` checks a row (:func:`check_label`; now when
    ``labeled_at`` is None), else ApiError 422 naming every field at fault."""
    from judge.ledgers.store import _now

    got = check_label(run_id, attempt, success, failure_class, labeled_by,
                      labeled_at if labeled_at is not None else _now().isoformat())
    if isinstance(got, Label):
        return got
    raise ApiError(422, "; ".join(f"{e.field}: {e.message}" for e in got),
                   invalid_params=[{"name": e.field, "reason": e.message} for e in got])


class CatalogMixin:
    """Reads and writes of the other endpoints (needs ``modes``, ``require``, ``_response``)."""

    # --- judgments ----------------------------------------------------------------------
    def _owned_judgments(self, caller: Any) -> sa.Select:
        j, o, r = S.judgments, T.owned, S.runs
        return (sa.select(j).join(o, (o.c.judgment_id == j.c.judgment_id)
                                  & (o.c.key_id == caller.key_id))
                .join(r, (r.c.run_id == j.c.run_id) & (r.c.owner == caller.key_id)))

    def list_judgments(self, caller: Any, cursor: str | None, limit: int) -> dict[str, Any]:
        """The key's judgments, newest first, ``limit`` a page."""
        self.require(caller, "judgments:read")
        j = S.judgments
        stmt = self._owned_judgments(caller).order_by(j.c.judgment_id.desc()).limit(limit + 1)
        if cursor:
            stmt = stmt.where(j.c.judgment_id < judgment_number(cursor))
        with self.modes[caller.mode].engine.connect() as conn:
            rows = conn.execute(stmt).all()
            data = [self._response(conn, r, None) for r in rows[:limit]]
        more = len(rows) > limit
        return {"data": data, "next_cursor": data[-1].judgment_id if more else None}

    def get_judgment(self, caller: Any, judgment_id: str) -> Any:
        """One of the key's judgments; 404 for anyone else's."""
        self.require(caller, "judgments:read")
        n = judgment_number(judgment_id)
        with self.modes[caller.mode].engine.connect() as conn:
            row = conn.execute(self._owned_judgments(caller)
                               .where(S.judgments.c.judgment_id == n)).first()
            if row is None:
                raise ApiError(404, f"judgment {judgment_id!r}: no such judgment for this key")
            return self._response(conn, row, None)

    # --- runs -----------------------------------------------------------------------------
    def _owned_run_ids(self, conn: Any, caller: Any) -> sa.Select:
        r = S.runs
        return sa.select(r.c.run_id).where(r.c.owner == caller.key_id)

    def list_runs(self, caller: Any, cursor: str | None, limit: int) -> dict[str, Any]:
        """The key's runs, by run id."""
        self.require(caller, "runs:read")
        r = S.runs
        with self.modes[caller.mode].engine.connect() as conn:
            stmt = (sa.select(*RUN_COLUMNS)
                    .where(r.c.run_id.in_(self._owned_run_ids(conn, caller)))
                    .order_by(r.c.run_id).limit(limit + 1))
            if cursor:
                stmt = stmt.where(r.c.run_id > cursor)
            rows = conn.execute(stmt).all()
        data = [run_response(x) for x in rows[:limit]]
        return {"data": data, "next_cursor": data[-1].run_id if len(rows) > limit else None}

    def _owned_run(self, conn: Any, caller: Any, run_id: str) -> Any:
        r = S.runs
        row = conn.execute(sa.select(*RUN_COLUMNS).where(
            r.c.run_id == run_id, r.c.run_id.in_(self._owned_run_ids(conn, caller)))).first()
        if row is None:
            raise ApiError(404, f"run {run_id!r}: no such run for this key")
        return row

    def get_run(self, caller: Any, run_id: str) -> RunResponse:
        self.require(caller, "runs:read")
        with self.modes[caller.mode].engine.connect() as conn:
            return run_response(self._owned_run(conn, caller, run_id))

    # --- operator labels --------------------------------------------------------------
    def add_label(self, caller: Any, run_id: str, req: LabelRequest,
                  review: Any = None) -> tuple[bool, Any]:
        """Write one operator label of the key's run; (new?, the stored label).

        ``review`` (a :class:`judge.review.store.Review`): the review page's columns,
        written in the label's transaction."""
        from judge.review.store import write

        self.require(caller, "labels:write")
        label = checked_label(run_id, req.attempt, req.success, req.failure_class,
                              req.labeled_by, req.labeled_at)
        mode = self.modes[caller.mode]
        with mode.engine.connect() as conn:
            self._owned_run(conn, caller, run_id)
        ledger = mode.ledger_of(caller)
        new, label_id = write(ledger, label, review)
        stored = [s for s in ledger.labels(run_id) if s.label_id == label_id]
        if new:
            for row in self.calibration_set(caller, None, right="labels:write")["data"]:
                if row.run_id == run_id:
                    self.emit(caller, "calibration.disagreement", row.model_dump(mode="json"))
        return new, _label_out(stored[-1])

    def list_labels(self, caller: Any, run_id: str) -> dict[str, Any]:
        self.require(caller, "labels:read")
        mode = self.modes[caller.mode]
        with mode.engine.connect() as conn:
            self._owned_run(conn, caller, run_id)
        return {"data": [_label_out(s) for s in mode.ledger_of(caller).labels(run_id)]}

    def calibration_set(self, caller: Any, judge_version: str | None,
                        right: str = "labels:read") -> dict[str, Any]:
        """The key's judgments that disagree with their run's current label."""
        self.require(caller, right)
        mode = self.modes[caller.mode]
        with mode.engine.connect() as conn:
            owned = {r[0] for r in conn.execute(self._owned_judgments(caller)
                                                .with_only_columns(S.judgments.c.judgment_id))}
        rows = [r for r in mode.ledger_of(caller).calibration_set(judge_version)
                if r.judgment_id in owned]
        return {"data": [CalibrationRow(
            judgment_id=f"jd_{r.judgment_id}", run_id=r.run_id, judge_version=r.judge_version,
            attempt=r.attempt, success=r.success, failure_class=r.failure_class,
            label_attempt=r.label_attempt, label_success=r.label_success,
            label_failure_class=r.label_failure_class, attempt_disagrees=r.attempt_disagrees,
            success_disagrees=r.success_disagrees, class_disagrees=r.class_disagrees)
            for r in rows]}

    # --- taxonomy, judge versions ------------------------------------------------------
    def taxonomy(self, caller: Any) -> TaxonomyResponse:
        self.require(caller, "taxonomy:read")
        tax = load_taxonomy()
        return TaxonomyResponse(
            families=[TaxonomyFamily(name=k, description=v) for k, v in tax.families.items()],
            classes=[TaxonomyClass(name=k, family=k.partition(".")[0],
                                   counts_against_policy=v.counts_against_policy,
                                   description=v.description) for k, v in tax.classes.items()],
            exempt_count=len(tax.exempt), empty_class_counts_against_policy=True)

    def judge_versions(self, caller: Any) -> list[JudgeVersionResponse]:
        from judge.ensemble.version import version_names

        self.require(caller, "taxonomy:read")
        names = version_names()
        return [self.judge_version(caller, n) for n in names]

    def judge_version(self, caller: Any, name: str) -> JudgeVersionResponse:
        from judge.ensemble.version import load_judge_version
        from judge.errors import ConfigError

        self.require(caller, "taxonomy:read")
        try:
            v = load_judge_version(name) if "/" not in name else None
        except ConfigError as exc:
            raise ApiError(404, str(exc)) from None
        if v is None:
            raise ApiError(404, f"judge version {name!r}: no such judge version")
        recorded = self.modes[caller.mode].ledger.version_fingerprint(name)
        return JudgeVersionResponse(
            name=v.name, description=v.description,
            models=[JudgeModel(name=m.name, backend=m.backend) for m in v.models],
            fingerprint=recorded[0] if recorded else None)

    # --- coefficients -----------------------------------------------------------------
    def coefficients(self, caller: Any, **filters: str | None) -> dict[str, Any]:
        """The published cells covering ``filters`` (policy, body, task_family, tier,
        judge_version); a too narrow query gets the coarser cell that contains it."""
        from judge.api.coefficient_rates import Rectifier

        self.require(caller, "coefficients:read")
        c = T.coefficients
        stmt = sa.select(c).where(c.c.cell_policy.is_not(None))  # pending rows: not yet
        mode = self.modes[caller.mode]
        with mode.engine.connect() as conn:
            rows = conn.execute(stmt).all()
        return {"min_n": MIN_N, "k": K, "query": filters,
                "data": published_table(rows, rectify=Rectifier(mode.ledger), **filters)}

    # --- attestations -------------------------------------------------------------------
    def attestations(self, caller: Any) -> dict[str, Any]:
        self.require(caller, "attestations:read")
        a = T.attestations
        with self.modes["live"].engine.connect() as conn:
            rows = conn.execute(sa.select(a).order_by(a.c.issued_at, a.c.attestation_id)).all()
        return {"data": [_attestation(r) for r in rows]}

    def attestation(self, caller: Any, attestation_id: str) -> Attestation:
        self.require(caller, "attestations:read")
        a = T.attestations
        with self.modes["live"].engine.connect() as conn:
            row = conn.execute(sa.select(a).where(a.c.attestation_id == attestation_id)).first()
        if row is None:
            raise ApiError(404, f"attestation {attestation_id!r}: no such attestation")
        return _attestation(row)

    # --- re-judge jobs ------------------------------------------------------------------
    def start_rejudge(self, caller: Any, req: RejudgeRequest) -> RejudgeJob:
        """Queue a re-judge of the key's runs (or ``run_ids`` of them) with ``req.judge``."""
        self.require(caller, "rejudge:write")
        self.judge_for(req.judge)  # an unknown version is a 422 now, not a failed job
        mode = self.modes[caller.mode]
        r = S.runs
        with mode.engine.connect() as conn:
            stmt = sa.select(r.c.run_id).where(
                r.c.run_id.in_(self._owned_run_ids(conn, caller))).order_by(r.c.run_id)
            owned = [x[0] for x in conn.execute(stmt).all()]
        if req.run_ids is not None:
            unknown = sorted(set(req.run_ids) - set(owned))
            if unknown:
                raise ApiError(422, f"run_ids: no such run(s) for this key: "
                               f"{', '.join(unknown[:10])}", param="run_ids")
            owned = [x for x in owned if x in set(req.run_ids)]
        job_id = "rj_" + secrets.token_hex(8)
        from judge.ledgers.store import _now

        with mode.write() as conn, conn.begin():
            conn.execute(sa.insert(T.jobs).values(
                job_id=job_id, key_id=caller.key_id, kind="rejudge", status="queued",
                request={"judge": req.judge, "run_ids": owned},
                result={"judged": 0, "failed": []}, error=None, created_at=_now(),
                finished_at=None))
        self.pool.submit(self._run_rejudge, caller, job_id, req.judge, owned)
        return self.rejudge_job(caller, job_id, right="rejudge:write")

    def _run_rejudge(self, caller: Any, job_id: str, judge_name: str, run_ids: list[str]) -> None:
        from judge.ledgers.store import _now

        mode = self.modes[caller.mode]
        j = T.jobs
        with mode.write() as conn, conn.begin():
            conn.execute(sa.update(j).where(j.c.job_id == job_id).values(status="running"))
        judged, failed = 0, []
        for run_id in run_ids:
            try:  # a tier-B run cannot be re-judged here: the API cannot read its task
                run = mode.ledger_of(caller).get_run(run_id)
                self.judge_run(caller, run, judge_name, charge=False)
                judged += 1
            except LedgerError as exc:
                failed.append({"run_id": run_id, "detail": str(exc).splitlines()[0]
                               + "; re-judge it offline (rcjudge rejudge)"})
            except ApiError as exc:
                failed.append({"run_id": run_id, "detail": exc.detail})
            except Exception as exc:  # one run's failure costs only that run
                failed.append({"run_id": run_id, "detail": f"{type(exc).__name__}: {exc}"})
        with mode.write() as conn, conn.begin():
            conn.execute(sa.update(j).where(j.c.job_id == job_id).values(
                status="succeeded", result={"judged": judged, "failed": failed},
                finished_at=_now()))
        self.emit(caller, "rejudge.completed", {"job_id": job_id, "judge": judge_name,
                                                "judged": judged, "failed": len(failed)})

    def rejudge_job(self, caller: Any, job_id: str, right: str = "rejudge:read") -> RejudgeJob:
        self.require(caller, right)
        j = T.jobs
        with self.modes[caller.mode].engine.connect() as conn:
            row = conn.execute(sa.select(j).where(j.c.job_id == job_id, j.c.kind == "rejudge",
                                                  j.c.key_id == caller.key_id)).first()
        if row is None:
            raise ApiError(404, f"re-judge job {job_id!r}: no such job for this key")
        return RejudgeJob(job_id=row.job_id, status=row.status, judge=row.request["judge"],
                          runs=len(row.request["run_ids"]), judged=row.result["judged"],
                          failed=row.result["failed"], created_at=iso(row.created_at),
                          finished_at=iso(row.finished_at))


def aggregate_cells(rows: list[Any], min_n: int = MIN_N) -> list[CoefficientCell]:
    """Every published cell of ``rows`` (see :mod:`judge.api.coefficients`)."""
    return coefficient_table(rows, min_n)


def _label_out(s: Any) -> LabelResponse:
    lb = s.label
    return LabelResponse(label_id=s.label_id, run_id=lb.run_id, attempt=lb.attempt,
                         success=lb.success, failure_class=lb.failure_class,
                         labeled_by=lb.labeled_by, labeled_at=iso(lb.labeled_at))


def _attestation(r: Any) -> Attestation:
    return Attestation(attestation_id=r.attestation_id, subject=r.subject,
                       statement=r.statement, issued_by=r.issued_by,
                       issued_at=iso(r.issued_at))
