"""Benchmark of the verdict engine: 1,000,000 evaluation rows over 10,000 tasks -> cards.

Run ``python -m bench.verdict_bench [--rows N] [--tasks T] [--repeat R]``. Synthetic
tables are generated with numpy/pyarrow (not timed), then each stage of
:func:`verdict.build_cards` is timed on its own, and the whole call once more
end to end. Target: the end-to-end call in ≤ 3 s on the 2-core dev machine.
Also reported, outside the target: reading the tables back from Parquet and
writing ``cards.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from verdict.engine import build_cards, make_cards, order_cards
from verdict.metrics import compute
from verdict.model import card_to_dict
from verdict.rules import align, decide
from verdict.tables import load_inputs

ARTIFACT = "RLDX-1-rc7"
REASONS = np.array(["grasp_slip", "force_limit", "misalign", "timeout", "drop", "collision",
                    ""], dtype=object)


def synth(rows: int, tasks: int, seed: int = 0) -> dict[str, pa.Table]:
    """Three tables: ``rows`` evaluation rows spread over ``tasks`` tasks (5 % other artifact)."""
    rng = np.random.default_rng(seed)
    names = pa.array([f"task-{i:05d}" for i in range(tasks)])
    task = rng.integers(0, tasks, rows)  # (rows,) task index
    target = np.round(rng.uniform(0.5, 0.95, tasks), 2)
    p_success = np.clip(target[task] + rng.normal(0.0, 0.08, rows), 0, 1)
    success = rng.random(rows) < p_success
    reason = np.where(success, None, REASONS[rng.integers(0, len(REASONS), rows)])
    cycle = np.round(rng.gamma(9.0, 1.3, rows) + 2.0, 2)  # seconds, 2 decimals
    artifact = np.where(rng.random(rows) < 0.95, ARTIFACT, "RLDX-1-rc6")
    evaluation_run = pa.table({
        "task_id": pc.take(names, pa.array(task)),
        "model_artifact": pa.array(artifact, pa.string()),
        "episode_id": pc.cast(pa.array(np.arange(rows)), pa.string()),
        "success": pa.array(success),
        "failure_reason": pa.array(reason, pa.string()),
        "cycle_sec": pa.array(cycle),
    })
    skills = np.array(["single_arm_pick", "precision_insert", "bimanual_coord"], dtype=object)
    spec_skill = skills[rng.integers(0, 3, tasks)]
    ds_skill = np.where(rng.random(tasks) < 0.9, spec_skill, skills[rng.integers(0, 3, tasks)])
    has_ds = rng.random(tasks) < 0.97
    count = rng.integers(50, 600, tasks).astype(float)
    count[rng.random(tasks) < 0.02] = np.nan
    task_spec = pa.table({
        "task_id": names, "required_skill": pa.array(spec_skill, pa.string()),
        "target_success_rate": pa.array(target),
        "top_reason_share_limit": pa.array(np.round(rng.uniform(0.3, 0.7, tasks), 2)),
        "max_cycle_sec": pa.array(np.round(rng.uniform(10, 18, tasks), 1)),
        "min_episode_count": pa.array(rng.integers(100, 500, tasks)),
    })
    keep = pa.array(has_ds)
    dataset_index = pa.table({
        "task_id": names, "required_skill": pa.array(ds_skill, pa.string()),
        "episode_count": pa.array(count, pa.int64(), from_pandas=True),
        "capture_site": pa.array(np.array(["안산", "판교", "평택"], dtype=object)[
            rng.integers(0, 3, tasks)], pa.string()),
        "robot_hand_type": pa.array(np.array(["parallel_2f", "5finger", "3finger"],
                                             dtype=object)[rng.integers(0, 3, tasks)],
                                    pa.string()),
    }).filter(keep)
    return {"evaluation_run": evaluation_run, "task_spec": task_spec,
            "dataset_index": dataset_index}


def run_stages(tabs: dict[str, pa.Table]) -> tuple[dict[str, float], list]:
    """Time each stage of the engine once; returns seconds per stage and the cards."""
    t: dict[str, float] = {}
    t0 = time.perf_counter()
    inputs = load_inputs(tabs["evaluation_run"], tabs["task_spec"], tabs["dataset_index"],
                         ARTIFACT)
    t["normalise inputs"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    metrics = compute(inputs)
    t["metrics (vectorised)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    aligned = align(inputs)
    decision = decide(aligned, metrics)
    t["align + decide"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cards = make_cards(aligned, metrics, decision, ARTIFACT)
    t["cards (evidence, hedge, summary)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cards = order_cards(cards)
    t["group by verdict"] = time.perf_counter() - t0
    return t, cards


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3, help="end-to-end runs (best is reported)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    tabs = synth(args.rows, args.tasks)
    gen = time.perf_counter() - t0
    stages, cards = run_stages(tabs)
    totals = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        cards = build_cards(tabs["evaluation_run"], tabs["task_spec"], tabs["dataset_index"],
                            ARTIFACT)
        totals.append(time.perf_counter() - t0)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, tab in tabs.items():
            paths[name] = Path(tmp) / f"{name}.parquet"
            pq.write_table(tab, paths[name])
        t0 = time.perf_counter()
        from_files = build_cards(paths["evaluation_run"], paths["task_spec"],
                                 paths["dataset_index"], ARTIFACT)
        parquet_total = time.perf_counter() - t0
        t0 = time.perf_counter()
        text = json.dumps([card_to_dict(c) for c in from_files], ensure_ascii=False)
        (Path(tmp) / "cards.json").write_text(text, encoding="utf-8")
        write_json = time.perf_counter() - t0
    counts: dict[str, int] = {}
    for c in cards:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    result = {"rows": args.rows, "tasks": args.tasks, "cards": len(cards),
              "generate_s (not timed)": round(gen, 3),
              "stages_s": {k: round(v, 3) for k, v in stages.items()},
              "stages_sum_s": round(sum(stages.values()), 3),
              "end_to_end_s": [round(x, 3) for x in totals], "best_s": round(min(totals), 3),
              "target_s": 3.0, "within_target": min(totals) <= 3.0,
              "from_parquet_files_s": round(parquet_total, 3),
              "write_cards_json_s": round(write_json, 3), "verdicts": counts}
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(f"{args.rows:,} evaluation rows over {args.tasks:,} tasks -> {len(cards):,} cards")
        for k, v in stages.items():
            print(f"  {k:<34} {v:7.3f} s")
        print(f"  {'sum of stages':<34} {sum(stages.values()):7.3f} s")
        print(f"end to end (build_cards, {args.repeat} runs): "
              + ", ".join(f"{x:.3f}" for x in totals) + f" s; best {min(totals):.3f} s "
              f"(target ≤ 3 s: {'met' if min(totals) <= 3 else 'NOT met'})")
        print(f"from Parquet files: {parquet_total:.3f} s; writing cards.json: {write_json:.3f} s")
        print("verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0 if min(totals) <= 3.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
