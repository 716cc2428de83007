"""Library calls whose result is built of their inputs' objects (issue 18).

``d.copy()``, ``copy.copy``, ``copy.deepcopy``, ``dataclasses.replace`` and an
int passed through library code (``copy.copy(2)``): reverse mode, forward mode
and second order, against central finite differences and hand-derived values.
"""

from __future__ import annotations

import collections
import copy
import dataclasses

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian

import ad


@dataclasses.dataclass
class Pair:
    w: object
    b: object


class Plain:
    def __init__(self, w: object, b: object) -> None:
        self.w = w
        self.b = b


def dict_method(x):
    d = {"a": x, "b": 2.0 * x}
    d = d.copy()
    d["a"] = d["a"] * d["b"]
    return np.sum(d["a"] + d["b"])


def dict_unpacked(x):
    d = {"a": x, "b": 2.0 * x}
    d = {**d}
    d["a"] = d["a"] * d["b"]
    return np.sum(d["a"] + d["b"])


def dict_copy_copy(x):
    d = {"a": x, "b": np.sin(x)}
    d = copy.copy(d)
    d["b"] = d["b"] * d["a"]
    return np.sum(d["b"] * d["a"])


def list_method(x):
    xs = [x, x * x]
    ys = xs.copy()
    ys[0] = ys[0] * ys[1]
    return np.sum(ys[0] + xs[0])


def list_deepcopy(x):
    xs = [x * 1.5, {"k": x * x}]
    ys = copy.deepcopy(xs)
    ys[0] = ys[0] * 2.0
    ys[1] = {"k": ys[1]["k"] * ys[0]}
    return np.sum(ys[1]["k"]) + np.sum(xs[0])


def dataclass_deepcopy(x):
    p = Pair(x * 2.0, np.cos(x))
    q = copy.deepcopy(p)
    q.w = q.w * q.b
    return np.sum(q.w + p.b)


def plain_copy(x):
    p = Plain(x, x * x)
    q = copy.copy(p)
    q.b = q.b * 3.0
    return np.sum(q.w * q.b)


def plain_deepcopy(x):
    p = Plain(x, x * x)
    q = copy.deepcopy(p)
    q.w = q.w * q.b
    return np.sum(q.w)


def dataclass_replace(x):
    p = Pair(x, x * x)
    q = dataclasses.replace(p, b=p.b * 3.0)
    return np.sum(q.w * q.b)


PROGRAMS = [
    dict_method,
    dict_unpacked,
    dict_copy_copy,
    list_method,
    list_deepcopy,
    dataclass_deepcopy,
    plain_copy,
    plain_deepcopy,
    dataclass_replace,
]
POINTS = [0.7, np.array([0.3, -1.2, 0.9])]


@pytest.mark.parametrize("x", POINTS, ids=["float", "array"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_copies_reverse_forward_and_second_order(f, x):
    expected = fd_gradient(f, x)[0]
    (g,) = ad.gradient(f, x)
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)
    v = np.ones_like(x) * 0.5 if isinstance(x, np.ndarray) else 0.5
    _, ẏ = ad.jvp(f, (x,), (v,))
    np.testing.assert_allclose(ẏ, np.sum(expected * v), rtol=1e-6, atol=1e-8)
    H = ad.hessian(f, x)
    np.testing.assert_allclose(np.reshape(H, -1), fd_hessian(f, x).reshape(-1), atol=1e-5)


def rebound_dict(d):
    d = d.copy()
    d["a"] = d["a"] * 2.0
    return np.sum(d["a"] * d["b"])


@pytest.mark.parametrize(
    "d",
    [{"a": 1.5, "b": 2.0}, {"a": np.array([1.0, 2.0]), "b": np.array([0.5, -1.0])}],
    ids=["float", "array"],
)
def test_dict_argument_copied_then_written(d):
    before = copy.deepcopy(d)
    (g,) = ad.gradient(rebound_dict, d)
    np.testing.assert_allclose(g["a"], 2.0 * np.asarray(d["b"]))  # by hand
    np.testing.assert_allclose(g["b"], 2.0 * np.asarray(d["a"]))
    _, ẏ = ad.jvp(rebound_dict, (d,), ({"a": np.ones_like(d["a"]), "b": 0 * d["b"]},))
    np.testing.assert_allclose(ẏ, np.sum(2.0 * np.asarray(d["b"])))
    for k in d:  # the caller's dict is left as it was
        np.testing.assert_array_equal(d[k], before[k])


def test_deepcopy_of_a_dataclass_argument_holding_an_array():
    def f(p):
        q = copy.deepcopy(p)
        q.w = q.w * 3.0
        q.b = q.b * 2.0
        return np.sum(q.w * q.b)

    p = Pair(np.array([1.0, 2.0]), 1.5)
    (g,) = ad.gradient(f, p)
    np.testing.assert_allclose(g.w, [9.0, 9.0])  # 6 b
    assert g.b == pytest.approx(18.0)  # 6 sum(w)
    assert ad.jvp(f, (p,), (g,))[1] == pytest.approx(9.0 * 9.0 * 2 + 18.0**2)
    np.testing.assert_array_equal(p.w, [1.0, 2.0])


def test_replace_keyword_carries_its_derivative():
    def f(p, v):
        return np.sum(dataclasses.replace(p, b=v).b * p.w)

    p = Pair(2.0, 5.0)
    (gp, gv) = ad.gradient(f, p, 3.0)
    assert gv == pytest.approx(2.0) and gp.w == pytest.approx(3.0)
    assert not gp.b  # replaced: no derivative reaches the old field
    assert ad.jvp(f, (p, 3.0), (Pair(0.0, 1.0), 1.0))[1] == pytest.approx(2.0)


# --- an int passed through library code: a real number (ProjectTo) ----------------


def copied_int(x):
    return copy.copy(x) * 3.0


def int_in_list(x):
    ys = copy.copy([x, 1.0])
    return ys[0] * ys[1] * 3.0


def int_deepcopied(x):
    return copy.deepcopy(x) * 3.0


@pytest.mark.parametrize("f", [copied_int, int_in_list, int_deepcopied])
def test_int_argument_through_library_code(f):
    for x in (2, 2.0):
        assert ad.gradient(f, x) == (pytest.approx(3.0),)
        assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(3.0)
    assert ad.hessian(lambda x: f(x) * x, 2.0) == pytest.approx(6.0)


def test_int_result_not_an_argument_stays_derivative_free():
    def f(x):
        return x * float(len(copy.copy([1, 2, 3])))

    assert ad.gradient(f, 2) == (pytest.approx(3.0),)
    assert ad.jvp(f, (2.0,), (1.0,))[1] == pytest.approx(3.0)


# --- withgradient: a namedtuple's or dataclass's first field is the loss --------------

Out = collections.namedtuple("Out", "loss aux")


@dataclasses.dataclass
class Result:
    loss: object
    aux: object


@pytest.mark.parametrize("kind", [Out, Result])
@pytest.mark.parametrize("x", POINTS, ids=["float", "array"])
def test_withgradient_of_a_record(kind, x):
    def f(x):
        return kind(np.sum(np.sin(x) * x), x * 2.0)

    val, (g,) = ad.withgradient(f, x)
    assert type(val) is kind
    np.testing.assert_allclose(val.aux, x * 2.0)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x))
    with pytest.raises(ad.NonScalarOutputError, match="withgradient"):
        ad.gradient(f, x)


# --- a fresh local array written in an except block --------------------------------


def except_buffer(x):
    try:
        y = np.sum(x) / 0.0 if np.sum(x) > 100 else 1 // 0
    except ZeroDivisionError:
        buf = np.zeros(3)
        buf[0] = np.sum(x)
        buf[2] = np.sum(x * x)
        y = np.sum(buf * buf)
    return y


@pytest.mark.parametrize("x", POINTS, ids=["float", "array"])
def test_fresh_array_written_in_except(x):
    expected = fd_gradient(except_buffer, x)[0]
    np.testing.assert_allclose(ad.gradient(except_buffer, x)[0], expected, rtol=1e-6, atol=1e-8)
    v = np.linspace(0.5, 1.0, np.size(x)).reshape(np.shape(x))
    ẏ = ad.jvp(except_buffer, (x,), (v,))[1]
    np.testing.assert_allclose(ẏ, np.sum(expected * v), rtol=1e-6, atol=1e-8)
    H = ad.hessian(except_buffer, x)
    np.testing.assert_allclose(
        np.reshape(H, -1), fd_hessian(except_buffer, x).reshape(-1), atol=1e-5
    )
