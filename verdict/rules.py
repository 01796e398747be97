"""Decision order of ``spec/verdict.md``, vectorised over all tasks at once.

Input: :class:`verdict.metrics.Metrics` and the task_spec / dataset_index values
aligned per task (:func:`align`). Output: one verdict index (into
:data:`verdict.model.VERDICTS`) and one cause per task. First hit wins:

1. dataset row missing, or its ``required_skill`` differs → 학습에 없는 조건 / 능력 불일치
2. skill matches, no evaluation rows this round → 학습에 없는 조건 / 평가 미실시
3. 성공률 미달 (rounded rate < target), 4. 실패 유형 쏠림 (≥ 3 failures and
   share > limit), 5. 작업 주기 초과 (median > max), 6. otherwise 배포 후보.

A rule whose input is empty does not fire; :class:`Decision` keeps a flag so the
card can say which input stopped it. Comparisons are the module functions
below (strict: equal to a threshold never fires).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from verdict.metrics import Metrics
from verdict.tables import Inputs

#: Fewer failures than this and the skew rule is skipped (too few samples).
SKEW_MIN_FAILURES = 3

V_CANDIDATE, V_RATE, V_SKEW, V_CYCLE, V_NOT_TRAINED = range(5)
C_NONE, C_MISMATCH, C_NOT_EVALUATED = -1, 0, 1


def rate_below(rate: np.ndarray, target: np.ndarray) -> np.ndarray:
    """성공률 미달: the rounded success rate strictly below the target."""
    return rate < target


def share_over(share: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """실패 유형 쏠림 threshold: the rounded share strictly above the limit."""
    return share > limit


def cycle_over(median: np.ndarray, max_cycle: np.ndarray) -> np.ndarray:
    """작업 주기 초과: the rounded median strictly above the maximum."""
    return median > max_cycle


@dataclass(frozen=True)
class Aligned:
    """task_spec values and the matching dataset_index row, one entry per task."""

    task_id: list[str]
    spec_skill: list[str | None]
    target: np.ndarray  # (T,) float64, NaN when empty
    limit: np.ndarray  # (T,) float64, NaN when empty
    max_cycle: np.ndarray  # (T,) float64, NaN when empty
    min_episodes: np.ndarray  # (T,) int64, -1 when empty
    has_row: np.ndarray  # (T,) bool: a dataset_index row exists
    ds_skill: list[str | None]
    episode_count: np.ndarray  # (T,) int64, -1 when empty or no row
    capture_site: list[str | None]
    robot_hand_type: list[str | None]


def _floats(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), dtype=float)


def _ints(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(col, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def align(inputs: Inputs) -> Aligned:
    """Pull the rule columns of task_spec and, per task, of its dataset_index row."""
    spec, ds = inputs.task_spec, inputs.dataset_index
    row = pc.index_in(spec.column("task_id"), value_set=ds.column("task_id").combine_chunks())
    if ds.num_rows:
        picked = ds.select(list(ds.column_names)).take(pc.fill_null(row, 0))
        has_row = pc.is_valid(row).to_numpy(zero_copy_only=False).astype(bool)
    else:
        picked, has_row = None, np.zeros(spec.num_rows, dtype=bool)

    def ds_col(name: str) -> pa.Array:
        if picked is None:
            return pa.nulls(spec.num_rows, pa.string() if name != "episode_count" else pa.int64())
        return pc.if_else(pa.array(has_row), picked.column(name), None)

    return Aligned(
        task_id=spec.column("task_id").to_pylist(),
        spec_skill=spec.column("required_skill").to_pylist(),
        target=_floats(spec.column("target_success_rate")),
        limit=_floats(spec.column("top_reason_share_limit")),
        max_cycle=_floats(spec.column("max_cycle_sec")),
        min_episodes=_ints(spec.column("min_episode_count")),
        has_row=has_row,
        ds_skill=ds_col("required_skill").to_pylist(),
        episode_count=_ints(ds_col("episode_count")),
        capture_site=ds_col("capture_site").to_pylist(),
        robot_hand_type=ds_col("robot_hand_type").to_pylist(),
    )


@dataclass(frozen=True)
class Decision:
    """Verdict and cause per task, the derived counts and why a rule was skipped."""

    verdict: np.ndarray  # (T,) int8 index into VERDICTS
    cause: np.ndarray  # (T,) int8 index into CAUSES, -1 for none
    more_episodes: np.ndarray  # (T,) int64 floored at 0, -1 when null
    skill_unknown: np.ndarray  # (T,) bool: rule 1 skipped, a required_skill empty
    rate_skipped: np.ndarray  # (T,) bool: reached rule 3 but rate or target empty
    skew_few: np.ndarray  # (T,) bool: reached rule 4 with < 3 failures
    skew_skipped: np.ndarray  # (T,) bool: reached rule 4, ≥ 3 failures, share/limit empty
    cycle_skipped: np.ndarray  # (T,) bool: reached rule 5 but median or max empty


def decide(al: Aligned, m: Metrics) -> Decision:
    """Apply the decision order to every task; first hit wins."""
    n = m.n_tasks
    spec_skill = np.asarray(al.spec_skill, dtype=object)
    ds_skill = np.asarray(al.ds_skill, dtype=object)
    known = al.has_row & (spec_skill != None) & (ds_skill != None)  # noqa: E711
    mismatch = ~al.has_row | (known & (spec_skill != ds_skill))
    not_evaluated = ~mismatch & (m.n_rows == 0)
    live = ~mismatch & ~not_evaluated

    rate_ok = ~np.isnan(m.success_rate) & ~np.isnan(al.target)
    below = live & rate_ok & rate_below(m.success_rate, np.nan_to_num(al.target, nan=-1.0))
    at_skew = live & ~below
    enough = m.failure_total >= SKEW_MIN_FAILURES
    skew_ok = ~np.isnan(m.top_share) & ~np.isnan(al.limit)
    skew = at_skew & enough & skew_ok & share_over(np.nan_to_num(m.top_share, nan=-1.0),
                                                   np.nan_to_num(al.limit, nan=np.inf))
    at_cycle = at_skew & ~skew
    cycle_ok = ~np.isnan(m.cycle_median) & ~np.isnan(al.max_cycle)
    over = at_cycle & cycle_ok & cycle_over(np.nan_to_num(m.cycle_median, nan=-1.0),
                                            np.nan_to_num(al.max_cycle, nan=np.inf))

    verdict = np.full(n, V_CANDIDATE, dtype=np.int8)
    verdict[over] = V_CYCLE
    verdict[skew] = V_SKEW
    verdict[below] = V_RATE
    verdict[mismatch | not_evaluated] = V_NOT_TRAINED
    cause = np.full(n, C_NONE, dtype=np.int8)
    cause[mismatch] = C_MISMATCH
    cause[not_evaluated] = C_NOT_EVALUATED

    more = np.full(n, -1, dtype=np.int64)
    has_more = al.has_row & (al.episode_count >= 0) & (al.min_episodes >= 0)
    more[has_more] = np.maximum(al.min_episodes[has_more] - al.episode_count[has_more], 0)
    return Decision(
        verdict=verdict, cause=cause, more_episodes=more,
        skill_unknown=al.has_row & ~known,
        rate_skipped=live & ~rate_ok,
        skew_few=at_skew & ~enough,
        skew_skipped=at_skew & enough & ~skew_ok,
        cycle_skipped=at_cycle & ~cycle_ok,
    )
