"""``functools.partial`` under nested differentiation, in every mode combination.

A partial is unwrapped into the call of its function with the bound arguments
first (positional bindings before the call's own, keyword bindings merged under
the call's), whether it is captured or built inside the differentiated function,
nested, or a partial of a bound method or of a function with a rule. Each case is
checked against central differences of the first derivative (forward mode) and by
hand, by the four pairs of modes, ``ad.hessian`` and ``ad.hessian_reverse``, and
at third order by the eight triples.
"""

import functools
import itertools
import math

import numpy as np
import pytest
from ad_testing import D_f, D_r

import ad


def loss(w, x, c=1.0):
    return c * w**3 * x


def poly(a, x, b=0.0):
    return a * x**3 + b * x


class Model:
    def __init__(self, k):
        self.k = k

    def energy(self, x, s=1.0):
        return s * self.k * math.sin(x) * x


MODEL = Model(0.5)
BY_KEYWORD = functools.partial(loss, c=2.0)
BY_POSITION = functools.partial(poly, 1.5)
NESTED = functools.partial(functools.partial(poly, b=0.25), 2.0)
OF_A_METHOD = functools.partial(MODEL.energy, s=3.0)
OF_A_RULE = functools.partial(np.power, 2.0)


def captured_keyword(x):  # 2x³·1.5: 18x
    return BY_KEYWORD(x, 1.5)


def captured_positional(x):  # 1.5x³: 9x
    return BY_POSITION(x)


def captured_nested(x):  # 2x³ + x/4: 12x
    return NESTED(x)


def captured_method(x):  # 1.5 sin(x) x: 1.5 (2cos x - x sin x)
    return OF_A_METHOD(x)


def captured_rule(x):  # 2^x: ln(2)² 2^x
    return float(OF_A_RULE(x))


def built_inside(x):  # x·x³·2 (c=x, w=x, x=2): 24x²
    g = functools.partial(loss, c=x)
    return g(x, 2.0)


def built_inside_positional(x):  # poly(x, x, b=x) = x⁴ + x²: 12x² + 2
    g = functools.partial(poly, x, b=x)
    return g(x)


def built_inside_nested(x):  # poly(x², x, b=3): x⁵ + 3x: 20x³
    g = functools.partial(functools.partial(poly, b=3.0), x * x)
    return g(x)


def star_into(x):  # 2x³·0.5: 6x
    g = functools.partial(loss, c=2.0)
    return g(*(x, 0.5))


def keyword_overridden(x):  # loss(x, 1, c=x): x⁴: 12x²
    g = functools.partial(loss, c=5.0)
    return g(x, 1.0, c=x)


def of_a_method_inside(x):  # Model(x).energy(x, s=2) = 2x² sin x
    m = Model(0.5)
    g = functools.partial(m.energy, s=2.0 * x)
    return g(x)


def _hand(name, x):
    s, c = math.sin(x), math.cos(x)
    return {
        "captured_keyword": 18 * x,
        "captured_positional": 9 * x,
        "captured_nested": 12 * x,
        "captured_method": 1.5 * (2 * c - x * s),
        "captured_rule": math.log(2) ** 2 * 2**x,
        "built_inside": 24 * x * x,
        "built_inside_positional": 12 * x * x + 2,
        "built_inside_nested": 20 * x**3,
        "star_into": 6 * x,
        "keyword_overridden": 12 * x * x,
        # 0.5 · 2x · x sin x = x² sin x: 2 sin x + 4x cos x - x² sin x
        "of_a_method_inside": 2 * s + 4 * x * c - x * x * s,
    }[name]


CASES = [
    captured_keyword,
    captured_positional,
    captured_nested,
    captured_method,
    captured_rule,
    built_inside,
    built_inside_positional,
    built_inside_nested,
    star_into,
    keyword_overridden,
    of_a_method_inside,
]
MODES = {"f": D_f, "r": D_r}


def nth(modes, f, x):
    if not modes:
        return f(x)
    return float(MODES[modes[0]](lambda y: nth(modes[1:], f, y), x))


PAIRS = {
    **{"".join(p): functools.partial(nth, "".join(p)) for p in itertools.product("fr", repeat=2)},
    "hessian": lambda f, x: ad.hessian(f, x),
    "hessian_reverse": lambda f, x: ad.hessian_reverse(f, x),
}


@pytest.mark.parametrize("mode", list(PAIRS))
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_partials_at_second_order(f, mode):
    x, h = 0.7, 1e-5
    fd = (D_f(f, x + h) - D_f(f, x - h)) / (2 * h)
    got = float(PAIRS[mode](f, x))
    assert got == pytest.approx(fd, rel=1e-6, abs=1e-6)
    assert got == pytest.approx(_hand(f.__name__, x), rel=1e-10)


@pytest.mark.parametrize("f", [captured_keyword, built_inside, built_inside_nested, star_into])
def test_partials_at_third_order(f):
    x, h = 0.7, 1e-5
    fd = (nth("ff", f, x + h) - nth("ff", f, x - h)) / (2 * h)
    for modes in map("".join, itertools.product("fr", repeat=3)):
        assert nth(modes, f, x) == pytest.approx(fd, rel=1e-6, abs=1e-6), modes


def with_keyword(x):  # loss(x, 1.5, c=x) = 1.5x⁴: 18x²
    return loss(x, 1.5, c=x)


def with_default(x):  # poly(x, x) = x⁴: 12x²
    return poly(x, x)


@pytest.mark.parametrize(
    "f, hand", [(with_keyword, lambda x: 18 * x * x), (with_default, lambda x: 12 * x * x)]
)
def test_reverse_over_reverse_follows_keywords_and_defaults(f, hand):
    # (the pure form is called with every parameter positional: a keyword by name,
    # a default as a constant)
    x, h = 0.7, 1e-5
    fd = (D_f(f, x + h) - D_f(f, x - h)) / (2 * h)
    got = ad.hessian_reverse(f, x)
    assert got == pytest.approx(fd, rel=1e-6)
    assert got == pytest.approx(hand(x), rel=1e-10)


def _varargs(*a):
    return a[0] * a[1] ** 2


def _keyword_only(y, *, s):
    return s * y**3


def test_reverse_over_reverse_follows_varargs_and_refuses_keyword_only_naming_the_line():
    # y·y²: d²/dy² y³ = 6y
    assert ad.hessian_reverse(lambda y: _varargs(y, y), 1.5) == pytest.approx(9.0, rel=1e-12)
    with pytest.raises(
        ad.NoRuleError,
        match=r"_keyword_only has \*args.*test_ad_nested_partials\.py:\d+.*\n"
        r"To fix: use ad\.hessian \(forward over reverse\)",
    ):
        ad.hessian_reverse(lambda y: _keyword_only(y, s=2.0), 1.0)
