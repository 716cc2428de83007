"""Tests of the ODE solvers' rules (rules._scipy_integrate, rules._scipy_integrate_ivp,
rules._ode_adjoint) through rulestest, with a toy AD that differentiates the one
right-hand side ``y' = k A y + cos t`` by hand (the rules call back into an AD for
the derivatives of the user's function; ad's own tests run them through ad)."""

import numpy as np
import pytest
import scipy.integrate as si
from rules_testing import N

import rules  # noqa: F401  (registers the rules)
from rules._ode_adjoint import rhs
from rulescore import (
    AbstractZero,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    RuleConfig,
    Tangent,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

A = np.array([[-0.5, 1.0], [-1.0, -0.3]])
TS = np.array([0.1, 0.4, 0.7, 0.9])  # inside the span: differences move them both ways
TOL = {"rtol": 1e-11, "atol": 1e-12}
CHECK = {"rtol": 1e-6, "atol": 1e-6}


def linear(t, y, k):
    return k * (A @ y) + np.cos(t)


def linear_yt(y, t, k):  # odeint's order
    return linear(t, y, k)


class LinearAD(RuleConfig, HasReverseMode, HasForwardsMode):
    """An AD that knows the derivatives of ``linear`` only."""

    def rrule_via_ad(self, f, func, tfirst, y, t, k):
        assert f is rhs and func in (linear, linear_yt)
        out = linear(t, y, k)

        def linear_pullback(ȳ):
            dy = np.conj(k) * (A.T @ ȳ)
            dt = np.real(np.vdot(ȳ, -np.sin(t) * np.ones_like(ȳ)))
            dk = np.real(np.vdot(A @ y, ȳ))
            return (NoTangent(), ZeroTangent(), NoTangent(), dy, dt, dk)

        return out, linear_pullback

    def frule_via_ad(self, tangents, f, func, tfirst, y, t, k):
        assert f is rhs and func in (linear, linear_yt)
        _, _, _, ẏ, ṫ, k̇ = (unthunk(x) for x in tangents)
        d = k * (A @ ẏ) if not isinstance(ẏ, AbstractZero) else np.zeros_like(y)
        if not isinstance(ṫ, AbstractZero):
            d = d - np.sin(t) * ṫ
        if not isinstance(k̇, AbstractZero):
            d = d + k̇ * (A @ y)
        return linear(t, y, k), d


AD = LinearAD()


def ivp_args(y0, method, t_eval=TS, span=(0.0, 1.0)):
    return (N(linear), span, y0, N(method), t_eval, N(False), N(None), N(False), (0.7,))


@pytest.mark.parametrize("method", ["RK45", "DOP853", "RK23"])
def test_solve_ivp_real(method):
    args = ivp_args(np.array([1.0, -0.4]), method)
    test_rrule(AD, si.solve_ivp, *args, fkwargs=TOL, **CHECK)
    test_frule(AD, si.solve_ivp, *args, fkwargs=TOL, **CHECK)


@pytest.mark.parametrize("method", ["Radau", "BDF", "LSODA"])
def test_solve_ivp_implicit_methods(method):
    # Their step counts (sol.nfev, ...) and steps jump with the inputs, which central
    # differences cannot follow: the rules are compared with DOP853's (checked above).
    y0 = np.array([1.0, -0.4])
    plain = (linear, (0.0, 1.0), y0, method, TS, False, None, False, (0.7,))
    ref = (*plain[:3], "DOP853", *plain[4:])
    ȳ = Tangent[si._ivp.ivp.OdeResult](y=np.arange(8.0).reshape(2, 4))
    got = rrule(AD, si.solve_ivp, *plain, **TOL)[1](ȳ)
    want = rrule(AD, si.solve_ivp, *ref, **TOL)[1](ȳ)
    for k in (2, 3, 5, 9):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=1e-6)
    ts = (NoTangent(), NoTangent(), (0.3, -0.2), np.array([0.5, 1.0]), NoTangent())
    ts = (*ts, np.array([0.1, 0.0, -0.1, 0.2]), *(NoTangent(),) * 3, (0.4,))
    got = frule(AD, ts, si.solve_ivp, *plain, **TOL)[1]
    want = frule(AD, ts, si.solve_ivp, *ref, **TOL)[1]
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)
    np.testing.assert_allclose(got["t"], want["t"], rtol=1e-12)


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_solve_ivp_complex(method):
    args = ivp_args(np.array([1.0 + 0.5j, -0.4j]), method)
    test_rrule(AD, si.solve_ivp, *args, fkwargs=TOL, **CHECK)
    test_frule(AD, si.solve_ivp, *args, fkwargs=TOL, **CHECK)


def test_solve_ivp_list_span_and_array_atol():
    args = ivp_args([1.0, -0.4], "DOP853", span=[-0.2, 1.0])
    kw = {"rtol": 1e-11, "atol": np.array([1e-12, 1e-13]), "max_step": 0.5}
    test_rrule(AD, si.solve_ivp, *args, fkwargs=kw, **CHECK)
    test_frule(AD, si.solve_ivp, *args, fkwargs=kw, **CHECK)


def test_solve_ivp_decay_by_hand():
    # y' = -k y (A = -I, no forcing, as k·A y with A -> -1): y(τ) = y0 e^{-k(τ - t0)}
    def decay(t, y, k):
        return -k * y

    class DecayAD(LinearAD):
        def rrule_via_ad(self, f, func, tfirst, y, t, k):
            return -k * y, lambda ȳ: (NoTangent(), ZeroTangent(), NoTangent(), -k * ȳ, 0.0, -ȳ @ y)

    y0, k, t0 = np.array([1.5]), 0.7, 0.2
    times = np.array([0.5, 2.0])
    args = (decay, (t0, 2.0), y0, "RK45", times, False, None, False, (k,))
    sol, pb = rrule(DecayAD(), si.solve_ivp, *args, **TOL)
    yt = y0 * np.exp(-k * (times - t0))
    np.testing.assert_allclose(sol.y[0], yt, rtol=1e-9)
    ȳ = Tangent[type(sol)](y=np.array([[1.0, 2.0]]))
    cts = pb(ȳ)
    w = np.array([1.0, 2.0])
    np.testing.assert_allclose(cts[3], [np.sum(w * np.exp(-k * (times - t0)))], rtol=1e-8)
    np.testing.assert_allclose(cts[5], -k * w * yt, rtol=1e-8)  # t_eval
    np.testing.assert_allclose(cts[2][0], k * np.sum(w * yt), rtol=1e-8)  # t_span[0]
    assert cts[2][1] == 0.0
    np.testing.assert_allclose(cts[-1][0], np.sum(w * -(times - t0) * yt), rtol=1e-8)
    assert pb(ZeroTangent())[1:4] == (ZeroTangent(),) * 3


def test_solve_ivp_needs_an_ad():
    with pytest.raises(TypeError, match="only an AD supplies") as e:
        rrule(si.solve_ivp, linear, (0.0, 1.0), np.ones(2))
    assert "linear" in str(e.value) and "test_rules_scipy_integrate.py" in str(e.value)


@pytest.mark.parametrize("name", ["dense_output", "events"])
def test_solve_ivp_without_a_rule_says_where(name):
    value = True if name == "dense_output" else (lambda t, y, k: y[0])
    with pytest.raises(NotImplementedError, match=f"{name}=") as e:
        rrule(AD, si.solve_ivp, linear, (0.0, 1.0), np.ones(2), args=(0.7,), **{name: value})
    assert "test_rules_scipy_integrate.py:" in str(e.value) and "t_eval" in str(e.value)


def test_odeint_through_the_shared_machinery():
    t = np.array([0.0, 0.3, 0.8, 1.0])
    args = (N(linear_yt), np.array([1.0, -0.4]), t, (0.7,))
    test_rrule(AD, si.odeint, *args, fkwargs=TOL, **CHECK)
    test_frule(AD, si.odeint, *args, fkwargs=TOL, **CHECK)
