"""Prefix sharing in the transformers backend: attempt + success over the same frames, with and
without reusing the KV cache of their shared prefix (the images and the question's start).

    python -m bench.prefix [--n 6] [--repeats 3] [--json]

The tiny judge's three models on CPU (one thread each), the judge's own two questions over
the frames of ``--n`` synthetic bundles: ``TransformersBackend.score`` (each question runs
the whole prompt, images included) against ``score_shared_prefix`` (the shared prefix once,
then each question's own suffix from a copy of its cache). Per model: median seconds per
pair over the bundles × repeats, the ratio, and the largest difference between the two
paths' probabilities. One warm-up pair per model first, not counted. The tiny models'
vision towers are small, so the ratio says how much of a pair the shared prefix is at this
size, not what a 7B model on a GPU gains (there vLLM's prefix cache does this:
``bench.gpu_check``'s ``success_after_attempt_ms``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6, help="bundles (default 6)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    from bench.synth import SynthConfig, write_synthetic_set
    from judge.ensemble.judge import Judge, prepare
    from judge.ensemble.version import load_judge_version
    from models.tiny import build_tiny
    from rcjudge.home import models_dir

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not (models_dir() / "tiny" / "llava").exists():
            os.environ["RCJUDGE_MODELS"] = str(tmp / "models")
            build_tiny(tmp / "models" / "tiny")
        version = load_judge_version("tiny")
        judge = Judge(version)
        bundles = write_synthetic_set(tmp / "b", args.n, SynthConfig(seed=23))
        pairs = [judge.yes_no(prepare(str(p), version)) for p in bundles]
        rows = []
        for m, backend in zip(version.models, judge.backends, strict=True):
            backend.score(pairs[0])
            backend.score_shared_prefix(pairs[0])  # warm-up
            full, shared, diff = [], [], 0.0
            for _ in range(args.repeats):
                for pair in pairs:
                    t0 = time.perf_counter()
                    a = backend.score(pair)
                    t1 = time.perf_counter()
                    b = backend.score_shared_prefix(pair)
                    t2 = time.perf_counter()
                    full.append(t1 - t0)
                    shared.append(t2 - t1)
                    diff = max(diff, float(np.max(np.abs(np.array(a) - np.array(b)))))
            f, s = float(np.median(full)), float(np.median(shared))
            rows.append({"model": m.name, "pair_ms": round(1000 * f, 2),
                         "pair_shared_prefix_ms": round(1000 * s, 2),
                         "full_over_shared": round(f / s, 2), "max_abs_p_diff": diff})
        judge.close()
    result = {"bundles": args.n, "repeats": args.repeats, "threads": 1, "models": rows}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print("| model | attempt + success, whole prompts | shared prefix once | ratio | "
          "max |ΔP| |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['model']} | {r['pair_ms']} ms | {r['pair_shared_prefix_ms']} ms | "
              f"{r['full_over_shared']}× | {r['max_abs_p_diff']:.1e} |")


if __name__ == "__main__":
    main()
