"""Batch throughput of the tiny judge: Ray (``run_batch``) against a plain sequential loop.

    python -m bench.throughput [--n 24] [--json]

Same synthetic bundles, same judge version, same machine, one run. The sequential
loop is one process with the three models loaded once (load time excluded); the
Ray figure includes actor start-up and model loading inside the batch, but not
``ray.init`` itself (reported separately). Ledger writes go to a fresh SQLite file
in both cases.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.synth import SynthConfig, write_synthetic_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from judge.batch.place import start_ray
    from judge.batch.run import run_batch
    from judge.ensemble.judge import Judge, prepare
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.records import Run
    from judge.ledgers.store import Ledger
    from models.tiny import build_tiny
    from rcjudge.home import models_dir

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not (models_dir() / "tiny" / "llava").exists():
            os.environ["RCJUDGE_MODELS"] = str(tmp / "models")
            build_tiny(tmp / "models" / "tiny")
        bundles = [str(p) for p in write_synthetic_set(tmp / "b", args.n, SynthConfig(seed=21))]
        version = load_judge_version("tiny")

        judge = Judge(version)
        with Ledger.open(f"sqlite:///{tmp / 'seq.db'}") as ledger:
            t0 = time.perf_counter()
            for uri in bundles:  # what run_batch does per bundle, in one process
                p = prepare(uri, version)
                j = judge.judge_prepared(p)
                ledger.record(Run(run_id=p.run_id, bundle_uri=uri, bundle_hash=p.bundle_hash,
                                  attribution=p.attribution, duration_s=p.duration_s,
                                  cycle_sec=p.cycle_sec), j)
            t_seq = time.perf_counter() - t0
        judge.close()

        t0 = time.perf_counter()
        start_ray(None)
        t_init = time.perf_counter() - t0
        with Ledger.open(f"sqlite:///{tmp / 'ray.db'}") as ledger:
            t0 = time.perf_counter()
            summary = run_batch(bundles, version, ledger, progress=False)
            t_ray = time.perf_counter() - t0
        ray.shutdown()
    result = {"bundles": args.n, "cpus": os.cpu_count(),
              "sequential_s": round(t_seq, 2), "ray_s": round(t_ray, 2),
              "ray_init_s": round(t_init, 2), "ray_model_startup_s": round(summary.startup_s, 2),
              "ray_judging_s": round(summary.seconds, 2),
              "sequential_per_min": round(60 * args.n / t_seq, 1),
              "ray_per_min": round(60 * summary.judged / t_ray, 1),
              "ray_per_min_after_startup": round(summary.per_minute, 1),
              "ray_over_sequential": round(t_seq / t_ray, 2),
              "ray_after_startup_over_sequential": round(t_seq / summary.seconds, 2)}
    print(json.dumps(result, indent=2) if args.json else
          "\n".join(f"{k:>20}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
