"""Issue 20's leftovers: derivatives past second order through list comprehensions,
``hessian_reverse`` through ``np.vectorize``, and ``ad.hvp``/``ad.diaghessian`` inside
differentiated code (including reverse over reverse over them).

Each result is checked against hand-derived derivatives and central differences of
a lower order.
"""

import itertools
import math

import numpy as np
import pytest
from ad_testing import D_f, D_r

import ad

MODES = {"f": D_f, "r": D_r}
#: every third-order mode triple (outer first): ``rff`` differentiates the frules'
#: bodies in reverse mode, ``fff`` pushes them forward as source
TRIPLES = ["".join(p) for p in itertools.product("fr", repeat=3)]


def third(modes, f, x):
    A, B, C = (MODES[m] for m in modes)
    return A(lambda a: B(lambda b: C(f, b), a), x)


# --- list comprehensions at third order -----------------------------------------------------


def cubes(x):
    """Σ v³ over [x, 2x, sin x] = 9 x³ + sin³ x."""
    return sum([v**3 for v in [x, 2 * x, np.sin(x)]])


def cubes_3(x):
    # d³/dx³ (9 x³ + sin³ x) = 54 + d³ sin³ x; sin³ = (3 sin x - sin 3x)/4
    return 54 + (-3 * math.cos(x) + 27 * math.cos(3 * x)) / 4


def nested_comprehension(x):
    rows = [[x * k for k in range(1, 3)] for _ in range(2)]
    return sum([np.exp(v) for row in rows for v in row])  # 2 (eˣ + e²ˣ)


@pytest.mark.parametrize("modes", TRIPLES)
def test_list_comprehension_third_derivative(modes):
    x = 0.7
    assert third(modes, cubes, x) == pytest.approx(cubes_3(x), rel=1e-12)
    want = 2 * (math.exp(x) + 8 * math.exp(2 * x))
    assert third(modes, nested_comprehension, x) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("modes", TRIPLES)
def test_list_comprehension_third_derivative_matches_differences(modes):
    def f(x):
        return sum([np.sin(v) * v for v in [x, x * x]])

    def second_derivative(y):
        return ad.hessian(f, y)

    h, x = 1e-4, 0.9
    want = (second_derivative(x + h) - second_derivative(x - h)) / (2 * h)
    assert third(modes, f, x) == pytest.approx(want, rel=1e-6)


def test_list_comprehension_third_order_over_arrays():
    """∇ of uᵀ H v for f = Σ [xᵢ³ xⱼ for i, j]: reverse over forward over forward."""

    def f(x):
        return sum([x[i] ** 3 * x[j] for i in range(2) for j in range(2)])

    x, u, v = np.array([0.5, 1.5]), np.array([1.0, -2.0]), np.array([0.5, 3.0])

    def uHv(y):
        return ad.jvp(lambda z: ad.jvp(f, (z,), (v,))[1], (y,), (u,))[1]

    got = ad.gradient(uHv, x)[0]
    want = np.array(
        [(uHv(x + e) - uHv(x - e)) / 2e-5 for e in (np.array([1e-5, 0.0]), np.array([0.0, 1e-5]))]
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)


# --- hessian_reverse through np.vectorize --------------------------------------------------

X = np.array([0.3, 0.7, 1.1])


def x_sin_x(v):
    return v * math.sin(v)


def vec_sum(x):
    return np.sum(np.vectorize(x_sin_x)(x))


def test_hessian_reverse_through_vectorize():
    want = np.diag(2 * np.cos(X) - X * np.sin(X))
    np.testing.assert_allclose(ad.hessian_reverse(vec_sum, X), want, rtol=1e-13, atol=1e-15)


def test_hessian_reverse_through_vectorize_broadcast_closure_and_tuples():
    def f(z):
        a, b = z[:2].reshape(2, 1), z[2:]
        return np.sum(np.vectorize(lambda p, q: p * math.sin(q) + p * p * q)(a, b))

    z = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(ad.hessian_reverse(f, z), ad.hessian(f, z), rtol=1e-13)

    def g(w):  # the function captures w[0]: c Σ v³
        c = w[0]
        return np.sum(np.vectorize(lambda v: c * v**3)(w[1:]))

    w = np.array([2.0, 0.3, 0.7])
    want = np.array([[0.0, 0.27, 1.47], [0.27, 3.6, 0.0], [1.47, 0.0, 8.4]])
    np.testing.assert_allclose(ad.hessian_reverse(g, w), want, rtol=1e-13, atol=1e-15)

    def h(x):
        a, b = np.vectorize(lambda v: (v * v, math.exp(v)))(x)
        return np.sum(a * b)

    np.testing.assert_allclose(
        ad.hessian_reverse(h, X), np.diag(np.exp(X) * (X * X + 4 * X + 2)), rtol=1e-13
    )


def test_hessian_reverse_through_vectorize_with_keywords_says_why():
    def f(x):
        return np.sum(np.vectorize(lambda v, p=2.0: v**p)(x, p=3.0))

    with pytest.raises(ad.NoRuleError, match="positional arguments only"):
        ad.hessian_reverse(f, X)


# --- hvp and diaghessian inside differentiated code -----------------------------------------


def quartic(x, y):
    return np.sum(x**4) * y


def sum_diaghessian(x, y):
    dx, dy = ad.diaghessian(quartic, x, y)  # 12 x² y, 0
    return np.sum(dx) + dy


def test_diaghessian_inside_every_first_order_mode():
    gx, gy = ad.gradient(sum_diaghessian, X, 2.0)
    np.testing.assert_allclose(gx, 24 * X * 2.0)
    assert gy == pytest.approx(12 * np.sum(X**2))
    assert ad.jvp(sum_diaghessian, (X, 2.0), (X, 1.0))[1] == pytest.approx(gx @ X + gy)
    # a list argument and a number
    got = ad.gradient(lambda x: sum(ad.diaghessian(lambda l: l[0] ** 3 * l[1], x)[0]), [1.0, 2.0])
    assert got == ([12.0, 6.0],)
    assert ad.gradient(lambda a: ad.diaghessian(lambda b: b**4, a)[0], 1.5) == (36.0,)


def test_hvp_inside_gradient_and_jvp():
    """⟨H(x) v, w⟩ for f = Σ x⁴ is 12 Σ x² v w (H v = 12 x² v): its gradient is
    24 x v w, a third derivative of f, in reverse and in forward mode."""
    v, w = np.array([1.0, -1.0, 2.0]), np.array([0.5, 2.0, 1.0])

    def g(x):
        return np.sum(ad.hvp(lambda y: np.sum(y**4), (x,), (v,))[0] * w)

    want = 24 * X * v * w
    np.testing.assert_allclose(ad.gradient(g, X)[0], want, rtol=1e-13)
    assert ad.jvp(g, (X,), (w,))[1] == pytest.approx(want @ w, rel=1e-13)
    h = 1e-6
    fd = [(g(X + h * e) - g(X - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(want, fd, rtol=1e-6)
