"""The driver's loop of a batch, once its replicas have started: one named method per step.

:class:`Batch` keeps the bundles in flight (at most ``max_in_flight``), one queue of asks
per model and the replicas' states (:mod:`judge.batch.work`), and writes each bundle's
run + judgment to the ledger when its question flow is done. ``judge.batch.run.run_batch``
checks, plans, places and starts the replicas (:mod:`judge.batch.place`), then runs it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ray

from judge.batch.actors import WAITING, Failure
from judge.batch.place import BatchError
from judge.batch.plan import Plan
from judge.batch.work import Ask, Replica, Work, one_line, take
from judge.ensemble.judge import Judge, QuestionFlow
from judge.ensemble.version import JudgeVersion
from judge.ledgers.errors import LedgerError
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger
from models.endpoint import ServedModelChanged
from rcjudge.progress import Progress

if TYPE_CHECKING:
    from judge.batch.bags import BagsToImport
    from judge.batch.summary import BatchSummary


class Batch:
    """One batch in the driver, its replicas started: the loop and its steps.

    :meth:`run` repeats :meth:`submit_prepare` (bundles to the prepare actors, up to
    ``max_in_flight``), :meth:`dispatch` (queued asks to idle replicas) and :meth:`collect`
    (one finished remote call, handed to :meth:`prepared`, :meth:`answered`,
    :meth:`call_failed` or :meth:`probed`) until every bundle is written or failed.
    """

    def __init__(self, version: JudgeVersion, ledger: Ledger, judge: Judge, plan: Plan,
                 summary: BatchSummary, todo: deque[str], preps: list,
                 pools: list[list[Replica]], progress: bool, bags: BagsToImport | None = None
                 ) -> None:
        self.version, self.ledger, self.judge, self.plan = version, ledger, judge, plan
        self.summary, self.todo, self.preps, self.pools = summary, todo, preps, pools
        self.bags = bags
        self.names = [m.name for m in version.models]
        self.queues: list[deque[Ask]] = [deque() for _ in pools]
        self.pending: dict[Any, tuple] = {}  # remote call -> what it was
        self.in_flight = 0  # bundles between submission and ledger write
        self.next_prep = 0
        self.seen: set[str] = set()  # verified bundle hashes of this batch's bundles
        self.meter = Progress(len(todo) + (len(bags.todo) if bags else 0), progress)

    def run(self) -> None:
        """Judge every bundle of ``todo``; ^C marks the summary interrupted."""
        t0 = time.perf_counter()
        try:
            while True:
                self.submit_prepare()
                self.dispatch()  # may fail bundles (no live replica) and so free room
                if not self.pending:
                    if self.more() and self.in_flight < self.plan.max_in_flight:
                        continue
                    break
                self.collect()
        except KeyboardInterrupt:
            self.summary.interrupted = True
        finally:
            self.meter.close()
            self.summary.seconds = time.perf_counter() - t0

    def more(self) -> bool:
        """Bundles or bags still to submit."""
        return bool(self.todo or (self.bags and self.bags.todo))

    def submit_prepare(self) -> None:
        """Bundles to the prepare actors, round robin, while there is room in flight; when
        none is waiting, bags to import (each holds a place in flight while it imports)."""
        while self.more() and self.in_flight < self.plan.max_in_flight:
            actor = self.preps[self.next_prep % len(self.preps)]
            if self.todo:
                work = Work(self.todo.popleft(), model_s=[0.0] * len(self.pools))
                ref, work.frames_ref = actor.prepare.remote(work.uri)
                self.pending[ref] = ("prep", work)
            else:
                bag = self.bags.todo.popleft()
                self.pending[actor.import_bag.remote(bag, self.bags.how)] = ("bag", bag)
            self.next_prep += 1
            self.in_flight += 1

    def replicas(self) -> list[tuple[int, Replica]]:
        return [(i, rep) for i, pool in enumerate(self.pools) for rep in pool]

    def quieting(self, gpu: int | None) -> bool:
        """Whether a restarted replica on ``gpu`` waits to load or is loading: the other
        replicas there are sent nothing meanwhile."""
        return gpu is not None and any(r.gpu == gpu and (r.waiting or r.loading)
                                       for _, r in self.replicas())

    def load_restarted(self) -> None:
        """A restarted replica loads its model once no other replica on its GPU has a call
        running (on CPU, at once): its engine's start-up then measures a quiet GPU."""
        for i, rep in self.replicas():
            if not rep.waiting:
                continue
            if rep.gpu is not None and any(r.calls for _, r in self.replicas()
                                           if r is not rep and r.gpu == rep.gpu):
                continue
            rep.waiting, rep.loading = False, True
            self.pending[rep.handle.load.remote()] = ("load", i, rep)

    def dispatch(self) -> None:
        """Each idle live replica takes its model's queued asks (none on a GPU where a
        restarted replica is about to load); a model without a live replica fails its
        queued bundles."""
        self.load_restarted()
        for i, pool in enumerate(self.pools):
            live = [rep for rep in pool if not rep.dead]
            if not live:
                while self.queues[i]:
                    a = self.queues[i].popleft()
                    if not a.work.failed:
                        self.fail_work(a.work, "ReplicasLost",
                                       f"model {self.names[i]!r}: no live replica left")
                continue
            for rep in live:
                if not rep.available or not self.queues[i] or self.quieting(rep.gpu):
                    continue
                asks = take(self.queues[i], rep.index, len(live), self.plan.batch_size[i])
                if asks:
                    self.pending[rep.handle.score.remote(*shipped(asks))] = ("ask", i, rep, asks)
                    rep.calls += 1

    def collect(self) -> None:
        """Wait for one remote call and hand its outcome to its step."""
        ready, _ = ray.wait(list(self.pending), num_returns=1)
        entry = self.pending.pop(ready[0])
        if entry[0] == "ask":
            entry[2].calls -= 1
        try:
            result = ray.get(ready[0])
        except ray.exceptions.RayError as exc:  # the model raised, or its replica died
            if entry[0] == "probe":
                self.probed(entry[1], entry[2], exc)
            elif entry[0] == "load":  # died again while loading: ask what Ray did
                entry[2].loading = False
                self.probe(entry[1], entry[2])
            elif entry[0] == "ask":
                self.call_failed(entry[1], entry[2], entry[3], exc)
            elif entry[0] == "bag":  # a prepare actor died importing it
                self.bag_failed(entry[1], type(exc).__name__, one_line(exc))
            elif not entry[1].failed:  # a prepare actor died
                self.fail_work(entry[1], type(exc).__name__, one_line(exc))
            return
        if entry[0] == "prep":
            self.prepared(entry[1], result)
        elif entry[0] == "bag":
            self.imported(entry[1], result)
        elif entry[0] in ("probe", "load"):
            entry[2].loading = False
            self.probed(entry[1], entry[2], result)
        else:
            self.answered(entry[1], entry[3], *result)

    def prepared(self, work: Work, result) -> None:
        """A bundle decoded (its frames stay where they were decoded) or failed intake.

        A bundle whose verified hash this batch already has (the same bundle under another
        name: one run) is skipped, not judged again."""
        if isinstance(result, Failure):
            self.fail_work(work, result.error, result.message)
            return
        if result.bundle_hash in self.seen:
            work.frames_ref = None
            self.summary.skipped += 1
            self.done_one()
            return
        self.seen.add(result.bundle_hash)
        work.prepared = result
        work.flow = QuestionFlow(self.judge, result)
        self.enqueue(work)

    def imported(self, bag: str, result) -> None:
        """A bag's bundles: those not judged yet to the front of ``todo``; or its failure."""
        if isinstance(result, Failure):
            self.bag_failed(bag, result.error, result.message)
            return
        bundles, now = result
        stats = self.bags.stats
        stats["imported" if now else "cached"] += 1
        stats["bundles"] += len(bundles)
        fresh = self.bags.not_judged(bundles)
        self.summary.total += len(bundles) - 1  # the bag counted one until now
        self.summary.skipped += len(bundles) - len(fresh)
        self.todo.extendleft(reversed(fresh))
        self.meter.total += len(fresh) - 1
        self.in_flight -= 1

    def bag_failed(self, bag: str, error: str, message: str) -> None:
        self.bags.stats["failed"] += 1
        self.fail(bag, error, message)
        self.done_one()

    def enqueue(self, work: Work) -> None:
        for j, requests in work.flow.requests().items():
            self.queues[j].append(Ask(work, requests))

    def answered(self, i: int, asks: list[Ask], answers: list, seconds: float,
                 usd: list[float]) -> None:
        """Model ``i``'s answers to one call: each bundle its share of the seconds and what
        its own requests were charged, its next questions queued, or written when its flow
        is done."""
        n = sum(len(a.requests) for a in asks)
        stats = self.summary.calls[self.names[i]]
        stats["calls"] += 1
        stats["requests"] += n
        stats["compute_s"] += seconds
        self.summary.served_usd += sum(usd)
        at = 0
        for a in asks:
            k = len(a.requests)
            mine, charged, at = answers[at:at + k], usd[at:at + k], at + k
            if a.work.failed:  # an answer for a bundle already recorded as failed
                continue
            a.work.model_s[i] += seconds * k / n
            a.work.model_usd[i] += sum(charged)
            a.work.flow.answer(i, mine)
            if a.work.flow.done:
                self.write(a.work)
            else:
                self.enqueue(a.work)

    def call_failed(self, i: int, rep: Replica, asks: list[Ask], exc: Exception) -> None:
        """A call raised or lost its replica: each bundle once more, alone and elsewhere;
        a bundle's second failure records it. A served model that changed stops the batch.

        Raises:
            BatchError: the served model changed (``ServedModelChanged``): judging on would
                mix two judges under one version.
        """
        cause = getattr(exc, "cause", None)
        if isinstance(cause, ServedModelChanged):
            raise BatchError(f"batch stopped: {cause}") from None
        if isinstance(exc, ray.exceptions.RayActorError) and not rep.recovering:
            self.probe(i, rep)
        retry = []
        for a in asks:
            if a.work.failed:
                continue
            if i in a.work.retried:
                self.fail_work(a.work, type(exc).__name__, one_line(exc))
            else:
                a.work.retried.add(i)
                retry.append(Ask(a.work, a.requests, avoid=rep.index))
        self.queues[i].extendleft(reversed(retry))

    def probe(self, i: int, rep: Replica) -> None:
        rep.recovering = True
        self.pending[rep.handle.ready.remote()] = ("probe", i, rep)

    def probed(self, i: int, rep: Replica, outcome: Any) -> None:
        """What ``ready()`` said after a death — restarted and waiting to load, or gone for
        good — or what ``load()`` said: loaded (None), or its error."""
        if isinstance(outcome, ray.exceptions.ActorUnavailableError):
            time.sleep(0.1)  # unreachable for now, neither restarted nor dead: ask again
            self.pending[rep.handle.ready.remote()] = ("probe", i, rep)
            return
        if outcome == WAITING:  # restarted: it loads once its GPU is quiet (load_restarted)
            rep.waiting = True
            return
        rep.recovering = False
        if outcome is None:
            self.summary.calls[self.names[i]]["restarts"] += 1
        else:  # died for good, or restarted but its model no longer loads
            rep.dead = True
            self.summary.calls[self.names[i]]["replicas_lost"] += 1

    def write(self, work: Work) -> None:
        """Vote, then run + judgment in one ledger transaction."""
        p, work.frames_ref = work.prepared, None  # its frames can leave the object store
        judgment = self.judge.finish(p, work.flow.votes, work.flow.raw, model_s=work.model_s,
                                     model_usd=work.model_usd)
        run = Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
                  attribution=p.attribution, duration_s=p.duration_s, cycle_sec=p.cycle_sec)
        self.done_one()
        try:
            self.ledger.record(run, judgment)
        except LedgerError as exc:  # e.g. the same bundle already recorded under another id
            self.fail(p.uri, type(exc).__name__, str(exc))
            return
        self.summary.judged += 1
        self.summary.cost_usd += judgment.cost.usd

    def fail_work(self, work: Work, error: str, message: str) -> None:
        work.failed, work.frames_ref = True, None
        self.fail(work.uri, error, message)
        self.done_one()

    def fail(self, uri: str, error: str, message: str) -> None:
        self.summary.failed.append({"uri": uri, "error": error, "message": message})
        self.ledger.record_failure(uri, self.version.name, error, message)

    def done_one(self) -> None:
        self.in_flight -= 1
        self.meter.step()


def shipped(asks: list[Ask]) -> tuple:
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
