"""Faults of nested modes found by autograd's test suite and tangent's corpus (issue 20):

* a thunk read as a method (``t.unthunk()``, as ``acc`` reads one) in forward mode
  over a pushforward: it was differentiated as source, whose cache write into the
  thunk was refused (third order of ``np.dot``/``np.outer``, forward over forward
  over reverse); a thunk made in differentiated code is its value in both modes;
* a keyword argument that carries a derivative into a callable with an frule
  (``dict(a=x)``, ``sorted(xs, key=...)``, ``np.outer(a, b=x)``), followed by every
  nested mode as forward mode follows it (to its position, or to a rule taking the
  keywords' tangents), where forward over forward and reverse over forward refused it;
* an error of a nested ``ad.gradient`` (a vector output) caught by the user's
  ``try``, as plain Python catches it, when the function is differentiated;
* a dict comprehension under forward over forward (fixed by the argument-returned-
  in-a-tuple rule of issue 18), kept here in every mode combination.

Second derivatives are checked by each pair of modes against central differences
of the function, and against hand-derived values where they are short.
"""

import itertools

import numpy as np
import pytest
from ad_testing import D_f, D_r

import ad
from ad.errors import MutationError, NonScalarOutputError, NoRuleError
from rulescore import Thunk, thunk, unthunk

MODES = {"f": D_f, "r": D_r}
PAIRS = ["".join(p) for p in itertools.product("fr", repeat=2)]


def second(modes, F, x, v):
    """``vᵀ H v`` by the two levels ``modes`` (outer first)."""
    A, B = (MODES[m] for m in modes)
    return A(lambda y: B(F, y, v), x, v)


def fd_second(F, x, v, h=1e-4):
    """``vᵀ H v`` by central differences of ``F``."""
    return (F(x + h * v) - 2.0 * F(x) + F(x - h * v)) / h**2


POINTS = [(0.7, 1.0), (np.array([0.3, -0.4, 1.1]), np.array([1.0, 0.5, -0.25]))]


# --- keyword arguments of callables with an frule ------------------------------------


def dict_keywords(x):
    d = dict(a=x, b=x * x)
    return np.sum(np.sin(d["a"]) * d["b"])


def dict_source_and_keywords(x):
    d = dict({"c": 2.0 * x}, a=x, b=np.sin(x))
    return np.sum(d["a"] * d["b"] * d["c"])


def dict_pairs_and_keyword(x):
    d = dict([("a", x)], b=x)
    return np.sum(d["b"] * 3.0 * d["a"] + d["a"])


def sorted_key_capturing(x):
    xs = [x, 2.0 * x, x * x]
    return np.sum(sorted(xs, key=lambda t: np.sum(t * x))[1] * x)


def max_key_capturing(x):
    xs = [np.sin(x), np.cos(x)]
    return np.sum(max(xs, key=lambda t: np.sum(t * x)) * x)


def outer_keyword(x):
    return np.sum(np.sin(np.outer(x, b=np.cos(x) * x)))


def clip_keyword(x):
    return np.sum(np.clip(x * 3.0, -1.0, a_max=np.cos(x) + 2.0) ** 2)


KEYWORD_PROGRAMS = [
    dict_keywords,
    dict_source_and_keywords,
    dict_pairs_and_keyword,
    sorted_key_capturing,
    max_key_capturing,
    outer_keyword,
    clip_keyword,
]


@pytest.mark.parametrize("modes", PAIRS)
@pytest.mark.parametrize("F", KEYWORD_PROGRAMS, ids=lambda F: F.__name__)
@pytest.mark.parametrize("x, v", POINTS, ids=["float", "array"])
def test_keyword_arguments_every_mode_pair(modes, F, x, v):
    got = second(modes, F, x, v)
    np.testing.assert_allclose(got, fd_second(F, x, v), rtol=1e-4, atol=1e-5)


def test_dict_keywords_hand_derived():
    # s(x) = 3x² + x: s'' = 6 (autograd's test_make_dict, reverse over forward)
    def js(x, v):
        return ad.jvp(dict_pairs_and_keyword, (x,), (v,))[1]  # (6x + 1) v

    assert ad.gradient(js, 1.0, 1.0) == pytest.approx((6.0, 7.0))
    assert second("ff", dict_pairs_and_keyword, 0.4, 1.0) == pytest.approx(6.0)


def test_dict_keyword_constructor_hvp():
    # tangent's dict_wrapper: a*b + c, read through dict(a=a, b=b, c=c)
    def dict_saxpy(val):
        return val["a"] * val["b"] + val["c"]

    def dict_wrapper(abc):
        a, b, c = abc
        return dict_saxpy(dict(a=a, b=b, c=c))

    p = (2.0, -1.5, 0.5)
    (hv,) = ad.hvp(dict_wrapper, (p,), ((1.0, 0.0, 0.0),))
    assert tuple(hv) == (0.0, 1.0, None)  # None: c is linear, no second derivative flows
    gg = ad.gradient(lambda q: ad.gradient(dict_wrapper, q)[0][1], p)[0]
    assert tuple(gg) == (1.0, None, None)  # ∂f/∂b = a


def test_keyword_third_order():
    # d³/dx³ of sin(x)·x² through dict(a=x, b=x*x), each outer mode over forward
    F = dict_keywords
    x = 0.6
    want = -np.cos(x) * x**2 - 6 * np.sin(x) * x + 6 * np.cos(x)
    for outer in (D_f, D_r):
        got = outer(lambda y: D_f(lambda z: D_f(F, z), y), x)
        assert got == pytest.approx(want, rel=1e-8)


# --- thunks ----------------------------------------------------------------------------


def _vjp_dot(x, y, w):
    _, back = ad.pullback(np.dot, x, y)
    return back(w)


def _jvp_vjp_dot(x, y, w, dx, dy, dw):
    return ad.jvp(_vjp_dot, (x, y, w), (dx, dy, dw))[1]  # (dw y + w dy, dw x + w dx)


@pytest.mark.parametrize("k", range(6))
def test_third_order_dot_forward_forward_reverse(k):
    args = (1.5, 0.3, 2.0, 1.0, -0.5, 0.25)
    e = tuple(float(i == k) for i in range(6))
    got = ad.jvp(_jvp_vjp_dot, args, e)[1]
    # d/dx..dw of (dw y + w dy, dw x + w dx), by hand
    want = {0: (0.0, 0.25), 1: (0.25, 0.0), 2: (-0.5, 1.0), 3: (0.0, 2.0), 4: (2.0, 0.0)}
    want[5] = (0.3, 1.5)
    assert tuple(got) == pytest.approx(want[k])


def test_third_order_outer_forward_forward_reverse():
    def vjp_outer(x, y, w):
        _, back = ad.pullback(np.outer, x, y)
        return back(w)

    x, y, w = np.array([1.0, 2.0]), np.array([0.5, -1.0, 3.0]), np.ones((2, 3))
    dx, dy, dw = np.array([0.1, -0.2]), np.array([1.0, 0.0, 2.0]), np.full((2, 3), 0.5)

    def jvp1(w):
        return ad.jvp(vjp_outer, (x, y, w), (dx, dy, dw))[1]

    got = ad.jvp(jvp1, (w,), (np.eye(2, 3),))[1]  # linear in w: the w-part with dw = eye
    e = np.eye(2, 3)
    np.testing.assert_allclose(got[0], e @ dy)
    np.testing.assert_allclose(got[1], e.T @ dx)


def thunk_program(x):
    t = Thunk(lambda: np.sin(x) * 3.0)
    return np.sum(unthunk(t) + t.unthunk() * x)


def thunk_call_program(x):
    t = thunk(lambda: x * np.cos(x))
    return np.sum(t.unthunk() * x + unthunk(t))


@pytest.mark.parametrize("F", [thunk_program, thunk_call_program], ids=lambda F: F.__name__)
@pytest.mark.parametrize("x, v", POINTS, ids=["float", "array"])
def test_thunks_made_in_differentiated_code(F, x, v):
    h = 1e-6
    fd = (F(x + h * v) - F(x - h * v)) / (2 * h)
    assert D_f(F, x, v) == pytest.approx(fd, rel=1e-6)
    assert D_r(F, x, v) == pytest.approx(fd, rel=1e-6)
    for modes in PAIRS:
        got = second(modes, F, x, v)
        np.testing.assert_allclose(got, fd_second(F, x, v), rtol=1e-4, atol=1e-5)


# --- errors of nested calls caught by the user's try ---------------------------------------


def caught_nested_error(x):
    try:
        y = ad.gradient(lambda z: np.ones(2) * z, x)[0]  # NonScalarOutputError, a TypeError
    except TypeError:
        y = x * 3.0
    return y * x


def caught_nested_error_else(x):
    try:
        ad.grad(lambda z: np.ones(2) * np.sin(z))(x)
    except NonScalarOutputError as e:
        s = np.sin(x) if "real number" in str(e) else x
    else:
        s = x
    finally:
        x = x * 1.0
    return s * x


@pytest.mark.parametrize("F", [caught_nested_error, caught_nested_error_else])
@pytest.mark.parametrize("x", [0.8, -1.3])
def test_nested_error_caught_as_plain_python(F, x):
    h = 1e-6
    fd = (F(x + h) - F(x - h)) / (2 * h)
    assert D_f(F, x) == pytest.approx(fd, rel=1e-6)
    assert D_r(F, x) == pytest.approx(fd, rel=1e-6)
    for modes in PAIRS:
        assert second(modes, F, x, 1.0) == pytest.approx(fd_second(F, x, 1.0), rel=1e-4)


def test_caught_nested_error_hand_derived():
    assert ad.gradient(caught_nested_error, 1.0) == (6.0,)  # 3x²
    assert ad.jvp(caught_nested_error, (2.0,), (1.0,))[1] == 12.0


def test_plain_run_raises_the_same_error():
    with pytest.raises(NonScalarOutputError):
        ad.gradient(lambda z: np.ones(2) * z, 1.0)


def test_derivative_errors_still_escape_the_users_try():
    # a write the derivative cannot follow stays an error, whatever the handler catches
    def f(x):
        a = np.ones(2) * x
        try:
            v = a[:1]
            v *= x  # a write into a view of an array the tape holds: refused
        except (RuntimeError, TypeError):
            return x
        return np.sum(a)

    for run in (lambda: ad.gradient(f, 1.0), lambda: ad.jvp(f, (1.0,), (1.0,))):
        with pytest.raises((MutationError, NoRuleError)):
            run()


# --- a dict comprehension under nested forward mode -------------------------------------


def dict_comprehension(a):
    g = {k: a * float(i + 1) for i, k in enumerate(("a", "b"))}
    return np.sum(np.sin(g["a"]) * g["b"])


@pytest.mark.parametrize("modes", PAIRS)
@pytest.mark.parametrize("x, v", POINTS, ids=["float", "array"])
def test_dict_comprehension_every_mode_pair(modes, x, v):
    got = second(modes, dict_comprehension, x, v)
    np.testing.assert_allclose(got, fd_second(dict_comprehension, x, v), rtol=1e-4, atol=1e-5)


def test_dict_comprehension_forward_over_forward_hand_derived():
    # autograd's test_dict shape: sum(sin(2a)); d²/da² along e0 is -4 sin(2 a0)
    def h(a):
        g = {k: a * 2.0 for k in ("a",)}
        return np.sum(np.sin(g["a"]))

    a, v = np.array([0.3, 0.5]), np.array([1.0, 0.0])
    got = ad.jvp(lambda a: ad.jvp(h, (a,), (v,))[1], (a,), (v,))[1]
    assert got == pytest.approx(-4.0 * np.sin(0.6))


# --- a nested call's function is the one called, not what its captures hold later ---


def _loop_of(call):
    def f(x):
        out = 0.0
        for k in (1.0, 3.0):  # a lambda made per iteration, capturing the loop variable
            out = out + call(lambda z: z * z * k * x, x)  # noqa: B023 (the point)
        return out

    return f


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda g, x: ad.gradient(g, x)[0], 32.0),  # Σ 2 k x² = 8 x²: 16 x at x = 2
        (lambda g, x: ad.withgradient(g, x).grad[0], 32.0),
        (lambda g, x: ad.hessian(g, x), 8.0),  # Σ 2 k x = 8 x
        (lambda g, x: ad.jvp(g, (x,), (1.0,))[1], 32.0),
        (lambda g, x: ad.pullback(g, x)[1](1.0)[0], 32.0),
        (lambda g, x: float(np.ravel(ad.jacobian(g, x)[0])[0]), 32.0),
    ],
    ids=["gradient", "withgradient", "hessian", "jvp", "pullback", "jacobian"],
)
def test_a_closure_made_in_a_loop_is_differentiated_as_called(call, expected):
    f = _loop_of(call)
    x = 2.0
    h = 1e-5
    fd = (f(x + h) - f(x - h)) / (2 * h)
    assert ad.gradient(f, x)[0] == pytest.approx(fd, rel=1e-6)
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(fd, rel=1e-6)
    assert ad.gradient(f, x)[0] == pytest.approx(expected, rel=1e-12)  # by hand


def test_a_library_function_with_a_rule_keeps_it_when_differentiated_again():
    # scipy's solve_sylvester is a decorated closure with a rule: the nested call's
    # function must stay that object (rules are found by identity), not a copy
    sl = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(3)
    A, B, C, V = (rng.normal(size=(3, 3)) for _ in range(4))

    def jvp_of(a):
        return np.sum(ad.jvp(sl.solve_sylvester, (a, B, C), (V, V, V))[1])

    h = 1e-6
    E = np.zeros((3, 3))
    E[0, 1] = 1.0
    fd = (jvp_of(A + h * E) - jvp_of(A - h * E)) / (2 * h)
    assert ad.gradient(jvp_of, A)[0][0, 1] == pytest.approx(fd, rel=1e-5)
