"""The fast paths of the linalg rules, against the dense computations they replace.

* ``np.linalg.solve`` with a triangular ``a`` (of order >= TRIANGULAR_MIN_ORDER,
  unbatched, scipy installed) solves with LAPACK's triangular solver, forward and
  backward, but its cotangent for ``a`` stays the full dense ``-(a⁻ᴴ x̄) xᴴ``:
  solve differentiates every entry of ``a``, the zero triangle included.
* ``solve_as`` (the solve those rules call) has solve's rules, not the
  triangle-only ones of ``tri_solve``, so nested differentiation of the solve
  rules stays dense too.
* ``tri_solve`` calls ``?trtrs`` directly: the same numbers as
  ``scipy.linalg.solve_triangular`` for every layout and dtype.
* ``_cholesky_pullback`` in its leaner form equals the formula it replaced.
"""

import numpy as np
import pytest
from rules_testing import both, mH, random_maker

import rules  # noqa: F401  (registers the rules)
from rules import _linalg_factor, _linalg_util
from rules._linalg_util import TRIANGULAR_MIN_ORDER, solve_as, tri_solve, triangle
from rulescore import NoTangent, frule, rrule

rand = random_maker(11)
N = max(TRIANGULAR_MIN_ORDER, 40)
DTYPES = [np.float64, np.complex128]
needs_scipy = pytest.mark.skipif(
    _linalg_util._solve_triangular is None, reason="the triangular fast path needs scipy"
)


def triangular(n, lower, dtype=np.float64):
    """A well-conditioned lower (or upper) triangular matrix."""
    a = rand(n, n, dtype=dtype)
    a = np.tril(a) + 2 * np.sqrt(n) * np.eye(n)
    return a if lower else mH(a).copy()


def dense_solve_rule(a, b, x̄):
    """The dense rule (the code before the fast path): x, ā, b̄."""
    x = np.linalg.solve(a, b)
    vec = b.ndim == 1
    xm, x̄m = (x[..., None], x̄[..., None]) if vec else (x, x̄)
    b̄m = np.linalg.solve(mH(a), x̄m)
    return x, -(b̄m @ mH(xm)), (b̄m[..., 0] if vec else b̄m)


def rel_err(got, want):
    return np.max(np.abs(got - want)) / np.max(np.abs(want))


# ---------------------------------------------------------------------- triangle


@needs_scipy
def test_triangle_flags():
    lo, up = triangular(N, True), triangular(N, False)
    b = rand(N)
    assert triangle(lo, b) is True
    assert triangle(up, b) is False
    assert triangle(np.diag(np.diag(lo)), b) is True  # both: either solve is right
    assert triangle(lo + up, b) is None
    # One nonzero entry off the triangle, away from the corners, is enough.
    nearly = lo.copy()
    nearly[3, N - 5] = 1e-300
    assert triangle(nearly, b) is None
    nearly[3, N - 5] = np.nan
    assert triangle(nearly, b) is None
    assert triangle(lo.astype(np.complex128), b) is True
    assert triangle(np.asfortranarray(up), rand(N, 2)) is False


@needs_scipy
def test_triangle_declines_where_no_faster_path_applies():
    lo = triangular(N, True)
    small = triangular(TRIANGULAR_MIN_ORDER - 1, True)
    assert triangle(small, rand(small.shape[0])) is None
    assert triangle(np.stack([lo, lo]), rand(N)) is None  # a stack
    assert triangle(lo, rand(2, N, 1)) is None  # a stack of right-hand sides
    assert triangle(lo.astype(np.float16), rand(N)) is None
    assert triangle(lo.astype(np.int64), rand(N)) is None
    assert triangle(lo, np.ones(N, dtype=np.int64)) is None
    assert triangle(lo[:, :-1], rand(N)) is None  # not square: numpy's error
    assert triangle(lo, rand(N + 1)) is None  # mismatched: numpy's error


def test_triangle_without_scipy(monkeypatch):
    monkeypatch.setattr(_linalg_util, "_solve_triangular", None)
    lo = triangular(N, True)
    assert triangle(lo, rand(N)) is None
    x, pb = rrule(np.linalg.solve, lo, np.ones(N))
    np.testing.assert_allclose(lo @ x, np.ones(N), atol=1e-12)


# ---------------------------------------------------------------------- solve


@needs_scipy
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("bshape", [(N,), (N, 3)])
def test_solve_triangular_matches_the_dense_rule(lower, dtype, bshape):
    a, b = triangular(N, lower, dtype), rand(*bshape, dtype=dtype)
    assert triangle(a, b) is lower  # the fast path is taken
    x, pb = rrule(np.linalg.solve, a, b)
    x̄ = rand(*x.shape, dtype=dtype)
    _, ā, b̄ = pb(x̄)
    x_ref, ā_ref, b̄_ref = dense_solve_rule(a, b, x̄)
    assert rel_err(x, x_ref) < 1e-12
    assert rel_err(ā, ā_ref) < 1e-12
    assert rel_err(b̄, b̄_ref) < 1e-12
    # The cotangent is dense: the zero triangle of a has a derivative too.
    other = np.triu(ā, 1) if lower else np.tril(ā, -1)
    assert np.max(np.abs(other)) > 1e-3 * np.max(np.abs(ā))
    ȧ, ḃ = rand(N, N, dtype=dtype), rand(*bshape, dtype=dtype)
    _, ẋ = frule((NoTangent(), ȧ, ḃ), np.linalg.solve, a, b)
    ẋ_ref = np.linalg.solve(a, ḃ - (ȧ @ x_ref[:, None])[:, 0] if b.ndim == 1 else ḃ - ȧ @ x_ref)
    assert rel_err(ẋ, ẋ_ref) < 1e-12


@needs_scipy
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("bshape", [(N,), (N, 2)])
def test_solve_triangular_against_finite_differences(lower, dtype, bshape):
    # rulestest perturbs every entry of a (random dense directions), so a
    # cotangent that dropped the zero triangle would fail here.
    a, b = triangular(N, lower, dtype), rand(*bshape, dtype=dtype)
    assert triangle(a, b) is lower
    both(np.linalg.solve, a, b)


@needs_scipy
def test_solve_triangular_real_matrix_complex_rhs():
    a, b = triangular(N, True), rand(N, dtype=np.complex128)
    assert triangle(a, b) is True
    both(np.linalg.solve, a, b)
    x, pb = rrule(np.linalg.solve, a, b)
    assert pb(np.ones_like(x))[1].dtype == np.float64


@needs_scipy
@pytest.mark.parametrize("adtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("bdtype", [np.float32, np.float64, np.complex128])
def test_solve_triangular_dtypes_are_numpys(adtype, bdtype):
    a, b = triangular(N, False, adtype), rand(N, 2, dtype=bdtype)
    x, pb = rrule(np.linalg.solve, a, b)
    assert x.dtype == np.linalg.solve(a, b).dtype
    tol = 1e-4 if np.finfo(x.dtype).eps > 1e-10 else 1e-12
    assert rel_err(x, np.linalg.solve(a, b)) < tol
    _, ā, b̄ = pb(np.ones_like(x))
    assert ā.dtype == a.dtype and b̄.dtype == b.dtype


@needs_scipy
def test_solve_singular_triangular_raises():
    a = triangular(N, True)
    a[5, 5] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        rrule(np.linalg.solve, a, np.ones(N))


@needs_scipy
@pytest.mark.parametrize("lower", [True, False])
def test_solve_as_has_the_dense_rules_of_solve(lower):
    # A derivative through solve_as (nested differentiation of solve's rules)
    # must reach every entry of a, unlike tri_solve's triangle-only rules.
    a, b = triangular(N, lower), rand(N)
    x̄, ȧ, ḃ = rand(N), rand(N, N), rand(N)
    x, pb = rrule(solve_as, a, b, lower)
    cts = pb(x̄)
    assert len(cts) == 4 and isinstance(cts[3], NoTangent)
    x_ref, ā_ref, b̄_ref = dense_solve_rule(a, b, x̄)
    assert rel_err(x, x_ref) < 1e-12
    assert rel_err(cts[1], ā_ref) < 1e-12
    assert rel_err(cts[2], b̄_ref) < 1e-12
    _, ẋ = frule((NoTangent(), ȧ, ḃ, NoTangent()), solve_as, a, b, lower)
    assert rel_err(ẋ, np.linalg.solve(a, ḃ - ȧ @ x_ref)) < 1e-12


@needs_scipy
def test_gaussian_logpdf_through_the_fast_paths():
    # The benchmark's workload, chained by hand through the rules at a size
    # where solve takes the triangular path, against the closed form.
    x, mu = rand(N), rand(N)
    s = rand(N, N)
    sigma = s @ s.T / N + np.eye(N)
    L, chol_pb = rrule(np.linalg.cholesky, sigma)
    assert triangle(L, x) is True
    z, solve_pb = rrule(np.linalg.solve, L, x - mu)
    _, L̄, r̄ = solve_pb(-z)
    _, σ̄ = chol_pb(L̄ - np.diag(1 / np.diag(L)))
    si = np.linalg.inv(sigma)
    r = x - mu
    np.testing.assert_allclose(r̄, -si @ r, rtol=1e-10)
    g = 0.5 * (si @ np.outer(r, r) @ si - si)  # read back onto the lower triangle
    np.testing.assert_allclose(σ̄, 2 * np.tril(g, -1) + np.diag(np.diag(g)), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------- tri_solve


@needs_scipy
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "conj-transposed"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("bshape", [(7,), (7, 3)])
def test_tri_solve_is_scipys_solve_triangular(dtype, layout, lower, bshape):
    from scipy.linalg import solve_triangular

    a = triangular(7, lower, dtype)
    if layout == "F":
        a = np.asfortranarray(a)
    elif layout == "strided":
        wide = np.zeros((7, 14), dtype=dtype)
        wide[:, ::2] = a
        a = wide[:, ::2]
    elif layout == "conj-transposed":
        a = mH(triangular(7, not lower, dtype))
    b = rand(*bshape, dtype=np.float64)
    before = a.copy(), b.copy()
    x = tri_solve(a, b, lower=lower)
    want = solve_triangular(a, b, lower=lower, check_finite=False)
    assert x.dtype == want.dtype and x.shape == want.shape
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(a, before[0])  # inputs untouched
    np.testing.assert_array_equal(b, before[1])


@needs_scipy
def test_tri_solve_edge_cases():
    lo = triangular(5, True)
    a_int = np.tril(np.arange(1, 26).reshape(5, 5))
    np.testing.assert_allclose(a_int @ tri_solve(a_int, np.ones(5), True), np.ones(5))
    assert tri_solve(np.zeros((0, 0)), np.zeros(0), True).shape == (0,)
    singular = lo.copy()
    singular[2, 2] = 0.0
    for a in (singular, np.asfortranarray(singular)):
        with pytest.raises(np.linalg.LinAlgError):
            tri_solve(a, np.ones(5), True)
    with pytest.raises(ValueError):
        tri_solve(lo, np.ones(4), True)


# ---------------------------------------------------------------------- cholesky


def cholesky_pullback_reference(L, L̄):
    """The pullback as first written: P = herm(Φ(Lᴴ L̄)), ā = herm(L⁻ᴴ P L⁻¹)."""
    m = mH(L) @ L̄
    d = np.diagonal(m, axis1=-2, axis2=-1).real
    p = np.tril(m, -1) + 0.5 * d[..., :, None] * np.eye(L.shape[-1], dtype=d.dtype)
    p = 0.5 * (p + mH(p))
    x = np.linalg.solve(mH(L), p)
    ā = mH(np.linalg.solve(mH(L), mH(x)))
    return 0.5 * (ā + mH(ā))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("shape", [(5, 5), (N, N), (3, 6, 6), (2, 2, 9, 9)])
def test_cholesky_pullback_matches_the_reference(shape, dtype):
    s = rand(*shape, dtype=dtype)
    a = (s @ mH(s) / shape[-1] + np.eye(shape[-1])).astype(dtype)
    L = np.linalg.cholesky(a)
    L̄ = rand(*shape, dtype=dtype)
    got = _linalg_factor._cholesky_pullback(L, L̄, True)
    h = cholesky_pullback_reference(L, L̄)  # read back onto the lower triangle:
    want = 2 * np.tril(h, -1) + h * np.eye(shape[-1], dtype=h.real.dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert rel_err(got, want) < (1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(np.triu(got, 1), 0)  # exactly zero above the diagonal
    np.testing.assert_array_equal(np.diagonal(got, axis1=-2, axis2=-1).imag, 0)
