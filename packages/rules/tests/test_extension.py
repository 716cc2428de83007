"""``rules.extension``, the public API for ADs and rule packages built on ``rules``:
values, shapes and dtypes of each helper, the getitem rules through rulestest, and
``is_standard_rule``. (That no module imports another in a cycle is checked by
import-linter, ``tox -e lint``.)"""

from __future__ import annotations

import ast
import doctest
import math
import operator
import pathlib
import weakref
from collections import namedtuple
from typing import Any

import numpy as np
import pytest

import rules
from rules import extension as ext
from rulescore import (
    CotangentError,
    InplaceableThunk,
    NoTangent,
    NotImplementedTangent,
    Rule,
    Tangent,
    Thunk,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    scalar_rule,
    unthunk,
)
from rulestest import primal_and_tangent, test_frule, test_rrule

F64 = {"rtol": 1e-7, "atol": 1e-9}

#: public name -> (private module, private name) it replaces, for ad's imports.
PRIVATE = {
    "getrefcount": ("_util", "getrefcount"),
    "REFCOUNTS_CALIBRATED": ("_util", "REFCOUNTS_CALIBRATED"),
    "unbroadcast": ("_util", "unbroadcast"),
    "is_zero": ("_util", "is_zero"),
    "dense": ("_numpy_linear", "dense"),
    "product": ("_numpy_products", "product"),
    "matmul_fast_case": ("_numpy_products", "matmul_fast_case"),
    "matmul_fast_cotangents": ("_numpy_products", "matmul_fast_cotangents"),
    "whole_array_pullback": ("_numpy_reductions", "_full_pullback"),
    "HOLOMORPHIC": ("_numpy_elementwise", "HOLOMORPHIC"),
    "OUTPUT_ONLY": ("_numpy_elementwise", "OUTPUT_ONLY"),
    "times_reusing": ("_numpy_elementwise", "_times"),
    "PrimalLike": ("_numpy_elementwise", "_Like"),
    "project_like": ("_numpy_elementwise", "_project_like"),
    "seq_entries": ("_sequences", "seq_entries"),
    "seq_cotangent": ("_sequences", "seq_cotangent"),
    "entry_cotangent": ("_sequences", "entry_cotangent"),
    "sequence_getitem_rrule": ("_sequences", "sequence_getitem_rrule"),
    "sequence_getitem_frule": ("_sequences", "sequence_getitem_frule"),
    "dict_getitem_rrule": ("_sequences", "dict_getitem_rrule"),
    "dict_getitem_frule": ("_sequences", "dict_getitem_frule"),
    "item_tangents": ("_sequences", "item_tangents"),
    "items_cotangent": ("_sequences", "items_cotangent"),
    "yields_no_tangents": ("_sequences", "yields_no_tangents"),
}


def test_public_and_documented() -> None:
    assert "extension" in rules.__all__ and rules.extension is ext
    assert sorted(ext.__all__) == sorted([*PRIVATE, "is_standard_rule"])
    for name in ext.__all__:
        obj = getattr(ext, name)
        if callable(obj) and obj is not ext.getrefcount:
            assert obj.__doc__ and ">>>" in obj.__doc__, name


@pytest.mark.parametrize("name", sorted(PRIVATE))
def test_each_public_name_is_the_object_the_rules_use(name: str) -> None:
    module, private = PRIVATE[name]
    assert getattr(ext, name) is getattr(getattr(rules, module), private)


def _attribute_docstrings() -> dict[str, str]:
    """The docstrings written after the module-level assignments of extension.py."""
    tree = ast.parse(pathlib.Path(ext.__file__).read_text(encoding="utf-8"))
    out = {}
    for a, b in zip(tree.body, tree.body[1:]):
        target = getattr(a, "target", None) or (getattr(a, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and isinstance(b, ast.Expr):
            if isinstance(b.value, ast.Constant) and isinstance(b.value.value, str):
                out[target.id] = b.value.value
    return out


def test_the_attribute_docstrings_examples_run() -> None:
    docs = _attribute_docstrings()
    assert set(docs) == {"REFCOUNTS_CALIBRATED", "getrefcount", "HOLOMORPHIC", "OUTPUT_ONLY"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for name, text in docs.items():
        test = doctest.DocTestParser().get_doctest(text, {}, name, ext.__file__, 0)
        assert test.examples, name
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


# broadcasting and zeros


@pytest.mark.parametrize(
    ("x", "dx", "expected"),
    [
        (np.ones(3), np.ones((2, 3)), np.full(3, 2.0)),
        (np.ones((2, 1)), np.ones((2, 3)), np.full((2, 1), 3.0)),
        (np.ones(3, np.float32), np.ones((4, 3)), np.full(3, 4.0, np.float32)),
        (2.0, np.ones((2, 2)), 4.0),
        (np.ones(2), 1.5, np.full(2, 1.5)),
        (np.ones(2), np.array([1.0 + 2.0j, 3.0]), np.array([1.0, 3.0])),
        (np.ones((2, 2), np.complex128), np.ones(2), np.full((2, 2), 1.0 + 0j)),
    ],
)
def test_unbroadcast_values_shapes_dtypes(x: Any, dx: Any, expected: Any) -> None:
    out = ext.unbroadcast(x, dx)
    assert type(out) is type(expected)
    assert np.shape(out) == np.shape(expected)
    if isinstance(expected, np.ndarray):
        assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)


def test_unbroadcast_passes_zeros_and_evaluates_thunks() -> None:
    assert ext.unbroadcast(np.ones(2), ZeroTangent()) == ZeroTangent()
    out = ext.unbroadcast(np.ones(2), Thunk(lambda: np.ones((3, 2))))
    np.testing.assert_array_equal(out, [3.0, 3.0])


def test_is_zero() -> None:
    assert ext.is_zero(ZeroTangent()) and ext.is_zero(NoTangent())
    assert not any(ext.is_zero(v) for v in (0.0, 0, np.zeros(2), None, Thunk(ZeroTangent)))


def test_dense() -> None:
    out = ext.dense([1.0, ZeroTangent(), 2], [1.0, 2.0, 3.0])
    assert out.dtype == np.float64 and out.tolist() == [1.0, 0.0, 2.0]
    nested = ext.dense(Tangent[list](Tangent[list](1.0, 2.0), ZeroTangent()), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(nested, [[1.0, 2.0], [0.0, 0.0]])
    z = ext.dense(ZeroTangent(), np.arange(3))  # an int array's tangent is float
    assert z.dtype == np.float64 and z.shape == (3,) and not z.any()
    z = ext.dense(ZeroTangent(), np.ones((2, 2), np.float32))
    assert z.dtype == np.float32 and z.shape == (2, 2)
    rows = ext.dense(Tangent[tuple](np.ones(2), ZeroTangent()), (np.ones(2), np.ones(2)))
    np.testing.assert_array_equal(rows, [[1.0, 1.0], [0.0, 0.0]])
    np.testing.assert_array_equal(ext.dense(Thunk(lambda: [1.0, 2.0]), [0.0, 0.0]), [1.0, 2.0])


# reference counts


def test_getrefcount_tells_a_temporary_from_a_held_array() -> None:
    def count(a: Any) -> int:
        return ext.getrefcount(a)

    held = np.zeros(3)
    n_held = count(held)
    n_temporary = count(np.zeros(3))  # not inside assert: pytest would keep the value
    assert n_held > 2
    assert n_temporary == (2 if ext.REFCOUNTS_CALIBRATED else 1 << 30)


# products and reductions


@pytest.mark.parametrize("shapes", [((3, 4), (4, 2)), ((3, 4), (4,)), ((4,), (4, 2)), ((4,), (4,))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_product_and_matmul_fast_cotangents(shapes: tuple, dtype: Any) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = rng.standard_normal(shapes[1]).astype(dtype)
    y = ext.product(a, b)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, a @ b)  # the same BLAS call: the same bits
    assert ext.matmul_fast_case(a, b)
    ȳ = rng.standard_normal(np.shape(y)).astype(dtype)
    # a @ b is linear in each operand: entry k of ā is <ȳ, eₖ @ b>, exactly
    ā_ref = np.array([np.sum(ȳ * (e.reshape(a.shape) @ b)) for e in np.eye(a.size)])
    b̄_ref = np.array([np.sum(ȳ * (a @ e.reshape(b.shape))) for e in np.eye(b.size)])
    ā_ref, b̄_ref = ā_ref.reshape(a.shape), b̄_ref.reshape(b.shape)
    for eager in (False, True):
        no, ā, b̄ = ext.matmul_fast_cotangents(a, b, ȳ, eager=eager)
        assert no == NoTangent()
        assert isinstance(ā, Thunk) != eager and isinstance(b̄, Thunk) != eager
        ā, b̄ = unthunk(ā), unthunk(b̄)
        assert (ā.shape, b̄.shape, ā.dtype, b̄.dtype) == (a.shape, b.shape, dtype, dtype)
        tol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(ā, ā_ref, rtol=tol, atol=tol)
        np.testing.assert_allclose(b̄, b̄_ref, rtol=tol, atol=tol)
    no, ā, b̄ = ext.matmul_fast_cotangents(a, b, ȳ + 1j, eager=True)  # imaginary part dropped
    assert ā.dtype == dtype
    np.testing.assert_allclose(ā, ā_ref, rtol=1e-5, atol=1e-5)
    assert ext.matmul_fast_cotangents(a, b, ZeroTangent())[1:] == (ZeroTangent(), ZeroTangent())


def test_matmul_fast_case_refuses_what_it_does_not_cover() -> None:
    assert not ext.matmul_fast_case(np.ones((2, 2)), np.ones((2, 2), np.float32))
    assert not ext.matmul_fast_case(np.ones((2, 2, 2)), np.ones((2, 2)))
    assert not ext.matmul_fast_case(np.ones(2, complex), np.ones(2, complex))
    assert not ext.matmul_fast_case([1.0, 2.0], np.ones(2))


@pytest.mark.parametrize(("f", "scale"), [(np.sum, lambda n: 1.0), (np.mean, lambda n: 1.0 / n)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_whole_array_pullback_is_the_rules_pullback(f: Any, scale: Any, dtype: Any) -> None:
    x = (np.arange(6.0).reshape(2, 3) + 1).astype(dtype)
    pb = ext.whole_array_pullback(x, scale(x.size), f.__name__)
    assert pb.__name__ == f"{f.__name__}_pullback"
    no, x̄ = pb(2.0)
    assert no == NoTangent() and x̄.shape == x.shape and x̄.dtype == dtype
    np.testing.assert_allclose(x̄, np.full(x.shape, 2.0 * scale(x.size)))
    _, pb_rule = rrule(f, x)  # the rule's own pullback gives the same
    np.testing.assert_array_equal(unthunk(pb_rule(2.0)[1]), x̄)
    if dtype == np.float64:
        test_rrule(f, x, **F64)
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent())
    with pytest.raises(CotangentError, match=f"np.{f.__name__}"):
        pb(np.ones(2))


def test_whole_array_pullback_reads_only_shape_and_dtype() -> None:
    class ShapeOnly:
        shape, dtype = (2, 2), np.dtype(np.float64)

    _, x̄ = ext.whole_array_pullback(ShapeOnly(), 0.5, "mean")(1.0 + 3.0j)  # real: re part
    np.testing.assert_array_equal(x̄, np.full((2, 2), 0.5))


# elementwise


def _domain(f: Any) -> np.ndarray:
    if f in (np.arccosh,):
        return np.array([1.5, 2.0, 3.0])
    if f in (np.arcsin, np.arccos, np.arctanh):
        return np.array([-0.5, 0.1, 0.6])
    if f in (np.log, np.log2, np.log10, np.sqrt, np.log1p, np.reciprocal, np.cbrt):
        return np.array([0.5, 1.3, 2.0])
    return np.array([-0.7, 0.2, 1.1])


@pytest.mark.parametrize("f", list(ext.HOLOMORPHIC), ids=lambda f: f.__name__)
def test_holomorphic_derivatives_match_central_differences(f: Any) -> None:
    x = _domain(f)
    Ω = f(x)
    d = ext.HOLOMORPHIC[f](None if f in ext.OUTPUT_ONLY else x, Ω)
    h = 1e-6
    fd = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(np.broadcast_to(d, x.shape), fd, rtol=1e-6, atol=1e-8)
    # the rule's pullback multiplies by it (conjugated: it is real here)
    _, pb = rrule(f, x)
    np.testing.assert_allclose(unthunk(pb(np.ones(3))[1]), np.broadcast_to(d, x.shape))


def test_output_only_is_a_subset_whose_derivatives_ignore_x() -> None:
    assert ext.OUTPUT_ONLY <= ext.HOLOMORPHIC.keys()
    assert {np.exp, np.tanh, np.sqrt} <= ext.OUTPUT_ONLY and np.sin not in ext.OUTPUT_ONLY
    for f in ext.OUTPUT_ONLY:
        x = _domain(f)
        np.testing.assert_array_equal(
            np.broadcast_to(ext.HOLOMORPHIC[f](None, f(x)), x.shape),
            np.broadcast_to(ext.HOLOMORPHIC[f](x, f(x)), x.shape),
        )


def test_times_reusing_writes_only_into_a_temporary() -> None:
    ȳ = np.array([1.0, 2.0, 3.0])
    refs: list[Any] = []

    def fresh() -> np.ndarray:
        a = np.full(3, 2.0)
        refs.append(weakref.ref(a))
        return a

    out = ext.times_reusing(ȳ, fresh())
    np.testing.assert_array_equal(out, [2.0, 4.0, 6.0])
    assert (refs[0]() is out) == ext.REFCOUNTS_CALIBRATED
    p = np.full(3, 2.0)
    out = ext.times_reusing(ȳ, p)
    assert out is not p and (p == 2.0).all()
    out = ext.times_reusing(ȳ.astype(np.float32), np.full(3, 2.0))  # dtypes differ: new
    assert out.dtype == np.float64
    assert ext.times_reusing(2.0, 3.0) == 6.0


def test_primal_like_and_project_like() -> None:
    x = np.ones((2, 3), np.float32)
    like = ext.PrimalLike(x)
    assert (like.shape, like.dtype) == (x.shape, x.dtype)
    same = np.zeros((2, 3), np.float32)
    assert ext.project_like(like, same) is same
    out = ext.project_like(like, np.ones((2, 3)))
    assert out.dtype == np.float32 and out.shape == (2, 3)
    with pytest.raises(CotangentError):
        ext.project_like(like, np.ones(3))
    assert ext.project_like(2.0, 1.0 + 2.0j) == 1.0


# tuples, lists and dicts


def test_seq_entries() -> None:
    assert ext.seq_entries(ZeroTangent(), 3) == [ZeroTangent()] * 3
    assert ext.seq_entries(Tangent[list](1.0, 2.0), 2) == [1.0, 2.0]
    assert ext.seq_entries((1.0, 2.0), 2) == [1.0, 2.0]
    missing = NotImplementedTangent("why")
    assert ext.seq_entries(missing, 2) == [missing, missing]
    with pytest.raises(ValueError, match="3 entries has 2"):
        ext.seq_entries((1.0, 2.0), 3)


def test_seq_cotangent() -> None:
    Point = namedtuple("Point", "x y")
    t = ext.seq_cotangent(Point(1.0, 2.0), [3.0, ZeroTangent()])
    assert t == Tangent[Point](x=3.0) and t.x == 3.0
    assert ext.seq_cotangent([1.0, 2.0], [ZeroTangent(), 2.0]) == Tangent[list](ZeroTangent(), 2.0)
    a = ext.seq_cotangent(np.zeros(3, np.float32), [ZeroTangent(), 1.5, ZeroTangent()])
    assert a.dtype == np.float32 and a.tolist() == [0.0, 1.5, 0.0]
    assert ext.seq_cotangent(np.zeros(2), [ZeroTangent(), ZeroTangent()]) == ZeroTangent()
    assert ext.seq_cotangent((1, 2.0), [5.0, 1.0]) == Tangent[tuple](5.0, 1.0)  # int -> float


def test_entry_cotangent_adds_in_place_to_an_accumulator() -> None:
    t = ext.entry_cotangent(3, 2, 4.0)
    assert isinstance(t, InplaceableThunk)
    assert unthunk(t) == Tangent[list](ZeroTangent(), ZeroTangent(), 4.0)
    acc = Tangent[list]._from_backing([1.0, ZeroTangent(), 1.0])
    assert t.add_fn(acc) is acc and acc == Tangent[list](1.0, ZeroTangent(), 5.0)
    other = Tangent[list](1.0, 1.0)  # not an accumulator of a 3-entry list: dense sum
    with pytest.raises(ValueError, match="length 2 and 3"):
        t.add_fn(other)
    assert ext.entry_cotangent(3, 0, ZeroTangent()) == ZeroTangent()


def _getitem(x: Any, i: Any) -> Any:
    return x[i]


def _getitem_dict(x: Any, k: Any) -> Any:
    return x[k]


# A getitem of one's own with the exported rules, as an AD registers them: rulestest
# then checks exactly these implementations against finite differences.
rrule.register_signature(_getitem, ext.sequence_getitem_rrule, (tuple | list, int | slice))
frule.register_signature(_getitem, ext.sequence_getitem_frule, (tuple | list, int | slice))
rrule.register_signature(_getitem_dict, ext.dict_getitem_rrule, (dict, object))
frule.register_signature(_getitem_dict, ext.dict_getitem_frule, (dict, object))

NOIDX = NoTangent()


@pytest.mark.parametrize(
    ("x", "i"),
    [
        ((1.5, 2.5, -0.5), 1),
        ((1.5, 2.5, -0.5), -1),
        ([1.5, 2.5, -0.5], 0),
        ([1.5, np.array([1.0, 2.0]), 3.0], 1),
        ((1.5, 2.5, -0.5, 4.0), slice(1, None, 2)),
        ([1.5, 2.5, -0.5], slice(0, 2)),
    ],
    ids=str,
)
def test_sequence_getitem_rules(x: Any, i: Any) -> None:
    test_rrule(_getitem, x, primal_and_tangent(i, NOIDX), **F64)
    test_frule(_getitem, x, primal_and_tangent(i, NOIDX), **F64)
    kind = type(x)
    assert rrule.table.lookup(operator.getitem, (kind, type(i))).impl is ext.sequence_getitem_rrule
    assert frule.table.lookup(operator.getitem, (kind, type(i))).impl is ext.sequence_getitem_frule


@pytest.mark.parametrize("k", ["a", "b"])
def test_dict_getitem_rules(k: str) -> None:
    x = {"a": 1.5, "b": np.array([1.0, -2.0])}
    test_rrule(_getitem_dict, x, primal_and_tangent(k, NOIDX), **F64)
    test_frule(_getitem_dict, x, primal_and_tangent(k, NOIDX), **F64)
    assert rrule.table.lookup(operator.getitem, (dict, str)).impl is ext.dict_getitem_rrule
    assert frule.table.lookup(operator.getitem, (dict, str)).impl is ext.dict_getitem_frule


def test_getitem_rules_hand_values() -> None:
    _, pb = ext.sequence_getitem_rrule((1.0, 2.0, 3.0), -1)
    assert pb(7.0) == (NoTangent(), Tangent[tuple](ZeroTangent(), ZeroTangent(), 7.0), NoTangent())
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent())
    _, pb = ext.dict_getitem_rrule({"a": 1.0}, "a")
    assert pb(2) == (NoTangent(), Tangent[dict](a=2.0), NoTangent())  # projected: a float
    assert type(pb(2)[1]["a"]) is float
    assert ext.sequence_getitem_frule(
        None, (1.0, 2.0, 3.0), None, [4.0, 5.0, 6.0], slice(1, 3)
    ) == (
        [5.0, 6.0],
        Tangent[list](2.0, 3.0),
    )


# is_standard_rule

ARITHMETIC = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]
PAIRS = [(a, b) for a in (float, int) for b in (float, int)]


@pytest.mark.parametrize("table", [rrule.table, frule.table], ids=["rrule", "frule"])
def test_the_arithmetic_rules_are_standard(table: Any) -> None:
    for op in ARITHMETIC:
        for pair in PAIRS:
            assert ext.is_standard_rule(table.lookup(op, pair)), (op, pair)
    assert ext.is_standard_rule(table.lookup(operator.neg, (float,)))
    assert ext.is_standard_rule(table.lookup(np.sin, (np.ndarray,)))
    assert ext.is_standard_rule(table.lookup(math.sin, (float,)))  # a scalar_rule of rules
    assert ext.is_standard_rule(table.lookup(math.sin, (float,)).impl)


class _Money(float):
    pass


def test_a_users_rule_for_the_same_operator_is_not_standard() -> None:
    @rrule.register(operator.mul)
    def money_mul_rrule(a: _Money, b: _Money) -> Any:
        def money_mul_pullback(ȳ: Any) -> tuple:
            return NoTangent(), ȳ * b, ȳ * a

        return a * b, money_mul_pullback

    @frule.register(operator.neg)
    def money_neg_frule(ḟ: Any, ẋ: Any, x: _Money) -> Any:
        return -x, -ẋ

    assert not ext.is_standard_rule(rrule.table.lookup(operator.mul, (_Money, _Money)))
    assert not ext.is_standard_rule(frule.table.lookup(operator.neg, (_Money,)))
    assert ext.is_standard_rule(rrule.table.lookup(operator.mul, (float, float)))
    assert ext.is_standard_rule(frule.table.lookup(operator.neg, (float,)))


def test_a_users_scalar_rule_and_a_borrowed_module_name_are_not_standard() -> None:
    def twice(x: Any) -> Any:
        return 2 * x

    scalar_rule(twice, lambda x, Ω: 2.0)  # implementation written by rulescore
    assert not ext.is_standard_rule(rrule.table.lookup(twice, (float,)))
    assert not ext.is_standard_rule(frule.table.lookup(twice, (float,)))

    def impostor(x: Any) -> Any:
        return x, None

    impostor.__module__ = "rules._arithmetic"  # what a module-name test would accept
    assert not ext.is_standard_rule(impostor)
    assert not ext.is_standard_rule(lambda x: x)
    assert not ext.is_standard_rule(len)


def test_no_rule_an_opt_out_and_non_differentiable_are_not_standard() -> None:
    assert not ext.is_standard_rule(None)
    opted = [r for r in rrule.table.rules_for(operator.mul) if r.opt_out]
    for r in opted:
        assert not ext.is_standard_rule(r)
    assert not ext.is_standard_rule(
        Rule(operator.mul, None, rrule.table.lookup(operator.mul, (float, float)).signature, None)
    )

    def flag(x: Any) -> bool:
        return x > 0

    non_differentiable(flag)
    assert not ext.is_standard_rule(rrule.table.lookup(flag, (float,)))
