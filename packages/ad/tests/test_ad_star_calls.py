"""Calls with ``*`` arguments: ``f(*p, *data)``, ``f(a, *rest)``, ``g(*xs)``.

First-order reverse mode calls them with their parts (``ad.runtime.star_calls``);
forward mode and nested differentiation through ``_ad_apply``. Every spelling is
checked against central differences in reverse mode, forward mode and at
second order.
"""

from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad

DATA = (np.array([1.0, -2.0, 0.5]), 3.0)
Pair = namedtuple("Pair", "a b")


def loss(w, x, c):
    return np.sum(np.tanh(w * x)) * c


def varargs(*v):
    out = 0.0
    for i, e in enumerate(v):
        out = out + np.sum(e) ** 2 * (i + 1)
    return out


class Model:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, w, x, c):
        return loss(w, x, c) * self.scale


class Point:
    def __init__(self, a, b):
        self.a = a
        self.b = b


def data_after_params(w):
    return loss(w, *DATA)


def params_as_star(w):
    p = (w,)
    return loss(*p, *DATA)


def mixed_parts(w):
    x, c = DATA
    return loss(*[w], *(x,), c) + varargs(w, *[w * 2.0, 1.0])


def star_of_a_built_list(w):
    parts = [w[0], w[1] * w[2], np.sin(w)]
    return varargs(*parts)


def star_of_a_namedtuple(w):
    return varargs(*Pair(w[0] * 2.0, w))


def star_into_a_method(w):
    m = Model(1.5)
    return m.energy(w, *DATA)


def star_into_a_constructor(w):
    p = Point(*(w[0], w[1] ** 2))
    return p.a * p.b


def star_into_a_rule(w):
    pair = (w, np.cos(w))
    return np.sum(np.multiply(*pair))


def star_into_a_partial(w):
    g = functools.partial(loss, c=2.0)
    return g(*(w, DATA[0]))


def star_of_a_generator(w):
    return varargs(*(e * 2.0 for e in w))


def star_in_a_loop(w):
    out = 0.0
    for c in (1.0, 2.0):
        out = out + loss(*(w, DATA[0]), c)
    return out


PROGRAMS = [
    data_after_params,
    params_as_star,
    mixed_parts,
    star_of_a_built_list,
    star_of_a_namedtuple,
    star_into_a_method,
    star_into_a_constructor,
    star_into_a_rule,
    star_into_a_partial,
    star_of_a_generator,
    star_in_a_loop,
]
W = np.array([0.3, -0.7, 1.1])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_reverse_mode(f):
    (g,) = ad.gradient(f, W.copy())
    np.testing.assert_allclose(g, fd_gradient(f, W.copy())[0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_forward_mode(f):
    t = np.array([0.2, 1.0, -0.5])
    _, ẏ = ad.jvp(f, (W.copy(),), (t,))
    np.testing.assert_allclose(ẏ, fd_gradient(f, W.copy())[0] @ t, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order(f):
    H = ad.hessian(f, W.copy())
    np.testing.assert_allclose(H, fd_hessian(f, W.copy()), rtol=1e-5, atol=1e-6)


def test_a_lambda_over_the_data_is_the_user_spelling():
    f = lambda *p: loss(*p, *DATA)  # noqa: E731
    (g,) = ad.gradient(f, W.copy())
    x, c = DATA
    np.testing.assert_allclose(g, c * x * (1.0 - np.tanh(W * x) ** 2))


def test_hand_derived_varargs():
    # varargs(a, b) = a**2 + 2 * sum(b)**2
    def f(a, b):
        return varargs(*(a, b))

    g = ad.gradient(f, 1.5, np.array([1.0, 2.0]))
    assert g[0] == pytest.approx(3.0)
    np.testing.assert_allclose(g[1], [12.0, 12.0])


def test_a_star_argument_that_is_not_iterable_names_the_line():
    def f(x):
        return varargs(*x)

    with pytest.raises(
        TypeError,
        match=r"varargs\(\) argument after \* must be an iterable, not float "
        r"\(at .*test_ad_star_calls\.py:\d+\)",
    ):
        ad.gradient(f, 2.0)
    with pytest.raises(TypeError, match="not iterable"):  # forward mode: Python's wording
        ad.jvp(f, (2.0,), (1.0,))
