"""Elementary functions with a fixed rounding: exact where the answer is known, within an
ulp of the C library elsewhere, and ``exp_array`` within 2 ulp of the correctly rounded ``exp``."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from balance_opt import crmath

positive = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)


def ulps(a: float, b: float) -> float:
    return abs(a - b) / math.ulp(b) if b != 0 else abs(a)


@pytest.mark.parametrize("e", range(-20, 21))
def test_exact_logs_and_powers(e: int) -> None:
    # 10.0**e is within half an ulp of 10^e, which moves log10 by less than half an ulp of e
    assert crmath.log10(float(Fraction(10) ** e)) == e
    assert crmath.log2(math.ldexp(1.0, e)) == e
    assert crmath.exp10(float(e)) == float(Fraction(10) ** e)  # correctly rounded 10**e


@given(positive)
def test_logs_within_an_ulp_of_the_c_library(x: float) -> None:
    assert ulps(crmath.log10(x), math.log10(x)) <= 1.0
    assert ulps(crmath.log2(x), math.log2(x)) <= 1.0


@given(st.floats(min_value=-700.0, max_value=700.0))
def test_exp_within_an_ulp_and_exp_array_within_two(x: float) -> None:
    exact = crmath.exp(x)
    assert ulps(exact, math.exp(x)) <= 1.0
    assert ulps(float(crmath.exp_array([x])[0]), exact) <= 2.0
    assert ulps(crmath.exp10(x / 100.0), 10.0 ** (x / 100.0)) <= 1.0


@given(st.floats(min_value=1e-6, max_value=1.0 - 1e-6), st.integers(min_value=0, max_value=12))
def test_integer_powers_are_correctly_rounded(a: float, n: int) -> None:
    assert crmath.ipow(a, n) == float(Fraction(a) ** n)
    assert crmath.ipowers(a, n + 1).tolist() == [float(Fraction(a) ** j) for j in range(n + 1)]
    assert ulps(crmath.pow(a, 1.0 / (n + 1)), a ** (1.0 / (n + 1))) <= 1.0
    assert ulps(crmath.log1p(a), math.log1p(a)) <= 1.0
    assert ulps(crmath.log(a), math.log(a)) <= 1.0


def test_exp_array_at_the_ends_of_the_double_range() -> None:
    out = crmath.exp_array([0.0, -1000.0, 1000.0, 709.0, -740.0])
    assert out[0] == 1.0
    assert out[1] == 0.0
    assert out[2] == math.inf
    assert ulps(float(out[3]), crmath.exp(709.0)) <= 2.0
    assert out[4] > 0.0


def test_apply_keeps_the_shape() -> None:
    x = np.array([[1.0, 10.0], [100.0, 1000.0]])
    assert crmath.apply(crmath.log10, x).tolist() == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.raises(ValueError, match="n >= 0"):
        crmath.ipow(0.5, -1)
