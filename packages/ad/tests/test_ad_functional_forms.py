"""``rules.functional`` (the functional forms of numpy's in-place functions) called in
user code: gradients, forward mode and Hessians through their rules, against central
differences and hand-derived values."""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad
from rules import functional as F

X = np.array([0.3, -0.7, 1.1, 0.45, 0.2, -0.9])
IDX = np.array([0, 2, 0, 1])


def _scatter_products(x):
    y = F.ufunc_at(x[:3], IDX, x[:4] ** 2, ufunc=np.multiply)
    y = F.ufunc_at(y, IDX, x[2:6], ufunc=np.add)
    return np.sum(F.fill_diagonal(np.outer(y, y), x[3:6], wrap=False) ** 2)


def _overwrites(x):
    a = np.outer(x[:3], x[3:])
    a = F.put_along_axis(a, np.array([[2], [0], [2]]), x[:3, None] ** 3, axis=-1)
    a = F.copyto(a, x[3:] * 2.0, where=np.array([True, False, True]))
    a = F.putmask(a, a > 0.1, x[:2])
    a = F.place(a, np.eye(3, dtype=bool), x[4:])
    return np.sum(F.put(a, np.array([1, 10, 1]), x[::2], mode="wrap") * a)


CASES = {"scatter_products": _scatter_products, "overwrites": _overwrites}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reverse_forward_and_second_order_match_differences(name):
    f = CASES[name]
    g = ad.gradient(f, X)[0]
    np.testing.assert_allclose(g, fd_gradient(f, X)[0], rtol=1e-7, atol=1e-8)
    v = np.linspace(-1.0, 1.0, X.size)
    np.testing.assert_allclose(ad.jvp(f, (X,), (v,))[1], g @ v, rtol=1e-12)
    H = ad.hessian(f, X)
    np.testing.assert_allclose(H, fd_hessian(f, X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ad.hessian_reverse(f, X), H, rtol=1e-10, atol=1e-12)


def test_by_hand():
    # y = ufunc_at(a, [0, 0], b, multiply) = a0 b0 b1 at entry 0; s = y0 + 3 y1 with
    # y1 = a1 overwritten by put with v at index 1: s = a0 b0 b1 + 3 v
    def s(a, b, v):
        y = F.ufunc_at(a, np.array([0, 0]), b, ufunc=np.multiply)
        return np.sum(F.put(y, np.array([1]), v) * np.array([1.0, 3.0]))

    a, b, v = np.array([2.0, 5.0]), np.array([3.0, 4.0]), np.array([7.0])
    ga, gb, gv = ad.gradient(s, a, b, v)
    np.testing.assert_array_equal(ga, [12.0, 0.0])
    np.testing.assert_array_equal(gb, [8.0, 6.0])
    np.testing.assert_array_equal(gv, [3.0])
    H = ad.hessian(lambda b: s(a, b, v), b)  # ∂²/∂b0∂b1 = a0
    np.testing.assert_array_equal(H, [[0.0, 2.0], [2.0, 0.0]])
