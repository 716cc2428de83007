"""Objects built or combined by code that is not the user's source, but runs the
user's: a dataclass's generated ``__init__`` calling ``__post_init__``, and
``sum`` calling the items' ``__add__``/``__radd__``.

Both gave silently wrong derivatives before (``__post_init__`` ran as plain
Python, so a field it computed was a constant; ``sum`` of objects was
differentiated as if ``+`` were numbers' ``+``). Each program is checked against
central differences and a hand-derived value in reverse and forward mode, and
its second derivative against differences of the first.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad

# --- dataclasses whose generated __init__ runs __post_init__ ---------------------------


@dataclass
class Box:
    side: float

    def __post_init__(self):
        self.area = self.side * self.side


@dataclass(frozen=True)
class Scaled:
    a: float
    scale: InitVar[float] = 2.0
    c: float = field(init=False)

    def __post_init__(self, scale):
        object.__setattr__(self, "c", self.a * scale)


@dataclass
class History:
    a: float
    xs: list = field(default_factory=list)
    n: int = field(default=3, init=False)

    def __post_init__(self):
        self.xs.append(self.a**2)
        self.total = sum(self.xs) * self.n


@dataclass(kw_only=True)
class Product:
    a: float
    b: float = 1.0

    def __post_init__(self):
        self.p = self.a * self.b


@dataclass
class OwnInit:
    a: float

    def __init__(self, x):  # the class body's __init__, not a generated one
        self.a = 2.0 * x * x


@dataclass
class Base:
    a: float

    def __post_init__(self):
        self.d = self.a * 3.0


@dataclass
class Child(Base):
    b: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        self.e = self.d * self.b


@dataclass(slots=True)
class Slotted:
    a: float
    b: float

    def __post_init__(self):
        self.b = self.b + self.a * self.a


@dataclass
class Normed:
    w: np.ndarray

    def __post_init__(self):
        self.n = np.sqrt(np.sum(self.w**2))


@dataclass
class Plain:  # no __post_init__: built structurally, as before
    a: float
    b: float = 2.0


# (function, x, f'(x) by hand, f''(x) by hand; None: refused at second order)
POST_INIT = [
    (lambda a: Box(a).area * a, 1.5, lambda a: 3 * a * a, lambda a: 6 * a),
    (lambda a: Scaled(a).c * a, 1.5, lambda a: 4 * a, lambda a: 4.0),
    (lambda a: Scaled(a, a).c, 1.5, lambda a: 2 * a, lambda a: 2.0),
    (lambda a: History(a).total, 1.5, lambda a: 6 * a, None),
    (lambda a: History(a, [a]).total, 0.7, lambda a: 3 * (1 + 2 * a), None),
    (lambda a: Product(a=a, b=a * a).p, 1.5, lambda a: 3 * a * a, lambda a: 6 * a),
    (lambda x: OwnInit(x).a, 1.5, lambda x: 4 * x, lambda x: 4.0),
    (lambda a: Child(a, a).e, 1.5, lambda a: 6 * a, lambda a: 6.0),
    (lambda a: Slotted(a, 2 * a).b, 1.5, lambda a: 2 + 2 * a, lambda a: 2.0),
    (
        lambda x: Normed(np.array([x, 2 * x])).n * x,
        1.5,
        lambda x: 2 * 5**0.5 * x,
        lambda x: 2 * 5**0.5,
    ),
    (lambda a: Plain(a).a * Plain(a, a).b, 1.5, lambda a: 2 * a, lambda a: 2.0),
]
POST_INIT_IDS = [
    "computed field",
    "frozen, InitVar default",
    "frozen, InitVar given",
    "default_factory, init=False field",
    "default_factory given",
    "kw_only",
    "dataclass with its own __init__",
    "inherited __post_init__ through super()",
    "slots",
    "array field",
    "no __post_init__",
]


@pytest.mark.parametrize(("f", "x", "d1", "d2"), POST_INIT, ids=POST_INIT_IDS)
def test_post_init_reverse_and_forward(f, x, d1, d2):
    want = d1(x)
    assert ad.gradient(f, x)[0] == pytest.approx(want, rel=1e-12)
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(want, rel=1e-12)
    assert fd_gradient(f, x)[0] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(("f", "x", "d1", "d2"), POST_INIT, ids=POST_INIT_IDS)
def test_post_init_second_order(f, x, d1, d2):
    if d2 is None:  # a list written inside the object: refused at second order, by name
        with pytest.raises(ad.MutationError, match=r"a write into a container read out of"):
            ad.hessian(f, x)
        return
    want = d2(x)
    assert ad.hessian(f, x) == pytest.approx(want, rel=1e-10, abs=1e-12)
    fd = (ad.gradient(f, x + 1e-5)[0] - ad.gradient(f, x - 1e-5)[0]) / 2e-5
    assert fd == pytest.approx(want, rel=1e-5, abs=1e-8)
    assert ad.gradient(lambda t: ad.jvp(f, (t,), (1.0,))[1], x)[0] == pytest.approx(want)


def test_the_equivalent_init_builds_what_the_generated_one_builds():
    from ad.runtime.constructors import init_to_differentiate

    for cls, args, kwargs in [
        (Scaled, (1.5, 3.0), {}),
        (History, (0.5,), {}),
        (History, (0.5, [1.0]), {}),
        (Product, (), {"a": 2.0}),
        (Child, (1.0, 2.0), {}),
        (Slotted, (1.0, 2.0), {}),
    ]:
        init = init_to_differentiate(cls)
        built = object.__new__(cls)
        init(built, *args, **kwargs)
        assert built == cls(*args, **kwargs)
    assert init_to_differentiate(Plain) is None  # structural
    assert init_to_differentiate(OwnInit) is OwnInit.__init__


# --- sum over objects whose + is their own ----------------------------------------------


class Mul:
    """A value whose ``+`` multiplies: ``sum`` must run it, not add."""

    def __init__(self, v):
        self.v = v

    def __add__(self, o):
        return Mul(self.v * o.v) if isinstance(o, Mul) else Mul(self.v + o)

    __radd__ = __add__


@dataclass
class Vec:
    x: float
    y: float

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y)


def sum_with_int_start(a):
    return sum([Mul(a), Mul(a * a), Mul(3.0)]).v  # (0 + a)·a²·3 = 3a³


def sum_with_object_start(a):
    return sum((Mul(a), Mul(2.0)), Mul(a)).v  # a·a·2 = 2a²


def sum_of_dataclasses(a):
    s = sum([Vec(a, 1.0), Vec(a * a, a)], Vec(0.0, 0.0))
    return s.x * s.y  # (a + a²)(1 + a)


def sum_of_numbers_still_linear(a):
    return sum([a, a * a, 3.0]) + sum(np.array([a, 2 * a]))


SUMS = [
    (sum_with_int_start, 1.5, lambda a: 9 * a * a, lambda a: 18 * a),
    (sum_with_object_start, 1.5, lambda a: 4 * a, lambda a: 4.0),
    (sum_of_dataclasses, 0.8, lambda a: 1 + 4 * a + 3 * a * a, lambda a: 4 + 6 * a),
    (sum_of_numbers_still_linear, 1.5, lambda a: 4 + 2 * a, lambda a: 2.0),
]
SUM_IDS = [c[0].__name__ for c in SUMS]


@pytest.mark.parametrize(("f", "x", "d1", "d2"), SUMS, ids=SUM_IDS)
def test_sum_runs_the_items_add(f, x, d1, d2):
    want = d1(x)
    assert ad.gradient(f, x)[0] == pytest.approx(want, rel=1e-12)
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(want, rel=1e-12)
    assert fd_gradient(f, x)[0] == pytest.approx(want, rel=1e-6)
    assert ad.hessian(f, x) == pytest.approx(d2(x), rel=1e-10)


# --- list and dict subclasses whose own methods Python calls ----------------------------


class Doubling(dict):
    def __setitem__(self, k, v):
        dict.__setitem__(self, k, v * 2.0)


class Tens(list):
    def append(self, v):
        list.append(self, v * 10.0)


class Tripled(dict):
    def __getitem__(self, k):
        return dict.__getitem__(self, k) * 3.0


def set_through_override(a):
    d = Doubling()
    d["w"] = a
    return d["w"] * a  # 2a²


def append_through_override(a):
    xs = Tens()
    xs.append(a)
    return xs[0] * a  # 10a²


def read_through_override(a):
    d = Tripled(w=2.0)  # a dict subclass built from a constant, read with a
    d["k"] = a  # builtin write (no __setitem__ of its own)
    return d["k"] * a  # 3a²


CASES = [set_through_override, append_through_override, read_through_override]


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_subclass_override_is_not_replaced_by_the_builtin(f, mode):
    # was 2a, 10a and 3a (the builtin's derivative, ignoring the override): now
    # the override runs, and the call it makes of the builtin's unbound method
    # (dict.__setitem__(self, k, v)) is refused, naming it and the line
    a = 1.3
    with pytest.raises(ad.NoRuleError, match=r"(?s)no rule to differentiate (dict|list)\."):
        if mode == "reverse":
            ad.gradient(f, a)
        else:
            ad.jvp(f, (a,), (1.0,))


def sum_of_lists(a, b):
    s = sum([[a], [b, a]], [])  # noqa: RUF017 (the idiom users write)
    return s[0] * s[1] + s[2]


def sum_of_tuples(a, b):
    s = sum(((a,), (b * b,)), ())
    return s[0] * s[1]


@pytest.mark.parametrize(
    ("f", "hand"),
    [(sum_of_lists, lambda a, b: (b + 1, a)), (sum_of_tuples, lambda a, b: (b * b, 2 * a * b))],
)
def test_sum_concatenates_sequences(f, hand):
    # was: a wrong number in forward mode and an internal error in reverse mode
    x = (1.3, 0.7)
    np.testing.assert_allclose(ad.gradient(f, *x), hand(*x), rtol=1e-12)
    np.testing.assert_allclose(ad.gradient(f, *x), fd_gradient(f, *x), rtol=1e-6)
    assert ad.jvp(f, x, (1.0, 0.0))[1] == pytest.approx(hand(*x)[0])


# --- round, math.floor/ceil/trunc and ~ call the class's own dunder ---------------------


class Odd:
    def __init__(self, v):
        self.v = v

    def __round__(self, n=None):
        return Odd(self.v * 10.0 if n is None else self.v * n)

    def __floor__(self):
        return Odd(self.v * 2.0)

    def __ceil__(self):
        return Odd(self.v**3)

    def __trunc__(self):
        return Odd(-self.v)

    def __invert__(self):
        return Odd(1.0 / self.v)

    def __and__(self, o):
        return Odd(self.v * o.v)


DUNDERS = [
    (lambda a: round(Odd(a)).v * a, lambda a: 20 * a),
    (lambda a: round(Odd(a), 3).v * a, lambda a: 6 * a),
    (lambda a: math.floor(Odd(a)).v * a, lambda a: 4 * a),
    (lambda a: math.ceil(Odd(a)).v, lambda a: 3 * a * a),
    (lambda a: math.trunc(Odd(a)).v * a, lambda a: -2 * a),
    (lambda a: (~Odd(a)).v * a * a, lambda a: 1.0),
    (lambda a: (Odd(a) & Odd(a)).v, lambda a: 2 * a),
    # numbers keep their zero derivative
    (lambda a: a * round(a) + a * round(a, 1) + math.floor(a) * a + float(~int(a)) * a, None),
]


@pytest.mark.parametrize(("f", "d1"), DUNDERS)
def test_rounding_and_bit_operators_run_the_class_dunder(f, d1):
    # was 0 (a number's rule: no derivative) for a class defining the dunder
    a = 1.3
    want = fd_gradient(f, a)[0] if d1 is None else d1(a)
    assert ad.gradient(f, a)[0] == pytest.approx(want, rel=1e-9)
    assert ad.jvp(f, (a,), (1.0,))[1] == pytest.approx(want, rel=1e-9)


def sum_start_keyword_numbers(a):
    return sum([a, a * a], start=2.0) * a  # a² + a³ + 2a


def sum_start_keyword_objects(a):
    return sum([Mul(a), Mul(2.0)], start=Mul(a)).v  # a·a·2 = 2a²


@pytest.mark.parametrize(
    ("f", "d1", "d2"),
    [
        (sum_start_keyword_numbers, lambda a: 2 * a + 3 * a * a + 2, lambda a: 2 + 6 * a),
        (sum_start_keyword_objects, lambda a: 4 * a, lambda a: 4.0),
    ],
)
def test_sum_with_start_by_keyword(f, d1, d2):
    # numbers: forward mode and hessian raised TypeError (the rule took no keywords);
    # objects: reverse mode gave None (the keyword call's pullback lost Stateful)
    a = 1.3
    assert ad.gradient(f, a)[0] == pytest.approx(d1(a), rel=1e-12)
    assert ad.jvp(f, (a,), (1.0,))[1] == pytest.approx(d1(a), rel=1e-12)
    assert fd_gradient(f, a)[0] == pytest.approx(d1(a), rel=1e-6)
    # a keyword carrying a derivative at second order: followed into sum's frule
    # (it takes its keywords' tangents), as forward mode follows it (was refused)
    assert ad.hessian(f, a) == pytest.approx(d2(a), rel=1e-10)
