"""Writes made by a function that a builtin calls, and C methods that empty their
receiver (issue 18: never a silent wrong gradient).

``min(objs, key=lambda o: o.touch() * o.w)`` whose value is unused, where
``touch`` writes ``self.last``: the key is called through the AD, but no
cotangent reached ``min``'s value, so its pullback (which runs the key's) never
ran and the writes' derivative was lost (``ad.gradient`` 18 where 36 is right;
the same through ``sorted``, ``max``, ``filter``, ``map`` and
``functools.reduce``). A rule whose user function wrote now has a ``Stateful``
pullback (``ad.runtime.rules_callbacks``).

``v = d.pop(k)`` (or ``xs.pop()``, ``d.popitem()``) on a container it leaves
empty ran as plain Python with a zero derivative, as if its result were a
constant (1.5 where 3 is right, in both modes): the container was judged
derivative-free after the call. It is judged as it was before, so the call is
refused, naming the line and a fix that applies; ``xs.clear()`` is refused in
forward mode, which cannot shorten the list's tangent (``ad.runtime.plain_calls``).

Each program is checked against central differences and a hand-derived value.
"""

from __future__ import annotations

import functools

import pytest
from ad_testing import fd_gradient

import ad

HERE = __file__


class C:
    def __init__(self, w):
        self.w = w

    def touch(self):
        self.last = self.w * 2.0
        return 1.0


def touched_by(kind):
    """``sum(o.last) * w`` where a key (or map's, reduce's function) calls
    ``o.touch()``, which writes ``o.last = 2 o.w`` (o.w = k w, k = 3, 1, 2): 12 w^2,
    whichever function is called on each object, once or more."""

    def f(w):
        objs = [C(w * k) for k in (3.0, 1.0, 2.0)]

        def key(o):
            return o.touch() * o.w

        if kind == "min":
            min(objs, key=key)
        elif kind == "max":
            max(objs, key=key)
        elif kind == "max_args":
            max(objs[0], objs[1], objs[2], key=key)
        elif kind == "sorted":
            sorted(objs, key=key)
        elif kind == "sorted_used":
            objs = sorted(objs, key=key)
        elif kind == "filter":
            list(filter(key, objs))
        elif kind == "map":
            list(map(key, objs))
        elif kind == "reduce":
            functools.reduce(lambda a, o: a + key(o), objs, 0.0)
        elif kind == "twice":  # each object's key called twice, by two calls
            min(objs, key=key)
            max(objs, key=key)
        elif kind == "touch_twice":  # touch called twice in one key call
            min(objs, key=lambda o: o.touch() + o.touch() * o.w)
        return sum(o.last for o in objs) * w

    return f


KINDS = [
    "min",
    "max",
    "max_args",
    "sorted",
    "sorted_used",
    "filter",
    "map",
    "reduce",
    "twice",
    "touch_twice",
]
W = 1.5


@pytest.mark.parametrize("kind", KINDS)
def test_writes_of_a_function_a_builtin_calls_reach_the_gradient(kind):
    f = touched_by(kind)
    hand = 24.0 * W  # d/dw 12 w^2
    assert fd_gradient(f, W)[0] == pytest.approx(hand, rel=1e-6)
    assert ad.gradient(f, W)[0] == pytest.approx(hand, rel=1e-12)
    y, ẏ = ad.jvp(f, (W,), (1.0,))
    assert (y, ẏ) == (pytest.approx(f(W)), pytest.approx(hand, rel=1e-12))


def appends_to_a_list(w):
    """A key writing a captured list, ``sorted``'s value unused:
    ``sum(v w for v in (3, 1, 2)) * w = 6 w^2``."""
    seen = []

    def key(v):
        seen.append(v * w)
        return v

    sorted([3.0, 1.0, 2.0], key=key)
    return sum(seen) * w


def writes_a_dict(w):
    """The same with a captured dict and ``max``."""
    seen = {}

    def key(v):
        seen[v] = v * w
        return v

    max([3.0, 1.0, 2.0], key=key)
    return sum(seen.values()) * w


@pytest.mark.parametrize("f", [appends_to_a_list, writes_a_dict])
def test_a_key_writing_a_captured_container_with_its_result_unused(f):
    hand = 12.0 * W
    assert fd_gradient(f, W)[0] == pytest.approx(hand, rel=1e-6)
    assert ad.gradient(f, W)[0] == pytest.approx(hand, rel=1e-12)
    assert ad.jvp(f, (W,), (1.0,))[1] == pytest.approx(hand, rel=1e-12)


def reading_key(w):
    objs = [C(w * k) for k in (3.0, 1.0, 2.0)]
    for o in objs:
        o.touch()
    m = min(objs, key=lambda o: o.w)  # objs[1]
    return sum(o.last for o in objs) * w + m.w * m.w  # 12 w^2 + w^2


def test_a_key_reading_attributes_at_second_order():
    # ``may_write`` loops over a set: the rule's body, differentiated at second order,
    # refused it ("cannot differentiate a loop over a set", at a line of ad's own).
    hand = 26.0
    assert fd_gradient(lambda w: ad.gradient(reading_key, w)[0], W)[0] == pytest.approx(hand)
    assert ad.gradient(reading_key, W)[0] == pytest.approx(26.0 * W)
    assert ad.hessian(reading_key, W) == pytest.approx(hand, rel=1e-12)
    assert ad.gradient(lambda w: ad.gradient(reading_key, w)[0], W)[0] == pytest.approx(hand)
    assert ad.jvp(lambda w: ad.gradient(reading_key, w)[0], (W,), (1.0,))[1] == pytest.approx(hand)
    assert ad.gradient(lambda w: ad.jvp(reading_key, (w,), (1.0,))[1], W)[0] == pytest.approx(hand)


@pytest.mark.parametrize("kind", ["min", "map"])
def test_a_writing_key_at_second_order_is_refused(kind):
    # refused naming the user's line (its fix text does not apply yet: see the report)
    with pytest.raises(ad.MutationError, match=rf"^{HERE}:\d+: the function writes a float"):
        ad.hessian(touched_by(kind), W)


# --- C methods emptying their receiver ----------------------------------------------------


def list_pop(x):
    d = [x]
    v = d.pop()
    return v * x


def dict_pop(x):
    d = {"a": x}
    v = d.pop("a")
    return v * x


def dict_popitem(x):
    d = {"a": x}
    _, v = d.popitem()
    return v * x


@pytest.mark.parametrize("f", [list_pop, dict_pop, dict_popitem], ids=lambda f: f.__name__)
def test_popping_the_last_item_is_differentiated_in_every_mode(f):
    # spelled as a read and ``del`` (ad.transform.container_methods)
    assert fd_gradient(f, W)[0] == pytest.approx(2.0 * W, rel=1e-6)
    assert ad.gradient(f, W)[0] == pytest.approx(2.0 * W, rel=1e-12)
    assert ad.jvp(f, (W,), (1.0,))[1] == pytest.approx(2.0 * W, rel=1e-12)
    assert ad.hessian(f, W) == pytest.approx(2.0)
    assert ad.hessian_reverse(f, W) == pytest.approx(2.0)


def list_pop_fixed(x):  # the fix the error gives
    xs = [x]
    v = xs[-1]
    xs = xs[:-1]
    return v * x + len(xs)


def dict_pop_fixed(x):
    d = {"a": x, "b": 2.0}
    k = "a"
    v = d[k]
    d = {j: e for j, e in d.items() if j != k}
    return v * x * d["b"]


@pytest.mark.parametrize(
    "f, hand", [(list_pop_fixed, 2.0 * W), (dict_pop_fixed, 4.0 * W)], ids=["list", "dict"]
)
def test_the_fix_the_error_gives_differentiates(f, hand):
    assert fd_gradient(f, W)[0] == pytest.approx(hand, rel=1e-6)
    assert ad.gradient(f, W)[0] == pytest.approx(hand, rel=1e-12)
    assert ad.jvp(f, (W,), (1.0,))[1] == pytest.approx(hand, rel=1e-12)


def list_clear(x):
    d = [x]
    y = d[0] * 2.0
    d.clear()
    d.append(y * x)
    return d[0]  # 2 x^2


def dict_clear(x):
    d = {"a": x}
    y = d["a"] * 2.0
    d.clear()
    d["b"] = y * x
    return d["b"]  # 2 x^2


def test_clearing_a_list_in_every_mode():
    # spelled as ``del d[:]`` (ad.transform.container_methods): forward mode's
    # tangent loses its entries with the list's
    assert fd_gradient(list_clear, W)[0] == pytest.approx(4.0 * W, rel=1e-6)
    assert ad.gradient(list_clear, W)[0] == pytest.approx(4.0 * W, rel=1e-12)
    assert ad.jvp(list_clear, (W,), (1.0,))[1] == pytest.approx(4.0 * W, rel=1e-12)
    assert ad.hessian_reverse(list_clear, W) == pytest.approx(4.0)
    assert ad.hessian(list_clear, W) == pytest.approx(4.0)


def test_clearing_a_dict_in_every_mode():
    hand, second = 4.0 * W, 4.0
    assert fd_gradient(dict_clear, W)[0] == pytest.approx(hand, rel=1e-6)
    assert ad.gradient(dict_clear, W)[0] == pytest.approx(hand, rel=1e-12)
    assert ad.jvp(dict_clear, (W,), (1.0,))[1] == pytest.approx(hand, rel=1e-12)
    assert ad.hessian(dict_clear, W) == pytest.approx(second)
    assert ad.hessian_reverse(dict_clear, W) == pytest.approx(second)
    assert ad.gradient(lambda x: ad.gradient(dict_clear, x)[0], W)[0] == pytest.approx(second)
    assert ad.jvp(lambda x: ad.gradient(dict_clear, x)[0], (W,), (1.0,))[1] == pytest.approx(second)
    assert ad.gradient(lambda x: ad.jvp(dict_clear, (x,), (1.0,))[1], W)[0] == pytest.approx(second)
