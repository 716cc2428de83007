"""Rules of the ``math`` module, checked by finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rules._math import digamma
from rulescore import NoTangent, frule, rrule
from rulestest import primal_and_tangent, test_frule, test_rrule

F64 = {"rtol": 1e-7, "atol": 1e-9}
NO = NoTangent()

# function name, arguments inside the domain (away from kinks and poles)
CASES = [
    ("sin", 0.7),
    ("cos", 0.7),
    ("tan", 0.7),
    ("asin", 0.3),
    ("acos", -0.3),
    ("atan", 1.7),
    ("sinh", 0.7),
    ("cosh", -0.7),
    ("tanh", 0.7),
    ("asinh", -1.7),
    ("acosh", 1.7),
    ("atanh", 0.4),
    ("exp", 0.7),
    ("expm1", 1e-3),
    ("exp2", 1.7),
    ("log", 1.7),
    ("log", 1.7, 3.0),
    ("log1p", 0.2),
    ("log2", 1.7),
    ("log10", 1.7),
    ("sqrt", 1.7),
    ("cbrt", -1.7),
    ("erf", 0.7),
    ("erfc", 0.7),
    ("gamma", 2.7),
    ("gamma", -1.3),
    ("lgamma", 2.7),
    ("lgamma", 0.2),
    ("lgamma", -1.3),
    ("lgamma", 30.5),
    ("fabs", -1.7),
    ("degrees", 1.7),
    ("radians", 17.0),
    ("hypot", 1.2),
    ("hypot", 1.2, -0.5),
    ("hypot", 1.2, -0.5, 2.0),
    ("atan2", 0.5, -1.2),
    ("atan2", -0.5, 1.2),
    ("copysign", 1.2, -3.0),
    ("pow", 1.3, 2.2),
    ("pow", 2.5, -1.5),
    ("fmod", 5.3, 1.2),
    ("fmod", -5.3, 1.2),
]


def _case_id(c):
    return f"{c[0]}{c[1:]}"


@pytest.mark.parametrize("case", [c for c in CASES if hasattr(math, c[0])], ids=_case_id)
def test_math(case):
    f = getattr(math, case[0])
    test_rrule(f, *case[1:], **F64)
    test_frule(f, *case[1:], **F64)


@pytest.mark.parametrize("f", [math.sin, math.exp, math.sqrt], ids=lambda f: f.__name__)
def test_numpy_scalar_and_int_arguments(f):
    test_rrule(f, np.float32(1.5), rtol=1e-3, atol=1e-4)
    test_rrule(f, np.float64(1.5), **F64)
    test_rrule(f, 2, **F64)
    test_frule(f, 2, **F64)


def test_integer_arguments_that_are_counts():
    test_rrule(math.ldexp, 1.3, primal_and_tangent(3, NO), **F64)
    test_frule(math.ldexp, 1.3, primal_and_tangent(3, NO), **F64)
    test_rrule(math.pow, -1.3, primal_and_tangent(3, NO), **F64)
    _, pb = rrule(math.ldexp, 1.3, 3)
    assert pb(1.0) == (NO, 8.0, NO)


@pytest.mark.parametrize(
    "f, args",
    [
        (math.fsum, ([0.1, 0.2, -0.3],)),
        (math.fsum, ((0.1, 2.0),)),
        (math.prod, ([0.5, 2.0, -3.0],)),
        (math.prod, ([0.5, 0.0, -3.0],)),  # a zero entry
        (math.prod, ([0.0, 0.0, -3.0],)),
        (math.dist, ([0.5, 2.0], [1.5, -1.0])),
        (math.dist, ((0.5, 2.0, 1.0), (1.5, -1.0, 0.0))),
    ],
    ids=repr,
)
def test_iterable_functions(f, args):
    test_rrule(f, *args, **F64)
    test_frule(f, *args, **F64)


@pytest.mark.parametrize(
    "f, x, expected",
    [
        (math.sqrt, 0.0, math.inf),
        (math.asin, 1.0, math.inf),
        (math.acos, -1.0, -math.inf),
        (math.acosh, 1.0, math.inf),
        *([(math.cbrt, 0.0, math.inf)] if hasattr(math, "cbrt") else []),  # Python >= 3.11
        (math.fabs, 0.0, 0.0),
        (math.hypot, 0.0, 0.0),
    ],
    ids=repr,
)
def test_finite_function_infinite_derivative(f, x, expected):
    # no ZeroDivisionError: the derivative is what IEEE arithmetic says it is
    _, pb = rrule(f, x)
    assert pb(1.0)[1] == expected


def test_atan2_at_origin_is_subgradient_zero():
    _, pb = rrule(math.atan2, 0.0, 0.0)
    assert pb(1.0) == (NO, 0.0, 0.0)


@pytest.mark.parametrize(
    "f, args",
    [(math.log, (0.0,)), (math.log, (-1.0,)), (math.sqrt, (-1.0,)), (math.log, (2.0, 1.0))],
    ids=repr,
)
def test_domain_errors_raise_as_math_does(f, args):
    with pytest.raises((ValueError, ZeroDivisionError)):
        f(*args)
    with pytest.raises((ValueError, ZeroDivisionError)):
        rrule(f, *args)
    with pytest.raises((ValueError, ZeroDivisionError)):
        frule((None,) + (1.0,) * len(args), f, *args)


def test_log_at_zero_raises_value_error():
    with pytest.raises(ValueError):
        rrule(math.log, 0.0)


@pytest.mark.parametrize(
    "name, args",
    [
        ("floor", (1.5,)),
        ("ceil", (1.5,)),
        ("trunc", (-1.5,)),
        ("isnan", (1.5,)),
        ("isinf", (1.5,)),
        ("isfinite", (1.5,)),
        ("factorial", (5,)),
        ("gcd", (12, 18)),
        ("comb", (5, 2)),
        ("perm", (5, 2)),
    ],
)
def test_non_differentiable(name, args):
    f = getattr(math, name)
    y, pb = rrule(f, *args)
    assert y == f(*args)
    assert pb(1.0) == (NO,) * (len(args) + 1)
    assert frule((None,) + (1.0,) * len(args), f, *args)[1] is NO


@pytest.mark.parametrize("x", [0.1, 0.5, 1.0, 2.5, 7.3, 12.0, 150.0, -0.5, -2.3])
def test_digamma(x):
    # ψ = (log Γ)', checked by a central difference of math.lgamma
    h = 1e-5
    expected = (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)
    assert digamma(x) == pytest.approx(expected, rel=1e-7, abs=1e-8)
    assert math.isnan(digamma(-2.0))
