"""Floating-point rounding made provable: compensated (double-double) sums and the
error bounds that every exact method of mtpp lowers its bounds by.

A bound that sums floats is only a bound once its rounding error is bounded, and on
graphs that mix a 1e12 tensor with 1e-3 ops that error is not small *relative to
the answer*: adding and later subtracting the huge tensor leaves an absolute error
of about ``u 1e12`` (``u = 2^-53``) in a sum whose true value is ``1e-3``.  Two tools:

* **Compensated sums.**  :func:`two_sum` is Knuth's error-free transformation:
  ``s = fl(a + b)`` and ``e`` with ``s + e = a + b`` exactly.  A running sum kept as
  an unevaluated pair ``(h, l)`` and updated by :func:`dd_add` (``s, e = two_sum(h,
  t)``, ``h, l = s, fl(l + e)``) loses only the roundings of the small ``l``: after
  ``m`` updates whose partial sums stay below ``A`` in magnitude, every ``|e| <= u A
  (1 + m u)``, so ``|l| <= m u A (1 + 2 m u)`` and each rounding of ``l`` errs by at
  most ``u |l|``; in all

      |(h + l) - exact| <= m (m + 1) u^2 A (1 + 2 m u) <= 2 (m + 1)^2 u^2 A

  (Ogita, Rump and Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput.
  26(6), 2005, Sec. 4: the ``Sum2`` bound).  With ``m`` in the thousands that is
  ``1e-25 A``: a 1e15 tensor leaves ``1e-10`` where a plain sum leaves ``0.1``.
  :func:`dd_value` evaluates a pair with one more rounding, relative to the result.
* **Relative bounds for sums of non-negative terms.**  A plain float sum of ``m``
  non-negative terms is within ``gamma(m) = m u / (1 - m u)`` of the exact sum,
  *relative to the sum* (Higham, "Accuracy and Stability of Numerical Algorithms",
  2nd ed., Eq. 4.4): no cancellation, nothing to lower but a relative few ulps.

Every exact method states, in its docstring, which of the two it uses where, and
the bound it lowers its result by (:func:`lower_by`).
"""

from __future__ import annotations

import math

from mtpp.core.jit import njit

UNIT = 2.0**-53
"""The unit roundoff ``u`` of IEEE double precision (round to nearest)."""


def gamma(m: int) -> float:
    """``gamma(m) = m u / (1 - m u)`` (Higham Eq. 3.8), rounded up generously: the
    relative error of a float sum of ``m + 1`` non-negative terms."""
    mu = m * UNIT
    return 1.01 * mu / (1.0 - mu) if mu < 0.5 else math.inf


def dd_error(m: int, magnitude: float) -> float:
    """The absolute error of a compensated running sum (module docstring) after ``m``
    updates whose partial sums never exceed ``magnitude``: ``2 (m + 1)^2 u^2 A``,
    rounded up."""
    return 1.01 * 2.0 * (m + 1) ** 2 * UNIT * UNIT * magnitude


def lower_by(value: float, relative: float, absolute: float) -> float:
    """A float ``<= (value - absolute) / (1 + relative)``, and ``>= 0``: the bound a
    computed ``value`` proves when the true quantity ``c`` satisfies ``value <= c (1 +
    relative) + absolute``.  (Dividing by ``1 + r`` is replaced by the smaller factor
    ``1 - r - 4u``, which also absorbs the two roundings here.)"""
    if not math.isfinite(value):
        return math.inf if value == math.inf else 0.0
    return max(0.0, (value - absolute) * (1.0 - relative - 4.0 * UNIT))


@njit(cache=True, inline="always")
def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@njit(cache=True, inline="always")
def dd_add(h, l, t):
    """The compensated running sum ``(h, l)`` plus the double ``t``."""
    s, e = two_sum(h, t)
    return s, l + e


@njit(cache=True, inline="always")
def dd_diff(h1, l1, h2, l2):
    """``(h1 + l1) - (h2 + l2)`` as one double: exact up to one rounding relative to
    the result, plus ``u (|e| + |l1| + |l2|)``-sized roundings of the low parts."""
    s, e = two_sum(h1, -h2)
    return s + (e + (l1 - l2))


@njit(cache=True, inline="always")
def dd_value(h, l):
    """The pair ``(h, l)`` as one double (one rounding, relative to the result)."""
    return h + l
