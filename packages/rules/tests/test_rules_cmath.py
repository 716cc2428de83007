"""Rules of the ``cmath`` module, checked by finite differences."""

from __future__ import annotations

import cmath

import pytest

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, frule, rrule
from rulestest import test_frule, test_rrule

F64 = {"rtol": 1e-7, "atol": 1e-9}
NO = NoTangent()

HOLOMORPHIC = [
    "exp",
    "log",
    "log10",
    "sqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
]
# points in each quadrant and a real argument, away from branch cuts
POINTS = [0.37 + 0.81j, -0.6 - 0.3j, -0.45 + 0.2j, 0.4]


@pytest.mark.parametrize("z", POINTS, ids=repr)
@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_holomorphic(name, z):
    f = getattr(cmath, name)
    test_rrule(f, z, **F64)
    test_frule(f, z, **F64)


@pytest.mark.parametrize(
    "f, args",
    [
        (cmath.log, (1.0 + 2.0j, 3.0 - 1.0j)),
        (cmath.log, (1.0 + 2.0j, 3.0)),
        (cmath.rect, (1.3, 0.4)),
        (cmath.rect, (-0.5, 2.4)),
        (cmath.phase, (1.0 + 2.0j,)),
        (cmath.phase, (-1.0 - 0.5j,)),
        (cmath.phase, (1.5,)),
        (cmath.polar, (1.0 + 2.0j,)),
        (cmath.polar, (-0.3 + 0.5j,)),
    ],
    ids=repr,
)
def test_other(f, args):
    test_rrule(f, *args, **F64)
    test_frule(f, *args, **F64)


# On a branch cut, a point gets the derivative of the side its value is on (the
# signed zero of the other part picks it): the inverse functions' partials come from
# their value. The differences move along the cut, keeping that signed zero.
ON_CUTS = [
    ("asin", 1.5, 0.0),
    ("asin", -3.0, -0.0),
    ("acos", 1.5, -0.0),
    ("acos", -2.2, 0.0),
    ("acosh", 0.4, 0.0),
    ("acosh", -1.7, -0.0),
    ("asinh", 0.0, 2.5),
    ("asinh", -0.0, -1.6),
]


@pytest.mark.parametrize("name, re, im", ON_CUTS, ids=repr)
def test_inverse_functions_on_their_branch_cuts_follow_the_values_side(name, re, im):
    f = getattr(cmath, name)
    z, h = complex(re, im), 1e-7
    if im == 0.0:  # a cut along the real axis
        expected = (f(complex(re + h, im)) - f(complex(re - h, im))) / (2 * h)
    else:  # along the imaginary axis
        expected = (f(complex(re, im + h)) - f(complex(re, im - h))) / (2j * h)
    ż = frule((NO, 1.0 + 0j), f, z)[1]
    assert abs(ż - expected) < 1e-6 * max(1.0, abs(expected))
    _, pb = rrule(f, z)
    assert abs(pb(1.0 + 0j)[1] - expected.conjugate()) < 1e-6 * max(1.0, abs(expected))


def test_phase_and_polar_at_zero_are_subgradient_zero():
    _, pb = rrule(cmath.phase, 0j)
    assert pb(1.0) == (NO, 0j)
    _, pb = rrule(cmath.polar, 0j)
    assert pb((1.0, 1.0)) == (NO, 0j)
    assert frule((None, 1.0 + 1.0j), cmath.polar, 0j)[1] == Tangent[tuple](0.0, 0.0)


def test_branch_point_derivative_is_infinite_not_an_error():
    _, pb = rrule(cmath.sqrt, 0j)
    assert cmath.isinf(pb(1.0)[1])


def test_log_at_zero_raises_value_error():
    with pytest.raises(ValueError):
        rrule(cmath.log, 0j)
    with pytest.raises(ValueError):
        frule((None, 1.0), cmath.log, 0.0)


@pytest.mark.parametrize("f", [cmath.isnan, cmath.isinf, cmath.isfinite])
def test_non_differentiable(f):
    y, pb = rrule(f, 1.0 + 1.0j)
    assert y is f(1.0 + 1.0j) and pb(1.0) == (NO, NO)


@pytest.mark.parametrize("z", [1.5 + 2.0j, -0.3 - 0.7j])
def test_complex_conjugate_method(z):
    test_rrule(complex.conjugate, z)
    test_frule(complex.conjugate, z)


def test_real_conjugate_methods():
    test_rrule(float.conjugate, 1.5)
    test_frule(float.conjugate, 1.5)
    # int.conjugate cannot take the float perturbations finite differences use
    y, pb = rrule(int.conjugate, 3)
    assert y == 3 and pb(2.0) == (NoTangent(), 2.0)
