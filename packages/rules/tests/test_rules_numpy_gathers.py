"""Tests of the gather rules (``rules._numpy_gathers``: ``trim_zeros``, ``extract``,
``partition``, ``sort_complex``) and of ``math.frexp``, ``math.modf``,
``math.remainder`` (``rules._math``), by finite differences and at their edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rules_testing import DTYPES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule
from rulestest import primal_and_tangent, test_frule, test_rrule

dtype_ids = lambda d: np.dtype(d).name  # noqa: E731
F64 = {"rtol": 1e-8, "atol": 1e-10}


def with_zeros(m, shape, zero_at):
    x = m(*shape)
    x[zero_at] = 0
    return x


TRIM = [
    ("1d-fb", (7,), (np.array([0, 1, 5, 6]),), (), {}),
    ("1d-f", (7,), (np.array([0, 1, 5, 6]),), (N("f"),), {}),
    ("1d-b-keyword", (7,), (np.array([0, 1, 5, 6]),), (), {"trim": "b"}),
    ("1d-inner-zero", (6,), (np.array([0, 3]),), (), {}),
    ("2d-all-axes", (4, 5), (np.array([0, 3, 3]), np.array([1, 0, 4])), (), {}),
    ("2d-axis1", (3, 5), (slice(None), np.array([0, 4])), (), {"axis": 1}),
    ("2d-axis0-positional", (4, 3), (np.array([0]),), (N("fb"), N(0)), {}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("name", "shape", "zero_at", "extra", "kw"), TRIM, ids=[c[0] for c in TRIM]
)
def test_trim_zeros(name, shape, zero_at, extra, kw, dtype):
    x = with_zeros(maker(dtype), shape, zero_at)
    if name == "2d-all-axes":
        x[0, :] = 0
        x[:, 4] = 0
    if name == "2d-axis0-positional":
        x[0, :] = 0
    zero_keeping(x, extra, kw, dtype)


def zero_keeping(x, extra, kw, dtype):
    """Finite differences can't move the trimmed zeros (the output would grow): along
    directions that keep every zero at zero the frule matches central differences, and
    the pullback is its adjoint in all directions."""
    rng = np.random.default_rng(5)
    args = tuple(getattr(a, "primal", a) for a in extra)
    nots = (NoTangent(),) * len(args)
    d = maker(dtype)(*x.shape) * (x != 0)
    _, ẏ = frule((NoTangent(), d, *nots), np.trim_zeros, x, *args, **kw)
    h = 1e-3 if dtype is np.float32 else 1e-6
    fd = (np.trim_zeros(x + h * d, *args, **kw) - np.trim_zeros(x - h * d, *args, **kw)) / (2 * h)
    tol = 1e-3 if dtype is np.float32 else 1e-8
    np.testing.assert_allclose(ẏ, fd, rtol=tol, atol=tol)
    y, pb = rrule(np.trim_zeros, x, *args, **kw)
    ȳ = maker(dtype)(*y.shape)
    dx, *rest = pb(ȳ)[1:]
    assert dx.dtype == x.dtype and all(r is NoTangent() for r in rest)
    e = rng.standard_normal(x.shape).astype(dtype)
    _, ẏe = frule((NoTangent(), e, *nots), np.trim_zeros, x, *args, **kw)
    np.testing.assert_allclose(np.vdot(ȳ, ẏe).real, np.vdot(dx, e).real, rtol=tol)


def test_trim_zeros_trimmed_entries_get_zero():
    x = np.array([0.0, 0.0, 1.5, 0.0, -2.0, 0.0])
    y, pb = rrule(np.trim_zeros, x)
    assert y.shape == (3,)
    np.testing.assert_array_equal(pb(np.array([1.0, 2.0, 3.0]))[1], [0, 0, 1, 2, 3, 0])
    y, pb = rrule(np.trim_zeros, np.zeros(3))
    assert y.size == 0
    np.testing.assert_array_equal(pb(np.zeros(0))[1], np.zeros(3))
    y, pb = rrule(np.trim_zeros, [0.0, 2.0, 3.0])  # a list in, a list out
    assert y == [2.0, 3.0]
    assert pb([1.0, 1.0])[1] == [0.0, 1.0, 1.0]
    _, ẏ = frule((NoTangent(), [5.0, 6.0, 7.0]), np.trim_zeros, [0.0, 2.0, 3.0])
    assert list(ẏ) == [6.0, 7.0]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("cshape", "ashape"), [((6,), (6,)), ((2, 3), (2, 3)), ((3,), (2, 3)), ((2, 3), (6,))]
)
def test_extract(cshape, ashape, dtype):
    cond = np.arange(np.prod(cshape)).reshape(cshape) % 3 != 1
    check(np.extract, (N(cond), maker(dtype)(*ashape)), {}, dtype)


def test_extract_condition_gets_no_tangent():
    _, pb = rrule(np.extract, np.array([1, 0, 2]), np.array([1.0, 2.0, 3.0]))
    out = pb(np.array([1.0, 5.0]))
    assert out[1] is NoTangent()
    np.testing.assert_array_equal(out[2], [1.0, 0.0, 5.0])


PARTITION = [
    ("kth1", (7,), (N(1),), {}),
    ("kth-list", (7,), (N([0, 3, 6]),), {}),
    ("kth-negative", (6,), (N(-2),), {}),
    ("axis0", (5, 3), (N(2), N(0)), {}),
    ("axis-keyword", (3, 5), (N(2),), {"axis": 1}),
    ("axis-none", (3, 4), (N(5),), {"axis": None}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=dtype_ids)
@pytest.mark.parametrize(("name", "shape", "extra", "kw"), PARTITION, ids=[c[0] for c in PARTITION])
def test_partition(name, shape, extra, kw, dtype):
    check(np.partition, (maker(dtype)(*shape), *extra), kw, dtype)


def test_partition_complex():
    z = maker(np.complex128)(6)
    check(np.partition, (z, N(2)), {}, np.complex128)


def test_partition_ties_each_get_one_output():
    x = np.array([3.0, 1.0, 3.0, 0.5, 3.0, 2.0])
    y, pb = rrule(np.partition, x, 3)
    ȳ = np.arange(1.0, 7.0)
    dx = pb(ȳ)[1]
    assert sorted(dx) == sorted(ȳ)  # a permutation of ȳ
    for i in range(6):
        assert y[list(ȳ).index(dx[i])] == x[i]  # each entry got the cotangent of its own value
    _, ẏ = frule((NoTangent(), np.arange(6.0), NoTangent()), np.partition, x, 3)
    np.testing.assert_allclose(np.sum(ȳ * ẏ), np.sum(dx * np.arange(6.0)))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("shape", [(5,), (2, 4)])
def test_sort_complex(shape, dtype):
    x = maker(dtype)(*shape)
    test_rrule(
        np.sort_complex, x, **F64 if dtype is not np.float32 else {"rtol": 1e-3, "atol": 1e-4}
    )
    test_frule(
        np.sort_complex, x, **F64 if dtype is not np.float32 else {"rtol": 1e-3, "atol": 1e-4}
    )


def test_sort_complex_real_input_gets_a_real_cotangent():
    x = np.array([2.0, -1.0, 0.5], np.float32)
    y, pb = rrule(np.sort_complex, x)
    assert y.dtype == np.complex128
    dx = pb(np.array([1 + 1j, 2 + 2j, 3 + 3j]))[1]
    assert dx.dtype == np.float32
    np.testing.assert_array_equal(dx, [3.0, 1.0, 2.0])


# --- math.frexp, math.modf, math.remainder ----------------------------------------------


@pytest.mark.parametrize("x", [3.0, 0.3, -5.5, 1.5e-3, 2.0**40 + 0.5])
def test_math_frexp(x):
    test_rrule(math.frexp, x, **F64)
    test_frule(math.frexp, x, **F64)
    m, e = math.frexp(x)
    _, pb = rrule(math.frexp, x)
    assert pb((1.0, NoTangent())) == (NoTangent(), math.ldexp(1.0, -e))
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent())
    _, ṫ = frule((NoTangent(), 1.0), math.frexp, x)
    assert isinstance(ṫ, Tangent) and ṫ[1] is NoTangent()


@pytest.mark.parametrize("x", [3.25, -2.75, 0.4])
def test_math_modf(x):
    test_rrule(math.modf, x, **F64)
    test_frule(math.modf, x, **F64)
    _, pb = rrule(math.modf, x)
    assert pb((ZeroTangent(), 1.0)) == (NoTangent(), ZeroTangent())  # the integral part
    assert pb(Tangent[tuple](2.0, 7.0)) == (NoTangent(), 2.0)


@pytest.mark.parametrize(("x", "y"), [(5.3, 2.0), (-5.3, 2.0), (7.9, -3.1), (0.4, 1.5), (5.6, 1.3)])
def test_math_remainder(x, y):
    test_rrule(math.remainder, x, y, **F64)
    test_frule(math.remainder, x, y, **F64)
    _, pb = rrule(math.remainder, x, y)
    n = round(x / y)
    assert pb(1.0) == (NoTangent(), 1.0, -float(n))


def test_math_remainder_integer_divisor_is_a_count():
    test_rrule(math.remainder, 7.5, primal_and_tangent(2, NoTangent()), **F64)
    assert rrule(math.remainder, 7.5, 2)[1](1.0)[2] is NoTangent()


def test_math_frexp_modf_of_integers_get_float_cotangents():
    assert rrule(math.frexp, 6)[1]((1.0, NoTangent()))[1] == 0.125
    assert rrule(math.modf, 6)[1]((1.0, 0.0))[1] == 1.0
