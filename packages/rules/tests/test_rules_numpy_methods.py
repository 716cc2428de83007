"""Tests for the ``ndarray`` method and attribute rules (``_numpy_methods``).

Methods are called as the AD calls them, unbound with ``self`` first
(``np.ndarray.reshape(x, 2, 3)`` for ``x.reshape(2, 3)``); attribute reads as
``getattr(x, "T")``.
"""

from __future__ import annotations

import numpy as np
import pytest
from rules_testing import DTYPES, TOLERANCES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

nd = np.ndarray

METHODS = [
    ("reshape-ints", nd.reshape, lambda m: (m(2, 3), N(3), N(2)), {}),
    ("reshape-tuple", nd.reshape, lambda m: (m(2, 3), N((3, 2))), {}),
    ("reshape-minus-one", nd.reshape, lambda m: (m(2, 3), N(-1)), {}),
    ("reshape-order-F", nd.reshape, lambda m: (m(2, 3), N((3, 2))), {"order": "F"}),
    ("ravel", nd.ravel, lambda m: (m(2, 3, 2),), {}),
    ("flatten", nd.flatten, lambda m: (m(2, 3),), {}),
    ("flatten-F", nd.flatten, lambda m: (m(2, 3), N("F")), {}),
    ("transpose-none", nd.transpose, lambda m: (m(2, 3, 4),), {}),
    ("transpose-ints", nd.transpose, lambda m: (m(2, 3, 4), N(1), N(2), N(0)), {}),
    ("transpose-tuple", nd.transpose, lambda m: (m(2, 3, 4), N((2, 0, 1))), {}),
    ("transpose-vector", nd.transpose, lambda m: (m(3), N(0)), {}),
    ("squeeze", nd.squeeze, lambda m: (m(1, 3),), {}),
    ("swapaxes", nd.swapaxes, lambda m: (m(2, 3, 4), N(0), N(-1)), {}),
    ("dot-matrix-vector", nd.dot, lambda m: (m(2, 3), m(3)), {}),
    ("dot-matrices", nd.dot, lambda m: (m(2, 3), m(3, 2)), {}),
    ("dot-vectors", nd.dot, lambda m: (m(3), m(3)), {}),
    ("conj", nd.conj, lambda m: (m(2, 3),), {}),
    ("conjugate", nd.conjugate, lambda m: (m(2, 3),), {}),
    ("copy", nd.copy, lambda m: (m(2, 3),), {}),
    ("take", nd.take, lambda m: (m(2, 3), N([0, 0, 5])), {}),
    ("take-axis", nd.take, lambda m: (m(2, 3), N([1, 1]), N(1)), {}),
    ("repeat", nd.repeat, lambda m: (m(2, 3), N(2)), {}),
    ("repeat-per-element", nd.repeat, lambda m: (m(2, 3), N([1, 2]), N(0)), {}),
    ("diagonal", nd.diagonal, lambda m: (m(2, 3, 4),), {}),
    ("diagonal-axes", nd.diagonal, lambda m: (m(2, 3, 4), N(1), N(1), N(2)), {}),
    ("trace", nd.trace, lambda m: (m(3, 3),), {}),
    ("trace-axes", nd.trace, lambda m: (m(2, 3, 3),), {"axis1": 1, "axis2": 2}),
    ("item-flat", nd.item, lambda m: (m(2, 3), N(4)), {}),
    ("item-ints", nd.item, lambda m: (m(2, 3), N(1), N(2)), {}),
    ("item-tuple", nd.item, lambda m: (m(2, 3), N((1, 0))), {}),
    ("item-size-one", nd.item, lambda m: (m(1),), {}),
]

ATTRIBUTES = ["T", "mT", "real", "imag"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "f", "make", "kw"), METHODS, ids=[c[0] for c in METHODS])
def test_method(name, f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)], ids=["matrix", "stack"])
@pytest.mark.parametrize("name", ATTRIBUTES)
def test_differentiable_attribute(name, shape, dtype):
    check(getattr, (maker(dtype)(*shape), N(name)), {}, dtype)


@pytest.mark.parametrize("name", ["T", "real", "imag"])
def test_attribute_of_vector(name):
    check(getattr, (maker(np.float64)(3), N(name)), {}, np.float64)


@pytest.mark.parametrize("name", ["real", "imag"])
def test_attribute_of_numpy_scalar(name):
    # Not "T": rulestest's finite differences rebuild a numpy scalar as a Python number.
    check(getattr, (np.complex128(1 + 2j), N(name)), {}, np.float64)
    check(getattr, (np.float64(1.5), N(name)), {}, np.float64)


@pytest.mark.parametrize(
    ("source", "target"),
    [(np.float64, np.float32), (np.float32, np.float64), (np.float64, np.complex128)],
    ids=["to-float32", "to-float64", "to-complex"],
)
def test_astype(source, target):
    x = maker(source)(2, 3)
    # The primal is computed in the lower precision: compare at its accuracy.
    tol = TOLERANCES[np.float32 if np.float32 in (source, target) else np.float64]
    test_rrule(nd.astype, x, N(target), **tol)
    test_frule(nd.astype, x, N(target), **tol)


def test_astype_cotangent_converted_back_to_the_input_dtype():
    x = np.ones(3, np.float32)
    _, pullback = rrule(nd.astype, x, np.float64)
    assert pullback(np.ones(3))[1].dtype == np.float32


@pytest.mark.parametrize("dtype", [int, np.int8, bool])
def test_astype_to_integer_is_non_differentiable(dtype):
    x = np.array([1.5, -2.5])
    _, pullback = rrule(nd.astype, x, dtype)
    assert pullback(np.ones(2)) == (NoTangent(), NoTangent(), NoTangent())
    assert frule((NoTangent(), np.ones(2), NoTangent()), nd.astype, x, dtype)[1] is NoTangent()


@pytest.mark.parametrize("name", ["shape", "ndim", "dtype", "size", "flags", "nbytes", "strides"])
def test_non_differentiable_attributes(name):
    x = np.ones((2, 3))
    y, pullback = rrule(getattr, x, name)
    assert y == getattr(x, name)
    assert pullback(None) == (NoTangent(), NoTangent(), NoTangent())
    assert frule((NoTangent(), np.ones((2, 3)), NoTangent()), getattr, x, name)[1] is NoTangent()


@pytest.mark.parametrize("name", ["sum", "reshape", "conj"])
def test_reading_a_method_raises(name):
    with pytest.raises(TypeError, match=f"x.{name}"):
        rrule(getattr, np.ones(2), name)


def test_imag_of_a_real_array_has_zero_cotangent():
    _, pullback = rrule(getattr, np.ones(2), "imag")
    assert pullback(np.ones(2))[1] is ZeroTangent()


def test_real_and_imag_of_complex_array():
    z = np.array([1 + 2j, 3 - 1j])
    _, pullback = rrule(getattr, z, "real")
    np.testing.assert_array_equal(pullback(np.array([1.0, 2.0]))[1], [1, 2])
    _, pullback = rrule(getattr, z, "imag")
    np.testing.assert_array_equal(pullback(np.array([1.0, 2.0]))[1], [1j, 2j])
