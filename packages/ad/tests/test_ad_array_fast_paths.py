"""The array fast paths of the runtime give exactly what the rules give.

``array_arithmetic`` handles a Python number with a float array (``2.0 * x``, ``1.0 - x``,
``x / n``) without dispatch; ``acc`` adds into a thunk's value in place when the
thunk is provably not shared. Each test compares against the general path (the
fast path switched off) bit for bit, and checks that no shared array is mutated.
"""

import operator

import numpy as np
import pytest
from ad_testing import in_place

import ad
from ad.runtime import array_arithmetic, scalar_paths
from ad.runtime.accumulate import acc
from rulescore import InplaceableThunk, Thunk, unthunk


def _general(f, *args):
    """``ad.gradient`` with the number-and-array fast paths off."""
    saved = scalar_paths.FLAGS.scalar_arrays
    scalar_paths.FLAGS.scalar_arrays = frozenset()
    try:
        return ad.gradient(f, *args)
    finally:
        scalar_paths.FLAGS.scalar_arrays = saved


def mul_left(x):
    return np.sum(2.5 * x * x)


def mul_right(x):
    return np.sum(x * 3 * x)


def add_left(x):
    return np.sum((1.5 + x) * x)


def add_right(x):
    return np.sum((x + 2) * x)


def sub_left(x):
    return np.sum((1.0 - x) ** 2)


def sub_right(x):
    return np.sum((x - 0.25) * x)


def div_number(x):
    return np.sum((x / 3.0) * x)


def div_int(x):
    return np.sum((x / 7) * x)


def scale_captured(x, s):
    return np.sum(s * x * x)


CASES = [mul_left, mul_right, add_left, add_right, sub_left, sub_right, div_number, div_int]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_number_and_array_match_the_rule(f, dtype):
    x = np.linspace(-1.3, 2.1, 7).astype(dtype)
    (fast,) = ad.gradient(f, x)
    (general,) = _general(f, x)
    assert fast.dtype == general.dtype == dtype
    np.testing.assert_array_equal(fast, general)


def test_number_cotangent_is_the_sum():
    # The number's cotangent (a thunk in the fast path) is what the rule gives.
    x = np.linspace(-1.0, 1.0, 5)
    fast = ad.gradient(scale_captured, x, 1.5)
    general = _general(scale_captured, x, 1.5)
    np.testing.assert_array_equal(fast[0], general[0])
    assert type(fast[1]) is type(general[1]) is float
    assert fast[1] == general[1] == pytest.approx(float(np.sum(x * x)))


@pytest.mark.parametrize(
    "op, a, b",
    [
        (operator.mul, 2.0, np.arange(3.0)),
        (operator.mul, np.arange(3.0), 2),
        (operator.add, 1.0, np.arange(3.0)),
        (operator.sub, np.arange(3.0), 4.0),
        (operator.sub, 4.0, np.arange(3.0)),
        (operator.truediv, np.arange(1.0, 4.0), 4.0),
    ],
)
def test_odd_cotangents_go_through_the_rule(op, a, b):
    # A thunk or a cotangent of another dtype takes the rule's pullback.
    helper = array_arithmetic.FAST_HELPERS["_ad_fasti_" + op.__name__]
    y, pb = helper(a, b)
    assert callable(pb)
    from rulescore import rrule

    want_y, want_pb = rrule(op, a, b)
    np.testing.assert_array_equal(y, want_y)
    for ȳ in (np.full(3, 0.5), Thunk(lambda: np.full(3, 0.5)), np.full(3, 0.5, np.float32)):
        got = [unthunk(c) for c in pb(ȳ)[1:]]
        want = [unthunk(c) for c in want_pb(ȳ)[1:]]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert np.asarray(g).dtype == np.asarray(w).dtype


def test_acc_updates_an_unshared_thunk_value_in_place():
    base = np.ones(4)
    t = Thunk(lambda: base * 2.0)  # a fresh value held by the thunk alone
    out = acc(t, np.ones(4))
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0, 3.0])
    np.testing.assert_array_equal(base, 1.0)


def test_acc_never_mutates_a_shared_thunk_value():
    shared = np.ones(4)
    t = Thunk(lambda: shared)  # the value is also held by `shared`
    out = acc(t, np.ones(4))
    np.testing.assert_array_equal(out, 2.0)
    np.testing.assert_array_equal(shared, 1.0)
    # A thunk someone else still holds keeps its value too.
    t2 = Thunk(lambda: np.ones(4))
    keep = [t2]
    acc(t2, np.ones(4))
    np.testing.assert_array_equal(unthunk(keep[0]), 1.0)


@in_place
def test_acc_adds_an_inplaceable_thunk_into_an_unshared_thunk_value():
    calls = []

    def add_into(a):
        calls.append("inplace")
        a[1] += 5.0
        return a

    b = InplaceableThunk(add_into, Thunk(lambda: np.array([0.0, 5.0, 0.0])))
    out = acc(Thunk(lambda: np.zeros(3)), b)
    np.testing.assert_array_equal(out, [0.0, 5.0, 0.0])
    assert calls == ["inplace"]


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_slices_accumulate_as_the_general_path():
    x = np.linspace(-1.2, 1.4, 9)
    (fast,) = ad.gradient(rosen, x)
    (general,) = _general(rosen, x)
    np.testing.assert_array_equal(fast, general)
    r = x[1:] - x[:-1] ** 2
    want = np.zeros_like(x)
    want[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    want[1:] += 200.0 * r
    np.testing.assert_allclose(fast, want, rtol=1e-12)
