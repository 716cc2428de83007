"""Tests of the rules for ufunc methods (rules._numpy_ufunc_methods)."""

import numpy as np
import pytest
from rules_testing import DTYPES, TOLERANCES, N, maker, random_maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

COMPLEX_OK = (np.add, np.subtract, np.multiply, np.divide)  # others: real only
REAL_ONLY = (np.maximum, np.minimum, np.logaddexp, np.hypot, np.arctan2, np.fmax)
UFUNCS = COMPLEX_OK + REAL_ONLY


def _cases(ufuncs, dtypes=DTYPES):
    return [
        pytest.param(u, d, id=f"{u.__name__}-{np.dtype(d).name}")
        for u in ufuncs
        for d in dtypes
        if np.dtype(d).kind != "c" or u in COMPLEX_OK
    ]


def _positive(x):
    """Away from 0 (divide) and with distinct entries: no ties unless a test makes them."""
    return x + np.where(x.real >= 0, 1.5, -1.5).astype(x.dtype)


def check(method, u, *args, dtype, **kw):
    tol = TOLERANCES[dtype]
    test_rrule(method, N(u), *args, fkwargs=kw, **tol)
    test_frule(method, N(u), *args, fkwargs=kw, **tol)


@pytest.mark.parametrize("u, dtype", _cases(UFUNCS))
@pytest.mark.parametrize("sa, sb", [((3,), (4,)), ((2, 3), (2,)), ((), (3,)), ((2,), ())])
def test_outer(u, dtype, sa, sb):
    rand = maker(dtype)
    check(np.ufunc.outer, u, _positive(rand(*sa)), _positive(rand(*sb)), dtype=dtype)


def test_outer_scalar_and_zero_cotangent():
    y, pb = rrule(np.ufunc.outer, np.multiply, 2.0, np.array([1.0, 3.0]))
    df, du, da, db = pb(np.ones(2))
    assert (df, du) == (NoTangent(), NoTangent())
    assert isinstance(da, float) and da == 4.0
    np.testing.assert_allclose(db, [2.0, 2.0])
    assert pb(ZeroTangent())[2:] == (ZeroTangent(), ZeroTangent())
    with pytest.raises(TypeError, match="no keyword"):
        rrule(np.ufunc.outer, np.add, np.ones(2), np.ones(2), out=np.zeros((2, 2)))


@pytest.mark.parametrize("u, dtype", _cases(UFUNCS))
@pytest.mark.parametrize("shape, kw", [((5,), {}), ((3, 4), {"axis": 1}), ((3, 2, 2), {})])
def test_accumulate(u, dtype, shape, kw):
    x = _positive(maker(dtype)(*shape))
    if u in (np.divide,):
        x = np.where(abs(x) < 1, x * 3, x).astype(dtype)
    check(np.ufunc.accumulate, u, x, dtype=dtype, **kw)


@pytest.mark.parametrize("u", [np.add, np.multiply, np.maximum, np.subtract])
def test_accumulate_axis_positional(u):
    x = _positive(maker(np.float64)(3, 4))
    check(np.ufunc.accumulate, u, x, N(-1), dtype=np.float64)
    _, pb = rrule(np.ufunc.accumulate, u, x, -1)
    assert pb(np.ones((3, 4)))[3] == NoTangent()


def test_accumulate_maximum_ties_as_maximum():
    """A running maximum with a tie splits each step half and half, as np.maximum does."""
    x = np.array([2.0, 1.0, 2.0, 2.0])
    _, pb = rrule(np.ufunc.accumulate, np.maximum, x)
    dx = pb(np.array([0.0, 0.0, 0.0, 1.0]))[2]
    np.testing.assert_allclose(dx, [0.25, 0.0, 0.25, 0.5])
    _, pb2 = rrule(np.maximum, 2.0, 2.0)
    assert pb2(1.0)[1:] == (0.5, 0.5)


def test_accumulate_multiply_with_zero():
    x = np.array([2.0, 0.0, 3.0, 4.0])
    check(np.ufunc.accumulate, np.multiply, x, dtype=np.float64)


REDUCE_KW = [
    ((4,), {}),
    ((3, 4), {"axis": 1}),
    ((3, 4), {"axis": 0, "keepdims": True}),
    ((2, 3, 2), {"axis": (0, 2)}),
    ((2, 3), {"axis": None}),
]


@pytest.mark.parametrize("u, dtype", _cases(UFUNCS))
@pytest.mark.parametrize("shape, kw", REDUCE_KW)
def test_reduce(u, dtype, shape, kw):
    x = _positive(maker(dtype)(*shape))
    if u is np.arctan2 and isinstance(kw.get("axis", 0), int):
        ax = kw.get("axis", 0)
        fold = np.take(np.arctan2.accumulate(x, axis=ax), [-1], axis=ax)
        if np.allclose(np.arctan2.reduce(x, axis=ax, keepdims=True), fold):
            check(np.ufunc.reduce, u, x, dtype=dtype, **kw)
            return
        with pytest.raises(ValueError, match="fold"):  # numpy's reduce is not the fold
            rrule(np.ufunc.reduce, u, x, **kw)
        return
    reorderable = u not in (np.subtract, np.divide, np.arctan2)
    if not reorderable and (kw.get("axis", 0) is None or isinstance(kw.get("axis"), tuple)):
        with pytest.raises(ValueError):
            rrule(np.ufunc.reduce, u, x, **kw)
        return
    check(np.ufunc.reduce, u, x, dtype=dtype, **kw)


@pytest.mark.parametrize("u", [np.add, np.multiply, np.maximum, np.logaddexp])
def test_reduce_positional_options(u):
    x = _positive(maker(np.float64)(3, 4))
    check(np.ufunc.reduce, u, x, N(1), N(None), N(None), N(True), dtype=np.float64)
    _, pb = rrule(np.ufunc.reduce, u, x, 1, None, None, True)
    assert pb(np.ones((3, 1)))[3:] == (NoTangent(),) * 4


def test_reduce_where_initial_delegated():
    x = _positive(maker(np.float64)(3, 4))
    where = np.arange(12).reshape(3, 4) % 3 != 0
    check(np.ufunc.reduce, np.add, x, dtype=np.float64, axis=1, where=where)
    check(np.ufunc.reduce, np.maximum, x, dtype=np.float64, axis=0, initial=-5.0)
    with pytest.raises(TypeError, match="where"):
        rrule(np.ufunc.reduce, np.logaddexp, x, where=where)


def test_reduce_ties_and_empty():
    x = np.array([1.0, 3.0, 3.0, 3.0])
    _, pb = rrule(np.ufunc.reduce, np.maximum, x)
    np.testing.assert_allclose(pb(1.0)[2], [0, 1 / 3, 1 / 3, 1 / 3])  # as np.max
    e = np.zeros((0, 3))
    y, pb = rrule(np.ufunc.reduce, np.logaddexp, e)
    assert np.all(y == -np.inf)
    assert pb(np.ones(3))[2] == ZeroTangent()
    y, ẏ = frule((NoTangent(), NoTangent(), np.ones((0, 3))), np.ufunc.reduce, np.logaddexp, e)
    assert ẏ == ZeroTangent()


@pytest.mark.parametrize(
    "u, dtype", _cases((np.add, np.multiply, np.maximum, np.subtract, np.hypot))
)
@pytest.mark.parametrize(
    "indices, shape, kw",
    [([0, 2, 3], (6,), {}), ([0, 3, 1, 4], (6,), {}), ([1, 1, 4], (3, 5), {"axis": 1})],
)
def test_reduceat(u, dtype, indices, shape, kw):
    x = _positive(maker(dtype)(*shape))
    check(np.ufunc.reduceat, u, x, N(np.array(indices)), dtype=dtype, **kw)


def test_reduceat_nondifferentiable_indices():
    x = np.arange(1.0, 7.0)
    _, pb = rrule(np.ufunc.reduceat, np.add, x, [0, 3, 1], 0)
    df, du, dx, di, dax = pb(np.array([1.0, 10.0, 100.0]))
    assert (df, du, di, dax) == (NoTangent(),) * 4
    np.testing.assert_allclose(dx, [1, 101, 101, 110, 100, 100])


def test_float32_stays():
    x = maker(np.float32)(4) + 2
    for m, args in [
        (np.ufunc.outer, (np.multiply, x, x)),
        (np.ufunc.accumulate, (np.maximum, x)),
        (np.ufunc.reduce, (np.logaddexp, x)),
        (np.ufunc.reduceat, (np.add, x, [0, 2])),
    ]:
        y, pb = rrule(m, *args)
        assert pb(np.ones_like(y))[2].dtype == np.float32
        _, ẏ = frule(
            (NoTangent(), NoTangent(), np.ones_like(x), *(NoTangent(),) * (len(args) - 2)), m, *args
        )
        assert np.asarray(ẏ).dtype == np.float32


def test_random_seeded_inputs_differ():
    rand = random_maker(3)
    assert not np.array_equal(rand(3), rand(3))
