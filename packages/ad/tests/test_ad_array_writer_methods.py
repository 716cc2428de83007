"""ndarray methods that write their array: ``a.fill(v)``, ``a.sort()``,
``a.partition(k)``, ``a.put(idx, v)``.

On a local array the AD differentiates the write as the array's new value
(``ad.transform.writers``: ``copyto``'s and ``put``'s functional forms,
``np.sort``, ``np.partition``); on anything else with a method of that name (a
list, an object of the user's) the statement runs as written. Checked against
central differences and hand-derived values in reverse and forward mode and at
second order; the refusals and the write's effect on views are checked too.
"""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad


def fill_then_scale(x):
    a = np.empty(4)
    a.fill(x[0] * x[1])
    return np.sum(a * np.arange(4.0)) + np.sum(a * x)


def sort_in_place(x):
    a = x * np.array([3.0, -1.0, 2.0, 0.5])
    a.sort()
    return a[0] + 10.0 * a[3] + np.sum(np.sin(a) * np.arange(4.0))


def sort_rows_along_an_axis(x):
    a = np.outer(x[:2], x[2:])
    a.sort(axis=0)
    return np.sum(a * np.array([[1.0, 2.0], [3.0, 4.0]]))


def partition_then_read(x):
    a = x**2 - x
    a.partition(2)
    return a[2] * 3.0 + np.sum(a[:2])


def put_with_mode(x):
    a = np.tanh(x)
    a.put([0, 5], x[1:3], mode="wrap")  # index 5 wraps to 1
    return np.sum(a**2 * np.arange(1.0, 5.0))


def in_a_loop_and_a_branch(x):
    a = x.copy()
    for k in range(3):
        if k % 2 == 0:
            a.sort()
        else:
            a.put([k], a[0] * x[k])
    return np.sum(a * np.arange(4.0))


PROGRAMS = [
    fill_then_scale,
    sort_in_place,
    sort_rows_along_an_axis,
    partition_then_read,
    put_with_mode,
    in_a_loop_and_a_branch,
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


def test_hand_derived_fill_and_sort():
    # fill: a = [p, p, p, p] with p = x0*x1; f = 6p + p*sum(x)
    x = X.copy()
    p, s = x[0] * x[1], np.sum(x)
    dp = 6.0 + s
    want = np.array([dp * x[1] + p, dp * x[0] + p, p, p])
    np.testing.assert_allclose(ad.gradient(fill_then_scale, x)[0], want)

    # sort of [3x, 2x] for x > 0: [2x, 3x]; f = a[0] + 10 a[1] = 32x
    def f(x):
        a = np.array([3.0, 2.0]) * x
        a.sort()
        return a[0] + 10.0 * a[1]

    assert ad.gradient(f, 1.5)[0] == pytest.approx(32.0)
    assert ad.jvp(f, (1.5,), (1.0,))[1] == pytest.approx(32.0)


def test_float32_stays_float32():
    def f(x):
        a = np.zeros(3, dtype=np.float32)
        a.fill(x[0])
        a.sort()
        return np.sum(a * x)

    (g,) = ad.gradient(f, np.ones(3, dtype=np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [4.0, 1.0, 1.0])


def test_a_users_object_runs_its_own_method():
    class Bag:
        def __init__(self):
            self.items = []

        def sort(self):  # not an array: this method runs, differentiated as any
            self.items = sorted(self.items)

        def fill(self, v):
            self.items = [v] * len(self.items)

    def f(x):
        bag = Bag()
        bag.items = [x * x, x]
        bag.sort()
        low = bag.items[0]
        bag.fill(low * 3.0)
        return low + bag.items[1]

    # x = 2: items sorted = [2, 4], low = x; filled with 3x: f = x + 3x
    assert ad.gradient(f, 2.0)[0] == pytest.approx(4.0)
    assert ad.jvp(f, (2.0,), (1.0,))[1] == pytest.approx(4.0)


def test_a_lists_sort_is_a_lists():
    # not numpy's: the list's own sort, differentiated as its permutation
    # (ad.transform.container_methods; test_ad_container_methods)
    def f(x):
        xs = [x * 3.0, x * 2.0]
        xs.sort()
        return xs[0]

    assert ad.gradient(f, 2.0)[0] == pytest.approx(2.0)
    assert ad.gradient(f, -2.0)[0] == pytest.approx(3.0)


def test_a_write_another_name_would_see_is_refused():
    def f(x):
        a = x * 1.0
        b = a
        a.sort()
        return np.sum(a * b)

    with pytest.raises(ad.MutationError, match=r"test_ad_array_writer_methods\.py:\d+.*'a'.*'b'"):
        ad.gradient(f, np.array([2.0, 1.0]))
    x = np.array([2.0, 1.0])
    assert f(x) == pytest.approx(5.0)  # plain Python: b is a, sorted too


def test_a_write_into_the_callers_array_is_refused_before_it_happens():
    def f(x):
        x.fill(1.0)
        return np.sum(x**2)

    x = np.array([3.0, 4.0])
    with pytest.raises(ad.MutationError, match=r"test_ad_array_writer_methods\.py:\d+"):
        ad.gradient(f, x)
    np.testing.assert_array_equal(x, [3.0, 4.0])


def test_an_undifferentiated_write_is_seen_through_a_view():
    def f(x):
        buf = np.arange(4.0)[::-1].copy()
        head = buf[:2]
        buf.sort()  # carries no derivative: written into buf's memory
        return np.sum(x * head)

    x = np.array([1.0, 2.0])
    assert f(x) == pytest.approx(0.0 + 2.0)
    np.testing.assert_allclose(ad.gradient(f, x)[0], [0.0, 1.0])
    assert ad.jvp(f, (x,), (np.ones(2),))[1] == pytest.approx(1.0)


def test_the_write_is_in_the_primal_value():
    def f(x):
        a = x * 1.0
        a.partition(1)
        return a

    x = np.array([3.0, 1.0, 2.0])
    y, pb = ad.pullback(f, x)
    np.testing.assert_array_equal(y, np.partition(x, 1))
    np.testing.assert_array_equal(pb(np.array([1.0, 0.0, 0.0]))[0], [0.0, 1.0, 0.0])
