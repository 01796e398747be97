"""Exact arithmetic for the rules: half-up rounding to 2 decimals, no floats in between.

The spec rounds ratios and medians half-up on exact values: ``29/200`` is 0.15,
``1/8`` is 0.13 and the median of 11.0 and 11.25 is 11.13 (binary floats and
Python's ``round`` give 0.14, 0.12 and 11.12). Scalars go through
:class:`fractions.Fraction`; arrays through integer arithmetic (a decimal read
from a float by its shortest repr is an integer at a fixed scale).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np

MAX_SCALE = 9


def to_decimal(value: float | int | Decimal | Fraction) -> Fraction:
    """Exact value of a number as written: floats by their shortest repr (``0.1`` is 1/10)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, float):
        return Fraction(Decimal(repr(value)))
    return Fraction(value)


def half_up(value: Fraction | float | int, places: int = 2) -> float:
    """Round an exact value half-up (away from zero at .5) to ``places`` decimals."""
    frac = to_decimal(value)
    scale = 10**places
    sign = -1 if frac < 0 else 1
    units = (abs(frac) * scale * 2 + 1) // 2  # floor(|x|·10^p + 1/2)
    return float(Decimal(sign * int(units)) / Decimal(scale))


def ratio_half_up(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num/den`` rounded half-up to 2 decimals, element-wise, exactly (``den`` > 0).

    Returns float64 hundredths divided by 100 (``29/200`` -> 0.15).
    """
    num = num.astype(np.int64)
    den = den.astype(np.int64)
    cents = (200 * num + den) // (2 * den)  # floor(100·num/den + 1/2)
    return cents / 100.0


def decimal_scale(values: np.ndarray) -> int | None:
    """Smallest k ≤ 9 such that every float is exactly a decimal with k places, else None."""
    if values.size == 0:
        return 0
    for k in range(MAX_SCALE + 1):
        scaled = np.round(values * 10.0**k)
        if np.array_equal(scaled / 10.0**k, values) and np.all(np.abs(scaled) < 2**53):
            return k
    return None


def scaled_ints(values: np.ndarray, k: int) -> np.ndarray:
    """The decimals of ``values`` as int64 units of ``10**-k`` (see :func:`decimal_scale`)."""
    return np.round(values * 10.0**k).astype(np.int64)


def half_sum_half_up(twice: np.ndarray, k: int) -> np.ndarray:
    """Round ``twice / (2·10^k)`` half-up to 2 decimals (a median from its two middles).

    ``twice`` holds ``a + b`` in units of ``10**-k`` (for an odd count, ``2a``);
    values are positive.
    """
    scale = np.int64(10**k)
    cents = (twice.astype(np.int64) * 100 + scale) // (2 * scale)
    return cents / 100.0


def median_half_up(values: list[float]) -> float | None:
    """Median of floats taken as written, the mean of the middle two when even, half-up."""
    if not values:
        return None
    exact = sorted(to_decimal(v) for v in values)
    n = len(exact)
    mid = exact[n // 2] if n % 2 else (exact[n // 2 - 1] + exact[n // 2]) / 2
    return half_up(mid)


def percent(value: float | None) -> str:
    """``0.71`` -> ``"71"``, ``0.855`` -> ``"85.5"`` (for sentences; exact, no float noise)."""
    if value is None:
        return "?"
    return number(to_decimal(value) * 100)


def number(value: float | int | Fraction | None) -> str:
    """Shortest decimal text of an exact number (``11.0`` -> ``"11"``, ``12.45`` -> ``"12.45"``)."""
    if value is None:
        return "?"
    frac = to_decimal(value) if not isinstance(value, Fraction) else value
    dec = Decimal(frac.numerator) / Decimal(frac.denominator)
    text = format(dec.normalize(), "f")
    return text
