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
