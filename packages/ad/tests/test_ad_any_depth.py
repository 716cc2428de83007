"""Issue 20: derivatives past third order, in every mode order.

The nesting does not depend on the level: forward over forward unfolds ad's own
dispatch one level per step (``ad.higher.unfold.unfold``), linear packing stays a
call of forward mode's dispatch at every depth (``ad.higher.unfold.linear_call``),
and reverse mode over a pushforward of a pushforward of ad's dispatch runs the
unfolded call, taking cotangents back through the unfolding's linear map
(``_over_pushforward._over_self``). Each value is checked against a derivative
derived by hand.
"""

import inspect
import itertools
import math
import re

import numpy as np
import pytest
from ad_testing import D_f, D_r

import ad

MODES = {"f": D_f, "r": D_r}
#: every fourth-order mode order, outer first (``rfff``: reverse over forward³)
ORDER4 = ["".join(p) for p in itertools.product("fr", repeat=4)]
A = 0.3


def nth(modes, f, x):
    """The derivative of ``f`` at ``x`` taken by ``modes`` (outer first)."""
    if not modes:
        return f(x)
    return MODES[modes[0]](lambda y: nth(modes[1:], f, y), x)


# function, its fourth derivative, its fifth (by hand)
CASES = {
    "sin": (math.sin, math.sin, math.cos),
    "exp(a x)": (
        lambda x: math.exp(A * x),
        lambda x: A**4 * math.exp(A * x),
        lambda x: A**5 * math.exp(A * x),
    ),
    "x^5": (lambda x: x**5, lambda x: 120 * x, lambda x: 120.0),
    "3x^4 - x^3 + 2x": (lambda x: 3 * x**4 - x**3 + 2 * x, lambda x: 72.0, lambda x: 0.0),
}


@pytest.mark.parametrize("modes", ORDER4)
@pytest.mark.parametrize("name", list(CASES))
def test_fourth_derivative_every_mode_order(name, modes):
    f, d4, _ = CASES[name]
    x = 0.7
    assert nth(modes, f, x) == pytest.approx(d4(x), rel=1e-12, abs=1e-12)


def sin_x2(x):
    return math.sin(x) * x**2


def sin_x2_4(x):
    # Leibniz: (x² sin)'''' = x² sin x + 4·2x·(−cos x) + 6·2·(−sin x)
    return x * x * math.sin(x) - 8 * x * math.cos(x) - 12 * math.sin(x)


def sin_x2_5(x):
    # Leibniz: (x² sin)⁽⁵⁾ = x² cos x + 5·2x·sin x + 10·2·(−cos x)
    return x * x * math.cos(x) + 10 * x * math.sin(x) - 20 * math.cos(x)


def numpy_expr(x):
    return np.sum(np.sin(x * np.array([1.0, 2.0])))  # sin x + sin 2x


X0 = np.array([0.3, 0.2, -0.4])
V = np.array([0.5, -1.0, 2.0])


def along(t):
    """``np.sum(np.sin(v) * v**2)`` along the line ``v = X0 + t V``."""
    v = X0 + t * V
    return np.sum(np.sin(v) * v**2)


def along_4(t):
    # d⁴/dt⁴ Σ g(vᵢ) = Σ g''''(vᵢ) Vᵢ⁴, g = x² sin x
    v = X0 + t * V
    return float(np.sum((v * v * np.sin(v) - 8 * v * np.cos(v) - 12 * np.sin(v)) * V**4))


def helper(y):
    return y * y * math.sin(y)


def calls_helper(x):
    """A helper called twice, once on a scaled argument (chain rule: (1/2)⁴ = 1/16)."""
    return helper(x) + 2.0 * helper(0.5 * x)


def loop(x):
    """A loop with an augmented assignment: Σₖ sin(k x) / k, k = 1, 2, 3."""
    s = 0.0
    for k in range(1, 4):
        s += math.sin(k * x) / k
    return s


N = 6

#: function, its fourth derivative (by hand), through rules, products and calls
THROUGH_RULES = {
    "sin(x) x^2": (sin_x2, sin_x2_4),
    "exp(a x)": (lambda x: math.exp(A * x), lambda x: A**4 * math.exp(A * x)),
    "np.exp(a x)": (lambda x: np.exp(A * x), lambda x: A**4 * math.exp(A * x)),
    "x**n": (lambda x: x**N, lambda x: N * (N - 1) * (N - 2) * (N - 3) * x ** (N - 4)),
    "np.sum(sin(v) v^2) along V": (along, along_4),
    "np.sum(sin(x [1, 2]))": (numpy_expr, lambda x: math.sin(x) + 16 * math.sin(2 * x)),
    "helper call": (calls_helper, lambda x: sin_x2_4(x) + sin_x2_4(0.5 * x) / 8),
    # Σ k⁴ sin(k x) / k = sin x + 8 sin 2x + 27 sin 3x
    "loop": (loop, lambda x: math.sin(x) + 8 * math.sin(2 * x) + 27 * math.sin(3 * x)),
}


@pytest.mark.parametrize("modes", ORDER4)
@pytest.mark.parametrize("name", list(THROUGH_RULES))
def test_fourth_derivative_through_rules_every_mode_order(name, modes):
    """Fourth derivatives through math and numpy rules, products, powers, a helper
    call and a loop, in each of the 16 mode orders: reverse mode at any level runs
    the levels below (source, or rules' bodies) pushed forward, and takes cotangents
    back through the same linear tangent maps at every depth."""
    f, d4 = THROUGH_RULES[name]
    x = 0.7
    assert float(nth(modes, f, x)) == pytest.approx(d4(x), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("modes", ["frfrf", "rrfff", "ffrrr", "rfrrf"])
def test_fifth_derivative_mixed_orders(modes):
    """Fifth order of sin(x) x², reverse and forward mode interleaved."""
    assert nth(modes, sin_x2, 0.7) == pytest.approx(sin_x2_5(0.7), rel=1e-10)


def test_fifth_derivative_along_a_direction():
    """Fifth order through numpy: Σ g⁽⁵⁾(vᵢ) Vᵢ⁵, g = x² sin x."""
    v = X0 + 0.7 * V
    want = float(np.sum((v * v * np.cos(v) + 10 * v * np.sin(v) - 20 * np.cos(v)) * V**5))
    assert float(nth("rfrfr", along, 0.7)) == pytest.approx(want, rel=1e-10)


def test_fourth_derivative_matches_differences_of_third():
    h, x = 1e-4, 0.6

    def third(y):
        return nth("fff", sin_x2, y)

    want = (third(x + h) - third(x - h)) / (2 * h)
    assert nth("ffff", sin_x2, x) == pytest.approx(want, rel=1e-7)
    assert nth("rrrr", CASES["exp(a x)"][0], x) == pytest.approx(
        (nth("rrr", CASES["exp(a x)"][0], x + h) - nth("rrr", CASES["exp(a x)"][0], x - h))
        / (2 * h),
        rel=1e-7,
    )


@pytest.mark.parametrize("name", list(CASES))
def test_fifth_derivative_forward(name):
    f, _, d5 = CASES[name]
    assert nth("fffff", f, 0.7) == pytest.approx(d5(0.7), rel=1e-12, abs=1e-11)


def test_hessian_of_hessian():
    """``hessian`` of a ``hessian`` entry: d⁴/dx⁴ of exp(a x) and x⁵."""
    for name in ("exp(a x)", "x^5"):
        f, d4, _ = CASES[name]
        got = ad.hessian(lambda x, f=f: ad.hessian(f, x), 0.7)
        assert got == pytest.approx(d4(0.7), rel=1e-12)


def test_no_perturbation_confusion_at_fourth_order():
    """Four nested derivatives, each closing over the outer variables: d/dx of
    x · d/dy (x y · d/dz (y z · d/dw (z + w))) = d/dx (x · x) = 2x, in every order."""
    for modes in ORDER4:
        A_, B_, C_, D_ = (MODES[m] for m in modes)

        def f(x, B_=B_, C_=C_, D_=D_):
            return x * B_(
                lambda y: x * y * C_(lambda z: y * z * D_(lambda w: z + w, 1.0), 1.0), 1.0
            )

        # d/dw (z + w) = 1; d/dz (y z) = y; d/dy (x y · y) = 2 x y at y = 1: 2x; x · 2x
        assert A_(f, 1.5) == pytest.approx(4 * 1.5), modes


# --- at depth: keywords, library code, refusals naming the user's line ------------------

HERE = re.escape(__file__)


def line_of(f, marker):
    """The line number of the line of ``f``'s source holding ``marker``."""
    lines, start = inspect.getsourcelines(f)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def takes_kwargs(x, **kw):
    return x * kw["y"]


def passes_keyword(x):
    """A keyword argument landing in ``**kw``, carrying the derivative: x² sin x."""
    return takes_kwargs(x, y=math.sin(x) * x)


def sin_x2_3(x):
    # Leibniz: (x² sin)''' = −x² cos x − 3·2x·sin x + 3·2·cos x
    return -x * x * math.cos(x) - 6 * x * math.sin(x) + 6 * math.cos(x)


ORDER3 = ["".join(p) for p in itertools.product("fr", repeat=3)]


@pytest.mark.parametrize("modes", ORDER3 + ["fffr", "rrrr", "rfff", "frfr"])
def test_keyword_into_kwargs_at_depth(modes):
    want = sin_x2_3(0.7) if len(modes) == 3 else sin_x2_4(0.7)
    assert nth(modes, passes_keyword, 0.7) == pytest.approx(want, rel=1e-10)


def formats(x):
    """numpy's Python formatter calls C code with keywords; its string result carries
    no derivative (as at first order): c x³ with c = float(str(x)) a constant."""
    return float(np.format_float_positional(x)) * x**3


@pytest.mark.parametrize("modes", ["f", "r", "fff", "rrr", "frr", "rfr", "ffff", "rrrr", "frfr"])
def test_library_code_with_keywords_at_depth(modes):
    # d³/dx³ c x³ = 6c, d⁴ = 0, d/dx = 3c x², c = 0.7
    want = {1: 3 * 0.7 * 0.7**2, 3: 6 * 0.7, 4: 0.0}[len(modes)]
    assert float(nth(modes, formats, 0.7)) == pytest.approx(want, rel=1e-12, abs=1e-12)


def no_rule(x):
    return np.frombuffer(np.array([x, 2.0]))[0] * x  # no-rule-here


def writes_global(x):
    global WRITTEN
    WRITTEN = x  # rebound-here
    return x * x


def binds_global_by_walrus(x):
    global WRITTEN
    return (WRITTEN := x) * x  # global-here


@pytest.mark.parametrize("modes", ["fff", "rrr", "frf", "rff", "ffff", "rrrr", "frrf", "rfff"])
def test_refusals_at_depth_name_the_users_line(modes):
    """A function with no rule, and a construct ad does not differentiate, refused at
    third and fourth order in any mode order with first order's error: the user's
    file and line, never one inside ad, its rules or numpy."""
    site = rf"{HERE}:{line_of(no_rule, 'no-rule-here')}\b"
    with pytest.raises(ad.NoRuleError, match=rf"numpy\.frombuffer.*called at {site}") as e:
        nth(modes, no_rule, 0.7)
    assert "To fix:" in str(e.value)
    site = rf"{HERE}:{line_of(binds_global_by_walrus, 'global-here')}: in binds_global_by_walrus"
    with pytest.raises(ad.UnsupportedSyntaxError, match=site + ": the global name 'WRITTEN'"):
        nth(modes, binds_global_by_walrus, 0.7)
    site = rf"{HERE}:{line_of(writes_global, 'rebound-here')}: in writes_global"
    with pytest.raises(ad.UnsupportedSyntaxError, match=site + ": the global 'WRITTEN'"):
        nth(modes, writes_global, 0.7)
