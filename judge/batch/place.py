"""Where a batch's model replicas run and how they start, before any bundle is judged.

``judge.batch.plan`` decides which replicas share which GPU (pure); here that plan becomes
one Ray placement group — one bundle of one whole GPU per GPU of the plan, holding the CPU
shares of its replicas, and one CPU bundle per replica of a model on CPU — and the
replicas start in their bundles. **Engines sharing a GPU start one after another**: vLLM's
start-up profiling measures the GPU's free memory and assumes no other process on it is
allocating meanwhile; engines on different GPUs start together. After the first engine
that fails to start, no further one is started (each would take minutes), and the batch
is refused in one line with every error seen.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

import ray
from ray.util.placement_group import placement_group, remove_placement_group

from judge.batch.actors import WAITING, model_actor, model_resources
from judge.batch.plan import Plan, on_gpu
from judge.batch.work import one_line
from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError


class BatchError(JudgeError, ValueError):
    """A batch cannot start as asked (a limit out of range, a report path not writable)."""


def start_ray(address: str | None) -> None:
    """Join a cluster at ``address`` (or ``$RAY_ADDRESS``), else start a local Ray.

    Without either, a local Ray with this machine's CPUs is started even when a cluster
    started by ``ray start`` runs on the machine: Ray's own default would join that one
    (someone else's, and it refuses ``num_cpus``). The local Ray is this process's own, so
    its token authentication is off (``RAY_AUTH_MODE=disabled`` unless the environment sets
    it; otherwise Ray prints a notice to every run); a cluster at ``address`` keeps its
    own setting (docs/batch.md).
    """
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and address != "local":
        ray.init(address=address, log_to_driver=False)
    else:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                 log_to_driver=False)


def unplaced(version: JudgeVersion, plan: Plan, timeout_s: float) -> BatchError:
    """The one-line refusal of replicas the cluster's nodes cannot hold."""
    def one(m) -> str:
        return " ".join(f"{v:g} {k}" for k, v in model_resources(m, plan.cpu_share).items())

    asked = ", ".join(f"{m.name} {n}×({one(m)})"
                      for m, n in zip(version.models, plan.replicas, strict=True))
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    per_node = ", ".join(f"({r.get('CPU', 0):g} CPU {r.get('GPU', 0):g} GPU)" for r in nodes)
    return BatchError(f"the replicas could not be placed within {timeout_s:g} s: {asked} "
                      f"on nodes of {per_node} (shares that do not fit one node, or "
                      "resources in use)")


def slots(version: JudgeVersion, plan: Plan) -> list[list[tuple[int, int]]]:
    """Per placement-group bundle, its replicas ``(model, replica)`` in start order: the
    plan's GPUs first, then one bundle per replica of a model on CPU."""
    out = [list(g.replicas) for g in plan.gpus]
    out += [[(i, r)] for i, m in enumerate(version.models) if not on_gpu(m)
            for r in range(plan.replicas[i])]
    return out


def place_replicas(version: JudgeVersion, plan: Plan, timeout_s: float):
    """The batch's placement group, ready; else a one-line :class:`BatchError`.

    Ray reserves all bundles or none ("SPREAD": over as many nodes as it can), so a plan
    the nodes cannot hold as they are is known before any model loads.
    """
    bundles = []
    for slot in slots(version, plan):
        cpu = {"CPU": plan.cpu_share * len(slot)}
        bundles.append({**cpu, "GPU": 1.0} if on_gpu(version.models[slot[0][0]]) else cpu)
    pg = placement_group(bundles, strategy="SPREAD")
    try:
        ray.get(pg.ready(), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        remove_placement_group(pg)
        raise unplaced(version, plan, timeout_s) from None
    return pg


def start_replicas(version: JudgeVersion, plan: Plan, pg, pinned: dict[str, dict] | None = None
                   ) -> tuple[dict[tuple[int, int], Any], dict[tuple[int, int], str | None]]:
    """Every replica started in its bundle: one at a time per bundle, bundles together
    (``pinned``: per served model, the identity the version's fingerprint recorded).

    Returns the actor of each ``(model, replica)`` and what its ``ready()`` said (None:
    loaded; else its one-line error). After the first error no further replica starts.
    A replica whose process died while starting is restarted by Ray once; restarted, it
    loads when asked (:meth:`ModelActor.load`, still one at a time in its bundle); dead
    for good, its error is that line (``its process died while starting (…)``).
    """
    queues = [deque(slot) for slot in slots(version, plan)]
    handles: dict[tuple[int, int], Any] = {}
    said: dict[tuple[int, int], str | None] = {}
    waiting: dict[Any, tuple[int, tuple[int, int]]] = {}

    def start_next(b: int) -> None:
        if queues[b] and not any(said.values()):
            key = queues[b].popleft()
            entry = version.models[key[0]]
            handles[key] = model_actor(entry, plan.cpu_share, (pg, b), version,
                                       (pinned or {}).get(entry.name))
            waiting[handles[key].ready.remote()] = (b, key)

    for b in range(len(queues)):
        start_next(b)
    while waiting:
        ready, _ = ray.wait(list(waiting), num_returns=1)
        b, key = waiting.pop(ready[0])
        try:
            said[key] = ray.get(ready[0])
        except ray.exceptions.RayActorError as exc:  # died, also when Ray restarted it
            said[key] = (f"its process died while starting ({type(exc).__name__}: "
                         f"{one_line(exc)})")
        if said[key] == WAITING:  # restarted by Ray after dying: load it, alone in its bundle
            waiting[handles[key].load.remote()] = (b, key)
            continue
        start_next(b)
    return handles, said
