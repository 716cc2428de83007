"""``scipy.integrate.solve_ivp`` through ad (rules._scipy_integrate_ivp): the adjoint
rule in reverse mode and the sensitivity equations in forward mode, reading the
``OdeResult``'s ``y`` (and ``t``), against central differences and the closed-form
solution of ``y' = a y``."""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad

scipy_integrate = pytest.importorskip("scipy.integrate")
solve_ivp = scipy_integrate.solve_ivp

TOL = {"rtol": 1e-10, "atol": 1e-12}
TS = np.linspace(0.0, 1.0, 5)
METHODS = ["RK45", "DOP853"]


def forced(t, y, k, c):
    return np.array([y[1], -k * y[0] - c * y[1] + np.sin(t)])


def _close(got, want, rtol=1e-6, atol=1e-7):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=float), w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("method", METHODS)
def test_last_state_in_y0_both_modes(method):
    def f(y0):
        return (
            solve_ivp(forced, (0, 1), y0, method=method, t_eval=TS, args=(2.0, 0.3), **TOL)
            .y[:, -1]
            .sum()
        )

    y0 = np.array([1.0, 0.2])
    fd = fd_gradient(f, y0)
    _close(ad.gradient(f, y0), fd)
    v = np.array([0.3, -0.7])
    np.testing.assert_allclose(ad.jvp(f, (y0,), (v,))[1], fd[0] @ v, rtol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_every_input_against_differences(method):
    W = np.arange(1.0, 11.0).reshape(2, 5)

    def f(y0, k, c, t_eval, t0):
        sol = solve_ivp(forced, (t0, 1.0), y0, method, t_eval, args=(k, c), **TOL)
        return np.sum(sol.y**2 * W) + np.sum(sol.t * sol.t)

    point = (np.array([1.0, 0.2]), 2.0, 0.3, np.array([0.1, 0.3, 0.5, 0.8, 0.95]), 0.05)
    fd = fd_gradient(f, *point)
    _close(ad.gradient(f, *point), fd)
    v = (np.array([0.3, -0.2]), 0.5, -0.4, np.array([0.05, 0.1, 0.2, -0.1, 0.02]), 0.3)
    want = sum(np.sum(np.asarray(a) * b) for a, b in zip(fd, v))
    np.testing.assert_allclose(ad.jvp(f, point, v)[1], want, rtol=1e-6)


def test_linear_by_hand_both_modes():
    # y' = a y: y(t) = y0 e^{a t}, ∂y(t)/∂y0 = e^{a t}, ∂y(t)/∂a = t y(t)
    y0, a = np.array([1.5, -0.5]), 0.7

    def f(y0, a):
        sol = solve_ivp(lambda t, y, a: a * y, (0, 1), y0, t_eval=TS, args=(a,), **TOL)
        return sol.y[:, -1].sum()

    gy0, ga = ad.gradient(f, y0, a)
    np.testing.assert_allclose(gy0, np.exp(a) * np.ones(2), rtol=1e-8)
    np.testing.assert_allclose(ga, np.sum(y0) * np.exp(a), rtol=1e-8)
    np.testing.assert_allclose(ad.jvp(f, (y0, a), (np.zeros(2), 1.0))[1], ga, rtol=1e-8)
    np.testing.assert_allclose(
        ad.jvp(f, (y0, a), (np.array([1.0, 2.0]), 0.0))[1], 3 * np.exp(a), rtol=1e-8
    )


def test_closure_over_the_rate_and_item_access():
    # sol["y"] reads the same field; y(t) = y0 e^{-k t} with k from the closure
    def f(k, y0):
        def decay(t, y):
            return -k * y

        sol = solve_ivp(decay, (0.0, 2.0), y0, method="DOP853", t_eval=[0.5, 2.0], **TOL)
        return np.sum(sol["y"] * np.array([1.0, 3.0]))

    k, y0 = 0.6, np.array([2.0])
    t = np.array([0.5, 2.0])
    w = np.array([1.0, 3.0])
    gk, gy0 = ad.gradient(f, k, y0)
    np.testing.assert_allclose(gk, np.sum(w * -t * 2.0 * np.exp(-k * t)), rtol=1e-8)
    np.testing.assert_allclose(gy0, [np.sum(w * np.exp(-k * t))], rtol=1e-8)
    np.testing.assert_allclose(ad.jvp(f, (k, y0), (1.0, np.zeros(1)))[1], gk, rtol=1e-8)


def test_solver_steps_and_the_end_time():
    # without t_eval sol.t holds the solver's steps: y at the end moves with t_span[1]
    def f(y0, tf):
        return solve_ivp(lambda t, y: -0.5 * y, (0.0, tf), y0, method="DOP853", **TOL).y[0, -1]

    y0, tf = np.array([2.0]), 1.3
    gy0, gtf = ad.gradient(f, y0, tf)
    np.testing.assert_allclose(gy0, [np.exp(-0.5 * tf)], rtol=1e-8)
    np.testing.assert_allclose(gtf, -0.5 * 2.0 * np.exp(-0.5 * tf), rtol=1e-8)
    np.testing.assert_allclose(ad.jvp(f, (y0, tf), (np.zeros(1), 1.0))[1], gtf, rtol=1e-8)


def test_complex_state():
    # y' = i w y: y(t) = y0 e^{i w t}; L = |y(1)|² + Re y(1)
    def f(y0, w):
        y = solve_ivp(lambda t, y, w: 1j * w * y, (0, 1), y0, t_eval=[1.0], args=(w,), **TOL).y
        return np.sum(np.abs(y) ** 2 + np.real(y))

    y0, w = np.array([0.5 + 0.2j]), 0.8
    gy0, gw = ad.gradient(f, y0, w)
    e = np.exp(1j * w)
    np.testing.assert_allclose(gy0, 2 * y0 + np.conj(e), rtol=1e-8)  # ∂L/∂re + i ∂L/∂im
    np.testing.assert_allclose(gw, np.real(1j * y0[0] * e), rtol=1e-8)
    np.testing.assert_allclose(ad.jvp(f, (y0, w), (np.zeros(1, complex), 1.0))[1], gw, rtol=1e-8)


def test_dense_output_is_refused_at_the_users_line():
    def f(y0):
        sol = solve_ivp(lambda t, y: -y, (0, 1), y0, dense_output=True)  # the line
        return sol.y[0, -1]

    with pytest.raises(NotImplementedError, match="dense_output=") as e:
        ad.gradient(f, np.ones(1))
    line = f.__code__.co_firstlineno + 1
    assert f"test_ad_solve_ivp.py:{line}" in str(e.value) and "t_eval" in str(e.value)
