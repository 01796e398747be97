"""Half-up rounding on exact values: the spec's three worked examples and the float traps."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verdict.exact import (
    decimal_scale,
    half_sum_half_up,
    half_up,
    median_half_up,
    number,
    percent,
    ratio_half_up,
)


def test_spec_examples_scalar() -> None:
    assert half_up(Fraction(29, 200)) == 0.15
    assert half_up(Fraction(1, 8)) == 0.13
    assert median_half_up([11.0, 11.25]) == 11.13


def test_floats_would_get_them_wrong() -> None:
    # what the exact path avoids: binary floats and banker's rounding
    assert round(29 / 200, 2) == 0.14
    assert round(1 / 8, 2) == 0.12
    assert round((11.0 + 11.25) / 2, 2) == 11.12


def test_vectorised_ratios() -> None:
    got = ratio_half_up(np.array([29, 1, 2, 10, 12, 0]), np.array([200, 8, 3, 14, 15, 5]))
    assert got.tolist() == [0.15, 0.13, 0.67, 0.71, 0.8, 0.0]


def test_vectorised_median_of_two_middles() -> None:
    # 11.0 + 11.25 at scale 10^2 is 2225 -> 11.125 -> 11.13; 12.4 + 12.5 -> 12.45
    assert decimal_scale(np.array([11.0, 11.25, 12.4])) == 2
    assert half_sum_half_up(np.array([2225, 2490, 2200]), 2).tolist() == [11.13, 12.45, 11.0]


def test_median_odd_even_and_empty() -> None:
    assert median_half_up([13.5, 12.1, 15.3]) == 13.5
    assert median_half_up([16.6, 16.8, 15.2, 18.3]) == 16.7
    assert median_half_up([]) is None


def test_decimal_scale_of_integers_and_irregular_floats() -> None:
    assert decimal_scale(np.array([3.0, 12.0])) == 0
    assert decimal_scale(np.array([0.1 + 0.2])) is None  # 0.30000000000000004


def test_sentence_numbers() -> None:
    assert percent(0.71) == "71"
    assert percent(0.855) == "85.5"
    assert number(11.0) == "11"
    assert number(12.45) == "12.45"
