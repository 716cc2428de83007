"""In-place writes follow objects: a write another holder could observe is refused,
one nobody else observes is differentiated, and an undifferentiated write never
reaches what the backward pass saved (``ad.runtime.ownership``). Results handed to the
caller are the caller's own."""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad
import rulescore

HERE = __file__


def fd_grad(f, x):
    return fd_gradient(f, np.asarray(x, dtype=float))[0]


def check_both_modes(f, x):
    """Reverse and forward mode against central differences; the value is Python's."""
    x = np.asarray(x, dtype=float)
    want = fd_grad(f, x)
    val, (g,) = ad.withgradient(f, x.copy())
    assert val == pytest.approx(f(x.copy()))
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)
    v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    y, ẏ = ad.jvp(f, (x.copy(),), (v,))
    assert y == pytest.approx(f(x.copy()))
    assert ẏ == pytest.approx(np.sum(want * v), rel=1e-6, abs=1e-6)


def refused_in_both_modes(f, x, match):
    x = np.asarray(x, dtype=float)
    with pytest.raises(ad.MutationError, match=match):
        ad.gradient(f, x.copy())
    with pytest.raises(ad.MutationError, match=match):
        ad.jvp(f, (x.copy(),), (np.ones_like(x),))


# --- writes another holder would see: refused, naming the holder ---------------------


def ident(t):
    return t


class Box:
    pass


def view_slice(y):
    y = y * 1.0
    v = y[:2]
    v *= 10.0
    return np.sum(y * y)


def view_transpose(y):
    m = np.outer(y, y) + 1.0
    t = m.T
    t += np.eye(3)
    return np.sum(m * m)


def view_reshape(y):
    y = y * 2.0
    r = y.reshape(3, 1)
    r *= 3.0
    return np.sum(y * y)


def view_ravel(y):
    m = np.outer(y, y)
    r = m.ravel()
    r -= 1.0
    return np.sum(m * m)


def rows_of_a_loop(y):
    m = np.outer(y, y) + 1.0
    for row in m:
        row /= row.sum()
    return np.sum(m * m)


def one_row(y):
    m = np.outer(y, y)
    row = m[0]
    row *= 5.0
    return np.sum(m * m)


def item_of_a_view(y):
    y = y * 2.0
    v = y[1:]
    v[0] = 7.0
    return np.sum(y * y)


@pytest.mark.parametrize(
    "f",
    [view_slice, view_transpose, view_reshape, view_ravel, rows_of_a_loop, one_row],
    ids=lambda f: f.__name__,
)
def test_an_update_through_a_view_is_refused(f):
    refused_in_both_modes(f, [1.0, 2.0, 3.0], r"is updated in place, but it is a view")


def test_an_item_write_into_a_view_is_refused():
    refused_in_both_modes(item_of_a_view, [1.0, 2.0, 3.0], "view of another array")


def asarray_alias(y):
    y = y * 2.0
    z = np.asarray(y)
    z += 1.0
    return np.sum(y * y)


def held_by_a_list(x):
    acc = x * 1.0
    lst = [acc]
    acc += x
    return np.sum(lst[0] * x)


def held_by_a_dict(x):
    acc = x * 1.0
    d = {"a": acc}
    acc *= 2.0
    return np.sum(d["a"])


def held_by_an_object(x):
    acc = x * 1.0
    b = Box()
    b.w = acc
    acc -= 1.0
    return np.sum(b.w * x)


def returned_by_a_helper(y):
    y = y * 2.0
    z = ident(y)
    z += 1.0
    return np.sum(y * y)


def tuple_unpacking(y):
    y = y * 2.0
    a, b = y, y
    a += 1.0
    return np.sum(b * y)


def plain_copy(x):
    m = np.outer(x, x)
    m2 = m
    m -= x
    return np.sum(m2 * m2)


def out_argument(y):
    z = y * 2.0
    w = z
    np.multiply(z, 2.0, out=z)
    return np.sum(w * y)


@pytest.mark.parametrize(
    ("f", "holder"),
    [
        (asarray_alias, "'y'"),
        (held_by_a_list, "'lst'"),
        (held_by_a_dict, "'d'"),
        (held_by_an_object, "'b'"),
        (returned_by_a_helper, "'y'"),
        (tuple_unpacking, "'y', 'b'"),
        (plain_copy, "'m2'"),
        (out_argument, "'w'"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_an_update_another_name_would_see_is_refused_naming_it(f, holder):
    match = rf"(?s){HERE}:\d+: .* is updated in place, but it is also reachable as {holder}.*To fix"
    refused_in_both_modes(f, [1.0, 2.0, 3.0], match)


def row_of_a_grid(x):
    grid = [[0.0, 0.0], [0.0, 0.0]]
    row = grid[0]
    row[1] = x[0] * x[0]
    return grid[0][1] * x[1]


def dict_alias(x):
    d = {"k": 0.0}
    e = d
    e["k"] = x[0] * x[1]
    return d["k"]


def list_alias(x):
    a = [x[0]]
    b = a
    b.append(x[1] * x[2])
    return sum(a)


def object_alias(x):
    o = Box()
    o.v = x[0]
    p = o
    p.v = x[1] * x[2]
    return o.v


def appends_to_its_argument(lst, v):
    lst.append(v)


def helper_append(x):
    a = [x[0]]
    appends_to_its_argument(a, x[1] * x[2])
    return sum(a)


@pytest.mark.parametrize(
    "f",
    [row_of_a_grid, dict_alias, list_alias],
    ids=lambda f: f.__name__,
)
def test_a_container_written_through_a_second_name_is_followed_by_identity(f):
    # refused before; followed from the write, the other name read as
    # differentiated (ad.transform.aliases)
    check_both_modes(f, [1.0, 2.0, 3.0])


def test_a_list_a_helper_appends_to_is_followed_by_identity():
    x = np.array([1.0, 2.0, 3.0])  # sum(a) = x0 + x1 x2
    np.testing.assert_allclose(ad.gradient(helper_append, x)[0], [1.0, 3.0, 2.0])
    assert ad.jvp(helper_append, (x,), (np.ones(3),))[1] == 6.0


def test_an_object_written_through_a_second_name_is_followed_by_identity():
    # A user object's fields are kept by identity (ad.runtime.state): the alias's write is
    # the one o.v reads, in both modes: o.v = x1 x2.
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(ad.gradient(object_alias, x)[0], [0.0, 3.0, 2.0])
    assert ad.jvp(object_alias, (x,), (np.array([1.0, 1.0, 1.0]),))[1] == 5.0


def test_the_callers_array_is_not_changed_when_refused():
    def f(x):
        x *= 2.0
        return np.sum(x)

    x0 = np.array([1.0, 2.0])
    with pytest.raises(
        ad.MutationError, match=r"'x' is updated in place, but .* 'x0 \(in the caller"
    ):
        ad.gradient(f, x0)
    with pytest.raises(ad.MutationError, match="'x' is updated in place"):
        ad.jvp(f, (x0,), (np.ones(2),))
    np.testing.assert_array_equal(x0, [1.0, 2.0])


# --- writes nobody else observes: differentiated ------------------------------------


def softmax_in_place(x):
    e = np.exp(x)
    e /= np.sum(e)  # exp's pullback saved e: the tape keeps the old array
    return np.sum(e * np.arange(x.size, dtype=float).reshape(x.shape))


def accumulate_in_a_loop(x):
    acc = np.zeros_like(x)
    for i in range(3):
        acc += x * x.reshape(-1)[i]
    return np.sum(acc * acc)


def tanh_in_a_loop(x):
    h = x * 1.0
    for _ in range(4):
        h = np.tanh(h)
        h *= 2.0
        h -= x
    return np.sum(h)


def scales_its_own_temporary(a):
    a *= 2.0
    return a


def calls_on_a_temporary(x):
    return np.sum(scales_its_own_temporary(x * 1.0) * x)


def dict_and_list_built_here(x):
    d = {}
    d["a"] = x * 2.0
    d["a"] = d["a"] * x
    rows = []
    for i in range(2):
        row = []
        row.append(x * float(i))
        rows.append(row)
    return np.sum(d["a"]) + np.sum(rows[1][0] * x)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize(
    "f",
    [softmax_in_place, accumulate_in_a_loop, tanh_in_a_loop, dict_and_list_built_here],
    ids=lambda f: f.__name__,
)
def test_an_update_nobody_else_observes_is_differentiated(f, shape):
    x = np.linspace(0.1, 0.6, int(np.prod(shape))).reshape(shape)
    check_both_modes(f, x)


def test_a_callee_may_update_a_temporary_it_was_passed():
    x = np.array([0.3, -0.2, 0.5])
    (g,) = ad.gradient(calls_on_a_temporary, x)
    np.testing.assert_allclose(g, 4.0 * x)


def test_float32_updates_stay_float32():
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    (g,) = ad.gradient(softmax_in_place, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, fd_grad(softmax_in_place, x), rtol=1e-3, atol=1e-4)


# --- undifferentiated writes into what the tape saved: copy-on-write ----------------


def constant_updated_after_use(x):
    a = np.ones(3)
    y = x * a  # the product's pullback saves a
    a += 1.0
    return np.sum(y * a)


def constant_item_written_after_use(x):
    a = np.ones(3)
    y = x * a
    for i in range(3):
        a[i] = 5.0 + i  # the first write copies; the rest write into the copy
    return np.sum(y * a)


def constant_out_after_use(x):
    a = np.ones(3)
    y = np.sum(x * a)
    np.multiply(a, 3.0, out=a)
    return y * np.sum(a)


@pytest.mark.parametrize(
    "f",
    [constant_updated_after_use, constant_item_written_after_use, constant_out_after_use],
    ids=lambda f: f.__name__,
)
def test_an_undifferentiated_write_does_not_reach_the_tape(f):
    check_both_modes(f, [0.5, 1.5, -1.0])


def test_an_undifferentiated_write_into_a_saved_array_another_name_sees_is_refused():
    def f(x):
        a = np.ones(3)
        b = a
        y = x * a
        a += 1.0  # Python changes b and the saved a: a copy would change the program
        return np.sum(y * b)

    with pytest.raises(ad.MutationError, match="the backward pass has saved it"):
        ad.gradient(f, np.array([0.5, 1.5, 2.0]))
    # Forward mode keeps no tape: the write runs as Python runs it.
    x, v = np.array([0.5, 1.5, 2.0]), np.array([1.0, -1.0, 0.5])
    assert ad.jvp(f, (x,), (v,))[1] == pytest.approx(np.sum(2.0 * v))


# --- results handed to the caller are the caller's own --------------------------------


def test_a_pullback_never_returns_its_seed_or_one_array_twice():
    x, s = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    _, back = ad.pullback(lambda a: a + 0.0, x)
    g = back(s)[0]
    assert not np.shares_memory(g, s)
    g += 1.0  # the caller may write into it
    np.testing.assert_array_equal(s, [1.0, 1.0])
    np.testing.assert_array_equal(back(s)[0], [1.0, 1.0])
    _, back = ad.pullback(lambda a, b: a + b, x, 2.0 * x)
    ga, gb = back(s)
    assert not np.shares_memory(ga, gb) and not np.shares_memory(ga, s)
    _, back = ad.pullback(lambda a: a.reshape(2, 1), x)
    s2 = np.ones((2, 1))
    assert not np.shares_memory(back(s2)[0], s2)


def scaled_twice(x):
    return x * 2.0


@rulescore.rrule.register(scaled_twice)
def _(x):
    return scaled_twice(x), lambda ȳ: (rulescore.NoTangent(), (2.0 + 1.0j) * ȳ)


def test_a_complex_cotangent_of_a_real_argument_is_projected():
    assert ad.gradient(lambda x: scaled_twice(x) * 3.0, 1.5) == (6.0,)
    (g,) = ad.gradient(lambda x: np.sum(scaled_twice(x)), np.ones(2))
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [2.0, 2.0])
    (g,) = ad.gradient(lambda z: abs(scaled_twice(z)) ** 2, 1.0 + 0.5j)
    assert isinstance(g, complex)  # a complex argument keeps its complex gradient


# --- second order: the same decisions --------------------------------------------------


@pytest.mark.parametrize("hessian", [ad.hessian, ad.hessian_reverse], ids=lambda h: h.__name__)
@pytest.mark.parametrize(
    "f",
    [softmax_in_place, accumulate_in_a_loop, tanh_in_a_loop, constant_updated_after_use],
    ids=lambda f: f.__name__,
)
def test_second_order_through_updates_nobody_else_observes(f, hessian):
    x = np.array([0.1, 0.4, -0.3])
    np.testing.assert_allclose(hessian(f, x), fd_hessian(f, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("hessian", [ad.hessian, ad.hessian_reverse], ids=lambda h: h.__name__)
@pytest.mark.parametrize(
    "f",
    [view_slice, rows_of_a_loop, held_by_a_list, held_by_an_object, tuple_unpacking, plain_copy],
    ids=lambda f: f.__name__,
)
def test_second_order_refuses_what_first_order_refuses(f, hessian):
    # (An object's attribute write is refused earlier by reverse over reverse, naming
    # the user's line: "differentiated twice in reverse mode".)
    with pytest.raises(
        ad.MutationError, match="is updated in place|into its argument|differentiated twice"
    ):
        hessian(f, np.array([0.1, 0.4, -0.3]))


# --- a[i] op= v, o.a op= v: the element is updated in place ----------------------------


def element_shared_with_the_argument(x):
    pair = [x, x]
    pair[0] += 1.0  # Python adds 1 to x itself, and so to pair[1]
    return np.sum(pair[1] * x)


def element_read_before(x):
    d = {"a": x * 1.0}
    e = d["a"]
    d["a"] *= 2.0  # e sees the change in Python
    return np.sum(e * x)


def element_nobody_else_holds(x):
    pair = [x * 1.0, x * 2.0]
    pair[0] += x
    b = Box()
    b.w = np.exp(x)
    b.w *= 2.0
    d = {"k": 1.0}
    d["k"] += np.sum(x)  # a float: immutable, nothing to check
    return np.sum(pair[0] * pair[1]) + np.sum(b.w) + d["k"]


@pytest.mark.parametrize(
    ("f", "label"),
    [
        (
            element_shared_with_the_argument,
            r"'pair\[0\]' is updated in place, but it is also reachable as 'x'",
        ),
        (element_read_before, r"d\['a'\]\" is updated in place, but it is also reachable as 'e'"),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_an_element_update_another_holder_would_see_is_refused(f, label):
    refused_in_both_modes(f, [1.0, 2.0, 3.0], label)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_an_element_update_nobody_else_observes_is_differentiated(shape):
    x = np.linspace(0.1, 0.6, int(np.prod(shape))).reshape(shape)
    check_both_modes(element_nobody_else_holds, x)


# --- x op= y keeps numpy's in-place semantics ------------------------------------------


def float32_accumulator(x):
    acc = np.zeros(3, dtype=np.float32)
    acc += x * 2.0  # numpy keeps acc float32
    acc *= x
    return acc


def test_an_update_keeps_the_arrays_dtype_in_both_modes():
    x = np.array([0.1, 0.2, 0.3])
    y, back = ad.pullback(float32_accumulator, x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, float32_accumulator(x))
    np.testing.assert_allclose(back(np.ones(3, dtype=np.float32))[0], 4.0 * x, rtol=1e-6)
    y, ẏ = ad.jvp(float32_accumulator, (x,), (np.ones(3),))
    assert y.dtype == ẏ.dtype == np.float32
    np.testing.assert_allclose(ẏ, 4.0 * x, rtol=1e-6)


def grows_by_broadcasting(x):
    acc = np.zeros(3)
    acc += np.outer(x, x)  # numpy: non-broadcastable output operand
    return np.sum(acc)


def int_accumulator(x):
    acc = np.zeros(3, dtype=int)
    acc += x  # numpy: cannot cast float64 to int64 in place
    return np.sum(acc)


@pytest.mark.parametrize("f", [grows_by_broadcasting, int_accumulator], ids=lambda f: f.__name__)
def test_an_update_numpy_refuses_raises_numpys_error(f):
    x = np.array([0.1, 0.2, 0.3])
    with pytest.raises(Exception) as python:
        f(x)
    with pytest.raises(type(python.value), match=str(python.value)[:30]):
        ad.gradient(f, x)
    with pytest.raises(type(python.value), match=str(python.value)[:30]):
        ad.jvp(f, (x,), (x,))


def rows_written_in_place(x):
    rows = []
    for i in range(2):
        row = [x * 1.0, x]
        row[0] = row[0] * x[i]
        rows.append(row)
    return np.sum(rows[1][0] * x) + np.sum(rows[0][-1] ** 3)


def dict_entries_rewritten(x):
    d = {}
    d["a"] = x * 2.0
    d["a"] = d["a"] * x
    return np.sum(d["a"]) * x[0]


@pytest.mark.parametrize(
    ("f", "hessians"),
    [
        (rows_written_in_place, [ad.hessian, ad.hessian_reverse, ad.diaghessian]),
        # reverse over reverse does not yet differentiate a dict entry's pullback
        (dict_entries_rewritten, [ad.hessian, ad.diaghessian]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_second_order_through_container_writes(f, hessians):
    x = np.array([0.1, 0.4, -0.3])
    want = fd_hessian(f, x)
    for hessian in hessians:
        got = hessian(f, x)
        if hessian is ad.diaghessian:
            got, want_ = got[0], np.diag(want)
        else:
            want_ = want
        np.testing.assert_allclose(got, want_, rtol=1e-5, atol=1e-5)


# --- x[k] = v into an array nobody else observes: differentiated ----------------------


def filled_entry_by_entry(x):
    out = np.zeros(x.size)
    for i in range(x.size):
        out[i] = x.reshape(-1)[i] * x.reshape(-1)[(i + 1) % x.size]
    return np.sum(out * out)


def set_after_a_pullback_saved_it(x):
    y = x * 2.0
    z = y * y  # saves y
    y[0] = 5.0
    return np.sum(z) + np.sum(y * x)


def rows_columns_and_masks(x):
    m = np.zeros((2,) + x.shape)
    m[0] = x
    m[1, ...] = x**2
    m[:, 0] += 1.0  # a view of m, stored back into m
    m[m > 3.0] = 3.0
    return np.sum(m**2)


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize(
    "f",
    [filled_entry_by_entry, set_after_a_pullback_saved_it, rows_columns_and_masks],
    ids=lambda f: f.__name__,
)
def test_item_assignment_nobody_else_observes_is_differentiated(f, shape):
    x = np.linspace(0.3, 1.9, int(np.prod(shape))).reshape(shape)
    check_both_modes(f, x)
    if len(shape) == 1:
        for hessian in (ad.hessian, ad.hessian_reverse):
            np.testing.assert_allclose(hessian(f, x), fd_hessian(f, x), rtol=1e-5, atol=1e-5)


def test_item_assignment_keeps_the_arrays_dtype():
    def f(x):
        y = np.zeros(3, dtype=np.float32)
        y[1:] = x[:2] * 2.0
        return y

    x = np.array([0.5, 1.5, 2.5])
    y, back = ad.pullback(f, x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(back(np.ones(3, dtype=np.float32))[0], [2.0, 2.0, 0.0])


# --- x op= y takes the operators' fast paths --------------------------------------------


def every_update_on_floats(x):
    r = 1.0
    for _ in range(3):
        r *= x[0]
        r += x[1]
        r /= 1.5
        r -= 0.1
        r **= 2
    return r


def every_update_on_arrays(x):
    acc = x * 1.0
    acc *= x
    acc /= 1.0 + x
    acc -= x[::-1]
    acc **= 2
    acc += np.float64(0.5)
    m = np.outer(x, x)
    m += x  # broadcast into m's shape
    m *= x[:, None]
    return np.sum(acc) + np.sum(m)


@pytest.mark.parametrize(
    "f", [every_update_on_floats, every_update_on_arrays], ids=lambda f: f.__name__
)
def test_augmented_assignment_through_the_fast_paths(f):
    x = np.array([0.5, 1.2, 2.0])
    check_both_modes(f, x)
    np.testing.assert_allclose(ad.hessian(f, x), fd_hessian(f, x), rtol=1e-5, atol=1e-5)
    assert "_ad_fasti_iop_" in ad.code_adjoint(f, x)
