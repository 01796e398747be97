"""``rcjudge batch``: judge many bundles on Ray with bounded work in flight, into the ledgers.

Flow per bundle: a CPU actor prepares it (intake, decode, frames); the model actors get
the questions of :class:`judge.ensemble.judge.QuestionFlow` — the same flow the single
call runs (attempt and success for all three, then family and class for the models
that voted "no"); the driver votes and writes run + judgment in one ledger
transaction. At most ``max_in_flight`` bundles are between "submitted" and "written"
at any time (backpressure: a slow model never makes memory grow).

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
from dataclasses import dataclass, field
from typing import Any

import ray

from judge.batch.actors import Failure, PrepareActor, model_actor
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

    @property
    def per_minute(self) -> float:
        return 60.0 * self.judged / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"judge_version": self.judge_version, "total": self.total,
                "judged": self.judged, "skipped": self.skipped, "failed": len(self.failed),
                "failures": self.failed, "seconds": round(self.seconds, 2),
                "startup_s": round(self.startup_s, 2),
                "bundles_per_minute": round(self.per_minute, 1),
                "cost_usd": round(self.cost_usd, 6), "interrupted": self.interrupted}


@dataclass
class _Work:
    """One bundle between submission and ledger write."""

    uri: str
    prepared: Prepared | None = None
    flow: QuestionFlow | None = None
    asked_at: float = 0.0
    retried: set[int] = field(default_factory=set)  # models whose call already failed once
    failed: bool = False  # recorded as failed: answers still in flight are dropped


def _one_line(exc: Exception) -> str:
    """What a failed remote call says, without Ray's traceback framing."""
    cause = getattr(exc, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def start_ray(address: str | None) -> None:
    """Join a cluster at ``address``, or start a local Ray with this machine's CPUs."""
    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)


def run_batch(uris: list[str], version: JudgeVersion, ledger: Ledger,
              ray_address: str | None = None, max_in_flight: int = 8,
              prepare_workers: int | None = None, progress: bool = True) -> BatchSummary:
    """Judge ``uris`` with ``version`` into ``ledger``; see the module docstring."""
    check_max_in_flight(max_in_flight)
    summary = BatchSummary(judge_version=version.name, total=len(uris))
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
    cpus = ray.available_resources().get("CPU", 1.0)
    n_prep = prepare_workers or max(1, int(cpus) // 2)
    share = max(0.1, min(1.0, cpus / (2 * (n_prep + 3))))
    preps = [PrepareActor.options(num_cpus=share).remote(version) for _ in range(n_prep)]
    models = [model_actor(m, share) for m in version.models]
    t_start = time.perf_counter()
    errors = ray.get([m.ready.remote() for m in models])  # models loaded: judging starts now
    summary.startup_s = time.perf_counter() - t_start
    if bad := [f"model {e.name!r} could not load: {err}"
               for e, err in zip(version.models, errors, strict=True) if err]:
        for actor in [*preps, *models]:
            ray.kill(actor)
        raise BatchError("; ".join(bad))
    pending: dict[Any, tuple[str, _Work, int, list | None]] = {}
    in_flight, next_prep = 0, 0
    meter = Progress(len(todo), progress)
    t0 = time.perf_counter()

    def submit_prepare() -> None:
        nonlocal in_flight, next_prep
        while todo and in_flight < max_in_flight:
            work = _Work(todo.popleft())
            pending[preps[next_prep % n_prep].prepare.remote(work.uri)] = ("prep", work, -1,
                                                                           None)
            next_prep += 1
            in_flight += 1

    def ask(work: _Work) -> None:
        for j, requests in work.flow.requests().items():
            pending[models[j].score.remote(requests)] = ("ask", work, j, requests)

    def fail(uri: str, error: str, message: str) -> None:
        summary.failed.append({"uri": uri, "error": error, "message": message})
        ledger.record_failure(uri, version.name, error, message)

    def write(work: _Work) -> None:
        nonlocal in_flight
        p = work.prepared
        judgment = judge.finish(p, work.flow.votes, work.flow.raw,
                                time.perf_counter() - work.asked_at)
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

    try:
        submit_prepare()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            stage, work, i, requests = pending.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the model raised, or its replica died
                if not work.failed and stage == "ask" and i not in work.retried:
                    work.retried.add(i)  # once more; a second failure costs this bundle only
                    pending[models[i].score.remote(requests)] = ("ask", work, i, requests)
                elif not work.failed:
                    work.failed = True
                    fail(work.uri, type(exc).__name__, _one_line(exc))
                    in_flight -= 1
                    meter.step()
                submit_prepare()
                continue
            if work.failed:  # an answer for a bundle already recorded as failed
                submit_prepare()
                continue
            if stage == "prep":
                if isinstance(result, Failure):
                    fail(result.uri, result.error, result.message)
                    in_flight -= 1
                    meter.step()
                else:
                    work.prepared, work.asked_at = result, time.perf_counter()
                    work.flow = QuestionFlow(judge, result)
                    ask(work)
            else:  # a model's answers: the flow says what to ask next, or that it is done
                work.flow.answer(i, result)
                if work.flow.done:
                    write(work)
                else:
                    ask(work)
            submit_prepare()
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        meter.close()
        summary.seconds = time.perf_counter() - t0
        for actor in [*preps, *models]:
            ray.kill(actor)
    return summary
