"""Reads of list and dict items (``xs[i]``, ``d[k]``): the lean tape of
``ad.runtime.item_reads`` and the general path it falls back to give the same
gradients, checked against central differences and by hand, in reverse mode
(the lean tape's), forward mode and at second order (the general path's)."""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from rulescore import Tangent


def loop_reads(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + xs[i] * xs[i - 1]  # negative index at i = 0
    return s


def reads_after_appends(x):
    out = [x]
    for k in range(3):
        out.append(out[-1] * x + k)  # the list grows between reads
    return out[1] * out[-1] + out[0]


def dict_of_floats(d):
    return d["a"] * d["b"] + d["a"] ** 2


def dict_of_arrays(p):
    return np.sum(np.tanh(p["w"] * p["x"])) + np.sum(p["w"] ** 2)


def mixed_entries(xs):
    # an int entry and a complex one take the general path, floats the lean one
    return xs[0] * xs[1] + (xs[2] * xs[0]).real + xs[3] * xs[0]


def nested_containers(d):
    rows = d["rows"]
    return rows[0][1] * rows[1][0] + d["s"] * rows[0][0]


FLOAT_LIST = [0.3, -1.2, 0.8, 2.0]


def _list_fd(f, xs):
    h = 1e-6
    out = []
    for i in range(len(xs)):
        p, m = list(xs), list(xs)
        p[i] += h
        m[i] -= h
        out.append((f(p) - f(m)) / (2 * h))
    return out


def test_a_loop_of_list_reads():
    (g,) = ad.gradient(loop_reads, FLOAT_LIST)
    assert type(g) is list
    np.testing.assert_allclose(g, _list_fd(loop_reads, FLOAT_LIST), rtol=1e-6)
    xs = FLOAT_LIST  # ∂/∂x_i = x_{i-1} + x_{i+1}, cyclically
    hand = [xs[i - 1] + xs[(i + 1) % 4] for i in range(4)]
    np.testing.assert_allclose(g, hand)
    _, ẏ = ad.jvp(loop_reads, (FLOAT_LIST,), ([1.0, 0.0, 0.0, 0.0],))
    assert ẏ == pytest.approx(hand[0])


def test_reads_of_a_list_that_grows():
    x = 0.7
    g = ad.gradient(reads_after_appends, x)[0]
    assert g == pytest.approx(fd_gradient(reads_after_appends, x)[0], rel=1e-6)
    assert ad.jvp(reads_after_appends, (x,), (1.0,))[1] == pytest.approx(g)
    h = 1e-5
    hess = (
        ad.gradient(reads_after_appends, x + h)[0] - ad.gradient(reads_after_appends, x - h)[0]
    ) / (2 * h)
    assert ad.hessian(reads_after_appends, x) == pytest.approx(hess, rel=1e-5)


def test_dict_of_floats():
    d = {"a": 1.5, "b": -2.0}
    (g,) = ad.gradient(dict_of_floats, d)
    assert g == {"a": -2.0 + 3.0, "b": 1.5}
    _, ẏ = ad.jvp(dict_of_floats, (d,), ({"a": 1.0, "b": 1.0},))
    assert ẏ == pytest.approx(1.0 + 1.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dict_of_arrays_keeps_shape_and_dtype(dtype):
    p = {"w": np.array([0.5, -0.3, 1.2], dtype=dtype), "x": np.array([1.0, 2.0, -1.0], dtype=dtype)}
    (g,) = ad.gradient(dict_of_arrays, p)
    assert list(g) == ["w", "x"]
    assert g["w"].dtype == dtype and g["w"].shape == (3,)
    t = 1.0 - np.tanh(p["w"] * p["x"]) ** 2
    np.testing.assert_allclose(g["w"], t * p["x"] + 2 * p["w"], rtol=1e-5)
    np.testing.assert_allclose(g["x"], t * p["w"], rtol=1e-5)


def test_entries_that_are_not_floats_take_the_general_path():
    xs = [1.5, 2, 0.5 + 1.0j, -0.25]
    (g,) = ad.gradient(mixed_entries, xs)
    # ∂/∂x0 = x1 + Re(x2) + x3; an int entry gets its cotangent as a float
    assert g[0] == pytest.approx(2 + 0.5 - 0.25)
    assert g[1] == pytest.approx(1.5)
    assert g[3] == pytest.approx(1.5)


def test_nested_containers():
    d = {"rows": [[0.5, 1.5], [2.0, 0.0]], "s": 3.0}
    (g,) = ad.gradient(nested_containers, d)
    assert g["s"] == pytest.approx(0.5)
    np.testing.assert_allclose(g["rows"][0], [3.0, 2.0])
    np.testing.assert_allclose(g["rows"][1][0], 1.5)


def test_reads_of_a_captured_list_written_in_the_function():
    # a followed list (written by identity) is read through the general path
    log = []

    def f(x):
        log.append(x * x)
        return log[-1] * x

    assert ad.gradient(f, 1.3)[0] == pytest.approx(3 * 1.3**2)


# --- object fields (``read_attr``) ------------------------------------------------------


class Params:
    scale = 2.0  # a class attribute: the general path

    def __init__(self, w, b):
        self.w = w
        self.b = b

    @property
    def w2(self):  # a property: the general path
        return self.w * self.w

    def model(self, x):
        return np.sum(np.tanh(self.w * x + self.b))


class Slotted:
    __slots__ = ("w",)

    def __init__(self, w):
        self.w = w


def fields(p):
    return np.sum(p.w * p.b) + np.sum(p.w2) * p.scale + p.model(1.5)


def _fields_hand(p):
    t = 1.0 - np.tanh(p.w * 1.5 + p.b) ** 2
    return p.b + 4.0 * p.w + 1.5 * t, p.w + t


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fields_of_a_model_object(dtype):
    p = Params(np.array([0.5, -1.0], dtype=dtype), np.array([0.2, 0.3], dtype=dtype))
    (g,) = ad.gradient(fields, p)
    gw, gb = _fields_hand(p)
    np.testing.assert_allclose(g.w, gw, rtol=1e-5)
    np.testing.assert_allclose(g.b, gb, rtol=1e-5)
    assert g.w.dtype == dtype
    ṗ = Tangent[Params](w=np.ones(2, dtype), b=np.zeros(2, dtype))
    _, ẏ = ad.jvp(fields, (p,), (ṗ,))
    assert ẏ == pytest.approx(float(np.sum(gw)), rel=1e-5)


def test_fields_of_slots_and_of_an_object_written_in_the_function():
    def f(x):
        s = Slotted(x * 2.0)
        p = Params(x, 1.0)
        p.b = p.w * x  # written: followed by identity, read through the general path
        return s.w * p.b + p.w

    # f = 2x·x² + x
    assert ad.gradient(f, 1.3)[0] == pytest.approx(6 * 1.3**2 + 1)
    assert ad.jvp(f, (1.3,), (1.0,))[1] == pytest.approx(6 * 1.3**2 + 1)
    assert ad.hessian(f, 1.3) == pytest.approx(12 * 1.3)


def tuple_reads(q):
    return q[0] * q[1] * q[-1] + q[2] ** 2 + q[0]


def params_in_a_sequence(ps, X):
    W, b = ps[0], ps[1]
    h = np.tanh(X @ W + b)
    return np.sum(h * h) + np.sum(ps[-1] * ps[0][0])


@pytest.mark.parametrize("kind", [tuple, list])
def test_float_entries_of_a_tuple_or_list(kind):
    q = kind([0.7, 1.3, -0.4, 2.0])
    (g,) = ad.gradient(tuple_reads, q)
    assert type(g) is kind
    a, b, c, d = q
    hand = [b * d + 1.0, a * d, 2 * c, a * b]
    np.testing.assert_allclose(g, hand)
    np.testing.assert_allclose(g, _list_fd(lambda v: tuple_reads(kind(v)), list(q)), rtol=1e-6)
    _, ẏ = ad.jvp(tuple_reads, (q,), (kind([0.0, 1.0, 0.0, 0.0]),))
    assert ẏ == pytest.approx(hand[1])


@pytest.mark.parametrize("kind", [tuple, list])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_array_entries_of_a_tuple_or_list_keep_shape_and_dtype(kind, dtype):
    rng = np.random.default_rng(1)
    W, b, v = (rng.normal(size=s).astype(dtype) for s in [(3, 2), (2,), (2,)])
    X = rng.normal(size=(4, 3)).astype(dtype)
    ps = kind([W, b, v])
    (g, gX) = ad.gradient(params_in_a_sequence, ps, X)
    assert type(g) is kind and len(g) == 3
    for e, p in zip(g, ps):
        assert e.shape == p.shape and e.dtype == dtype
    h = np.tanh(X @ W + b)
    dz = 2 * h * (1 - h * h)
    gW = X.T @ dz
    gW[0] += v
    np.testing.assert_allclose(g[0], gW, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(g[1], dz.sum(axis=0), rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(g[2], W[0], rtol=2e-5)
    np.testing.assert_allclose(gX, dz @ W.T, rtol=2e-5, atol=1e-6)


def read_then_updated_in_place(ps):
    w = ps[0]
    s = np.sum(w * w)
    w *= 3.0  # the list's array itself: Python's later reads see the new values
    return s + np.sum(ps[0])


def test_an_array_entry_updated_in_place_after_its_read_is_refused_as_before():
    # The lean read keeps what the general one does: the update is seen through
    # the list too, which the AD refuses by name rather than differentiate wrongly.
    with pytest.raises(
        ad.MutationError, match="'w' is updated in place, but it is also reachable as 'ps'"
    ):
        ad.gradient(read_then_updated_in_place, [np.array([1.0, -2.0])])
