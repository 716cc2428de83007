"""Gradients through tuples, lists, dicts, dataclasses, objects and namedtuples."""

import math
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest

import ad
from rulescore import Tangent


@dataclass
class Point:
    x: float
    y: float


def dist(p):
    return math.sqrt(p.x**2 + p.y**2)


def test_dataclass_gradient_is_a_tangent():
    (g,) = ad.gradient(dist, Point(3.0, 4.0))
    assert isinstance(g, Tangent) and type(g).primal_type is Point
    assert g.x == pytest.approx(0.6) and g.y == pytest.approx(0.8)


def test_building_a_dataclass_inside():
    def f(a, b):
        p = Point(a, y=b)
        return dist(p)

    ga, gb = ad.gradient(f, 3.0, 4.0)
    assert (ga, gb) == (pytest.approx(0.6), pytest.approx(0.8))


class Params:
    def __init__(self, w, b):
        self.w = w
        self.b = b


def test_plain_object_attributes():
    def f(p, x):
        return p.w * x + p.b

    gp, gx = ad.gradient(f, Params(2.0, 1.0), 3.0)
    assert gp.w == 3.0 and gp.b == 1.0 and gx == 2.0


def test_attribute_write_on_a_local_object():
    def f(x):
        p = Params(0.0, 0.0)
        p.w = x * 2.0
        p.b = x
        return p.w * p.b

    assert ad.gradient(f, 3.0) == (pytest.approx(12.0),)


Pair = namedtuple("Pair", "a b")


def test_namedtuple_fields_and_construction():
    def f(p):
        q = Pair(p.a * 2.0, p.b)
        return q.a * q.b

    (g,) = ad.gradient(f, Pair(1.5, 4.0))
    assert g.a == 8.0 and g.b == 3.0


def test_tuple_argument_and_unpacking():
    def f(t):
        a, b = t
        return a * b + t[0]

    assert ad.gradient(f, (2.0, 5.0)) == ((6.0, 2.0),)


def test_nested_unpacking_and_starred():
    def f(xs):
        first, (second, third), *rest = xs
        return first * second * third + sum(rest)

    (g,) = ad.gradient(f, [2.0, (3.0, 4.0), 5.0, 6.0])
    assert g == [12.0, (8.0, 6.0), 1.0, 1.0]


def test_list_of_arrays_argument():
    xs = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    (g,) = ad.gradient(lambda xs: np.sum(xs[0] * xs[1]), xs)
    np.testing.assert_allclose(g[0], xs[1])
    np.testing.assert_allclose(g[1], xs[0])


def test_dict_read_and_write():
    def f(x):
        d = {}
        d["x"] = x
        return d["x"] * d["x"]

    assert ad.gradient(f, 5.0) == (10.0,)


def test_dict_argument_gradient_is_a_dict():
    (g,) = ad.gradient(lambda d: d["a"] * 2.0 + d["b"] ** 2, {"a": 1.0, "b": 3.0, "c": 9.0})
    assert g == {"a": 2.0, "b": 6.0}


def test_overwritten_dict_entry_gets_no_gradient():
    def f(x, y):
        d = {"v": x}
        d["v"] = y
        return d["v"] * 3.0

    assert ad.gradient(f, 1.0, 2.0) == (None, 3.0)


def test_list_append_and_display():
    def f(x):
        out = [x, 2.0 * x]
        out.append(x * x)
        return out[0] + out[1] + out[2]

    assert ad.gradient(f, 3.0) == (1.0 + 2.0 + 6.0,)


def test_non_differentiable_arguments_are_none():
    def f(x, i, name, nothing, flag):
        return x[i] * len(name) if flag and nothing is None else 0.0

    g = ad.gradient(f, np.array([1.0, 2.0, 3.0]), 1, "abc", None, True)
    np.testing.assert_allclose(g[0], [0.0, 3.0, 0.0])
    assert g[1:] == (None, None, None, None)


def test_withgradient_tuple_aux():
    res = ad.withgradient(lambda x: (x * x, {"aux": x + 1.0}), 3.0)
    assert res.val == (9.0, {"aux": 4.0}) and res.grad == (6.0,)


def test_withgradient_dict_first_value():
    res = ad.withgradient(lambda x, y: {"div": x / y, "mul": x * y}, 3.0, 4.0)
    assert res.val == {"div": 0.75, "mul": 12.0}
    assert res.grad == (0.25, -0.1875)


def test_pullback_with_tuple_output():
    y, back = ad.pullback(lambda x: (x * 2.0, x * x), 3.0)
    assert y == (6.0, 9.0)
    assert back((1.0, 1.0)) == (8.0,)


def test_dict_and_dict_tangent_cotangents_add():
    def f(d):
        out = {}
        out["s"] = d["a"] * d["b"]
        out["t"] = d.get("a") + 1.0
        return out["s"] + out["t"]

    assert ad.gradient(f, {"a": 2.0, "b": 3.0}) == ({"a": 4.0, "b": 2.0},)


LOG: list = []


def test_captured_container_writes():
    seen = []

    def f(x):
        seen.append("called")  # inactive: runs as plain Python
        LOG.append(1)
        return x * 2.0

    assert ad.gradient(f, 1.0) == (2.0,)
    assert seen == ["called"]

    def leaks(x):
        seen.append(x * 3.0)
        return x

    # A write into a captured container happens, and is differentiated (ad.runtime.state).
    assert ad.gradient(leaks, 1.0) == (1.0,)
    assert seen == ["called", 3.0]


class Poly:
    """A plain class: differentiated through its ``__init__``, property and methods."""

    def __init__(self, coeffs, shift=0.0):
        self.coeffs = coeffs
        self.shift = shift

    @property
    def degree(self):
        return len(self.coeffs) - 1

    def __call__(self, x):
        acc = 0.0
        for c in reversed(self.coeffs):
            acc = acc * x + c
        return acc + self.shift

    def slope(self, x):
        return sum(i * c * x ** (i - 1) for i, c in enumerate(self.coeffs) if i > 0)


def test_plain_class_built_inside_the_function(check_grad):
    def f(c0, c1, c2, x):
        p = Poly([c0, c1, c2], shift=c0)
        return p(x) ** 2 + p.slope(x) + p.degree

    check_grad(f, 0.5, -1.2, 2.0, 0.7)


def test_object_built_once_per_call(capsys):
    class Loud:
        def __init__(self, v):
            print("init")
            self.v = v

    assert ad.gradient(lambda x: Loud(x).v * 2.0, 1.0) == (2.0,)
    assert capsys.readouterr().out == "init\n"


def test_writing_into_an_argument_that_is_not_returned():
    def fill(memo, key, value):
        memo[key] = value

    def f(x):
        memo = {}
        fill(memo, "a", x * 2.0)
        return memo["a"]

    # The caller built memo and handed it to fill: the pass follows it by identity.
    assert ad.gradient(f, 1.0) == (2.0,)
    assert ad.jvp(f, (1.0,), (1.0,)) == (2.0, 2.0)

    def top(memo, x):  # a differentiated argument written and not returned: refused
        memo["a"] = x
        return memo["a"]

    with pytest.raises(ad.MutationError, match="argument 'memo' and does not return it"):
        ad.gradient(top, {}, 1.0)

    def fill_and_return(memo, key, value):
        memo[key] = value
        return memo

    def g(x):
        memo = fill_and_return({}, "a", x * 2.0)
        return memo["a"]

    assert ad.gradient(g, 1.0) == (2.0,)


def test_closure_over_a_rebound_variable_is_an_error():
    def f(x, y):
        scale = y

        def inner(v):
            return v * scale

        a = inner(x)
        scale = y * 2.0  # inner now sees the new value (late binding)
        return a + inner(x)

    with pytest.raises(
        ad.UnsupportedSyntaxError, match="captures 'scale', which is assigned again"
    ):
        ad.gradient(f, 1.5, 2.0)


def _merged(x, y):
    base = {"a": x, "b": y}
    d = {**base, "b": y * y, **{"c": x * y}}  # a later key replaces an earlier one
    return d["a"] * d["b"] + d["c"] * 2.0 + len(d)


def _updated_params(p):
    q = {"scale": 2.0, **p, "w": p["w"] * p["scale"]}
    return np.sum(q["w"] * q["b"]) * q["scale"]


def test_dict_display_with_double_star_in_every_mode():
    # x y² + 2 x y + 3: d/dx = y² + 2y, d/dy = 2xy + 2x
    assert ad.gradient(_merged, 2.0, 3.0) == (15.0, 16.0)
    assert ad.jvp(_merged, (2.0, 3.0), (1.0, 0.0))[1] == 15.0
    assert ad.jvp(_merged, (2.0, 3.0), (0.0, 1.0))[1] == 16.0
    h = ad.hessian(lambda v: _merged(v[0], v[1]), np.array([2.0, 3.0]))
    np.testing.assert_allclose(h, [[0.0, 2 * 3.0 + 2.0], [2 * 3.0 + 2.0, 2 * 2.0]])
    p = {"w": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0]), "scale": 0.5}
    g = ad.gradient(_updated_params, p)[0]
    # s² Σ w b: d/dw = s² b, d/db = s² w, d/ds = 2 s Σ w b
    np.testing.assert_allclose(g["w"], 0.25 * p["b"])
    np.testing.assert_allclose(g["b"], 0.25 * p["w"])
    assert g["scale"] == pytest.approx(2 * 0.5 * 11.0)


def _dict_of_zip(a, b):
    d = dict(zip(["x", "y"], [a, b]))
    return d["x"] * d["y"] * d["y"]


def _dict_of_keywords(a, b):
    d = dict(x=a, y=b * b)
    return d["x"] * d["y"]


def _dict_of_mapping_and_keywords(a, b):
    d = dict({"x": a, "y": 0.0}, y=b)  # the keyword replaces the mapping's value
    return d["x"] * d["y"] * d["y"]


def _dict_of_pairs(a, b):
    d = dict([("x", a), ("y", b), ("x", b)])  # a later pair replaces an earlier one
    return d["x"] * d["y"] * a


@pytest.mark.parametrize(
    "f, want",
    [
        (_dict_of_zip, lambda a, b: (b * b, 2 * a * b)),
        (_dict_of_keywords, lambda a, b: (b * b, 2 * a * b)),
        (_dict_of_mapping_and_keywords, lambda a, b: (b * b, 2 * a * b)),
        (_dict_of_pairs, lambda a, b: (b * b, 2 * a * b)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_the_dict_constructor_in_both_modes(f, want):
    a, b = 2.0, 3.0
    assert ad.gradient(f, a, b) == tuple(pytest.approx(v) for v in want(a, b))
    assert ad.jvp(f, (a, b), (1.0, 0.0))[1] == pytest.approx(want(a, b)[0])
    assert ad.jvp(f, (a, b), (0.0, 1.0))[1] == pytest.approx(want(a, b)[1])


def test_the_dict_constructor_at_second_order():
    def f(v):
        return _dict_of_zip(v[0], v[1])

    v = np.array([2.0, 3.0])
    h = [[0.0, 2 * v[1]], [2 * v[1], 2 * v[0]]]
    np.testing.assert_allclose(ad.hessian(f, v), h)  # forward over reverse
    e1 = np.array([1.0, 0.0])
    np.testing.assert_allclose(ad.gradient(lambda u: ad.jvp(f, (u,), (e1,))[1], v)[0], h[0])
    np.testing.assert_allclose(
        ad.hessian_reverse(lambda u: _dict_of_keywords(u[0], u[1]), v), [[0.0, 6.0], [6.0, 4.0]]
    )
