"""The batch plan (replicas, batch sizes, bundles in flight) and how a replica takes asks."""

from __future__ import annotations

from collections import deque

import pytest

from judge.batch.plan import PlanError, parse_per_model, plan_batch
from judge.ensemble.version import JudgeVersion


def version(device="cuda", shares=(0.45, 0.35, 0.15), **extra) -> JudgeVersion:
    return JudgeVersion(name="v", models=[
        {"name": n, "backend": "fake", "device": device, "gpu_share": s, **extra.get(n, {})}
        for n, s in zip("abc", shares, strict=True)])


def test_gpu_defaults_fill_the_cluster_one_ensemble_per_gpu():
    # Σ gpu_share = 0.95 -> floor(8 / 0.95) = 8 copies of each model on 8 GPUs
    plan = plan_batch(version(), {"GPU": 8, "CPU": 64})
    assert plan.replicas == (8, 8, 8)
    assert plan.batch_size == (32, 32, 32)
    assert plan.max_in_flight == 512  # 2 × 8 replicas × 32 requests
    assert plan.prepare_workers == 32
    assert plan.cpu_share == 0.57  # 64 / (2 · (32 + 24)) = 0.5714…, rounded down
    one = plan_batch(version(), {"GPU": 1, "CPU": 16})
    assert (one.replicas, one.max_in_flight, one.prepare_workers) == ((1, 1, 1), 64, 8)


def test_a_share_of_zero_counts_as_a_whole_gpu():
    plan = plan_batch(version(shares=(0.0, 0.5, 0.5)), {"GPU": 4, "CPU": 8})
    assert plan.replicas == (2, 2, 2)  # floor(4 / (1 + 0.5 + 0.5))


def test_cpu_defaults_half_the_cpus_for_the_models():
    two = plan_batch(version("cpu", (0, 0, 0)), {"CPU": 2})
    assert (two.replicas, two.batch_size, two.max_in_flight) == ((1, 1, 1), (8, 8, 8), 16)
    assert (two.prepare_workers, two.cpu_share) == (1, 0.25)  # as before replicas: 2/(2·4)
    sixteen = plan_batch(version("cpu", (0, 0, 0)), {"CPU": 16})
    assert sixteen.replicas == (2, 2, 2)  # floor(16 / 2 / 3 threads)
    assert sixteen.max_in_flight == 32
    threads = plan_batch(version("cpu", (0, 0, 0), a={"options": {"threads": 4}}),
                         {"CPU": 16})
    assert threads.replicas == (1, 1, 1)  # floor(8 / (4 + 1 + 1))


def test_command_line_wins_over_the_version_which_wins_over_the_default():
    v = version(a={"replicas": 3, "batch_size": 16}, b={"replicas": 1})
    plan = plan_batch(v, {"GPU": 8, "CPU": 64})
    assert (plan.replicas, plan.batch_size) == ((3, 1, 8), (16, 32, 32))
    plan = plan_batch(v, {"GPU": 8, "CPU": 64}, replicas={"*": 2, "c": 4}, batch_size=64)
    assert (plan.replicas, plan.batch_size) == ((2, 2, 4), (64, 64, 64))
    assert plan.max_in_flight == 512  # c: 2 × 4 × 64
    assert plan_batch(v, {"GPU": 8, "CPU": 64}, max_in_flight=5).max_in_flight == 5


def test_plans_that_cannot_be_placed_are_refused_in_one_line():
    with pytest.raises(PlanError) as err:
        plan_batch(version(), {"CPU": 8})
    assert str(err.value) == ("judge version 'v': model 'a' runs on cuda but the Ray "
                              "cluster has no GPU")
    with pytest.raises(PlanError) as err:
        plan_batch(version(), {"GPU": 1, "CPU": 8}, replicas=2)
    assert str(err.value) == ("judge version 'v': replicas need 1.9 GPUs (a 2×0.45, b 2×0.35, "
                              "c 2×0.15) but the Ray cluster has 1")
    with pytest.raises(PlanError) as err:
        plan_batch(version(), {"GPU": 1, "CPU": 8}, batch_size={"d": 4})
    assert str(err.value) == ("--batch-size d=…: judge version 'v' has no model 'd' (its "
                              "models: a, b, c)")


def test_per_model_values_parse_as_the_command_line_gives_them():
    assert parse_per_model(None, "--replicas") is None
    assert parse_per_model(["4"], "--replicas") == 4
    assert parse_per_model(["a=2", "b=1"], "--replicas") == {"a": 2, "b": 1}
    assert parse_per_model(["a=2", "3"], "--replicas") == {"*": 3, "a": 2}
    for bad, why in [("x", "expected N or NAME=N with N a whole number"),
                     ("a=", "expected N or NAME=N with N a whole number"),
                     ("a=0", "expected at least 1"), ("-1", "expected at least 1")]:
        with pytest.raises(PlanError) as err:
            parse_per_model([bad], "--replicas")
        assert str(err.value) == f"--replicas {bad}: {why}"


class _W:
    def __init__(self, failed=False):
        self.failed = failed


def _queue(*specs):
    from judge.batch.work import Ask

    return deque(Ask(_W(failed), list(range(n)), avoid) for n, avoid, failed in specs)


def test_a_replica_takes_the_oldest_asks_up_to_its_batch_size():
    from judge.batch.work import take

    q = _queue((2, None, False), (2, None, False), (1, None, False), (2, None, False))
    got = take(q, replica=0, live=1, batch_size=5)
    assert [len(a.requests) for a in got] == [2, 2, 1]
    assert [len(a.requests) for a in q] == [2]
    big = _queue((40, None, False), (2, None, False))
    assert [len(a.requests) for a in take(big, 0, 1, 32)] == [40]  # one ask, however large
    assert len(big) == 1


def test_asks_of_failed_bundles_are_dropped_and_retries_go_alone_elsewhere():
    from judge.batch.work import take

    q = _queue((2, None, True), (1, 0, False), (2, None, False), (2, None, False))
    # replica 0 may not take the retry that failed on it while replica 1 lives
    got = take(q, replica=0, live=2, batch_size=8)
    assert [(len(a.requests), a.avoid) for a in got] == [(2, None), (2, None)]
    assert [(len(a.requests), a.avoid) for a in q] == [(1, 0)]
    assert [a.avoid for a in take(q, replica=1, live=2, batch_size=8)] == [0]
    assert not q
    alone = _queue((1, 0, False), (2, None, False))
    assert [a.avoid for a in take(alone, replica=0, live=1, batch_size=8)] == [0]  # no other
    assert [len(a.requests) for a in alone] == [2]


def test_replicas_and_batch_size_do_not_change_the_fingerprint():
    from judge.ensemble.fingerprint import fingerprint
    from judge.ensemble.taxonomy import load_taxonomy

    tax = load_taxonomy()
    plain = fingerprint(version("cpu", (0, 0, 0)), tax)
    run_only = fingerprint(version("cpu", (0, 0, 0), a={"replicas": 4, "batch_size": 2}), tax)
    assert run_only == plain
    other = fingerprint(version("cpu", (0, 0, 0), a={"max_pixels": 1024}), tax)
    assert other.changed(plain.parts) == ["models.a"]
