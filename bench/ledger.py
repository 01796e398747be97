"""Ledger write latency: ``Ledger.record(run, judgment)`` on SQLite and PostgreSQL.

    python -m bench.ledger [--n 1000] [--pg URL] [--json]

Per call: one transaction writing a run and its judgment (the spec's target for the
ledger step is 25 ms). Also timed: re-recording the same rows (idempotent no-ops)
and the same number of rows in one transaction. PostgreSQL runs in a scratch schema
that is dropped afterwards; it is skipped when the server is unreachable.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import tempfile
import time

from judge.api.protocol import Attribution
from judge.ensemble.judgment import Cost, Judgment, ModelAnswer, StageTimings
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger, make_engine

ATTRIBUTION = Attribution.model_validate({
    "policy": {"vendor": "lab", "name": "p", "version": "1", "checkpoint": "sha256:ab"},
    "body": {"arm": "xArm7", "hand": "parallel-jaw", "dof": 8, "mount_h_mm": 740,
             "calibrated_at": "2026-09-16"},
    "task": {"id": "tabletop.pick_place.cube_001", "tier": "A"}, "env": {"clutter": 1},
    "seed": 7})


def rows(prefix: str, n: int) -> list[tuple[Run, Judgment]]:
    out = []
    for i in range(n):
        rid, h = f"{prefix}-{i:06d}", secrets.token_hex(32)
        answers = tuple(ModelAnswer(model=m, p_attempt=0.9, p_success=0.3, p_attempt_raw=0.9,
                                    p_success_raw=0.3, failure_class="grasp.slip",
                                    p_failure_class=0.5) for m in "abc")
        out.append((Run(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h, attribution=ATTRIBUTION,
                        duration_s=6.0, cycle_sec=5.2),
                    Judgment(run_id=rid, bundle_uri=f"/b/{rid}", bundle_hash=h,
                             task_id="tabletop.pick_place.cube_001", judge_version="bench",
                             attempt=True, success=False, failure_class="grasp.slip",
                             counts_against_policy=True, attempt_confidence=0.9,
                             success_confidence=0.7, answers=answers, frames=8,
                             timings=StageTimings(intake_s=0.01, frames_s=0.2, models_s=1.0,
                                                  vote_s=0.0),
                             cost=Cost(gpu_s=0.0, cpu_s=1.2, usd=1e-5))))
    return out


def bench(url: str, n: int, schema: str | None = None) -> dict:
    with Ledger.open(url, schema=schema) as ledger:
        data = rows("a", n)
        lat = []
        for run, judgment in data:
            t = time.perf_counter()
            ledger.record(run, judgment)
            lat.append(time.perf_counter() - t)
        t = time.perf_counter()
        for run, judgment in data:
            ledger.record(run, judgment)
        again = time.perf_counter() - t
        t = time.perf_counter()
        with ledger.transaction() as tx:
            for run, judgment in rows("b", n):
                tx.record_run(run)
                tx.record_judgment(judgment)
        one_tx = time.perf_counter() - t
    lat.sort()
    return {"n": n, "record_total_s": round(sum(lat), 3),
            "p50_ms": round(statistics.median(lat) * 1e3, 2),
            "p95_ms": round(lat[int(0.95 * (n - 1))] * 1e3, 2),
            "max_ms": round(lat[-1] * 1e3, 2), "rerecord_noop_s": round(again, 3),
            "one_transaction_s": round(one_tx, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--pg", default="postgresql+psycopg://127.0.0.1:5432/test")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        result["sqlite"] = bench(f"sqlite:///{tmp}/ledger.db", args.n)
    schema = "rcj_bench_" + secrets.token_hex(3)
    try:
        engine = make_engine(args.pg)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    except Exception as exc:  # report and go on without PostgreSQL
        result["postgresql"] = f"skipped: {type(exc).__name__}: {exc}".splitlines()[0]
    else:
        try:
            result["postgresql"] = bench(args.pg, args.n, schema)
        finally:
            with engine.begin() as conn:
                conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
    print(json.dumps(result, indent=2) if args.json else "\n".join(
        f"{k:>10}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
