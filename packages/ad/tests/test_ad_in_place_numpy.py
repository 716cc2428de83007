"""numpy's in-place functions and ``out=`` in differentiated code.

``np.put_along_axis(a, ...)``, ``np.fill_diagonal``, ``np.copyto``, ``np.place``,
``np.putmask``, ``np.put``, ``np.add.at`` and a numpy call's ``out=c`` write
into an array; on a local array the AD differentiates the write as the array's
new value (``ad.transform.writers``, ``rules.functional``). Checked against
central differences in reverse and forward mode and at second order; the
write's effect on views and other names, and the refusals, are checked too.
"""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad

IDX = np.array([[2], [0]])


def put_along(x):
    a = np.outer(x[:2], x[2:])  # (2, 2)... widened below
    a = np.concatenate([a, a[:, :1] * 3.0], axis=1)  # (2, 3)
    np.put_along_axis(a, IDX, x[:2, None] ** 2, axis=1)
    return np.sum(a * np.arange(6.0).reshape(2, 3)) + np.sum(a**2)


def put_along_negative_axis(x):
    a = np.tile(x, (2, 1))  # (2, 4)
    np.put_along_axis(a, np.array([[1, 3], [0, 0]]), np.sin(x[:2]), axis=-1)
    return np.sum(np.cos(a))


def scatter_add_repeated(x):
    acc = np.zeros(3)
    np.add.at(acc, [0, 2, 0, 0], x)
    return np.sum(acc**3)


def scatter_subtract_scalar(x):
    acc = x[:3] * 2.0
    np.subtract.at(acc, [1, 1], x[3])
    return np.sum(acc**2)


def fill_diagonal_active(x):
    a = np.outer(x, x)
    np.fill_diagonal(a, x[0] * 2.0)
    return np.sum(np.tanh(a))


def copyto_where(x):
    a = x * 0.5
    np.copyto(a, x**2, where=np.array([True, False, True, False]))
    return np.sum(a * x)


def place_and_putmask(x):
    a = x.copy()
    np.place(a, a > 0.0, [10.0 * x[0], x[1]])
    b = x * 1.0
    np.putmask(b, np.array([True, False, False, True]), x[::-1])
    return np.sum(a * b)


def put_flat(x):
    a = np.zeros((2, 2))
    np.put(a, [0, 3], x[1:3])
    return np.sum(a @ a) + x[0] * a[1, 1]


def in_a_loop(x):
    acc = np.zeros(2)
    for i in range(3):
        np.add.at(acc, [i % 2], x[i] * x[3])
    return np.sum(acc**2)


def out_statement(x):
    c = np.empty(4)
    np.multiply(x, x, out=c)
    return np.sum(c * x)


def out_assigned_aliases(x):
    c = np.zeros(4)
    y = np.add(x, 1.0, out=c)
    return np.sum(y * c)  # y is c


def out_tuple_and_where(x):
    c = x * 3.0
    np.exp(x, out=(c,), where=x > 0.0)
    return np.sum(c**2)


def out_of_a_matmul_and_reduction(x):
    m = np.outer(x, x)
    c = np.empty((4, 4))
    np.matmul(m, m, out=c)
    s = np.empty(4)
    np.sum(c, axis=0, out=s)
    return np.sum(np.sin(s))


PROGRAMS = [
    put_along,
    put_along_negative_axis,
    scatter_add_repeated,
    scatter_subtract_scalar,
    fill_diagonal_active,
    copyto_where,
    place_and_putmask,
    put_flat,
    in_a_loop,
    out_statement,
    out_assigned_aliases,
    out_tuple_and_where,
    out_of_a_matmul_and_reduction,
]
X = np.array([0.4, -1.3, 0.9, 0.6])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_reverse_mode(f):
    (g,) = ad.gradient(f, X.copy())
    np.testing.assert_allclose(g, fd_gradient(f, X.copy())[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_forward_mode(f):
    t = np.array([0.3, -1.0, 0.5, 2.0])
    y, ẏ = ad.jvp(f, (X.copy(),), (t,))
    assert y == pytest.approx(f(X.copy()))
    np.testing.assert_allclose(ẏ, fd_gradient(f, X.copy())[0] @ t, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order(f):
    np.testing.assert_allclose(
        ad.hessian(f, X.copy()), fd_hessian(f, X.copy()), rtol=1e-5, atol=1e-5
    )


def test_hand_derived_scatter_add():
    # acc = [x0 + x2 + x3, 0, x1]; f = sum(acc**3)
    g = ad.gradient(scatter_add_repeated, X.copy())[0]
    s = X[0] + X[2] + X[3]
    np.testing.assert_allclose(g, [3 * s**2, 3 * X[1] ** 2, 3 * s**2, 3 * s**2])


def test_float32_stays_float32():
    def f(x):
        a = np.zeros(3, dtype=np.float32)
        np.add.at(a, [0, 0, 1], x)
        return np.sum(a * a)

    (g,) = ad.gradient(f, np.ones(3, dtype=np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [4.0, 4.0, 2.0])


def test_an_undifferentiated_write_is_seen_through_a_view():
    def f(x):
        buf = np.zeros((2, 3))
        row = buf[0]
        np.put_along_axis(buf, IDX, 5.0, axis=1)
        c = np.ones(3)
        alias = c
        np.multiply(c, 2.0, out=c)
        return np.sum(x * row) + np.sum(x * alias)

    x = np.array([1.0, 2.0, 3.0])
    assert f(x) == pytest.approx(3 * 5.0 + 2 * 6.0)
    (g,) = ad.gradient(f, x)
    np.testing.assert_allclose(g, [2.0, 2.0, 7.0])
    _, ẏ = ad.jvp(f, (x,), (np.ones(3),))
    assert ẏ == pytest.approx(11.0)


def test_a_write_another_name_would_see_is_refused():
    def f(x):
        a = x * 1.0
        b = a
        np.put(a, [0], 5.0)
        return np.sum(a * b)

    with pytest.raises(ad.MutationError, match=r"test_ad_in_place_numpy\.py:\d+.*'a'.*'b'"):
        ad.gradient(f, np.ones(3))


def test_a_write_into_the_callers_array_is_refused():
    def f(x):
        np.put(x, [0], 5.0)
        return np.sum(x**2)

    x = np.ones(3)
    with pytest.raises(ad.MutationError, match=r"test_ad_in_place_numpy\.py:\d+"):
        ad.gradient(f, x)
    np.testing.assert_array_equal(x, np.ones(3))  # refused before the write


def test_the_write_happens_in_the_primal_value():
    def f(x):
        a = x * 1.0
        np.fill_diagonal(a, 0.0)
        return a

    x = np.arange(4.0).reshape(2, 2) + 1.0
    y, pb = ad.pullback(f, x)
    np.testing.assert_array_equal(y, [[0.0, 2.0], [3.0, 0.0]])
    np.testing.assert_array_equal(pb(np.ones((2, 2)))[0], [[0.0, 1.0], [1.0, 0.0]])


def test_a_rebound_numpy_name_is_not_rewritten():
    np_like = type("NP", (), {"put": staticmethod(lambda a, i, v: None)})

    def f(x):
        a = x * 2.0
        np_like.put(a, [0], 9.0)  # not numpy's: an ordinary call
        return np.sum(a)

    np.testing.assert_allclose(ad.gradient(f, np.ones(2))[0], [2.0, 2.0])


def _scatter_into_new(x):
    acc = np.zeros(2)
    np.add.at(acc, [0, 1, 0], x)
    return acc


def _zero_first(a):
    np.put(a, [0], 0.0)
    return a


def test_a_small_helper_writing_its_own_array_is_differentiated_when_inlined():
    def f(x):
        return np.sum(_scatter_into_new(x) ** 2)

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(ad.gradient(f, x)[0], fd_gradient(f, x)[0], rtol=1e-6)
    np.testing.assert_allclose(ad.jvp(f, (x,), (np.ones(3),))[1], 2 * 4.0 * 2 + 2 * 2.0)


def test_a_small_helper_writing_its_argument_is_refused_when_inlined_too():
    def f(x):
        b = x * 2.0
        c = b
        return np.sum(_zero_first(b) * c)

    with pytest.raises(ad.MutationError, match=r"test_ad_in_place_numpy\.py:\d+"):
        ad.gradient(f, np.ones(3))
