"""Reference recomputation of one task, row by row with exact fractions.

Used by the 14 checks (:mod:`verdict.checks`): deliberately a second, plain
implementation of the spec (no numpy, no Arrow compute), so a check that
agrees with the vectorised engine is evidence and not an echo. It applies the
same exemption: a row with ``success`` false and ``counts_against_policy``
false is not one of the task's evaluation rows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from verdict.exact import half_up, median_half_up
from verdict.model import CYCLE_OVER, MISMATCH, NOT_EVALUATED, NOT_TRAINED, RATE_BELOW, SKEWED
from verdict.tables import Inputs

SKEW_MIN_FAILURES = 3


def _blank(value: object) -> bool:
    return value is None or value == ""


def exempt(row: dict[str, Any]) -> bool:
    """An exempt failure: ``success`` false and ``counts_against_policy`` false (a row
    without the column, or with either cell empty, counts)."""
    return row["success"] is False and row.get("counts_against_policy") is False


@dataclass
class TaskRef:
    """One task's rows in the three tables and what the spec says its card holds."""

    task_id: str
    rows: list[dict[str, Any]]  # the task's evaluation rows of the round, exempt ones out
    spec: dict[str, Any] | None
    ds: dict[str, Any] | None
    exempt: list[dict[str, Any]] = field(default_factory=list)  # the exempt failures
    metrics: dict[str, Any] = field(default_factory=dict)
    verdict: str | None = None
    cause: str | None = None
    reached: int = 0  # the last rule the decision order looked at (1–6)

    @property
    def evaluated(self) -> bool:
        return bool(self.rows)


class Reference:
    """Index of the three tables by task_id, then :meth:`task` per card."""

    def __init__(self, inputs: Inputs) -> None:
        self.inputs = inputs
        self.columns = {t: inputs.columns(t) for t in ("evaluation_run", "task_spec",
                                                       "dataset_index")}
        self._rows: dict[str, list[dict[str, Any]]] = {}
        for row in inputs.evaluation_run.to_pylist():
            self._rows.setdefault(row["task_id"], []).append(row)
        self._spec = {r["task_id"]: r for r in inputs.task_spec.to_pylist()}
        self._ds = {r["task_id"]: r for r in inputs.dataset_index.to_pylist()}

    @property
    def task_ids(self) -> list[str]:
        return list(self._spec)

    def task(self, task_id: str, artifact: str) -> TaskRef:
        """Recompute the card values of ``task_id`` for the round of ``artifact``."""
        rows = [r for r in self._rows.get(task_id, ()) if r["model_artifact"] == artifact]
        ref = TaskRef(task_id, [r for r in rows if not exempt(r)], self._spec.get(task_id),
                      self._ds.get(task_id), exempt=[r for r in rows if exempt(r)])
        ref.metrics = metrics(ref.rows)
        ref.metrics["more_episode_count"] = more_episodes(ref.spec, ref.ds)
        if ref.spec is not None:
            decide(ref)
        return ref


def metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The six metric fields of the spec (all None without rows)."""
    out: dict[str, Any] = dict.fromkeys(
        ("success_rate", "failure_total", "top_failure_reason", "top_failure_count",
         "top_failure_share", "cycle_sec_median"))
    if not rows:
        return out
    successes = [r["success"] for r in rows]
    if None not in successes:
        out["success_rate"] = half_up(Fraction(sum(1 for s in successes if s), len(rows)))
    failures = [r for r in rows if r["success"] is False]
    out["failure_total"] = len(failures)
    counts = Counter(r["failure_reason"] for r in failures if not _blank(r["failure_reason"]))
    if counts:
        top, count = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        out.update(top_failure_reason=top, top_failure_count=count,
                   top_failure_share=half_up(Fraction(count, len(failures))))
    out["cycle_sec_median"] = median_half_up(
        [r["cycle_sec"] for r in rows if r["cycle_sec"] is not None])
    return out


def more_episodes(spec: dict[str, Any] | None, ds: dict[str, Any] | None) -> int | None:
    """``min_episode_count − episode_count`` floored at 0; None without a row or count."""
    if spec is None or ds is None:
        return None
    if spec["min_episode_count"] is None or ds["episode_count"] is None:
        return None
    return max(spec["min_episode_count"] - ds["episode_count"], 0)


def decide(ref: TaskRef) -> None:
    """Run the decision order on ``ref`` (sets verdict, cause and the last rule reached)."""
    spec, ds, m = ref.spec, ref.ds, ref.metrics
    assert spec is not None
    skill_known = ds is not None and not _blank(ds["required_skill"]) \
        and not _blank(spec["required_skill"])
    ref.reached = 1
    if ds is None or (skill_known and ds["required_skill"] != spec["required_skill"]):
        ref.verdict, ref.cause = NOT_TRAINED, MISMATCH
        return
    ref.reached = 2
    if not ref.rows:
        ref.verdict, ref.cause = NOT_TRAINED, NOT_EVALUATED
        return
    ref.reached = 3
    rate, target = m["success_rate"], spec["target_success_rate"]
    if rate is not None and target is not None and rate < target:
        ref.verdict = RATE_BELOW
        return
    ref.reached = 4
    share, limit = m["top_failure_share"], spec["top_reason_share_limit"]
    if (m["failure_total"] >= SKEW_MIN_FAILURES and share is not None and limit is not None
            and share > limit):
        ref.verdict = SKEWED
        return
    ref.reached = 5
    median, top = m["cycle_sec_median"], spec["max_cycle_sec"]
    if median is not None and top is not None and median > top:
        ref.verdict = CYCLE_OVER
        return
    ref.reached = 6
    ref.verdict = "배포 후보"
