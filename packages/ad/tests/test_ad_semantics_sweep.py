"""Python as people write it, checked in reverse and forward mode (and at second
order where it applies) against central differences: in-place updates of
parameters, getters that write, C methods that write their receiver, and objects
differentiated twice (issue 18)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad

HERE = __file__


def both_modes(f, x, v=None):
    """``f``'s gradient and directional derivative at a fresh copy of ``x`` (nothing
    the caller keeps), against central differences."""
    x = np.asarray(x, dtype=float) if not isinstance(x, float) else x
    want = fd_gradient(f, x if isinstance(x, float) else x.copy())[0]
    copy = (lambda: x) if isinstance(x, float) else x.copy
    (g,) = ad.gradient(f, copy())
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)
    v = np.ones_like(x) if v is None else v
    _, ẏ = ad.jvp(f, (copy(),), (v,))
    assert ẏ == pytest.approx(np.sum(want * v), rel=1e-6, abs=1e-6)


# --- an argument updated in place: both modes agree ------------------------------------


def scales_its_argument(x):
    x *= 2.0
    return np.sum(x * x)


def scales_a_float(x):
    x *= 2.0
    return x * x


def extends_its_argument(xs):
    xs += [xs[0] * 2.0]
    return xs[0] * xs[-1]


def test_an_array_argument_updated_in_place_is_differentiated_when_nobody_keeps_it():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(ad.gradient(scales_its_argument, x.copy())[0], 8.0 * x)
    y, ẏ = ad.jvp(scales_its_argument, (x.copy(),), (np.array([1.0, -1.0]),))
    assert (y, ẏ) == (20.0, pytest.approx(8.0 - 16.0))
    both_modes(scales_its_argument, x)


def test_an_argument_the_caller_keeps_is_refused_in_both_modes_naming_the_caller():
    x0 = np.array([1.0, 2.0])
    args = (np.array([1.0, 2.0]),)
    match = r"(?s)'x' is updated in place, but .*'{} \(in the caller at {}:\d+\)'.*x\.copy\(\)"
    with pytest.raises(ad.MutationError, match=match.format("x0", HERE)):
        ad.gradient(scales_its_argument, x0)
    with pytest.raises(ad.MutationError, match=match.format("x0", HERE)):
        ad.jvp(scales_its_argument, (x0,), (np.ones(2),))
    with pytest.raises(ad.MutationError, match=match.format("args", HERE)):
        ad.gradient(scales_its_argument, *args)
    with pytest.raises(ad.MutationError, match=match.format("args", HERE)):
        ad.jvp(scales_its_argument, args, (np.ones(2),))
    np.testing.assert_array_equal(x0, [1.0, 2.0])  # refused before any change
    np.testing.assert_array_equal(args[0], [1.0, 2.0])


def test_a_float_argument_updated_in_place_is_a_new_float_in_both_modes():
    x = 1.5
    assert ad.gradient(scales_a_float, x) == (12.0,)
    assert ad.jvp(scales_a_float, (x,), (1.0,)) == (9.0, 12.0)
    assert ad.hessian(scales_a_float, x) == 8.0
    assert x == 1.5


def test_a_list_argument_extended_in_place_agrees_in_both_modes():
    # (each result is compared outside ``assert``: pytest keeps an assert's operands)
    g = ad.gradient(extends_its_argument, [1.5, 2.0])
    assert g == ([6.0, None],)
    out = ad.jvp(extends_its_argument, ([1.5, 2.0],), ([1.0, 0.0],))
    assert out == (4.5, 6.0)
    kept = [1.5, 2.0]
    with pytest.raises(ad.MutationError, match=r"'kept \(in the caller"):
        ad.gradient(extends_its_argument, kept)
    with pytest.raises(ad.MutationError, match=r"'kept \(in the caller"):
        ad.jvp(extends_its_argument, (kept,), ([1.0, 0.0],))
    assert kept == [1.5, 2.0]


def scales(a, s=2.0):
    a *= s
    return a


def passes_a_temporary(x):
    return np.sum(scales(x * 1.0) * x)


def passes_a_temporary_and_a_keyword(x):
    return np.sum(scales(x * 1.0, s=3.0) * x)


def keyword_at_the_top(x, s=1.0):
    x *= s
    return np.sum(x * x)


@pytest.mark.parametrize("f", [passes_a_temporary, passes_a_temporary_and_a_keyword])
def test_a_callee_may_update_a_temporary_in_both_modes(f):
    both_modes(f, np.array([0.3, -0.2, 0.5]))


def test_an_argument_updated_in_place_with_keywords_given_to_the_entry_points():
    x = np.array([0.5, -1.0])
    np.testing.assert_allclose(ad.gradient(keyword_at_the_top, x.copy(), s=3.0)[0], 18.0 * x)
    assert ad.jvp(keyword_at_the_top, (x.copy(),), (np.ones(2),), s=3.0)[1] == pytest.approx(
        18.0 * np.sum(x)
    )


# --- a getter that writes: the key function is differentiated -----------------------------


class Counted:
    def __init__(self, w):
        self.w = w
        self.last = 0.0
        self.reads = 0

    @property
    def unit(self):
        self.reads += 1
        self.last = self.w * 2.0  # a cache filled on read, carrying w's derivative
        return 1.0


def key_reads_a_writing_property(w):
    o = Counted(w)
    s = sorted([3.0, 1.0, 2.0], key=lambda v: v * o.unit)
    return s[0] * o.last + o.reads


class Lazy:
    def __init__(self, w):
        self.w = w

    def __getattr__(self, name):  # runs for the missing 'scale': writes it
        self.cache = self.w * 3.0
        return 1.0


def key_reads_through_getattr(w):
    o = Lazy(w)
    s = sorted([2.0, 1.0], key=lambda v: v * o.scale)
    return s[0] * o.cache


@pytest.mark.parametrize("f", [key_reads_a_writing_property, key_reads_through_getattr])
def test_a_key_whose_attribute_read_writes_is_differentiated(f):
    both_modes(f, 1.5)


def test_a_key_reading_a_pure_property_runs_as_plain_python():
    from ad.runtime.rules_callbacks import may_write

    class Pure:
        @property
        def y(self):
            return 2.0

    o = Pure()
    assert not may_write(lambda v: v * o.y)
    assert may_write(lambda v: v * o.unit, kinds={Counted})
    assert not may_write(lambda v: v * 2.0, kinds={Counted})


# --- C methods that write their receiver: differentiated or refused -----------------------


def dict_pop(x):
    d = {"a": x * x, "b": x}
    return d.pop("a") * d["b"]


def list_pop(x):
    xs = [x, x * x, 3.0]
    return xs.pop() * xs[1]


def dict_update(x):
    d = {"a": x}
    d.update({"b": x * x})
    return d["a"] * d["b"]


def list_sort(x):
    xs = [x * x, 2.0 * x, 1.0]
    xs.sort()
    return xs[0] + 3.0 * xs[2]


def set_add(x):
    s = set()
    s.add(x * x)
    return sum(s)


def list_extend(x):
    xs = [x]
    xs.extend([x * x])
    return xs[1] * xs[0]


def deque_append(x):
    q = collections.deque([1.0])
    q.append(x * x)
    return q[1] * x


@pytest.mark.parametrize(
    # (list and dict methods, anywhere in an expression, are spelled as item reads
    # and writes: below)
    "f",
    [set_add, deque_append],
)
def test_a_c_method_writing_an_active_receiver_is_refused_in_every_mode(f):
    match = rf"(?s)no rule to differentiate .*\(called at {HERE}:\d+\).*changed its receiver"
    for run in (
        lambda: ad.gradient(f, 1.3),
        lambda: ad.jvp(f, (1.3,), (1.0,)),
        lambda: ad.hessian(f, 1.3),
        lambda: ad.hessian_reverse(f, 1.3),
    ):
        with pytest.raises(ad.NoRuleError, match=match):
            run()


def deque_of_constants(x):
    q = collections.deque([1.0])
    q.append(2.0)
    return q[1] * x


def test_a_c_method_writing_constants_runs_as_plain_python():
    assert ad.gradient(deque_of_constants, 1.3) == (2.0,)
    assert ad.jvp(deque_of_constants, (1.3,), (1.0,)) == (2.6, 2.0)


class Stack:
    def __init__(self):
        self.top = 0.0

    def append(self, v):
        self.top = v * 2.0


def a_user_append(x):
    s = Stack()
    s.append(x * x)
    return s.top * x


def test_a_user_class_append_method_is_differentiated_as_a_method():
    both_modes(a_user_append, 1.3)


# --- objects differentiated twice in reverse mode -----------------------------------------


class Total:
    def __init__(self):
        self.total = 0.0


def writes_a_field(x):
    c = Total()
    c.total += x * x
    return c.total * x


def test_a_field_write_differentiated_twice_in_reverse_names_the_users_line():
    assert ad.hessian(writes_a_field, 1.3) == pytest.approx(6.0 * 1.3)
    with pytest.raises(
        ad.MutationError, match=rf"(?s)^{HERE}:\d+: writing the attribute 'total'.*ad\.hessian"
    ):
        ad.hessian_reverse(writes_a_field, 1.3)


@pytest.mark.parametrize("f", [dict_update, list_sort, list_extend, dict_pop, list_pop])
def test_a_list_or_dict_method_is_differentiated_in_every_mode(f):
    # ad.transform.container_methods: item reads and writes, followed as append's
    d1 = fd_gradient(f, 1.3)[0]
    h = 1e-4
    d2 = (fd_gradient(f, 1.3 + h)[0] - fd_gradient(f, 1.3 - h)[0]) / (2 * h)
    assert ad.gradient(f, 1.3)[0] == pytest.approx(d1, rel=1e-6)
    assert ad.jvp(f, (1.3,), (1.0,))[1] == pytest.approx(d1, rel=1e-6)
    assert ad.hessian(f, 1.3) == pytest.approx(d2, rel=1e-4, abs=1e-4)
    assert ad.hessian_reverse(f, 1.3) == pytest.approx(d2, rel=1e-4, abs=1e-4)
