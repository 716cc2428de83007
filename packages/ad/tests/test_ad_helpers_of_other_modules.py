"""Helpers of another module are inlined as those of the caller's own are
(``ad.transform.inlining``): called as ``module.helper(...)`` or imported by name.

Such a helper's body reads its own module's globals; inlined, it reads the
caller's. So it is inlined only when each global it reads is a module or a
builtin that the caller's name resolves to as well, and the transform is used
only while the helper's name, those modules and builtins resolve as they did
(guards). Checked: gradients, tangents and second derivatives agree with
central differences and with the helpers left as calls; the helpers are really
inlined; rebinding the helper (``module.helper = other``), a module or builtin
in the helper's module, or a global a helper reads, is honoured as Python
honours it; a rebinding during the call is refused with the dotted name.
"""

from __future__ import annotations

import math
import types

import elsewhere_helpers as eh
import numpy as np
import pytest
from ad_testing import fd_hessian, helpers_as_calls
from elsewhere_helpers import smooth

import ad
from ad.transform.cache import transformed


def _data():
    rng = np.random.default_rng(3)
    return (
        rng.normal(size=(4, 3)) * 0.5,
        rng.normal(size=3) * 0.1,
        rng.normal(size=(6, 4)),
        rng.normal(size=(6, 3)),
    )


def loss_by_attribute(W, b, X, y):
    return eh.mse(W, b, X, y) + 0.5 * eh.mse(W, b, X, 2.0 * y)


def scalar_by_name(x, z):
    return smooth(x * z) * eh.smooth(z) + eh.uses_rate(x) + eh.calls_its_own(z)


def _calls(fn, *args):
    """``fn(*args)`` with the helpers left as calls (fresh transforms)."""
    with helpers_as_calls():
        return fn(*args)


def _fd(f, args, i, h=1e-6):
    a = list(args)
    x = np.asarray(a[i], dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[k] += h
        xm[k] -= h
        fp = f(*a[:i], xp if x.shape else float(xp), *a[i + 1 :])
        fm = f(*a[:i], xm if x.shape else float(xm), *a[i + 1 :])
        g[k] = (fp - fm) / (2 * h)
    return g if x.shape else float(g)


def _guard_names(f):
    return {k if type(k) is str else k[1] for k, _ in transformed(f, False).guards}


def test_an_array_helper_called_as_module_attribute():
    W, b, X, y = _data()
    g = ad.gradient(loss_by_attribute, W, b, X, y)
    for i in (0, 1):
        np.testing.assert_allclose(
            g[i], _fd(loss_by_attribute, (W, b, X, y), i), rtol=1e-6, atol=1e-9
        )
    c = _calls(ad.gradient, loss_by_attribute, W, b, X, y)
    for a, e in zip(g, c):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-15)
    assert {"mse", "np"} <= _guard_names(loss_by_attribute)  # inlined
    dW = np.ones_like(W)
    _, ẏ = ad.jvp(loss_by_attribute, (W, b, X, y), (dW, 0 * b, 0 * X, 0 * y))
    assert ẏ == pytest.approx(np.sum(g[0] * dW), rel=1e-10)

    def in_b(v):
        return loss_by_attribute(W, v, X, y)

    np.testing.assert_allclose(ad.hessian(in_b, b), fd_hessian(in_b, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("x,z", [(0.7, -1.3), (-0.4, 2.0)])
def test_scalar_helpers_imported_by_name_or_read_from_their_module(x, z):
    g = ad.gradient(scalar_by_name, x, z)
    assert g[0] == pytest.approx(_fd(scalar_by_name, (x, z), 0), rel=1e-6)
    assert g[1] == pytest.approx(_fd(scalar_by_name, (x, z), 1), rel=1e-6)
    assert g == pytest.approx(_calls(ad.gradient, scalar_by_name, x, z), rel=1e-12)
    _, ẏ = ad.jvp(scalar_by_name, (x, z), (1.0, 0.0))
    assert ẏ == pytest.approx(g[0], rel=1e-10)
    names = _guard_names(scalar_by_name)
    assert {"smooth", "math", "abs"} <= names  # inlined, under guards
    assert "uses_rate" not in names and "calls_its_own" not in names  # calls


def test_a_rebound_module_attribute_is_honoured(monkeypatch):
    W, b, X, y = _data()
    ad.gradient(loss_by_attribute, W, b, X, y)  # transformed with mse inlined
    monkeypatch.setattr(eh, "mse", lambda W, b, X, y: np.sum(W) * 3.0)
    gW = ad.gradient(loss_by_attribute, W, b, X, y)[0]
    np.testing.assert_allclose(gW, np.full_like(W, 4.5))


def test_a_rebound_global_of_the_helpers_module_is_honoured(monkeypatch):
    x, z = 0.7, -1.3
    before = ad.gradient(scalar_by_name, x, z)
    fake = types.SimpleNamespace(sqrt=lambda v: 2.0 * v)  # math.sqrt, as the module sees it
    monkeypatch.setattr(eh, "math", fake)
    assert ad.gradient(scalar_by_name, x, z)[0] == pytest.approx(
        _fd(scalar_by_name, (x, z), 0), rel=1e-6
    )
    monkeypatch.undo()
    monkeypatch.setattr(eh, "abs", lambda v: v * v, raising=False)  # shadows the builtin there
    assert ad.gradient(scalar_by_name, x, z)[1] == pytest.approx(
        _fd(scalar_by_name, (x, z), 1), rel=1e-6
    )
    monkeypatch.undo()
    monkeypatch.setattr(eh, "RATE", 5.0)
    assert ad.gradient(scalar_by_name, x, z)[0] != pytest.approx(before[0])
    assert ad.gradient(scalar_by_name, x, z)[0] == pytest.approx(
        _fd(scalar_by_name, (x, z), 0), rel=1e-6
    )


def _rebind_mse():
    eh.mse = lambda W, b, X, y: np.sum(W)


def rebinds_while_running(W, b, X, y):
    a = eh.mse(W, b, X, y)
    _rebind_mse()
    return a + eh.mse(W, b, X, y)  # Python calls the new one here


def test_a_helper_rebound_during_the_call_is_refused_by_its_dotted_name(monkeypatch):
    monkeypatch.setattr(eh, "mse", eh.mse)  # restored afterwards
    with pytest.raises(ad.MutationError, match=r"'eh\.mse' was rebound while"):
        ad.gradient(rebinds_while_running, *_data())


def test_a_caller_whose_name_means_another_module_keeps_the_call():
    # The caller's ``math`` is not the helper's: inlined, the body would read it.
    math_elsewhere = types.ModuleType("math")
    math_elsewhere.sqrt = lambda v: 10.0 * v
    g = types.FunctionType(scalar_by_name.__code__, {**globals(), "math": math_elsewhere})
    assert "smooth" not in _guard_names(g)
    assert ad.gradient(g, 0.7, -1.3) == pytest.approx(ad.gradient(scalar_by_name, 0.7, -1.3))
    assert math.sqrt(4.0) == 2.0


def test_a_helper_changed_in_place_is_honoured(monkeypatch):
    # %autoreload swaps a function's __code__, a test may set __defaults__: the name
    # still resolves to the same function object, whose body is another now
    x, z = 0.7, -1.3
    ad.gradient(scalar_by_name, x, z)  # smooth inlined as it was

    def smoother(x, k=4.0):
        return math.sqrt(x * x + k) + abs(x)

    monkeypatch.setattr(eh.smooth, "__code__", smoother.__code__)
    monkeypatch.setattr(eh.smooth, "__defaults__", (4.0,))
    for mode in ("reverse", "forward"):
        if mode == "reverse":
            got = ad.gradient(scalar_by_name, x, z)[0]
        else:
            got = ad.jvp(scalar_by_name, (x, z), (1.0, 0.0))[1]
        assert got == pytest.approx(_fd(scalar_by_name, (x, z), 0), rel=1e-6)
    monkeypatch.setattr(eh.smooth, "__defaults__", (9.0,))
    assert ad.gradient(scalar_by_name, x, z)[1] == pytest.approx(
        _fd(scalar_by_name, (x, z), 1), rel=1e-6
    )


def test_forward_mode_refuses_a_helper_rebound_during_the_call(monkeypatch):
    monkeypatch.setattr(eh, "mse", eh.mse)  # restored afterwards
    W, b, X, y = _data()
    with pytest.raises(ad.MutationError, match=r"'eh\.mse' was rebound while"):
        ad.jvp(rebinds_while_running, (W, b, X, y), (W, 0 * b, 0 * X, 0 * y))


def patches_and_restores(x, z):
    a = eh.smooth(x)
    old = eh.smooth
    eh.smooth = lambda v: v * v * v  # a test double, for the next call alone
    b = eh.smooth(z)
    eh.smooth = old
    return a * b


def test_a_caller_setting_the_modules_attributes_keeps_the_calls(monkeypatch):
    monkeypatch.setattr(eh, "smooth", eh.smooth)
    x, z = 0.7, -1.3
    g = ad.gradient(patches_and_restores, x, z)
    want = (_fd(patches_and_restores, (x, z), 0), _fd(patches_and_restores, (x, z), 1))
    assert g == pytest.approx(want, rel=1e-6)
    assert ad.jvp(patches_and_restores, (x, z), (0.0, 1.0))[1] == pytest.approx(want[1], rel=1e-6)
    assert "smooth" not in _guard_names(patches_and_restores)


def calls_checked(x):
    return eh.checked(x * 2.0) + 1.0


def test_an_error_in_a_helper_of_another_module_shows_the_helpers_line():
    assert ad.gradient(calls_checked, 1.0) == (8.0,)
    with pytest.raises(ValueError, match="negative") as info:
        ad.gradient(calls_checked, -1.0)
    last = info.traceback[-1]
    assert str(last.path).endswith("elsewhere_helpers.py")
    assert last.lineno + 1 == eh.checked.__code__.co_firstlineno + 2
