"""Soundness audit (issue 18): programs that reach a value through a second name.

Each program writes or reads something through an alias: a view of an array
(a slice, ``.T``, ``reshape``, ``ravel``, a row of ``for row in M``), a list,
dict or object holding it, a container written through another name, nested
lists, ``super()`` and cooperative inheritance, nested functions and lambdas
(shadowed names, recursion, functions defined after their use), properties,
descriptors, ``__getattr__``, ``__slots__``, and closures writing into a
container of the enclosing function.

The rule checked for every program, in reverse mode (``ad.gradient``), forward
mode (``ad.jvp``) and at second order (``ad.hessian``): the AD either returns
what central differences of the plain function give, or raises an
``ad.ADError`` naming the user's line in this file and a fix. Never a wrong
number. Programs marked ``works`` must also be differentiated (not refused).

A small program generator (hypothesis, deterministic) combines the forms that
once gave wrong numbers: loops over lists of lists, closures writing into a
list of the enclosing function, recursive nested functions, and
``super().__init__`` with keyword arguments.
"""

from __future__ import annotations

import importlib.util
import itertools
from dataclasses import dataclass

import numpy as np
import pytest
from ad_testing import fd_gradient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad

THIS_FILE = __file__


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


def _plain(f):
    """``f`` on a fresh copy of its argument (programs may write their input)."""
    return lambda x: float(f(_copy(x)))


def _names_user_line(e: Exception, filename: str = THIS_FILE) -> None:
    msg = str(e)
    assert filename in msg, f"the error does not name the user's file:\n{msg}"
    assert any(w in msg.lower() for w in ("fix", "first", "instead")), f"no fix given:\n{msg}"


def check_sound(f, x, works=False, second=True, filename=THIS_FILE):
    """Reverse, forward and second order: right, or an ADError naming the user's line."""
    plain = _plain(f)
    (want,) = fd_gradient(plain, _copy(x))
    outcomes = []
    saved = _copy(x)
    try:
        (g,) = ad.gradient(f, _copy(x))
    except ad.ADError as e:
        _names_user_line(e, filename)
        outcomes.append("refused")
    else:
        g = np.zeros_like(want) if g is None else np.asarray(g, float)
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg="reverse mode")
        outcomes.append("ok")
    rng = np.random.default_rng(0)
    t = 0.7 if isinstance(x, float) else rng.normal(size=np.shape(x))
    try:
        y, ẏ = ad.jvp(f, (_copy(x),), (_copy(t),))
    except ad.ADError as e:
        _names_user_line(e, filename)
        outcomes.append("refused")
    else:
        assert np.isclose(float(y), plain(x)), "forward mode: the value"
        ẏ = 0.0 if ẏ is None else float(ẏ)
        np.testing.assert_allclose(
            ẏ, float(np.sum(want * t)), rtol=1e-5, atol=1e-6, err_msg="forward mode"
        )
        outcomes.append("ok")
    if second and outcomes[0] == "ok":
        try:
            H = ad.hessian(f, _copy(x))
        except ad.ADError as e:
            _names_user_line(e, filename)
        else:
            h = 1e-5
            if isinstance(x, float):
                Hw = (ad.gradient(f, x + h)[0] - ad.gradient(f, x - h)[0]) / (2 * h)
            else:
                cols = []
                for k in range(x.size):
                    e = np.zeros(x.size)
                    e[k] = h
                    e = e.reshape(x.shape)
                    gp = np.asarray(ad.gradient(f, x + e)[0], float).reshape(-1)
                    gm = np.asarray(ad.gradient(f, x - e)[0], float).reshape(-1)
                    cols.append((gp - gm) / (2 * h))
                Hw = np.stack(cols, axis=1)
            H = np.asarray(H, float).reshape(np.shape(Hw))
            np.testing.assert_allclose(H, Hw, rtol=1e-4, atol=1e-5, err_msg="second order")
    if isinstance(x, np.ndarray):
        assert np.array_equal(x, saved), "the AD changed the caller's array"
    if works:
        assert outcomes == ["ok", "ok"], f"refused: {outcomes}"
    return outcomes


# --------------------------------------------------------------------------
# Programs. Arrays are (4,) unless said otherwise.


def _vec():
    return np.array([0.3, -0.7, 1.1, 0.5])


# Views and in-place updates through a second name.


def view_slice(x):
    y = x * 2.0
    v = y[1:]
    v += x[:3]
    return np.sum(y * y)


def view_T(x):
    y = np.outer(x, x)
    t = y.T
    t *= 2.0
    return np.sum(y * x[:, None])


def view_reshape(x):
    y = x * 1.0
    r = y.reshape(2, 2)
    r[0] += 1.0
    return np.sum(y**2)


def view_ravel_write(x):
    y = np.outer(x, x)
    r = y.ravel()
    r[:2] = x[:2]
    return np.sum(y * y)


def rows_of_matrix(x):
    M = np.outer(x, x)
    for row in M:
        row *= 2.0
    return np.sum(M * x)


def rows_item_write(x):
    M = np.outer(x, x)
    for row in M:
        row[0] = row[1]
    return np.sum(M * M)


def array_in_list(x):
    y = x * 1.0
    L = [y]
    L[0] += x
    return np.sum(y * y)


def array_in_dict_written_by_name(x):
    y = x * 1.0
    d = {"a": y}
    y *= 3.0
    return np.sum(d["a"] * x)


class Holder:
    def __init__(self, a):
        self.a = a


def array_in_object(x):
    y = x * 1.0
    h = Holder(y)
    h.a += x
    return np.sum(y * y)


def array_through_field_alias(x):
    h = Holder(x * 1.0)
    w = h.a
    w += x
    return np.sum(h.a**2)


def array_alias_read_both(x):
    y = x * 1.0
    z = y
    y *= x
    return np.sum(z) + np.sum(y)


def view_read_after_base_write(x):
    y = x * 1.0
    v = y[:2]
    y[0] = 5.0
    return np.sum(v * x[:2])


def _add_into(a, b):
    a += b
    return a


def helper_updates_view(x):
    y = x * 1.0
    _add_into(y[1:], x[:3])
    return np.sum(y * y)


def helper_updates_alias(x):
    y = x * 1.0
    z = _add_into(y, x)
    return np.sum(y * z)


def fresh_update_nobody_sees(x):
    y = x * 2.0
    y += x * x
    y[1] = x[0] * 3.0
    return np.sum(y * y)


# Containers written through an alias, nested lists.


def list_alias_write(x):
    a = [1.0, 2.0]
    b = a
    b[0] = x
    return a[0] * a[0] + a[1]


def dict_alias_write(x):
    d = {}
    d2 = d
    d2["k"] = x
    return d["k"] ** 3


def nested_list_through_inner(x):
    inner = [0.0, 0.0]
    outer = [inner, [1.0]]
    inner[1] = x * x
    return outer[0][1] + x


def nested_dict_through_inner(x):
    d = {"a": {"b": 1.0}}
    e = d["a"]
    e["b"] = x * 2.0
    return d["a"]["b"] * x


def list_append_alias(x):
    a = []
    b = a
    b.append(x)
    b.append(x * x)
    return a[0] + a[1] * 2.0


def list_rows_loop(x):
    # wrong before: the loop's own copy of M was counted as the AD's only holder
    M = [[x, 1.0], [2.0, x]]
    for row in M:
        row[0] = row[0] * x
    return M[0][0] + M[1][0]


def list_rows_loop_three(x):
    M = [[x, x * x], [2.0, x], [x, 0.5]]
    for row in M:
        row[1] = row[0] * row[1]
    return M[0][1] + M[1][1] * M[2][1]


def dict_rows_loop(x):
    rows = {"a": [x, 1.0], "b": [x * x, 2.0]}
    for k in rows:
        r = rows[k]
        r[1] = r[0] * x
    return rows["a"][1] + rows["b"][1]


def _fill(lst, v):
    lst[0] = v


def list_written_by_helper(x):
    a = [0.0]
    _fill(a, x * 3)
    return a[0] * x


def list_written_by_helper_alias(x):
    a = [0.0]
    b = a
    _fill(b, x * 3)
    return a[0] * x


# super() and cooperative inheritance.


class Base:
    def __init__(self, s):
        self.s = s

    def apply(self, t):
        return t * self.s


class Child(Base):
    def __init__(self, s):
        super().__init__(s * 0.5)
        self.bias = 0.25

    def apply(self, t):
        return super().apply(t) + self.bias * t


def super_method(x):
    return Child(x).apply(x)


class KwChild(Base):
    def __init__(self, x):
        super().__init__(s=x * 2)


def super_init_keyword(x):
    # wrong before: super().__init__'s keyword arguments lost their derivative
    return KwChild(x).s * x


class Pair:
    def __init__(self, a, b=1.0):
        self.a = a
        self.b = b


class PairKw(Pair):
    def __init__(self, x):
        super().__init__(x, b=x * x)


def super_init_mixed(x):
    k = PairKw(x)
    return k.a + k.b


class PairStar(Pair):
    def __init__(self, x, **kw):
        super().__init__(x, **kw)


def super_init_star_keywords(x):
    k = PairStar(x, b=x * 3)
    return k.a * k.b


class PairStarArgs(Pair):
    def __init__(self, *args):
        super().__init__(*args)


def super_init_star_args(x):
    k = PairStarArgs(x * 2, x)
    return k.a * k.b


class Coop1:
    def __init__(self, x, **kw):
        super().__init__(**kw)
        self.p = x


class Coop2:
    def __init__(self, y, **kw):
        super().__init__(**kw)
        self.q = y


class Both(Coop1, Coop2):
    def __init__(self, x):
        super().__init__(x=x * 2, y=x**2)


def cooperative_init(x):
    b = Both(x)
    return b.p * b.q


class A0:
    def __init__(self, a, **kw):
        super().__init__(**kw)
        self.a = a

    def val(self):
        return self.a


class AB(A0):
    def __init__(self, b, **kw):
        super().__init__(**kw)
        self.b = b

    def val(self):
        return super().val() * self.b


class AC(A0):
    def __init__(self, c, **kw):
        super().__init__(**kw)
        self.c = c

    def val(self):
        return super().val() + self.c


class Diamond(AB, AC):
    def __init__(self, x):
        super().__init__(a=x, b=x * 2, c=x * x)

    def val(self):
        return super().val() - self.c


def diamond(x):
    return Diamond(x).val()


# Nested functions and lambdas: shadowed names, recursion, later definitions.


def lambda_shadows_outer(x):
    s = x * 2
    g = lambda s: s * s  # noqa: E731
    return g(x) + s


def inner_shadows_outer(x):
    s = x * 3
    t = x + 1

    def g(s):
        return s * t

    return g(x) + g(s)


def nested_lambda_shadow(x):
    y = x * x
    h = lambda x: (lambda y: y * x)(x + 1)  # noqa: E731
    return h(y) + y


def recursive_inner(x):
    # wrong before: the recursive calls lost the derivative through x
    def p(n, v):
        return v if n == 0 else p(n - 1, v * x)

    return p(3, 1.0)


def recursive_lambda(x):
    g = lambda n: x if n == 0 else x * g(n - 1)  # noqa: E731
    return g(2)


def recursive_inner_argument(x):
    def p(n, v, w):
        return v if n == 0 else p(n - 1, v * w, w)

    return p(3, 1.0, x)


def defined_after_use(x):
    # wrong before: a's derivative was taken before b existed
    def a(v):
        return b(v) * 2

    def b(v):
        return v * x

    return a(1.0)


def mutual_recursion(x):
    def ev(n, v):
        return v if n == 0 else od(n - 1, v * x)

    def od(n, v):
        return ev(n - 1, v + x) if n > 0 else v

    return ev(3, 1.0)


def chained_inner(x):
    def a(v):
        return v * x

    def b(v):
        return a(v) * x

    return b(2.0)


def inner_local_shadows_capture(x):
    k = x * 2

    def g(v):
        k = v * 3  # a local of g: not the outer k
        return k

    return g(x) * k


def closure_appends_to_outer_list(x):
    # wrong before: the list's new entry was read here as a constant
    acc = []

    def add(v):
        acc.append(v * 2)

    add(x)
    return acc[0] * x


def closure_writes_outer_dict(x):
    d = {"k": 1.0}

    def put(v):
        d["k"] = v * v

    put(x)
    return d["k"] + x


def helper_gets_the_list(x):
    acc = []

    def add(lst, v):
        lst.append(v * 2)

    add(acc, x)
    return acc[0] * x


# Attributes: properties, descriptors, __getattr__, __getattribute__, __slots__.


class Prop:
    def __init__(self, r):
        self._r = r

    @property
    def area(self):
        return 3.0 * self._r**2

    @property
    def r(self):
        return self._r

    @r.setter
    def r(self, v):
        self._r = v * 2.0


def property_setter(x):
    p = Prop(1.0)
    p.r = x
    return p.area + p.r


class Lookup:
    def __init__(self, d):
        self.__dict__["_d"] = d

    def __getattr__(self, k):
        return self._d[k]


def getattr_hook(x):
    g = Lookup({"u": x * 2, "w": 3.0})
    return g.u * g.w * x


class Twice:
    def __init__(self, v):
        self.v = v

    def __getattribute__(self, k):
        if k == "twice":
            return object.__getattribute__(self, "v") * 2
        return object.__getattribute__(self, k)


def getattribute_hook(x):
    g = Twice(x)
    return g.twice * g.v


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a):
        self.a = a
        self.b = a * a


def slots_alias(x):
    s = Slotted(x)
    s.a = s.a * s.b
    t = s
    t.b = t.b + 1.0
    return s.a + s.b


class Doubling:
    def __set_name__(self, owner, name):
        self.name = "_" + name

    def __get__(self, obj, typ=None):
        return getattr(obj, self.name) * 2.0

    def __set__(self, obj, v):
        setattr(obj, self.name, v + 1.0)


class WithDescriptor:
    val = Doubling()

    def __init__(self, v):
        self.val = v


def descriptor(x):
    w = WithDescriptor(x)
    return w.val * x


class Memo:
    def __init__(self, x):
        self.x = x
        self.memo = {}

    def fib(self, n):
        if n in self.memo:
            return self.memo[n]
        r = self.x if n < 2 else self.fib(n - 1) * 0.5 + self.fib(n - 2)
        self.memo[n] = r
        return r


def memo_in_method(x):
    return Memo(x).fib(5)


@dataclass
class Pt:
    x: float
    y: float


def dataclass_alias(x):
    p = Pt(x, x)
    q = p
    q.x = p.y * 3
    return p.x * p.y


class Box:
    def __init__(self, v):
        self.v = v


def object_alias_order(x):
    a = Box(x)
    b = a
    a.v = a.v * 3.0
    c = b.v
    b.v = c * x
    return a.v + b.v


def object_in_list(x):
    a = Box(x)
    L = [a]
    a.v = a.v**2
    return L[0].v


def object_in_dict_alias(x):
    a = Box(1.0)
    d = {"a": a}
    e = d["a"]
    e.v = x * 3
    return a.v + d["a"].v


ARRAY_PROGRAMS = [
    view_slice,
    view_T,
    view_reshape,
    view_ravel_write,
    rows_of_matrix,
    rows_item_write,
    array_in_list,
    array_in_dict_written_by_name,
    array_in_object,
    array_through_field_alias,
    array_alias_read_both,
    view_read_after_base_write,
    helper_updates_view,
    helper_updates_alias,
]
FLOAT_PROGRAMS = [
    list_alias_write,
    dict_alias_write,
    nested_list_through_inner,
    nested_dict_through_inner,
    list_append_alias,
    list_rows_loop,
    list_rows_loop_three,
    dict_rows_loop,
    list_written_by_helper_alias,
    recursive_lambda,
    memo_in_method,
    slots_alias,
    dataclass_alias,
    object_alias_order,
    object_in_list,
    object_in_dict_alias,
    super_init_star_args,  # refused today: super().__init__(*args) reaches no as_init path
]
#: differentiated, not refused, in reverse and forward mode
WORKING = [
    (fresh_update_nobody_sees, _vec),
    (list_written_by_helper, 0.7),
    (super_method, 0.7),
    (super_init_keyword, 0.7),
    (super_init_mixed, 0.7),
    (super_init_star_keywords, 0.7),
    (cooperative_init, 0.7),
    (diamond, 0.7),
    (lambda_shadows_outer, 0.7),
    (inner_shadows_outer, 0.7),
    (nested_lambda_shadow, 0.7),
    (recursive_inner_argument, 0.7),
    (chained_inner, 0.7),
    (inner_local_shadows_capture, 0.7),
    (helper_gets_the_list, 0.7),
    (property_setter, 0.7),
    (getattr_hook, 0.7),
    (getattribute_hook, 0.7),
    (descriptor, 0.7),
]


@pytest.mark.parametrize("f", ARRAY_PROGRAMS, ids=lambda f: f.__name__)
def test_array_alias_programs_are_right_or_refused(f):
    check_sound(f, _vec())


@pytest.mark.parametrize("f", FLOAT_PROGRAMS, ids=lambda f: f.__name__)
def test_float_alias_programs_are_right_or_refused(f):
    check_sound(f, 0.7)


@pytest.mark.parametrize("f, x", WORKING, ids=lambda v: getattr(v, "__name__", ""))
def test_alias_programs_that_are_differentiated(f, x):
    check_sound(f, x() if callable(x) else x, works=True)


# The wrong numbers this audit found, each now refused with the user's line and a fix.


@pytest.mark.parametrize("f", [defined_after_use, mutual_recursion], ids=lambda f: f.__name__)
def test_a_nested_function_defined_after_its_user(f):
    # Wrong before (reverse and forward): the closure's derivative was taken where it is
    # defined, before the function it calls existed. Mutual recursion is refused in
    # forward mode (and so by ``hessian``, reverse over forward), with the user's line.
    outcomes = check_sound(f, 0.7)
    assert outcomes[0] == "ok"
    assert outcomes[1] == ("refused" if f is mutual_recursion else "ok")


def test_recursive_nested_functions_in_reverse_mode_and_reverse_over_reverse():
    # recursive_inner: p(3, 1) = x^3; recursive_lambda: g(2) = x^3;
    # mutual_recursion: ev(3, 1) = od(2, x) = ev(1, 2x) = od(0, 2x^2) = 2x^2.
    x = 0.7
    for f, g, h in [
        (recursive_inner, 3 * x**2, 6 * x),
        (recursive_lambda, 3 * x**2, 6 * x),
        (mutual_recursion, 4 * x, 4.0),
    ]:
        assert ad.gradient(f, x)[0] == pytest.approx(g), f.__name__
        assert ad.gradient(f, x)[0] == pytest.approx(fd_gradient(f, x)[0], rel=1e-6)
        assert ad.hessian_reverse(f, x) == pytest.approx(h), f.__name__


def _refusal(f, x, mode):
    if mode == "reverse":
        return ad.gradient(f, x)
    return ad.jvp(f, (x,), (1.0,))


def _line_of(f, text):
    import inspect

    lines, start = inspect.getsourcelines(f)
    return start + next(i for i, s in enumerate(lines) if text in s)


def test_a_list_row_written_in_a_loop_is_differentiated_and_refused_at_second_order():
    # The row is followed by identity from its write, and M (which holds it) is
    # read as differentiated (``ad.transform.aliases``): d/dx (x*x + 2x) = 2x + 2.
    assert ad.gradient(list_rows_loop, 0.7)[0] == pytest.approx(3.4)
    assert ad.jvp(list_rows_loop, (0.7,), (1.0,))[1] == pytest.approx(3.4)
    # second order follows no container's items by identity yet: refused, naming both
    with pytest.raises(ad.MutationError) as e:
        ad.hessian(list_rows_loop, 0.7)
    msg = str(e.value)
    assert f"{THIS_FILE}:{_line_of(list_rows_loop, 'row[0] = row[0] * x')}" in msg
    assert "'row'" in msg and "'M'" in msg and "To fix" in msg


@pytest.mark.parametrize("mode", ["forward"])  # reverse mode differentiates them (above)
@pytest.mark.parametrize(
    "f, where, names",
    [
        (recursive_inner, "def p(n, v)", ["'p' calls itself", "'x'", "p(..., x)"]),
        (recursive_lambda, "g = lambda n", ["calls itself", "'x'"]),
        (mutual_recursion, "def od(n, v)", ["'ev' and 'od' call each other", "'x'"]),
    ],
    ids=["recursion", "recursive-lambda", "mutual-recursion"],
)
def test_nested_functions_whose_derivative_would_be_lost_are_refused(mode, f, where, names):
    with pytest.raises(ad.UnsupportedSyntaxError) as e:
        _refusal(f, 0.7, mode)
    msg = str(e.value)
    assert f"{THIS_FILE}:{_line_of(f, where)}" in msg, msg
    for n in names:
        assert n in msg, msg
    assert "To fix" in msg


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize(
    "f, hand",
    [
        (closure_appends_to_outer_list, lambda x: 4 * x),  # 2x * x
        (closure_writes_outer_dict, lambda x: 2 * x + 1),  # x^2 + x
    ],
    ids=["list", "dict"],
)
def test_a_container_a_closure_writes_is_followed_where_read(mode, f, hand):
    # Refused once (the read after the call was a constant); now the container the
    # closure captures is followed by identity around the call (transform.holders).
    x = 0.7
    got = _refusal(f, x, mode)
    got = got[0] if mode == "reverse" else got[1]
    assert got == pytest.approx(hand(x), rel=1e-9)
    assert fd_gradient(f, x)[0] == pytest.approx(hand(x), rel=1e-6)


def test_super_init_keywords_hand_values_to_hand_derived_derivatives():
    # KwChild(x).s * x = 2x^2: 4x; PairKw: x + x^2: 1 + 2x; Both: 2x * x^2 = 2x^3: 6x^2
    x = 0.7
    assert ad.gradient(super_init_keyword, x)[0] == pytest.approx(4 * x)
    assert ad.jvp(super_init_mixed, (x,), (1.0,))[1] == pytest.approx(1 + 2 * x)
    assert ad.gradient(cooperative_init, x)[0] == pytest.approx(6 * x**2)
    assert ad.jvp(cooperative_init, (x,), (1.0,))[1] == pytest.approx(6 * x**2)
    # Diamond (MRO Diamond, AB, AC, A0): (a + c) * b - c = (x + x^2) 2x - x^2 = x^2 + 2x^3
    assert ad.gradient(diamond, x)[0] == pytest.approx(2 * x + 6 * x**2)
    assert ad.jvp(diamond, (x,), (1.0,))[1] == pytest.approx(2 * x + 6 * x**2)


# --------------------------------------------------------------------------
# A generator over the forms that gave wrong numbers.

_counter = itertools.count()


@st.composite
def alias_program(draw):
    """A function ``f(x)`` of a float: a few statements from a grammar of list rows
    written in loops, closures writing an outer list, nested functions (chained,
    recursive, taking the captured value as an argument), and classes built through ``super().__init__``
    with positional or keyword arguments."""
    lines = ["def f(x):", "    acc = x * 0.5"]
    classes: list[str] = []
    for i in range(draw(st.integers(1, 4))):
        form = draw(st.sampled_from(["rows", "closure", "nested", "super", "plain"]))
        c = f"{draw(st.floats(0.25, 1.75)):.3f}"
        if form == "rows":
            lines += [
                f"    M{i} = [[x, {c}], [acc, x * x]]",
                f"    for row in M{i}:",
                "        row[0] = row[0] * row[1]",
                f"    acc = acc + M{i}[0][0] + M{i}[1][0]",
            ]
        elif form == "closure":
            how = draw(st.sampled_from(["closure", "argument"]))
            if how == "closure":
                lines += [
                    f"    L{i} = []",
                    f"    def put{i}(v):",
                    f"        L{i}.append(v * {c})",
                    f"    put{i}(acc)",
                ]
            else:
                lines += [
                    f"    L{i} = []",
                    f"    def put{i}(lst, v):",
                    f"        lst.append(v * {c})",
                    f"    put{i}(L{i}, acc)",
                ]
            lines.append(f"    acc = acc + L{i}[0] * x")
        elif form == "nested":
            how = draw(st.sampled_from(["chain", "recursive", "argument"]))
            if how == "chain":
                lines += [
                    f"    def a{i}(v):",
                    f"        return v * x + {c}",
                    f"    def b{i}(v):",
                    f"        return a{i}(v) * acc",
                ]
            elif how == "recursive":
                lines += [
                    f"    def b{i}(v, n=2):",
                    f"        return v if n == 0 else b{i}(v * x, n - 1)",
                ]
            else:
                lines += [
                    f"    def b{i}(v, w=None, n=2):",
                    f"        return v if n == 0 else b{i}(v * w, w, n - 1)",
                ]
            call = f"b{i}(acc, x)" if how == "argument" else f"b{i}(acc)"
            lines.append(f"    acc = acc + {call}")
        elif form == "super":
            how = draw(st.sampled_from(["positional", "keyword", "star"]))
            arg = {"positional": "x * t", "keyword": "b=x * t", "star": "**{'b': x * t}"}[how]
            classes += [
                f"class P{i}:",
                "    def __init__(self, a, b=1.0):",
                "        self.a = a",
                "        self.b = b",
                f"class Q{i}(P{i}):",
                "    def __init__(self, x, t):",
                f"        super().__init__(x, {arg})",
            ]
            lines += [f"    q{i} = Q{i}(acc, x)", f"    acc = acc + q{i}.a * q{i}.b * {c}"]
        else:
            lines.append(f"    acc = acc * x + {c}")
    lines.append("    return acc")
    return "\n".join(classes + lines) + "\n"


def _load(source, tmp_path):
    path = tmp_path / f"alias_prog_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f, str(path)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=alias_program(), x=st.sampled_from([0.4, 0.7, 1.1]))
def test_generated_alias_programs_are_right_or_refused(tmp_path, source, x):
    f, path = _load(source, tmp_path)
    check_sound(f, x, second=False, filename=path)


class _Scaled:
    def __init__(self, v):
        self.value = v

    def scale(self, s):
        self.value *= s
        return self


def scaled_discarded(x):
    p = _Scaled(x)
    p.scale(x)  # the result is discarded: only the write into p carries x
    return p.value * x


def scaled_bound(x):
    p = _Scaled(x)
    q = p.scale(x)
    return q.value * x


# f = x³: f' = 3x², f'' = 6x
_SECOND = {
    "forward over reverse": lambda f, x: ad.hessian(f, x),
    "reverse over forward": lambda f, x: ad.gradient(lambda x: ad.jvp(f, (x,), (1.0,))[1], x)[0],
    "forward over reverse, by hand": lambda f, x: ad.jvp(
        lambda x: ad.gradient(f, x)[0], (x,), (1.0,)
    )[1],
}


@pytest.mark.parametrize("f", [scaled_discarded, scaled_bound])
def test_a_method_writing_its_object_at_first_order(f):
    assert ad.gradient(f, 1.1)[0] == pytest.approx(3 * 1.1**2)
    assert ad.jvp(f, (1.1,), (1.0,))[1] == pytest.approx(3 * 1.1**2)


@pytest.mark.parametrize("mode", list(_SECOND))
def test_a_method_writing_its_object_at_second_order(mode):
    assert _SECOND[mode](scaled_bound, 1.1) == pytest.approx(6 * 1.1)


@pytest.mark.parametrize("mode", list(_SECOND))
def test_a_discarded_call_writing_its_object_at_second_order(mode):
    # (it was 2.0: reverse mode over the pushforward lost the write into p, both the
    # value's and the tangent's, which only identity carries back to the caller)
    assert _SECOND[mode](scaled_discarded, 1.1) == pytest.approx(6 * 1.1)
