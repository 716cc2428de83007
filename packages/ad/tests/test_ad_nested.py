"""Nested differentiation and second derivatives: gradient of a gradient, jvp inside
gradient (reverse over forward), gradient inside jvp (forward over reverse),
hessian, hessian_reverse and diaghessian — against hand-derived values and
against central differences of the (first-order, separately tested) gradient."""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
import pytest
from ad_testing import fd_hessian

import ad
from ad.errors import NonScalarOutputError, NoRuleError


def grad(f, x):
    return ad.gradient(f, x)[0]


# --- nested gradients ---------------------------------------------------------------


@pytest.mark.parametrize("x", [-2.0, 0.0, 1.0, 3.5])
def test_perturbation_confusion_is_avoided(x):
    # d/dx (x * d/dy (x + y)) = d/dx (x * 1) = 1; confusing the two
    # perturbations would give 2.
    assert ad.gradient(lambda x: x * ad.gradient(lambda y: x + y, 1.0)[0], x) == (1.0,)


def test_gradient_of_gradient_hand_derived():
    assert grad(lambda x: grad(lambda y: y**3, x), 2.0) == pytest.approx(12.0)
    d2 = grad(lambda x: grad(lambda y: math.sin(y) * y, x), 2.0)
    assert d2 == pytest.approx(-math.sin(2.0) * 2.0 + 2 * math.cos(2.0))


def test_gradient_through_a_captured_variable_of_the_inner_function():
    # d/dx [ d/dy (x * y**2) at y = 3 ] = d/dx (6x) = 6
    assert grad(lambda x: grad(lambda y: x * y**2, 3.0), 5.0) == pytest.approx(6.0)
    # d/dx [ x * d/dy exp(x*y) at y = x ] = d/dx (x² exp(x²)) = (2x + 2x³) exp(x²)
    x = 0.7
    expected = (2 * x + 2 * x**3) * math.exp(x * x)
    assert grad(lambda x: x * grad(lambda y: math.exp(x * y), x), x) == pytest.approx(expected)


def test_gradient_of_gradient_with_arrays_and_control_flow():
    def f(w):
        s = 0.0
        for i in range(w.shape[0]):
            if w[i] > 0:
                s = s + w[i] ** 3
            else:
                s = s + np.exp(w[i])
        return s

    w = np.array([1.0, -0.5, 2.0])
    # g(w) = sum of ∇f(w) = sum(3w² or exp(w)); ∇g = 6w or exp(w)
    got = ad.gradient(lambda w: np.sum(ad.gradient(f, w)[0]), w)[0]
    np.testing.assert_allclose(got, [6.0, math.exp(-0.5), 12.0])


def test_withgradient_inside_gradient_uses_value_and_gradient():
    # h(x) = f(x) + f'(x) with f = x**4: h' = 4x³ + 12x²
    def h(x):
        v, (g,) = ad.withgradient(lambda y: y**4, x)
        return v + g

    assert grad(h, 2.0) == pytest.approx(4 * 8 + 12 * 4)


def test_jvp_inside_gradient_is_reverse_over_forward():
    assert grad(lambda x: ad.jvp(lambda y: y**3, (x,), (1.0,))[1], 2.0) == pytest.approx(12.0)
    v = np.array([1.0, 2.0])

    def f(x):
        return ad.jvp(lambda y: np.sum(np.sin(y) * y[0]), (x,), (v,))[1]

    x = np.array([0.3, -0.4])
    np.testing.assert_allclose(
        ad.gradient(f, x)[0], fd_hessian(lambda y: np.sum(np.sin(y) * y[0]), x) @ v, rtol=1e-6
    )


def test_gradient_inside_jvp_is_forward_over_reverse():
    y, ẏ = ad.jvp(lambda x: grad(lambda y: y**3, x), (2.0,), (1.0,))
    assert (y, ẏ) == (pytest.approx(12.0), pytest.approx(12.0))


def test_third_derivatives_nest_reverse_mode_three_deep():
    # A third level differentiates the reverse pass of a second derivative
    # (every combination of modes: test_ad_any_order).
    assert grad(lambda a: grad(lambda b: grad(lambda c: c**5, b), a), 2.0) == pytest.approx(240.0)


# --- hessian, hessian_reverse, diaghessian: the seed examples ----------------------------


def test_hessian_seed_examples():
    np.testing.assert_array_equal(
        ad.hessian(lambda x: x[0] * x[1], np.array([1.0, 2.0])), [[0.0, 1.0], [1.0, 0.0]]
    )
    H = ad.hessian(lambda x: np.sum(x**3), np.array([[1.0, 2.0], [3.0, 4.0]]))
    # C order (DESIGN's pinned decision): x.flat = 1, 2, 3, 4 → diagonal 6x
    np.testing.assert_allclose(H, np.diag([6.0, 12.0, 18.0, 24.0]))
    assert ad.hessian(math.sin, math.pi / 2) == pytest.approx(-1.0)
    assert ad.hessian(np.sin, math.pi / 2) == pytest.approx(-1.0)


def test_diaghessian_seed_example():
    d = ad.diaghessian(lambda x, y: math.sin(x * y), 1.0, 2.0)
    assert d == (pytest.approx(-4 * math.sin(2.0)), pytest.approx(-math.sin(2.0)))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def logsumexp_mlp(w):
    h = np.tanh(w[:2] * 1.5 + 0.3)
    return np.log(np.sum(np.exp(h * w[2:])))


def quadratic_form(x):
    A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 4.0]])
    return x @ A @ x / 2.0


def branchy(x):
    s = 0.0
    for i in range(3):
        if x[i] > 0:
            s = s + x[i] ** 3
        else:
            s = s - np.exp(x[i])
    return s * x[0]


def scalar_math(x):
    return math.exp(x[0]) * math.cos(x[1]) + math.log(x[2]) * x[0] ** 2 / x[2]


CASES = [
    ("rosenbrock", rosenbrock, np.array([1.0, 2.0, 0.5, -0.3])),
    ("logsumexp_mlp", logsumexp_mlp, np.array([0.1, -0.2, 0.3, 0.4])),
    ("quadratic_form", quadratic_form, np.array([1.0, -2.0, 0.5])),
    ("branchy", branchy, np.array([1.0, -1.0, 2.0])),
    ("scalar_math", scalar_math, np.array([0.3, 0.7, 1.5])),
]


@pytest.mark.parametrize(("f", "x"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hessians_match_finite_differences_of_the_gradient(f, x):
    H = ad.hessian(f, x)
    Hr = ad.hessian_reverse(f, x)
    assert H.shape == (x.size, x.size)
    np.testing.assert_allclose(H, fd_hessian(f, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Hr, H, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ad.diaghessian(f, x)[0], np.diag(H), rtol=1e-12, atol=1e-12)


def test_quadratic_form_hessian_is_exact():
    A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 4.0]])
    np.testing.assert_allclose(ad.hessian(quadratic_form, np.ones(3)), A, rtol=1e-15)


def test_diaghessian_gives_each_argument_its_shape():
    d = ad.diaghessian(lambda a, s, name: np.sum(a**3) * s**2, np.ones((2, 2)), 3.0, "x")
    np.testing.assert_allclose(d[0], np.full((2, 2), 6.0 * 9.0))
    assert d[1] == pytest.approx(2.0 * 4.0)
    assert d[2] is None


# --- errors ---------------------------------------------------------------------------


def test_hessian_of_a_non_scalar_function_is_an_error():
    with pytest.raises(NonScalarOutputError, match=r"hessian\(<lambda>.*real number"):
        ad.hessian(lambda x: x * 2.0, np.array([1.0, 2.0]))
    with pytest.raises(NonScalarOutputError, match="diaghessian"):
        ad.diaghessian(lambda x: np.array([x, x]), 1.0)
    # a tuple is (loss, aux), as hvp and withgradient read it: its first element
    assert ad.diaghessian(lambda x: (x**3, x), 2.0) == (12.0,)


def test_hessian_of_a_non_numeric_argument_is_an_error():
    with pytest.raises(TypeError, match="hessian needs a number or an array"):
        ad.hessian(lambda s: 1.0, "abc")


@pytest.mark.parametrize("which", [ad.hessian, ad.hessian_reverse])
@pytest.mark.parametrize("x", [(1.5, 0.7), (np.array([1.0, 2.0]), np.array([3.0, 4.0]))])
def test_hessian_of_a_tuple_is_refused_not_none(which, x):
    # jacobian gives None for a tuple argument; hessian returned that None silently
    def f(p):
        return np.sum(p[0] ** 2 * p[1] ** 3)

    with pytest.raises(TypeError, match=r"got a tuple\.\nTo fix: pass np.array\(x\) or list\(x\)"):
        which(f, x)
    (h,) = ad.hvp(f, (x,), ((np.ones_like(x[0]), 0 * x[1]),))  # what the message offers
    assert h is not None


def test_inner_functions_with_defaults_keywords_and_star_args():
    def inner(y, scale=2.0, *rest, power=2):
        return scale * y**power + sum(rest)

    # d/dx [∂/∂y inner(y) at y = x] for each calling convention
    assert grad(lambda x: grad(inner, x), 1.5) == pytest.approx(4.0)  # 2 * 2
    assert grad(lambda x: grad(lambda y: inner(y, 3.0, power=3), x), 2.0) == pytest.approx(36.0)
    assert grad(lambda x: grad(lambda y: inner(y, x, y, y), 2.0), 1.0) == pytest.approx(4.0)
    # captured and keyword: d/dx [∂/∂y (x * y**3) at y = x] = d/dx 3x³ = 9x²
    assert grad(lambda x: grad(lambda y: inner(y, scale=x, power=3), x), 2.0) == pytest.approx(36.0)


def test_star_star_kwargs_in_a_nested_call():
    def inner(y, scale):
        return scale * y**2

    opts = {"scale": 2.0}
    assert grad(lambda x: grad(lambda y: inner(y, **opts), x), 1.0) == pytest.approx(4.0)
    # the keyword's value depends on x: d/dx [∂/∂y (x y²) at y = 1] = d/dx 2x = 2
    assert grad(lambda x: grad(lambda y: inner(y, **{"scale": x}), 1.0), 3.0) == pytest.approx(2.0)


def test_newton_example_converges_to_a_stationary_point():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[3] / "examples" / "newton.py"
    spec = importlib.util.spec_from_file_location("newton_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 3))
    y = (rng.random(50) < 0.5).astype(float)
    w, history = module.newton(X, y, steps=6)
    assert all(b <= a + 1e-15 for a, b in itertools.pairwise(history))
    g = ad.gradient(lambda w: module.negative_log_likelihood(w, X, y), w)[0]
    assert np.linalg.norm(g) < 1e-10


def test_keyword_argument_carrying_a_derivative_in_the_inner_call():
    def inner(y, scale=1.0):
        return scale * y**2

    # d/dx [∂/∂y (y · y²) at y = x] = d/dx 3x² = 6x
    assert grad(lambda x: grad(lambda y: inner(y, scale=y), x), 2.0) == pytest.approx(12.0)


@dataclass
class _Pair:
    a: float
    b: float


class _Scaled:
    def __init__(self, s):
        self.s = s

    def __call__(self, y):
        return self.s * y**3


def test_records_and_callable_objects_in_the_inner_function():
    # d/dx [∂/∂y (y · y²) at y = x] = 6x, through a dataclass built and read inside
    assert grad(lambda x: grad(lambda y: (lambda p: p.a * p.b**2)(_Pair(y, y)), x), 2.0) == (
        pytest.approx(12.0)
    )
    # a callable object: d/dx [∂/∂y (2 y³) at y = x] = 12x
    assert grad(lambda x: grad(_Scaled(2.0), x), 1.5) == pytest.approx(18.0)


def test_unsupported_nested_calls_name_the_call_site_and_a_fix():
    def inner(y, **kw):
        return kw["s"] * y**2

    # a keyword landing in **kw, carrying the derivative, is followed: d²/dy² y³ = 6y
    assert grad(lambda x: grad(lambda y: inner(y, s=y), x), 1.0) == pytest.approx(6.0)
    # a partial is the call it makes (d/dx [∂/∂y 2y² at y = x] = 4; more cases in
    # test_ad_nested_partials.py)
    scaled = functools.partial(lambda s, y: s * y**2, 2.0)
    assert grad(lambda x: grad(lambda y: scaled(y), x), 1.0) == pytest.approx(4.0)
    # a function with **kwargs under reverse over reverse: refused, naming the line
    with pytest.raises(NoRuleError, match=r"inner.*test_ad_nested\.py:\d+.*\n.*To fix"):
        ad.hessian_reverse(lambda y: inner(y, s=y), 1.0)


def _unpacked_and_indexed(v):
    p = [v[0], v[1], v[2]]
    a, b, c = p  # the list's cotangent built by its unpacking and by its reads
    return a * p[1] + np.sin(c * p[0]) * b


@pytest.mark.parametrize("x", [np.array([0.3, -0.5, 1.2]), np.array([-1.1, 0.4, 0.25])])
def test_second_order_of_a_list_unpacked_and_read_by_index(x):
    # forward over reverse added a Tangent[list] and a Tangent[tuple]: TypeError
    want = fd_hessian(_unpacked_and_indexed, x)
    np.testing.assert_allclose(ad.hessian(_unpacked_and_indexed, x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        ad.hessian_reverse(_unpacked_and_indexed, x), want, rtol=1e-5, atol=1e-6
    )
    e0 = np.zeros_like(x)
    e0.flat[0] = 1.0
    (hv,) = ad.hvp(_unpacked_and_indexed, (x,), (e0,))
    np.testing.assert_allclose(hv, want[:, 0], rtol=1e-5, atol=1e-6)
    floats = ad.hvp(lambda a, b, c: _unpacked_and_indexed((a, b, c)), tuple(x), (1.0, 0.0, 0.0))
    np.testing.assert_allclose(floats, want[:, 0], rtol=1e-5, atol=1e-6)
