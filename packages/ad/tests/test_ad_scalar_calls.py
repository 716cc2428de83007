"""Builtin scalar functions (``math.sin``...) called on floats, computed inline.

The generated code calls such a function itself and keeps its ``scalar_rule``
partial on the tape while the name still resolves to the function whose rule is
the ``rules`` package's (``transform.inline.scalar_call``); anything else (an
int, a numpy scalar, a rebound name, a user's own rule) takes the dispatched
call. Checked against hand-derived values and central differences, in loops,
branches and helpers, for every spelling of the call, and that the inline path
is taken where it should be (the generated code) and left where it must be.
"""

from __future__ import annotations

import math
import math as m
from math import exp, sin

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from rulescore import frule, rrule, scalar_rule


def spelled_module(x, y):
    return math.sin(x) * math.exp(-y) + math.log(1.0 + x * x) - math.tanh(x * y)


def spelled_alias(x, y):
    return m.sin(x) * m.exp(-y) + m.log(1.0 + x * x) - m.tanh(x * y)


def spelled_names(x, y):
    return sin(x) * exp(-y) + math.log(1.0 + x * x) - math.tanh(x * y)


def _hand(x, y):
    dx = math.cos(x) * math.exp(-y) + 2 * x / (1 + x * x) - y * (1 - math.tanh(x * y) ** 2)
    dy = -math.sin(x) * math.exp(-y) - x * (1 - math.tanh(x * y) ** 2)
    return dx, dy


@pytest.mark.parametrize("f", [spelled_module, spelled_alias, spelled_names])
@pytest.mark.parametrize("x, y", [(0.3, 0.7), (-1.2, 2.5), (2.0, -0.4)])
def test_every_spelling_matches_the_hand_derived_gradient(f, x, y):
    g = ad.gradient(f, x, y)
    assert all(type(v) is float for v in g)
    np.testing.assert_allclose(g, _hand(x, y), rtol=1e-12)
    np.testing.assert_allclose(ad.jvp(f, (x, y), (1.0, 0.0))[1], _hand(x, y)[0], rtol=1e-12)


def test_the_inline_path_is_generated_for_each_spelling():
    for f in (spelled_module, spelled_alias, spelled_names):
        src = ad.code_adjoint(f, 0.3, 0.7)
        assert "_ad_SF.math__sin" in src and "_ad_SF.d_math__exp" in src, f.__name__


def every_function(x):
    funcs = (math.sin, math.cos, math.tan, math.atan, math.sinh, math.cosh, math.tanh)
    total = 0.0
    for fn in funcs:
        total = total + fn(x)
    total = total + math.exp(x) + math.expm1(x) + math.log(x) + math.log1p(x)
    total = total + math.log2(x) + math.log10(x) + math.sqrt(x) + math.erf(x) + math.erfc(x)
    total = total + math.gamma(x) + math.lgamma(x) + math.fabs(-x) + math.asinh(x)
    total = total + math.asin(x / 4) + math.acos(x / 4) + math.atanh(x / 4) + math.acosh(x + 1)
    total = total + math.degrees(x) + math.radians(x) + math.hypot(x)
    return total


@pytest.mark.parametrize("x", [0.4, 1.3, 2.7])
def test_every_math_function_of_one_float(x):
    (g,) = ad.gradient(every_function, x)
    (expected,) = fd_gradient(every_function, x)
    assert g == pytest.approx(expected, rel=1e-7)


def loop(x, n):
    acc = 0.0
    for k in range(n):
        s = math.sin(x * k)
        if s > 0:
            acc = acc + math.exp(-s)
        else:
            acc = acc - math.cos(s)
    return acc


def test_in_loops_and_branches_the_tape_keeps_each_partial():
    for x in (0.3, 1.1, -0.8):
        (g,) = ad.gradient(loop, x, 7)[:1]
        assert g == pytest.approx(fd_gradient(lambda x: loop(x, 7), x)[0], rel=1e-7)


def rebinding_self(x):
    x = math.sin(x)  # the argument's own name: the general path
    x = math.exp(x)
    return x * x


def test_a_result_bound_to_its_own_argument():
    x = 0.6
    expected = 2 * math.exp(2 * math.sin(x)) * math.cos(x)
    assert ad.gradient(rebinding_self, x)[0] == pytest.approx(expected, rel=1e-13)


def used_twice(x):
    s = math.sin(x)
    return s * s + s  # one partial, two uses of the result


def test_a_result_used_twice():
    x = 0.9
    expected = (2 * math.sin(x) + 1) * math.cos(x)
    assert ad.gradient(used_twice, x)[0] == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("x", [3, np.float64(0.5), np.float32(0.5), True], ids=repr)
def test_other_argument_types_take_the_dispatched_call(x):
    (g,) = ad.gradient(lambda v: math.sin(v) * 2.0, x)
    if type(x) is bool:
        assert g is None
        return
    assert float(g) == pytest.approx(2 * math.cos(float(x)), rel=1e-6)
    if isinstance(x, np.floating):
        assert type(g) is type(x)  # a numpy scalar's cotangent keeps its type


def _double(x):
    return 2.0 * x


def test_a_name_rebound_after_the_transform_runs_what_it_names_now():
    global sin
    x = 0.4
    assert ad.gradient(spelled_names, x, 0.1)[0] == pytest.approx(_hand(x, 0.1)[0])
    saved = sin
    sin = _double  # sin(x) now means 2x
    try:
        expected = 2 * math.exp(-0.1) + 2 * x / (1 + x * x) - 0.1 * (1 - math.tanh(x * 0.1) ** 2)
        assert ad.gradient(spelled_names, x, 0.1)[0] == pytest.approx(expected, rel=1e-12)
    finally:
        sin = saved
    assert ad.gradient(spelled_names, x, 0.1)[0] == pytest.approx(_hand(x, 0.1)[0])


def _restore(table, f, rules):
    table._rules[f] = rules
    table._cache.clear()
    for listener in list(table.listeners):
        listener()


def test_a_rule_registered_later_wins_over_the_inline_path():
    def f(x):
        return math.atan(x) * 3.0

    x = 0.5
    assert ad.gradient(f, x)[0] == pytest.approx(3 / (1 + x * x), rel=1e-14)
    saved = [(t, list(t._rules[math.atan])) for t in (rrule.table, frule.table)]
    try:
        scalar_rule(math.atan, lambda x, y: 10.0)  # a deliberately different derivative
        assert ad.gradient(f, x)[0] == pytest.approx(30.0)
        assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(30.0)
    finally:
        for table, rules in saved:
            _restore(table, math.atan, rules)
    assert ad.gradient(f, x)[0] == pytest.approx(3 / (1 + x * x), rel=1e-14)


def test_second_order_through_the_inline_calls():
    def f(x):
        return math.sin(x) * math.exp(x)

    x = 0.7
    # (sin e^x)'' = 2 cos(x) e^x
    assert ad.hessian(f, x) == pytest.approx(2 * math.cos(x) * math.exp(x), rel=1e-10)
    assert ad.hessian_reverse(f, x) == pytest.approx(2 * math.cos(x) * math.exp(x), rel=1e-10)


def test_cmath_functions_take_the_rules_path_and_are_conjugated():
    import cmath

    def f(x):
        return cmath.sqrt(x).imag  # sqrt(-x) i for x < 0: d/dx Im = -1 / (2 sqrt(-x))

    x = -2.0
    assert "_ad_SF" not in ad.code_adjoint(f, x) or "_ad_SF.cmath" not in ad.code_adjoint(f, x)
    assert ad.gradient(f, x)[0] == pytest.approx(-1 / (2 * math.sqrt(2.0)), rel=1e-12)
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(-1 / (2 * math.sqrt(2.0)), rel=1e-12)


def test_a_patched_math_function_changes_the_users_code_not_other_derivatives(monkeypatch):
    def f(x):
        return math.cos(x) * 2.0

    x = 0.7
    monkeypatch.setattr(math, "sin", lambda v: 0.0)  # what a user's test double might do
    assert ad.gradient(f, x)[0] == pytest.approx(-2.0 * math.cos(x - math.pi / 2), rel=1e-12)
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(-2.0 * math.cos(x - math.pi / 2), rel=1e-12)
