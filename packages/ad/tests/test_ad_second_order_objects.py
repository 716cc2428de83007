"""Second derivatives through methods that write their object, in every mode pair.

Reverse mode over forward mode (and so ``hessian``, gradient of gradient, and
gradient of jvp) differentiates the pushforward, in which a method call whose
value is discarded (``p.add(x)``) hands its write back to the caller only
through the object itself: the reverse pass follows such an object by
identity, and the tangents the pushforward writes into its fields too
(``ad.higher.reverse_over_writes._through_setattr``). Each case is checked against central
differences of the first derivative (forward mode) and by hand.
"""

import math

import numpy as np
import pytest
from ad_testing import D_f, D_r

import ad


class Acc:
    def __init__(self, v):
        self.value = v
        self.n = 0

    def scale(self, s):
        self.value *= s
        return self

    def rescale(self, s):
        self.value = self.value * s

    def add(self, t):
        self.value = self.value + t * t
        self.n += 1

    def twice(self, s):
        self.value = self.value * s
        self.value = self.value + math.sin(s)


class Lookup:
    def __init__(self, d):
        self._d = d

    def get(self, k):
        return self._d[k]


def alias_read(x):  # x³: 6x
    p = Acc(x)
    q = p
    p.scale(x)
    return q.value * x


def loop_adds(x):  # (x + 14x²) x: 2 + 84x
    p = Acc(x)
    for i in range(3):
        p.add(x * (i + 1))
    return p.value * x


def two_writes(x):  # (x² + sin x)²
    p = Acc(x)
    p.twice(x)
    return p.value**2


def arrays(x):
    p = Acc(np.array([x, 2.0 * x]))
    p.rescale(x)
    p.add(np.sin(x))
    return float(np.sum(p.value * p.value))


def _scale_it(p, x):
    p.rescale(x)


def through_helper(x):  # x³: 6x
    p = Acc(x)
    _scale_it(p, x)
    return p.value * x


def dict_field(x):  # 2x²: 4
    g = Lookup({"u": x * 2, "w": 3.0})
    return g.get("u") * x


def _hand(name, x):
    return {
        "alias_read": 6 * x,
        "loop_adds": 2 + 84 * x,
        "two_writes": 2 * ((2 * x + math.cos(x)) ** 2 + (x * x + math.sin(x)) * (2 - math.sin(x))),
        "through_helper": 6 * x,
        "dict_field": 4.0,
    }.get(name)


CASES = [alias_read, loop_adds, two_writes, arrays, through_helper, dict_field]
PAIRS = {
    "reverse over forward": lambda f, x: D_r(lambda y: D_f(f, y), x),
    "forward over reverse": lambda f, x: D_f(lambda y: D_r(f, y), x),
    "reverse over reverse": lambda f, x: D_r(lambda y: D_r(f, y), x),
    "hessian": lambda f, x: ad.hessian(f, x),
}


@pytest.mark.parametrize("mode", list(PAIRS))
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_methods_writing_their_object_at_second_order(f, mode):
    x, h = 0.7, 1e-5
    fd = (D_f(f, x + h) - D_f(f, x - h)) / (2 * h)
    got = float(PAIRS[mode](f, x))
    assert got == pytest.approx(fd, rel=1e-6, abs=1e-6)
    hand = _hand(f.__name__, x)
    if hand is not None:
        assert got == pytest.approx(hand, rel=1e-10)


def test_forward_over_forward_of_a_class_built_inside_is_refused_naming_the_line():
    # a known gap (the constructor's pushforward is not unfolded again): a clear error
    with pytest.raises(ad.NoRuleError, match=r"test_ad_second_order_objects\.py:\d+"):
        D_f(lambda y: D_f(alias_read, y), 0.7)
