"""Refusals and unclear errors an outside tester found (issues 18/20), each now a
derivative checked against central finite differences (and hand-derived values),
in reverse and forward mode and at the orders involved, or a clear message:

1. a lambda in a comprehension reading the loop variable (its closure holds the
   variable under the comprehension's generated name);
2. ``enumerate(zip(...))`` and other iterators of iterators, forward mode and
   reverse over reverse; ``enumerate(xs, 1)`` in reverse mode;
3. unhashable callable objects (a dataclass with ``__call__``) at second order;
4. a field of the Tangent an inner gradient returns, read under an outer ``jvp``;
5. ``d.get(k, None)`` (``np.average(..., weights=w)``) at second order;
6. ``hessian`` of a list with an unused entry; ``diaghessian`` likewise;
7. ``hessian`` of ``(loss, aux)``, of several arguments, of a complex array;
   ``hessian_reverse`` refusals naming the user's line and ``ad.hessian``;
   ``hessian_reverse`` differentiated again.
"""

# ruff: noqa: RUF007 - zip(x, x[1:]) is the spelling under test

from dataclasses import dataclass

import numpy as np
import pytest
from ad_testing import fd_hessian

import ad

RTOL = 1e-6
ATOL = 1e-8


def fd(f, x, v, h=1e-6):
    """Central difference of ``f`` at ``x`` along ``v``."""
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def fd2(f, x, v, h=1e-4):
    """Second central difference of ``f`` at ``x`` along ``v``."""
    return (f(x + h * v) - 2 * f(x) + f(x - h * v)) / h**2


def G(f, x):
    return ad.gradient(f, x)[0]


# --- 1. lambdas in comprehensions ------------------------------------------------------


def comp_list(x):
    return sum([(lambda y: x * y * k)(1.0) for k in range(3)])


def comp_gen(x):
    return sum((lambda: k * x**2)() for k in range(1, 4))


def comp_nested(x):
    return sum([[(lambda: x * k * j)() for k in range(3)][-1] for j in range(3)])


def comp_param_same_name(x):
    return sum([(lambda k: x * k)(k) + (lambda: k * x**3)() for k in range(3)])


@pytest.mark.parametrize(
    "f, exact",
    [
        (comp_list, lambda x: 3.0),
        (comp_gen, lambda x: 12.0 * x),
        (comp_nested, lambda x: 6.0),
        (comp_param_same_name, lambda x: 3.0 + 9.0 * x**2),
    ],
)
@pytest.mark.parametrize("x", [1.3, -0.4])
def test_lambda_in_comprehension_reads_loop_variable(f, exact, x):
    expected = fd(f, x, 1.0)
    assert ad.gradient(f, x)[0] == pytest.approx(expected, rel=RTOL)
    assert ad.gradient(f, x)[0] == pytest.approx(exact(x), rel=1e-12)
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(exact(x), rel=1e-12)
    assert ad.hessian(f, x) == pytest.approx(fd2(f, x, 1.0), rel=1e-4, abs=1e-5)


def u(z):
    return np.sin(z[0]) * z[1] ** 3


def laplacian(x):
    return sum(ad.jvp(lambda z: ad.jvp(u, (z,), (e,))[1], (x,), (e,))[1] for e in np.eye(2))  # noqa: B023


def test_pinn_laplacian_over_generator_of_lambdas():
    x = np.array([0.3, 0.7])
    exact = -np.sin(0.3) * 0.7**3 + np.sin(0.3) * 6 * 0.7
    assert laplacian(x) == pytest.approx(exact, rel=1e-12)
    expected = [fd(laplacian, x, e) for e in np.eye(2)]
    np.testing.assert_allclose(ad.gradient(laplacian, x)[0], expected, rtol=RTOL)
    for e in np.eye(2):
        assert ad.jvp(laplacian, (x,), (e,))[1] == pytest.approx(fd(laplacian, x, e), rel=RTOL)


# --- 2. iterators of iterators ---------------------------------------------------------


def enum_zip(x):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, x[1:])):
        s += (i + 1) * a * b**2
    return s


def zip_enum(x):
    s = 0.0
    for (i, a), b in zip(enumerate(list(x)), x[1:]):
        s = s + (i + 1) * a * np.sin(b)
    return s


def enum_reversed_start(x):
    s = 0.0
    for i, a in enumerate(reversed(x), 1):
        s = s + i * a**3
    return s


def enum_start(x):
    s = 0.0
    for i, a in enumerate(x, 2):
        s = s + i * a**3
    return s


def zip_zip(x):
    return sum(a * b * c for a, (b, c) in zip(x, zip(x[1:], x[2:])))


def enum_iter(x):
    s = 0.0
    for i, a in enumerate(iter(x)):
        s += i * a**2
    return s


ITERATOR_PROGRAMS = [enum_zip, zip_enum, enum_reversed_start, enum_start, zip_zip, enum_iter]


@pytest.mark.parametrize("f", ITERATOR_PROGRAMS)
@pytest.mark.parametrize("n", [3, 5])
def test_iterators_of_iterators_all_modes(f, n):
    rng = np.random.default_rng(n)
    x, v = rng.normal(size=n), rng.normal(size=n)
    d1 = fd(f, x, v)
    assert ad.jvp(f, (x,), (v,))[1] == pytest.approx(d1, rel=RTOL, abs=ATOL)
    assert G(f, x) @ v == pytest.approx(d1, rel=RTOL, abs=ATOL)
    H = fd_hessian(f, x)
    np.testing.assert_allclose(ad.hessian(f, x), H, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ad.hessian_reverse(f, x), H, rtol=1e-4, atol=1e-5)
    jj = ad.jvp(lambda y: ad.jvp(f, (y,), (v,))[1], (x,), (v,))[1]
    assert jj == pytest.approx(v @ H @ v, rel=1e-4, abs=1e-5)


def test_enumerate_zip_third_order_hand_derived():
    x = np.array([0.4, -0.7, 1.1])
    v = np.array([0.3, 0.2, -0.8])

    def g3(t):
        return G(lambda s: G(lambda r: enum_zip(x + (t + s + r) * v), 0.0), 0.0)

    exact = 6 * (v[0] * v[1] ** 2 + 2 * v[1] * v[2] ** 2)
    assert G(g3, 0.0) == pytest.approx(exact, rel=1e-10)


def test_zip_over_a_generator_stays_lazy():
    """An iterator no frule made (a generator) is not read into a list."""

    def f(x):
        s = 0.0
        for a, b in zip(x, (k * 1.0 for k in range(100000000))):
            s = s + a * b
        return s

    x, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    assert ad.jvp(f, (x,), (v,))[1] == pytest.approx(v @ np.arange(3.0))


# --- 3. unhashable callable objects ----------------------------------------------------


@dataclass
class Layer:
    w: float

    def __call__(self, h):
        return np.tanh(self.w * h)


class Scaled:
    def __init__(self, c):
        self.c = c

    def __eq__(self, other):
        return isinstance(other, Scaled) and other.c == self.c

    def __call__(self, h):
        return self.c * h**3


def through_layer(x):
    return np.sum(Layer(0.5)(x) ** 2)


def through_scaled(x):
    return np.sum(Scaled(1.5)(x) * x)


def through_param(x):
    return np.sum(Layer(x[0])(x) ** 2) if np.ndim(x) else Layer(x)(x) ** 2


@pytest.mark.parametrize("f", [through_layer, through_scaled, through_param])
@pytest.mark.parametrize("x", [0.8, np.array([0.8, -0.3])])
def test_unhashable_callable_objects_second_order(f, x):
    H = fd_hessian(f, x) if np.ndim(x) else fd2(f, x, 1.0)
    tol = {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(ad.hessian(f, x), H, **tol)
    if f is through_param:  # reverse over reverse does not follow a constructor
        with pytest.raises(ad.NoRuleError, match="To fix: use ad.hessian"):
            ad.hessian_reverse(f, x)
    else:
        np.testing.assert_allclose(ad.hessian_reverse(f, x), H, **tol)
    v = np.ones_like(x) if np.ndim(x) else 1.0
    np.testing.assert_allclose(ad.hvp(f, (x,), (v,))[0], H @ v if np.ndim(x) else H, **tol)
    if f is through_param:  # forward over forward does not follow a constructor
        with pytest.raises(ad.NoRuleError, match="To fix: take this derivative with reverse"):
            ad.jvp(lambda y: ad.jvp(f, (y,), (v,))[1], (x,), (v,))
    else:
        jj = ad.jvp(lambda y: ad.jvp(f, (y,), (v,))[1], (x,), (v,))[1]
        np.testing.assert_allclose(jj, v @ H @ v if np.ndim(x) else H, **tol)
    gg = ad.jacobian(lambda y: G(f, y), x)[0]
    np.testing.assert_allclose(gg, H, **tol)


# --- 4. a Tangent's field under an outer jvp -------------------------------------------


@dataclass
class Params:
    w: float
    b: float


def loss(p):
    return p.w * p.b**3


@pytest.mark.parametrize("w, b", [(2.0, 0.5), (-1.5, 1.3)])
def test_tangent_field_under_outer_jvp(w, b):
    def db(b):
        return ad.gradient(loss, Params(w, b))[0].b

    def dw(b):
        return ad.gradient(loss, Params(w, b))[0].w

    assert ad.jvp(db, (b,), (1.0,))[1] == pytest.approx(6 * w * b, rel=1e-12)
    assert ad.jvp(db, (b,), (1.0,))[1] == pytest.approx(fd(db, b, 1.0), rel=RTOL)
    assert ad.jvp(dw, (b,), (1.0,))[1] == pytest.approx(3 * b**2, rel=1e-12)


# --- 5. np.average with constant weights, dict.get with a None default -----------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 4])
def test_average_constant_weights_second_order(dtype, n):
    w = np.arange(1.0, n + 1).astype(dtype)
    x = np.linspace(-0.5, 0.7, n).astype(dtype)

    def f(x):
        return np.average(x**3, weights=w)

    exact = np.diag(6 * w * x / w.sum()).astype(np.float64)
    tol = {"rtol": 1e-5 if dtype is np.float64 else 1e-4, "atol": 1e-6}
    np.testing.assert_allclose(ad.hessian(f, x), exact, **tol)
    np.testing.assert_allclose(ad.hessian_reverse(f, x), exact, **tol)
    np.testing.assert_allclose(ad.gradient(lambda z: G(f, z)[0], x)[0], exact[0], **tol)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(
        fd_hessian(lambda z: np.average(z**3, weights=w), xd), exact, rtol=1e-4, atol=1e-5
    )


def test_dict_get_with_explicit_none_default():
    def f(x, d):
        return x * (d.get("a", None) or 1.0) + x**2 * d.get("b", None) ** 2

    d = {"b": 3.0}
    h = ad.hessian_reverse(lambda x: f(x, d), 0.5)
    assert h == pytest.approx(18.0)
    assert G(lambda t: G(lambda x: f(x, {"b": t}), 0.5), 3.0) == pytest.approx(4 * 0.5 * 3.0)
    assert ad.jvp(lambda t: G(lambda x: f(x, {"b": t}), 0.5), (3.0,), (1.0,))[1] == pytest.approx(
        6.0
    )


# --- 6. hessian of lists ---------------------------------------------------------------


@pytest.mark.parametrize("hess", [ad.hessian, ad.hessian_reverse])
def test_hessian_of_list_with_unused_entry(hess):
    def f(v):
        return v[0] * v[2] ** 2

    x = [1.0, 2.0, 3.0]
    expected = [[0, 0, 6], [0, 0, 0], [6, 0, 2]]
    np.testing.assert_allclose(hess(f, x), expected)
    np.testing.assert_allclose(hess(f, x), fd_hessian(lambda a: f(list(a)), np.array(x)), atol=1e-5)

    def g(v):
        return v[0][0] * v[1][1] ** 2

    nested = [[1.0, 2.0], [3.0, 4.0]]
    H = np.zeros((4, 4))
    H[0, 3] = H[3, 0] = 8.0
    H[3, 3] = 2.0
    np.testing.assert_allclose(hess(g, nested), H)
    assert x == [1.0, 2.0, 3.0]


def test_diaghessian_of_list_with_unused_entry_is_zero_not_nan():
    d = ad.diaghessian(lambda v: v[0] * v[2] ** 2, [1.0, 2.0, 3.0])[0]
    np.testing.assert_allclose(d, [0.0, 0.0, 2.0])


# --- 7. hessian's arguments and outputs; hessian_reverse's refusals --------------------


def loss_aux(x):
    return np.sum(x**3), {"note": "aux"}


@pytest.mark.parametrize("hess", [ad.hessian, ad.hessian_reverse])
def test_hessian_of_loss_and_aux_takes_the_loss(hess):
    x = np.array([0.5, -0.3])
    np.testing.assert_allclose(hess(loss_aux, x), np.diag(6 * x))
    assert hess(lambda t: (t**3, "aux"), 2.0) == pytest.approx(12.0)
    np.testing.assert_allclose(ad.diaghessian(loss_aux, x)[0], 6 * x)


@pytest.mark.parametrize("hess", [ad.hessian, ad.hessian_reverse])
def test_hessian_of_several_arguments_says_what_to_do(hess):
    def f(x, y):
        return np.sum(x**2 * y)

    with pytest.raises(TypeError, match=r"differentiates one argument, got 2[\s\S]*closure"):
        hess(f, np.ones(2), np.ones(2))


def test_hessian_of_complex_array_says_what_to_do():
    def f(z):
        return np.sum(np.abs(z**2 + 1j * z) ** 2)

    with pytest.raises(TypeError, match=r"complex array[\s\S]*real coordinates[\s\S]*ad.hvp"):
        ad.hessian(f, np.array([0.3 + 0.5j, -0.7 + 0.2j]))
    assert ad.hessian(lambda z: f(np.array([z])), 0.3 + 0.5j) == pytest.approx(6.08 + 2.4j)


def test_hessian_reverse_through_zip_loop():
    def f(x):
        s = 0.0
        for a, b in zip(x, x[1:]):
            s += a * b**2
        return s

    x = np.array([0.4, -0.7, 1.1])
    np.testing.assert_allclose(ad.hessian_reverse(f, x), ad.hessian(f, x), atol=1e-14)


def inner(w):
    return np.sum(np.tanh(w) ** 2)


def maml(w):
    return inner(w - 0.1 * ad.grad(inner)(w))


def test_hessian_reverse_refusal_names_user_line_and_hessian():
    w = np.array([0.3, -0.2])
    with pytest.raises(ad.NoRuleError) as info:
        ad.hessian_reverse(maml, w)
    msg = str(info.value)
    assert f"{__file__}:" in msg
    assert "To fix: use ad.hessian (forward over reverse)" in msg
    assert "positional parameters only" not in msg
    np.testing.assert_allclose(ad.hessian(maml, w), fd_hessian(maml, w), rtol=1e-4, atol=1e-6)


def test_hessian_reverse_refusal_in_a_rule_pullback():
    pytest.importorskip("scipy")
    import scipy.linalg as sla

    def f(x):
        return np.sum(np.block([[x, x.T], [x @ x, np.eye(2)]]) ** 3)

    x = np.array([[0.5, 1.2], [2.0, -0.3]])
    with pytest.raises(ad.NoRuleError) as info:
        ad.hessian_reverse(f, x)
    msg = str(info.value)
    assert f"{__file__}:" in msg
    fix = msg.split("To fix:", 1)[1]
    assert "ad.hessian (forward over reverse)" in fix
    assert "register" not in fix and "rrule" not in fix
    del sla


@pytest.mark.parametrize("x", [np.array([0.6, 0.9]), np.array([-0.4, 1.3])])
def test_hessian_reverse_differentiated_again(x):
    def g(x):
        return x[0] ** 2 * x[1] ** 3

    def s(x):
        return np.sum(ad.hessian_reverse(g, x))

    expected = [fd(s, x, e, 1e-5) for e in np.eye(2)]
    np.testing.assert_allclose(G(s, x), expected, rtol=1e-5)
    np.testing.assert_allclose(G(s, x), G(lambda x: np.sum(ad.hessian(g, x)), x), rtol=1e-12)
    for e in np.eye(2):
        assert ad.jvp(s, (x,), (e,))[1] == pytest.approx(fd(s, x, e, 1e-5), rel=1e-5)
