"""Rules of the ``operator`` module and numpy's arithmetic ufuncs, checked by finite differences."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from rulestest import primal_and_tangent, test_frule, test_rrule

rng = np.random.default_rng(20240601)

F64 = {"rtol": 1e-7, "atol": 1e-9}
F32 = {"rtol": 1e-2, "atol": 1e-3}


def _make(shape, lo, hi, dtype=np.float64):
    """A Python float for ``None``, a numpy value of this shape otherwise."""
    if shape is None:
        return float(rng.uniform(lo, hi))
    return np.asarray(rng.uniform(lo, hi, shape), dtype=dtype)


def _cmake(shape, lo, hi):
    if shape is None:
        return complex(rng.uniform(lo, hi), rng.uniform(-0.5, 0.5))
    return rng.uniform(lo, hi, shape) + 1j * rng.uniform(-0.5, 0.5, shape)


# (x shape, y shape): None is a Python float, () a 0-d array.
SHAPE_PAIRS = [
    (None, None),
    ((), ()),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    (None, (2, 2)),
    ((2, 2), None),
    ((), (3,)),
    ((2, 1), (1, 3)),
]

# function, operand range (x, y) keeping away from poles and discontinuities
ARITHMETIC = [
    (operator.add, (0.5, 2), (0.5, 2)),
    (operator.sub, (0.5, 2), (0.5, 2)),
    (operator.mul, (0.5, 2), (0.5, 2)),
    (operator.truediv, (0.5, 2), (0.5, 2)),
    (operator.floordiv, (2.2, 2.4), (0.9, 1.0)),
    (operator.mod, (2.2, 2.4), (0.9, 1.0)),
    (operator.pow, (0.5, 2), (0.5, 2)),
    (np.add, (0.5, 2), (0.5, 2)),
    (np.subtract, (0.5, 2), (0.5, 2)),
    (np.multiply, (0.5, 2), (0.5, 2)),
    (np.divide, (0.5, 2), (0.5, 2)),
    (np.floor_divide, (2.2, 2.4), (0.9, 1.0)),
    (np.remainder, (2.2, 2.4), (0.9, 1.0)),
    (np.power, (0.5, 2), (0.5, 2)),
    (np.float_power, (0.5, 2), (0.5, 2)),
]

BINARY_CASES = [
    pytest.param(f, xs, ys, xr, yr, id=f"{f.__name__}-{xs}-{ys}")
    for f, xr, yr in ARITHMETIC
    for xs, ys in SHAPE_PAIRS
]


@pytest.mark.parametrize("f, xshape, yshape, xr, yr", BINARY_CASES)
def test_binary_float64(f, xshape, yshape, xr, yr):
    x, y = _make(xshape, *xr), _make(yshape, *yr)
    test_rrule(f, x, y, **F64)
    test_frule(f, x, y, **F64)


@pytest.mark.parametrize(
    "f, xr, yr", [pytest.param(f, xr, yr, id=f.__name__) for f, xr, yr in ARITHMETIC]
)
@pytest.mark.parametrize("xshape, yshape", [((3,), (3,)), ((2, 3), (3,)), ((), (2, 2))])
def test_binary_float32(f, xr, yr, xshape, yshape):
    x, y = _make(xshape, *xr, np.float32), _make(yshape, *yr, np.float32)
    test_rrule(f, x, y, **F32)
    test_frule(f, x, y, **F32)


COMPLEX_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
COMPLEX_OPS += [np.add, np.subtract, np.multiply, np.divide, np.power]


@pytest.mark.parametrize("f", COMPLEX_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("xshape, yshape", [(None, None), ((3,), (2, 3)), (None, (2,))])
def test_binary_complex(f, xshape, yshape):
    x, y = _cmake(xshape, 0.5, 2), _cmake(yshape, 0.5, 2)
    test_rrule(f, x, y, **F64)
    test_frule(f, x, y, **F64)


@pytest.mark.parametrize("f", [operator.mul, operator.truediv, operator.pow])
def test_binary_mixed_real_complex(f):
    # A real operand gets the real part of its cotangent.
    test_rrule(f, 1.3 + 0.4j, 0.7, **F64)
    test_rrule(f, 0.7, 1.3 + 0.4j, **F64)
    test_frule(f, 0.7, 1.3 + 0.4j, **F64)


INPLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow]


@pytest.mark.parametrize("f", INPLACE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("yshape", [None, (3,)])
def test_inplace_on_numbers(f, yshape):
    x, y = 1.3, _make(yshape, 0.5, 2)
    test_rrule(f, x, y, **F64)
    test_frule(f, x, y, **F64)


def test_inplace_on_arrays_and_lists_has_no_rule():
    # a += b on an array or list mutates a: the AD must report it, not differentiate a copy
    assert rrule(operator.iadd, np.ones(2), np.ones(2)) is None
    assert rrule(operator.iadd, [1.0], [2.0]) is None


def test_inplace_concatenation_of_tuples():
    test_rrule(operator.iadd, (1.5, 2.5), (-0.5,), **F64)
    test_frule(operator.iadd, (1.5, 2.5), (-0.5,), **F64)


UNARY = [
    operator.neg,
    operator.pos,
    operator.abs,
    np.negative,
    np.positive,
    np.absolute,
    np.fabs,
]


@pytest.mark.parametrize("f", UNARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [None, (), (3,), (2, 3)])
def test_unary(f, shape):
    x = _make(shape, 0.5, 2)
    if rng.random() < 0.5:
        x = -x if shape is None else np.negative(x, out=x)
    test_rrule(f, x, **F64)
    test_frule(f, x, **F64)
    if shape is not None:
        x32 = np.asarray(x, dtype=np.float32)
        test_rrule(f, x32, **F32)
        test_frule(f, x32, **F32)


@pytest.mark.parametrize("f", [operator.neg, operator.abs, np.absolute], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [None, (3,)])
def test_unary_complex(f, shape):
    z = _cmake(shape, 0.5, 2)
    test_rrule(f, z, **F64)
    test_frule(f, z, **F64)


def test_abs_at_zero_is_subgradient_zero():
    _, pb = rrule(operator.abs, 0.0)
    assert pb(1.0)[1] == 0.0
    _, pb = rrule(np.abs, np.array([0.0, -2.0, 3.0]))
    np.testing.assert_array_equal(pb(np.ones(3))[1], [0.0, -1.0, 1.0])
    _, pb = rrule(operator.abs, 0j)
    assert pb(1.0)[1] == 0j
    assert frule((None, 1.0), operator.abs, 0.0) == (0.0, 0.0)


def test_complex_abs_cotangent_is_real_times_direction():
    z = 3.0 + 4.0j
    _, pb = rrule(operator.abs, z)
    assert pb(2.0)[1] == pytest.approx(2.0 * z / 5.0)


@pytest.mark.parametrize(
    "x, y, dx, dy",
    [
        (0.0, 2.0, 0.0, 0.0),  # zero base, positive exponent
        (0.0, 1.0, 1.0, 0.0),
        (0.0, 0.5, np.inf, 0.0),  # the one-sided derivative is infinite
        (2.0, 0.0, 0.0, np.log(2.0)),
        (-2.0, 2.0, -4.0, 0.0),  # real x <= 0: 0 rather than NaN for ∂y
        (-2.0, 3.0, 12.0, 0.0),
    ],
)
def test_pow_edge_cases(x, y, dx, dy):
    _, pb = rrule(operator.pow, x, y)
    _, x̄, ȳ = pb(1.0)
    assert x̄ == dx and ȳ == pytest.approx(dy)


def test_pow_integer_exponent_is_a_count():
    # DESIGN.md: gradient(pow, 5.0, 3) == (75.0, None)
    _, pb = rrule(operator.pow, 5.0, 3)
    assert pb(1.0) == (NoTangent(), 75.0, NoTangent())
    test_rrule(operator.pow, -1.5, primal_and_tangent(3, NoTangent()), **F64)
    test_frule(operator.pow, -1.5, primal_and_tangent(3, NoTangent()), **F64)
    k = primal_and_tangent(np.array([1, 2, 3]), NoTangent())
    test_rrule(np.power, np.array([-0.5, 1.5, 2.0]), k, **F64)


def test_pow_arrays_with_zero_and_negative_bases():
    x, y = np.array([0.0, 0.0, -2.0, 3.0]), np.array([2.0, 1.0, 2.0, 0.0])
    _, pb = rrule(np.power, x, y)
    _, x̄, ȳ = (unthunk(c) for c in pb(np.ones(4)))
    np.testing.assert_allclose(x̄, [0.0, 1.0, -4.0, 0.0])
    np.testing.assert_allclose(ȳ, [0.0, 0.0, 0.0, np.log(3.0)])


def test_integer_base_gets_float_cotangent():
    _, pb = rrule(operator.pow, 2, 3)
    assert pb(1.0) == (NoTangent(), 12.0, NoTangent())
    _, pb = rrule(operator.mul, 2, 3)
    assert pb(1.0)[1:] == (3.0, 2.0)
    assert type(pb(1.0)[1]) is float


def test_floordiv_of_integers_has_no_tangent():
    _, pb = rrule(operator.floordiv, 7, 2)
    assert pb(1.0) == (NoTangent(), NoTangent(), NoTangent())
    _, pb = rrule(operator.floordiv, 7.5, 2.0)
    assert pb(1.0) == (NoTangent(), ZeroTangent(), ZeroTangent())


def test_mod_integer_divisor_is_a_count():
    _, pb = rrule(operator.mod, 7.5, 2)
    assert pb(1.0) == (NoTangent(), 1.0, NoTangent())


def test_array_with_list_broadcasts_like_numpy():
    y, pb = rrule(operator.mul, np.ones((2, 2)), [1.0, 2.0])
    np.testing.assert_array_equal(y, [[1.0, 2.0], [1.0, 2.0]])
    np.testing.assert_array_equal(unthunk(pb(np.ones((2, 2)))[2]), [2.0, 2.0])


def test_ufunc_out_is_rejected():
    with pytest.raises(TypeError, match="out="):
        rrule(np.add, np.ones(2), np.ones(2), out=np.empty(2))


# --- sequences ---------------------------------------------------------------------

NOIDX = NoTangent()


@pytest.mark.parametrize(
    "x, i",
    [
        ((1.5, 2.5, -0.5), 1),
        ((1.5, 2.5, -0.5), -1),
        ([1.5, 2.5, -0.5], 0),
        ((1.5, np.array([1.0, 2.0]), 3.0), 1),
        ((1.5, 2.5, -0.5, 4.0), slice(1, None, 2)),
        ([1.5, 2.5, -0.5], slice(0, 2)),
        ({"a": 1.5, "b": np.array([1.0, 2.0])}, "b"),
    ],
    ids=str,
)
def test_getitem(x, i):
    test_rrule(operator.getitem, x, primal_and_tangent(i, NOIDX), **F64)
    test_frule(operator.getitem, x, primal_and_tangent(i, NOIDX), **F64)


def test_getitem_cotangent_is_structural():
    _, pb = rrule(operator.getitem, (1.0, "a", 2.0), 0)
    assert pb(3.0) == (NoTangent(), Tangent[tuple](3.0, NoTangent(), ZeroTangent()), NoTangent())
    _, pb = rrule(operator.getitem, {"a": 1.0, "b": 2.0}, "a")
    assert pb(3.0)[1] == Tangent[dict](a=3.0)


@pytest.mark.parametrize(
    "x, y",
    [((1.5, 2.5), (-0.5,)), ([1.5], [2.5, np.array([1.0, 2.0])]), ((), (1.0,))],
    ids=str,
)
def test_concatenation(x, y):
    test_rrule(operator.add, x, y, **F64)
    test_frule(operator.add, x, y, **F64)


@pytest.mark.parametrize("x, k", [((1.5, 2.5), 3), ([1.5, -2.5], 2), ((1.5,), 0)], ids=str)
def test_repetition(x, k):
    test_rrule(operator.mul, x, primal_and_tangent(k, NOIDX), **F64)
    test_rrule(operator.mul, primal_and_tangent(k, NOIDX), x, **F64)
    test_frule(operator.mul, x, primal_and_tangent(k, NOIDX), **F64)


def test_repetition_sums_the_copies():
    _, pb = rrule(operator.mul, (1.0, 2.0), 3)
    assert pb((1.0, 2.0, 3.0, 4.0, 5.0, 6.0))[1] == Tangent[tuple](9.0, 12.0)


NONDIFF = [
    (operator.lt, 1.0, 2.0),
    (operator.le, np.ones(2), np.zeros(2)),
    (operator.eq, 1.0, 1.0),
    (operator.ne, 1.0, 1.0),
    (operator.ge, 1.0, 2.0),
    (operator.gt, 1.0, 2.0),
    (operator.not_, 1.0),
    (operator.truth, 0.0),
    (operator.is_, 1.0, None),
    (operator.is_not, 1.0, None),
    (operator.contains, [1.0, 2.0], 2.0),
    (operator.index, 3),
    (operator.add, "a", "b"),
    (operator.mul, "ab", 2),
]


@pytest.mark.parametrize("f, args", [pytest.param(f, args, id=f.__name__) for f, *args in NONDIFF])
def test_non_differentiable(f, args):
    y, pb = rrule(f, *args)
    assert y == f(*args) if not isinstance(y, np.ndarray) else np.all(y == f(*args))
    assert all(c is NoTangent() for c in pb(1.0))
    assert frule((None,) + (1.0,) * len(args), f, *args)[1] is NoTangent()
