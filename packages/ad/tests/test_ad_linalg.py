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
