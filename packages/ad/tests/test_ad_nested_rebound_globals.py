"""A module-level function name rebound between calls, at second and third order.

``act = square`` then ``act = quartic`` (or ``def act`` run again, as a notebook
cell does, or the body replaced in place): the transforms inline ``act`` under a
guard on what the name held. First order used the general form once the guard
failed; the pushforward generated to be differentiated again
(``higher.nested_pushforward``, which every nesting ending in forward mode and
every third order goes through) was cached per code object with no guard, so it
kept the old body: ``jvp`` over ``jvp`` gave 2.0 where 12.0 is right, and at third
order every mode combination gave 0.0 where 24.0 is right. Checked against
hand-derived values and central differences of the next lower order.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from ad_testing import nested

import ad


def square(x):
    return x**2


def quartic(x):
    return x**4


def cubic_sum(x):
    return np.sum(x**3)


act = square


def loss(t):
    return act(t)


def _combos(order):
    return ["".join(c) for c in itertools.product("DG", repeat=order)]


def _run(name, f, x):
    return nested(name, f, x)


@pytest.fixture
def rebind():
    """Rebind module globals of this file for one test, restored after it."""
    saved = dict(globals())
    names: list[str] = []

    def set_(name, value):
        names.append(name)
        globals()[name] = value

    yield set_
    for n in names:
        if n in saved:
            globals()[n] = saved[n]
        else:
            globals().pop(n, None)


@pytest.mark.parametrize("name", _combos(2) + _combos(3))
@pytest.mark.parametrize("x", [1.0, -0.7, 2.5])
def test_rebound_between_calls(rebind, name, x):
    order = len(name)
    want_square = 2.0 if order == 2 else 0.0
    assert np.isclose(_run(name, loss, x), want_square)
    rebind("act", quartic)
    want = 12 * x**2 if order == 2 else 24 * x
    assert np.isclose(_run(name, loss, x), want), (name, x)
    # central difference of the order below, taken through the same mode
    h = 1e-4
    fd = (_run(name[1:], loss, x + h) - _run(name[1:], loss, x - h)) / (2 * h)
    assert np.isclose(_run(name, loss, x), fd, rtol=1e-5, atol=1e-5)
    rebind("act", square)  # and back: the inlined form again
    assert np.isclose(_run(name, loss, x), want_square)


@pytest.mark.parametrize("name", _combos(2) + ["GGG", "DDD", "GDG"])
def test_def_run_again(rebind, name):
    """A cell re-running ``def act`` with a new body: a new function under the name."""
    x = 1.5
    assert np.isclose(_run(name, loss, x), 2.0 if len(name) == 2 else 0.0)

    def act(x):  # the cell's def, run again with a new body
        return x**4

    rebind("act", act)
    assert np.isclose(_run(name, loss, x), 12 * x**2 if len(name) == 2 else 24 * x)


@pytest.mark.parametrize("name", _combos(2) + ["DDD", "GGD"])
def test_body_replaced_in_place(name):
    """``%autoreload`` swaps ``__code__`` in place: the inlined body is the old one."""
    x = 1.2
    old = square.__code__
    try:
        assert np.isclose(_run(name, loss, x), 2.0 if len(name) == 2 else 0.0)
        square.__code__ = quartic.__code__
        assert np.isclose(_run(name, loss, x), 12 * x**2 if len(name) == 2 else 24 * x)
    finally:
        square.__code__ = old
    assert np.isclose(_run(name, loss, x), 2.0 if len(name) == 2 else 0.0)


def array_loss(w):
    return act(w)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arrays_hessian_and_jvp_over_jvp(rebind, dtype):
    """Arrays, float64 and float32: ``ad.hessian``, ``hessian_reverse`` and ``jvp``
    over ``jvp`` after ``act`` is rebound from ``square`` to ``cubic_sum``."""
    w = np.array([0.5, -1.5, 2.0], dtype)
    rebind("act", square)

    def total(v):
        return np.sum(act(v))

    np.testing.assert_allclose(ad.hessian(total, w), 2 * np.eye(3), rtol=1e-5)
    rebind("act", cubic_sum)
    want = np.diag(6 * w.astype(float))
    tol = 1e-4 if dtype is np.float32 else 1e-9
    np.testing.assert_allclose(ad.hessian(total, w), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(ad.hessian_reverse(total, w), want, rtol=tol, atol=tol)
    e = np.ones(3, dtype)
    dd = ad.jvp(lambda v: ad.jvp(total, (v,), (e,))[1], (w,), (e,))[1]
    np.testing.assert_allclose(dd, np.sum(6 * w.astype(float)), rtol=tol)


def test_module_attribute_helper_rebound(rebind):
    """A helper called as ``module.helper``: its guard is on the module's attribute."""
    import types

    mod = types.ModuleType("helpers_mod")
    mod.f = square
    rebind("helpers_mod", mod)

    def via_module(t):
        return helpers_mod.f(t)  # noqa: F821 - bound by rebind above

    rebind("via_module", via_module)
    assert np.isclose(_run("DD", via_module, 1.5), 2.0)
    mod.f = quartic
    assert np.isclose(_run("DD", via_module, 1.5), 27.0)
    assert np.isclose(_run("DGD", via_module, 1.5), 36.0)
