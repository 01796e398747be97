"""Scale-out of ``rcjudge batch`` on a simulated cluster: k = 1, 2, 4 GPU nodes; batch 1 vs 32.

    python -m bench.scaleout [--json] [--dilate 5] [--per-node 96]

Each configuration starts a ``ray.cluster_utils.Cluster`` of k nodes, each with 2 CPUs and
one ``GPU`` resource (a number to Ray: nothing here touches CUDA), and runs the real
``run_batch`` — the same plan, replicas, batching and ledger writes as on a real cluster —
over synthetic bundles into a fresh SQLite ledger. The three models are the fake backend
with a latency model: a call on n requests sleeps ``a + b·n`` seconds. Every model asks 0.3
of a GPU, so the default plan is one replica of each model per node (floor(k / 0.9)).

The latency model, for one replica of a 7B-class VLM under vLLM on one H100-class GPU:

* ``b = 0.040 s`` per request: a question shows 8 frames at 448×448 (≈256 vision tokens
  each for Qwen2.5-VL) plus ≈80 text tokens, ≈2,100 tokens; the success question reuses
  the attempt's image prefix (prefix caching), so ≈1,100 new tokens per request on
  average. Prefill at ≈2·7e9 FLOP per token and ≈40% of the H100's ≈990 dense bf16
  TFLOP/s is ≈28,000 tokens/s, so ≈0.04 s per request.
* ``a = 0.025 s`` per call: the fixed cost of an engine call (scheduling, one forward
  launch, sampling one token, returning), the order of a short prompt's time to first token
  on such a GPU.

Both are multiplied by ``--dilate`` (default 5) so that this 2-core machine, which also runs
every node's raylet, the decoding and the driver, is never the bottleneck: ratios between
configurations are what this measures. ``judgments_per_hour`` is measured in the dilated
run; ``per_hour_undilated`` multiplies it back (what the same cluster would do if the
engine alone were the limit). Judging time only: ``summary.seconds`` starts once the models
loaded. The baselines, in the same run: k = 1 for the scale-out and batch size 1 for
batching.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

A_S, B_S = 0.025, 0.040  # seconds per call and per request (see the module docstring)
SCRIPT = [  # a says "no" and c says "no": both get the family and class questions
    {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"},
    {"attempt": 0.8, "success": 0.7},
    {"attempt": 0.7, "success": 0.3, "failure_class": "grasp.miss"}]


def version(dilate: float, batch_size: int):
    from judge.ensemble.version import JudgeVersion

    return JudgeVersion(name=f"scaleout-b{batch_size}", models=[
        {"name": n, "backend": "fake", "device": "cuda", "gpu_share": 0.3,
         "batch_size": batch_size,
         "options": {"script": s, "call_s": [A_S * dilate, B_S * dilate]}}
        for n, s in zip("abc", SCRIPT, strict=True)])


def run_one(k: int, batch_size: int, bundles: list[str], dilate: float, tmp: Path) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from judge.batch.run import run_batch
    from judge.ledgers.store import Ledger

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 1})
    for _ in range(k - 1):
        cluster.add_node(num_cpus=2, num_gpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        with Ledger.open(f"sqlite:///{tmp / f'k{k}-b{batch_size}.db'}") as ledger:
            s = run_batch(bundles, version(dilate, batch_size), ledger, progress=False)
    finally:
        ray.shutdown()
        cluster.shutdown()
    calls = sum(c["calls"] for c in s.calls.values())
    requests = sum(c["requests"] for c in s.calls.values())
    per_hour = 3600 * s.judged / s.seconds
    return {"nodes": k, "batch_size": batch_size, "bundles": len(bundles),
            "judged": s.judged, "failed": len(s.failed),
            "replicas": [m["replicas"] for m in s.plan["models"].values()],
            "max_in_flight": s.plan["max_in_flight"], "seconds": round(s.seconds, 2),
            "requests_per_call": round(requests / calls, 2),
            "judgments_per_hour": round(per_hour),
            "per_hour_undilated": round(per_hour * dilate)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dilate", type=float, default=5.0,
                        help="multiply a and b by this (default 5; see the docstring)")
    parser.add_argument("--per-node", type=int, default=96,
                        help="bundles per node at batch size 32 (default 96)")
    parser.add_argument("--batch1", type=int, default=48,
                        help="bundles for the batch-size-1 run at k = 1 (default 48)")
    args = parser.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from bench.synth import SynthConfig, write_synthetic_set

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        n = 4 * args.per_node
        made = write_synthetic_set(tmp / "b", n, SynthConfig(seed=31, width=96, height=64,
                                                             fps=5, duration_s=2.0))
        bundles = [str(p) for p in made]
        rows = [run_one(k, 32, bundles[:k * args.per_node], args.dilate, tmp)
                for k in (1, 2, 4)]
        rows.append(run_one(1, 1, bundles[:args.batch1], args.dilate, tmp))
    base = rows[0]["judgments_per_hour"]
    for r in rows[:3]:
        r["over_k1"] = round(r["judgments_per_hour"] / base, 2)
    result = {"a_s": A_S, "b_s": B_S, "dilate": args.dilate, "rows": rows,
              "scaleout_k4_over_k1": rows[2]["over_k1"], "goal_k4_over_k1": 3.2,
              "batch32_over_batch1_k1": round(base / rows[3]["judgments_per_hour"], 2),
              "bench_seconds": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"latency model per call: ({A_S} + {B_S}·n) s × {args.dilate:g} (dilation)")
    print("| nodes k | batch size | bundles | replicas/model | requests/call | judgments/h "
          "(dilated) | judgments/h (undilated) | vs k=1 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['nodes']} | {r['batch_size']} | {r['judged']}/{r['bundles']} | "
              f"{r['replicas'][0]} | {r['requests_per_call']} | {r['judgments_per_hour']:,} | "
              f"{r['per_hour_undilated']:,} | {r.get('over_k1', '-')} |")
    print(f"k=4 over k=1: {result['scaleout_k4_over_k1']}× (goal ≥ 3.2×); batch 32 over "
          f"batch 1 at k=1: {result['batch32_over_batch1_k1']}×; {result['bench_seconds']} s")


if __name__ == "__main__":
    main()
