"""Methods called on numpy scalars (``s.clip(0, 1)``, ``s.sum()``, ``s.reshape(())``),
differentiated in reverse mode, forward mode and to second order.

``v.sum()``, ``np.dot(v, w)`` and ``a[0]`` return numpy scalars, and users call
methods on them; each method runs its ``ndarray`` namesake's rule on the scalar as a
0-d array (``rules._numpy_scalar_methods``). Checked against central differences in
float64, with float32 arguments keeping float32 derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest

import ad

H = 1e-6


# --- programs: one numpy scalar argument ---------------------------------------------


def clipped(x):
    return x.clip(-0.5, 0.5) * x + (3.0 * x).clip(-1.0, 1.0) + x.round(1) * x


def reductions(x):
    y = x * x
    return y.sum() + x.mean() * x.prod() + x.max() * y.min() + y.var() + x.std() * 2.0


def shapes(x):
    a = x.reshape(()) * x.squeeze() + np.sum(x.reshape(1) * 2.0) + x.ravel()[0] * x
    b = x.flatten().sum() * x.copy() + x.transpose() * x.take(0) + x.repeat(3).sum() * x
    return a + b + x.cumsum()[0] * x.cumprod()[0] + x.view() * x.tolist()


def conjugates(x):
    return x.conj() * x.conjugate() + x.compress([True]).sum() * x


def looped(x):
    s = x
    for _ in range(3):
        s = (s * 1.5).clip(-2.0, 2.0) + s.mean() * x
    return s.sum()


PROGRAMS = [clipped, reductions, shapes, conjugates, looped]
POINTS = [0.3, -0.7]


def _fd(f, x):
    """Central differences, in float64 whatever the argument's precision."""
    x = float(x)
    return (float(f(np.float64(x + H))) - float(f(np.float64(x - H)))) / (2 * H)


def _tol(cls):
    return {"rtol": 2e-3, "atol": 1e-4} if cls is np.float32 else {"rtol": 1e-6, "atol": 1e-8}


@pytest.mark.parametrize("x0", POINTS)
@pytest.mark.parametrize("cls", [np.float64, np.float32], ids=lambda c: c.__name__)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_reverse_and_forward_match_differences(f, cls, x0):
    x = cls(x0)
    want = _fd(f, x0)
    (g,) = ad.gradient(f, x)
    assert type(g) is cls  # a float32 scalar's derivative stays float32
    np.testing.assert_allclose(float(g), want, **_tol(cls))
    y, ẏ = ad.jvp(f, (x,), (cls(1.0),))
    assert type(y) is type(f(x))
    np.testing.assert_allclose(float(ẏ), want, **_tol(cls))


@pytest.mark.parametrize("x0", POINTS)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_matches_differences_of_the_gradient(f, x0):
    x = np.float64(x0)

    def g(v):
        return float(ad.gradient(f, np.float64(v))[0])

    want = (g(x0 + 1e-4) - g(x0 - 1e-4)) / 2e-4
    np.testing.assert_allclose(float(ad.hessian(f, x)), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(ad.hessian_reverse(f, x)), want, rtol=1e-5, atol=1e-6)
    for cls in (np.float32, np.float64):  # both modes keep the scalar's type, in and out
        for hessian in (ad.hessian, ad.hessian_reverse):
            h = hessian(f, cls(x0))
            assert type(h) is cls, (hessian.__name__, type(h))
            np.testing.assert_allclose(float(h), want, **_tol2(cls))


def _tol2(cls):
    return {"rtol": 2e-3, "atol": 1e-3} if cls is np.float32 else {"rtol": 1e-5, "atol": 1e-6}


def test_hand_derived_values():
    """``x.clip(-0.5, 0.5) * x`` is ``x²`` inside the bounds and ``±0.5·x`` outside;
    ``x.sum() * x.prod()`` is ``x²``; its second derivative is 2."""

    def f(x):
        return x.clip(-0.5, 0.5) * x

    assert ad.gradient(f, np.float64(0.3))[0] == pytest.approx(0.6)
    assert ad.gradient(f, np.float64(2.0))[0] == pytest.approx(0.5)
    assert ad.jvp(f, (np.float32(-2.0),), (np.float32(1.0),))[1] == pytest.approx(-0.5)

    def g(x):
        return x.sum() * x.prod()

    assert ad.hessian(g, np.float64(0.4)) == pytest.approx(2.0)
    assert ad.hessian_reverse(g, np.float64(0.4)) == pytest.approx(2.0)


# --- scalars that arrays return --------------------------------------------------------


def from_arrays(v, w):
    s = v.sum()
    d = np.dot(v, w)
    return s.clip(-10.0, 10.0) * d.conjugate() + v[0].reshape(()) * w.max().mean()


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: d.__name__)
@pytest.mark.parametrize("n", [1, 3, 5])
def test_scalars_returned_by_arrays(n, dtype):
    rng = np.random.default_rng(n)
    v, w = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    tol = _tol(dtype)
    gv, gw = ad.gradient(from_arrays, v, w)
    assert gv.dtype == dtype and gw.dtype == dtype
    v64, w64 = v.astype(np.float64), w.astype(np.float64)
    for i, (x, got) in enumerate(((v64, gv), (w64, gw))):
        want = np.zeros(n)
        for k in range(n):
            e = np.zeros(n)
            e[k] = H
            args_p, args_m = [v64, w64], [v64, w64]
            args_p[i], args_m[i] = x + e, x - e
            want[k] = (from_arrays(*args_p) - from_arrays(*args_m)) / (2 * H)
        np.testing.assert_allclose(got, want, **tol)
    tv, tw = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    _, ẏ = ad.jvp(from_arrays, (v, w), (tv, tw))
    np.testing.assert_allclose(float(ẏ), float(gv @ tv + gw @ tw), **tol)


# --- complex scalars -------------------------------------------------------------------


def complex_norm(z):
    return np.real(z.conjugate() * z.sum()) + np.real(z.conj().reshape(()) * 1j) * 0.5


@pytest.mark.parametrize("cls", [np.complex128, np.complex64], ids=lambda c: c.__name__)
def test_complex_scalar_methods(cls):
    """``|z|² + Re(i·conj(z))/2``: the gradient (∂re + i∂im) is ``2z + i/2``... of the
    second term's ``Re(i(a - ib))/2 = b/2``, so ``2z + 0.5i``."""
    z = cls(0.6 - 0.8j)
    (g,) = ad.gradient(complex_norm, z)
    assert type(g) is cls
    np.testing.assert_allclose(g, 2 * complex(z) + 0.5j, rtol=1e-5)
    _, ẏ = ad.jvp(complex_norm, (z,), (cls(1j),))
    np.testing.assert_allclose(float(ẏ), (np.conj(2 * complex(z) + 0.5j) * 1j).real, rtol=1e-5)


# --- what numpy refuses on a scalar ----------------------------------------------------


def traced(x):
    return x.trace() * x


def test_a_method_numpy_refuses_raises_numpys_error():
    with pytest.raises(ValueError, match="diag requires an array of at least two dimensions"):
        traced(np.float64(0.5))
    with pytest.raises(ValueError, match="diag requires an array of at least two dimensions"):
        ad.gradient(traced, np.float64(0.5))
    with pytest.raises(ValueError, match="diag requires an array of at least two dimensions"):
        ad.jvp(traced, (np.float64(0.5),), (1.0,))
