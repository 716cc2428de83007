"""Reverse mode over reverse mode: ``hessian_reverse`` differentiates the pure
form of the generated adjoint and the rules' pullbacks (``ad.higher.reverse_over_reverse``).
Checked against hand-derived Hessians, against ``hessian`` (forward over
reverse) and against central differences of the gradient; plus the pure
form's shape, and first-order fixes found on the way."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ad_testing import fd_hessian

import ad
from ad.higher.reverse_over_reverse import gradient_pure
from ad.transform import adjoint_source

X = np.array([0.3, 0.7, 0.45])


def test_seed_examples_by_hand():
    H = ad.hessian_reverse(lambda x: x[0] * x[1], np.array([1.0, 2.0]))
    np.testing.assert_array_equal(H, [[0.0, 1.0], [1.0, 0.0]])
    H = ad.hessian_reverse(lambda x: np.sum(x**3), np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(H, np.diag([6.0, 12.0, 18.0, 24.0]), rtol=1e-14)
    assert ad.hessian_reverse(math.sin, math.pi / 2) == pytest.approx(-1.0, abs=1e-15)


def _poly(x):
    return x**3 * 2.0 + x


def test_scalar_by_hand():
    # d²/dx² (2x³ + x) = 12x
    assert ad.hessian_reverse(_poly, 1.5) == pytest.approx(18.0, rel=1e-14)
    # d²/dx² (x sin x) = 2 cos x - x sin x
    got = ad.hessian_reverse(lambda x: math.sin(x) * x, 0.7)
    assert got == pytest.approx(2 * math.cos(0.7) - 0.7 * math.sin(0.7), rel=1e-13)


def _loop(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x) * x) * (i + 1)
    return s


def _branch(x):
    if x[0] > 0:
        y = np.sum(x**3)
    else:
        y = np.sum(x**2)
    return y


def _cube_sum(v):
    return np.sum(v * v * v)


def _calls(x):
    return _cube_sum(x) * 2.0 + _cube_sum(x * 0.5)


def _while(x):
    s = x[0]
    k = 0
    while k < 3:
        s = s * x[1]
        k += 1
    return s


def _closure_tuple(x):
    w = x * 2.0

    def first():
        return np.sum(w * x)

    def second():
        return np.sum(w)

    fs = (first, second)
    return fs[0]() * fs[1]()


@pytest.mark.parametrize("f", [_loop, _branch, _calls, _while, _closure_tuple])
def test_control_flow_and_calls_match_forward_over_reverse_and_differences(f):
    H = ad.hessian_reverse(f, X)
    np.testing.assert_allclose(H, ad.hessian(f, X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, fd_hessian(f, X), rtol=1e-4, atol=1e-5)


def test_while_loop_by_hand():
    # s = x0 x1³: ∂²/∂x0∂x1 = 3 x1², ∂²/∂x1² = 6 x0 x1
    H = ad.hessian_reverse(_while, X)
    x0, x1 = X[0], X[1]
    want = np.array([[0, 3 * x1**2, 0], [3 * x1**2, 6 * x0 * x1, 0], [0, 0, 0]])
    np.testing.assert_allclose(H, want, rtol=1e-13, atol=1e-15)


def test_gradient_pure_is_the_gradient():
    for f in (_loop, _branch, _calls, _while, _closure_tuple):
        np.testing.assert_allclose(gradient_pure(f, X), ad.gradient(f, X)[0], rtol=1e-13)


def test_pure_form_has_no_fast_paths_and_defines_the_adjoint_last():
    src = adjoint_source(_branch, pure=True)
    for banned in ("try:", "nonlocal", "_ad_fast", "_ad_fasti", "_ad_claim", "del "):
        assert banned not in src
    lines = [ln.strip() for ln in src.splitlines()]
    # the adjoint is defined after every tape write, just before the return
    back = [i for i, ln in enumerate(lines) if ln.startswith("def _ar_back")]
    rets = [i for i, ln in enumerate(lines) if ln.startswith("return (") and "_ar_back" in ln]
    assert back and len(back) == len(rets)
    writes = [i for i, ln in enumerate(lines) if "_ad_rcall(" in ln and "=" in ln]
    assert max(writes) < min(back)


def test_einsum_pullback_is_differentiated():
    """einsum's pullback (a thunk per operand, letters looped over as a string) was
    refused here; ``f = (x·diag(w)·x)²`` checked by hand: ``H = 8 (Wx)(Wx)ᵀ + 4 q W``."""

    def f(x):
        return np.sum(np.einsum("i,i->i", x, x) * np.array([1.0, 2.0, 3.0])) ** 2

    W = np.diag([1.0, 2.0, 3.0])
    q = X @ W @ X
    want = 8 * np.outer(W @ X, W @ X) + 4 * q * W
    np.testing.assert_allclose(ad.hessian_reverse(f, X), want, rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(f, X), want, rtol=1e-12)


def test_sort_by_hand():
    # sort's pullback scatters through rules.functional.put_along_axis (it wrote in
    # place before): f = (x0 + 3 x1 + 2 x2)² at X (sorted order 0, 2, 1), H = 2 w wᵀ
    def f(x):
        return np.sum(np.sort(x) * np.array([1.0, 2.0, 3.0])) ** 2

    w = np.array([1.0, 3.0, 2.0])
    np.testing.assert_allclose(ad.hessian_reverse(f, X), 2 * np.outer(w, w), rtol=1e-14)


# --- first-order fixes found by differentiating the rules' pullbacks ------------------


def _make_pair(b):
    def h():
        return b * 2.0

    return h, h


def test_closures_selected_from_a_tuple_keep_their_derivative():
    # ProjectTo of a closure used to be NoTangent: fs[0]() lost the gradient silently.
    def f(b):
        fs = _make_pair(b)
        return np.sum(fs[0]())

    np.testing.assert_array_equal(ad.gradient(f, np.array([1.0, 2.0]))[0], [2.0, 2.0])


def test_a_def_after_the_last_rebinding_of_what_it_captures_is_allowed():
    def f(x):
        acc = []
        for i in range(3):
            acc.append(np.sin(x) * i)

        def h(y):
            return acc[1] * y + acc[2]

        return h(x)

    got = ad.gradient(f, 2.0)[0]
    want = math.cos(2.0) * 2.0 + math.sin(2.0) + 2 * math.cos(2.0)
    assert got == pytest.approx(want, rel=1e-14)


def test_a_def_before_a_rebinding_is_still_refused():
    def f(x):
        y = x * 2.0

        def h():
            return y

        y = x * 3.0
        return h() + y

    with pytest.raises(ad.errors.UnsupportedSyntaxError, match="captures 'y'"):
        ad.gradient(f, 1.0)


def test_tangent_dict_built_from_a_mapping_passes_its_cotangent_on():
    from rulescore import Tangent, backing

    def f(v):
        t = Tangent[dict]({"a": v, "b": v * v})
        b = backing(t)
        return b["a"] * 3.0 + b["b"]

    assert ad.gradient(f, 2.0)[0] == pytest.approx(3.0 + 4.0)


def _scaled(x, k=2.0):
    return np.sum(x**3) * k


def test_an_inner_call_with_defaults_or_keywords_is_followed():
    # (its pure form is called with every parameter positional; H = diag(6 k x))
    def f(x):
        return _scaled(x) + _scaled(x, k=0.5) + _scaled(k=1.5, x=x)

    H = ad.hessian_reverse(f, X)
    np.testing.assert_allclose(H, np.diag(6.0 * 4.0 * X), rtol=1e-12)
    np.testing.assert_allclose(H, fd_hessian(f, X), rtol=1e-5, atol=1e-6)


def _star_params(*xs):
    return np.sum(xs[0] ** 3)


def _keyword_only(x, *, k):
    return np.sum(k * x**3)


def test_star_parameters_are_followed_keyword_only_ones_raise_a_clear_error():
    H = ad.hessian_reverse(lambda x: _star_params(x), X)
    np.testing.assert_allclose(H, np.diag(6.0 * X), rtol=1e-12)

    def f(x):
        return _keyword_only(x, k=2.0)

    with pytest.raises(ad.errors.NoRuleError) as info:
        ad.hessian_reverse(f, X)
    msg = str(info.value)
    assert "reverse over reverse" in msg and "_keyword_only" in msg
    assert "test_ad_reverse_over_reverse.py" in msg  # the call site
    assert "To fix" in msg and "ad.hessian" in msg


def _ab(a, b):
    return a * a * b


@pytest.mark.parametrize(
    "spelling",
    [lambda v: _ab(*v), lambda v: _ab(v[0], *v[1:]), lambda v: 3.0 * _ab(*list(v))],
    ids=["star", "one and star", "star of a list"],
)
def test_starred_calls_at_reverse_over_reverse(spelling):
    # the apply rule's body, differentiated again, bound its pullback twice; the
    # late-capture check refused ad's own code (a closure capturing it)
    v = np.array([1.0, 2.0])
    c = spelling(np.array([1.0, 1.0]))
    want = c * np.array([[2 * v[1], 2 * v[0]], [2 * v[0], 0.0]])  # of c a² b
    np.testing.assert_allclose(ad.hessian_reverse(spelling, v), want)
    np.testing.assert_allclose(ad.hessian(spelling, v), want)


def _dict_write(x):
    d = {}
    d["x"] = x
    return d["x"] * d["x"] * d["x"]


def _list_write(x):
    d = [0.0]
    d[0] = x
    return d[0] * d[0] * d[0]


def test_a_list_written_then_read_at_reverse_over_reverse():
    assert ad.hessian_reverse(_list_write, 2.0) == pytest.approx(12.0)
    assert ad.hessian(_list_write, 2.0) == pytest.approx(12.0)


def test_a_dict_written_then_read_at_reverse_over_reverse():
    # the write's pullback popped the key from a copy of its cotangent: dict.pop,
    # C code, lost the derivative when that body was differentiated again (0.0)
    assert ad.hessian_reverse(_dict_write, 2.0) == pytest.approx(12.0)


def test_a_dict_written_then_read_forward_over_reverse():
    assert ad.hessian(_dict_write, 2.0) == pytest.approx(12.0)


# --- what the pure reverse-over-reverse path follows (issue 20) ---------------------


def _star_helper(a, *rest):
    s = a * a
    for r in rest:
        s = s + np.sin(r) * a
    return s


_A2 = np.array([[2.0, 0.3], [0.1, 1.5]])

PURE_PATHS = {
    # a function with *args, called with more arguments than named parameters
    "star-args": lambda x: np.sum(_star_helper(x[0], x[1], x[2] ** 2)) + _star_helper(x[1]),
    "star-only": lambda x: (lambda *zs: zs[0] * zs[1] ** 2 + zs[2])(x[0], x[1], x[2] ** 3),
    # a rule whose pullback makes a thunk per operand, and loops over a string
    "einsum": lambda x: np.einsum("i,ij,j->", x[:2], _A2, x[1:]) ** 2,
    "str-loop": lambda x: sum(x[0] * ord(c) for c in "ab") * x[1] ** 2 * x[2],
}


@pytest.mark.parametrize("name", PURE_PATHS)
def test_pure_paths_match_hessian_and_differences(name):
    f = PURE_PATHS[name]
    H = ad.hessian_reverse(f, X)
    np.testing.assert_allclose(H, ad.hessian(f, X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, fd_hessian(f, X), rtol=1e-5, atol=1e-6)


def test_star_args_by_hand():
    """``h(a, b) = a² + sin(b)·a``: ∂²/∂a² = 2, ∂²/∂a∂b = cos b, ∂²/∂b² = -sin(b)·a."""
    a, b = 0.4, 1.1
    H = ad.hessian_reverse(lambda x: _star_helper(x[0], x[1]), np.array([a, b]))
    np.testing.assert_allclose(H, [[2.0, np.cos(b)], [np.cos(b), -np.sin(b) * a]], rtol=1e-14)
