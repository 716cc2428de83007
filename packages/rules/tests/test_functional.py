"""Tests of ``rules.functional``: the functional forms of numpy's in-place functions.

Each case is checked three ways: the result equals numpy's in-place call on a copy
(and the input is unchanged), both rules match finite differences (rulestest) in
float64, float32 and complex128, and hand-derived cotangents where numpy's writes
collide (repeated indices, repeated values, zero factors)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from rules_testing import DTYPES, TOLERANCES, N, maker

import rules
from rules import functional as fn
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

dtype_ids = lambda d: np.dtype(d).name  # noqa: E731

_MASK = np.array(
    [[True, False, True, True], [False, False, True, False], [True, True, False, True]]
)


def _at(ufunc):
    return {"ufunc": ufunc}


#: (id, function, numpy's in-place function, shape of the written array, the other
#: arguments: ("v", shape) for a differentiable array, ("s",) for a Python float,
#: anything else fixed, keywords).
CASES = [
    ("put_along_axis-repeats", fn.put_along_axis, np.put_along_axis, (3, 4),
     (np.array([[0, 3, 0], [1, 1, 1], [2, 0, 3]]), ("v", (3, 3)), 1), {}),
    ("put_along_axis-broadcast-negative-axis", fn.put_along_axis, np.put_along_axis, (3, 4),
     (np.array([[2], [0], [3]]), ("v", (3, 1)), -1), {}),
    ("put_along_axis-axis0-scalar", fn.put_along_axis, np.put_along_axis, (3, 4),
     (np.array([[2, 0, 0, 1]]), ("s",), 0), {}),
    ("put_along_axis-axis-None", fn.put_along_axis, np.put_along_axis, (3, 4),
     (np.array([0, 11, 5, 0]), ("v", (4,)), None), {}),
    ("fill_diagonal-square", fn.fill_diagonal, np.fill_diagonal, (3, 3), (("v", (3,)),), {}),
    ("fill_diagonal-wrap", fn.fill_diagonal, np.fill_diagonal, (7, 3),
     (("v", (2,)),), {"wrap": True}),
    ("fill_diagonal-no-wrap-scalar", fn.fill_diagonal, np.fill_diagonal, (7, 3), (("s",),), {}),
    ("fill_diagonal-cube", fn.fill_diagonal, np.fill_diagonal, (2, 2, 2), (("v", (2,)),), {}),
    ("copyto-where", fn.copyto, np.copyto, (3, 4), (("v", (3, 4)),), {"where": _MASK}),
    ("copyto-broadcast-where", fn.copyto, np.copyto, (3, 4), (("v", (4,)),),
     {"where": _MASK[0]}),
    ("copyto-scalar", fn.copyto, np.copyto, (3, 4), (("s",),), {}),
    ("place-repeats-values", fn.place, np.place, (3, 4), (_MASK, ("v", (3,))), {}),
    ("putmask-repeats-values", fn.putmask, np.putmask, (3, 4), (_MASK, ("v", (5,))), {}),
    ("put-raise", fn.put, np.put, (3, 4), (np.array([0, -1, 5]), ("v", (3,))), {}),
    ("put-repeats", fn.put, np.put, (3, 4), (np.array([2, 7, 2, 2]), ("v", (4,))), {}),
    ("put-wrap", fn.put, np.put, (3, 4), (np.array([0, 13, 25, -2]), ("v", (2,)), "wrap"), {}),
    ("put-clip", fn.put, np.put, (3, 4), (np.array([-5, 3, 40]), ("v", (3,))),
     {"mode": "clip"}),
    ("add.at-repeats", fn.ufunc_at, np.add.at, (5,),
     (np.array([0, 2, 0, 0, 4]), ("v", (5,))), _at(np.add)),
    ("add.at-broadcast-2d", fn.ufunc_at, np.add.at, (3, 4),
     ((np.array([0, 2, 0]), slice(1, 3)), ("v", (2,))), _at(np.add)),
    ("add.at-scalar", fn.ufunc_at, np.add.at, (5,), (np.array([1, 1, 3]), ("s",)), _at(np.add)),
    ("subtract.at-repeats", fn.ufunc_at, np.subtract.at, (3, 4),
     (np.array([2, 0, 2]), ("v", (3, 4))), _at(np.subtract)),
    ("multiply.at-repeats", fn.ufunc_at, np.multiply.at, (5,),
     (np.array([0, 2, 0, 0, 4, 2]), ("v", (6,))), _at(np.multiply)),
    ("multiply.at-broadcast-2d", fn.ufunc_at, np.multiply.at, (3, 4),
     (np.array([1, 1, 0]), ("v", (4,))), _at(np.multiply)),
    ("negative.at-repeats", fn.ufunc_at, np.negative.at, (6,),
     (np.array([0, 0, 3, 5, 5, 5]),), _at(np.negative)),
]  # fmt: skip
IDS = [c[0] for c in CASES]


def _arguments(case, dtype, mark):
    """The written array, the other arguments (differentiable ones random, fixed ones
    marked non-differentiable when ``mark``) and the keywords of ``case``."""
    _, _, _, shape, extra, kw = case
    make = maker(dtype)
    args = []
    for a in extra:
        tag = a[0] if type(a) is tuple and a and type(a[0]) is str else None
        if tag == "v":
            args.append(make(*a[1]))
        elif tag == "s":
            args.append(0.75)
        else:
            args.append(N(a) if mark else a)
    return make(*shape), args, kw


def _numpy_in_place(case, arr, args, kw):
    """What ``arr`` holds after numpy's in-place call (on a copy)."""
    _, f, numpy_f, *_ = case
    out = arr.copy()
    if f is fn.ufunc_at:
        numpy_f(out, *args)
    else:
        numpy_f(out, *args, **kw)
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_equals_numpy_in_place_and_leaves_the_input(case, dtype):
    arr, args, kw = _arguments(case, dtype, mark=False)
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in (arr, *args)]
    got = case[1](arr, *args, **kw)
    want = _numpy_in_place(case, arr, args, kw)
    assert type(got) is np.ndarray and got.dtype == want.dtype and got is not arr
    np.testing.assert_array_equal(got, want)
    for b, a in zip(before, (arr, *args)):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)  # nothing written


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rules_match_finite_differences(case, dtype):
    arr, args, kw = _arguments(case, dtype, mark=True)
    if case[0].startswith("multiply.at"):  # factors away from zero: products of 3 stay O(1)
        args[1] = args[1] * 0.5 + 1.0
    test_rrule(case[1], arr, *args, fkwargs=kw, **TOLERANCES[dtype])
    test_frule(case[1], arr, *args, fkwargs=kw, **TOLERANCES[dtype])


# --- hand-derived cotangents where writes collide ---------------------------------------


def test_repeated_index_gives_the_last_value_written_its_cotangent():
    y, pb = rrule(fn.put, np.zeros(3), [0, 2, 0], np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(y, [3.0, 0.0, 2.0])
    _, da, _, dv = pb(np.array([10.0, 20.0, 30.0]))
    np.testing.assert_array_equal(da, [0.0, 20.0, 0.0])
    np.testing.assert_array_equal(dv, [0.0, 30.0, 10.0])
    _, ẏ = frule((None, np.ones(3), NoTangent(), np.array([1.0, 2.0, 3.0])),
                 fn.put, np.zeros(3), [0, 2, 0], np.array([1.0, 2.0, 3.0]))  # fmt: skip
    np.testing.assert_array_equal(ẏ, [3.0, 1.0, 2.0])


def test_a_repeated_value_gets_the_sum_of_its_entries():
    # place cycles vals over the 3 true entries: vals[0] fills entries 0 and 3
    y, pb = rrule(fn.place, np.zeros(4), np.array([True, False, True, True]), [5.0, 6.0])
    np.testing.assert_array_equal(y, [5.0, 0.0, 6.0, 5.0])
    _, da, dm, dv = pb(np.array([1.0, 2.0, 4.0, 8.0]))
    assert dm is NoTangent() and dv == [9.0, 4.0]  # a list argument gets a list back
    np.testing.assert_array_equal(da, [0.0, 2.0, 0.0, 0.0])


def test_broadcast_values_sum_their_cotangents():
    y, pb = rrule(fn.put_along_axis, np.zeros((2, 3)), np.array([[0, 2], [1, 1]]), 4.0, 1)
    np.testing.assert_array_equal(y, [[4.0, 0.0, 4.0], [0.0, 4.0, 0.0]])
    cts = pb(np.arange(6.0).reshape(2, 3))
    assert cts[3] == 0.0 + 2.0 + 4.0 and type(cts[3]) is float  # entry (1, 1) written twice
    assert cts[2] is NoTangent() and cts[4] is NoTangent()


def test_add_at_accumulates_and_subtract_at_negates():
    a = np.array([1.0, 2.0, 3.0])
    y, pb = rrule(fn.ufunc_at, a, [0, 0, 2], np.array([1.0, 10.0, 100.0]), ufunc=np.add)
    np.testing.assert_array_equal(y, [12.0, 2.0, 103.0])
    _, da, di, db = pb(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(da, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(db, [1.0, 1.0, 3.0])
    _, _, _, db = rrule(fn.ufunc_at, a, [0, 0, 2], 1.0, ufunc=np.subtract)[1](np.ones(3))
    assert db == -3.0 and type(db) is float


def test_multiply_at_with_zero_factors_is_exact():
    # y0 = a0 · b0 · b1 · b2: ∂b0 = a0 b1 b2, ∂b1 = a0 b0 b2 = 0, ∂b2 = a0 b0 b1 = 0
    a, b = np.array([2.0, 7.0]), np.array([3.0, 0.0, 5.0])
    y, pb = rrule(fn.ufunc_at, a, [0, 0, 0], b, ufunc=np.multiply)
    np.testing.assert_array_equal(y, [0.0, 7.0])
    _, da, _, db = pb(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(da, [0.0, 1.0])
    np.testing.assert_array_equal(db, [0.0, 30.0, 0.0])
    _, ẏ = frule((None, np.ones(2), NoTangent(), np.array([1.0, 1.0, 1.0])),
                 fn.ufunc_at, a, [0, 0, 0], b, ufunc=np.multiply)  # fmt: skip
    np.testing.assert_array_equal(ẏ, [30.0, 1.0])  # 0·ȧ0 + 2·(0 + 15 + 0), ȧ1


def test_multiply_at_complex_pullback_is_conjugate():
    a, b = np.array([1.0 + 2.0j]), np.array([2.0 - 1.0j, 0.5j])
    _, pb = rrule(fn.ufunc_at, a, [0, 0], b, ufunc=np.multiply)
    _, da, _, db = pb(np.array([1.0 + 0.0j]))
    np.testing.assert_allclose(da, [np.conj(b[0] * b[1])])
    np.testing.assert_allclose(db, np.conj(a[0] * b[::-1]))


def test_negative_at_twice_is_the_identity():
    y, pb = rrule(fn.ufunc_at, np.arange(3.0), [1, 1, 2], ufunc=np.negative)
    np.testing.assert_array_equal(y, [0.0, 1.0, -2.0])
    np.testing.assert_array_equal(pb(np.ones(3))[1], [1.0, 1.0, -1.0])
    assert len(pb(np.ones(3))) == 3


def test_fill_diagonal_wrap_by_hand():
    # a 5×2 matrix with wrap: numpy writes flat entries 0, 3, 6, 9 (rows 0, 1, 3, 4)
    y, pb = rrule(fn.fill_diagonal, np.zeros((5, 2)), np.array([1.0, 2.0]), True)
    np.testing.assert_array_equal(np.flatnonzero(y), [0, 3, 6, 9])
    _, da, dv, dw = pb(np.arange(10.0).reshape(5, 2))
    np.testing.assert_array_equal(dv, [0.0 + 6.0, 3.0 + 9.0])
    assert dw is NoTangent() and np.all(da.ravel()[[0, 3, 6, 9]] == 0)


def test_copyto_where_by_hand():
    where = np.array([True, False, True])
    _, pb = rrule(fn.copyto, np.zeros(3), np.array([1.0, 2.0, 3.0]), "same_kind", where)
    _, da, dsrc, dc, dw = pb(np.array([1.0, 2.0, 4.0]))
    np.testing.assert_array_equal(da, [0.0, 2.0, 0.0])
    np.testing.assert_array_equal(dsrc, [1.0, 0.0, 4.0])
    assert dc is NoTangent() and dw is NoTangent()


# --- dtypes, projection, zeros -----------------------------------------------------------


def test_cotangents_are_projected_to_each_argument():
    a = np.zeros(4, np.float32)
    _, pb = rrule(fn.put, a, [1, 2], np.array([1.0, 2.0]))  # float64 values into float32
    _, da, _, dv = pb(np.ones(4, np.float32))
    assert da.dtype == np.float32 and dv.dtype == np.float64
    # a real array written with complex values is an error in numpy (copyto's casting)
    with pytest.raises(TypeError):
        fn.copyto(np.zeros(2), np.array([1j, 2j]))
    # complex array, real values: the values get the real part of their cotangent
    _, pb = rrule(fn.putmask, np.zeros(2, complex), np.array([True, False]), np.array([3.0]))
    _, _, _, dv = pb(np.array([1.0 + 5.0j, 2.0]))
    np.testing.assert_array_equal(dv, [1.0])
    assert dv.dtype == np.float64


def test_integer_results_have_no_derivative():
    y, pb = rrule(fn.put, np.zeros(3, int), [0], np.array([2.7]))
    np.testing.assert_array_equal(y, [2, 0, 0])
    assert all(c is NoTangent() for c in pb(np.ones(3)))
    assert frule((None, np.ones(3), NoTangent(), np.ones(1)), fn.put, np.zeros(3, int), [0],
                 np.array([2.7]))[1] is NoTangent()  # fmt: skip
    assert all(
        c is NoTangent()
        for c in rrule(fn.ufunc_at, np.zeros(3, int), [0], 1, ufunc=np.add)[1](np.ones(3))
    )


def test_zero_cotangents_and_tangents():
    _, pb = rrule(fn.put_along_axis, np.zeros((2, 2)), np.array([[0], [1]]), np.ones((2, 1)), 1)
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent(), ZeroTangent(),
                                 NoTangent())  # fmt: skip
    z = ZeroTangent()
    y, ẏ = frule((None, z, NoTangent(), z), fn.put, np.zeros(3), [0], np.ones(1))
    assert ẏ is z
    _, ẏ = frule((None, z, NoTangent(), np.array([2.0])), fn.put, np.zeros(3), [0], np.ones(1))
    np.testing.assert_array_equal(ẏ, [2.0, 0.0, 0.0])
    _, ẏ = frule((None, z, NoTangent(), np.array([2.0])), fn.ufunc_at, np.zeros(3), [1],
                 np.ones(1), ufunc=np.add)  # fmt: skip
    np.testing.assert_array_equal(ẏ, [0.0, 2.0, 0.0])


def test_values_by_keyword_compute_and_get_no_cotangent():
    y, pb = rrule(fn.copyto, np.zeros(2), src=np.array([1.0, 2.0]))
    np.testing.assert_array_equal(y, [1.0, 2.0])
    _, da = pb(np.ones(2))
    np.testing.assert_array_equal(da, [0.0, 0.0])
    np.testing.assert_array_equal(
        fn.ufunc_at(np.zeros(2), [0, 0], b=np.array([1.0, 2.0]), ufunc=np.add), [3.0, 0.0]
    )


# --- numpy's errors, and ours --------------------------------------------------------------


def test_numpy_errors_are_numpy_s():
    with pytest.raises(IndexError):
        fn.put(np.zeros(3), [5], [1.0])
    with pytest.raises(ValueError):
        fn.fill_diagonal(np.zeros(3), 1.0)  # numpy: at least 2-d
    with pytest.raises(TypeError):
        fn.copyto(np.zeros(2, int), np.array([1.5, 2.5]))  # same_kind casting
    np.testing.assert_array_equal(
        fn.copyto(np.zeros(2, int), np.array([1.5, 2.5]), casting="unsafe"), [1, 2]
    )
    with pytest.raises(ValueError):
        fn.ufunc_at(np.zeros(2), [0], ufunc=np.add)  # numpy: add needs a second operand


def test_ufunc_at_refuses_a_non_ufunc_and_rules_refuse_other_ufuncs():
    with pytest.raises(TypeError, match=r"(?s)ufunc_at: ufunc=.* is not a numpy ufunc.*To fix"):
        fn.ufunc_at(np.zeros(2), [0], 1.0, ufunc=np.sum)
    np.testing.assert_array_equal(
        fn.ufunc_at(np.zeros(2), [0, 0], np.array([3.0, 1.0]), ufunc=np.maximum), [3.0, 0.0]
    )
    with pytest.raises(TypeError, match=r"(?s)no derivative rule for ufunc=.*maximum.*To fix"):
        rrule(fn.ufunc_at, np.zeros(2), [0], 1.0, ufunc=np.maximum)
    with pytest.raises(TypeError, match="np.add, np.subtract, np.multiply and np.negative"):
        frule((None, np.ones(2), NoTangent(), 1.0), fn.ufunc_at, np.zeros(2), [0], 1.0,
              ufunc=np.minimum)  # fmt: skip


# --- functional_form ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "numpy_f, form",
    [
        (np.put_along_axis, fn.put_along_axis),
        (np.fill_diagonal, fn.fill_diagonal),
        (np.copyto, fn.copyto),
        (np.place, fn.place),
        (np.putmask, fn.putmask),
        (np.put, fn.put),
    ],
)
def test_functional_form_of_the_in_place_functions(numpy_f, form):
    assert fn.functional_form(numpy_f) is form


@pytest.mark.parametrize("ufunc", fn.AT_UFUNCS, ids=lambda u: u.__name__)
def test_functional_form_of_ufunc_at_is_one_partial_per_ufunc(ufunc):
    form = fn.functional_form(ufunc.at)
    assert type(form) is functools.partial and form.func is fn.ufunc_at
    assert form.keywords == {"ufunc": ufunc} and fn.functional_form(ufunc.at) is form
    a = np.arange(1.0, 4.0)
    extra = () if ufunc is np.negative else (np.array([2.0, 3.0]),)
    want = a.copy()
    ufunc.at(want, [0, 0], *extra)
    np.testing.assert_array_equal(form(a, [0, 0], *extra), want)


def test_functional_form_is_none_for_anything_else():
    for f in (np.maximum.at, np.minimum.at, np.add.reduce, np.sum, np.zeros(2).fill, [1], None):
        assert fn.functional_form(f) is None


def test_listed_in_the_inventory_with_both_rules():
    listed = {e.name: e for e in rules.inventory() if e.module == "rules.functional"}
    assert sorted(listed) == sorted(
        ["copyto", "fill_diagonal", "place", "put", "put_along_axis", "putmask", "ufunc_at"]
    )
    assert all(e.has_rrule and e.has_frule for e in listed.values())


def test_the_ufunc_at_forms_have_the_rules_of_ufunc_at():
    # an AD dispatches the partial it gets from functional_form like any function
    form = fn.functional_form(np.multiply.at)
    a, b = np.array([2.0, 7.0]), np.array([3.0, 0.0, 5.0])
    y, pb = rrule(form, a, [0, 0, 0], b)
    np.testing.assert_array_equal(y, [0.0, 7.0])
    np.testing.assert_array_equal(pb(np.ones(2))[3], [0.0, 30.0, 0.0])
    _, ẏ = frule((None, np.ones(2), NoTangent(), np.ones(3)), form, a, [0, 0, 0], b)
    np.testing.assert_array_equal(ẏ, [30.0, 1.0])
    test_rrule(fn.functional_form(np.subtract.at), np.ones(3), N([0, 0]), np.array([1.0, 2.0]))
    test_frule(fn.functional_form(np.negative.at), np.arange(3.0), N([1, 1, 2]))
