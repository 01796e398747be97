"""Bounded load test of the Judge API on loopback: requests/s and p50/p99 latency.

    python -m bench.api_load [--seconds 10] [--clients 4] [--max-requests 2000] [--json]

A real uvicorn server in this process (``judge.api.server.running``) on SQLite, with the
fake backend (scripted answers, no model): what is measured is the API around the
models — intake, decode of the sampled frames, vote, the one-transaction write, metering
and idempotency. Each phase stops by itself after ``--seconds`` or ``--max-requests``.

Phases, each against its baseline in the same run:

* ``POST /v1/judgments`` (a new Idempotency-Key each call, over a pool of synthetic
  bundles) vs ``JudgeService.judge_now`` called directly (no HTTP, one thread);
* ``GET /v1/coefficients`` vs ``GET /v1/keys/me`` (the cheapest authenticated call).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def fake_judge(name: str) -> Any:
    """Three scripted models (no torch): the API's cost without the models'."""
    from judge.ensemble.judge import Judge
    from judge.ensemble.version import JudgeVersion
    from models.base import BackendSpec
    from models.fake import FakeBackend

    version = JudgeVersion(name=name, models=[
        {"name": f"m{i}", "backend": "fake",
         "options": {"script": {"attempt": 0.9, "success": 0.3,
                                "failure_class": "grasp.slip"}}} for i in range(3)])
    backends = [FakeBackend(BackendSpec(name=m.name, backend="fake", options=m.options))
                for m in version.models]
    for b in backends:
        b.load()
    return Judge(version, backends=backends)


def request_for(bundle: Path, judge: str) -> dict[str, Any]:
    attribution = json.loads((bundle / "attribution.json").read_text())
    doc = {k: v for k, v in attribution.items() if v is not None}
    return {**doc, "bundle_uri": str(bundle), "judge": judge}


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of ``xs``."""
    s = sorted(xs)
    return s[min(len(s), max(1, math.ceil(q / 100 * len(s)))) - 1]


def summary(name: str, lat: list[float], wall: float, errors: int) -> dict[str, Any]:
    return {"phase": name, "requests": len(lat), "errors": errors,
            "requests_per_s": round(len(lat) / wall, 1) if wall else 0.0,
            "p50_ms": round(1000 * percentile(lat, 50), 2) if lat else None,
            "p99_ms": round(1000 * percentile(lat, 99), 2) if lat else None,
            "mean_ms": round(1000 * statistics.fmean(lat), 2) if lat else None}


def load(name: str, call: Callable[[int], bool], clients: int, seconds: float,
         max_requests: int) -> dict[str, Any]:
    """Run ``call(i)`` from ``clients`` threads until the time or request budget is spent."""
    lat: list[float] = []
    errors = 0
    lock = threading.Lock()
    counter = iter(range(max_requests))
    stop = time.perf_counter() + seconds

    def worker() -> None:
        nonlocal errors
        while time.perf_counter() < stop:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.perf_counter()
            ok = call(i)
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                errors += 0 if ok else 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(name, lat, time.perf_counter() - t0, errors)


def run(seconds: float, clients: int, max_requests: int, bundles: int) -> list[dict[str, Any]]:
    import httpx

    from bench.synth import SynthConfig, write_synthetic_set
    from judge.api.auth import RIGHTS
    from judge.api.routes import create_app
    from judge.api.server import running
    from judge.api.service import JudgeService
    from judge.api.service import validate_request as parse

    with tempfile.TemporaryDirectory(prefix="rcjudge-load-") as tmp:
        paths = write_synthetic_set(Path(tmp) / "bundles", bundles,
                                    SynthConfig(seed=5, width=96, height=64, fps=10))
        docs = [request_for(p, "fake-v1") for p in paths]
        service = JudgeService(f"sqlite:///{tmp}/load.db", judges=fake_judge,
                               bundle_roots=[tmp])
        key = service.create_key("load", "live", sorted(RIGHTS))[0]
        caller = service.authenticate(f"Bearer {key}")
        auth = {"Authorization": f"Bearer {key}"}
        results = []
        try:
            def direct(i: int) -> bool:
                service.judge_now(caller, parse(docs[i % len(docs)]))
                return True

            results.append(load("judge_now (no HTTP, baseline)", direct, 1, seconds,
                                max_requests))
            with running(create_app(service)) as url:
                local = threading.local()

                def client() -> httpx.Client:
                    if not hasattr(local, "c"):
                        local.c = httpx.Client(base_url=url, timeout=60)
                    return local.c

                def post(i: int) -> bool:
                    r = client().post("/v1/judgments", json=docs[i % len(docs)],
                                      headers={**auth, "Idempotency-Key": f"load-{i}"})
                    return r.status_code == 200

                def get(path: str) -> Callable[[int], bool]:
                    return lambda i: client().get(path, headers=auth).status_code == 200

                results.append(load("POST /v1/judgments", post, clients, seconds,
                                    max_requests))
                results.append(load("GET /v1/keys/me (baseline)", get("/v1/keys/me"),
                                    clients, seconds, max_requests))
                results.append(load("GET /v1/coefficients", get("/v1/coefficients"),
                                    clients, seconds, max_requests))
            usage = service.usage(caller)
        finally:
            service.close()
    for r in results:
        r["clients"] = 1 if r["phase"].startswith("judge_now") else clients
    results.append({"phase": "check", "charged_calls": usage["calls"],
                    "distinct_bundles": bundles})
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="per phase")
    ap.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients")
    ap.add_argument("--max-requests", type=int, default=2000, help="per phase")
    ap.add_argument("--bundles", type=int, default=8, help="synthetic bundles in the pool")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results = run(args.seconds, args.clients, args.max_requests, args.bundles)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{'phase':34} {'clients':>7} {'requests':>8} {'errors':>6} {'req/s':>8} "
          f"{'p50 ms':>8} {'p99 ms':>8}")
    for r in results[:-1]:
        print(f"{r['phase']:34} {r['clients']:>7} {r['requests']:>8} {r['errors']:>6} "
              f"{r['requests_per_s']:>8} {r['p50_ms']:>8} {r['p99_ms']:>8}")
    c = results[-1]
    print(f"charged calls: {c['charged_calls']} (one per distinct bundle: "
          f"{c['distinct_bundles']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
