"""``rcjudge bench call|batch``: the per-call stage table and batch throughput of a judge.

``bench call``: single calls of a judge version over the bundles of a folder, each stage
timed — intake, frames (decode, contacts, sampling), each model's questions, the three
models together, vote, ledger write — as p50/p90/p99 beside the spec's targets
(``/spec/judge_api.md``: 40 ms, 1.2 s, 6 s and $0.13, 10 ms, 25 ms; $0.181 a call), with
the CPU-seconds (``time.process_time`` over the whole call, every thread of this process),
the GPU-seconds (the judgment's ``cost.gpu_s``) and the cost of both at
``configs/pricing.yaml``'s prices. One warm-up call first, not counted. Ledger writes go
to a fresh SQLite file per pass over the folder (a ledger takes each bundle once).

``bench batch``: the same judge over the same bundles, sequential loop (one process, the
models loaded once) against ``run_batch`` on a local Ray: throughput at saturation
(bundles/hour; Ray's after its models loaded) and latency at concurrency 1 (seconds per
bundle with one bundle at a time: the loop's mean call, Ray with ``max_in_flight=1``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judge.errors import JudgeError
from models.base import Backend

# the spec's per-call targets (docs/performance.md): seconds, and dollars per call
TARGETS_S = {"intake": 0.040, "frames": 1.2, "models": 6.0, "vote": 0.010, "ledger": 0.025}
TARGET_MODELS_USD = 0.13
TARGET_CALL_USD = 0.181


class BenchError(JudgeError, ValueError):
    """A bench command cannot run as asked (no bundles, a count out of range)."""


class _Timed(Backend):
    """A backend that adds up the seconds its ``score`` calls take."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner.spec)
        self.inner, self.seconds, self.usd = inner, 0.0, 0.0

    def load(self) -> None:
        self.inner.load()

    def costed_score(self, requests):
        t0 = time.perf_counter()
        out, seconds, usd = self.inner.costed_score(requests)
        self.seconds += time.perf_counter() - t0
        self.usd += sum(usd)  # a served model's token charges
        return out, seconds, usd

    def score(self, requests):
        return self.costed_score(requests)[0]

    def answer_mass(self, request) -> float:
        return self.inner.answer_mass(request)

    def close(self) -> None:
        self.inner.close()


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p90, p99 (numpy's linear interpolation between order statistics)."""
    v = np.asarray(values, dtype=float)
    return {f"p{q}": float(np.percentile(v, q)) for q in (50, 90, 99)}


def measure_calls(version, uris: list[str], repeats: int, workdir: Path) -> list[dict]:
    """One sample per call: stage seconds, CPU-seconds, GPU-seconds, cost."""
    from judge.ensemble.judge import Judge, admit, prepare_admitted, pricing
    from judge.ledgers.records import Run
    from judge.ledgers.store import Ledger
    from models.registry import create_backend

    backends = [_Timed(create_backend(m.spec())) for m in version.models]
    for b in backends:
        b.load()
    judge = Judge(version, backends=backends)
    price = pricing()
    names = [m.name for m in version.models]
    samples: list[dict] = []
    try:
        judge.judge(uris[0])  # warm-up, not counted
        for k in range(repeats):
            with Ledger.open(f"sqlite:///{workdir / f'pass-{k}.db'}") as ledger:
                for uri in uris:
                    for b in backends:
                        b.seconds = b.usd = 0.0
                    c0 = time.process_time()
                    p = prepare_admitted(admit(uri), version)
                    j = judge.judge_prepared(p)
                    t0 = time.perf_counter()
                    ledger.record(Run(run_id=p.run_id, bundle_uri=p.uri,
                                      bundle_hash=p.bundle_hash, attribution=p.attribution,
                                      duration_s=p.duration_s, cycle_sec=p.cycle_sec), j)
                    ledger_s = time.perf_counter() - t0
                    cpu_s = time.process_time() - c0
                    t = j.timings
                    stages = {"intake": t.intake_s, "frames": t.frames_s,
                              **{f"model {n}": b.seconds for n, b in zip(names, backends,
                                                                          strict=True)},
                              "models": t.models_s, "vote": t.vote_s, "ledger": ledger_s}
                    gpu_s, served_usd = j.cost.gpu_s, sum(b.usd for b in backends)
                    local_s = max(0.0, t.models_s - sum(  # the in-process models' part
                        b.seconds for b, m in zip(backends, version.models, strict=True)
                        if m.endpoint is not None))
                    usd = (gpu_s * price["gpu_hour_usd"] + cpu_s * price["cpu_hour_usd"]
                           ) / 3600 + served_usd
                    models_usd = (gpu_s * price["gpu_hour_usd"] + (
                        0.0 if gpu_s else local_s * price["cpu_hour_usd"])) / 3600 + served_usd
                    samples.append({"stages": stages, "cpu_s": cpu_s, "gpu_s": gpu_s,
                                    "usd": usd, "models_usd": models_usd})
    finally:
        judge.close()
    return samples


def summarize(samples: list[dict], judge_version: str) -> dict[str, Any]:
    """Per-stage percentiles beside the targets; CPU/GPU seconds and cost per call."""
    stages = list(samples[0]["stages"])
    rows = []
    for s in stages:
        pct = percentiles([x["stages"][s] for x in samples])
        target = TARGETS_S.get(s)
        rows.append({"stage": s, **{k: round(v, 6) for k, v in pct.items()},
                     "target_s": target,
                     "p50_within_target": None if target is None else pct["p50"] <= target})
    per_call = {k: {q: round(v, 8) for q, v in percentiles([x[k] for x in samples]).items()}
                for k in ("cpu_s", "gpu_s", "usd", "models_usd")}
    return {"judge_version": judge_version, "calls": len(samples), "stages": rows,
            "per_call": per_call, "target_models_usd": TARGET_MODELS_USD,
            "target_call_usd": TARGET_CALL_USD,
            "total_p50_s": round(float(np.percentile(
                [sum(v for k, v in x["stages"].items() if not k.startswith("model "))
                 for x in samples], 50)), 6)}


def _ms(s: float) -> str:
    if s < 0.01:
        return f"{1000 * s:.2f} ms"
    return f"{1000 * s:.1f} ms" if s < 1 else f"{s:.2f} s"


def markdown(summary: dict) -> str:
    """The stage table and the per-call resources, as markdown."""
    lines = [f"judge `{summary['judge_version']}`, {summary['calls']} calls",
             "", "| stage | p50 | p90 | p99 | spec target |", "| --- | --- | --- | --- | --- |"]
    for r in summary["stages"]:
        target = "" if r["target_s"] is None else f"~{_ms(r['target_s'])}"
        if r["stage"] == "models":
            target += f" · ${summary['target_models_usd']}"
        lines.append(f"| {r['stage']} | {_ms(r['p50'])} | {_ms(r['p90'])} | {_ms(r['p99'])} | "
                     f"{target} |")
    pc = summary["per_call"]
    lines += ["", "| per call | p50 | p90 | p99 | spec |", "| --- | --- | --- | --- | --- |",
              f"| CPU-seconds | {pc['cpu_s']['p50']:.4f} | {pc['cpu_s']['p90']:.4f} | "
              f"{pc['cpu_s']['p99']:.4f} | |",
              f"| GPU-seconds | {pc['gpu_s']['p50']:.4f} | {pc['gpu_s']['p90']:.4f} | "
              f"{pc['gpu_s']['p99']:.4f} | |",
              f"| cost of the models (the judgment's estimate: model seconds × price) | "
              f"${pc['models_usd']['p50']:.8f} | "
              f"${pc['models_usd']['p90']:.8f} | ${pc['models_usd']['p99']:.8f} | "
              f"${summary['target_models_usd']} |",
              f"| cost of the call (measured CPU-seconds + GPU-seconds × price) | "
              f"${pc['usd']['p50']:.8f} | "
              f"${pc['usd']['p90']:.8f} | ${pc['usd']['p99']:.8f} | "
              f"${summary['target_call_usd']} |"]
    return "\n".join(lines)


def chart(summary: dict, path: Path) -> None:
    """A PNG: p50 per stage (bar) with p90 and p99 (ticks), the spec's target (diamond)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["stages"]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    y = np.arange(len(rows))
    ax.barh(y, [max(r["p50"], 1e-6) for r in rows], color="#4c72b0", label="p50")
    ax.plot([r["p90"] for r in rows], y, "|", color="black", markersize=12, label="p90")
    ax.plot([r["p99"] for r in rows], y, "|", color="#c44e52", markersize=12, label="p99")
    ty = [(i, r["target_s"]) for i, r in enumerate(rows) if r["target_s"] is not None]
    ax.plot([t for _, t in ty], [i for i, _ in ty], "D", color="#55a868", label="spec target")
    ax.set_yticks(y, [r["stage"] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("seconds per call (log)")
    ax.set_title(f"single call, judge {summary['judge_version']} ({summary['calls']} calls)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _bundles(folder: str) -> list[str]:
    from judge.batch.sources import resolve_sources
    from judge.bundle.manifest import claimed_bundle_hash

    uris = [u for u in resolve_sources(folder) if claimed_bundle_hash(u)]
    if not uris:
        raise BenchError(f"--bundles {folder}: no bundle with a readable manifest")
    return uris


def bench_call(judge: str, bundles: str, repeats: int = 1, out: str | None = None
               ) -> dict[str, Any]:
    """Run ``bench call``; writes ``stages.md`` and ``stages.png`` under ``out`` if given."""
    from judge.ensemble.version import load_judge_version

    if repeats < 1:
        raise BenchError(f"--repeats {repeats}: expected at least 1")
    version = load_judge_version(judge)
    uris = _bundles(bundles)
    with tempfile.TemporaryDirectory() as tmp:
        summary = summarize(measure_calls(version, uris, repeats, Path(tmp)), version.name)
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "stages.md").write_text(markdown(summary) + "\n")
        chart(summary, Path(out) / "stages.png")
        summary["written"] = [str(Path(out) / "stages.md"), str(Path(out) / "stages.png")]
    return summary


def bench_batch(judge: str, bundles: str) -> dict[str, Any]:
    """Sequential loop against ``run_batch`` on a local Ray, same judge and bundles."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from judge.batch.place import start_ray
    from judge.batch.run import run_batch
    from judge.ensemble.judge import Judge, prepare
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.records import Run
    from judge.ledgers.store import Ledger

    version = load_judge_version(judge)
    uris = _bundles(bundles)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        j = Judge(version)
        calls = []
        with Ledger.open(f"sqlite:///{tmp / 'seq.db'}") as ledger:
            t0 = time.perf_counter()
            for uri in uris:
                c0 = time.perf_counter()
                p = prepare(uri, version)
                judgment = j.judge_prepared(p)
                ledger.record(Run(run_id=p.run_id, bundle_uri=uri, bundle_hash=p.bundle_hash,
                                  attribution=p.attribution, duration_s=p.duration_s,
                                  cycle_sec=p.cycle_sec), judgment)
                calls.append(time.perf_counter() - c0)
            seq_s = time.perf_counter() - t0
        j.close()
        was_up = ray.is_initialized()
        start_ray(None)
        try:
            with Ledger.open(f"sqlite:///{tmp / 'ray.db'}") as ledger:
                sat = run_batch(uris, version, ledger, progress=False)
            with Ledger.open(f"sqlite:///{tmp / 'ray1.db'}") as ledger:
                one = run_batch(uris, version, ledger, max_in_flight=1, progress=False)
        finally:
            if not was_up:
                ray.shutdown()
    n = len(uris)
    return {"judge_version": version.name, "bundles": n, "cpus": os.cpu_count(),
            "sequential": {"bundles_per_hour": round(3600 * n / seq_s),
                           "latency_s": round(float(np.mean(calls)), 4)},
            "ray": {"bundles_per_hour": round(3600 * sat.judged / sat.seconds),
                    "latency_s": round(one.seconds / max(one.judged, 1), 4),
                    "startup_s": round(sat.startup_s, 2), "plan": sat.plan,
                    "failed": len(sat.failed) + len(one.failed)}}


def format_batch(r: dict) -> str:
    s, q = r["sequential"], r["ray"]
    return "\n".join([
        f"judge {r['judge_version']}, {r['bundles']} bundles, {r['cpus']} CPUs",
        "| | throughput at saturation | latency at concurrency 1 |", "| --- | --- | --- |",
        f"| sequential loop | {s['bundles_per_hour']:,} bundles/h | {s['latency_s']} s |",
        f"| Ray (run_batch) | {q['bundles_per_hour']:,} bundles/h | {q['latency_s']} s |",
        f"Ray model start-up (not in its throughput): {q['startup_s']} s"])


def cmd_call(args) -> int:
    if getattr(args, "in_flight", None):
        from bench.served import bench_served, format_served

        try:
            loads = [int(k) for k in args.in_flight.split(",")]
        except ValueError:
            raise BenchError(f"--in-flight {args.in_flight}: expected numbers separated by "
                             "commas, e.g. 1,4,16") from None
        result = bench_served(args.judge, args.bundles, loads, args.baseline)
        print(json.dumps(result, indent=2) if args.json else format_served(result))
        return 0
    if getattr(args, "baseline", None):
        raise BenchError("--baseline: only with --in-flight (a version with served models)")
    summary = bench_call(args.judge, args.bundles, args.repeats, args.out)
    print(json.dumps(summary, indent=2) if args.json else markdown(summary))
    return 0


def cmd_batch(args) -> int:
    result = bench_batch(args.judge, args.bundles)
    print(json.dumps(result, indent=2) if args.json else format_batch(result))
    return 0
