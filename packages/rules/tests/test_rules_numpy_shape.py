"""Tests for the numpy construction and shape rules (``_numpy_construction``, ``_numpy_shape``).

Every case runs through rulestest's ``test_rrule`` and ``test_frule`` for
float64, float32 (looser tolerances) and complex128 arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
from rules_testing import DTYPES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk
from rulestest import test_frule, test_rrule

CONSTRUCTION = [
    ("array-vector", np.array, lambda m: (m(3),), {}),
    ("array-0d", np.array, lambda m: (m(),), {}),
    ("asarray-matrix", np.asarray, lambda m: (m(2, 3),), {}),
    ("array-list-of-arrays", np.array, lambda m: ([m(3), m(3)],), {}),
    ("array-list-of-0d", np.array, lambda m: ([m(), m(), m()],), {}),
    ("array-nested-mixed", np.array, lambda m: ([list(m(2)), m(2)],), {}),
    ("array-tuple", np.array, lambda m: ((m(), m(2)[0]),), {}),
    ("array-ndmin", np.array, lambda m: (m(2),), {"ndmin": 3}),
    ("asarray-dtype-complex", np.asarray, lambda m: (m(2, 2),), {"dtype": np.complex128}),
    ("copy", np.copy, lambda m: (m(2, 3),), {}),
    ("ascontiguousarray", np.ascontiguousarray, lambda m: (m(3, 2).T,), {}),
    ("ascontiguousarray-0d", np.ascontiguousarray, lambda m: (m(),), {}),
]

SHAPE = [
    ("reshape-tuple", np.reshape, lambda m: (m(2, 3), N((3, 2))), {}),
    ("reshape-minus-one", np.reshape, lambda m: (m(2, 3), N(-1)), {}),
    ("reshape-order-F", np.reshape, lambda m: (m(2, 3), N((3, 2))), {"order": "F"}),
    ("reshape-0d", np.reshape, lambda m: (m(), N((1, 1))), {}),
    ("ravel", np.ravel, lambda m: (m(2, 3, 2),), {}),
    ("ravel-F", np.ravel, lambda m: (m(2, 3),), {"order": "F"}),
    ("transpose", np.transpose, lambda m: (m(2, 3, 4),), {}),
    ("transpose-axes", np.transpose, lambda m: (m(2, 3, 4), N((1, -1, 0))), {}),
    ("transpose-axes-kw", np.transpose, lambda m: (m(2, 3, 4),), {"axes": (2, 0, 1)}),
    ("swapaxes-negative", np.swapaxes, lambda m: (m(2, 3, 4), N(0), N(-1)), {}),
    ("moveaxis", np.moveaxis, lambda m: (m(2, 3, 4), N(0), N(-1)), {}),
    ("moveaxis-many", np.moveaxis, lambda m: (m(2, 3, 4), N((0, 1)), N((2, 0))), {}),
    ("expand_dims", np.expand_dims, lambda m: (m(2, 3), N((0, 2))), {}),
    ("squeeze", np.squeeze, lambda m: (m(1, 3, 1),), {}),
    ("squeeze-axis", np.squeeze, lambda m: (m(1, 3, 1),), {"axis": -1}),
    ("broadcast_to-vector", np.broadcast_to, lambda m: (m(3), N((2, 3))), {}),
    ("broadcast_to-unit-axis", np.broadcast_to, lambda m: (m(2, 1), N((2, 3))), {}),
    ("broadcast_to-0d", np.broadcast_to, lambda m: (m(), N((2, 2))), {}),
    ("atleast_2d", np.atleast_2d, lambda m: (m(3),), {}),
    ("atleast_3d", np.atleast_3d, lambda m: (m(2, 3),), {}),
    ("flip", np.flip, lambda m: (m(2, 3),), {}),
    ("flip-axis", np.flip, lambda m: (m(2, 3), N(-1)), {}),
    ("fliplr", np.fliplr, lambda m: (m(2, 3),), {}),
    ("flipud", np.flipud, lambda m: (m(2, 3),), {}),
    ("roll-flat", np.roll, lambda m: (m(2, 3), N(2)), {}),
    ("roll-axes", np.roll, lambda m: (m(2, 3, 2), N((1, -1))), {"axis": (0, 2)}),
    ("tile-int", np.tile, lambda m: (m(2, 3), N(2)), {}),
    ("tile-more-reps", np.tile, lambda m: (m(3), N((2, 2))), {}),
    ("tile-fewer-reps", np.tile, lambda m: (m(2, 1, 2), N((2, 3))), {}),
    ("repeat-flat", np.repeat, lambda m: (m(2, 3), N(2)), {}),
    ("repeat-axis", np.repeat, lambda m: (m(2, 3), N(2)), {"axis": -1}),
    ("repeat-per-element", np.repeat, lambda m: (m(2, 3), N([1, 0, 3])), {"axis": 1}),
    ("repeat-per-element-flat", np.repeat, lambda m: (m(4), N([2, 0, 1, 3])), {}),
    ("pad-constant", np.pad, lambda m: (m(2, 3), N(1)), {}),
    (
        "pad-constant-values",
        np.pad,
        lambda m: (m(2, 3), N(((1, 0), (0, 2)))),
        {"constant_values": 3},
    ),
    ("pad-edge", np.pad, lambda m: (m(2, 3), N(((2, 1), (0, 3))), N("edge")), {}),
    ("pad-reflect", np.pad, lambda m: (m(3, 3), N(2)), {"mode": "reflect"}),
    ("pad-symmetric", np.pad, lambda m: (m(2, 3), N(((1, 2), (3, 0)))), {"mode": "symmetric"}),
    ("pad-wrap", np.pad, lambda m: (m(4), N(5)), {"mode": "wrap"}),
]

SEQUENCES = [
    ("concatenate", np.concatenate, lambda m: ([m(2, 3), m(1, 3)],), {}),
    ("concatenate-axis", np.concatenate, lambda m: ((m(2, 3), m(2, 1)),), {"axis": -1}),
    ("concatenate-flat", np.concatenate, lambda m: ([m(2, 3), m(4)],), {"axis": None}),
    ("concatenate-list-entry", np.concatenate, lambda m: ([list(m(2)), m(1)],), {}),
    ("stack", np.stack, lambda m: ([m(2, 3), m(2, 3)],), {}),
    ("stack-axis", np.stack, lambda m: ([m(2), m(2), m(2)],), {"axis": -1}),
    ("stack-0d", np.stack, lambda m: ([m(), m()],), {}),
    ("hstack", np.hstack, lambda m: ([m(2, 3), m(2, 1)],), {}),
    ("hstack-vectors", np.hstack, lambda m: ([m(2), m(), m(3)],), {}),
    ("vstack", np.vstack, lambda m: ([m(2, 3), m(1, 3)],), {}),
    ("vstack-vectors", np.vstack, lambda m: ((m(3), m(3)),), {}),
    ("split-sections", np.split, lambda m: (m(4, 3), N(2)), {}),
    ("split-indices", np.split, lambda m: (m(2, 5), N([1, 3])), {"axis": -1}),
    ("array_split", np.array_split, lambda m: (m(5), N(3)), {}),
]

CASES = CONSTRUCTION + SHAPE + SEQUENCES


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "f", "make", "kw"), CASES, ids=[c[0] for c in CASES])
def test_shape_rule(name, f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (np.array, ([1.0, 2.0],)),
        (np.array, ([[1.0, 2.0], [3.0, 4.0]],)),
        (np.asarray, ([np.array([1.0, 2.0]), [3.0, 4.0]],)),
        (np.array, ((1.0, 2.0),)),
        (np.array, (2.5,)),
    ],
    ids=["list", "nested", "arrays-and-lists", "tuple", "python-float"],
)
def test_array_from_python_scalars(f, args):
    test_rrule(f, *args)
    test_frule(f, *args)


def test_array_cotangent_keeps_the_nesting():
    x = [[1.0, 2.0], np.array([3.0, 4.0]), (5.0, 6.0)]
    _, pullback = rrule(np.array, x)
    dx = pullback(np.arange(6.0).reshape(3, 2))[1]
    assert type(dx) is list and type(dx[0]) is list and type(dx[0][0]) is float
    assert isinstance(dx[1], np.ndarray) and type(dx[2]) is tuple
    assert dx[0] == [0.0, 1.0] and dx[2] == (4.0, 5.0)


def test_array_of_ints_is_differentiable_as_reals():
    test_rrule(np.array, [1, 2, 3])
    _, pullback = rrule(np.array, [1, 2])
    assert pullback(np.ones(2))[1] == [1.0, 1.0]


@pytest.mark.parametrize("dtype", [int, np.int32, bool])
def test_array_with_integer_dtype_is_non_differentiable(dtype):
    x = np.array([1.5, 2.5])
    _, pullback = rrule(np.array, x, dtype=dtype)
    assert pullback(np.ones(2))[1] is NoTangent()
    assert frule((NoTangent(), np.ones(2)), np.array, x, dtype=dtype)[1] is NoTangent()


def test_array_float32_cotangent_converted_back():
    x = np.ones(3, np.float32)
    _, pullback = rrule(np.array, x, dtype=np.float64)
    assert unthunk(pullback(np.ones(3))[1]).dtype == np.float32


@pytest.mark.parametrize("f", [np.zeros_like, np.ones_like, np.empty_like])
def test_like_constructors_are_non_differentiable(f):
    y, pullback = rrule(f, np.ones(3))
    assert y.shape == (3,)
    assert pullback(np.ones(3)) == (NoTangent(), NoTangent())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_full_like_differentiable_in_the_fill_value(dtype):
    m = maker(dtype)
    fill = m()[()]
    check(np.full_like, (N(m(2, 3)), fill), {}, dtype)
    check(np.full_like, (N(np.ones(3)), 2.5), {}, np.float64)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_full_differentiable_in_the_fill_value(dtype):
    m = maker(dtype)
    check(np.full, (N((2, 3)), m()[()]), {}, dtype)
    check(np.full, (N((2, 3)), m(3)), {}, dtype)  # a row broadcast down the rows
    check(np.full, (N((4,)), 2.5), {}, np.float64)


def test_full_sums_the_cotangent_over_broadcast_entries():
    _, pullback = rrule(np.full, (2, 3), np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(pullback(np.ones((2, 3)))[2], [2.0, 2.0, 2.0])
    assert frule((NoTangent(), NoTangent(), 2.0), np.full, (2,), 1.0)[1].tolist() == [2.0, 2.0]


def test_full_like_integer_output_is_non_differentiable():
    _, pullback = rrule(np.full_like, np.ones(2, dtype=int), 2.5)
    assert pullback(np.ones(2)) == (NoTangent(), NoTangent(), NoTangent())


def test_split_accepts_zero_pieces():
    _, pullback = rrule(np.split, np.arange(4.0), 2)
    dx = pullback([ZeroTangent(), np.ones(2)])[1]
    np.testing.assert_array_equal(dx, [0.0, 0.0, 1.0, 1.0])


@pytest.mark.parametrize("mode", ["maximum", "mean", "linear_ramp", "median", "minimum"])
def test_pad_nonlinear_modes_raise(mode):
    with pytest.raises(NotImplementedError, match=mode):
        rrule(np.pad, np.ones(3), 1, mode)
    with pytest.raises(NotImplementedError, match=mode):
        frule((NoTangent(), np.ones(3), NoTangent(), NoTangent()), np.pad, np.ones(3), 1, mode)


def test_pad_odd_reflection_raises():
    with pytest.raises(NotImplementedError, match="reflect_type"):
        rrule(np.pad, np.ones(3), 1, "reflect", reflect_type="odd")


def test_ravel_order_k_follows_memory_layout():
    x = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    y, pullback = rrule(np.ravel, x, order="K")
    ȳ = np.random.default_rng(1).standard_normal(y.shape)
    dx = pullback(ȳ)[1]
    assert np.isclose(np.sum(dx * x), np.sum(ȳ * y))  # <x̄, x> = <ȳ, y> for a permutation


def test_zero_cotangent_gives_zero():
    _, pullback = rrule(np.reshape, np.ones((2, 2)), (4,))
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent())
