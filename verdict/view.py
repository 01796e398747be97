"""One task's values as plain Python scalars, the input of evidence and summaries.

:func:`task_views` turns the vectorised arrays of :mod:`verdict.metrics` and
:mod:`verdict.rules` into one small record per task (lists are converted once,
not per task), so the per-card code below reads like the spec.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from verdict.metrics import Metrics
from verdict.model import CAUSES, VERDICTS
from verdict.rules import Aligned, Decision


@dataclass(frozen=True, slots=True)
class TaskView:
    """Everything the rules computed for one task; ``None`` where the card is empty."""

    task_id: str
    artifact: str
    verdict: str
    cause: str | None
    n_rows: int
    n_true: int
    n_success_null: int
    failure_total: int
    n_empty_reason: int
    top_reason: str | None
    top_count: int | None
    success_rate: float | None
    top_share: float | None
    n_cycle_null: int
    cycle_median: float | None
    spec_skill: str | None
    target: float | None
    limit: float | None
    max_cycle: float | None
    min_episodes: int | None
    has_row: bool
    ds_skill: str | None
    episode_count: int | None
    capture_site: str | None
    robot_hand_type: str | None
    more: int | None
    skill_unknown: bool
    rate_skipped: bool
    skew_few: bool
    skew_skipped: bool
    cycle_skipped: bool
    n_exempt: int


def _f(values: list[float]) -> list[float | None]:
    return [None if math.isnan(x) else x for x in values]


def _i(values: list[int]) -> list[int | None]:
    return [None if x < 0 else x for x in values]


def task_views(al: Aligned, m: Metrics, d: Decision, artifact: str) -> Iterator[TaskView]:
    """Yield one :class:`TaskView` per task, in task_spec order."""
    cols = zip(
        al.task_id, d.verdict.tolist(), d.cause.tolist(), m.n_rows.tolist(), m.n_true.tolist(),
        m.n_success_null.tolist(), m.failure_total.tolist(), m.n_empty_reason.tolist(),
        m.top_reason, _i(m.top_count.tolist()), _f(m.success_rate.tolist()),
        _f(m.top_share.tolist()), m.n_cycle_null.tolist(), _f(m.cycle_median.tolist()),
        al.spec_skill, _f(al.target.tolist()), _f(al.limit.tolist()),
        _f(al.max_cycle.tolist()), _i(al.min_episodes.tolist()), al.has_row.tolist(),
        al.ds_skill, _i(al.episode_count.tolist()), al.capture_site, al.robot_hand_type,
        _i(d.more_episodes.tolist()), d.skill_unknown.tolist(), d.rate_skipped.tolist(),
        d.skew_few.tolist(), d.skew_skipped.tolist(), d.cycle_skipped.tolist(),
        m.n_exempt.tolist(), strict=True,
    )
    for (task_id, v, c, n_rows, n_true, n_snull, ftot, n_empty, top, top_count, rate,
         share, n_cnull, median, *rest) in cols:
        yield TaskView(
            task_id, artifact, VERDICTS[v], None if c < 0 else CAUSES[c], n_rows, n_true,
            n_snull, ftot, n_empty, top, top_count, rate, share, n_cnull, median, *rest)
