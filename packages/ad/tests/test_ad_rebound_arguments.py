"""A parameter bound to another object before a write: ``x = x.copy()``, then ``x[0] = v``.

A write into an argument the function does not return is refused (the caller
would not see it in the backward pass); once the parameter's name holds another
object, the write is judged as a local's is (``guards.rebound_parameters``): a
fresh copy may be written, a view of the argument, another argument or an
object held inside one may not, and a rebinding on one branch only leaves the
other branch's write refused. An argument written and returned inside a tuple
is returned as well. Checked against hand-derived values and central
differences in reverse and forward mode.
"""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad


def copied(x):
    x = x.copy()
    y = x**2.0
    x[0] = y[1] * y[2]
    return np.sum(x * y)


def as_array(x):
    x = np.array(x)
    x[1] = x[0] * x[2]
    return np.sum(x * x)


def scaled(x):
    x = x * 1.0
    x[2] += x[0]
    return np.sum(np.sin(x))


def in_a_loop(x):
    for _ in range(2):
        x = x.copy()
        x[0] = x[0] * x[1]
    return np.sum(x)


@pytest.mark.parametrize("f", [copied, as_array, scaled, in_a_loop])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_fresh_copy_may_be_written(f, dtype):
    x = np.array([0.5, 2.0, 3.0], dtype=dtype)
    before = x.copy()
    (g,) = ad.gradient(f, x)
    np.testing.assert_array_equal(x, before)  # the caller's array is untouched
    (expected,) = fd_gradient(f, x.astype(np.float64))
    tol = 1e-6 if dtype == np.float64 else 1e-3
    np.testing.assert_allclose(g, expected, rtol=tol, atol=tol)
    v = np.array([0.3, -1.0, 0.7], dtype=dtype)
    np.testing.assert_allclose(ad.jvp(f, (x,), (v,))[1], expected @ v, rtol=tol, atol=tol)


def test_the_hand_derived_value():
    # sum(x' * x²) with x' = [x1² x2², x1, x2]: ∂/∂x0 = 2 x0 x1² x2², ...
    x0, x1, x2 = 0.5, 2.0, 3.0
    expected = [
        2 * x0 * x1**2 * x2**2,
        2 * x1 * x0**2 * x2**2 + 3 * x1**2,
        2 * x2 * x0**2 * x1**2 + 3 * x2**2,
    ]
    np.testing.assert_allclose(ad.gradient(copied, np.array([x0, x1, x2]))[0], expected)


def listed(xs):
    xs = list(xs)
    xs[0] = xs[1] * xs[2]
    xs.append(xs[0] * 2.0)
    return xs[0] + xs[1] + xs[3]


def dict_copied(d):
    d = dict(d)
    d["w"] = d["w"] * d["b"]
    return d["w"] + d["b"]


def test_containers_rebound_to_copies():
    assert ad.gradient(listed, [0.5, 2.0, 3.0]) == ([None, 10.0, 6.0],)
    g = ad.gradient(dict_copied, {"w": 2.0, "b": 3.0})[0]
    assert g == {"w": 3.0, "b": 3.0}
    assert ad.jvp(listed, ([0.5, 2.0, 3.0],), ([0.0, 1.0, 0.0],))[1] == 10.0


def branch(x, copy):
    if copy:
        x = x.copy()
    x[0] = x[1] * x[2]
    return np.sum(x)


def a_view(x):
    x = x[1:]
    x[0] = x[0] * x[1]
    return np.sum(x)


def another_argument(xs, ys):
    xs = ys
    xs[0] = xs[1] * 3.0
    return xs[0] + ys[0]


def held_inside(xs, d):
    xs = d["buf"]
    xs[0] = xs[1] * 3.0
    return xs[0]


def test_a_write_reaching_the_caller_stays_refused():
    x = np.array([0.5, 2.0, 3.0])
    np.testing.assert_allclose(ad.gradient(branch, x, True)[0], [0.0, 4.0, 3.0])
    with pytest.raises(ad.MutationError, match="argument 'x'"):
        ad.gradient(branch, x, False)
    with pytest.raises(ad.MutationError, match="view"):
        ad.gradient(a_view, x)
    with pytest.raises(ad.MutationError, match="'ys'"):
        ad.gradient(another_argument, [1.0, 2.0], [4.0, 5.0])
    with pytest.raises(ad.MutationError):
        ad.gradient(held_inside, [1.0], {"buf": [1.0, 2.0]})
    with pytest.raises(ad.MutationError, match="argument 'x'"):
        ad.jvp(branch, (x, False), (np.ones(3), None))


def written_returned_in_tuple(x):
    x[0] = x[1] * x[2]
    return np.sum(x), x


def test_an_argument_written_and_returned_in_a_tuple():
    x = np.array([0.5, 2.0, 3.0])
    _, back = ad.pullback(written_returned_in_tuple, x.copy())
    np.testing.assert_allclose(back((1.0, np.zeros(3)))[0], [0.0, 4.0, 3.0])
    np.testing.assert_allclose(back((0.0, np.array([1.0, 10.0, 100.0])))[0], [0.0, 13.0, 102.0])


G = np.array([1.0, 2.0, 3.0])
GL = [1.0, 2.0]


def rebound_to_a_global(x, s):
    x = G  # the parameter now names the module's array: a write changes G
    x[0] = s * 2.0
    return np.sum(G * s)


def rebound_to_a_global_list(xs, s):
    xs = GL
    xs[0] = s * 2.0
    return GL[0] * s


def _captured(param):
    H = np.array([1.0, 2.0, 3.0])

    def through_a_parameter(x, s):
        x = H
        x[0] = s * 2.0
        return np.sum(H * s)

    def through_a_local(x, s):
        y = H
        y[0] = s * 2.0
        return np.sum(H * s)

    return through_a_parameter if param else through_a_local


@pytest.mark.parametrize(
    "f, args",
    [
        (rebound_to_a_global, (None, 1.5)),
        (rebound_to_a_global_list, ([0.0], 1.5)),
        (_captured(True), (None, 1.5)),
        (_captured(False), (None, 1.5)),
    ],
    ids=["global array", "global list", "captured, parameter", "captured, local"],
)
def test_a_write_into_a_global_or_captured_object_through_another_name_is_refused(f, args):
    # Python writes the global (or the closure's array), read afterwards: a write
    # into a private copy would give the wrong value and gradient, silently
    before = (G.copy(), list(GL))
    with pytest.raises(ad.MutationError, match="updated in place"):
        ad.gradient(f, *args)
    with pytest.raises(ad.MutationError, match="updated in place"):
        ad.jvp(f, args, (None, 1.0))
    np.testing.assert_array_equal(G, before[0])
    assert GL == before[1]
