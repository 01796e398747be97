"""Evidence values against table cells: verbatim equality and recomputed aggregates.

Shared by check 13 (:mod:`verdict.checks`). Numbers compare as exact decimals
(``11`` equals ``11.0``; ``0.9`` equals the cell ``0.9``), strings exactly, and
a number never equals a string. Aggregates are recomputed over the task's rows:
``count`` of a boolean column counts true values, of any other column the
non-empty values; ``sum``/``avg``/``median``/``min``/``max`` use the non-empty
numbers (booleans as 0/1); ``avg`` and ``median`` may be given half-up to 2
decimals.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from verdict.exact import half_up, median_half_up, to_decimal
from verdict.model import AGGS


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def same_value(a: Any, b: Any) -> bool:
    """Verbatim equality of a card/evidence value and a cell value."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _num(a) and _num(b):
        return to_decimal(a) == to_decimal(b)
    return type(a) is type(b) and a == b


def verbatim_problem(value: Any, rows: list[dict[str, Any]], field: str) -> str | None:
    """None when ``value`` is the cell of a cited row verbatim, else why not."""
    if not rows:
        return f"value {value!r} without agg but the table has no row for this task"
    if any(same_value(value, r.get(field)) for r in rows):
        return None
    if len(rows) == 1:
        return f"value {value!r} differs from the cell {rows[0].get(field)!r}"
    return f"value {value!r} is no row's value: counted over rows but carries no agg"


def _aggregate(agg: str, cells: list[Any]) -> Fraction | float | int | None:
    if agg == "count":
        if cells and all(isinstance(c, bool) or c is None for c in cells):
            return sum(1 for c in cells if c is True)
        return sum(1 for c in cells if c is not None and c != "")
    nums = [Fraction(int(c)) if isinstance(c, bool) else to_decimal(c)
            for c in cells if isinstance(c, int | float)]
    if not nums:
        return None
    if agg == "sum":
        return sum(nums, Fraction(0))
    if agg == "min":
        return min(nums)
    if agg == "max":
        return max(nums)
    if agg == "avg":
        return sum(nums, Fraction(0)) / len(nums)
    return to_decimal(median_half_up([float(n) for n in nums]))


def agg_problem(agg: Any, value: Any, rows: list[dict[str, Any]], field: str) -> str | None:
    """None when ``agg`` over the task's rows gives ``value``, else why not."""
    if agg not in AGGS:
        return f"agg {agg!r} is not one of {', '.join(AGGS)}"
    if not _num(value):
        return f"{agg} value {value!r} is not a number"
    want = _aggregate(agg, [r.get(field) for r in rows])
    if want is None:
        return f"{agg} of {field} has no values to aggregate, card says {value!r}"
    got = to_decimal(value)
    if got == want or (agg in ("avg", "median") and got == to_decimal(half_up(want))):
        return None
    return f"{agg} recomputes to {float(want):g}, card says {value!r}"
