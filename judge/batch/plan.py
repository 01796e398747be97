"""How a batch uses the cluster: replicas per model, requests per engine call, bundles in flight.

Pure functions of the judge version, the cluster's resources (``ray.cluster_resources()``)
and the command line; nothing here starts Ray. Which replicas share which GPU is decided
here (:func:`place_on_gpus`); Ray only finds a node for each GPU's bundle.

* **Replicas** of a model: the command line (``--replicas N`` for every model, or
  ``--replicas NAME=N``), else the version's ``replicas``, else what the cluster holds:
  models on CUDA get the most copies of the ensemble, at most ``floor(GPUs / Σ gpu_share)``
  (a ``gpu_share`` of 0 counts as a whole GPU), that pack onto the GPUs (below), models on CPU
  ``floor(CPUs / 2 / Σ threads)`` each (half the CPUs for the models, the other half for
  decoding; ``options.threads``, default 1, per replica) — at least one either way. A served
  model (backend openai) runs one replica, which holds no GPU.
* **Batch size**: the most requests, from any bundles, one engine call carries:
  ``--batch-size``, else the version's ``batch_size``, else 32 on CUDA and 8 on CPU; a served
  model's ``endpoint.max_concurrency`` (its replica takes two calls at once, so its requests
  in flight stay at ``max_concurrency`` between calls, ``judge.batch.work.Replica``).
* **Bundles in flight** (``--max-in-flight``): unset, ``max(8, 2 × replicas × batch_size)``
  of the widest model. By Little's law the bundles in flight are throughput × latency, and
  a bundle a model judges a failure spends three calls' time with it (yes/no, family,
  class) while asking it four questions: at full calls a replica needs
  ≈ ``batch_size × 3/4`` bundles in flight to stay busy; twice ``batch_size`` leaves room
  for decoding and the other models' rounds.

* **GPUs** (:func:`place_on_gpus`): the replicas on CUDA are packed onto whole GPUs here,
  not by Ray: copy after copy of the ensemble, each replica into the first GPU whose
  summed share stays within its cap — ``GPU_MEMORY_CAP`` (0.92) on a GPU holding a vLLM
  engine (``gpu_memory_utilization`` = ``gpu_share``; the rest is for CUDA contexts and
  memory vLLM's profiling does not count, ``docs/batch.md``), else 1.0 (Ray's own limit:
  other backends reserve no memory by their share).
  Each GPU becomes one placement-group bundle of one whole GPU that its replicas share.
  Ray's own best fit of fractional shares packs a GPU to 1.00 (0.35 + 0.35 + 0.15 + 0.15
  for 0.45/0.35/0.15 on 8 GPUs), which the last vLLM engine on it cannot start in.

A plan that cannot run is refused in one line before any actor starts: a model on CUDA in
a cluster without GPUs, replicas whose GPU shares add up to more GPUs than the cluster
has, replicas that cannot be packed within the cap, a ``--replicas``/``--batch-size``
naming no model of the version, and — when the GPUs' memory is known — a vLLM engine whose
share of it cannot hold its weights, overhead and the KV cache of one ``max_model_len``
prompt (``judge.batch.vram.check_engines``, before Ray starts: the numbers, in GiB, and the
least share that would).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judge.ensemble.version import JudgeVersion, ModelEntry
from judge.errors import JudgeError

GPU_MEMORY_CAP = 0.92  # most of a GPU's memory its vLLM engines may reserve, summed
VLLM_DEFAULT_SHARE = 0.9  # gpu_memory_utilization of a vLLM engine whose gpu_share is 0
GPU_BATCH = 32  # requests per engine call on CUDA (vLLM's throughput comes from dozens)
CPU_BATCH = 8  # on CPU a call runs its requests one after another: batching saves round trips


class PlanError(JudgeError, ValueError):
    """A batch's replicas or batch sizes cannot be as asked."""


class Unplaceable(PlanError):
    """Replicas that fit no GPU even at 1.0 of it (Ray could not place them either)."""


@dataclass(frozen=True)
class GpuSlot:
    """One GPU of the plan (one placement-group bundle): the replicas that share it."""

    replicas: tuple[tuple[int, int], ...]  # (model index, replica index), in start order
    models: tuple[str, ...]  # their model names
    share: float  # their summed gpu_share (vLLM's gpu_memory_utilization, summed)
    cap: float  # the most ``share`` may be: GPU_MEMORY_CAP with a vLLM engine, else 1.0


@dataclass(frozen=True)
class Plan:
    """What :func:`plan_batch` decided, per model in the version's order."""

    replicas: tuple[int, ...]
    batch_size: tuple[int, ...]
    max_in_flight: int
    prepare_workers: int
    cpu_share: float  # CPUs each actor asks for
    gpus: tuple[GpuSlot, ...] = ()  # the GPUs the replicas on CUDA are packed onto

    def as_dict(self, version: JudgeVersion) -> dict:
        return {"models": {m.name: {"replicas": r, "batch_size": b} for m, r, b in
                           zip(version.models, self.replicas, self.batch_size, strict=True)},
                "max_in_flight": self.max_in_flight, "prepare_workers": self.prepare_workers,
                "gpus": [{"models": list(g.models), "gpu_share": round(g.share, 6)}
                         for g in self.gpus]}


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


def served(entry: ModelEntry) -> bool:
    """Whether another process serves the model (backend openai): no GPU or CPU share here."""
    return entry.endpoint is not None


def _served_replicas(asked: int | None, entry: ModelEntry) -> int:
    """One replica for a served model: it keeps ``max_concurrency`` requests in flight."""
    if asked is not None and asked > 1:
        raise PlanError(f"--replicas {entry.name}={asked}: a served model runs one replica, "
                        f"which keeps endpoint.max_concurrency ({entry.endpoint.max_concurrency})"
                        " requests in flight: raise that instead")
    return 1


def _gpu_need(entry: ModelEntry) -> float:
    return entry.gpu_share if entry.gpu_share > 0 else 1.0


def memory_share(entry: ModelEntry) -> float:
    """The part of a GPU a replica of ``entry`` holds: its ``gpu_share``; unset (0), vLLM's
    default ``gpu_memory_utilization`` for a vLLM engine, else the whole GPU."""
    if entry.gpu_share > 0:
        return entry.gpu_share
    return VLLM_DEFAULT_SHARE if entry.backend == "vllm" else 1.0


def reserves_memory(entry: ModelEntry) -> bool:
    """Whether ``gpu_share`` is the memory the engine reserves up front: vLLM's
    ``gpu_memory_utilization``, or a fake engine playing one (``options.reserves_memory``)."""
    return entry.backend == "vllm" or bool(entry.options.get("reserves_memory", False))


def _pack(version: JudgeVersion, replicas: Sequence[int], gpus: int,
          capped: bool) -> list[list[tuple[int, int]]] | None:
    """Copy after copy, larger shares first, each replica onto the first GPU it fits."""
    models = version.models
    slots: list[list[tuple[int, int]]] = [[] for _ in range(gpus)]
    sums, capped_gpu = [0.0] * gpus, [False] * gpus
    order = sorted((i for i, m in enumerate(models) if on_gpu(m)),
                   key=lambda i: -memory_share(models[i]))
    for copy in range(max((replicas[i] for i in order), default=0)):
        for i in (i for i in order if copy < replicas[i]):
            m = models[i]
            for g in range(gpus):
                held = capped_gpu[g] or reserves_memory(m)
                cap = GPU_MEMORY_CAP if capped and held else 1.0
                if sums[g] + memory_share(m) <= cap + 1e-9:
                    slots[g].append((i, copy))
                    sums[g] += memory_share(m)
                    capped_gpu[g] = held
                    break
            else:
                return None
    return [s for s in slots if s]


def place_on_gpus(version: JudgeVersion, replicas: Sequence[int],
                  gpus: int) -> tuple[GpuSlot, ...]:
    """The GPUs ``replicas`` (per model, in the version's order) of the models on CUDA take.

    Raises:
        Unplaceable: they do not fit ``gpus`` GPUs even at 1.0 of each.
        PlanError: they fit only beyond ``GPU_MEMORY_CAP`` of a GPU with a vLLM engine.
    """
    packed = _pack(version, replicas, gpus, capped=True)
    if packed is None:
        asked = ", ".join(f"{m.name} {r}×{memory_share(m):g}"
                          for m, r in zip(version.models, replicas, strict=True) if on_gpu(m))
        if _pack(version, replicas, gpus, capped=False) is None:
            raise Unplaceable(f"judge version {version.name!r}: replicas {asked} fit no "
                              f"packing onto {gpus} GPU(s)")
        raise PlanError(f"judge version {version.name!r}: replicas {asked} do not fit "
                        f"{gpus} GPU(s) with at most {GPU_MEMORY_CAP:g} of a GPU for its "
                        "vLLM engines (gpu_memory_utilization summed per GPU); lower "
                        "gpu_share or --replicas")
    names = [m.name for m in version.models]
    out = []
    for slot in packed:
        held = any(reserves_memory(version.models[i]) for i, _ in slot)
        out.append(GpuSlot(replicas=tuple(slot), models=tuple(names[i] for i, _ in slot),
                           share=sum(memory_share(version.models[i]) for i, _ in slot),
                           cap=GPU_MEMORY_CAP if held else 1.0))
    return tuple(out)


def memory_plan(version: JudgeVersion, gpus: int,
                replicas: dict[str, int] | int | None = None) -> tuple[GpuSlot, ...]:
    """Per GPU, what a batch of ``version`` on ``gpus`` GPUs holds (``rcjudge doctor``).

    Raises:
        PlanError: as :func:`plan_batch` would, in one line (the engines' memory is the
            doctor's own rows, ``judge.batch.vram``).
    """
    return plan_batch(version, {"GPU": gpus, "CPU": 2 * max(1, gpus)}, replicas).gpus


def _threads(entry: ModelEntry) -> int:
    return max(1, int(entry.options.get("threads", 1)))


def plan_batch(version: JudgeVersion, resources: Mapping[str, float],
               replicas: dict[str, int] | int | None = None,
               batch_size: dict[str, int] | int | None = None,
               max_in_flight: int | None = None,
               prepare_workers: int | None = None, place: bool = True) -> Plan:
    """The plan for ``version`` on a cluster with ``resources`` (see the module docstring);
    ``place=False``: without packing the replicas onto GPUs (``gpus`` empty). Each engine's
    share against the GPUs' memory is ``judge.batch.vram.check_engines`` (``run_batch``
    runs it first, when that memory is known).

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
    while gpu_copies > 1 and _pack(version, [gpu_copies] * len(models), int(gpus + 1e-9),
                                   capped=True) is None:
        gpu_copies -= 1  # the most copies of the ensemble that pack within the cap
    cpu_models = [m for m in models if not on_gpu(m) and not served(m)]
    cpu_copies = (max(1, math.floor(cpus / 2 / sum(_threads(m) for m in cpu_models) + 1e-9))
                  if cpu_models else 1)
    n = tuple(_pick(replicas, m) or m.replicas or (gpu_copies if on_gpu(m) else cpu_copies)
              if not served(m) else _served_replicas(_pick(replicas, m), m) for m in models)
    need = sum(r * _gpu_need(m) for m, r in zip(models, n, strict=True) if on_gpu(m))
    if need > gpus + 1e-9:
        asked = ", ".join(f"{m.name} {r}×{_gpu_need(m):g}"
                          for m, r in zip(models, n, strict=True) if on_gpu(m))
        raise PlanError(f"judge version {version.name!r}: replicas need {need:g} GPUs "
                        f"({asked}) but the Ray cluster has {gpus:g}")
    slots = place_on_gpus(version, n, int(gpus + 1e-9)) if cuda and place else ()
    b = tuple(_pick(batch_size, m) or m.batch_size or (
        m.endpoint.max_concurrency if served(m) else GPU_BATCH if on_gpu(m) else CPU_BATCH)
              for m in models)
    flight = max_in_flight or max(8, 2 * max(r * s for r, s in zip(n, b, strict=True)))
    preps = prepare_workers or max(1, int(cpus) // 2)
    share = max(0.01, math.floor(100 * min(1.0, cpus / (2 * (preps + sum(n))))) / 100)
    return Plan(replicas=n, batch_size=b, max_in_flight=flight, prepare_workers=preps,
                cpu_share=share, gpus=slots)
