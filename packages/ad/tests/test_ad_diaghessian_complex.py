"""``ad.diaghessian`` of a real loss of complex arguments.

It cast each complex column to float (a ``ComplexWarning``) and so kept only
``∂²f/∂re²``. It now follows ``hessian``'s convention for a complex number: an
entry is the derivative along the real direction of the gradient's entry
``∂f/∂re + i·∂f/∂im``, i.e. ``H[re,re] + i·H[im,re]`` on the diagonal, checked
against central differences of ``ad.gradient`` in real coordinates and values
derived by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ad


def _real_hessian(f, z, h=1e-5):
    """The real 2n x 2n Hessian of ``f`` in coordinates (re, im), by central
    differences of ``ad.gradient`` (whose complex entries are ∂/∂re + i ∂/∂im)."""
    z = np.asarray(z, complex)
    n = z.size

    def g(v):
        c = np.asarray(ad.gradient(f, (v[:n] + 1j * v[n:]).reshape(z.shape))[0]).reshape(-1)
        return np.concatenate([c.real, c.imag])

    v0 = np.concatenate([z.real.reshape(-1), z.imag.reshape(-1)])
    cols = [(g(v0 + h * e) - g(v0 - h * e)) / (2 * h) for e in np.eye(2 * n)]
    return np.array(cols).T


def _expected(f, z):
    H = _real_hessian(f, z)
    n = np.size(z)
    return (np.diag(H[:n, :n]) + 1j * np.diag(H[n:, :n])).reshape(np.shape(z))


def abs_poly(z):
    return np.sum(np.abs(z**2 + 1j * z) ** 2)


def mixed(z):
    return np.sum(np.real(z) ** 2 * np.imag(z) + np.abs(z) ** 2 * np.real(z))


@pytest.mark.parametrize("f", [abs_poly, mixed])
@pytest.mark.parametrize(
    "z",
    [
        np.array([0.3 + 0.5j, -0.7 + 0.2j]),
        np.array([[0.1 - 0.4j, 1.2 + 0.3j], [-0.5 + 0.9j, 0.8 - 0.6j]]),
        np.array([0.6 + 0.2j, -0.3 - 0.8j], np.complex64),
    ],
)
def test_complex_arrays_keep_the_imaginary_part(f, z):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning any more
        (d,) = ad.diaghessian(f, z)
    assert d.shape == z.shape and np.iscomplexobj(d)
    tol = 1e-3 if z.dtype == np.complex64 else 1e-6
    np.testing.assert_allclose(d, _expected(f, z.astype(complex)), rtol=tol, atol=tol)


def test_hand_derived():
    """f = Σ re(z)² im(z) + |z|² re(z): per entry with z = a + ib,
    ∂²f/∂a² = 2b + 6a and ∂²f/∂a∂b = 2a + 2b."""
    z = np.array([0.3 + 0.5j, -0.7 + 0.2j, 1.1 - 0.4j])
    a, b = z.real, z.imag
    (d,) = ad.diaghessian(mixed, z)
    np.testing.assert_allclose(d, (2 * b + 6 * a) + 1j * (2 * a + 2 * b), rtol=1e-12)


def test_same_as_the_complex_scalar_case_and_hessian():
    """Each entry equals ``hessian`` (and ``diaghessian``) of the same loss of that
    one complex number, the others held fixed; a list of complex numbers too."""
    z = np.array([0.3 + 0.5j, -0.7 + 0.2j])
    (d,) = ad.diaghessian(abs_poly, z)
    for k in range(z.size):

        def one(w, k=k):
            v = z.astype(complex)
            v = np.where(np.arange(z.size) == k, w, v)
            return abs_poly(v)

        assert np.isclose(d[k], ad.hessian(one, complex(z[k])))
        assert np.isclose(d[k], ad.diaghessian(one, complex(z[k]))[0])
        assert np.isclose(d[k], ad.hvp(abs_poly, (z,), (np.eye(2)[k],))[0][k])
    (dl,) = ad.diaghessian(lambda l: abs_poly(np.array(l)), list(z))
    np.testing.assert_allclose(dl, d)


def test_real_arrays_unchanged():
    x = np.array([0.5, -1.0, 2.0])
    (d,) = ad.diaghessian(lambda v: np.sum(v**3), x)
    assert d.dtype == np.float64
    np.testing.assert_allclose(d, 6 * x)
    (d32,) = ad.diaghessian(lambda v: np.sum(v**3), x.astype(np.float32))
    np.testing.assert_allclose(d32, 6 * x, rtol=1e-5)
