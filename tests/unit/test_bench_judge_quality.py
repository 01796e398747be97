"""bench.judge_quality: the table over training seeds (every figure per seed, mean and range),
the pool's tasks, the truth split into the trained tasks' runs and the held-out task's."""

from __future__ import annotations

import json
from pathlib import Path

from bench.judge_quality import average_name, split_truth, spread, trained_tasks


def _reports(name: str, success: float, ece: float, attempt: float, klass: float, every: float,
             per_task: dict[str, float],
             held_out: dict[str, tuple[int, float]] | None = None) -> tuple[dict, dict, dict]:
    def version(acc: float) -> dict:
        return {"success": {"accuracy": acc, "ece": ece}, "attempt": {"accuracy": attempt},
                "failure_class": {"accuracy": klass}}

    trained = {"versions": {name: version(success)}}
    report = {"versions": {name: {**version(every), "per_task": {
        t: {"n": 10, "success_accuracy": a} for t, a in per_task.items()}}}}
    held = held_out and {"versions": {name: {"per_outcome": {
        o: {"n": n, "success_accuracy": a} for o, (n, a) in held_out.items()}}}}
    return trained, report, held


def test_spread_lists_each_seed_and_the_mean_and_range_of_every_figure():
    results = {
        "v-s1": _reports("v-s1", 0.95, 0.03, 1.0, 0.8, 0.9, {"task.a": 1.0, "task.wall": 0.8},
                         {"success": (6, 1.0), "task.timeout": (4, 0.5)}),
        "v-s2": _reports("v-s2", 0.93, 0.05, 0.99, None, 0.88, {"task.a": 0.9, "task.wall": 0.6},
                         {"success": (6, 0.8333), "task.timeout": (4, 0.25)}),
    }
    assert spread(results, "task.wall").splitlines() == [
        "| figure | v-s1 | v-s2 | mean (lowest - highest) |",
        "|---|---|---|---|",
        "| trained tasks: success | 0.950 | 0.930 | 0.940 (0.930 - 0.950) |",
        "| trained tasks: success ECE | 0.030 | 0.050 | 0.040 (0.030 - 0.050) |",
        "| trained tasks: attempt | 1.000 | 0.990 | 0.995 (0.990 - 1.000) |",
        "| trained tasks: class | 0.800 | – | 0.800 (0.800 - 0.800) |",
        "| every unseen run: success | 0.900 | 0.880 | 0.890 (0.880 - 0.900) |",
        "| task.a: success | 1.000 | 0.900 | 0.950 (0.900 - 1.000) |",
        "| task.wall (held out): success | 0.800 | 0.600 | 0.700 (0.600 - 0.800) |",
        "| held out, success (6): success | 1.000 | 0.833 | 0.917 (0.833 - 1.000) |",
        "| held out, task.timeout (4): success | 0.500 | 0.250 | 0.375 (0.250 - 0.500) |",
    ]


def test_the_seeds_average_gets_a_column_but_no_part_in_the_mean_and_range():
    results = {
        "v-s1": _reports("v-s1", 0.95, 0.03, 1.0, 0.8, 0.9, {"task.a": 1.0}),
        "v-s2": _reports("v-s2", 0.93, 0.05, 0.99, 0.9, 0.88, {"task.a": 0.9}),
        "v-avg": _reports("v-avg", 0.99, 0.01, 1.0, 0.95, 0.97, {"task.a": 0.95}),
    }
    rows = spread(results, "task.wall", apart=("v-avg",)).splitlines()
    assert rows[0] == "| figure | v-s1 | v-s2 | v-avg | mean (lowest - highest) |"
    assert rows[2] == "| trained tasks: success | 0.950 | 0.930 | 0.990 | 0.940 (0.930 - 0.950) |"
    assert rows[-1] == "| task.a: success | 1.000 | 0.900 | 0.950 | 0.950 (0.900 - 1.000) |"


def test_the_average_is_named_by_the_seeds_it_averages():
    assert average_name("p0tj05", [0, 1]) == "p0tj05-avg-0-1"
    assert average_name("p0tj05", [0, 1, 2]) == "p0tj05-avg-0-1-2"


def test_the_pool_simulates_the_trained_tasks_only():
    tasks = "pick-place,pick-place-wall,drawer-open,button-press-topdown,peg-insert-side"
    assert (trained_tasks(tasks, {"metaworld.pick_place_wall"})
            == "pick-place,drawer-open,button-press-topdown,peg-insert-side")
    assert trained_tasks(tasks, {"metaworld.pick_place_wall", "metaworld.drawer_open"}) == (
        "pick-place,button-press-topdown,peg-insert-side")
    assert trained_tasks("drawer-open", set()) == "drawer-open"


def test_the_truth_splits_into_the_trained_tasks_runs_and_the_held_out_tasks(tmp_path: Path):
    bundles = tmp_path / "bundles"
    for run_id, task in (("r1", "metaworld.pick_place"), ("r2", "metaworld.pick_place_wall"),
                         ("r3", "metaworld.drawer_open")):
        (bundles / run_id).mkdir(parents=True)
        (bundles / run_id / "truth.json").write_text(json.dumps(
            {"task_id": task, "attempt": True, "success": True, "failure_class": None}))
    head = "run_id,attempt,success,failure_class,labeled_by,labeled_at,near_threshold"
    rows = [f"r{k},true,true,,physics,2026-12-01T00:00:00Z,false" for k in (1, 2, 3)]
    (tmp_path / "truth.csv").write_text("\n".join([head, *rows]) + "\n")
    split_truth(tmp_path / "truth.csv", bundles, {"metaworld.pick_place_wall"},
                tmp_path / "trained.csv", tmp_path / "held.csv")
    assert (tmp_path / "trained.csv").read_text().splitlines() == [head, rows[0], rows[2]]
    assert (tmp_path / "held.csv").read_text().splitlines() == [head, rows[1]]
