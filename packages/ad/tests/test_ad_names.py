"""User names that shadow builtins (``type``, ``len``, ``isinstance``, ``float``,
``tuple``, ``getattr``, ``id``, ``range``, ...) as parameters or locals: the code ad
generates calls builtins of its own (type tests on fast paths, ``range``/``len`` in
loop adjoints, ``isinstance``/``len``/``hasattr`` in ``match``, ``float``/``int`` in
fused regions), under ``_ad_`` names the user's code cannot shadow. Each function is
checked in reverse and forward mode and at second order, against a hand-derived
derivative and central differences."""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad

X = np.array([0.3, -0.7, 1.1])


def detrend_like(x, type="linear"):  # scipy.signal.detrend's signature
    return x * 2.0


def test_type_parameter_scalar_and_array():
    assert ad.gradient(detrend_like, 3.0) == (2.0,)
    assert ad.jvp(detrend_like, (3.0,), (1.5,)) == (6.0, 3.0)
    assert ad.gradient(detrend_like, 3.0, type="constant") == (2.0,)
    y, back = ad.pullback(detrend_like, X)
    np.testing.assert_array_equal(back(np.ones(3))[0], 2 * np.ones(3))


def params(
    x, type=1.5, len=2, isinstance=0.5, float=2.0, tuple=(1.0, -1.0), getattr=3.0, id=7, range=0.25
):
    # every parameter shadows a builtin; the loops' adjoints count with range/len, the
    # array arithmetic takes the fast paths (type tests) and fused regions (float/int)
    y = x * float + type * x * x
    for c in tuple:
        y = y * c + isinstance * x
    k = 0
    while k < len:
        y = y * range + getattr * x
        k += 1
    return np.sum(y * y) + id * np.sum(x)


def params_by_hand(x):
    # y0 = 2x + 1.5x²; the two passes of the for loop: y1 = y0 + x/2, y2 = -y1 + x/2 = -y0;
    # the while loop twice: y3 = y2/4 + 3x, y4 = y3/4 + 3x = -y0/16 + 3.75x
    y = -(2 * x + 1.5 * x * x) / 16 + 3.75 * x
    dy = -(2 + 3 * x) / 16 + 3.75
    return np.sum(y * y) + 7 * np.sum(x), 2 * y * dy + 7, 2 * dy * dy + 2 * y * (-3 / 16)


@pytest.mark.parametrize("x", [X, 0.4], ids=["array", "float"])
def test_builtins_as_parameters(x):
    value, grad, diag = params_by_hand(x)
    np.testing.assert_allclose(params(x), value, rtol=1e-12)
    np.testing.assert_allclose(ad.gradient(params, x)[0], grad, rtol=1e-12)
    np.testing.assert_allclose(ad.gradient(params, x)[0], fd_gradient(params, x)[0], rtol=1e-6)
    v = np.ones_like(x) * 0.5
    np.testing.assert_allclose(ad.jvp(params, (x,), (v,))[1], np.sum(grad * v), rtol=1e-12)
    if isinstance(x, np.ndarray):
        H = ad.hessian(params, x)
        np.testing.assert_allclose(H, np.diag(diag), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(H, fd_hessian(params, x), rtol=1e-6, atol=1e-8)


def locals_(x):
    type = 3.0
    len = 2
    isinstance = 0.5
    float = np.cos
    tuple = [1.0, 2.0]
    getattr = x * 2.0
    id = 1
    range = 1.5
    reversed = np.sin
    int = x * x
    hasattr = None
    ValueError = 4.0
    y = getattr * type + float(x) * isinstance + reversed(x) + int * ValueError
    for t in tuple:
        y = y * t
    for _i in [0, id]:
        y = y + range * x**len
    return np.sum(y) if hasattr is None else 0.0


def locals_by_hand(x):
    # y = 2·(6x + cos(x)/2 + sin(x) + 4x²) + 3x²
    value = np.sum(12 * x + np.cos(x) + 2 * np.sin(x) + 11 * x * x)
    return value, 12 - np.sin(x) + 2 * np.cos(x) + 22 * x, -np.cos(x) - 2 * np.sin(x) + 22


@pytest.mark.parametrize("x", [X, 0.4], ids=["array", "float"])
def test_builtins_as_locals(x):
    value, grad, diag = locals_by_hand(x)
    np.testing.assert_allclose(locals_(x), value, rtol=1e-12)
    np.testing.assert_allclose(ad.gradient(locals_, x)[0], grad, rtol=1e-12)
    np.testing.assert_allclose(ad.gradient(locals_, x)[0], fd_gradient(locals_, x)[0], rtol=1e-6)
    v = np.ones_like(x) * -0.5
    np.testing.assert_allclose(ad.jvp(locals_, (x,), (v,))[1], np.sum(grad * v), rtol=1e-12)
    if isinstance(x, np.ndarray):
        np.testing.assert_allclose(ad.hessian(locals_, x), np.diag(diag), rtol=1e-10, atol=1e-12)


class Pair:
    __match_args__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


def matched(x, w, len=None, isinstance=None, hasattr=None, type=None):
    # sequence, mapping and class patterns test with len, isinstance and hasattr
    total = 0.0
    for subject in [(x, w), {"k": x}, Pair(w, x)]:
        match subject:
            case (a, b):
                total = total + a * b
            case {"k": a}:
                total = total + a * a
            case Pair(a, b=c):
                total = total + a * c * c
    return total


def test_builtins_shadowed_around_match():
    x, w = 0.7, -1.3
    # total = x w + x² + w x²
    np.testing.assert_allclose(matched(x, w), x * w + x * x + w * x * x)
    gx, gw = w + 2 * x + 2 * w * x, x + x * x
    np.testing.assert_allclose(ad.gradient(matched, x, w), (gx, gw), rtol=1e-12)
    np.testing.assert_allclose(ad.gradient(matched, x, w), fd_gradient(matched, x, w), rtol=1e-6)
    np.testing.assert_allclose(ad.jvp(matched, (x, w), (1.0, 2.0))[1], gx + 2 * gw, rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(lambda x: matched(x, w), x), 2 + 2 * w, rtol=1e-12)


def caught(x, ValueError=None, len=None):
    # a try block in a loop: the adjoint's handlers and stacks use builtins too
    total = 0.0
    for k in [1.0, 2.0]:
        try:
            total = total + k * x * x
        finally:
            total = total * 1.0
    return total


def test_builtins_shadowed_around_try():
    np.testing.assert_allclose(ad.gradient(caught, 0.5)[0], 6 * 0.5, rtol=1e-12)
    np.testing.assert_allclose(ad.jvp(caught, (0.5,), (2.0,))[1], 12 * 0.5, rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(caught, 0.5), 6.0, rtol=1e-12)


def test_generated_code_calls_no_shadowable_builtin():
    # the fast paths' type tests and the loops' adjoints in the generated source
    src = ad.code_adjoint(params, X)
    for name in ("_ad_type(", "_ad_range(", "_ad_len(", "_ad_reversed(", "is _ad_float"):
        assert name in src, name
    for name in ("type", "len", "range", "reversed", "isinstance", "hasattr"):
        assert f" {name}(" not in src and f"({name}(" not in src, name


def test_shadowed_builtins_called_as_the_users_functions():
    # len and type bound to differentiable functions are not the builtins' constants
    def f(x, len=np.sin):
        type = np.cos
        return len(x) * type(x)  # sin(2x)/2

    np.testing.assert_allclose(ad.gradient(f, 0.3)[0], np.cos(0.6), rtol=1e-12)
    np.testing.assert_allclose(ad.jvp(f, (0.3,), (2.0,))[1], 2 * np.cos(0.6), rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(f, 0.3), -2 * np.sin(0.6), rtol=1e-12)
