"""Rules for cholesky, qr, eigh and eigvalsh, and a Gaussian log-density
composed from the cholesky and solve pullbacks.

cholesky, eigh and eigvalsh are differentiated exactly as numpy computes them,
from one triangle (``upper``/``UPLO``) and the real diagonal (LINALG.md): tested
here through ``g(x) = f(herm(x))``, whose rules are the registered ones composed
by hand with herm's (self-adjoint) derivative, and on non-symmetric input
directly (eigh here, cholesky in test_rules_linalg_triangle.py).
"""

import sys

import numpy as np
import pytest
from rules_testing import both, mH, random_maker

import rules
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from rulestest import primal_and_tangent, test_frule

rand = random_maker(7)
DTYPES = [np.float64, np.complex128]
TOL = 1e-7


def herm(x):
    return 0.5 * (x + mH(x))


def spd(*shape, dtype=np.float64):
    x = rand(*shape, dtype=dtype)
    return x @ mH(x) + shape[-1] * np.eye(shape[-1])


def on_herm(f, post=None, pre=herm):
    """``g(x, **kw) = post(f(pre(x), **kw))`` with rules composed from f's.

    ``post`` (optional) maps f's output to a gauge-invariant value; it comes as
    ``(forward, pushforward, pullback)`` functions of (output, ...). ``pre`` is a
    linear self-adjoint map of the input (herm; None: the identity).
    """
    pre = pre or (lambda x: x)

    def g(x, **kw):
        y = f(pre(np.asarray(x)), **kw)
        return y if post is None else post[0](y)

    @rrule.register(g)
    def _(x, **kw):
        y, pb = rrule(f, pre(np.asarray(x)), **kw)

        def g_pullback(z̄):
            z̄ = unthunk(z̄)
            if isinstance(z̄, AbstractZero):
                return NoTangent(), z̄
            ȳ = z̄ if post is None else post[2](y, z̄)
            return NoTangent(), pre(pb(ȳ)[1])

        return (y if post is None else post[0](y)), g_pullback

    @frule.register(g)
    def _(ḟ, ẋ, x, **kw):
        y, ẏ = frule((ḟ, pre(np.asarray(ẋ))), f, pre(np.asarray(x)), **kw)
        return (y, ẏ) if post is None else (post[0](y), post[1](y, ẏ))

    g.__qualname__ = f"{f.__name__}∘pre"
    return g


chol_h = on_herm(np.linalg.cholesky)
eigvalsh_h = on_herm(np.linalg.eigvalsh)
# Real eigenvectors are unique up to sign, which finite differences follow.
eigh_h = on_herm(np.linalg.eigh)


# Complex eigenvectors carry an arbitrary phase per column: compare the
# gauge-invariant (eigenvalues, |V|², V diag(w) Vᴴ) instead.
def _eigh_post_f(y):
    w, v = y
    return w, np.abs(v) ** 2, (v * w[..., None, :]) @ mH(v)


def _eigh_post_fwd(y, ẏ):
    w, v = y
    ẇ, v̇ = ẏ.eigenvalues, ẏ.eigenvectors
    recon = (v̇ * w[..., None, :]) @ mH(v)
    return ẇ, 2 * np.real(np.conj(v) * v̇), recon + mH(recon) + (v * ẇ[..., None, :]) @ mH(v)


def _eigh_post_back(y, z̄):
    w, v = y
    w̄, p̄, r̄ = z̄
    r̄ = np.asarray(r̄)
    v̄ = 2 * np.asarray(p̄) * v + (r̄ + mH(r̄)) @ v * w[..., None, :]
    w̄ = np.asarray(w̄) + np.einsum("...ji,...jk,...ki->...i", v.conj(), r̄, v).real
    return (w̄, v̄)


eigh_invariant = on_herm(np.linalg.eigh, (_eigh_post_f, _eigh_post_fwd, _eigh_post_back))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3)])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, dtype, upper):
    both(chol_h, spd(*shape, dtype=dtype), fkwargs={"upper": upper})


def test_cholesky_cotangent_reads_one_triangle():
    # Zero on the triangle never read, real diagonal; its Hermitian part is the
    # gradient within Hermitian matrices (what chol_h's pullback returns).
    a = spd(3, 3, dtype=np.complex128)
    L̄ = rand(3, 3, dtype=np.complex128)
    for upper in (False, True):
        y, pb = rrule(np.linalg.cholesky, a, upper=upper)
        ā = pb(L̄)[1]
        np.testing.assert_array_equal(np.tril(ā, -1) if upper else np.triu(ā, 1), 0)
        np.testing.assert_array_equal(np.diagonal(ā).imag, 0)
        _, pb_h = rrule(chol_h, a, upper=upper)
        np.testing.assert_allclose(herm(ā), pb_h(L̄)[1], atol=1e-14)
    # Real primal, real cotangent, even for a complex output cotangent.
    _, pb = rrule(np.linalg.cholesky, spd(3, 3))
    assert pb(rand(3, 3, dtype=np.complex128))[1].dtype == np.float64


def test_cholesky_not_positive_definite():
    with pytest.raises(np.linalg.LinAlgError):
        rrule(np.linalg.cholesky, -np.eye(2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh(shape, dtype, uplo):
    both(eigvalsh_h, rand(*shape, dtype=dtype), fkwargs={"UPLO": uplo})


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_real(shape, uplo):
    both(eigh_h, rand(*shape), fkwargs={"UPLO": uplo})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_eigh_gauge_invariant(shape, dtype):
    both(eigh_invariant, rand(*shape, dtype=dtype))


@pytest.mark.parametrize(
    "ȳ",
    [
        lambda w, v: (w, ZeroTangent()),
        lambda w, v: Tangent[np.linalg._linalg.EighResult](eigenvalues=w),
        lambda w, v: Tangent[tuple](w, ZeroTangent()),
    ],
    ids=["tuple", "Tangent[EighResult]", "Tangent[tuple]"],
)
def test_eigh_values_only_cotangents(ȳ):
    # Only eigenvalues used: works even for degenerate eigenvalues, no warning.
    a = np.diag([1.0, 1.0, 2.0])
    res, pb = rrule(np.linalg.eigh, a)
    w̄ = np.array([1.0, 2.0, 3.0])
    ā = pb(ȳ(w̄, None))[1]
    np.testing.assert_allclose(ā, res.eigenvectors @ np.diag(w̄) @ res.eigenvectors.T)


def test_eigh_degenerate_eigenvectors_warn():
    a = np.diag([1.0, 1.0, 2.0])
    _, pb = rrule(np.linalg.eigh, a)
    with pytest.warns(rules._linalg_util.LinalgGradientWarning, match="equal eigenvalues"):
        ā = pb((np.zeros(3), np.ones((3, 3))))[1]
    assert np.all(np.isfinite(ā))


def test_eigh_bad_uplo():
    with pytest.raises(ValueError, match="UPLO"):
        rrule(np.linalg.eigh, np.eye(2), UPLO="X")


# eigh/eigvalsh read one triangle of a and the real part of its diagonal: on a
# non-symmetric (non-Hermitian) input the derivative along the other triangle
# (and the imaginary diagonal) is exactly zero, which finite differences check.
def nonsym(*shape, dtype=np.float64):
    """A non-symmetric matrix whose triangles' Hermitian completions have distinct
    eigenvalues (1, 2, ... on the diagonal)."""
    return (rand(*shape, dtype=dtype) + 3 * np.diag(np.arange(shape[-1]))).astype(dtype)


def uplo_kw(uplo):
    """``UPLO`` as a keyword or (``"pos"`` suffix) positionally: (args, fkwargs)."""
    return ((uplo[0],), {}) if uplo.endswith("pos") else ((), {"UPLO": uplo})


UPLOS = ["L", "U", "u", "Lpos", "Upos"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4)])
@pytest.mark.parametrize("uplo", UPLOS)
def test_eigvalsh_reads_one_triangle(shape, dtype, uplo):
    args, kw = uplo_kw(uplo)
    both(np.linalg.eigvalsh, nonsym(*shape, dtype=dtype), *args, fkwargs=kw)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("uplo", UPLOS)
def test_eigh_real_reads_one_triangle(shape, uplo):
    # numpy's driver keeps real eigenvector signs continuous: the vectors directly.
    args, kw = uplo_kw(uplo)
    both(np.linalg.eigh, nonsym(*shape), *args, fkwargs=kw)


eigh_invariant_raw = on_herm(np.linalg.eigh, (_eigh_post_f, _eigh_post_fwd, _eigh_post_back), None)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_gauge_invariant_reads_one_triangle(shape, dtype, uplo):
    both(eigh_invariant_raw, nonsym(*shape, dtype=dtype), fkwargs={"UPLO": uplo})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh_hand_derived(dtype, uplo):
    # Σ w² = ‖S‖²_F with S the Hermitian completion of one triangle: its gradient is
    # 4·a on that strict triangle, 2·Re a on the diagonal, 0 on the other triangle.
    # Σ w = tr S: the identity. det S = Π w (2x2: s00 s11 - |s10|²).
    a = nonsym(3, 3, dtype=dtype)
    tri = np.tril if uplo == "L" else np.triu
    k = -1 if uplo == "L" else 1
    w, pb = rrule(np.linalg.eigvalsh, a, UPLO=uplo)
    np.testing.assert_allclose(pb(2 * w)[1], 4 * tri(a, k) + 2 * np.diag(a.diagonal().real))
    np.testing.assert_allclose(pb(np.ones(3))[1], np.eye(3), atol=1e-14)
    b = a[:2, :2]
    w, pb = rrule(np.linalg.eigvalsh, b, UPLO=uplo)
    c = b[1, 0] if uplo == "L" else b[0, 1]
    d̄ = np.array([[b[1, 1].real, 0], [-2 * c, b[0, 0].real]])
    np.testing.assert_allclose(pb(w[::-1])[1], d̄ if uplo == "L" else d̄.T, atol=1e-14)
    other = np.triu(np.ones((3, 3)), 1) if uplo == "L" else np.tril(np.ones((3, 3)), -1)
    imag_diagonal = (1j * np.eye(3),) if dtype == np.complex128 else ()
    for ȧ in (other, *imag_diagonal):
        _, ẇ = frule((None, ȧ), np.linalg.eigvalsh, a, UPLO=uplo)
        np.testing.assert_allclose(ẇ, 0, atol=1e-14)


@pytest.mark.parametrize("f", [np.linalg.eigvalsh, np.linalg.eigh])
def test_eigh_float32_reads_one_triangle(f):
    a = nonsym(3, 3).astype(np.float32)
    test_frule(f, a, rtol=1e-2, atol=1e-2)
    y, pb = rrule(f, a)
    ȳ = np.ones_like(y) if f is np.linalg.eigvalsh else (np.ones(3), np.zeros((3, 3)))
    ā = pb(ȳ)[1]
    assert ā.dtype == np.float32
    np.testing.assert_array_equal(np.triu(ā, 1), 0)


# QR's R has a real diagonal (LAPACK), which fixes the gauge of complex Q: no wrapper needed.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4, 3), (2, 4), (2, 3, 5)])
def test_qr_reduced(shape, dtype):
    both(np.linalg.qr, rand(*shape, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 2), (2, 4)])
def test_qr_r_only(shape, dtype):
    both(np.linalg.qr, rand(*shape, dtype=dtype), primal_and_tangent("r", NoTangent()))


def test_qr_complete_wide_is_reduced():
    both(np.linalg.qr, rand(2, 3), fkwargs={"mode": "complete"})


@pytest.mark.parametrize("mode", ["complete", "raw"])
def test_qr_unsupported_modes(mode):
    with pytest.raises(NotImplementedError, match=rf"numpy\.linalg\.qr.*mode='{mode}'"):
        rrule(np.linalg.qr, rand(4, 2), mode=mode)


def test_qr_cotangent_with_zero_q():
    a = rand(4, 3)
    (_, r), pb = rrule(np.linalg.qr, a)
    ā = pb((ZeroTangent(), np.ones_like(r)))[1]
    _, pb_r = rrule(np.linalg.qr, a, mode="r")
    np.testing.assert_allclose(ā, pb_r(np.ones_like(r))[1])


def gaussian_logpdf(x, mu, sigma):
    n = x.shape[0]
    L = np.linalg.cholesky(sigma)
    z = np.linalg.solve(L, x - mu)
    return -0.5 * z @ z - np.sum(np.log(np.diag(L))) - 0.5 * n * np.log(2 * np.pi)


def gaussian_logpdf_grad(x, mu, sigma):
    """The gradient (∂x, ∂Σ) by chaining the rules' pullbacks by hand."""
    L, chol_pb = rrule(np.linalg.cholesky, sigma)
    r = x - mu
    z, solve_pb = rrule(np.linalg.solve, L, r)
    # d/dz (-z·z/2) = -z; d/dL of -Σ log L_ii is -diag(1/L_ii).
    _, L̄_solve, r̄ = solve_pb(-z)
    L̄ = L̄_solve - np.diag(1 / np.diag(L))
    _, σ̄ = chol_pb(L̄)
    return r̄, σ̄


def test_gaussian_logdensity_composition():
    n = 4
    x, mu, sigma = rand(n), rand(n), spd(n, n)
    x̄, σ̄ = gaussian_logpdf_grad(x, mu, sigma)
    # Closed form: ∂x = -Σ⁻¹(x-μ), ∂Σ = (Σ⁻¹ r rᵀ Σ⁻¹ - Σ⁻¹)/2 (symmetric), which
    # cholesky (reading the lower triangle) returns as 2·tril(∂Σ, -1) + diag(∂Σ).
    si = np.linalg.inv(sigma)
    r = x - mu
    np.testing.assert_allclose(x̄, -si @ r, rtol=1e-10)
    g = 0.5 * (si @ np.outer(r, r) @ si - si)
    np.testing.assert_allclose(σ̄, 2 * np.tril(g, -1) + np.diag(np.diag(g)), rtol=1e-9, atol=1e-12)
    # Finite differences along symmetric perturbations of Σ and any of x.
    h = 1e-6
    for _ in range(3):
        d = rand(n, n)
        d = d + d.T
        fd = (gaussian_logpdf(x, mu, sigma + h * d) - gaussian_logpdf(x, mu, sigma - h * d)) / (
            2 * h
        )
        np.testing.assert_allclose(np.sum(σ̄ * d), fd, rtol=1e-6)
        dx = rand(n)
        fd = (gaussian_logpdf(x + h * dx, mu, sigma) - gaussian_logpdf(x - h * dx, mu, sigma)) / (
            2 * h
        )
        np.testing.assert_allclose(x̄ @ dx, fd, rtol=1e-6)


@pytest.mark.parametrize("f", [chol_h, eigvalsh_h])
def test_float32(f):
    test_frule(f, spd(3, 3).astype(np.float32), rtol=1e-2, atol=1e-2)
    y, pb = rrule(f, spd(3, 3).astype(np.float32))
    assert pb(np.ones_like(y))[1].dtype == np.float32


@pytest.mark.parametrize("with_scipy", [True, False])
@pytest.mark.parametrize("lower", [True, False])
def test_triangular_solve_with_and_without_scipy(monkeypatch, with_scipy, lower):
    from rules._linalg_util import tri_solve

    if with_scipy:
        pytest.importorskip("scipy.linalg")
    else:
        monkeypatch.setitem(sys.modules, "scipy.linalg", None)  # import fails
    rng = np.random.default_rng(0)
    a = np.tril(rng.normal(size=(4, 4))) + 4 * np.eye(4)
    a = a if lower else a.T
    b = rng.normal(size=(4, 3))
    np.testing.assert_allclose(a @ tri_solve(a, b, lower=lower), b, atol=1e-12)
