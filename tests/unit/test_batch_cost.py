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
