"""How a batch uses the cluster: replicas per model, requests per engine call, bundles in flight.

Pure functions of the judge version, the cluster's resources (``ray.cluster_resources()``)
and the command line; nothing here starts Ray or places anything — Ray places the actors
by the resources they ask for.

* **Replicas** of a model: the command line (``--replicas N`` for every model, or
  ``--replicas NAME=N``), else the version's ``replicas``, else what the cluster holds:
  models on CUDA get ``floor(GPUs / Σ gpu_share)`` copies each (one copy of the whole
  ensemble per that much GPU; a ``gpu_share`` of 0 counts as a whole GPU), models on CPU
  ``floor(CPUs / 2 / Σ threads)`` each (half the CPUs for the models, the other half for
  decoding; ``options.threads``, default 1, per replica) — at least one either way.
* **Batch size**: the most requests, from any bundles, one engine call carries:
  ``--batch-size``, else the version's ``batch_size``, else 32 on CUDA and 8 on CPU.
* **Bundles in flight** (``--max-in-flight``): unset, ``max(8, 2 × replicas × batch_size)``
  of the widest model. By Little's law the bundles in flight are throughput × latency, and
  a bundle a model judges a failure spends three calls' time with it (yes/no, family,
  class) while asking it four questions: at full calls a replica needs
  ≈ ``batch_size × 3/4`` bundles in flight to stay busy; twice ``batch_size`` leaves room
  for decoding and the other models' rounds.

A plan that cannot run is refused in one line before any actor starts: a model on CUDA in
a cluster without GPUs, replicas whose GPU shares add up to more GPUs than the cluster
has, a ``--replicas``/``--batch-size`` naming no model of the version.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judge.ensemble.version import JudgeVersion, ModelEntry
from judge.errors import JudgeError

GPU_BATCH = 32  # requests per engine call on CUDA (vLLM's throughput comes from dozens)
CPU_BATCH = 8  # on CPU a call runs its requests one after another: batching saves round trips


class PlanError(JudgeError, ValueError):
    """A batch's replicas or batch sizes cannot be as asked."""


@dataclass(frozen=True)
class Plan:
    """What :func:`plan_batch` decided, per model in the version's order."""

    replicas: tuple[int, ...]
    batch_size: tuple[int, ...]
    max_in_flight: int
    prepare_workers: int
    cpu_share: float  # CPUs each actor asks for

    def as_dict(self, version: JudgeVersion) -> dict:
        return {"models": {m.name: {"replicas": r, "batch_size": b} for m, r, b in
                           zip(version.models, self.replicas, self.batch_size, strict=True)},
                "max_in_flight": self.max_in_flight, "prepare_workers": self.prepare_workers}


def parse_per_model(values: Sequence[str] | None, flag: str) -> dict[str, int] | int | None:
    """``--replicas 4`` -> 4; ``--replicas a=2 --replicas b=1`` -> {"a": 2, "b": 1}.

    A bare number applies to every model; ``NAME=N`` to one (and wins over a bare number).
    """
    if not values:
        return None
    every: int | None = None
    named: dict[str, int] = {}
    for value in values:
        name, sep, number = value.rpartition("=")
        try:
            n = int(number)
        except ValueError:
            raise PlanError(f"{flag} {value}: expected N or NAME=N with N a whole number") \
                from None
        if n < 1:
            raise PlanError(f"{flag} {value}: expected at least 1")
        if sep:
            named[name] = n
        else:
            every = n
    if not named:
        return every
    return {"*": every, **named} if every is not None else named


def _pick(overrides: dict[str, int] | int | None, entry: ModelEntry) -> int | None:
    if isinstance(overrides, int):
        return overrides
    if overrides:
        return overrides.get(entry.name, overrides.get("*"))
    return None


def check_overrides(version: JudgeVersion, overrides: dict[str, int] | int | None,
                    flag: str) -> None:
    """Every ``NAME`` of a ``NAME=N`` override is a model of ``version``."""
    if not isinstance(overrides, dict):
        return
    names = [m.name for m in version.models]
    unknown = sorted(set(overrides) - set(names) - {"*"})
    if unknown:
        raise PlanError(f"{flag} {unknown[0]}=…: judge version {version.name!r} has no model "
                        f"{unknown[0]!r} (its models: {', '.join(names)})")


def on_gpu(entry: ModelEntry) -> bool:
    return entry.device.startswith("cuda")


def _gpu_need(entry: ModelEntry) -> float:
    return entry.gpu_share if entry.gpu_share > 0 else 1.0


def _threads(entry: ModelEntry) -> int:
    return max(1, int(entry.options.get("threads", 1)))


def plan_batch(version: JudgeVersion, resources: Mapping[str, float],
               replicas: dict[str, int] | int | None = None,
               batch_size: dict[str, int] | int | None = None,
               max_in_flight: int | None = None,
               prepare_workers: int | None = None) -> Plan:
    """The plan for ``version`` on a cluster with ``resources`` (see the module docstring).

    Raises:
        PlanError: the plan cannot be placed, or an override names no model.
    """
    check_overrides(version, replicas, "--replicas")
    check_overrides(version, batch_size, "--batch-size")
    gpus = float(resources.get("GPU", 0.0))
    cpus = max(1.0, float(resources.get("CPU", 1.0)))
    models = version.models
    cuda = [m for m in models if on_gpu(m)]
    if cuda and gpus <= 0:
        raise PlanError(f"judge version {version.name!r}: model {cuda[0].name!r} runs on "
                        f"{cuda[0].device} but the Ray cluster has no GPU")
    gpu_copies = max(1, math.floor(gpus / sum(_gpu_need(m) for m in cuda) + 1e-9)) if cuda else 1
    cpu_models = [m for m in models if not on_gpu(m)]
    cpu_copies = (max(1, math.floor(cpus / 2 / sum(_threads(m) for m in cpu_models) + 1e-9))
                  if cpu_models else 1)
    n = tuple(_pick(replicas, m) or m.replicas or (gpu_copies if on_gpu(m) else cpu_copies)
              for m in models)
    need = sum(r * _gpu_need(m) for m, r in zip(models, n, strict=True) if on_gpu(m))
    if need > gpus + 1e-9:
        asked = ", ".join(f"{m.name} {r}×{_gpu_need(m):g}"
                          for m, r in zip(models, n, strict=True) if on_gpu(m))
        raise PlanError(f"judge version {version.name!r}: replicas need {need:g} GPUs "
                        f"({asked}) but the Ray cluster has {gpus:g}")
    b = tuple(_pick(batch_size, m) or m.batch_size or (GPU_BATCH if on_gpu(m) else CPU_BATCH)
              for m in models)
    flight = max_in_flight or max(8, 2 * max(r * s for r, s in zip(n, b, strict=True)))
    preps = prepare_workers or max(1, int(cpus) // 2)
    share = max(0.01, math.floor(100 * min(1.0, cpus / (2 * (preps + sum(n))))) / 100)
    return Plan(replicas=n, batch_size=b, max_in_flight=flight, prepare_workers=preps,
                cpu_share=share)
