"""A batch's reserved cost, worked out by hand."""

from __future__ import annotations

import pytest

from judge.batch.cost import batch_cost

PRICE = {"gpu_hour_usd": 3.20, "cpu_hour_usd": 0.048}  # configs/pricing.yaml


def test_reserved_cost_counts_start_up_and_idle_gpus():
    # 8 GPUs held 5 min of engine start-up + 25 min of judging = 1,800 s = 0.5 h:
    # GPUs 8 × 3.20 × 0.5 = 12.80; CPUs 56 × 0.048 × 0.5 = 1.344; total 14.144 USD.
    # 10,000 judgments: 0.0014144 each; their busy costs sum to 3.536: utilisation 0.25.
    c = batch_cost(gpus_held=8, cpus_held=56, startup_s=300, seconds=1500, busy_usd=3.536,
                   judged=10_000, price=PRICE)
    assert c.held_s == 1800
    assert c.usd == pytest.approx(14.144, abs=1e-12)
    assert c.per_judgment_usd == pytest.approx(0.0014144, abs=1e-15)
    assert c.utilisation == pytest.approx(0.25, abs=1e-12)
    assert c.as_dict() == {"gpus_held": 8, "cpus_held": 56, "held_s": 1800,
                           "usd": 14.144, "busy_usd": 3.536, "per_judgment_usd": 0.0014144,
                           "utilisation": 0.25}


def test_cpu_only_batch_and_nothing_judged():
    # 2 CPUs for 90 s: 2 × 0.048 × 90 / 3600 = 0.0024 USD; nothing judged: 0 a judgment
    c = batch_cost(gpus_held=0, cpus_held=2, startup_s=30, seconds=60, busy_usd=0.0006,
                   judged=0, price=PRICE)
    assert c.usd == pytest.approx(0.0024, abs=1e-15)
    assert (c.per_judgment_usd, c.utilisation) == (0.0, pytest.approx(0.25))


def test_cpus_held_count_what_the_actors_keep_busy():
    """The tiny judge on 2 CPUs (the demo's batch): Ray's cpu_share is 0.25, but the prepare
    worker decodes on a whole CPU and each of the 3 CPU replicas computes on its 1 thread:
    1 + 3 = 4 CPUs, not 4 × 0.25 = 1 (which priced the demo's batch at a 156 % utilisation).
    rc-judge-v1 on 8 GPUs: 8 copies × 3 GPU replicas hold their 0.25 CPU share each, and the
    4 prepare workers a CPU each: 4 + 24 × 0.25 = 10."""
    from judge.batch.cost import cpus_held
    from judge.batch.plan import plan_batch
    from judge.ensemble.version import load_judge_version

    tiny = load_judge_version("tiny")
    plan = plan_batch(tiny, {"CPU": 2}, place=False)
    assert (plan.prepare_workers, plan.replicas, plan.cpu_share) == (1, (1, 1, 1), 0.25)
    assert cpus_held(tiny, plan) == 4.0
    v1 = load_judge_version("rc-judge-v1")
    plan = plan_batch(v1, {"CPU": 8, "GPU": 8})
    assert (plan.prepare_workers, plan.replicas) == (4, (8, 8, 8))
    assert cpus_held(v1, plan) == 4 + 24 * plan.cpu_share
