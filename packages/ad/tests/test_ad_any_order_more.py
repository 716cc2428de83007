"""Derivatives of any order through the constructs that used to stop at first order
(issue 20, the ad-side gaps of the second-order sweep):

* ``np.vectorize`` of a Python function, nested in every mode combination;
* a rule's missing derivative (``NotImplementedTangent``) of a constant parameter
  at second order: no error where nothing needs it, the rule's reason where
  something does (never a silent zero);
* ``next(<generator expression>[, default])``: the first item, lazily, in both
  modes and nested;
* ``ad.jacobian``, ``ad.withjacobian`` and ``ad.diaghessian`` inside differentiated
  code, ``ad.pullback`` three levels deep, and third derivatives of
  ``ad.hessian``-based code.

Each result is checked against hand-derived values and central differences.
"""

import itertools
import math

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st
from ad_testing import D_f, D_r

import ad
from rulescore.errors import NotImplementedTangentError

MODES = {"f": D_f, "r": D_r}
PAIRS = ["".join(p) for p in itertools.product("fr", repeat=2)]


def second(modes, h, x, u, v):
    """``uᵀ H v`` by the two levels ``modes`` (outer first)."""
    A, B = (MODES[m] for m in modes)
    return A(lambda y: B(h, y, v), x, u)


def fd_gradient(f, x, h=1e-6):
    """Central differences of a scalar function of an array."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# --- np.vectorize --------------------------------------------------------------------------

X = np.array([0.3, 0.7, 1.1])
U = np.array([0.5, -1.0, 2.0])
V = np.array([1.0, 0.25, -0.5])


def x_sin_x(v):
    return v * math.sin(v)


def vec_sum(x):
    return np.sum(np.vectorize(x_sin_x)(x))


def x_sin_x_2(x):  # its second derivative, elementwise
    return 2 * np.cos(x) - x * np.sin(x)


@pytest.mark.parametrize("modes", PAIRS)
def test_vectorize_second_derivative_in_every_mode_pair(modes):
    got = second(modes, vec_sum, X, U, V)
    assert got == pytest.approx(np.sum(U * x_sin_x_2(X) * V), rel=1e-12)


def test_vectorize_hessian_and_diaghessian():
    np.testing.assert_allclose(ad.hessian(vec_sum, X), np.diag(x_sin_x_2(X)), atol=1e-14)
    np.testing.assert_allclose(ad.diaghessian(vec_sum, X)[0], x_sin_x_2(X), rtol=1e-13)


def test_vectorize_two_broadcast_arguments_match_differences():
    def f(z):
        a, b = z[:2].reshape(2, 1), z[2:]
        return np.sum(np.vectorize(lambda p, q: p * math.sin(q) + p * p * q)(a, b))

    z = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    H = ad.hessian(f, z)
    ref = np.array([fd_gradient(lambda w, k=k: ad.gradient(f, w)[0][k], z) for k in range(5)])
    np.testing.assert_allclose(H, ref, rtol=1e-6, atol=1e-7)


def test_vectorize_several_outputs_and_a_scalar_input():
    def f(x):
        a, b = np.vectorize(lambda v: (v * v, math.exp(v)))(x)
        return np.sum(a * b)

    np.testing.assert_allclose(
        np.diag(ad.hessian(f, X)), np.exp(X) * (X * X + 4 * X + 2), rtol=1e-13
    )
    got = ad.hessian(lambda s: float(np.vectorize(x_sin_x, otypes=[float])(s)), 0.7)
    assert got == pytest.approx(x_sin_x_2(0.7), rel=1e-13)


def test_vectorize_of_a_closure_over_the_outer_variable():
    """d/dc ∇ₓ Σ c v³ = 3 x²: the derivative flows through the captured c, both ways."""

    def h(c, x):
        return np.sum(np.vectorize(lambda v: c * v**3)(x))

    want = 3 * X**2
    got = ad.gradient(lambda c: np.sum(ad.gradient(lambda x: h(c, x), X)[0] * V), 2.0)[0]
    assert got == pytest.approx(np.sum(want * V), rel=1e-13)
    np.testing.assert_allclose(
        ad.jvp(lambda c: ad.gradient(lambda x: h(c, x), X)[0], (2.0,), (1.0,))[1], want
    )
    got = ad.jvp(lambda c: ad.jvp(lambda x: h(c, x), (X,), (V,))[1], (2.0,), (1.0,))[1]
    assert got == pytest.approx(np.sum(want * V), rel=1e-13)


def test_vectorize_integer_output_carries_nothing_at_second_order():
    def f(x):
        return np.sum(x**3 * np.vectorize(lambda v: int(v > 0.5))(x))

    np.testing.assert_allclose(ad.hessian(f, X), np.diag(6 * X * (X > 0.5)))


def test_vectorize_with_keywords_at_second_order_says_why():
    def f(x):
        return np.sum(np.vectorize(lambda v, p=2.0: v**p)(x, p=3.0))

    with pytest.raises(ad.NoRuleError, match="positional arguments only"):
        ad.hessian(f, X)
    assert ad.gradient(f, X)[0] == pytest.approx(3 * X**2)  # first order still works


# --- a rule's missing derivative at second order ---------------------------------------------

CONSTANT_PARAMETER = [
    ("gammainc", lambda x: sc.gammainc(1.5, x), 1.2),
    ("gammaincc", lambda x: sc.gammaincc(1.5, x), 1.2),
    ("betainc", lambda x: sc.betainc(1.5, 2.5, x), 0.4),
    ("t.cdf", lambda x: st.t.cdf(x, 3.0), 0.3),
    ("chi2.logsf", lambda x: st.chi2.logsf(x, 4.0), 2.5),
    ("gamma.sf", lambda x: st.gamma.sf(x, 2.5), 2.2),
]


@pytest.mark.parametrize("modes", PAIRS)
@pytest.mark.parametrize("name, f, x", CONSTANT_PARAMETER, ids=[c[0] for c in CONSTANT_PARAMETER])
def test_constant_parameter_without_a_derivative_at_second_order(name, f, x, modes):
    """The rule gives no derivative in the shape parameter; it is a constant here,
    so every mode pair gives f'' (checked against differences of f')."""
    h = 1e-5
    d1 = lambda y: ad.gradient(f, y)[0]  # noqa: E731
    want = (d1(x + h) - d1(x - h)) / (2 * h)
    assert second(modes, f, x, 1.0, 1.0) == pytest.approx(want, rel=1e-6)


def test_gammainc_mixed_partial_in_reverse_over_forward():
    """d/da ∂I(a, x)/∂x = -ψ(a) x^(a-1) e^(-x) / Γ(a) + log(x) ...: at x = 1, -ψ(a) e⁻¹/Γ(a).
    (∂I/∂x has a closed form, whose derivative in a needs no missing one.)"""
    a = 1.5
    got = ad.gradient(lambda a: ad.gradient(lambda x: sc.gammainc(a, x), 1.0)[0], a)[0]
    assert got == pytest.approx(-sc.digamma(a) * math.exp(-1.0) / math.gamma(a), rel=1e-12)


def test_a_needed_missing_derivative_still_raises_with_its_reason():
    reason = "derivative with respect to the parameter a is not implemented"
    # the second derivative in the parameter itself
    with pytest.raises(NotImplementedTangentError, match=reason):
        ad.hessian(lambda a: sc.gammainc(a, 1.0), 1.5)
    # a first-order gradient asked for inside, with the constant's entry included
    with pytest.raises(NotImplementedTangentError, match=reason):
        ad.gradient(lambda x: ad.gradient(lambda a, x: sc.gammainc(a, x) * x, 1.5, x)[0], 1.0)
    # forward over reverse along the parameter captured by the inner function: the
    # Hessian-vector product needs ∂I/∂a (it used to give a silent 0.0)
    with pytest.raises(NotImplementedTangentError, match=reason):
        ad.jvp(lambda a: ad.gradient(lambda x: sc.gammainc(a, x), 1.0)[0], (1.5,), (1.0,))
    with pytest.raises(NotImplementedTangentError, match="order"):
        ad.jvp(lambda v: ad.gradient(lambda x: sc.jv(v, x), 1.0)[0], (1.5,), (1.0,))
    # an array parameter, varied
    with pytest.raises(NotImplementedTangentError, match=reason):
        ad.hessian(lambda a: np.sum(sc.gammainc(a, np.array([1.0, 2.0]))), np.array([1.5, 2.5]))


def test_missing_derivative_absorbs_what_is_added_to_it():
    """acc: the sum is as missing as its part, and raises where it is used."""
    from ad.runtime.accumulate import acc
    from rulescore import NotImplementedTangent, not_implemented

    t = not_implemented("the test's missing derivative")
    assert acc(t, 1.0) is t and acc(np.ones(2), t) is t
    s = acc((t, 1.0), (2.0, 3.0))
    assert type(s[0]) is NotImplementedTangent and s[1] == 4.0
    with pytest.raises(NotImplementedTangentError, match="the test's missing derivative"):
        s[0] * 2.0


# --- next(<generator expression>) ------------------------------------------------------------


def first_positive_cubed(xs):
    return next(x for x in xs if x > 0) ** 3


def test_next_of_a_generator_expression_takes_the_first_match():
    xs = [-1.0, 2.0, 3.0]
    assert ad.gradient(first_positive_cubed, xs) == ([None, 12.0, None],)
    assert ad.jvp(first_positive_cubed, (xs,), ([1.0, 1.0, 1.0],)) == (8.0, 12.0)


def test_next_is_lazy():
    """Python stops at the first item: later elements (a log of a negative number, an
    endless iterator) are never evaluated."""

    def f(xs):
        return next(math.log(x) * x for x in xs if x != 2.0)

    xs = [2.0, 3.0, -1.0]
    assert f(xs) == pytest.approx(3 * math.log(3))
    assert ad.gradient(f, xs)[0][1] == pytest.approx(math.log(3) + 1)
    assert ad.jvp(f, (xs,), ([0.0, 1.0, 1.0],))[1] == pytest.approx(math.log(3) + 1)

    def g(a):
        return next(a * k for k in itertools.count() if k * k > 10)

    assert ad.gradient(g, 1.5) == (4.0,)
    assert ad.jvp(g, (1.5,), (1.0,)) == (6.0, 4.0)


def test_next_with_nested_loops_unpacking_and_a_default():
    def nested(rows):
        return next(v * v for row in rows for v in row if v > 1.0)

    rows = [[0.5, 0.7], [0.9, 2.0, 3.0]]
    assert ad.gradient(nested, rows) == ([None, [None, 4.0, None]],)
    assert ad.jvp(nested, (rows,), ([[1.0, 1.0], [1.0, 1.0, 1.0]],))[1] == 4.0

    def pairs(ps):
        return next(a * b for a, b in ps if a > 0)

    assert ad.gradient(pairs, [(-1.0, 2.0), (3.0, 4.0)]) == ([None, (4.0, 3.0)],)

    def with_default(xs, d):
        return next((x for x in xs if x > 100), d * d)

    assert ad.gradient(with_default, [1.0, 2.0], 3.0) == (None, 6.0)
    assert ad.jvp(with_default, ([1.0, 2.0], 3.0), ([1.0, 1.0], 1.0)) == (9.0, 6.0)
    with pytest.raises(StopIteration):
        ad.gradient(lambda xs: next(x for x in xs if x > 100), [1.0])


def test_next_named_by_the_user_is_refused():
    def f(xs):
        def next(it):
            return 1.0

        return next(x for x in xs)

    with pytest.raises(ad.NoRuleError, match="not the builtin"):
        ad.gradient(f, [1.0])


def next_sq(x):
    return next(math.sin(v) * x[0] for v in x if v > 0.5) ** 2


def test_next_at_second_order_every_way():
    x = np.array([0.2, 0.9, 1.3])
    s, c = math.sin(0.9), math.cos(0.9)
    H = np.array(
        [[2 * s * s, 4 * 0.2 * s * c, 0.0], [4 * 0.2 * s * c, 2 * 0.04 * (c * c - s * s), 0.0]]
        + [[0.0, 0.0, 0.0]]
    )
    np.testing.assert_allclose(ad.hessian(next_sq, x), H, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ad.hessian_reverse(next_sq, x), H, rtol=1e-12, atol=1e-15)
    for modes in PAIRS:
        assert second(modes, next_sq, x, U, V) == pytest.approx(U @ H @ V, rel=1e-12)


# --- jacobian, diaghessian, pullback nested; third derivatives ---------------------------------


def sin_times_first(x):
    return np.sin(x) * x[0]


def sum_of_jacobian(x):
    """Σ J = x₀ Σ cos xᵢ + Σ sin xᵢ."""
    return np.sum(ad.jacobian(sin_times_first, x)[0])


def grad_sum_of_jacobian(x):
    g = np.cos(x) - x[0] * np.sin(x)
    g[0] += np.sum(np.cos(x))
    return g


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_jacobian_inside_gradient_and_jvp(mode):
    def f(x):
        return np.sum(ad.jacobian(sin_times_first, x, mode=mode)[0])

    np.testing.assert_allclose(ad.gradient(f, X)[0], grad_sum_of_jacobian(X), rtol=1e-13)
    assert ad.jvp(f, (X,), (V,))[1] == pytest.approx(grad_sum_of_jacobian(X) @ V, rel=1e-13)
    np.testing.assert_allclose(ad.gradient(f, X)[0], fd_gradient(f, X), rtol=1e-7)


def test_jacobian_nested_with_numbers_lists_and_keywords():
    def f(a, s, *, p):
        return a**p * s

    def outer(a, s):
        Ja, Js = ad.jacobian(f, a, s, p=2.0)
        return np.sum(Ja * Ja) + np.sum(Js)  # Σ (2 aᵢ s)² + Σ aᵢ²

    a = np.array([1.0, 2.0])
    ga, gs = ad.gradient(outer, a, 3.0)
    np.testing.assert_allclose(ga, 8 * a * 3.0**2 + 2 * a)
    assert gs == pytest.approx(8 * 3.0 * np.sum(a * a))
    got = ad.jvp(outer, (a, 3.0), (np.array([1.0, 0.0]), 1.0))[1]
    assert got == pytest.approx(ga[0] + gs)
    # J(cumsum) = [[1, 0], [1, 1]]; Σ J * x (x along each row) = 2 x₀ + x₁
    assert ad.gradient(lambda x: np.sum(ad.jacobian(np.cumsum, x)[0] * x), [1.0, 2.0]) == (
        [2.0, 1.0],
    )


def test_withjacobian_inside_gradient():
    def f(x):
        val, (J,) = ad.withjacobian(sin_times_first, x)
        return np.sum(val) + np.sum(J)

    want = grad_sum_of_jacobian(X) + np.cos(X) * X[0]
    want[0] += np.sum(np.sin(X))
    np.testing.assert_allclose(ad.gradient(f, X)[0], want, rtol=1e-13)


def test_diaghessian_inside_gradient_and_jvp():
    def f(x, y):
        return np.sum(x**4) * y

    def outer(x, y):
        dx, dy = ad.diaghessian(f, x, y)  # 12 x² y, 0
        return np.sum(dx) + dy

    gx, gy = ad.gradient(outer, X, 2.0)
    np.testing.assert_allclose(gx, 24 * X * 2.0)
    assert gy == pytest.approx(12 * np.sum(X**2))
    assert ad.jvp(outer, (X, 2.0), (V, 1.0))[1] == pytest.approx(gx @ V + gy)


def test_pullback_three_levels_deep():
    def level3(z):
        return z**4

    def level2(y):
        _, back = ad.pullback(level3, y)
        return back(1.0)[0]  # 4 y³

    def level1(x):
        _, back = ad.pullback(level2, x)
        return back(1.0)[0]  # 12 x²

    assert ad.gradient(level1, 1.5) == (24 * 1.5,)
    assert ad.jvp(level1, (1.5,), (1.0,)) == (12 * 1.5**2, 24 * 1.5)


def quintic(x):
    return np.sum(x**5) + x[0] * x[1] ** 3


def test_third_derivative_through_hessian():
    """Σ H = 20 Σ x³ + 6 x₁² + 6 x₀ x₁; its gradient by reverse and forward mode."""
    want = 60 * X**2
    want[0] += 6 * X[1]
    want[1] += 12 * X[1] + 6 * X[0]
    np.testing.assert_allclose(ad.gradient(lambda x: np.sum(ad.hessian(quintic, x)), X)[0], want)
    got = ad.jvp(lambda x: np.sum(ad.hessian(quintic, x)), (X,), (V,))[1]
    assert got == pytest.approx(want @ V, rel=1e-13)
