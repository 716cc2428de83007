"""Closures that capture a name bound only after their definition (issue 18).

Python's closures read their captured variables when called, not when defined:
``def a(v): return b(v)`` may come before ``def b``, and a lambda may read a
variable assigned below it. The AD used to take a closure's derivative where
it is defined, before the later name existed: reverse mode dropped the
cotangent that reached the later name through the closure, forward mode read a
zero (or unbound) tangent. Both gave wrong numbers with no error.

Now reverse mode hands a closure's cotangent to a late name just before that
name's own adjoint runs (and follows recursive and mutually recursive closures'
nested cotangents to a fixed point); forward mode takes the closure's tangent
again once the late name has one. Forward mode refuses mutual recursion through
captured values that carry a derivative, naming the user's line and a fix.

Every program is checked against central differences (gradient, jvp) and, for
second order, against differences of the gradient (``hessian``: reverse over
forward; ``hessian_reverse``: reverse over reverse).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad

THIS_FILE = __file__


def defined_after_use(x):
    def a(v):
        return b(v) * b(v)

    def b(v):
        return v * x

    return a(2.0)  # 4 x^2


def late_value(x):
    def g(v):
        return v * k

    k = np.sin(x)
    return g(1.5)  # 1.5 sin x


def late_lambda(x):
    f = lambda v: h(v) + v  # noqa: E731
    h = lambda w: w * x * x  # noqa: E731
    return f(x)  # x^3 + x


def chain_of_late_names(x):
    def a(v):
        return b(v) * 2

    def b(v):
        return v * c

    c = x**2
    return a(1.0) + b(x)  # 2 x^2 + x^3


def used_before_and_after(x):
    def a(v, flag):
        return v * x if flag else b(v)

    y = a(3.0, True)

    def b(v):
        return v * x * x

    return y + a(1.0, False)  # 3x + x^2


def late_name_used_in_loop(x):
    g = lambda v: v * k  # noqa: E731
    k = x * 3
    s = 0.0
    for i in range(3):
        s = s + g(float(i)) * x
    return s  # 9 x^2


def late_inside_try(x):
    def a(v):
        return b(v) + 1.0

    try:

        def b(v):
            return v * np.exp(x)

        r = a(2.0)
    finally:
        pass
    return r  # 2 e^x + 1


def late_array(x):
    def a(v):
        return np.sum(b(v) ** 2)

    def b(v):
        return v * x

    return a(1.5)  # 2.25 |x|^2


def entry_and_dense(x):
    # the shape of rules._sequences.entry_cotangent: a closure calling one defined below
    def add_entry(a):
        return a + dense()

    def dense():
        return x * x

    return add_entry(x)  # x + x^2


def recursive_inner(x):
    def p(n, v):
        return v if n == 0 else p(n - 1, v * x)

    return p(3, 1.0)  # x^3


def recursive_lambda(x):
    g = lambda n: x if n == 0 else x * g(n - 1)  # noqa: E731
    return g(2)  # x^3


def mutual_recursion(x):
    def ev(n, v):
        return v if n == 0 else od(n - 1, v * x)

    def od(n, v):
        return ev(n - 1, v + x) if n > 0 else v

    return ev(5, 1.0)


def mutual_recursion_array(x):
    def ev(n, v):
        return v if n == 0 else od(n - 1, v * x)

    def od(n, v):
        return ev(n - 1, v + np.sin(x)) if n > 0 else v

    return np.sum(ev(4, np.ones(2)))


# (program, argument, hand-derived gradient or None)
LATE = [
    (defined_after_use, 0.7, 8 * 0.7),
    (late_value, 0.7, 1.5 * np.cos(0.7)),
    (late_lambda, 0.7, 3 * 0.7**2 + 1),
    (chain_of_late_names, 0.7, 4 * 0.7 + 3 * 0.7**2),
    (used_before_and_after, 0.7, 3 + 2 * 0.7),
    (late_name_used_in_loop, 0.7, 18 * 0.7),
    (late_inside_try, 0.7, 2 * np.exp(0.7)),
    (entry_and_dense, 0.7, 1 + 2 * 0.7),
    (late_array, np.array([0.3, -0.8]), 4.5 * np.array([0.3, -0.8])),
]
RECURSIVE = [
    (recursive_inner, 0.7, 3 * 0.7**2),
    (recursive_lambda, 0.7, 3 * 0.7**2),
    (mutual_recursion, 0.7, None),
    (mutual_recursion_array, np.array([0.4, 0.9]), None),
]


def _ids(case):
    return getattr(case, "__name__", "")


def _second_fd(f, x, h=1e-5):
    """Central differences of the gradient: the Hessian (a matrix for an array)."""
    if np.ndim(x) == 0:
        return (ad.gradient(f, x + h)[0] - ad.gradient(f, x - h)[0]) / (2 * h)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        cols.append((ad.gradient(f, x + e)[0] - ad.gradient(f, x - e)[0]) / (2 * h))
    return np.stack(cols, axis=1)


def _check_gradient(f, x, want):
    (fd,) = fd_gradient(f, x)
    (g,) = ad.gradient(f, x)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    if want is not None:
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
    return fd


@pytest.mark.parametrize("f, x, want", LATE, ids=_ids)
def test_a_late_capture_in_reverse_forward_and_at_second_order(f, x, want):
    fd = _check_gradient(f, x, want)
    t = 0.7 if np.ndim(x) == 0 else np.linspace(-1.0, 1.0, np.size(x))
    y, ẏ = ad.jvp(f, (x,), (t,))
    assert float(y) == pytest.approx(float(f(x)))
    assert float(ẏ) == pytest.approx(float(np.sum(fd * t)), rel=1e-6, abs=1e-8)
    H = _second_fd(f, x)
    np.testing.assert_allclose(ad.hessian(f, x), H, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ad.hessian_reverse(f, x), H, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f, x, want", RECURSIVE, ids=_ids)
def test_recursive_closures_in_reverse_mode_and_reverse_over_reverse(f, x, want):
    _check_gradient(f, x, want)
    np.testing.assert_allclose(ad.hessian_reverse(f, x), _second_fd(f, x), rtol=1e-5, atol=1e-6)


def test_mutual_recursion_by_hand():
    # ev(5, 1) = od(4, x) = ev(3, 2x) = od(2, 2x^2) = ev(1, 2x^2 + x) = od(0, 2x^3 + x^2)
    #          = 2x^3 + x^2: gradient 6x^2 + 2x, second derivative 12x + 2.
    x = 0.7
    assert mutual_recursion(x) == pytest.approx(2 * x**3 + x**2)
    assert ad.gradient(mutual_recursion, x)[0] == pytest.approx(6 * x**2 + 2 * x)
    assert ad.hessian_reverse(mutual_recursion, x) == pytest.approx(12 * x + 2)


def _line_of(f, text):
    lines, start = inspect.getsourcelines(f)
    return start + next(i for i, s in enumerate(lines) if text in s)


@pytest.mark.parametrize(
    "f, where, words",
    [
        (recursive_inner, "def p(n, v)", ["'p' calls itself", "'x'", "To fix"]),
        (mutual_recursion, "def od(n, v)", ["'ev' and 'od' call each other", "'x'", "To fix"]),
    ],
    ids=["recursion", "mutual-recursion"],
)
def test_forward_mode_refuses_recursion_through_captures_at_the_users_line(f, where, words):
    for run in (lambda: ad.jvp(f, (0.7,), (1.0,)), lambda: ad.hessian(f, 0.7)):
        with pytest.raises(ad.UnsupportedSyntaxError) as e:
            run()
        msg = str(e.value)
        assert f"{THIS_FILE}:{_line_of(f, where)}" in msg, msg
        for w in words:
            assert w in msg, msg
