"""What a batch did: :class:`BatchSummary`, filled in by ``judge.batch.run.run_batch`` and the
driver's loop (:mod:`judge.batch.driver`), printed by ``rcjudge batch`` (``--json``: ``as_dict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge.batch.cost import BatchCost


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
    served_usd: float = 0.0  # what servers charged for every answered request (failed bundles too)
    interrupted: bool = False
    plan: dict[str, Any] = field(default_factory=dict)
    # cost_usd is the judgments' own (busy) costs, summed: Σ of the ledger rows' cost;
    # reserved is what the batch held (GPUs and CPUs from reservation to the last write)
    reserved: BatchCost | None = None
    # per model: engine calls, requests, compute seconds, replicas lost
    calls: dict[str, dict[str, float]] = field(default_factory=dict)
    # ROS bags (``--mapping``): bags, imported now, found in the cache, failed, bundles made
    bags: dict[str, Any] | None = None

    @property
    def per_minute(self) -> float:
        return 60.0 * self.judged / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"judge_version": self.judge_version, "total": self.total,
                "judged": self.judged, "skipped": self.skipped, "failed": len(self.failed),
                "failures": self.failed, "seconds": round(self.seconds, 2),
                "startup_s": round(self.startup_s, 2),
                "bundles_per_minute": round(self.per_minute, 1),
                "cost_usd": round(self.reserved.usd if self.reserved else self.cost_usd, 6),
                "busy_cost_usd": round(self.cost_usd, 6),
                "cost": self.reserved.as_dict() if self.reserved else {},
                "interrupted": self.interrupted,
                "plan": self.plan,
                "calls": {m: {k: round(v, 6) if isinstance(v, float) else v
                              for k, v in c.items()} for m, c in self.calls.items()},
                **({"bags": self.bags} if self.bags is not None else {}),
                **({"served_usd": round(self.served_usd, 6)} if self.served_usd else {})}
