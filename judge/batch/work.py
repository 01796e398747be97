"""The driver's bookkeeping of a batch: bundles in flight, their asks, the replicas' states.

``judge.batch.driver.Batch`` keeps one :class:`Work` per bundle between submission and ledger
write, one queue of :class:`Ask` per model, and one :class:`Replica` per model replica;
:func:`take` is the policy by which an idle replica takes queued asks.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from judge.ensemble.judge import Prepared, QuestionFlow


@dataclass
class Work:
    """One bundle between submission and ledger write."""

    uri: str
    prepared: Prepared | None = None
    flow: QuestionFlow | None = None
    frames_ref: Any = None  # the frames, in the object store of the node that decoded them
    model_s: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    model_usd: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])  # servers' charges
    retried: set[int] = field(default_factory=set)  # models whose call already failed once
    failed: bool = False  # recorded as failed: answers still in flight are dropped


@dataclass
class Ask:
    """One bundle's requests to one model, queued for a replica."""

    work: Work
    requests: list
    avoid: int | None = None  # a retry: the replica it failed on (sent alone, elsewhere)


@dataclass
class Replica:
    """One model replica as the driver sees it.

    After a call fails because the replica's process died, it is *recovering*: the driver
    asks it ``ready()``, which Ray answers once the actor restarted or fails once it will not
    restart (``max_restarts`` spent): then it is *dead*. Restarted, it is *waiting*: its
    model loads when the driver calls ``load()``, once no other replica on its ``gpu`` has a
    call running (and none is sent one until the load is over), then usable again.
    """

    handle: Any
    index: int
    gpu: int | None = None  # the plan's GPU it shares with other replicas; None: on CPU
    calls: int = 0  # calls sent and not answered yet
    slots: int = 1  # calls it takes at once: 2 for a served model, whose pool stays full
    recovering: bool = False
    waiting: bool = False  # restarted, its model not loaded yet
    loading: bool = False  # its load() is running
    dead: bool = False

    @property
    def available(self) -> bool:
        return self.calls < self.slots and not (self.recovering or self.dead)


def one_line(exc: Exception) -> str:
    """What a failed remote call says, without Ray's traceback framing."""
    cause = getattr(exc, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def take(queue: deque[Ask], replica: int, live: int, batch_size: int) -> list[Ask]:
    """The asks replica ``replica`` sends next, removed from ``queue``.

    Asks of bundles already failed are dropped. A retry goes alone, to a replica other
    than the one it failed on when the model has another live one (``live`` > 1). Else the
    oldest asks, up to ``batch_size`` requests (at least one ask, however large).
    """
    batch: list[Ask] = []
    kept: list[Ask] = []
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
