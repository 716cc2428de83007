"""ad.gradient through numpy.linalg, written plainly: the Gaussian log-density."""

import numpy as np

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
