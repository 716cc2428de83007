"""Any nesting of modes, to any depth: forward over forward, forward over reverse,
reverse over forward, reverse over reverse, and three levels in all eight orders.

Each level is a call of ``ad.jvp`` or ``ad.gradient`` inside the function the
level above differentiates (through the user's own helpers ``D_f``/``D_r``),
checked against hand-derived values and against finite differences of first
derivatives; and Siskind & Pearlmutter's perturbation-confusion examples, where
an inner function captures the outer variable, in every combination of modes.
"""

import itertools
import math

import numpy as np
import pytest
from ad_testing import D_f, D_r

import ad

# the user's helpers: a directional derivative in each mode, ad_testing.D_f and D_r
MODES = {"f": D_f, "r": D_r}
PAIRS = ["".join(p) for p in itertools.product("fr", repeat=2)]
TRIPLES = ["".join(p) for p in itertools.product("fr", repeat=3)]


def second(modes, h, x, u, v):
    """``uᵀ H v`` by the two levels ``modes`` (outer first)."""
    A, B = (MODES[m] for m in modes)
    return A(lambda y: B(h, y, v), x, u)


def third(modes, h, x, u, v, w):
    """``T[u, v, w]`` by the three levels ``modes``."""
    A, B, C = (MODES[m] for m in modes)
    return A(lambda y: B(lambda z: C(h, z, w), y, v), x, u)


def fd(g, x, v, eps=1e-6):
    """The central difference of ``g`` at ``x`` along ``v``."""
    return (g(x + eps * v) - g(x - eps * v)) / (2 * eps)


def grad(h, x):
    return ad.gradient(h, x)[0]


# --- second order, floats ------------------------------------------------------------------


def h_scalar(x):
    return np.sin(x) * x**3


def h_scalar_d2(x):
    return -math.sin(x) * x**3 + 6 * x**2 * math.cos(x) + 6 * x * math.sin(x)


def h_scalar_d3(x):
    return -math.cos(x) * x**3 - 9 * x**2 * math.sin(x) + 18 * x * math.cos(x) + 6 * math.sin(x)


@pytest.mark.parametrize("modes", PAIRS)
def test_second_derivative_of_a_float_in_every_order(modes):
    x = 0.7
    got = second(modes, h_scalar, x, 1.0, 1.0)
    assert got == pytest.approx(h_scalar_d2(x), rel=1e-12)
    assert got == pytest.approx(fd(lambda y: grad(h_scalar, y), x, 1.0), rel=1e-6)


@pytest.mark.parametrize("modes", TRIPLES)
def test_third_derivative_of_a_float_in_all_eight_orders(modes):
    x = 0.7
    got = third(modes, h_scalar, x, 1.0, 1.0, 1.0)
    assert got == pytest.approx(h_scalar_d3(x), rel=1e-12)
    # finite differences of a first derivative: (f')'' ≈ Δ² f' / ε²
    e = 1e-4
    g = [grad(h_scalar, x + k * e) for k in (-1, 0, 1)]
    assert got == pytest.approx((g[0] - 2 * g[1] + g[2]) / e**2, rel=1e-5)


def h_math(x):  # the math module's functions (scalar_rule rules), not numpy's
    return math.sin(x) * x**3 + math.exp(0.5 * x) - math.log(x)


def h_math_d3(x):
    return h_scalar_d3(x) + 0.125 * math.exp(0.5 * x) - 2.0 / x**3


@pytest.mark.parametrize("modes", TRIPLES)
def test_third_derivative_through_scalar_rules_in_all_eight_orders(modes):
    # forward over forward over forward differentiates scalar_rule's frule body,
    # which wrote into a list (MutationError)
    assert third(modes, h_math, 0.7, 1.0, 1.0, 1.0) == pytest.approx(h_math_d3(0.7), rel=1e-12)


@pytest.mark.parametrize("modes", TRIPLES)
def test_third_derivative_of_a_power(modes):
    assert third(modes, lambda c: c**5, 2.0, 1.0, 1.0, 1.0) == pytest.approx(240.0)


# --- second and third order, arrays ---------------------------------------------------------


def h_array(x):
    return np.sum(np.sin(x) * x[0]) + np.sum(x**3) * 0.5


X = np.array([0.3, -0.4, 0.8])
U = np.array([1.0, 0.5, -2.0])
V = np.array([-0.3, 2.0, 0.7])
W = np.array([0.2, 0.1, 1.5])


def hessian_fd(x):
    return np.column_stack([fd(lambda y: grad(h_array, y), x, e) for e in np.eye(x.size)])


@pytest.mark.parametrize("modes", PAIRS)
def test_second_derivative_of_an_array_function_in_every_order(modes):
    got = second(modes, h_array, X, U, V)
    H = ad.hessian(h_array, X)
    assert got == pytest.approx(U @ H @ V, rel=1e-12)
    assert got == pytest.approx(U @ hessian_fd(X) @ V, rel=1e-6)


@pytest.mark.parametrize("modes", TRIPLES)
def test_third_derivative_of_an_array_function_in_all_eight_orders(modes):
    got = third(modes, h_array, X, U, V, W)
    # ∂/∂u of vᵀ H(x) w, by finite differences of the exact Hessian
    expect = fd(lambda y: V @ ad.hessian(h_array, y) @ W, X, U)
    assert got == pytest.approx(expect, rel=1e-6)


@pytest.mark.parametrize("modes", PAIRS)
def test_hessian_vector_products_as_arrays(modes):
    # The inner level returns an array (a gradient, or a pushforward of one).
    outer, inner = modes

    def g(y):
        if inner == "r":
            return grad(h_array, y)
        return np.array([D_f(h_array, y, e) for e in np.eye(3)])

    if outer == "f":
        Hv = ad.jvp(g, (X,), (V,))[1]
    else:

        def component(i):
            return lambda y: g(y)[i]

        Hv = np.array([ad.gradient(component(i), X)[0] @ V for i in range(3)])
    np.testing.assert_allclose(Hv, ad.hessian(h_array, X) @ V, rtol=1e-12)


# --- perturbation confusion (Siskind & Pearlmutter) -------------------------------------------


@pytest.mark.parametrize("modes", PAIRS)
def test_no_perturbation_confusion(modes):
    A, B = (MODES[m] for m in modes)
    # D(x ↦ x · D(y ↦ x + y)(1))(1) = D(x ↦ x)(1) = 1, not 2
    assert A(lambda x: x * B(lambda y: x + y, 1.0), 1.0) == pytest.approx(1.0)
    # D(x ↦ x · D(y ↦ x · y)(2))(1) = D(x ↦ x²)(1) = 2
    assert A(lambda x: x * B(lambda y: x * y, 2.0), 1.0) == pytest.approx(2.0)
    # D(x ↦ D(y ↦ x · y)(x))(3): the inner derivative is x, its derivative 1
    assert A(lambda x: B(lambda y: x * y, x), 3.0) == pytest.approx(1.0)


@pytest.mark.parametrize("modes", TRIPLES)
def test_no_perturbation_confusion_three_deep(modes):
    A, B, C = (MODES[m] for m in modes)
    # x · y · z, each level differentiating its own variable: ∂³/∂x∂y∂z = 1
    got = A(lambda x: B(lambda y: C(lambda z: x * y * z, 1.0), 1.0), 1.0)
    assert got == pytest.approx(1.0)
    # x ↦ x · D(y ↦ y · D(z ↦ x + y + z)(1))(1): the inner two are 1 and 1
    got = A(lambda x: x * B(lambda y: y * C(lambda z: x + y + z, 1.0), 1.0), 2.0)
    assert got == pytest.approx(1.0)


@pytest.mark.parametrize("modes", PAIRS)
def test_no_perturbation_confusion_on_arrays(modes):
    A, B = (MODES[m] for m in modes)
    ones = np.ones(3)

    # inner: D_v (y ↦ Σ x·y) = Σ x·v; outer: D_u (x ↦ Σ x·v · Σ x) = …
    def f(x):
        return B(lambda y: np.sum(x * y), X, V) * np.sum(x)

    expect = (U @ V) * np.sum(X) + (X @ V) * np.sum(U)
    assert A(f, X, U) == pytest.approx(expect, rel=1e-12)

    # closures over the outer array, through a user helper
    def scaled(a, b):
        return np.sum(np.sin(a) * b)

    got = A(lambda x: B(lambda y: scaled(x, y), ones, V), X, U)
    assert got == pytest.approx(np.sum(np.cos(X) * U * V), rel=1e-12)


def test_gradient_of_a_closure_over_the_outer_variable_returns_its_tangent():
    # reverse over reverse through the inner function's captured variable only
    f = lambda x: ad.gradient(lambda y: np.sin(x) * y, 2.0)[0]  # noqa: E731
    assert ad.gradient(f, 0.4)[0] == pytest.approx(math.cos(0.4))
    assert D_f(f, 0.4) == pytest.approx(math.cos(0.4))


# --- ad's API inside differentiated code -------------------------------------------------------


def test_withgradient_under_jvp():
    def f(x):
        r = ad.withgradient(lambda y: x * y**2, 3.0)
        return r.val + r.grad[0]  # 9x + 6x

    assert ad.jvp(f, (2.0,), (1.0,)) == (pytest.approx(30.0), pytest.approx(15.0))


def test_pullback_inside_jvp_and_gradient():
    def f(x):
        y, back = ad.pullback(lambda a: a**3, x)
        return y + back(1.0)[0]  # x³ + 3x²

    assert D_f(f, 2.0) == pytest.approx(12.0 + 12.0)
    assert D_r(f, 2.0) == pytest.approx(12.0 + 12.0)


def test_pullback_of_a_closure_over_the_outer_variable():
    def f(x):
        _, back = ad.pullback(lambda y: x * y**2, 3.0)
        return back(1.0)[0]  # 6x

    for D in (D_f, D_r):
        assert D(f, 2.0) == pytest.approx(6.0)
    # (6x · x²)'' = 36x: two levels over the one the pullback is taken at
    for modes in PAIRS:
        assert second(modes, lambda x: f(x) * x**2, 1.5, 1.0, 1.0) == pytest.approx(54.0)


# --- the reported bugs -------------------------------------------------------------------------


@pytest.mark.parametrize("modes", PAIRS)
def test_scalar_divided_by_an_array(modes):
    a = np.array([1.0, 2.0, 4.0])
    assert ad.jvp(lambda s: s / a, (2.0,), (1.0,))[1] == pytest.approx(1 / a)
    np.testing.assert_allclose(ad.jvp(lambda x: 2.0 / x, (a,), (a,))[1], -2.0 / a)
    # d/ds D_v (x ↦ Σ s/x) = Σ -v/x²
    got = second(modes, lambda s: D_f(lambda x: np.sum(s / x), a, a), 2.0, 1.0, 1.0)
    assert got == pytest.approx(0.0)
    A, B = (MODES[m] for m in modes)
    assert A(lambda s: B(lambda x: np.sum(s / x), a, a), 2.0) == pytest.approx(np.sum(-1 / a))


@pytest.mark.parametrize("modes", PAIRS)
def test_std_of_one_element_at_second_order(modes):
    x = np.array([3.0])
    assert second(modes, np.std, x, np.ones(1), np.ones(1)) == 0.0
    X = np.array([[3.0, 1.0, 2.0]])  # one row: each column's std is of one element
    for f in (lambda x: np.sum(np.std(x, axis=0)), lambda x: np.sum(x.std(axis=0))):
        assert second(modes, f, X, np.ones((1, 3)), np.ones((1, 3))) == 0.0
    np.testing.assert_array_equal(ad.hessian(np.std, x), [[0.0]])
    np.testing.assert_array_equal(ad.hessian_reverse(np.std, x), [[0.0]])


# --- the higher-order API: hvp, grad, value_and_grad ----------------------------------------------


def test_hvp_matches_the_hessian():
    (Hv,) = ad.hvp(h_array, (X,), (V,))
    np.testing.assert_allclose(Hv, ad.hessian(h_array, X) @ V, rtol=1e-12)
    np.testing.assert_allclose(Hv, hessian_fd(X) @ V, rtol=1e-6)
    # two arguments, one perturbed: H = [[2y, 2x], [2x, 0]]
    assert ad.hvp(lambda x, y: x**2 * y, (3.0, 2.0), (1.0, None)) == (4.0, 6.0)
    assert ad.hvp(lambda x, c=1.0: c * x**3, (2.0,), (1.0,), c=2.0) == (24.0,)


def test_hvp_errors():
    with pytest.raises(ad.NonScalarOutputError, match="hvp"):
        ad.hvp(np.sin, (X,), (V,))
    with pytest.raises(TypeError, match="tuples"):
        ad.hvp(h_array, X, V)
    with pytest.raises(ValueError, match="shape"):
        ad.hvp(h_array, (X,), (np.ones(2),))


def test_grad_and_value_and_grad():
    f = lambda x, y: x**2 * y  # noqa: E731
    assert ad.grad(f)(3.0, 2.0) == 12.0
    assert ad.grad(f, argnums=1)(3.0, 2.0) == 9.0
    assert ad.grad(f, argnums=(1, 0))(3.0, 2.0) == (9.0, 12.0)
    assert ad.grad(f, argnums=-1)(3.0, 2.0) == 9.0
    assert ad.value_and_grad(f)(3.0, 2.0) == (18.0, 12.0)
    assert ad.value_and_grad(f, argnums=(0, 1))(3.0, 2.0) == (18.0, (12.0, 9.0))
    assert ad.value_and_grad(lambda x: (x**2, "aux"))(3.0) == ((9.0, "aux"), 6.0)
    assert ad.grad(lambda w, scale=1.0: scale * w**2)(3.0, scale=2.0) == 12.0
    # nothing is computed for the arguments argnums leaves out (they are captured)
    W, data = np.ones(3), np.arange(3.0)
    np.testing.assert_allclose(ad.grad(lambda w, d: np.sum(w * d) ** 2)(W, data), 6 * data)


def test_grad_nests_with_every_mode():
    g = ad.grad(ad.grad(lambda x: x**5))
    assert g(2.0) == pytest.approx(160.0)
    assert ad.grad(g)(2.0) == pytest.approx(240.0)
    assert ad.jvp(g, (2.0,), (1.0,))[1] == pytest.approx(240.0)
    assert ad.gradient(lambda x: ad.hvp(lambda y: y**5, (x,), (1.0,))[0], 2.0)[0] == 240.0
    # argnums inside a differentiated function: the other argument is a closure's
    f = lambda x: ad.grad(lambda y, z: y * z * x, argnums=1)(x, 2.0)  # noqa: E731
    assert ad.grad(f)(3.0) == pytest.approx(6.0)
    assert D_f(f, 3.0) == pytest.approx(6.0)


def test_grad_gives_zero_where_no_derivative_flows_so_it_nests_to_any_order():
    linear = lambda x: 3.0 * x  # noqa: E731
    assert ad.grad(ad.grad(linear))(2.0) == 0.0
    assert type(ad.grad(ad.grad(linear))(2.0)) is float
    assert ad.grad(ad.grad(ad.grad(linear)))(2.0) == 0.0
    cube = lambda x: x**3  # noqa: E731
    assert ad.grad(ad.grad(ad.grad(cube)))(2.0) == pytest.approx(6.0)
    assert ad.grad(ad.grad(ad.grad(ad.grad(cube))))(2.0) == 0.0
    assert ad.jvp(ad.grad(ad.grad(linear)), (2.0,), (1.0,)) == (0.0, 0.0)
    s = lambda x: np.sum(2.0 * x)  # noqa: E731
    np.testing.assert_array_equal(ad.grad(lambda x: np.sum(ad.grad(s)(x)))(np.ones(3)), 0.0)
    z = ad.grad(lambda x: 1.0)(np.ones(2, dtype=np.float32))
    assert z.dtype == np.float32 and not z.any()
    assert ad.grad(lambda x: 1.0)(1j) == 0j
    for t in (np.float64, np.float32):
        zero = ad.grad(lambda x: 1.0)(t(1.5))
        assert type(zero) is t and zero == 0
    # gradient stays Zygote's: None; an integer used as a count stays None in grad too
    assert ad.gradient(lambda x: 1.0, 2.0) == (None,)
    assert ad.value_and_grad(lambda x, n: 2.0 * n, argnums=(0, 1))(1.5, 3) == (6.0, (0.0, 2.0))
    assert ad.grad(lambda x, n: x * 2.0, argnums=1)(1.5, 3) is None


def test_grad_errors():
    with pytest.raises(TypeError, match="argnums"):
        ad.grad(lambda x: x, argnums="0")
    with pytest.raises(IndexError, match="argnums=2"):
        ad.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)
    with pytest.raises(ValueError, match="twice"):
        ad.grad(lambda x, y: x * y, argnums=(0, 0))(1.0, 2.0)


def test_gradient_without_a_point_names_grad():
    with pytest.raises(TypeError, match=r"ad\.grad\(f\)\(x\)"):
        ad.gradient(lambda x: x**2)
    with pytest.raises(TypeError, match=r"ad\.grad"):
        ad.withgradient(h_array)
    assert ad.gradient(lambda: 1.0) == ()  # a function of no arguments: nothing to return


@pytest.mark.parametrize("modes", PAIRS)
def test_rules_with_tuple_outputs_and_keyword_methods_in_every_order(modes):
    # qr's and polar's frules build Tangent objects; x.sum(axis=0) is a bound method
    # with keywords: each is followed through both levels
    import cmath

    def f(a):
        q, r = np.linalg.qr(a)
        return np.sum(q * a) + np.sum(r**2) + np.sum(a.sum(axis=0) ** 3)

    A = np.array([[1.0, 0.5], [0.2, 2.0]])
    dA, eA = np.array([[0.3, -1.0], [0.5, 0.2]]), np.array([[1.0, 0.0], [-0.4, 0.7]])
    expect = fd(lambda y: np.sum(grad(f, y) * eA), A, dA)
    assert second(modes, f, A, dA, eA) == pytest.approx(expect, rel=1e-6)

    def g(x):
        r, phi = cmath.polar(complex(x, 0.3))
        return r * phi

    assert second(modes, g, 0.7, 1.0, 1.0) == pytest.approx(
        fd(lambda y: grad(g, y), 0.7, 1.0), rel=1e-6
    )


def test_hvp_benchmark_runs_and_checks_against_differences(monkeypatch, capsys):
    # ``python benchmarks/run.py --hvp``, tiny sizes and no time to speak of
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import hvp

    assert hvp.main(["--small", "--repeats", "1", "--batch-time", "0.0005"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in hvp.ARRAY_WORKLOADS) and "FAILED" not in out


# --- hvp and hessian inside differentiated code ------------------------------------------------


def test_hvp_inside_gradient_and_jvp():
    u = np.array([0.2, 1.0, -0.5])

    def g(x):
        return np.sum(ad.hvp(h_array, (x,), (V,))[0] * u)  # uᵀ H(x) V

    expect = np.array([fd(g, X, e) for e in np.eye(3)])
    np.testing.assert_allclose(ad.gradient(g, X)[0], expect, rtol=1e-6)
    assert D_f(g, X, U) == pytest.approx(expect @ U, rel=1e-6)

    def g2(x):  # the direction depends on x too
        return np.sum(ad.hvp(h_array, (x,), (x,))[0])

    expect2 = np.array([fd(g2, X, e) for e in np.eye(3)])
    np.testing.assert_allclose(ad.gradient(g2, X)[0], expect2, rtol=1e-6)
    assert D_f(g2, X, U) == pytest.approx(expect2 @ U, rel=1e-6)


def test_hessian_inside_gradient_and_jvp():
    def g(x):
        return np.trace(ad.hessian(h_array, x))

    expect = np.array([fd(g, X, e) for e in np.eye(3)])
    np.testing.assert_allclose(ad.gradient(g, X)[0], expect, rtol=1e-6)
    np.testing.assert_allclose(
        ad.jvp(lambda x: ad.hessian(h_array, x), (X,), (U,))[1],
        fd(lambda y: ad.hessian(h_array, y), X, U),
        rtol=1e-6,
        atol=1e-9,
    )
    # through a captured variable: d/ds tr H(s·Σy³) = 6 Σx
    k = lambda s: np.trace(ad.hessian(lambda y: s * np.sum(y**3), X))  # noqa: E731
    assert ad.gradient(k, 2.0)[0] == pytest.approx(6 * np.sum(X))
    assert D_f(k, 2.0) == pytest.approx(6 * np.sum(X))
    assert ad.gradient(lambda x: ad.hessian(lambda y: y**4, x), 2.0)[0] == pytest.approx(48.0)
