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
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

import ray
from ray.util.placement_group import placement_group, remove_placement_group

from judge.batch.actors import (
    Failure,
    PrepareActor,
    model_actor,
    model_resources,
)
from judge.batch.plan import Plan, check_overrides, plan_batch
from judge.bundle.manifest import claimed_bundle_hash
from judge.ensemble.judge import Judge, Prepared, QuestionFlow
from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError
from judge.ledgers.errors import LedgerError
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger
from rcjudge.progress import Progress


class BatchError(JudgeError, ValueError):
    """A batch cannot start as asked (a limit out of range, a report path not writable)."""


def check_max_in_flight(n: int, name: str = "max_in_flight") -> int:
    """``n`` if it is at least 1; else a :class:`BatchError` naming ``name`` and the value."""
    if n < 1:
        raise BatchError(f"{name} {n}: expected at least 1 (bundles between submission and "
                         "ledger write)")
    return n


@dataclass
class BatchSummary:
    """What a batch did; ``as_dict`` is the ``--json`` output."""

    judge_version: str
    total: int = 0
    judged: int = 0
    skipped: int = 0
    failed: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    startup_s: float = 0.0
    cost_usd: float = 0.0
    interrupted: bool = False
    plan: dict[str, Any] = field(default_factory=dict)
    # per model: engine calls, requests, compute seconds, replicas lost
    calls: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def per_minute(self) -> float:
        return 60.0 * self.judged / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"judge_version": self.judge_version, "total": self.total,
                "judged": self.judged, "skipped": self.skipped, "failed": len(self.failed),
                "failures": self.failed, "seconds": round(self.seconds, 2),
                "startup_s": round(self.startup_s, 2),
                "bundles_per_minute": round(self.per_minute, 1),
                "cost_usd": round(self.cost_usd, 6), "interrupted": self.interrupted,
                "plan": self.plan,
                "calls": {m: {k: round(v, 6) if isinstance(v, float) else v
                              for k, v in c.items()} for m, c in self.calls.items()}}


@dataclass
class _Work:
    """One bundle between submission and ledger write."""

    uri: str
    prepared: Prepared | None = None
    flow: QuestionFlow | None = None
    frames_ref: Any = None  # the frames, in the object store of the node that decoded them
    model_s: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    retried: set[int] = field(default_factory=set)  # models whose call already failed once
    failed: bool = False  # recorded as failed: answers still in flight are dropped


@dataclass
class _Ask:
    """One bundle's requests to one model, queued for a replica."""

    work: _Work
    requests: list
    avoid: int | None = None  # a retry: the replica it failed on (sent alone, elsewhere)


@dataclass
class _Replica:
    """One model replica as the driver sees it.

    After a call fails because the replica's process died, it is *recovering*: the driver
    asks it ``ready()``, which Ray answers once the actor restarted (it is usable again) or
    fails once it will not restart (``max_restarts`` spent): then it is *dead*.
    """

    handle: Any
    index: int
    busy: bool = False
    recovering: bool = False
    dead: bool = False

    @property
    def available(self) -> bool:
        return not (self.busy or self.recovering or self.dead)


def _one_line(exc: Exception) -> str:
    """What a failed remote call says, without Ray's traceback framing."""
    cause = getattr(exc, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def start_ray(address: str | None) -> None:
    """Join a cluster at ``address`` (or ``$RAY_ADDRESS``), else start a local Ray.

    Without either, a local Ray with this machine's CPUs is started even when a cluster
    started by ``ray start`` runs on the machine: Ray's own default would join that one
    (someone else's, and it refuses ``num_cpus``).
    """
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and address != "local":
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                 log_to_driver=False)


def take(queue: deque[_Ask], replica: int, live: int, batch_size: int) -> list[_Ask]:
    """The asks replica ``replica`` sends next, removed from ``queue``.

    Asks of bundles already failed are dropped. A retry goes alone, to a replica other
    than the one it failed on when the model has another live one (``live`` > 1). Else the
    oldest asks, up to ``batch_size`` requests (at least one ask, however large).
    """
    batch: list[_Ask] = []
    kept: list[_Ask] = []
    size = 0
    while queue:
        a = queue.popleft()
        if a.work.failed:
            continue
        if a.avoid is not None:
            if not batch and (a.avoid != replica or live <= 1):
                batch = [a]
                break
            kept.append(a)
        elif batch and size + len(a.requests) > batch_size:
            queue.appendleft(a)
            break
        else:
            batch.append(a)
            size += len(a.requests)
    queue.extendleft(reversed(kept))
    return batch


def place_replicas(version: JudgeVersion, plan: Plan, timeout_s: float):
    """A placement group with one bundle per model replica, ready; else a :class:`BatchError`.

    Ray reserves all bundles or none ("SPREAD": over as many nodes as it can), so a plan
    whose shares do not fit on the nodes as they are (three 0.6-GPU replicas on two 1-GPU
    nodes) is known before any model loads.
    """
    bundles = [model_resources(m, plan.cpu_share)
               for m, n in zip(version.models, plan.replicas, strict=True) for _ in range(n)]
    pg = placement_group(bundles, strategy="SPREAD")
    try:
        ray.get(pg.ready(), timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        remove_placement_group(pg)
        def one(m) -> str:
            return " ".join(f"{v:g} {k}" for k, v in model_resources(m, plan.cpu_share).items())

        asked = ", ".join(f"{m.name} {n}×({one(m)})"
                          for m, n in zip(version.models, plan.replicas, strict=True))
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
        per_node = ", ".join(f"({r.get('CPU', 0):g} CPU {r.get('GPU', 0):g} GPU)" for r in nodes)
        raise BatchError(f"the replicas could not be placed within {timeout_s:g} s: {asked} "
                         f"on nodes of {per_node} (shares that do not fit one node, or "
                         "resources in use)") from None
    return pg


def run_batch(uris: list[str], version: JudgeVersion, ledger: Ledger,
              ray_address: str | None = None, max_in_flight: int | None = None,
              prepare_workers: int | None = None, progress: bool = True,
              replicas: dict[str, int] | int | None = None,
              batch_size: dict[str, int] | int | None = None,
              place_timeout_s: float = 60.0) -> BatchSummary:
    """Judge ``uris`` with ``version`` into ``ledger``; see the module docstring.

    ``replicas`` / ``batch_size``: one number for every model or ``{name: n}``; unset, the
    version's, else :mod:`judge.batch.plan`'s defaults for the cluster. The replicas are
    reserved together as one placement group (Ray places its bundles, spread over the
    nodes); one the cluster cannot place within ``place_timeout_s`` is a one-line
    :class:`BatchError` before any model loads, not a batch that waits forever.
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
    todo = deque(u for u in uris if claimed_bundle_hash(u) not in done)
    summary.skipped = len(uris) - len(todo)
    if not todo:
        return summary
    start_ray(ray_address)
    plan: Plan = plan_batch(version, ray.cluster_resources(), replicas, batch_size,
                            max_in_flight, prepare_workers)
    summary.plan = plan.as_dict(version)
    names = [m.name for m in version.models]
    summary.calls = {n: {"calls": 0, "requests": 0, "compute_s": 0.0, "restarts": 0,
                         "replicas_lost": 0} for n in names}
    pg = place_replicas(version, plan, place_timeout_s)
    preps = [PrepareActor.options(num_cpus=plan.cpu_share).remote(version)
             for _ in range(plan.prepare_workers)]
    slots = iter(range(sum(plan.replicas)))
    pools = [[_Replica(model_actor(m, plan.cpu_share, (pg, next(slots)), version), r)
              for r in range(plan.replicas[i])] for i, m in enumerate(version.models)]
    actors = [*preps, *(rep.handle for pool in pools for rep in pool)]
    t_start = time.perf_counter()
    errors = ray.get([rep.handle.ready.remote() for pool in pools for rep in pool])
    summary.startup_s = time.perf_counter() - t_start  # models loaded: judging starts now
    owners = [m for m, pool in zip(version.models, pools, strict=True) for _ in pool]
    bad = list(dict.fromkeys(f"model {e.name!r} could not load: {err}"
                             for e, err in zip(owners, errors, strict=True) if err))
    if bad:
        for actor in actors:
            ray.kill(actor)
        remove_placement_group(pg)
        raise BatchError("; ".join(bad))
    queues: list[deque[_Ask]] = [deque() for _ in pools]
    pending: dict[Any, tuple] = {}
    in_flight, next_prep = 0, 0
    meter = Progress(len(todo), progress)
    t0 = time.perf_counter()

    def submit_prepare() -> None:
        nonlocal in_flight, next_prep
        while todo and in_flight < plan.max_in_flight:
            work = _Work(todo.popleft(), model_s=[0.0] * len(pools))
            ref, work.frames_ref = preps[next_prep % len(preps)].prepare.remote(work.uri)
            pending[ref] = ("prep", work)
            next_prep += 1
            in_flight += 1

    def dispatch() -> None:
        for i, pool in enumerate(pools):
            live = [rep for rep in pool if not rep.dead]
            if not live:  # every replica of this model is gone: its bundles fail
                while queues[i]:
                    a = queues[i].popleft()
                    if not a.work.failed:
                        fail_work(a.work, "ReplicasLost",
                                  f"model {names[i]!r}: no live replica left")
                continue
            for rep in live:
                if not rep.available or not queues[i]:
                    continue
                asks = take(queues[i], rep.index, len(live), plan.batch_size[i])
                if not asks:
                    continue
                pending[rep.handle.score.remote(*shipped(asks))] = ("ask", i, rep, asks)
                rep.busy = True

    def shipped(asks: list[_Ask]) -> tuple:
        """A call's arguments: the requests without frames, and each bundle's frames once."""
        refs: dict[int, int] = {}
        requests, where = [], []
        for a in asks:
            k = refs.setdefault(id(a.work), len(refs))
            for r in a.requests:
                requests.append(replace(r, frames=None))
                where.append(k)
        frames = {id(a.work): a.work.frames_ref for a in asks}
        return (requests, where, *(frames[w] for w in refs))

    def enqueue(work: _Work) -> None:
        for j, requests in work.flow.requests().items():
            queues[j].append(_Ask(work, requests))

    def fail(uri: str, error: str, message: str) -> None:
        summary.failed.append({"uri": uri, "error": error, "message": message})
        ledger.record_failure(uri, version.name, error, message)

    def fail_work(work: _Work, error: str, message: str) -> None:
        nonlocal in_flight
        work.failed, work.frames_ref = True, None
        fail(work.uri, error, message)
        in_flight -= 1
        meter.step()

    def write(work: _Work) -> None:
        nonlocal in_flight
        p, work.frames_ref = work.prepared, None  # its frames can leave the object store
        judgment = judge.finish(p, work.flow.votes, work.flow.raw, model_s=work.model_s)
        run = Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
                  attribution=p.attribution, duration_s=p.duration_s, cycle_sec=p.cycle_sec)
        in_flight -= 1
        meter.step()
        try:
            ledger.record(run, judgment)
        except LedgerError as exc:  # e.g. the same bundle already recorded under another id
            fail(p.uri, type(exc).__name__, str(exc))
            return
        summary.judged += 1
        summary.cost_usd += judgment.cost.usd

    def answered(i: int, asks: list[_Ask], answers: list, seconds: float) -> None:
        n = sum(len(a.requests) for a in asks)
        stats = summary.calls[names[i]]
        stats["calls"] += 1
        stats["requests"] += n
        stats["compute_s"] += seconds
        at = 0
        for a in asks:
            k = len(a.requests)
            mine, at = answers[at:at + k], at + k
            if a.work.failed:  # an answer for a bundle already recorded as failed
                continue
            a.work.model_s[i] += seconds * k / n  # its share of the call
            a.work.flow.answer(i, mine)
            if a.work.flow.done:
                write(a.work)
            else:
                enqueue(a.work)

    def probe(i: int, rep: _Replica) -> None:
        rep.recovering = True
        pending[rep.handle.ready.remote()] = ("probe", i, rep)

    def probed(i: int, rep: _Replica, outcome: Any) -> None:
        """What ``ready()`` said after a death: restarted (None), or gone for good."""
        if isinstance(outcome, ray.exceptions.ActorUnavailableError):
            time.sleep(0.1)  # unreachable for now, neither restarted nor dead: ask again
            pending[rep.handle.ready.remote()] = ("probe", i, rep)
            return
        rep.recovering = False
        if outcome is None:
            summary.calls[names[i]]["restarts"] += 1
        else:  # died for good, or restarted but its model no longer loads
            rep.dead = True
            summary.calls[names[i]]["replicas_lost"] += 1

    def call_failed(i: int, rep: _Replica, asks: list[_Ask], exc: Exception) -> None:
        if isinstance(exc, ray.exceptions.RayActorError) and not rep.recovering:
            probe(i, rep)
        retry = []
        for a in asks:
            if a.work.failed:
                continue
            if i in a.work.retried:  # its second failure: this bundle alone is lost
                fail_work(a.work, type(exc).__name__, _one_line(exc))
            else:
                a.work.retried.add(i)
                retry.append(_Ask(a.work, a.requests, avoid=rep.index))
        queues[i].extendleft(reversed(retry))

    try:
        while True:
            submit_prepare()
            dispatch()  # may fail bundles (no live replica) and so free room for more
            if not pending:
                if todo and in_flight < plan.max_in_flight:
                    continue
                break
            ready, _ = ray.wait(list(pending), num_returns=1)
            entry = pending.pop(ready[0])
            if entry[0] == "ask":
                entry[2].busy = False
            try:
                result = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the model raised, or its replica died
                if entry[0] == "probe":
                    probed(entry[1], entry[2], exc)
                elif entry[0] == "ask":
                    call_failed(entry[1], entry[2], entry[3], exc)
                elif not entry[1].failed:  # a prepare actor died
                    fail_work(entry[1], type(exc).__name__, _one_line(exc))
            else:
                if entry[0] == "prep":
                    work = entry[1]
                    if isinstance(result, Failure):
                        fail_work(work, result.error, result.message)
                    else:
                        work.prepared = result  # its frames stay where they were decoded
                        work.flow = QuestionFlow(judge, result)
                        enqueue(work)
                elif entry[0] == "probe":
                    probed(entry[1], entry[2], result)
                else:
                    answered(entry[1], entry[3], *result)
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        meter.close()
        summary.seconds = time.perf_counter() - t0
        for actor in actors:
            ray.kill(actor)
        remove_placement_group(pg)
    return summary
