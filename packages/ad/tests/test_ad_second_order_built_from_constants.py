"""Second derivatives through an object built from constants and written by a method.

``c = Counter(); c.add(x * x)``: the object starts with no derivative, and the
method's write, through ``self``, gives it one. Reverse mode over forward mode
differentiates the pushforward, in which the object's tangent variable gets the
write's tangent only at the ``follow`` after the call: that ``follow`` is
differentiated even though its inputs were constants (``transform.activity``).
Checked against central differences of the first derivative and by hand, in
every pair that goes through reverse over forward; reverse over reverse refuses
the in-place write naming the line and a fix that applies.
"""

import pytest
from ad_testing import D_f, D_r

import ad


class Counter:
    def __init__(self):
        self.total = 0.0

    def add(self, v):
        self.total += v
        return self

    def add2(self, v):
        self.total = self.total + v


def returned_self_discarded(x):  # x³: 6x
    c = Counter()
    c.add(x * x)
    return c.total * x


def no_return(x):  # x³: 6x
    c = Counter()
    c.add2(x * x)
    return c.total * x


def twice(x):  # (x² + x³) x = x³ + x⁴: 6x + 12x²
    c = Counter()
    c.add2(x * x)
    c.add(x**3)
    return c.total * x


class Holder:
    def __init__(self, w):
        self.w = w

    def set3(self, v):
        self.last = v * 3


def _write_last(o, v):
    o.last = v * 3


def method_writes_a_new_field(x):  # 3x²: 6
    o = Holder(1.0)
    o.set3(x)
    return o.last * x


def function_writes_a_new_field(x):  # 3x²: 6
    o = Holder(1.0)
    _write_last(o, x)
    return o.last * x


def _hand(f, x):
    special = {"twice": 6 * x + 12 * x * x, "method_writes_a_new_field": 6.0}
    special["function_writes_a_new_field"] = 6.0
    return special.get(f.__name__, 6 * x)


PAIRS = {
    "forward over reverse": lambda f, x: D_f(lambda y: D_r(f, y), x),
    "reverse over forward": lambda f, x: D_r(lambda y: D_f(f, y), x),
    "reverse over reverse (gradient)": lambda f, x: D_r(lambda y: D_r(f, y), x),
    "hessian": lambda f, x: ad.hessian(f, x),
    "grad of grad": lambda f, x: ad.grad(ad.grad(f))(x),
}


@pytest.mark.parametrize("mode", list(PAIRS))
@pytest.mark.parametrize(
    "f",
    [
        returned_self_discarded,
        no_return,
        twice,
        method_writes_a_new_field,
        function_writes_a_new_field,
    ],
    ids=lambda f: f.__name__,
)
def test_an_object_built_from_constants_and_written_by_a_method(f, mode):
    x, h = 1.3, 1e-5
    fd = (D_f(f, x + h) - D_f(f, x - h)) / (2 * h)
    got = float(PAIRS[mode](f, x))
    assert got == pytest.approx(fd, rel=1e-6)
    assert got == pytest.approx(_hand(f, x), rel=1e-10)


def test_reverse_over_reverse_refuses_naming_the_line_and_a_fix():
    with pytest.raises(
        ad.MutationError,
        match=r"test_ad_second_order_built_from_constants\.py:\d+.*\n.*To fix: use ad\.hessian",
    ):
        ad.hessian_reverse(returned_self_discarded, 1.3)
