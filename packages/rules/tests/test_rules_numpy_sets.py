"""Tests of the rules for numpy's set operations (``rules._numpy_sets``).

Without ties (distinct values; ``intersect1d`` aside) the functions are gathers and
go through ``test_rrule``/``test_frule`` (finite differences). At ties (duplicates,
and every value of ``intersect1d``) they are checked along directions that keep the
ties, for the equal split, and for the pullback being the pushforward's adjoint.
"""

from __future__ import annotations

import numpy as np
import pytest
from rules_testing import DTYPES, N, check

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule

REAL = [np.float64, np.float32]


def distinct(n, dtype, seed=0, offset=0.0):
    """``n`` values at least 0.3 apart (real parts), shuffled; complex: random imaginary."""
    rng = np.random.default_rng(seed)
    x = offset + 0.3 * rng.permutation(n) + 0.05 * rng.uniform(size=n)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-1, 1, n)
    return x.astype(dtype)


def pair(dtype):
    """Two arrays whose values interleave, none shared."""
    a = distinct(7, dtype, 1).reshape(7)
    b = distinct(5, dtype, 2, offset=0.13).reshape(5)
    return a, b


def ids(cases):
    return [c[0] for c in cases]


TWO = [
    ("union1d", np.union1d, {}),
    ("setxor1d", np.setxor1d, {}),
    ("setdiff1d", np.setdiff1d, {}),
    ("setdiff1d-assume-unique", np.setdiff1d, {"assume_unique": True}),
    ("setxor1d-assume-unique", np.setxor1d, {"assume_unique": True}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "f", "kw"), TWO, ids=ids(TWO))
def test_two_array_functions_without_ties(name, f, kw, dtype):
    a, b = pair(dtype)
    check(f, (a.reshape(7), b), kw, dtype)
    check(f, (a[:6].reshape(2, 3), b), kw, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_positional_flags_get_no_tangent(dtype):
    a, b = pair(dtype)
    check(np.setdiff1d, (a, b, N(True)), {}, dtype)
    check(np.setxor1d, (a, b, N(False)), {}, dtype)


ONE = [np.unique_values, np.unique_counts, np.unique_inverse, np.unique_all]


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("f", ONE, ids=lambda f: f.__name__)
def test_unique_family_without_ties(f, dtype):
    x = distinct(6, dtype)
    check(f, (x,), {}, dtype)
    check(f, (x.reshape(2, 3),), {}, dtype)


def smooth(x):
    """A direction that moves equal values together (ties stay ties)."""
    return np.sin(3 * x) + 0.5 * np.cos(x) ** 2 + 0.25


def consistent_at_ties(f, args, **kw):
    """Along a tie-keeping direction the frule matches central differences; the
    pullback is the frule's adjoint in random directions; returns the cotangents."""
    y, pb = rrule(f, *args, **kw)
    values = y[0] if isinstance(y, tuple) else y

    def vals(out):
        return np.asarray(out[0] if isinstance(out, tuple) else out)

    ẋs = tuple(
        smooth(np.real(a)) + (1j * smooth(np.imag(a)) if np.iscomplexobj(a) else 0) for a in args
    )
    _, ẏ = frule((NoTangent(), *ẋs), f, *args, **kw)
    u̇ = ẏ[0] if isinstance(ẏ, Tangent) else ẏ
    single = np.asarray(values).dtype in (np.float32, np.complex64)
    h, tol = (1e-2, 1e-3) if single else (1e-6, 1e-6)
    plus = f(*(a + h * d for a, d in zip(args, ẋs)), **kw)
    minus = f(*(a - h * d for a, d in zip(args, ẋs)), **kw)
    np.testing.assert_allclose(u̇, (vals(plus) - vals(minus)) / (2 * h), rtol=tol, atol=tol)
    rng = np.random.default_rng(3)
    ū = rng.standard_normal(np.shape(values))
    ȳ = Tangent[tuple](ū, *(NoTangent(),) * (len(y) - 1)) if isinstance(y, tuple) else ū
    dxs = pb(ȳ)[1:]
    ds = tuple(rng.standard_normal(np.shape(a)) for a in args)
    _, ẏd = frule((NoTangent(), *ds), f, *args, **kw)
    u̇d = ẏd[0] if isinstance(ẏd, Tangent) else ẏd
    lhs = np.sum(ū * u̇d)
    rhs = sum(np.sum(dx * d) for dx, d in zip(dxs, ds) if not isinstance(dx, ZeroTangent))
    np.testing.assert_allclose(lhs, rhs, rtol=tol * 1e-4)
    return dxs


def test_intersect1d_shares_between_both_arrays():
    a = np.array([3.0, 1.0, 2.0, 3.0, 7.0])
    b = np.array([[2.0, 3.0], [5.0, 2.0]])
    da, db = consistent_at_ties(np.intersect1d, (a, b))
    y, pb = rrule(np.intersect1d, a, b)
    np.testing.assert_array_equal(y, [2.0, 3.0])
    ū = np.array([1.0, 10.0])
    # 2.0: one entry in a, two in b; 3.0: two in a, one in b
    expected_a = np.array([10 / 3, 0, 1 / 3, 10 / 3, 0])
    expected_b = np.array([[1 / 3, 10 / 3], [0, 1 / 3]])
    da, db = pb(ū)[1:]
    np.testing.assert_allclose(da, expected_a)
    np.testing.assert_allclose(db, expected_b)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_intersect1d_return_indices(dtype):
    a, b = pair(dtype)
    b = np.concatenate([b, a[[4, 1]]])
    y, pb = rrule(np.intersect1d, a, b, return_indices=True)
    assert len(y) == 3 and y[0].size == 2
    dxs = consistent_at_ties(np.intersect1d, (a, b), return_indices=True)
    _, ẏ = frule((NoTangent(), a, b), np.intersect1d, a, b, return_indices=True)
    assert ẏ[1] is NoTangent() and ẏ[2] is NoTangent()
    # each common value's cotangent is split between its entry in a and in b
    ū = np.arange(1.0, 3.0)
    da, db = pb(Tangent[tuple](ū, NoTangent(), NoTangent()))[1:]
    np.testing.assert_allclose(da[y[1]], ū / 2, rtol=1e-6)
    np.testing.assert_allclose(db[y[2]], ū / 2, rtol=1e-6)
    assert np.count_nonzero(da) == 2 and np.count_nonzero(db) == 2
    assert len(dxs) == 2


@pytest.mark.parametrize(
    "f", [np.union1d, np.setxor1d, np.setdiff1d, np.intersect1d], ids=lambda f: f.__name__
)
def test_duplicates_share_the_cotangent(f):
    a = np.array([2.0, 1.0, 2.0, 5.0, 2.0, 1.0])
    b = np.array([1.0, 4.0, 4.0, 6.0])
    consistent_at_ties(f, (a, b))
    y, pb = rrule(f, a, b)
    ū = np.random.default_rng(0).standard_normal(y.shape)
    da, db = pb(ū)[1:]
    counts = {v: np.sum(a == v) + (0 if f is np.setdiff1d else np.sum(b == v)) for v in y}
    for k, v in enumerate(y):
        np.testing.assert_allclose(da[a == v], ū[k] / counts[v])
        if f is not np.setdiff1d:
            np.testing.assert_allclose(db[b == v], ū[k] / counts[v])
    if f is np.setdiff1d:
        assert db is ZeroTangent()
    values = set(y.tolist())
    assert np.all(da[[v not in values for v in a]] == 0)


@pytest.mark.parametrize("f", ONE, ids=lambda f: f.__name__)
def test_unique_family_at_ties_and_complex(f):
    x = np.array([[2.0, 1.0, 2.0], [5.0, 2.0, 1.0]])
    consistent_at_ties(f, (x,))
    z = x + 1j * np.array([[0.5, 0.25, 0.5], [0.0, 0.5, 0.25]])
    consistent_at_ties(f, (z,))  # complex values come out in hash order: no differences


@pytest.mark.parametrize("f", ONE[1:], ids=lambda f: f.__name__)
def test_unique_family_integers_get_no_tangent(f):
    x = np.array([2.0, 1.0, 2.0])
    out, ṫ = frule((NoTangent(), np.ones(3)), f, x)
    assert isinstance(ṫ, Tangent)
    assert all(ṫ[i] is NoTangent() for i in range(1, len(out)))
    np.testing.assert_array_equal(ṫ.values, [1.0, 1.0])
    _, pb = rrule(f, x)
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent())


def test_nan_values_go_to_nan_entries():
    a = np.array([np.nan, 1.0, np.nan])
    y, pb = rrule(np.unique_values, a)
    assert y.size == 3  # unique_values keeps every NaN
    dx = pb(np.array([1.0, 2.0, 4.0]))[1]
    assert dx[1] == 1.0 and np.isfinite(dx).all()
    y, pb = rrule(np.union1d, a, np.array([np.nan]))
    dxs = pb(np.ones(y.shape))[1:]
    np.testing.assert_allclose(dxs[0], [1 / 3, 1, 1 / 3])


def test_float32_stays_float32():
    a, b = pair(np.float32)
    _, pb = rrule(np.union1d, a, b)
    da, db = pb(np.ones(a.size + b.size, np.float32))[1:]
    assert da.dtype == db.dtype == np.float32
    _, ẏ = frule((NoTangent(), a, b), np.union1d, a, b)
    assert ẏ.dtype == np.float32
