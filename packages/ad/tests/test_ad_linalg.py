"""ad.gradient through numpy.linalg, written plainly: the Gaussian log-density."""

import numpy as np
import pytest
from ad_testing import fd_hessian

import ad


def gaussian_logpdf(x, mu, sigma):
    n = x.shape[0]
    L = np.linalg.cholesky(sigma)
    z = np.linalg.solve(L, x - mu)
    return -0.5 * z @ z - np.sum(np.log(np.diag(L))) - 0.5 * n * np.log(2 * np.pi)


def closed_form(x, mu, sigma):
    """∂x = -Σ⁻¹(x-μ); ∂Σ = ½(Σ⁻¹ r rᵀ Σ⁻¹ - Σ⁻¹) for symmetric perturbations."""
    inv = np.linalg.inv(sigma)
    r = x - mu
    a = inv @ r
    return -a, a, 0.5 * (np.outer(a, a) - inv)


def test_gaussian_log_density_matches_closed_form_and_finite_differences():
    rng = np.random.default_rng(3)
    n = 4
    A = rng.normal(size=(n, n))
    sigma = A @ A.T + n * np.eye(n)
    x, mu = rng.normal(size=n), rng.normal(size=n)
    gx, gmu, gs = ad.gradient(gaussian_logpdf, x, mu, sigma)
    ex, emu, es = closed_form(x, mu, sigma)
    np.testing.assert_allclose(gx, ex, rtol=1e-9)
    np.testing.assert_allclose(gmu, emu, rtol=1e-9)
    # Only the symmetric part is determined (cholesky reads one triangle).
    np.testing.assert_allclose((gs + gs.T) / 2, es, rtol=1e-8, atol=1e-12)
    # A symmetric finite difference along a random symmetric direction.
    D = rng.normal(size=(n, n))
    D = D + D.T
    h = 1e-6
    fd = (gaussian_logpdf(x, mu, sigma + h * D) - gaussian_logpdf(x, mu, sigma - h * D)) / (2 * h)
    assert abs(np.sum(gs * D) - fd) < 1e-6 * max(1.0, abs(fd))


# --- second order through a factorization's unpacked results ---------------------------


def unpacked_slogdet(x):
    sign, logdet = np.linalg.slogdet(x)
    return sign * logdet**2


def slogdet_field(x):
    res = np.linalg.slogdet(x)
    return res.logabsdet * np.sum(x)


def unpacked_qr(x):
    q, r = np.linalg.qr(x)
    return np.sum(r * r) + np.sum(q[0] * x[1])


@pytest.mark.parametrize("hessian", [ad.hessian, ad.hessian_reverse], ids=lambda h: h.__name__)
@pytest.mark.parametrize(
    "f", [unpacked_slogdet, slogdet_field, unpacked_qr], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("n", [2, 3])
def test_hessian_through_unpacked_factorizations(f, hessian, n):
    x = np.eye(n) * 2.0 + np.arange(n * n).reshape(n, n) / 10.0
    np.testing.assert_allclose(hessian(f, x), fd_hessian(f, x), rtol=1e-5, atol=1e-5)
    diag = ad.diaghessian(f, x)[0]
    np.testing.assert_allclose(diag.reshape(-1), np.diag(fd_hessian(f, x)), rtol=1e-5, atol=1e-5)


# --- eigh and eigvalsh read one triangle of a non-symmetric input -----------------------
#
# numpy's eigh reads the triangle UPLO names (scipy's: lower) and the real part of the
# diagonal; the other entries get derivative 0 (they did not: the rules differentiated
# (a + aᴴ)/2, a nonzero derivative along the ignored triangle).

C = np.array([1.0, -2.0, 0.5, 3.0])


def eigh_values_loss(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * C[: w.shape[-1]]) + np.sum(np.abs(v[..., 0, :]) ** 2 * w)


def eigh_upper_loss(a):
    w, v = np.linalg.eigh(a, "U")
    return np.sum(w * w) + np.sum(np.abs(v[..., -1, :]) ** 2 * C[: w.shape[-1]])


def eigvalsh_keyword_loss(a):
    w = np.linalg.eigvalsh(a, UPLO="U")
    return np.sum(w * C[: w.shape[-1]]) + np.prod(w)


def scipy_eigh_loss(a):
    import scipy.linalg as sl

    w = sl.eigh(a, lower=False, eigvals_only=True)
    return np.sum(w**3) + np.sum(sl.eigvalsh(a) * C[: w.shape[-1]])


def _nonsymmetric(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    return (a + 3 * np.diag(np.arange(shape[-1]))).astype(dtype)


def _fd_gradient(f, a, h=1e-6):
    """Central differences of a real f in each real (and imaginary) part of a."""
    g = np.zeros(a.shape, dtype=a.dtype)
    for k in np.ndindex(a.shape):
        for unit in (1.0, 1j) if a.dtype.kind == "c" else (1.0,):
            e = np.zeros_like(a)
            e[k] = unit * h
            g[k] += unit * (f(a + e) - f(a - e)) / (2 * h)
    return g


LOSSES = [eigh_values_loss, eigh_upper_loss, eigvalsh_keyword_loss, scipy_eigh_loss]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(2, 2), (4, 4), (2, 3, 3)])
@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_eigh_of_a_nonsymmetric_input_matches_finite_differences(f, shape, dtype):
    if f is scipy_eigh_loss:
        pytest.importorskip("scipy")
    a = _nonsymmetric(shape, dtype, seed=sum(shape))
    expected = _fd_gradient(f, a)
    (g,) = ad.gradient(f, a)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)
    d = _nonsymmetric(shape, dtype, seed=99)
    _, ẏ = ad.jvp(f, (a,), (d,))
    np.testing.assert_allclose(ẏ, np.real(np.sum(np.conj(expected) * d)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigvalsh_gradient_by_hand_and_along_a_float(uplo):
    # Σ w² = ‖S‖²_F: 4·a on the read strict triangle, 2·a on the diagonal, 0 elsewhere.
    a = _nonsymmetric((3, 3), np.float64, seed=1)
    strict = np.tril(a, -1) if uplo == "L" else np.triu(a, 1)
    (g,) = ad.gradient(lambda x: np.sum(np.linalg.eigvalsh(x, uplo) ** 2), a)
    np.testing.assert_allclose(g, 4 * strict + 2 * np.diag(np.diag(a)), rtol=1e-12)

    # A float parameter moving only the ignored triangle: derivative exactly 0; moving
    # the read one: d/dt Σ w(a + t b)² = 2 ⟨S, Ṡ⟩.
    ignored = np.triu(np.ones((3, 3)), 1) if uplo == "L" else np.tril(np.ones((3, 3)), -1)

    def along(t, b):
        return np.sum(np.linalg.eigvalsh(a + t * b, UPLO=uplo) ** 2)

    assert ad.gradient(along, 0.5, ignored)[0] == 0.0
    assert ad.jvp(lambda t: along(t, ignored), (0.5,), (1.0,))[1] == 0.0
    read = ignored.T
    t = 0.5
    s = a + t * read
    s = (np.tril(s) + np.tril(s, -1).T) if uplo == "L" else (np.triu(s) + np.triu(s, 1).T)
    expected = 2 * np.sum(s * (read + read.T))
    np.testing.assert_allclose(ad.gradient(along, t, read)[0], expected, rtol=1e-10)
    np.testing.assert_allclose(ad.jvp(lambda t: along(t, read), (t,), (1.0,))[1], expected)


def test_eigh_hessian_of_a_nonsymmetric_input():
    a = _nonsymmetric((3, 3), np.float64, seed=5)
    for f in (eigh_values_loss, eigvalsh_keyword_loss):
        np.testing.assert_allclose(ad.hessian(f, a), fd_hessian(f, a), rtol=1e-5, atol=1e-5)


# --- cholesky, svd/pinv(hermitian=True), scipy's solve/inv(assume_a) read one triangle -----
#
# The same fault as eigh's: the rules differentiated (a + aᴴ)/2 where numpy/scipy read
# one triangle (and the real diagonal); on a non-symmetric input the derivative along
# the ignored entries is 0 and along the read ones twice the symmetric gradient.


def _pd_nonsymmetric(shape, dtype, seed):
    """Positive definite from either triangle, not Hermitian (an imaginary diagonal too)."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    x = rng.normal(size=shape) + (1j * rng.normal(size=shape) if np.dtype(dtype).kind == "c" else 0)
    junk = 0.2 * rng.normal(size=shape) * (1 - np.eye(n))
    imag = 0.5j * np.eye(n) if np.dtype(dtype).kind == "c" else 0
    return (x @ np.conj(np.swapaxes(x, -1, -2)) / n + np.eye(n) + junk + imag).astype(dtype)


def cholesky_loss(a):
    lo, up = np.linalg.cholesky(a), np.linalg.cholesky(a, upper=True)
    return np.sum(np.abs(lo) ** 2 * np.arange(lo.shape[-1])) + np.sum(np.real(up) ** 3)


def hermitian_svd_pinv_loss(a):
    s = np.linalg.svd(a, compute_uv=False, hermitian=True)
    return np.sum(s * C[: s.shape[-1]]) + np.sum(np.abs(np.linalg.pinv(a, hermitian=True)) ** 2)


def scipy_cholesky_loss(a):
    import scipy.linalg as sl

    u = sl.cholesky(a)
    c, low = sl.cho_factor(a, lower=True)
    x = sl.cho_solve((c, low), np.ones(a.shape[-1]))
    return np.sum(np.abs(u) ** 2 * C[: u.shape[-1]]) + np.sum(np.real(x) ** 2)


def scipy_solve_inv_loss(a):
    import scipy.linalg as sl

    b = np.arange(1.0, a.shape[-1] + 1.0)
    x = sl.solve(a, b, assume_a="pos") + sl.solve(a, b, True, assume_a="sym")
    y = sl.inv(a, assume_a="her", lower=True)
    return np.sum(np.abs(x) ** 2) + np.sum(np.real(y) * C[: a.shape[-1]])


ONE_TRIANGLE = [cholesky_loss, hermitian_svd_pinv_loss, scipy_cholesky_loss, scipy_solve_inv_loss]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(2, 2), (4, 4)])
@pytest.mark.parametrize("f", ONE_TRIANGLE, ids=lambda f: f.__name__)
def test_one_triangle_functions_of_a_nonsymmetric_input_match_differences(f, shape, dtype):
    if f.__name__.startswith("scipy"):
        pytest.importorskip("scipy")
    a = _pd_nonsymmetric(shape, dtype, seed=sum(shape))
    expected = _fd_gradient(f, a)
    (g,) = ad.gradient(f, a)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-7)
    d = _nonsymmetric(shape, dtype, seed=7)
    _, ẏ = ad.jvp(f, (a,), (d,))
    np.testing.assert_allclose(ẏ, np.real(np.sum(np.conj(expected) * d)), rtol=1e-6, atol=1e-7)


def test_cholesky_logdet_gradient_by_hand_and_along_a_float():
    # log det S = 2 Σ log Lᵢᵢ: 2 S⁻¹ below the diagonal, diag S⁻¹, 0 above (lower read).
    a = _pd_nonsymmetric((3, 3), np.float64, seed=3)
    s = np.tril(a) + np.tril(a, -1).T
    si = np.linalg.inv(s)

    def logdet(x):
        return 2 * np.sum(np.log(np.diagonal(np.linalg.cholesky(x))))

    (g,) = ad.gradient(logdet, a)
    np.testing.assert_allclose(g, 2 * np.tril(si, -1) + np.diag(np.diag(si)), rtol=1e-12)
    ignored = np.triu(np.ones((3, 3)), 1)

    def along(t):
        return logdet(a + t * ignored)

    assert ad.gradient(along, 0.5)[0] == 0.0
    assert ad.jvp(along, (0.5,), (1.0,))[1] == 0.0


def test_multivariate_normal_reads_the_lower_triangle_of_cov():
    st = pytest.importorskip("scipy.stats")
    cov = _pd_nonsymmetric((3, 3), np.float64, seed=4)
    x = np.array([0.3, -1.0, 0.5])

    def f(c):
        return st.multivariate_normal.logpdf(x, np.zeros(3), c) + st.multivariate_normal.entropy(
            None, c
        )

    expected = _fd_gradient(f, cov)
    np.testing.assert_allclose(ad.gradient(f, cov)[0], expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(np.triu(expected, 1), 0)
    np.testing.assert_allclose(ad.hessian(f, cov), fd_hessian(f, cov), rtol=1e-4, atol=1e-5)
