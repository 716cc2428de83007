"""Wrappers around a loss: a lambda or function returning another's value, keyword
arguments, ``functools.partial``.

A call whose value the caller only returns (``return loss(w, X, y)``) asks the
callee for no value when ``ad.gradient`` asks the caller for none
(``reverse.rcall_tail``); keyword arguments that name the parameters after the
positional ones are passed positionally (``gradient._as_positional``). Checked:
values (``withgradient``) and gradients against central differences and by
hand, through one and two wrappers, branches and loops, star calls, and
keywords that cannot be spread.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from ad_testing import fd_gradient, helpers_as_calls

import ad


@pytest.fixture(params=[True, False], ids=["inlined", "calls"])
def inlined(request):
    """Helpers inlined (the default) or left as calls, whose values pass through."""
    if request.param:
        yield True
        return
    with helpers_as_calls():
        yield False


def loss(w, X, y):
    return np.mean((X @ w - y) ** 2)  # a fused sum, returned: its value may be skipped


def _data():
    rng = np.random.default_rng(7)
    return rng.normal(size=(6, 3)), rng.normal(size=6)


def _hand(w, X, y):
    return 2.0 * X.T @ (X @ w - y) / len(y)


def one_wrapper(w, X, y):
    return loss(w, X, y)


def two_wrappers(w, X, y):
    return one_wrapper(w, X, y)


def branches(w, X, y, first):
    if first:
        out = loss(w, X, y)
    else:
        out = loss(2.0 * w, X, y)
    return out


def in_a_loop(w, X, y):
    out = 0.0
    for k in range(3):
        out = loss(w * (k + 1.0), X, y)  # only the last one is returned
    return out


def starred(w, *data):
    return loss(w, *data)


@pytest.mark.parametrize("f", [one_wrapper, two_wrappers, starred, in_a_loop])
def test_a_returned_call_gives_value_and_gradient(f, inlined):
    X, y = _data()
    w = np.array([0.5, -0.2, 0.1])
    g = ad.gradient(f, w, X, y)[0]
    np.testing.assert_allclose(g, fd_gradient(lambda v: f(v, X, y), w)[0], rtol=1e-6, atol=1e-9)
    if f is not in_a_loop:
        np.testing.assert_allclose(g, _hand(w, X, y), rtol=1e-12)
    val, (g2, *_) = ad.withgradient(f, w, X, y)
    assert val == pytest.approx(f(w, X, y), rel=1e-14) and type(val) is np.float64
    np.testing.assert_allclose(g2, g, rtol=1e-14)
    if not inlined and f is not in_a_loop:  # a loop's value is another variable's
        src = ad.code_adjoint(f, w, X, y)
        assert ("rcall_star_tail" if f is starred else "rcall_tail") in src


def test_branches_and_a_pullback_get_the_value(inlined):
    X, y = _data()
    w = np.array([0.5, -0.2, 0.1])
    for first, scale in ((True, 1.0), (False, 2.0)):
        g = ad.gradient(branches, w, X, y, first)[0]
        np.testing.assert_allclose(g, scale * _hand(scale * w, X, y), rtol=1e-12)
        val, back = ad.pullback(branches, w, X, y, first)
        assert val == pytest.approx(branches(w, X, y, first))
        np.testing.assert_allclose(back(1.0)[0], g, rtol=1e-14)


@pytest.mark.parametrize(
    "call",
    [
        lambda w, X, y: ad.gradient(loss, w, X=X, y=y),
        lambda w, X, y: ad.gradient(loss, w, X, y=y),
        lambda w, X, y: ad.gradient(loss, w, y=y, X=X),
        lambda w, X, y: ad.gradient(functools.partial(loss, X=X, y=y), w),
        lambda w, X, y: ad.gradient(functools.partial(loss, y=y), w, X),
    ],
    ids=["two keywords", "one keyword", "keywords reordered", "partial", "partial and arg"],
)
def test_keywords_naming_the_following_parameters(call):
    X, y = _data()
    w = np.array([0.5, -0.2, 0.1])
    got = call(w, X, y)
    np.testing.assert_allclose(got[0], _hand(w, X, y), rtol=1e-12)


def scaled_loss(w, X, y, scale=1.0, *, shift=0.0):
    return scale * loss(w, X, y) + shift * np.sum(w)


def posonly(w, X, y, /):
    return loss(w, X, y)


def test_keywords_that_cannot_be_spread():
    X, y = _data()
    w = np.array([0.5, -0.2, 0.1])
    g = ad.gradient(scaled_loss, w, X, y, shift=3.0)[0]  # keyword-only
    np.testing.assert_allclose(g, _hand(w, X, y) + 3.0, rtol=1e-12)
    g = ad.gradient(scaled_loss, w, X, scale=2.0, y=y)[0]  # y, then a gap: scale
    np.testing.assert_allclose(g, 2.0 * _hand(w, X, y), rtol=1e-12)
    g = ad.gradient(scaled_loss, w, X=X, y=y, scale=0.5)[0]
    np.testing.assert_allclose(g, 0.5 * _hand(w, X, y), rtol=1e-12)
    with pytest.raises(TypeError):  # as Python: positional-only parameters by name
        ad.gradient(posonly, w, X=X, y=y)


def defaults_and_rest(a, b=2.0, *c):
    return a * b + sum(c) * a


def test_one_gradient_entry_per_argument_passed_with_defaults_and_star_args():
    # given fewer arguments than positional parameters, a function with *args got
    # an entry for each parameter (b's, from its default) as well
    assert ad.gradient(defaults_and_rest, 1.5) == (2.0,)
    assert ad.withgradient(defaults_and_rest, 1.5) == (3.0, (2.0,))
    assert ad.gradient(defaults_and_rest, 1.5, 3.0) == (3.0, 1.5)
    assert ad.gradient(defaults_and_rest, 1.5, 3.0, 0.5, 0.25) == (3.75, 1.5, 1.5, 1.5)


def long_loss(x, y, z):
    """More statements than a helper is inlined with (``inlining.MAX_STATEMENTS``),
    unless a wrapper returns its value."""
    a0 = x * y + z
    a1 = a0 * 0.91 + y * 0.1
    a2 = a1 * 0.92 + z * 0.1
    a3 = a2 * 0.93 + x * 0.1
    a4 = a3 * 0.94 + y * 0.1
    a5 = a4 * 0.95 + z * 0.1
    a6 = a5 * 0.96 + x * 0.1
    a7 = a6 * 0.97 + y * 0.1
    a8 = a7 * 0.98 + z * 0.1
    a9 = a8 * 0.99 + x * 0.1
    a10 = a9 * 1.00 + y * 0.1
    a11 = a10 * 1.01 + z * 0.1
    a12 = a11 * 1.02 + x * 0.1
    a13 = a12 * 1.03 + y * 0.1
    a14 = a13 * 1.04 + z * 0.1
    a15 = a14 * 1.05 + x * 0.1
    a16 = a15 * 1.06 + y * 0.1
    a17 = a16 * 1.07 + z * 0.1
    a18 = a17 * 1.08 + x * 0.1
    a19 = a18 * 1.09 + y * 0.1
    a20 = a19 * 1.10 + z * 0.1
    a21 = a20 * 1.11 + x * 0.1
    a22 = a21 * 1.12 + y * 0.1
    a23 = a22 * 1.13 + z * 0.1
    a24 = a23 * 1.14 + x * 0.1
    a25 = a24 * 1.15 + y * 0.1
    a26 = a25 * 1.16 + z * 0.1
    a27 = a26 * 1.17 + x * 0.1
    a28 = a27 * 1.18 + y * 0.1
    a29 = a28 * 1.19 + z * 0.1
    a30 = a29 * 1.20 + x * 0.1
    a31 = a30 * 1.21 + y * 0.1
    a32 = a31 * 1.22 + z * 0.1
    a33 = a32 * 1.23 + x * 0.1
    a34 = a33 * 1.24 + y * 0.1
    a35 = a34 * 1.25 + z * 0.1
    a36 = a35 * 1.26 + x * 0.1
    a37 = a36 * 1.27 + y * 0.1
    a38 = a37 * 1.28 + z * 0.1
    a39 = a38 * 1.29 + x * 0.1
    a40 = a39 * 1.30 + y * 0.1
    a41 = a40 * 1.31 + z * 0.1
    a42 = a41 * 1.32 + x * 0.1
    a43 = a42 * 1.33 + y * 0.1
    return a43 * a43 * 0.01


def test_a_wrapper_returning_a_long_helper_inlines_it(inlined):
    wrappers = {
        "lambda *p": lambda *p: long_loss(*p),
        "tuple": lambda q: long_loss(*q),
        "dict": lambda q: long_loss(q["x"], q["y"], q["z"]),
    }
    p = (0.3, -0.7, 1.1)
    expected = fd_gradient(long_loss, *p)
    np.testing.assert_allclose(ad.gradient(long_loss, *p), expected, rtol=1e-6)
    np.testing.assert_allclose(ad.gradient(wrappers["lambda *p"], *p), expected, rtol=1e-6)
    np.testing.assert_allclose(ad.gradient(wrappers["tuple"], p)[0], expected, rtol=1e-6)
    g = ad.gradient(wrappers["dict"], dict(zip("xyz", p)))[0]
    np.testing.assert_allclose([g["x"], g["y"], g["z"]], expected, rtol=1e-6)
    src = ad.code_adjoint(wrappers["tuple"], p)  # the form for a tuple of three
    assert ("long_loss" not in src) == inlined


def long_twice(x, y, z):
    return long_loss(x, y, z) + long_loss(y, z, x)  # not a tail call: each stays a call


def test_a_long_helper_called_otherwise_stays_a_call():
    p = (0.3, -0.7, 1.1)
    np.testing.assert_allclose(ad.gradient(long_twice, *p), fd_gradient(long_twice, *p), rtol=1e-6)
    assert "long_loss" in ad.code_adjoint(long_twice, *p)
