"""Tests for the numpy indexing rules (``_numpy_indexing``): ``x[key]`` on arrays,
take, take_along_axis, sort, triu/tril, diag, diagonal and trace.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from rules_testing import DTYPES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk
from rulestest import test_frule, test_rrule

_MASK = np.array([[True, False, True, False], [False, False, True, True], [True] * 4])

KEYS = [
    ("int", 1),
    ("negative-int", -1),
    ("int-pair", (1, 2)),
    ("slice", slice(1, None)),
    ("strided-slice", (slice(None, None, -2), slice(1, 3))),
    ("ellipsis", (Ellipsis, 1)),
    ("newaxis", (None, 0)),
    ("newaxis-middle", (slice(None), None, 1)),
    ("int-array", np.array([0, 2])),
    ("repeated-int-array", np.array([0, 0, 2])),
    ("repeated-list", [2, 2, 2, 0]),
    ("paired-arrays-repeated", (np.array([0, 0]), np.array([1, 1]))),
    ("array-and-slice", (np.array([1, 1]), slice(None))),
    ("slice-and-list", (slice(None), [3, 3, 0])),
    ("2d-index-array", (np.array([[0, 1], [1, 1]]),)),
    ("negative-indices", (np.array([-1, -1]), -2)),
    ("boolean-mask", _MASK),
    ("boolean-rows", (np.array([True, False, True]), 1)),
    ("boolean-rows-and-cols", (np.array([True, False, True]), slice(1, 3))),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("key", [k for _, k in KEYS], ids=[n for n, _ in KEYS])
def test_getitem(key, dtype):
    check(operator.getitem, (maker(dtype)(3, 4), N(key)), {}, dtype)


@pytest.mark.parametrize(
    "key",
    [(0, [1, 1], slice(None)), (Ellipsis, [1, 1]), (slice(None), 0, np.array([[3], [3]]))],
    ids=["int-list-slice", "ellipsis-list", "broadcast-index"],
)
def test_getitem_3d(key):
    check(operator.getitem, (maker(np.float64)(2, 3, 4), N(key)), {}, np.float64)


def test_getitem_0d():
    check(operator.getitem, (np.array(2.0), N(())), {}, np.float64)
    check(operator.getitem, (np.array(2.0), N(Ellipsis)), {}, np.float64)


def test_repeated_advanced_indices_accumulate():
    _, pullback = rrule(operator.getitem, np.zeros(4), np.array([1, 1, 3, 1]))
    np.testing.assert_array_equal(pullback(np.array([1.0, 2.0, 3.0, 4.0]))[1], [0, 7, 0, 3])
    _, pullback = rrule(operator.getitem, np.zeros((2, 2)), ([0, 0], [1, 1]))
    np.testing.assert_array_equal(pullback(np.ones(2))[1], [[0, 2], [0, 0]])


def test_boolean_mask_scatters_back():
    x = np.arange(4.0)
    _, pullback = rrule(operator.getitem, x, x > 1)
    np.testing.assert_array_equal(pullback(np.array([5.0, 6.0]))[1], [0, 0, 5, 6])


def test_getitem_int_array_gets_float_cotangent_and_key_notangent():
    _, pullback = rrule(operator.getitem, np.arange(3), 1)
    cots = pullback(1.0)
    assert cots[2] is NoTangent() and unthunk(cots[1]).dtype == np.float64
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent())


def test_getitem_real_array_complex_cotangent_is_real():
    _, pullback = rrule(operator.getitem, np.ones(3), [0, 0])
    dx = unthunk(pullback(np.array([1 + 1j, 2 + 2j]))[1])
    assert dx.dtype == np.float64 and dx[0] == 3.0


def test_getitem_zero_tangent():
    assert frule((NoTangent(), ZeroTangent(), NoTangent()), operator.getitem, np.ones(3), 0)[1] == (
        ZeroTangent()
    )


CASES = [
    ("take-flat", np.take, lambda m: (m(3, 4), N([0, 0, 5])), {}),
    ("take-axis", np.take, lambda m: (m(3, 4), N([[0, 3], [3, 3]])), {"axis": 1}),
    ("take-negative-axis", np.take, lambda m: (m(2, 3, 4), N(np.array([1, 1, 0]))), {"axis": -2}),
    ("take-scalar-index", np.take, lambda m: (m(3, 4), N(2)), {"axis": -1}),
    ("take-wrap", np.take, lambda m: (m(5), N([7, -1])), {"mode": "wrap"}),
    ("take-clip", np.take, lambda m: (m(5), N([7, -1])), {"mode": "clip"}),
    (
        "take_along_axis",
        np.take_along_axis,
        lambda m: (m(3, 4), N(np.array([[0, 0], [1, 3], [2, 2]])), N(1)),
        {},
    ),
    (
        "take_along_axis-broadcast",
        np.take_along_axis,
        lambda m: (m(3, 4), N(np.array([[0, 0, 2, 2]]))),
        {"axis": 0},
    ),
    (
        "take_along_axis-flat",
        np.take_along_axis,
        lambda m: (m(5), N(np.array([0, 0, 4]))),
        {"axis": None},
    ),
    ("sort", np.sort, lambda m: (m(5),), {}),
    ("sort-axis0", np.sort, lambda m: (m(3, 4), N(0)), {}),
    ("sort-flat", np.sort, lambda m: (m(2, 3),), {"axis": None}),
    ("triu", np.triu, lambda m: (m(3, 4),), {}),
    ("triu-k", np.triu, lambda m: (m(3, 4), N(1)), {}),
    ("triu-stack", np.triu, lambda m: (m(2, 3, 3), N(-1)), {}),
    ("triu-vector", np.triu, lambda m: (m(3),), {}),
    ("tril", np.tril, lambda m: (m(3, 4),), {}),
    ("tril-k", np.tril, lambda m: (m(4, 3),), {"k": -1}),
    ("diag-vector-to-matrix", np.diag, lambda m: (m(3),), {}),
    ("diag-vector-k", np.diag, lambda m: (m(3), N(2)), {}),
    ("diag-matrix-to-vector", np.diag, lambda m: (m(3, 4),), {}),
    ("diag-matrix-negative-k", np.diag, lambda m: (m(3, 4), N(-1)), {}),
    ("diag-matrix-k-kw", np.diag, lambda m: (m(3, 4),), {"k": 2}),
    ("diagonal", np.diagonal, lambda m: (m(3, 4),), {}),
    ("diagonal-axes", np.diagonal, lambda m: (m(2, 3, 4), N(1), N(0), N(2)), {}),
    (
        "diagonal-negative-axes",
        np.diagonal,
        lambda m: (m(2, 3, 4),),
        {"offset": -1, "axis1": -1, "axis2": -2},
    ),
    ("trace", np.trace, lambda m: (m(3, 3),), {}),
    ("trace-offset", np.trace, lambda m: (m(2, 3, 4), N(1)), {}),
    ("trace-axes", np.trace, lambda m: (m(2, 3, 3),), {"axis1": 1, "axis2": 2}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "f", "make", "kw"), CASES, ids=[c[0] for c in CASES])
def test_indexing_rule(name, f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


def test_take_repeated_indices_accumulate():
    _, pullback = rrule(np.take, np.zeros((2, 3)), [2, 2], axis=1)
    np.testing.assert_array_equal(pullback(np.ones((2, 2)))[1], [[0, 0, 2], [0, 0, 2]])


def test_sort_ties_each_get_their_own_cotangent():
    y, pullback = rrule(np.sort, np.array([1.0, 3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(y, [1, 1, 2, 3])
    # Stable: the first 1.0 gets the first output's cotangent.
    np.testing.assert_array_equal(pullback(np.array([10.0, 20.0, 30.0, 40.0]))[1], [10, 40, 20, 30])


def test_sort_of_a_list():
    test_rrule(np.sort, [3.0, 1.0, 2.0])
    test_frule(np.sort, [3.0, 1.0, 2.0])
