"""Keyword arguments of calls a rule answers (``ad/_keywords.py``).

A value that may carry a derivative, passed by a keyword the function also takes
by position (``np.average(x, weights=w)``, ``np.trapezoid(y, x=t)``, a user's
rule ``f(x, scale=s)``), is differentiated as if passed by position, in reverse
and forward mode. One that cannot move (keyword-only) raises when its
derivative is needed, never a silent zero; a function passed by keyword
(``sorted(xs, key=...)``) chooses and carries no derivative.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from rulescore import NotImplementedTangentError, frule, rrule


def _jvp_each(f, args):
    """The gradient of a real-valued ``f``, built from ``ad.jvp`` along each coordinate."""
    out = []
    for i, x in enumerate(args):
        if isinstance(x, float):
            ts = tuple(1.0 if j == i else 0.0 * np.asarray(a) for j, a in enumerate(args))
            out.append(float(ad.jvp(f, args, ts)[1]))
            continue
        g = np.zeros_like(x)
        for k in range(x.size):
            e = np.zeros_like(x)
            e.flat[k] = 1.0
            ts = tuple(e if j == i else 0.0 * np.asarray(a) for j, a in enumerate(args))
            g.flat[k] = ad.jvp(f, args, ts)[1]
        out.append(g)
    return tuple(out)


def _average_list(x, a, b):
    return np.average(x, weights=[a, b * b])


def _average_array(x, w):
    return np.average(x**2, axis=0, weights=w)[1]


def _trapezoid(y, t):
    return np.trapezoid(y * y, x=t)


def _interp(x, left):
    return np.sum(np.interp(x, np.array([0.0, 1.0]), np.array([2.0, 3.0]), left=left * left))


def _clip(x, lo):
    return np.sum(np.clip(x, a_min=lo, a_max=2.0) ** 2)


def _clip_min_max(x, lo, hi):  # numpy 2.1's keyword-only names of a_min and a_max
    return np.sum(np.clip(x, min=lo * lo, max=hi) ** 2)


CASES = [
    (_clip_min_max, (np.array([-1.0, 0.5, 3.0, 1.5]), 0.5, 2.0)),
    (_average_list, (np.array([1.0, 3.0]), 1.0, 2.0)),
    (_average_array, (np.array([[1.0, 2.0], [0.5, 1.5], [2.0, 1.0]]), np.array([0.2, 1.0, 0.7]))),
    (_trapezoid, (np.array([1.0, 2.0, 0.5, 1.5]), np.array([0.0, 0.3, 1.1, 2.0]))),
    (_interp, (np.array([-0.5, 0.25, 0.75]), 1.5)),
    (_clip, (np.array([-1.0, 0.5, 3.0, 1.5]), 0.25)),
]


@pytest.mark.parametrize("f, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_reverse_mode_differentiates_a_movable_keyword(f, args):
    got = ad.gradient(f, *args)
    for g, want in zip(got, fd_gradient(f, *args)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, args", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_forward_mode_differentiates_a_movable_keyword(f, args):
    for g, want in zip(_jvp_each(f, args), fd_gradient(f, *args)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def test_hand_derived_weights_derivative():
    # (a x0 + b x1) / (a + b) at x = (1, 3), a = 1, b = 2: d/da = -4/9, d/db = 2/9
    def f(x, a, b):
        return np.average(x, weights=[a, b])

    _, da, db = ad.gradient(f, np.array([1.0, 3.0]), 1.0, 2.0)
    assert da == pytest.approx(-4 / 9) and db == pytest.approx(2 / 9)


def test_users_rule_with_a_keyword_gets_its_positional_derivative():
    def scaled(x, scale):
        return x * scale

    @rrule.register(scaled)
    def _(x, scale):
        return x * scale, lambda ȳ: (None, ȳ * scale, ȳ * x)

    @frule.register(scaled)
    def _(ṡ, ẋ, ṡc, x, scale):
        return x * scale, ẋ * scale + x * ṡc

    def f(x, s):
        return scaled(x, scale=s) ** 2

    assert ad.gradient(f, 3.0, 2.0) == pytest.approx((2 * 6.0 * 2.0, 2 * 6.0 * 3.0))
    assert ad.jvp(f, (3.0, 2.0), (0.0, 1.0))[1] == pytest.approx(36.0)


def test_keyword_only_argument_raises_when_its_derivative_is_needed():
    def shifted(x, *, by=0.0):
        return x + by

    @rrule.register(shifted)
    def _(x, *, by=0.0):
        return x + by, lambda ȳ: (None, ȳ)

    @frule.register(shifted)
    def _(ṡ, ẋ, x, *, by=0.0):
        return x + by, ẋ

    def f(x, b):
        return shifted(x, by=b) * 2.0

    line = f"{re.escape(__file__)}:{f.__code__.co_firstlineno + 1}"
    with pytest.raises(NotImplementedTangentError, match=f"{line}.*keyword argument 'by'"):
        ad.gradient(f, 1.0, 2.0)
    with pytest.raises(NotImplementedTangentError, match=f"{line}.*keyword argument 'by'"):
        ad.jvp(f, (1.0, 2.0), (0.0, 1.0))
    # its derivative is not needed: the other argument's is right
    assert ad.jvp(f, (1.0, 2.0), (1.0, None))[1] == 2.0


@pytest.mark.parametrize("spelling", ["bound", "lambda"])
def test_sorted_key_closing_over_active_values_in_forward_mode(spelling):
    def f(x):
        items = [x[0], x[1] * 2, x[2]]
        if spelling == "bound":
            order = sorted(range(len(items)), key=items.__getitem__)
        else:
            order = sorted(range(len(items)), key=lambda i: items[i])
        return sum(items[i] * (k + 1) ** 2 for k, i in enumerate(order))

    x = np.array([0.3, 0.1, 0.7])
    want = fd_gradient(f, x)[0]
    np.testing.assert_allclose(_jvp_each(f, (x,))[0], want, rtol=1e-6)
    np.testing.assert_allclose(ad.gradient(f, x)[0], want, rtol=1e-6)


def test_sorted_with_key_at_second_order_forward_over_forward():
    def f(x):
        ys = sorted([x[0], x[1] * 2, x[2]], key=lambda t: -t)
        return ys[0] * ys[1] ** 2 + ys[2] ** 3

    x, v, w = np.array([0.3, 0.1, 0.7]), np.array([1.0, 0.5, 0.2]), np.array([0.2, 1.0, 0.3])
    got = ad.jvp(lambda x: ad.jvp(f, (x,), (v,))[1], (x,), (w,))[1]
    assert got == pytest.approx(w @ ad.hessian(f, x) @ v)
