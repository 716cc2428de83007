"""Tests for np.apply_along_axis and np.apply_over_axes (rules that call back into an AD)."""

import numpy as np
import pytest
from rules_testing import DTYPES, TOLERANCES, N, RulesOnly, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, rrule
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

CONFIG = RulesOnly()

ALONG = [
    (np.cumsum, 1, (3, 4), ()),
    (np.sum, 0, (3, 4), ()),
    (np.sum, -1, (2, 3, 4), ()),
    (np.diag, 1, (2, 3), ()),  # each slice gives a 2-d result
    (np.sort, 0, (4, 3), ()),
    (np.multiply, 1, (2, 3), ((3,),)),  # an extra argument, broadcast against each slice
    (np.prod, 2, (2, 2, 3), ()),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    ("func", "axis", "shape", "extra"), ALONG, ids=[f"{c[0].__name__}-{c[1]}" for c in ALONG]
)
def test_apply_along_axis(func, axis, shape, extra, dtype):
    if func is np.sort and dtype is np.complex128:
        pytest.skip("sorting complex numbers is not differentiable")
    m = maker(dtype)
    args = [m(*s) for s in extra]
    tol = TOLERANCES[dtype]
    test_rrule(CONFIG, np.apply_along_axis, N(func), N(axis), m(*shape), *args, **tol)
    test_frule(CONFIG, np.apply_along_axis, N(func), N(axis), m(*shape), *args, **tol)


def test_apply_along_axis_matches_numpy_layout_and_keywords():
    x = maker(np.float64)(2, 3, 4)
    y, pb = rrule(CONFIG, np.apply_along_axis, np.diag, 1, x)
    np.testing.assert_array_equal(y, np.apply_along_axis(np.diag, 1, x))
    y, pb = rrule(CONFIG, np.apply_along_axis, np.sum, 2, x, keepdims=True)
    np.testing.assert_array_equal(y, np.apply_along_axis(np.sum, 2, x, keepdims=True))
    out = pb(np.ones_like(y))
    assert out[0] is NoTangent() and out[2] is NoTangent()
    np.testing.assert_array_equal(out[3], np.ones_like(x))
    assert pb(ZeroTangent())[3] is ZeroTangent()


def test_apply_along_axis_needs_an_ad():
    assert rrule(np.apply_along_axis, np.sum, 0, np.ones((2, 2))) is None
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        rrule(CONFIG, np.apply_along_axis, np.sum, 0, np.ones((2, 0)))


OVER = [
    (np.sum, (3, 4), N([0, 1])),
    (np.cumsum, (2, 3, 2), N([2, 0])),
    (np.mean, (2, 3, 4), N(-1)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("func", "shape", "axes"), OVER, ids=[c[0].__name__ for c in OVER])
def test_apply_over_axes(func, shape, axes, dtype):
    x = maker(dtype)(*shape)
    tol = TOLERANCES[dtype]
    test_rrule(CONFIG, np.apply_over_axes, N(func), x, axes, **tol)
    test_frule(CONFIG, np.apply_over_axes, N(func), x, axes, **tol)
