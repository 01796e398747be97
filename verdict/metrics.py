"""Per-task metrics over the evaluation rows of one round, vectorised.

Sits between :mod:`verdict.tables` (normalised Arrow tables) and
:mod:`verdict.rules` (decision order). Every array is aligned with the rows of
``task_spec`` (one entry per task, in its order). A task's evaluation rows are
this round's rows of the task minus its exempt failures (``success`` false and
``counts_against_policy`` false): they do not count against the policy, so they
are in no metric (only ``n_exempt`` counts them). No per-row Python: rows are
mapped to task indices with ``pyarrow.compute.index_in`` and counted with
``numpy.bincount``; medians come from one sort of integer keys. Rates, shares
and medians are rounded half-up on exact values (:mod:`verdict.exact`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from verdict.exact import (
    decimal_scale,
    half_sum_half_up,
    median_half_up,
    ratio_half_up,
    scaled_ints,
)
from verdict.tables import EXEMPT_FLAG, Inputs


@dataclass(frozen=True)
class Metrics:
    """Counts and rounded metrics per task (arrays of length ``n_tasks``).

    Floats are NaN and ``top_count`` is -1 where the value is null on the card.
    """

    n_tasks: int
    n_rows: np.ndarray  # (T,) int64 evaluation rows of this round's artifact, exempt ones out
    n_true: np.ndarray  # (T,) int64 rows with success true
    n_success_null: np.ndarray  # (T,) int64 rows with success empty
    failure_total: np.ndarray  # (T,) int64 rows with success false
    n_empty_reason: np.ndarray  # (T,) int64 failures whose failure_reason is empty
    top_reason: list[str | None]  # (T,) most frequent non-empty reason, ties by name
    top_count: np.ndarray  # (T,) int64, -1 when no top reason
    success_rate: np.ndarray  # (T,) float64 half-up 2 decimals, NaN when not computable
    top_share: np.ndarray  # (T,) float64 half-up 2 decimals, NaN when no top reason
    n_cycle_null: np.ndarray  # (T,) int64 rows with cycle_sec empty
    cycle_median: np.ndarray  # (T,) float64 half-up 2 decimals, NaN without values
    n_exempt: np.ndarray  # (T,) int64 exempt failures left out of every count above


def _bincount(idx: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(idx, minlength=n).astype(np.int64)


def exempt(ev: pa.Table) -> np.ndarray:
    """``(n_rows,)`` bool: ``success`` false and ``counts_against_policy`` false.

    An empty cell in either column is not exempt; without the column no row is.
    """
    if EXEMPT_FLAG not in ev.column_names or not ev.num_rows:
        return np.zeros(ev.num_rows, dtype=bool)
    both = pc.and_(pc.invert(ev.column("success")), pc.invert(ev.column(EXEMPT_FLAG)))
    return pc.fill_null(both, False).to_numpy(zero_copy_only=False).astype(bool)


def round_rows(inputs: Inputs) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The task's evaluation rows of this round (task in ``task_spec``, exempt failures out).

    Returns:
        The counted rows, an int64 array ``(n_rows,)`` of their task_spec row
        indices, and the task index of each exempt row left out ``(n_exempt,)``.
    """
    ev = inputs.evaluation_run
    ev = ev.filter(pc.equal(ev.column("model_artifact"), inputs.artifact))
    tasks = inputs.task_spec.column("task_id").combine_chunks()
    idx = pc.index_in(ev.column("task_id"), value_set=tasks)
    valid = pc.is_valid(idx)
    ev = ev.filter(valid)
    idx = pc.filter(idx, valid).to_numpy().astype(np.int64)  # (n,) task index
    out = exempt(ev)  # (n,) bool
    if not out.any():
        return ev, idx, idx[out]
    return ev.filter(pa.array(~out)), idx[~out], idx[out]


def _bool_column(ev: pa.Table, name: str) -> tuple[np.ndarray, np.ndarray]:
    col = ev.column(name).combine_chunks() if ev.num_rows else pa.array([], pa.bool_())
    null = col.is_null().to_numpy(zero_copy_only=False)
    value = pc.fill_null(col, False).to_numpy(zero_copy_only=False)
    return value.astype(bool), null.astype(bool)


def _top_reasons(reasons: pa.Array, fidx: np.ndarray, n: int) -> tuple[list, np.ndarray]:
    """Most frequent non-empty reason per task (ties: the name that sorts first)."""
    top: list[str | None] = [None] * n
    count = np.full(n, -1, dtype=np.int64)
    nonempty = pc.fill_null(pc.not_equal(reasons, ""), False).to_numpy(
        zero_copy_only=False).astype(bool)
    if not nonempty.any():
        return top, count
    enc = pc.dictionary_encode(pc.filter(reasons, pa.array(nonempty)))
    names = np.asarray(enc.dictionary.to_pylist(), dtype=object)
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    r = rank[enc.indices.to_numpy()]  # (m,) name rank of each non-empty failure
    n_names = len(names)
    key = fidx[nonempty] * n_names + r
    uniq, counts = np.unique(key, return_counts=True)
    task, name_rank = uniq // n_names, uniq % n_names
    pick = np.lexsort((name_rank, -counts, task))
    task_s = task[pick]
    first = np.ones(len(pick), dtype=bool)
    first[1:] = task_s[1:] != task_s[:-1]
    sorted_names = names[order]
    for t, nr, c in zip(task_s[first], name_rank[pick][first], counts[pick][first], strict=True):
        top[int(t)] = sorted_names[nr]
        count[t] = c
    return top, count


def _medians(cycle: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    """Median per task of positive decimals, even counts averaged, half-up (NaN if none)."""
    out = np.full(n, np.nan)
    if cycle.size == 0:
        return out
    k = decimal_scale(cycle)
    if k is None:  # values no short decimal writes exactly: exact per-task fallback
        for t in np.unique(idx):
            out[t] = median_half_up(cycle[idx == t].tolist())
        return out
    ints = scaled_ints(cycle, k)  # (m,) int64 units of 10^-k
    lo_v = int(ints.min())
    span = int(ints.max()) - lo_v + 1
    if n * span < 2**62:
        keys = np.sort(idx * span + (ints - lo_v))
        values = keys % span + lo_v
    else:
        values = ints[np.lexsort((ints, idx))]
    counts = _bincount(idx, n)
    starts = np.cumsum(counts) - counts
    has = counts > 0
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    out[has] = half_sum_half_up(values[lo] + values[hi], k)
    return out


def compute(inputs: Inputs) -> Metrics:
    """Count this round's evaluation rows per task and round the metrics exactly."""
    n = inputs.task_spec.num_rows
    ev, idx, exempt_idx = round_rows(inputs)
    success, success_null = _bool_column(ev, "success")
    n_rows = _bincount(idx, n)
    n_true = _bincount(idx[success & ~success_null], n)
    fail = ~success & ~success_null
    failure_total = _bincount(idx[fail], n)
    reasons = (ev.column("failure_reason").combine_chunks() if ev.num_rows
               else pa.array([], pa.string()))
    fail_reasons = pc.filter(reasons, pa.array(fail))
    fidx = idx[fail]
    empty = (pc.fill_null(pc.equal(fail_reasons, ""), True).to_numpy(zero_copy_only=False)
             .astype(bool) if len(fail_reasons) else np.zeros(0, bool))
    top, top_count = _top_reasons(fail_reasons, fidx, n)
    success_count_null = _bincount(idx[success_null], n)
    rate = np.full(n, np.nan)
    ok = (n_rows > 0) & (success_count_null == 0)
    rate[ok] = ratio_half_up(n_true[ok], n_rows[ok])
    share = np.full(n, np.nan)
    has_top = top_count > 0
    share[has_top] = ratio_half_up(top_count[has_top], failure_total[has_top])
    cycle = (ev.column("cycle_sec").combine_chunks().to_numpy(zero_copy_only=False)
             if ev.num_rows else np.zeros(0))
    cycle_ok = ~np.isnan(cycle)
    return Metrics(
        n_tasks=n, n_rows=n_rows, n_true=n_true, n_success_null=success_count_null,
        failure_total=failure_total, n_empty_reason=_bincount(fidx[empty], n),
        top_reason=top, top_count=top_count, success_rate=rate, top_share=share,
        n_cycle_null=_bincount(idx[~cycle_ok], n),
        cycle_median=_medians(cycle[cycle_ok], idx[cycle_ok], n),
        n_exempt=_bincount(exempt_idx, n),
    )
