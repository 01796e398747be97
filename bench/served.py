"""``rcjudge bench call --in-flight 1,4,16 [--baseline W]``: a served judge's latency and cost.

A judge version whose models are served (backend openai) is measured at several loads: at
``k`` in flight, ``k`` judgments run at once (threads sharing one loaded judge) and each
served model keeps at most ``k`` requests in flight (its ``endpoint.max_concurrency`` set to
``k`` for the run). Per load: p50/p95 of a judgment's latency (the model stage: every
question to the three models, ``timings.models_s``), judgments a second, and the cost of a
judgment as recorded (``cost.usd``: the CPU seconds of intake, decode and vote at
``configs/pricing.yaml`` plus the servers' token usage × the endpoint's prices). Bundles are
prepared (intake, decode, frames) once beforehand and shared, so every load and the baseline
see the same frames; one warm-up judgment first, not counted.

``--baseline W``: an in-process version (same frames and sampling settings) judged one
bundle at a time on the same prepared bundles; each load's figures are then also given as
ratios served / in-process.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from bench.call import BenchError, _bundles


def _with_concurrency(version, k: int):
    models = [m.model_copy(update={"endpoint": m.endpoint.model_copy(
        update={"max_concurrency": k})}) if m.endpoint is not None else m
        for m in version.models]
    return version.model_copy(update={"models": tuple(models)})


def _measure(judge, prepared: list, k: int) -> dict[str, Any]:
    """``prepared`` judged with ``k`` at a time: latency percentiles, rate, cost."""
    judge.judge_prepared(prepared[0])  # warm-up, not counted
    t0 = time.perf_counter()
    with ThreadPoolExecutor(k) as pool:
        done = list(pool.map(judge.judge_prepared, prepared))
    wall = time.perf_counter() - t0
    lat = np.array([j.timings.models_s for j in done])
    usd = np.array([j.cost.usd for j in done])
    return {"in_flight": k, "judgments": len(done), "p50_s": float(np.percentile(lat, 50)),
            "p95_s": float(np.percentile(lat, 95)), "per_s": len(done) / wall,
            "usd": float(usd.mean())}


def bench_served(judge: str, bundles: str, in_flight: list[int],
                 baseline: str | None = None) -> dict[str, Any]:
    """The served version ``judge`` at each load of ``in_flight``, beside ``baseline``."""
    from judge.ensemble.judge import Judge, prepare
    from judge.ensemble.version import load_judge_version

    version = load_judge_version(judge)
    if not any(m.endpoint is not None for m in version.models):
        raise BenchError(f"--in-flight: judge version {version.name!r} has no served model "
                         "(backend openai)")
    if any(k < 1 for k in in_flight):
        raise BenchError(f"--in-flight {in_flight}: expected numbers of at least 1")
    base = load_judge_version(baseline) if baseline else None
    if base is not None and (base.frames, base.sampling_settings()) != (
            version.frames, version.sampling_settings()):
        raise BenchError(f"--baseline {base.name}: its frames or sampling settings differ from "
                         f"{version.name}'s, so the two would not judge the same frames")
    prepared = [prepare(u, version) for u in _bundles(bundles)]
    out: dict[str, Any] = {"judge_version": version.name, "bundles": len(prepared),
                           "served": []}
    if base is not None:
        j = Judge(base)
        try:
            out["baseline"] = {"judge_version": base.name, **_measure(j, prepared, 1)}
        finally:
            j.close()
    for k in in_flight:
        j = Judge(_with_concurrency(version, k))
        try:
            row = _measure(j, prepared, k)
        finally:
            j.close()
        if base is not None:
            b = out["baseline"]
            row["ratio"] = {q: row[q] / b[q] if b[q] else None
                            for q in ("p50_s", "p95_s", "per_s", "usd")}
        out["served"].append(row)
    return out


def format_served(r: dict) -> str:
    """The table: one row per load (and the baseline), ratios when there is a baseline."""
    lines = [f"judge {r['judge_version']}, {r['bundles']} bundles (prepared once; latency: the "
             "model stage of one judgment)", "",
             "| run | in flight | p50 | p95 | judgments/s | $ / judgment |"
             + (" p50 × | p95 × | rate × | $ × |" if "baseline" in r else ""),
             "| --- " * (6 + 4 * ("baseline" in r)) + "|"]
    if "baseline" in r:
        b = r["baseline"]
        lines.append(f"| in-process {b['judge_version']} | 1 | {b['p50_s']:.3f} s | "
                     f"{b['p95_s']:.3f} s | {b['per_s']:.2f} | {b['usd']:.8f} |"
                     " 1 | 1 | 1 | 1 |")
    for s in r["served"]:
        row = (f"| served | {s['in_flight']} | {s['p50_s']:.3f} s | {s['p95_s']:.3f} s | "
               f"{s['per_s']:.2f} | {s['usd']:.8f} |")
        if "ratio" in s:
            row += "".join(f" {v:.2f} |" if v is not None else " – |" for v in s["ratio"].values())
        lines.append(row)
    return "\n".join(lines)
