"""``ad.gradient(functools.partial(f, data...), *params)``: the bound arguments are
data, like a captured variable, and get no derivative (none is computed for
them); the gradient is that of the arguments given. Checked by hand and against
central differences, with positional and keyword bindings, keywords at the call,
a partial whose function has defaults and keyword-only parameters, and in
forward mode and at second order."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad


def f(a, b, c=1.0, *, d=2.0):
    return np.sum(a * b) * c + d * np.sum(a**2)


A = np.array([1.0, 2.0])
B = np.array([3.0, -1.0])

CASES = [
    (functools.partial(f, A), (B,)),
    (functools.partial(f, c=3.0), (A, B)),
    (functools.partial(f, d=5.0), (A, B)),
    (functools.partial(f, A, B), (0.5,)),
    (functools.partial(functools.partial(f, c=2.0), A), (B,)),  # a partial of a partial
]


@pytest.mark.parametrize("p, args", CASES)
def test_the_arguments_given_are_differentiated(p, args):
    g = ad.gradient(p, *args)
    want = fd_gradient(p, *args)
    assert len(g) == len(args)
    for gi, wi in zip(g, want):
        np.testing.assert_allclose(gi, wi, rtol=1e-6)
    t = tuple(np.ones_like(x) if isinstance(x, np.ndarray) else 1.0 for x in args)
    _, ẏ = ad.jvp(p, args, t)
    assert ẏ == pytest.approx(sum(float(np.sum(w)) for w in want), rel=1e-6)


def test_hand_derived_with_keywords_at_the_call():
    p = functools.partial(f, c=3.0)
    ga, gb = ad.gradient(p, A, B, d=0.5)
    np.testing.assert_allclose(ga, 3.0 * B + 2 * 0.5 * A)
    np.testing.assert_allclose(gb, 3.0 * A)
    assert ad.withgradient(p, A, B, d=0.5).val == pytest.approx(f(A, B, 3.0, d=0.5))


def test_second_order_through_a_top_level_partial():
    p = functools.partial(f, B, d=1.5)  # f(a=B, b=x): linear in x
    H = ad.hessian(lambda x: p(x) + np.sum(x**3), A)
    np.testing.assert_allclose(H, np.diag(6 * A))
