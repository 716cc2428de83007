"""Second derivatives through ``scipy.integrate.odeint`` and ``solve_ivp`` in every
pair of modes (issue 20, autograd's ``test_odeint``).

The rules solve an adjoint (reverse) or sensitivity (forward) system whose field was
a closure over the rule's own state (the ``RightHandSide``, the tangents). A second
derivative differentiates the rule's body, and so that solve: the rule, called on
the closure, could not integrate the derivative of what it captured
(``NotImplementedError``: "sensitivity reads arg_ts, self from outside its
arguments"). The fields are now functions of the module given ``func``, ``args``
and the tangents through the solver's ``args``, which the same rules differentiate.
A function passed in ``args`` now also gets the derivative of the numbers its
closure holds (before: none, silently). Checked against central differences of
first derivatives and the closed forms of ``y' = -k y²`` and ``y' = -k y``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ad

scipy_integrate = pytest.importorskip("scipy.integrate")
odeint, solve_ivp = scipy_integrate.odeint, scipy_integrate.solve_ivp
TOL = {"rtol": 1e-11, "atol": 1e-11}
T = np.array([0.0, 0.4, 1.0])


def riccati(y, t, k):
    return -k * y * y


def oscillator(y, t, k, c):
    return np.array([y[1], -k * y[0] - c * y[1] + np.sin(t)])


def _rate(k):
    return lambda y: -k * y * y


def through_a_function(y, t, g):
    return g(y)


PROGRAMS = {
    "args": lambda k: odeint(riccati, np.array([1.0]), T, (k,), **TOL)[-1, 0],
    "closure": lambda k: odeint(lambda y, t: -k * y * y, np.array([1.0]), T, **TOL)[-1, 0],
    "y0": lambda k: odeint(riccati, np.array([k]), T, (0.7,), **TOL)[-1, 0],
    "times": lambda k: np.sum(odeint(riccati, 1.0, np.array([0.0, k, 2 * k]), (0.7,), **TOL)),
    "tfirst": lambda k: odeint(
        lambda t, y, a: -a * np.cos(t) * y, np.array([1.0]), T, (k,), tfirst=True, **TOL
    )[-1, 0],
    "oscillator": lambda k: np.sum(
        odeint(oscillator, np.array([1.0, k]), T, args=(k, 0.3 * k), **TOL) ** 2
    ),
    "function-in-args": lambda k: odeint(
        through_a_function, np.array([1.0]), T, (_rate(k),), **TOL
    )[-1, 0],
    "solve_ivp-args": lambda k: solve_ivp(
        lambda t, y, c: -c * y * y, (0.0, 1.0), np.array([1.0]), args=(k,), **TOL
    ).y[0, -1],
    "solve_ivp-closure": lambda k: solve_ivp(
        lambda t, y: -k * y * np.cos(t), (0.0, 1.0), np.array([1.0, 2.0]), **TOL
    ).y[1, -1],
}


def _r(f):
    return lambda k: ad.gradient(f, k)[0]


def _f(f):
    return lambda k: ad.jvp(f, (k,), (1.0,))[1]


MODES = {"r": _r, "f": _f}


def _fd(f, x, h=1e-4):
    """Central differences; the solves are accurate to about 1e-11, so h is not tiny."""
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("pair", ["ff", "fr", "rf", "rr"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_second_derivative_matches_differences_of_the_first(name, pair):
    f = PROGRAMS[name]
    inner = MODES[pair[1]](f)
    assert MODES[pair[0]](inner)(0.5) == pytest.approx(_fd(inner, 0.5), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("mode", ["r", "f"])
def test_first_derivative_matches_differences(name, mode):
    f = PROGRAMS[name]
    assert MODES[mode](f)(0.5) == pytest.approx(_fd(f, 0.5), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("pair", ["ff", "fr", "rf", "rr"])
@pytest.mark.parametrize("name", ["args", "closure", "function-in-args"])
def test_closed_form_of_riccati(name, pair):
    """``y' = -k y²``, ``y(0) = 1``: ``y(1) = 1/(1 + k)``, ``y'' = 2/(1 + k)³``."""
    got = MODES[pair[0]](MODES[pair[1]](PROGRAMS[name]))(0.5)
    assert got == pytest.approx(2 / 1.5**3, rel=1e-8)


def test_autograd_rev_over_rev_repro():
    """``y(1)`` of ``y' = -k y``: ``e^{-k}``, second derivative ``e^{-k}``."""

    def f(k):
        return odeint(lambda y, t, k: -k * y, np.array([1.0]), np.array([0.0, 1.0]), (k,))[-1, 0]

    def df(k):
        return ad.gradient(f, k)[0]

    assert ad.gradient(df, 0.5)[0] == pytest.approx(np.exp(-0.5), rel=1e-6)
    assert ad.jvp(df, (0.5,), (1.0,))[1] == pytest.approx(np.exp(-0.5), rel=1e-6)


def test_hessian_of_several_parameters():
    """``ad.hessian`` (forward over reverse) of a loss in ``(y0, k, c)`` against
    differences of the gradient. (``hessian_reverse``, whose pure reverse-over-reverse
    path does not follow functions with ``*args`` such as the rules' ``rhs``, raises.)"""

    def loss(p):
        return np.sum(odeint(oscillator, p[:2], T, args=(p[2], p[3]), **TOL) ** 2)

    p = np.array([1.0, 0.2, 2.0, 0.3])
    grad = lambda q: ad.gradient(loss, q)[0]  # noqa: E731
    want = np.stack([_fd(lambda s, i=i: grad(p + s * np.eye(4)[i]), 0.0) for i in range(4)])
    np.testing.assert_allclose(ad.hessian(loss, p), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("spelling", ["positional", "keyword"])
@pytest.mark.parametrize("solver", ["odeint", "solve_ivp"])
def test_hessian_reverse_through_the_solvers(solver, spelling):
    """``hessian_reverse`` (reverse over reverse) differentiates the rules' pullbacks,
    whose fields call ``rhs(func, tfirst, y, t, *args)``; ``args`` given by keyword is
    passed by position, as at first order (before: its second derivatives were 0)."""

    def loss(p):
        if solver == "odeint":
            f = lambda y, t, a, b: -a * y * y + b * np.cos(t)  # noqa: E731
            pos, kw = ((p[0], p[1] ** 2),), {}
            if spelling == "keyword":
                pos, kw = (), {"args": pos[0]}
            ys = odeint(f, np.array([1.0, p[2]]), T, *pos, **kw, **TOL)
            return np.sum(ys**2)
        f = lambda t, y, a, b: -a * y * p[2] + b  # noqa: E731
        pos, kw = (), {"args": (p[0], p[1] ** 2)}
        sol = solve_ivp(f, (0.0, 1.0), np.array([1.0, 2.0]), **kw, **TOL)
        return np.sum(sol.y[:, -1] ** 2)

    p = np.array([0.5, 0.8, 1.2])
    grad = lambda q: ad.gradient(loss, q)[0]  # noqa: E731
    want = np.stack([_fd(lambda s, i=i: grad(p + s * np.eye(3)[i]), 0.0) for i in range(3)])
    np.testing.assert_allclose(ad.hessian_reverse(loss, p), want, rtol=1e-5, atol=1e-7)
