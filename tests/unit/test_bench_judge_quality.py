"""bench.judge_quality: the table over training seeds (every figure per seed, mean and range),
the pool's tasks."""

from __future__ import annotations

from bench.judge_quality import average_name, spread, trained_tasks


def _reports(name: str, success: float, ece: float, attempt: float, klass: float, every: float,
             per_task: dict[str, float]) -> tuple[dict, dict]:
    def version(acc: float) -> dict:
        return {"success": {"accuracy": acc, "ece": ece}, "attempt": {"accuracy": attempt},
                "failure_class": {"accuracy": klass}}

    trained = {"versions": {name: version(success)}}
    report = {"versions": {name: {**version(every), "per_task": {
        t: {"n": 10, "success_accuracy": a} for t, a in per_task.items()}}}}
    return trained, report


def test_spread_lists_each_seed_and_the_mean_and_range_of_every_figure():
    results = {
        "v-s1": _reports("v-s1", 0.95, 0.03, 1.0, 0.8, 0.9, {"task.a": 1.0, "task.wall": 0.8}),
        "v-s2": _reports("v-s2", 0.93, 0.05, 0.99, None, 0.88, {"task.a": 0.9, "task.wall": 0.6}),
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
