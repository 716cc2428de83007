"""User classes as Python runs them: operators dispatched to their dunder methods
(reflected ones and ``__iop__`` included), and objects whose methods write
``self``, followed by identity (``ad.runtime.state``). Each program is checked against
central differences in reverse and forward mode."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad


def both_modes(f, *args):
    """Reverse and forward derivatives of ``f`` against central differences."""
    expected = fd_gradient(f, *args)
    got = ad.gradient(f, *args)
    for g, e in zip(got, expected):
        g = np.zeros_like(e) if g is None else g  # None: no dependence
        np.testing.assert_allclose(np.asarray(g, float), e, rtol=1e-5, atol=1e-6)
    for i, a in enumerate(args):
        ts = [np.zeros_like(b) if isinstance(b, np.ndarray) else 0.0 for b in args]
        ts[i] = np.ones_like(a) if isinstance(a, np.ndarray) else 1.0
        _, ẏ = ad.jvp(f, tuple(args), tuple(ts))
        np.testing.assert_allclose(float(ẏ), float(np.sum(expected[i])), rtol=1e-5, atol=1e-6)
    return got


# --- operators ------------------------------------------------------------------


class Vec:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __add__(self, o):
        if not isinstance(o, Vec):
            return NotImplemented
        return Vec(self.x + o.x, self.y + o.y)

    def __sub__(self, o):
        return Vec(self.x - o.x, self.y - o.y)

    def __mul__(self, s):
        if isinstance(s, Vec):
            return NotImplemented
        return Vec(self.x * s, self.y * s)

    __rmul__ = __mul__

    def __truediv__(self, s):
        return Vec(self.x / s, self.y / s)

    def __rtruediv__(self, s):
        return Vec(s / self.x, s / self.y)

    def __neg__(self):
        return Vec(-self.x, -self.y)

    def __matmul__(self, o):
        return self.x * o.x + self.y * o.y

    def __pow__(self, n):
        return Vec(self.x**n, self.y**n)

    def __getitem__(self, i):
        return (self.x, self.y)[i]

    def __len__(self):
        return 2

    def __abs__(self):
        return math.sqrt(self.x**2 + self.y**2)

    def __lt__(self, o):
        return abs(self) < abs(o)


@dataclasses.dataclass
class Point:
    x: float
    y: float

    def __add__(self, o):
        return Point(self.x + o.x, self.y + o.y)

    def __sub__(self, o):
        return Point(self.x - o.x, self.y - o.y)


def add_and_fields(a, b):
    v = Vec(a, b) + Vec(b, a)
    return v.x * v.y


def reflected_multiply(a, b):
    v = 2.0 * Vec(a, b)
    return v.x + v.y**2


def reflected_divide(a, b):
    v = 3.0 / Vec(a, b)
    return v.x * v.y


def matmul_neg_getitem_len(a, b):
    v = -Vec(a, b)
    return (v @ Vec(b, 1.0)) + v[0] * v[1] + len(v)


def comparison_and_abs(a, b):
    v, w = Vec(a, b) / 2.0, Vec(b, a)
    return (v.x if v < w else v.y) + abs(w)


def power_and_builtin_pow(a, b):
    v = Vec(a, b) ** 3
    w = pow(Vec(b, a), 2)
    return v.x + w.y


def dataclass_point(a, b):
    p = Point(a, b) + Point(1.0, a)
    q = p - Point(b, b)
    return q.x * q.y


def helper_building_vectors(a, b):
    def centre(p, q):
        return (p + q) * 0.5

    c = centre(Vec(a, b), Vec(b * b, 1.0))
    return c @ c


def loop_of_vectors(a, b):
    acc = Vec(0.0, 0.0)
    for k in range(3):
        acc = acc + Vec(a, b) * float(k + 1)
    return acc.x * acc.y


def sum_of_vectors(a, b):
    total = Vec(0.0, 0.0)
    for v in [Vec(a, b), Vec(b, a), Vec(a * b, 1.0)]:
        total += v
    return total.x + total.y**2


@pytest.mark.parametrize(
    "f",
    [
        add_and_fields,
        reflected_multiply,
        reflected_divide,
        matmul_neg_getitem_len,
        comparison_and_abs,
        power_and_builtin_pow,
        dataclass_point,
        helper_building_vectors,
        loop_of_vectors,
        sum_of_vectors,
    ],
)
def test_operators_on_user_classes(f):
    both_modes(f, 1.3, 0.7)


def test_operators_by_hand():
    # (a + b)(b + a) = (a + b)^2: 2(a + b) in each argument
    assert ad.gradient(add_and_fields, 1.0, 2.0) == (6.0, 6.0)
    # 2a + 4b^2
    assert ad.gradient(reflected_multiply, 1.0, 2.0) == (2.0, 16.0)


def test_operators_on_vectors_of_arrays():
    def f(x):
        v = Vec(x, 2.0 * x)
        w = Vec(np.ones(3), x)
        return np.sum((v + w).x) + np.sum(v @ v)

    both_modes(f, np.array([0.5, 1.0, -2.0]))


class Base:
    def __init__(self, x):
        self.x = x

    def __add__(self, o):
        return type(self)(self.x + o.x)

    def __radd__(self, o):
        return type(self)(self.x + 100.0 * o.x)


class Derived(Base):
    def __radd__(self, o):  # a subclass's reflected method goes first
        return Derived(o.x * self.x)


def test_a_subclass_reflected_method_takes_precedence():
    def f(a, b):
        return (Base(a) + Derived(b)).x

    assert f(2.0, 3.0) == 6.0  # Python's own dispatch
    assert ad.gradient(f, 2.0, 3.0) == (3.0, 2.0)
    both_modes(f, 2.0, 3.0)


def test_operator_that_every_method_declines_is_pythons_type_error():
    def f(a):
        return Vec(a, a) + 1.0

    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \+: 'Vec' and 'float'"):
        ad.gradient(f, 1.0)

    class Plain:
        pass

    def g(a):
        return -Plain() if a else a

    with pytest.raises(TypeError, match="bad operand type for unary -: 'Plain'"):
        ad.gradient(g, 1.0)


class Accum:
    def __init__(self, x):
        self.x = x

    def __iadd__(self, o):
        self.x = self.x + o
        return self


def test_inplace_operator_method_updates_the_object():
    def f(a):
        m = Accum(a)
        alias = m
        m += a * a
        return m.x * alias.x

    assert ad.gradient(f, 2.0) == (2 * (2.0 + 4.0) * (1 + 4.0),)
    both_modes(f, 2.0)


def test_second_order_through_dunders():
    def f(x):
        v = Vec(x[0], x[1]) * x[0]
        return v @ v

    h = ad.hessian(f, np.array([1.0, 2.0]))
    # f = x0^4 + x0^2 x1^2
    x0, x1 = 1.0, 2.0
    expected = np.array([[12 * x0**2 + 2 * x1**2, 4 * x0 * x1], [4 * x0 * x1, 2 * x0**2]])
    np.testing.assert_allclose(h, expected, rtol=1e-8)


# --- objects with state -------------------------------------------------------------


class Cell:
    scale = 3.0

    def __init__(self, w):
        self.w = w
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        self.last = self.w * x  # written in a method, read by the caller
        return self.last

    def step(self, h, x):
        self.h = np.tanh(self.w * h + x)
        return self.h

    @classmethod
    def doubled(cls, w):
        return cls(2.0 * w)

    @staticmethod
    def square(z):
        return z * z


def method_writes_self(w, x):
    m = Cell(w)
    y = m(x)
    return y + m.last**2 + m.calls


def statement_call_then_read(w, x):
    m = Cell(w)
    m(x)  # the result unused: only the write carries the derivative
    m(x * x)
    return m.last * m.w


def alias_writes(w, x):
    m = Cell(w)
    n = m
    n.w = n.w * x
    n.w = n.w + x
    return m.w * m.scale


def held_in_a_list(w, x):
    cells = [Cell(w), Cell(x)]
    for c in cells:
        c.w = c.w * c.w
    first = cells[0]
    return first.w + cells[1].w * w


def recurrent_state(w, x):
    cell = Cell(w)
    h = 0.0
    for k in range(4):
        h = cell.step(h, x * k)
    return cell.h * h


def class_and_static_constructors(w, x):
    m = Cell.doubled(w)
    m.w = m.w + Cell.square(x)
    return m(x)


class Layer:
    def __init__(self, w, b):
        self.w, self.b = w, b
        self.cache = None

    def forward(self, x):
        out = np.tanh(x @ self.w + self.b)
        self.cache = out
        return out


class Model:
    def __init__(self, w1, w2):
        self.layers = [Layer(w1, 0.1), Layer(w2, -0.2)]

    def __call__(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


def model_with_caches(w1, w2):
    model = Model(w1, w2)
    y = model(np.array([[0.5, -1.0]]))
    return np.sum(y) + np.sum(model.layers[0].cache ** 2)


@pytest.mark.parametrize(
    "f",
    [
        method_writes_self,
        statement_call_then_read,
        alias_writes,
        held_in_a_list,
        recurrent_state,
        class_and_static_constructors,
    ],
)
def test_objects_with_state(f):
    both_modes(f, 0.8, 1.7)


def test_stateful_model_of_arrays():
    rng = np.random.default_rng(0)
    both_modes(model_with_caches, rng.normal(size=(2, 3)), rng.normal(size=(3, 2)))


def test_state_by_hand():
    # y = w x; y + (w x)^2 + 1: (x + 2 w x^2, w + 2 w^2 x)
    assert ad.gradient(method_writes_self, 2.0, 3.0) == (39.0, 26.0)
    # last = w x^2 (the second call); last * w = w^2 x^2
    assert ad.gradient(statement_call_then_read, 2.0, 3.0) == (36.0, 24.0)


class Box:
    pass


def test_a_method_writing_an_object_built_without_a_derivative():
    # a = Acc() is a constant to its caller, which reads a.total as one: the
    # method's write would be lost there, so it is refused, never a wrong zero.
    class Acc:
        def __init__(self):
            self.total = 0.0

        def add(self, v):
            self.total = self.total + v

    def f(x):
        a = Acc()
        a.add(x)
        return a.total

    # The caller built a and hands it to its method: followed by identity from there.
    assert ad.gradient(f, 2.0) == (1.0,)
    assert ad.jvp(f, (2.0,), (1.0,)) == (2.0, 1.0)


def test_writes_in_a_property_setter_and_super_init():
    class Temp:
        def __init__(self, c):
            self._c = c

        @property
        def kelvin(self):
            return self._c + 273.15

        @kelvin.setter
        def kelvin(self, k):
            self._c = k - 273.15

    class Scaled(Temp):
        def __init__(self, c, s):
            super().__init__(c)
            self.s = s

    def f(c, s):
        t = Scaled(c, s)
        same = t
        same.kelvin = t.kelvin * s
        return t._c * t.s

    both_modes(f, 20.0, 1.5)


def test_a_first_write_another_holder_would_see_is_followed():
    # An object built without a derivative, held twice: the first differentiated
    # write through one name follows it by identity, and the other holder reads it
    # as differentiated (refused before; None / 0.0 before that).
    class Total:
        def __init__(self):
            self.total = 0.0

    def alias(x):
        a = Total()
        b = a
        b.total = x * 3
        return a.total

    def in_a_list(x):
        a = Total()
        held = [a]
        a.total = x * 3
        return held[0].total

    for f in (alias, in_a_list):
        assert ad.gradient(f, 2.0) == (3.0,)
        assert ad.jvp(f, (2.0,), (1.0,)) == (6.0, 3.0)
        assert ad.hessian(f, 2.0) == 0.0
