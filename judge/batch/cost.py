"""What a batch cost: the compute it reserved, not only the seconds its judgments were busy.

A batch holds its GPUs from the moment its placement group is reserved until the last
ledger write: while the engines start (minutes for vLLM), while they wait for work and
while they compute. Each judgment's own cost (``Judge.cost``: its share of every engine
call's seconds × ``gpu_share``) counts only the busy part; summed over a batch it is the
**busy** cost. The cost a user is shown is the **reserved** one:

* GPU: the whole GPUs the batch's placement group holds (one bundle of one GPU per GPU of
  the plan, ``judge.batch.plan.place_on_gpus``) × (start-up + judging seconds) ×
  ``gpu_hour_usd``;
* CPU: the CPUs its actors keep busy when they work (:func:`cpus_held`: a prepare worker
  decodes on a whole CPU, a model replica on CPU computes on its ``options.threads``, a
  replica on a GPU holds its ``cpu_share``; never less than Ray's ``cpu_share`` each) × the
  same seconds × ``cpu_hour_usd`` — Ray's fractional ``num_cpus`` alone would price a CPU
  model's compute below the seconds it spent (a utilisation over 100 %);
* served models (backend openai): what their servers charged (token usage × the endpoint's
  prices) for every request answered, added as it is; their replicas wait on the network
  and hold only Ray's ``cpu_share``;
* per judgment: that / judged; utilisation: busy / reserved.

Prices from ``configs/pricing.yaml`` (``judge.ensemble.judge.pricing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class BatchCost:
    """A batch's reserved compute and its price; ``as_dict`` goes into the summary."""

    gpus_held: int  # whole GPUs reserved
    cpus_held: float  # CPUs reserved
    held_s: float  # start-up + judging seconds
    usd: float  # reserved: (GPU-hours × gpu price) + (CPU-hours × cpu price)
    busy_usd: float  # Σ of the judgments' own costs
    per_judgment_usd: float  # usd / judged (0 when nothing was judged)
    utilisation: float  # busy_usd / usd (0 when nothing was reserved)

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 8) if isinstance(v, float) else v for k, v in asdict(self).items()}


def cpus_held(version, plan) -> float:
    """The CPUs a batch's actors keep busy (see the module docstring): ``plan`` is its
    ``judge.batch.plan.Plan``, ``version`` its judge version."""
    from judge.batch.plan import on_gpu

    share = plan.cpu_share
    models = sum(n * (share if on_gpu(m) or m.endpoint is not None
                      else max(share, float(m.options.get("threads", 1))))
                 for m, n in zip(version.models, plan.replicas, strict=True))
    return plan.prepare_workers * max(share, 1.0) + models


def batch_cost(gpus_held: int, cpus_held: float, startup_s: float, seconds: float,
               busy_usd: float, judged: int, price: Mapping[str, float],
               served_usd: float = 0.0) -> BatchCost:
    """The reserved cost of a batch (see the module docstring).

    Args:
        gpus_held: whole GPUs the batch's placement group reserves.
        cpus_held: CPUs its actors reserve.
        startup_s: seconds from the reservation until every engine had started.
        seconds: seconds of judging after that.
        busy_usd: the judgments' own costs, summed.
        judged: judgments written.
        price: ``gpu_hour_usd`` and ``cpu_hour_usd``.
        served_usd: what served models' servers charged, every answered request.
    """
    held_s = startup_s + seconds
    usd = ((gpus_held * price["gpu_hour_usd"] + cpus_held * price["cpu_hour_usd"]) * held_s / 3600
           + served_usd)
    return BatchCost(gpus_held=gpus_held, cpus_held=cpus_held, held_s=held_s, usd=usd,
                     busy_usd=busy_usd, per_judgment_usd=usd / judged if judged else 0.0,
                     utilisation=busy_usd / usd if usd > 0 else 0.0)
