"""Derivatives of programs that call ad's entry points inside, three and four levels deep.

Found by an outside tester: each program below came out silently wrong (a zero,
``None``, or a number off by a few percent) in every mode order but forward³.
Reverse mode over a pushforward of a pushforward takes cotangents back through
the linear tangent map of an unfolded call (``ad.higher.unfold``), evaluated by
reverse mode at the outer tangents: where those were symbolic zeros, the map's
splitting of a tuple tangent returned constant zeros, so the cotangents of the
inner tangents (the values a nested ``gradient`` or ``jvp`` pushes forward) were
dropped. Each value is checked against central finite differences of a
lower-order derivative and against a value derived by hand.
"""

import itertools
import math

import numpy as np
import pytest

import ad


def D(f, x):
    return ad.jvp(f, (x,), (1.0,))[1]


def G(f, x):
    return ad.gradient(f, x)[0]


MODES = {"D": D, "G": G}


def nth(modes, f, x):
    """The derivative of ``f`` at ``x`` taken by ``modes`` (outer first)."""
    if not modes:
        return f(x)
    return MODES[modes[0]](lambda y: nth(modes[1:], f, y), x)


def central(f, x, h=1e-4):
    return (f(x + h) - f(x - h)) / (2 * h)


def _half_square(y):
    return y * y / 2


@pytest.mark.parametrize("inner", "GD")
@pytest.mark.parametrize("modes", ["".join(p) for p in itertools.product("GD", repeat=3)])
def test_third_derivative_through_an_inner_entry_points_argument(inner, modes):
    # p(x) = ∇(y ↦ y²/2)(x³) = x³: the inner Hessian is constant, so the whole third
    # derivative comes through the inner call's tangent input (it was 0 or None)
    def p(x):
        return MODES[inner](_half_square, x**3)

    x = 0.7
    got = nth(modes, p, x)
    assert got == pytest.approx(6.0, rel=1e-10)
    assert got == pytest.approx(central(lambda y: nth(modes[1:], p, y), x), rel=1e-6)


@pytest.mark.parametrize("modes", ["".join(p) for p in itertools.product("GD", repeat=3)])
def test_fourth_order_closure_over_the_outer_variable(modes):
    # g(b) = d/dy [sin(b) y] = sin(b), only through the closure: g''' = -cos(b)
    def g(b):
        return G(lambda y: math.sin(b) * y, 0.5)

    a = 0.3
    got = nth(modes, g, a)
    assert got == pytest.approx(-math.cos(a), rel=1e-10)
    assert got == pytest.approx(central(lambda y: nth(modes[1:], g, y), a), rel=1e-6)


@pytest.mark.parametrize(
    "inner",
    [
        lambda a: G(lambda z: G(lambda y: math.exp(a * y), z), 0.5),
        lambda a: ad.hessian(lambda y: math.exp(a * y), 0.5),
        lambda a: ad.hvp(lambda y: math.exp(a * y), (0.5,), (1.0,))[0],
        lambda a: G(lambda z: D(lambda y: math.exp(a * y), z), 0.5),
        lambda a: D(lambda z: G(lambda y: math.exp(a * y), z), 0.5),
    ],
    ids=["GG", "hessian", "hvp", "GD", "DG"],
)
@pytest.mark.parametrize("outer", ["hessian", "GG", "DD"])
def test_second_derivative_of_an_inner_second_derivative(inner, outer):
    # g(a) = d²/dy² exp(a y) at 0.5 = a² exp(a/2); g'' = (2 + 2a + a²/4) exp(a/2)
    a = 0.3
    if outer == "hessian":
        got = ad.hessian(inner, a)
    else:
        got = nth(outer, inner, a)
    assert got == pytest.approx((2 + 2 * a + a * a / 4) * math.exp(a / 2), rel=1e-10)
    assert got == pytest.approx(central(lambda b: G(inner, b), a), rel=1e-6)


def _unrolled(x):
    w = 0.0
    for _ in range(3):
        w = w - 0.1 * ad.gradient(lambda v: (v - x) ** 2 * (1.0 + v**2), w)[0]
    return w**3 + w * x


def _unrolled_by_hand(x):
    w = 0.0
    for _ in range(3):
        w = w - 0.1 * (2 * (w - x) * (1 + w**2) + 2 * w * (w - x) ** 2)
    return w**3 + w * x


@pytest.mark.parametrize(
    "third",
    [
        lambda x: nth("GGG", _unrolled, x),
        lambda x: nth("GDD", _unrolled, x),
        lambda x: nth("DGG", _unrolled, x),
        lambda x: D(lambda y: ad.hvp(_unrolled, (y,), (1.0,))[0], x),
    ],
    ids=["GGG", "GDD", "DGG", "jvp(hvp)"],
)
def test_third_derivative_of_unrolled_gradient_descent(third):
    x = 0.3
    by_hand = nth("GGG", _unrolled_by_hand, x)  # no entry point inside: the reference
    got = third(x)
    assert got == pytest.approx(by_hand, rel=1e-10)
    second = lambda y: ad.hessian(_unrolled, y)  # noqa: E731
    assert got == pytest.approx(central(second, x), rel=1e-6)


def test_hessian_of_a_function_calling_hessian_on_arrays():
    y0 = np.array([0.4, -0.2])

    def g(a):
        return np.sum(ad.hessian(lambda y: np.sum(np.sin(a * y) * y), y0) ** 2)

    def g_hand(a):  # the inner Hessian by hand: diag(2a cos(ay) - a² y sin(ay))
        return np.sum((2 * a * np.cos(a * y0) - a * a * y0 * np.sin(a * y0)) ** 2)

    a0 = np.array([0.7, 1.3])
    expected = ad.hessian(g_hand, a0)
    h = 1e-4
    fd = np.array(
        [
            (ad.gradient(g_hand, a0 + h * e)[0] - ad.gradient(g_hand, a0 - h * e)[0]) / (2 * h)
            for e in np.eye(2)
        ]
    )
    got = ad.hessian(g, a0)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, fd, rtol=1e-6)
