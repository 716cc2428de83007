"""Rules of numpy's scalar constructors and ``s.item()``, checked by finite differences,
and the non-differentiable random-number constructors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

F64 = {"rtol": 1e-7, "atol": 1e-9}
F32 = {"rtol": 1e-2, "atol": 1e-3}
NO = NoTangent()


def _tol(*values):
    low = any(np.asarray(v).dtype in (np.float32, np.complex64, np.float16) for v in values)
    return F32 if low else F64


@pytest.mark.parametrize(
    "cls, x",
    [
        (np.float64, 1.5),
        (np.float64, -2),  # an int is a real number: a float cotangent
        (np.float64, np.float32(1.25)),
        (np.float64, np.array(1.5)),  # a 0-d array gives a scalar; its cotangent is 0-d
        (np.float64, np.array([1.5, -2.0])),  # an array stays an array
        (np.float32, 1.5),
        (np.float32, np.float64(-0.75)),
        (np.float16, 0.5),
        (np.longdouble, 1.5),
        (np.complex128, 1.5),
        (np.complex128, 1.5 - 0.5j),
        (np.complex128, np.complex64(0.5 + 2.0j)),
        (np.complex64, np.complex128(1.5 + 0.5j)),
        (np.clongdouble, 1.0 + 1.0j),
    ],
    ids=repr,
)
def test_constructor(cls, x):
    tol = _tol(x, cls(0))
    test_rrule(cls, x, **tol)
    test_frule(cls, x, **tol)


@pytest.mark.parametrize("cls", [np.float64, np.float32, np.complex128])
def test_constructor_keeps_dtype_and_projects_back(cls):
    y, pb = rrule(cls, 1.5)
    assert type(y) is cls
    assert type(pb(cls(2.0))[1]) is float  # a Python float argument gets a float
    _, pb = rrule(cls, np.float32(1.5))
    assert type(pb(cls(2.0))[1]) is np.float32
    _, ẏ = frule((None, 1.0), cls, 1.5)
    assert type(ẏ) is cls


def test_complex_to_real_keeps_the_real_part():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        test_rrule(np.float64, np.complex128(1.5 + 0.5j), **F64)
        test_frule(np.float64, np.complex128(1.5 + 0.5j), **F64)
        _, pb = rrule(np.float64, np.complex128(1.5 + 0.5j))
        assert pb(np.float64(2.0))[1] == 2.0 + 0.0j


def test_complex_from_two_parts():
    test_rrule(np.complex128, 1.5, -0.5, **F64)
    test_frule(np.complex128, 1.5, -0.5, **F64)
    test_rrule(np.complex64, np.float32(1.5), np.float32(-0.5), **F32)


def test_zero_cotangent():
    _, pb = rrule(np.float64, 1.5)
    assert pb(ZeroTangent()) == (NO, ZeroTangent())
    assert frule((None, ZeroTangent()), np.float64, 1.5)[1] == ZeroTangent()


@pytest.mark.parametrize(
    "x", [np.float64(1.5), np.float32(-0.5), np.complex128(1.0 - 2.0j)], ids=repr
)
def test_scalar_item(x):
    tol = _tol(x)
    test_rrule(np.generic.item, x, **tol)
    test_frule(np.generic.item, x, **tol)
    y, pb = rrule(np.generic.item, x)
    assert type(y) in (float, complex)
    assert type(pb(1.0)[1]) is type(x)  # the cotangent projects back to the scalar's type


def test_integer_scalar_item_has_no_tangent():
    y, ẏ = frule((None, 1.0), np.generic.item, np.int64(3))
    assert y == 3 and ẏ is NO


@pytest.mark.parametrize(
    "f, args",
    [
        (np.float64, ("1.5",)),
        (np.float32, (b"2.5",)),
        (np.int64, (1.7,)),
        (np.int32, (np.float64(2.5),)),
        (np.bool_, (0.5,)),
        (np.random.default_rng, (3,)),
        (np.random.SeedSequence, (3,)),
        (np.random.RandomState, (3,)),
        (np.random.PCG64, (3,)),
    ],
    ids=lambda v: getattr(v, "__name__", repr(v)),
)
def test_non_differentiable(f, args):
    y, pb = rrule(f, *args)
    assert type(y) is type(f(*args))
    assert pb(1.0) == (NO,) * (len(args) + 1)
    assert frule((None,) + (1.0,) * len(args), f, *args)[1] is NO


def test_generator_from_a_bit_generator_is_non_differentiable():
    bits = np.random.PCG64(1)
    y, pb = rrule(np.random.Generator, bits)
    assert isinstance(y, np.random.Generator) and pb(1.0) == (NO, NO)


@pytest.mark.parametrize(
    "x,dtype",
    [
        (np.float32(1.5), np.float64),
        (np.float64(-0.3), np.float32),
        (np.float64(2.0), np.complex128),
        (np.complex128(1.0 - 2.0j), np.complex64),
    ],
    ids=repr,
)
def test_scalar_astype(x, dtype):
    test_rrule(np.generic.astype, x, dtype, rtol=1e-3, atol=1e-3)
    test_frule(np.generic.astype, x, dtype, rtol=1e-3, atol=1e-3)
    y, pb = rrule(np.generic.astype, x, dtype)
    assert type(y) is dtype
    assert type(pb(y)[1]) is type(x)  # the cotangent projects back to the scalar's type


def test_scalar_astype_to_an_integer_has_no_derivative():
    y, pb = rrule(np.generic.astype, np.float64(2.7), np.int64)
    assert y == 2 and pb(np.int64(1))[1] == NO
    assert frule((None, 1.0, None), np.generic.astype, np.float64(2.7), np.int64)[1] == NO
