"""Issue 20: derivatives past third order, in every mode order.

The nesting does not depend on the level: forward over forward unfolds ad's own
dispatch one level per step (``_forward_over.unfold``), linear packing stays a
call of forward mode's dispatch at every depth (``_forward_over.linear_call``),
and reverse mode over a pushforward of a pushforward of ad's dispatch runs the
unfolded call, taking cotangents back through the unfolding's linear map
(``_over_pushforward._over_self``). Each value is checked against a derivative
derived by hand.
"""

import itertools
import math

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


def numpy_expr(x):
    return np.sum(np.sin(x * np.array([1.0, 2.0])))  # sin x + sin 2x


def test_fourth_derivative_forward_mode_through_rules():
    """Forward⁴ through math and numpy rules, products and powers (each rule's frule
    body is pushed forward three times, its packing staying linear)."""
    x = 0.7
    assert nth("ffff", sin_x2, x) == pytest.approx(sin_x2_4(x), rel=1e-12)
    want = math.sin(x) + 16 * math.sin(2 * x)
    assert nth("ffff", numpy_expr, x) == pytest.approx(want, rel=1e-12)


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
