"""Elementary functions whose results are the same on every machine.

numpy evaluates ``log10``, ``log2``, ``exp`` and ``**`` with SIMD code chosen by the CPU
(and by the numpy version), and the C library's scalar versions differ between platforms:
the last bit of a result can change from one machine to the next. Every number that the
suite stores or compares and that comes out of such a function is computed here instead.

The rule: a function of one double is evaluated in 50-digit decimal arithmetic (Python's
``decimal`` module, whose ``ln``, ``log10`` and ``exp`` are correctly rounded in their
context and are pure integer arithmetic) and rounded once to the nearest double
(``float(Decimal)`` is correctly rounded). An integer power is exact in rational arithmetic
before that one rounding. Each result is therefore a fixed function of its argument's bits;
``+ - * /`` and ``sqrt`` between such steps are IEEE double operations, which every CPU
rounds the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

# 50 digits leave 34 guard digits beyond a double's 16: the one rounding to a double is
# the correct one unless the exact value lies within 1e-34 (relative) of a rounding
# boundary, and even then the result is the same on every machine.
_CTX = Context(prec=50, Emin=-999_999, Emax=999_999)
_LN2 = Decimal(2).ln(_CTX)
_LN10 = Decimal(10).ln(_CTX)


def log(x: float) -> float:
    """``ln(x)`` for ``x > 0``, rounded once to the nearest double."""
    return float(Decimal(x).ln(_CTX))


def log10(x: float) -> float:
    """``log10(x)`` for ``x > 0``, rounded once to the nearest double."""
    return float(Decimal(x).log10(_CTX))


def log2(x: float) -> float:
    """``log2(x)`` for ``x > 0``, rounded once to the nearest double."""
    return float(_CTX.divide(Decimal(x).ln(_CTX), _LN2))


def log1p(x: float) -> float:
    """``ln(1 + x)`` for ``x > -1`` (``1 + x`` exact in decimal), rounded once."""
    return float(_CTX.add(Decimal(1), Decimal(x)).ln(_CTX))


def exp(x: float) -> float:
    """``e ** x``, rounded once to the nearest double (``inf`` past the double range)."""
    return float(Decimal(x).exp(_CTX))


def exp10(x: float) -> float:
    """``10 ** x``, rounded once to the nearest double."""
    return float(_CTX.multiply(Decimal(x), _LN10).exp(_CTX))


def pow(x: float, y: float) -> float:
    """``x ** y`` for ``x > 0``, rounded once to the nearest double."""
    return float(_CTX.multiply(Decimal(y), Decimal(x).ln(_CTX)).exp(_CTX))


def ipow(x: float, n: int) -> float:
    """``x ** n`` for an integer ``n >= 0``: exact in rationals, rounded once."""
    if n < 0:
        raise ValueError(f"ipow takes n >= 0, got {n}")
    return float(Fraction(x) ** n)


def ipowers(x: float, n: int) -> NDArray[np.float64]:
    """``[x**0, x**1, ..., x**(n-1)]``, each rounded once (``ipow``)."""
    exact, out = Fraction(1), []
    for _ in range(n):
        out.append(float(exact))
        exact *= Fraction(x)
    return np.array(out, dtype=np.float64)


# exp over arrays (fdlibm's split of ln 2: k * _LN2_HI is exact for |k| < 2**20)
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
# 1/j! for j = 13..0: |r| <= ln(2)/2 makes the Taylor tail below 4e-18, a 30th of an ulp
_TAYLOR = tuple(1.0 / math.factorial(j) for j in range(13, -1, -1))


def exp_array(x: ArrayLike) -> NDArray[np.float64]:
    """``e ** x`` elementwise, the same bits on every machine, within 2 ulp of the true value.

    For large arrays (a Monte-Carlo's samples) where :func:`exp` per element is too slow:
    range reduction ``x = k ln 2 + r`` and a Taylor polynomial in Horner form use only
    ``rint``, ``+``, ``*`` and ``ldexp``, each one IEEE operation per element in a fixed
    order, so no CPU or numpy version can change a result.
    """
    arr = np.clip(np.asarray(x, dtype=np.float64), -800.0, 800.0)
    k = np.rint(arr * _INV_LN2)
    r = (arr - k * _LN2_HI) - k * _LN2_LO
    p = np.full_like(r, _TAYLOR[0])
    for c in _TAYLOR[1:]:
        p = p * r + c
    with np.errstate(over="ignore"):  # past the double range the result is inf, as exp's
        return np.ldexp(p, k.astype(np.int64))


def apply(f: Callable[[float], float], values: ArrayLike) -> NDArray[np.float64]:
    """``f`` elementwise over ``values`` (any shape), as a float64 array."""
    arr = np.asarray(values, dtype=np.float64)
    flat: Iterable[float] = arr.ravel().tolist()
    return np.fromiter(map(f, flat), dtype=np.float64, count=arr.size).reshape(arr.shape)


__all__ = ["apply", "exp", "exp10", "exp_array", "ipow", "ipowers", "log", "log1p", "log2", "log10", "pow"]
