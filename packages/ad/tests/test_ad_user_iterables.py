"""Iterating an object whose class defines ``__iter__`` in Python: ``for x in obj``,
comprehensions, ``list(obj)``, ``tuple(obj)``, ``a, b = obj``, ``a, *rest = obj``, and
the builtins that iterate their arguments (``enumerate``, ``zip``, ``sorted``,
``map``, ``max``, ``sum``, ``dict``...).

Python runs ``obj.__iter__()``; so does the AD (``runtime.user_iterables``):
``__iter__`` is differentiated (returning ``iter(self.xs)``, a ``zip``, ``iter``
of an array's rows) and the items carry their derivatives. ``list(obj)``,
``tuple(obj)``, unpacking and the builtins gave silently wrong derivatives (1.69
where 5.07 is right; ``None`` for unpacking, ``enumerate`` and ``sorted``), loops
were refused. Each program is checked against a hand-derived value and central
differences in reverse and forward mode; at second order each is refused,
naming the line.
"""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad


class Seq:
    def __init__(self, xs):
        self.xs = xs

    def __iter__(self):
        return iter(self.xs)


class Pairs:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        return zip(self.a, self.b)


class Rows:
    def __init__(self, m):
        self.m = m

    def __iter__(self):
        return iter(self.m)


class Tracked(Seq):
    def __iter__(self):
        self.count = getattr(self, "count", 0) + 1  # __iter__ may write its object
        return iter(self.xs)


def loop(a):
    tot = 0.0
    for t in Seq([a, 2 * a]):
        tot = tot + t * t
    return tot  # 5a²


def comprehension(a):
    return sum([t * t * t for t in Seq((a, 1.0))])  # a³ + 1


def zipped(a):
    tot = 0.0
    for x, y in Pairs([a, 1.0], [2.0, a * a]):
        tot = tot + x * y
    return tot  # 2a + a²


def rows(a):
    tot = 0.0
    for row in Rows(np.array([[a, 1.0], [2.0, a]])):
        tot = tot + np.sum(row * row)
    return tot  # 2a² + 5


def listed(a):
    return list(Seq([a, a * a]))[1] * a  # a³


def tupled(a):
    first, _ = tuple(Tracked([a, 3.0]))
    return first * a  # a²


def unpacked(a):
    x, y = Seq([a, a * a])
    return x * y  # a³


def consumed_by_builtins(a):
    b = Seq([a, 2.0 * a, 0.5])
    pairs = dict(Pairs(["u", "v"], [a * a, 3.0]))
    ranked = sorted(b)  # [0.5, a, 2a] for a > 0.5
    return (
        sum(i * v for i, v in enumerate(b))  # a·1·... : 2a·1 + 0.5·2 -> 2a + 1
        + sum(x * y for x, y in zip(b, [1.0, a, 0.0]))  # a + 2a²
        + max(b) * ranked[1]  # 2a · a
        + sum(map(lambda v: v * v, b))  # 5a² + 0.25
        + pairs["u"]  # a²
    )


def starred(a):
    first, *rest = Seq([a, a * a, 2.0])
    return first * rest[0] + rest[1]  # a³ + 2


CASES = [
    (consumed_by_builtins, lambda a: 2 + 1 + 4 * a + 4 * a + 10 * a + 2 * a),
    (starred, lambda a: 3 * a * a),
    (loop, lambda a: 10 * a),
    (comprehension, lambda a: 3 * a * a),
    (zipped, lambda a: 2 + 2 * a),
    (rows, lambda a: 4 * a),
    (listed, lambda a: 3 * a * a),
    (tupled, lambda a: 2 * a),
    (unpacked, lambda a: 3 * a * a),
]


@pytest.mark.parametrize(("f", "d1"), CASES, ids=[c[0].__name__ for c in CASES])
def test_iterating_runs_the_class_iter(f, d1):
    a = 1.3
    want = d1(a)
    assert ad.gradient(f, a)[0] == pytest.approx(want, rel=1e-12)
    assert ad.jvp(f, (a,), (1.0,))[1] == pytest.approx(want, rel=1e-12)
    assert fd_gradient(f, a)[0] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(("f", "d1"), CASES, ids=[c[0].__name__ for c in CASES])
def test_second_order_is_refused_naming_the_line(f, d1):
    with pytest.raises(ad.NoRuleError, match=r"test_ad_user_iterables\.py:\d+: a loop over"):
        ad.hessian(f, 1.3)


def test_a_generator_iter_is_a_clear_error():
    class Gen:
        def __init__(self, xs):
            self.xs = xs

        def __iter__(self):
            yield from self.xs

    def f(a):
        return sum(t * t for t in Gen([a, 2.0]))

    with pytest.raises(
        ad.UnsupportedSyntaxError, match=r"(?s)test_ad_user_iterables\.py:\d+.*yield"
    ):
        ad.gradient(f, 1.3)


def explicit_iter(x):
    tot = 0.0
    for v in iter(x):  # a loop over the iterator iter() makes (was refused)
        tot = tot + v * v * v
    first, second = iter([x[0], 2.0 * x[1]])
    return tot + first * second


def test_a_loop_over_iter_of_a_sequence():
    x = np.array([0.5, -1.2, 2.0])
    want = 3 * x**2 + np.array([2.0 * x[1], 2.0 * x[0], 0.0])
    np.testing.assert_allclose(ad.gradient(explicit_iter, x)[0], want, rtol=1e-12)
    np.testing.assert_allclose(fd_gradient(explicit_iter, x)[0], want, rtol=1e-6)
    v = np.array([1.0, 0.5, -2.0])
    assert ad.jvp(explicit_iter, (x,), (v,))[1] == pytest.approx(float(want @ v))
    h = ad.hessian(explicit_iter, x)
    np.testing.assert_allclose(h, np.diag(6 * x) + np.array([[0, 2, 0], [2, 0, 0], [0, 0, 0.0]]))
