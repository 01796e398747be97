"""``rcjudge batch``: judge many bundles on Ray with bounded work in flight, into the ledgers.

Flow per bundle: a CPU actor prepares it (intake, decode, frames); the model replicas get
the questions of :class:`judge.ensemble.judge.QuestionFlow` — the same flow the single
call runs (attempt and success for all three, then family and class for the models
that voted "no"); the driver votes and writes run + judgment in one ledger
transaction. At most ``max_in_flight`` bundles are between "submitted" and "written"
at any time (backpressure: a slow model never makes memory grow).

Batching across bundles: each model has a queue of asks (one bundle's requests to it);
a replica with no call in flight takes the queued asks, oldest first, up to its
``batch_size`` requests, as one engine call (``Backend.score`` on the list: one
``generate`` on vLLM). At saturation every call is full; at low load a call goes out with
what is there (no waiting to fill). Replicas, batch sizes and bundles in flight come from
:mod:`judge.batch.plan`. Each bundle is charged its share of every call's compute
seconds (``seconds × its requests / the call's requests``), not the time it queued.

A call that fails (the model raised, or its replica died) is retried once per bundle,
each bundle alone and on another replica of the model when there is one — so an
innocent bundle batched with a poisoned one is not failed; a second failure records the
bundle in ``batch_failures``. A replica whose process died gets no work until Ray has
restarted it (its ``ready()`` answers); one that will not come back is dropped from its
model's pool; a model with no live replica left fails its remaining bundles, one record
each.

Resumable: bundles already judged by this version are skipped, known by their bundle
hash (the manifest's), whatever folder or mount they are read from now. Before any
work the version's fingerprint is compared with the one it judged with before; a
changed version is refused (``JudgeVersionChanged``). A bundle that fails
intake or decode is recorded with its error (``batch_failures`` ledger table and the
summary) and the batch goes on; the next batch tries it again.

The replicas are placed and started by :mod:`judge.batch.place` (engines sharing a GPU
one after another); :class:`Batch` is the driver's loop, one named method per step; the
cost it reports is what the batch reserved (:mod:`judge.batch.cost`).
"""

from __future__ import annotations

import time
from collections import deque

import ray
from ray.util.placement_group import remove_placement_group

from judge.batch.actors import SERVED_CALLS, PrepareActor
from judge.batch.bags import BagImport, sort_bags
from judge.batch.cost import batch_cost, cpus_held
from judge.batch.driver import Batch
from judge.batch.place import BatchError, place_replicas, start_ray, start_replicas, unplaced
from judge.batch.plan import Unplaceable, check_overrides, plan_batch, served
from judge.batch.summary import BatchSummary
from judge.batch.vram import check_engines, version_sizes
from judge.batch.work import Replica
from judge.bundle.manifest import claimed_bundle_hash
from judge.ensemble.judge import Judge, pricing
from judge.ensemble.version import JudgeVersion
from judge.ledgers.store import Ledger

__all__ = ["BatchError", "BatchSummary", "check_max_in_flight", "run_batch"]


def check_max_in_flight(n: int, name: str = "max_in_flight") -> int:
    """``n`` if it is at least 1; else a :class:`BatchError` naming ``name`` and the value."""
    if n < 1:
        raise BatchError(f"{name} {n}: expected at least 1 (bundles between submission and "
                         "ledger write)")
    return n


def run_batch(uris: list[str], version: JudgeVersion, ledger: Ledger,
              ray_address: str | None = None, max_in_flight: int | None = None,
              prepare_workers: int | None = None, progress: bool = True,
              replicas: dict[str, int] | int | None = None,
              batch_size: dict[str, int] | int | None = None,
              place_timeout_s: float = 60.0, bags: list[str] | None = None,
              bag_import: BagImport | None = None,
              gpu_memory_gib: float | None = None) -> BatchSummary:
    """Judge ``uris`` with ``version`` into ``ledger``; see the module docstring.

    ``bags`` (with ``bag_import``: the mapping and the cache) are ROS bags, imported by the
    prepare actors into bundles that are then judged like ``uris`` (:mod:`judge.batch.bags`).

    ``replicas`` / ``batch_size``: one number for every model or ``{name: n}``; unset, the
    version's, else :mod:`judge.batch.plan`'s defaults for the cluster. The replicas are
    reserved together as one placement group; one the cluster cannot place within
    ``place_timeout_s`` is a one-line :class:`BatchError` before any model loads.
    ``gpu_memory_gib``: each GPU's memory; given, every vLLM engine's share of it is checked
    against what it needs before anything is placed (``judge.batch.vram``).
    """
    if max_in_flight is not None:
        check_max_in_flight(max_in_flight)
    summary = BatchSummary(judge_version=version.name, total=len(uris))
    check_overrides(version, replicas, "--replicas")  # before Ray starts
    check_overrides(version, batch_size, "--batch-size")
    # Cheap checks first, before Ray starts or a model loads: the model folders exist
    # (hashing them is the fingerprint), and the version judges as it did before.
    judge = Judge(version, load=False)
    ledger.register_version(version.name, judge.fingerprint.digest, judge.fingerprint.parts)
    done = ledger.judged_bundle_hashes(version.name)
    to_import = None
    if bags is not None:
        found, to_import = sort_bags(bags, bag_import, done)
        uris = [*uris, *found]
        summary.total = len(uris) + len(to_import.todo)
        summary.bags = to_import.stats
    todo = deque(u for u in uris if claimed_bundle_hash(u) not in done)
    summary.skipped = len(uris) - len(todo)
    if not todo and not (to_import and to_import.todo):
        return summary
    if gpu_memory_gib is not None:  # before Ray starts: an engine whose share cannot hold it
        check_engines(version, gpu_memory_gib, version_sizes(version))
    start_ray(ray_address)
    try:
        plan = plan_batch(version, ray.cluster_resources(), replicas, batch_size,
                          max_in_flight, prepare_workers)
    except Unplaceable:  # no GPU of the cluster could hold them: as Ray would say
        plan = plan_batch(version, ray.cluster_resources(), replicas, batch_size,
                          max_in_flight, prepare_workers, place=False)
        raise unplaced(version, plan, place_timeout_s) from None
    summary.plan = plan.as_dict(version)
    summary.calls = {m.name: {"calls": 0, "requests": 0, "compute_s": 0.0, "restarts": 0,
                              "replicas_lost": 0} for m in version.models}
    t_start = time.perf_counter()
    pg = place_replicas(version, plan, place_timeout_s)
    preps = [PrepareActor.options(num_cpus=plan.cpu_share).remote(version)
             for _ in range(plan.prepare_workers)]
    handles, said = start_replicas(version, plan, pg, judge.served)
    actors = [*preps, *handles.values()]
    summary.startup_s = time.perf_counter() - t_start  # placed and loaded: judging starts
    bad = list(dict.fromkeys(f"model {version.models[i].name!r} could not load: {err}"
                             for (i, _), err in sorted(said.items()) if err))
    if bad:
        for actor in actors:
            ray.kill(actor)
        remove_placement_group(pg)
        raise BatchError("; ".join(bad))
    gpu_of = {key: g for g, slot in enumerate(plan.gpus) for key in slot.replicas}
    pools = [[Replica(handles[(i, r)], r, gpu=gpu_of.get((i, r)),
                      slots=SERVED_CALLS if served(version.models[i]) else 1)
              for r in range(n)] for i, n in enumerate(plan.replicas)]
    batch = Batch(version, ledger, judge, plan, summary, todo, preps, pools, progress,
                  to_import)
    try:
        batch.run()
    finally:
        for actor in actors:
            ray.kill(actor)
        remove_placement_group(pg)
        summary.reserved = batch_cost(
            len(plan.gpus), cpus_held(version, plan),
            summary.startup_s, summary.seconds, summary.cost_usd, summary.judged, pricing(),
            summary.served_usd)
    return summary
