"""``scipy.integrate.odeint`` through ad (rules._scipy_integrate): the adjoint rule in
reverse mode and the sensitivity equations in forward mode, against central
differences and the closed-form solution of ``y' = -k y``."""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from rulescore import rrule

scipy_integrate = pytest.importorskip("scipy.integrate")
odeint = scipy_integrate.odeint

TOL = {"rtol": 1e-11, "atol": 1e-11}
T = np.linspace(0.0, 1.0, 4)
W = np.arange(1.0, 9.0).reshape(4, 2)


def oscillator(y, t, k, c):
    return np.array([y[1], -k * y[0] - c * y[1] + np.sin(t)])


def loss(y0, k, c, t):
    return np.sum(odeint(oscillator, y0, t, args=(k, c), **TOL) ** 2 * W)


POINT = (np.array([1.0, 0.2]), 2.0, 0.3, T)


def _close(got, want, rtol=1e-6, atol=1e-6):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=float), w, rtol=rtol, atol=atol)


def test_gradient_matches_differences():
    _close(ad.gradient(loss, *POINT), fd_gradient(loss, *POINT))


def test_jvp_matches_differences():
    fd = fd_gradient(loss, *POINT)
    v = (np.array([0.3, -0.2]), 0.5, -0.4, np.array([0.05, 0.1, 0.2, -0.1]))
    want = sum(np.sum(np.asarray(a) * b) for a, b in zip(fd, v))
    np.testing.assert_allclose(ad.jvp(loss, POINT, v)[1], want, rtol=1e-6)


def decay(y, t, k):
    return -k * y


def test_decay_by_hand_both_modes():
    # y(t) = y0 e^{-kt}: ∂y/∂y0 = e^{-kt}, ∂y/∂k = -t y, ∂y(t_i)/∂t_i = -k y (i >= 1),
    # and moving t_0 shifts the whole curve: ∂y(t_i)/∂t_0 = k y.
    y0, k = 1.5, 0.7
    t = np.array([0.0, 0.5, 2.0])
    yt = y0 * np.exp(-k * t)
    ȳ = np.array([0.0, 1.0, 2.0])

    def f(y0, k, t):
        return np.sum(odeint(decay, y0, t, args=(k,), **TOL)[:, 0] * ȳ)

    gy0, gk, gt = ad.gradient(f, y0, k, t)
    np.testing.assert_allclose(gy0, np.sum(ȳ * np.exp(-k * t)), rtol=1e-8)
    np.testing.assert_allclose(gk, np.sum(ȳ * -t * yt), rtol=1e-8)
    want_t = ȳ * -k * yt
    want_t[0] = k * np.sum(ȳ[1:] * yt[1:])
    np.testing.assert_allclose(gt, want_t, rtol=1e-8)
    _, d = ad.jvp(f, (y0, k, t), (0.0, 1.0, np.zeros(3)))
    np.testing.assert_allclose(d, np.sum(ȳ * -t * yt), rtol=1e-8)
    _, d = ad.jvp(f, (y0, k, t), (0.0, 0.0, np.array([1.0, 0.0, 0.0])))
    np.testing.assert_allclose(d, want_t[0], rtol=1e-7)


def test_tfirst_scalar_y0_and_list_output():
    def rhs(t, y, a):
        return [a * np.cos(t) * y[0]]  # a list, as users often write

    def f(y0, a):
        return odeint(rhs, y0, T, args=(a,), tfirst=True, **TOL)[-1, 0]

    _close(ad.gradient(f, 0.8, 0.4), fd_gradient(f, 0.8, 0.4))
    # y = y0 exp(a sin t)
    np.testing.assert_allclose(ad.gradient(f, 0.8, 0.4)[0], np.exp(0.4 * np.sin(1.0)), rtol=1e-8)
    fd = fd_gradient(f, 0.8, 0.4)
    np.testing.assert_allclose(ad.jvp(f, (0.8, 0.4), (1.0, -2.0))[1], fd[0] - 2 * fd[1], rtol=1e-6)


def test_integer_args():
    def rhs(y, t, k, n):
        return -k * y**n

    def f(k):
        return np.sum(odeint(rhs, np.array([1.0, 2.0]), T, args=(k, 2), **TOL))

    _close(ad.gradient(f, 0.6), fd_gradient(f, 0.6))
    np.testing.assert_allclose(ad.jvp(f, (0.6,), (1.0,))[1], fd_gradient(f, 0.6)[0], rtol=1e-6)


def test_full_output():
    def f(k):
        y, info = odeint(decay, 1.0, T, args=(k,), full_output=True, **TOL)
        assert "nst" in info
        return np.sum(y)

    np.testing.assert_allclose(ad.gradient(f, 0.6)[0], fd_gradient(f, 0.6)[0], rtol=1e-6)
    np.testing.assert_allclose(ad.jvp(f, (0.6,), (1.0,))[1], fd_gradient(f, 0.6)[0], rtol=1e-6)


def test_closures_in_both_modes():
    def f(k, y0):
        def rhs(y, t):
            return -k * y + 0.1 * np.cos(t)

        return np.sum(odeint(rhs, y0, T, **TOL) * W)

    point = (0.6, np.array([1.0, -0.5]))
    fd = fd_gradient(f, *point)
    _close(ad.gradient(f, *point), fd)
    v = (1.0, np.array([0.2, 0.3]))
    np.testing.assert_allclose(ad.jvp(f, point, v)[1], fd[0] + fd[1] @ v[1], rtol=1e-6)


def test_closure_over_constants_and_args_together():
    scale = np.array([1.0, 2.0])

    def rhs(y, t, k):
        return -k * scale * y

    def f(k, scale_):
        def rhs2(y, t, k):
            return -k * scale_ * y

        return np.sum(odeint(rhs, np.ones(2), T, args=(k,), **TOL)) + np.sum(
            odeint(rhs2, np.ones(2), T, args=(k,), **TOL)
        )

    fd = fd_gradient(f, 0.6, scale)
    _close(ad.gradient(f, 0.6, scale), fd)
    np.testing.assert_allclose(ad.jvp(f, (0.6, scale), (1.0, np.zeros(2)))[1], fd[0], rtol=1e-6)


def test_closure_over_an_object_says_how_to_fix():
    class Params:
        def __init__(self, k):
            self.k = k

    def f(k):
        p = Params(k)

        def rhs(y, t):
            return -p.k * y

        return np.sum(odeint(rhs, 1.0, T, **TOL))

    np.testing.assert_allclose(ad.jvp(f, (0.6,), (1.0,))[1], fd_gradient(f, 0.6)[0], rtol=1e-6)
    with pytest.raises(NotImplementedError, match=r"args=\(k,\)") as e:
        ad.gradient(f, 0.6)
    assert "rhs" in str(e.value) and "test_ad_odeint.py" in str(e.value)


def test_without_an_ad_the_rule_says_so():
    with pytest.raises(TypeError, match="only an AD supplies") as e:
        rrule(odeint, decay, 1.0, T, (0.5,))
    assert "decay" in str(e.value) and "ad.gradient" in str(e.value)
