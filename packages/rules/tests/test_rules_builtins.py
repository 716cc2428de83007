"""Rules of Python's builtins, checked by finite differences."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from rulestest import primal_and_tangent, test_frule, test_rrule

F64 = {"rtol": 1e-7, "atol": 1e-9}
F32 = {"rtol": 1e-2, "atol": 1e-3}
NO = NoTangent()


@pytest.mark.parametrize(
    "x", [-1.5, 2.5, np.float64(-0.7), np.array([1.5, -2.0]), 1.0 - 2.0j], ids=repr
)
def test_abs(x):
    test_rrule(builtins.abs, x, **F64)
    test_frule(builtins.abs, x, **F64)


def test_abs_float32():
    x = np.array([1.5, -2.0], dtype=np.float32)
    test_rrule(builtins.abs, x, **F32)
    test_frule(builtins.abs, x, **F32)


@pytest.mark.parametrize(
    "x, y", [(1.5, 0.7), (np.array([1.5, 0.5]), 2.5), (1.2 + 0.3j, 0.7 - 0.1j)], ids=repr
)
def test_pow(x, y):
    test_rrule(builtins.pow, x, y, **F64)
    test_frule(builtins.pow, x, y, **F64)


def test_pow_integer_exponent_and_modular_pow():
    test_rrule(builtins.pow, 5.0, primal_and_tangent(3, NO), **F64)
    _, pb = rrule(builtins.pow, 5.0, 3)
    assert pb(1.0) == (NO, 75.0, NO)
    y, pb = rrule(builtins.pow, 3, 4, 5)
    assert y == 1 and pb(1.0) == (NO, NO, NO, NO)


@pytest.mark.parametrize(
    "xs",
    [
        [1.5, -2.0, 0.5],
        (1.5, -2.0),
        [np.array([1.0, 2.0]), np.array([0.5, -1.0])],
        [1.5, np.array([1.0, 2.0])],  # entries broadcast
        np.array([[1.0, 2.0], [3.0, 4.0]]),  # sums the rows
        [],
    ],
    ids=repr,
)
def test_sum(xs):
    test_rrule(builtins.sum, xs, **F64)
    test_frule(builtins.sum, xs, **F64)
    test_rrule(builtins.sum, xs, 0.25, **F64)
    test_frule(builtins.sum, xs, 0.25, **F64)


@pytest.mark.parametrize("f", [builtins.max, builtins.min], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "args",
    [
        (1.5, -2.0),
        (1.5, -2.0, 0.25),
        ([1.5, -2.0, 0.25],),
        ((0.3, 0.1),),
        (np.array([0.5, 2.0, -1.0]),),
    ],
    ids=repr,
)
def test_max_min(f, args):
    test_rrule(f, *args, **F64)
    test_frule(f, *args, **F64)


def test_max_ties_go_to_the_first_maximal_element():
    _, pb = rrule(builtins.max, 1.0, 2.0, 2.0)
    assert pb(1.0) == (NO, ZeroTangent(), 1.0, ZeroTangent())
    _, pb = rrule(builtins.min, [2.0, 1.0, 1.0])
    assert pb(1.0)[1] == Tangent[list](ZeroTangent(), 1.0, ZeroTangent())
    _, pb = rrule(builtins.max, np.array([3.0, 3.0]))
    np.testing.assert_array_equal(pb(1.0)[1], [1.0, 0.0])
    assert frule((None, 1.0, 2.0), builtins.max, 2.0, 2.0) == (2.0, 1.0)


def test_max_with_key_and_default():
    _, pb = rrule(builtins.max, [1.0, -3.0], key=abs)
    assert pb(1.0)[1] == Tangent[list](ZeroTangent(), 1.0)
    y, pb = rrule(builtins.max, [], default=0.0)
    assert y == 0.0 and pb(1.0) == (NO, ZeroTangent())


@pytest.mark.parametrize("x", [1.5, 3, np.float32(2.5), np.array(1.5)], ids=repr)
def test_float(x):
    tol = F32 if isinstance(x, np.float32) else F64
    test_rrule(builtins.float, x, **tol)
    test_frule(builtins.float, x, **tol)


@pytest.mark.parametrize("args", [(1.5,), (1.5, -0.5), (1.0 + 2.0j,), (1.0 + 2.0j, 0.5j)], ids=repr)
def test_complex(args):
    test_rrule(builtins.complex, *args, **F64)
    test_frule(builtins.complex, *args, **F64)


@pytest.mark.parametrize(
    "x, y", [(7.3, 2.1), (-7.3, 2.1), (np.array([7.3, 5.5]), np.array([2.1, 1.6]))], ids=repr
)
def test_divmod(x, y):
    test_rrule(builtins.divmod, x, y, **F64)
    test_frule(builtins.divmod, x, y, **F64)


@pytest.mark.parametrize(
    "its", [([1.5, 2.5], (0.5, -1.0)), ([1.5, 2.5, 3.5], np.array([0.5, -1.0]))], ids=repr
)
def test_zip_is_structural(its):
    z, pb = rrule(builtins.zip, *its)
    items = list(z)
    assert items == list(zip(*its))
    ȳ = [(float(k + 1), 10.0 * (k + 1)) for k in range(len(items))]
    _, *cts = pb(ȳ)
    assert cts[0][0] == 1.0 and cts[0][1] == 2.0
    assert cts[1][0] == 10.0 and cts[1][1] == 20.0
    ẋ = Tangent[type(its[0])](*[1.0] * len(its[0]))
    ż = frule((None, ẋ, ZeroTangent()), zip, *its)[1]
    assert len(ż) == len(items) and ż[0][0] == 1.0


def test_enumerate_is_structural():
    e, pb = rrule(builtins.enumerate, [1.5, 2.5, 3.5])
    assert list(e) == [(0, 1.5), (1, 2.5), (2, 3.5)]
    # the loop stopped after two items
    assert pb([(NO, 1.0), (NO, 2.0)])[1] == Tangent[list](1.0, 2.0, ZeroTangent())
    _, ė = frule((None, Tangent[list](1.0, 2.0)), enumerate, [1.5, 2.5])
    assert ė[1] == Tangent[tuple](NO, 2.0)


@pytest.mark.parametrize(
    "xs", [[1.5, 2.5, 3.5], (1.5, 2.5, 3.5), np.array([1.5, 2.5, 3.5])], ids=repr
)
def test_iter_is_structural(xs):
    it, pb = rrule(builtins.iter, xs)
    assert list(it) == list(xs)
    ct = pb([1.0, 2.0])[1]  # the loop stopped after two items
    np.testing.assert_array_equal(np.asarray(unthunk(ct), dtype=float), [1.0, 2.0, 0.0])
    assert isinstance(pb(ZeroTangent())[1], ZeroTangent)
    ẋ = Tangent[list](1.0, 2.0, 3.0) if isinstance(xs, list) else np.array([1.0, 2.0, 3.0])
    if isinstance(xs, tuple):
        ẋ = Tangent[tuple](1.0, 2.0, 3.0)
    it, ṫ = frule((None, ẋ), iter, xs)
    assert list(it) == list(xs) and [float(unthunk(e)) for e in ṫ] == [1.0, 2.0, 3.0]


def test_zip_over_a_generator_has_no_rule():
    assert rrule(builtins.zip, (v for v in [1.0])) is None


NONDIFF = [
    (builtins.len, ([1.0, 2.0],)),
    (builtins.range, (3,)),
    (builtins.isinstance, (1.0, float)),
    (builtins.round, (1.7,)),
    (builtins.round, (1.77, 1)),
    (builtins.int, (1.7,)),
    (builtins.bool, (1.7,)),
    (builtins.hash, (1.7,)),
    (builtins.id, (1.7,)),
    (builtins.type, (1.7,)),
    (builtins.str, (1.7,)),
    (builtins.repr, (1.7,)),
    (builtins.float, ("1.5",)),
]


@pytest.mark.parametrize(
    "f, args", [pytest.param(f, a, id=f"{f.__name__}{a!r}") for f, a in NONDIFF]
)
def test_non_differentiable(f, args):
    y, pb = rrule(f, *args)
    assert y == f(*args)
    assert pb(1.0) == (NO,) * (len(args) + 1)
    assert frule((None,) + (1.0,) * len(args), f, *args)[1] is NO


@pytest.mark.parametrize(
    "x",
    [1.5, np.array([1.0, -2.0]), (0.5, np.array([[1.0, 2.0]])), [2.0, np.array([3.0])]],
    ids=["float", "array", "tuple", "list"],
)
def test_deepcopy_is_the_identity_on_its_structure(x):
    import copy

    test_rrule(copy.deepcopy, x, **F64)
    test_frule(copy.deepcopy, x, **F64)
