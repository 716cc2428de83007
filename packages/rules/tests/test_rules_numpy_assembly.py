"""Tests for building, joining, splitting and selecting arrays (``_numpy_assembly``,
``_numpy_ranges``): rules against finite differences, in float64, float32 and complex128."""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from rules_testing import DTYPES, TOLERANCES, N, RulesOnly, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from rulestest import test_frule, test_rrule

nd = np.ndarray


def positive(m):
    """Random arrays away from zero (geomspace needs nonzero ends)."""
    return lambda *shape: m(*shape) * 0.3 + 1.5


CASES = [
    # ranges
    ("linspace", np.linspace, lambda m: (m(), m(), N(5)), {}),
    ("linspace-arrays", np.linspace, lambda m: (m(3), m(2, 1), N(4)), {}),
    ("linspace-axis", np.linspace, lambda m: (m(3), m(3)), {"num": 4, "axis": -1}),
    ("linspace-axis1", np.linspace, lambda m: (m(2, 3), m(3), N(3)), {"axis": 1}),
    ("linspace-no-endpoint", np.linspace, lambda m: (m(2), m(2), N(4), N(False)), {}),
    ("linspace-one", np.linspace, lambda m: (m(2), m(2), N(1)), {}),
    ("linspace-retstep", np.linspace, lambda m: (m(2), m(2), N(3)), {"retstep": True}),
    ("linspace-retstep-pos", np.linspace, lambda m: (m(), m(), N(4), N(False), N(True)), {}),
    ("linspace-list", np.linspace, lambda m: (list(m(2)), m(2), N(3)), {}),
    ("logspace", np.logspace, lambda m: (m(), m(), N(4)), {}),
    ("logspace-base", np.logspace, lambda m: (m(2), m(2), N(3), N(True), positive(m)()), {}),
    (
        "logspace-base-array",
        np.logspace,
        lambda m: (m(2), m(), N(3), N(True), positive(m)(2), N(None), N(1)),
        {},
    ),
    ("logspace-axis", np.logspace, lambda m: (m(2), m(2)), {"num": 3, "axis": -1, "base": 2.0}),
    ("geomspace", np.geomspace, lambda m: (positive(m)(), positive(m)(), N(5)), {}),
    ("geomspace-arrays", np.geomspace, lambda m: (positive(m)(3), positive(m)(2, 1), N(4)), {}),
    ("geomspace-negative", np.geomspace, lambda m: (-positive(m)(2), -positive(m)(2)), {"num": 3}),
    (
        "geomspace-axis",
        np.geomspace,
        lambda m: (positive(m)(2), positive(m)(2), N(3), N(False)),
        {"axis": 1},
    ),
    ("meshgrid", np.meshgrid, lambda m: (m(3), m(2)), {}),
    ("meshgrid-ij", np.meshgrid, lambda m: (m(3), m(2), m(4)), {"indexing": "ij"}),
    ("meshgrid-xy3", np.meshgrid, lambda m: (m(3), m(2), m(2)), {}),
    ("meshgrid-sparse", np.meshgrid, lambda m: (m(3), m(2)), {"sparse": True}),
    ("meshgrid-one", np.meshgrid, lambda m: (m(2, 2),), {}),
    # joining, removing, splitting
    ("append", np.append, lambda m: (m(2, 2), m(3)), {}),
    ("append-axis", np.append, lambda m: (m(2, 3), m(1, 3), N(0)), {}),
    ("append-axis-kw", np.append, lambda m: (m(2, 3), m(2, 2)), {"axis": -1}),
    ("insert", np.insert, lambda m: (m(4), N(1), m(2)), {}),
    ("insert-broadcast", np.insert, lambda m: (m(2, 3), N(1), m()), {"axis": 1}),
    ("insert-many", np.insert, lambda m: (m(2, 3), N([0, 2, 2]), m(3)), {"axis": 1}),
    ("insert-rows", np.insert, lambda m: (m(2, 3), N(2), m(3), N(0)), {}),
    ("insert-flat", np.insert, lambda m: (m(2, 2), N(slice(0, 3)), m(3)), {}),
    ("delete", np.delete, lambda m: (m(5), N([0, 3])), {}),
    ("delete-axis", np.delete, lambda m: (m(3, 4), N(slice(1, 3)), N(1)), {}),
    ("column_stack", np.column_stack, lambda m: ([m(3), m(3, 2), m(3)],), {}),
    ("dstack", np.dstack, lambda m: ([m(2), m(1, 2), m(1, 2, 2)],), {}),
    ("dstack-matrices", np.dstack, lambda m: ((m(2, 3), m(2, 3)),), {}),
    ("hsplit", np.hsplit, lambda m: (m(2, 4), N(2)), {}),
    ("hsplit-vector", np.hsplit, lambda m: (m(6), N([1, 4])), {}),
    ("vsplit", np.vsplit, lambda m: (m(4, 2), N([1])), {}),
    ("dsplit", np.dsplit, lambda m: (m(1, 2, 4), N(2)), {}),
    ("compress", np.compress, lambda m: (N([True, False, True]), m(3, 2)), {"axis": 0}),
    ("compress-flat", np.compress, lambda m: (N([False, True, True]), m(2, 2)), {}),
    ("compress-method", nd.compress, lambda m: (m(2, 3), N([1, 0, 1]), N(1)), {}),
    # selecting
    (
        "select",
        np.select,
        lambda m: (N([m(3).real > 0, m(3).real > -0.5]), [m(3), m(3)], m(3)),
        {},
    ),
    (
        "select-broadcast",
        np.select,
        lambda m: (N([np.array([True, False, True]), np.array([[True], [False]])]), [m(), m(2, 1)]),
        {"default": 0.5},
    ),
    ("choose", np.choose, lambda m: (N(np.array([0, 1, 2, 1])), [m(4), m(4), m()]), {}),
    (
        "choose-array",
        np.choose,
        lambda m: (N(np.array([[0, 1], [1, 0]])), m(2, 2, 2)),
        {},
    ),
    ("choose-wrap", np.choose, lambda m: (N(np.array([0, 3, -1])), (m(3), m(1))), {"mode": "wrap"}),
    ("choose-clip", np.choose, lambda m: (N(np.array([0, 5, -1])), [m(3), m(3)]), {"mode": "clip"}),
    ("choose-method", nd.choose, lambda m: (N(np.array([1, 0, 1])), [m(3), m(3)]), {}),
    ("clip-method", nd.clip, lambda m: (m(4), -0.5, m(4) + 0.1), {}),
    ("clip-method-kw", nd.clip, lambda m: (m(4),), {"max": 0.3}),
]
NO_COMPLEX = {"clip-method", "clip-method-kw", "geomspace-negative"}  # real-only cases
REAL_ONLY_KW = {"logspace-base", "logspace-base-array", "logspace-axis"}


def _cases():
    for name, f, make, kw in CASES:
        for dtype in DTYPES:
            if np.dtype(dtype).kind == "c" and (name in NO_COMPLEX or name in REAL_ONLY_KW):
                continue
            yield pytest.param(f, make, kw, dtype, id=f"{name}-{np.dtype(dtype).name}")


@pytest.mark.parametrize(("f", "make", "kw", "dtype"), list(_cases()))
def test_rule(f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


def test_geomspace_complex_and_integer_ends():
    check(np.geomspace, (1.0 + 1.0j, 2.0 - 0.5j, N(4)), {}, np.complex128)
    check(np.geomspace, (1, 1000, N(4)), {}, np.float64)  # ints: real cotangents


def test_row_stack():
    if not hasattr(np, "row_stack"):
        pytest.skip("numpy without row_stack")
    m = maker(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check(np.row_stack, ([m(3), m(2, 3)],), {}, np.float64)


def test_linspace_cotangents_are_the_weights():
    _, pb = rrule(np.linspace, 0.0, 1.0, 3)
    assert pb(np.array([1.0, 0.0, 0.0]))[1:3] == (1.0, 0.0)
    assert pb(np.array([0.0, 1.0, 0.0]))[1:3] == (0.5, 0.5)
    _, pb = rrule(np.linspace, np.zeros(2), 1.0, 2, retstep=True)
    ds, de = pb((ZeroTangent(), np.array([1.0, 1.0])))[1:3]
    np.testing.assert_array_equal(ds, [-1.0, -1.0])
    assert de == 2.0


def test_linspace_float32_and_integer_dtype():
    _, pb = rrule(np.linspace, np.float32(0.0), np.ones(2, np.float32), 3)
    assert pb(np.ones((3, 2), np.float32))[2].dtype == np.float32
    _, pb = rrule(np.linspace, 0.0, 10.0, 3, dtype=int)
    assert pb(np.ones(3))[1:3] == (NoTangent(), NoTangent())
    assert frule((NoTangent(), 1.0, 1.0), np.linspace, 0.0, 10.0, dtype=int)[1] is NoTangent()


def test_meshgrid_accepts_zero_and_structured_cotangents():
    x, y = np.arange(3.0), np.arange(2.0)
    _, pb = rrule(np.meshgrid, x, y)
    out = pb((np.ones((2, 3)), ZeroTangent()))
    np.testing.assert_array_equal(out[1], [2.0, 2.0, 2.0])
    assert out[2] is ZeroTangent()
    out = pb(Tangent[tuple](ZeroTangent(), np.ones((2, 3))))
    np.testing.assert_array_equal(out[2], [3.0, 3.0])


def test_insert_broadcast_values_sum():
    _, pb = rrule(np.insert, np.zeros((2, 2)), 1, 5.0, 1)
    dv = unthunk(pb(np.ones((2, 3)))[3])
    assert dv == 2.0  # one value broadcast into two entries


def test_split_family_accept_zero_pieces():
    for f, x in ((np.hsplit, np.ones((2, 4))), (np.vsplit, np.ones((4, 2)))):
        _, pb = rrule(f, x, 2)
        dx = pb([ZeroTangent(), np.ones((2, 2))])[1]
        assert dx.shape == x.shape and dx.sum() == 4.0


# --- np.r_ and np.c_: subscripts arrive as operator.getitem(np.r_, key) -----------------


def keyed(obj, template):
    """A function of the key's arrays (``...`` marks where they go; the rest is constant),
    with rules delegating to the getitem rule: rulestest then checks that rule's
    cotangents for those arrays against finite differences of ``obj[key]``."""

    def build(xs):
        it = iter(xs)
        key = tuple(next(it) if t is Ellipsis else t for t in template)
        return key if len(key) > 1 else key[0]

    def f(*xs):
        return obj[build(xs)]

    slots = [i for i, t in enumerate(template) if t is Ellipsis]

    @rrule.register(f)
    def _(*xs):
        y, pb = rrule(operator.getitem, obj, build(xs))

        def keyed_pullback(ȳ):
            dk = pb(ȳ)[2]
            if len(template) == 1:
                return (NoTangent(), dk)
            if isinstance(dk, NoTangent | ZeroTangent):
                return (NoTangent(),) + (dk,) * len(xs)
            return (NoTangent(), *(dk[i] for i in slots))

        return y, keyed_pullback

    @frule.register(f)
    def _(ḟ, *args):
        n = len(args) // 2
        ẋs, xs = args[:n], args[n:]
        it = iter(ẋs)
        k̇ = tuple(next(it) if t is Ellipsis else NoTangent() for t in template)
        return frule((ḟ, NoTangent(), k̇ if len(k̇) > 1 else k̇[0]), operator.getitem, obj, build(xs))

    return f


CONCATENATIONS = [
    ("r-arrays", np.r_, (..., ...), lambda m: (m(2), m(3))),
    ("r-one", np.r_, (...,), lambda m: (m(3),)),
    ("r-scalars-lists", np.r_, (..., 2.5, ..., 0, ...), lambda m: (m(2), m()[()], list(m(2)))),
    ("r-slices", np.r_, (..., slice(0, 3), ..., slice(0.0, 1.0, 4j)), lambda m: (m(2), m(1))),
    ("r-axis", np.r_, ("-1", ..., ...), lambda m: (m(2, 2), m(2, 1))),
    ("r-ndmin", np.r_, ("0,2", ..., ...), lambda m: (m(3), m(2, 3))),
    ("r-trans1d", np.r_, ("1,3,0", ..., ...), lambda m: (m(2), m(2))),
    ("c-vectors", np.c_, (..., ...), lambda m: (m(3), m(3))),
    ("c-mixed", np.c_, (..., ..., slice(0, 3)), lambda m: (m(3, 2), m(3))),
    ("c-scalar", np.c_, (..., 1.5, ...), lambda m: (m(1, 2), m(1))),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    ("obj", "template", "make"),
    [c[1:] for c in CONCATENATIONS],
    ids=[c[0] for c in CONCATENATIONS],
)
def test_concatenator(obj, template, make, dtype):
    f = keyed(obj, template)
    args = make(maker(dtype))
    test_rrule(f, *args, **TOLERANCES[dtype])
    test_frule(f, *args, **TOLERANCES[dtype])


def test_concatenator_cotangent_structure():
    # (rulestest cannot take np.r_ itself as an argument: it snapshots arguments by copy.)
    _, pb = rrule(operator.getitem, np.r_, (np.ones(2), slice(0, 2), 4.0, [1.0]))
    out = pb(np.arange(6.0))
    assert out[:2] == (NoTangent(), NoTangent()) and type(out[2]) is tuple
    np.testing.assert_array_equal(out[2][0], [0.0, 1.0])
    assert out[2][1:] == (NoTangent(), 4.0, [5.0])
    _, pb = rrule(operator.getitem, np.c_, np.ones(3))  # a key that is not a tuple
    np.testing.assert_array_equal(pb(np.full((3, 1), 2.0))[2], [2.0, 2.0, 2.0])
    assert pb(ZeroTangent()) == (NoTangent(), NoTangent(), ZeroTangent())
    # a key of constants only: np.r_[0:3]; float bounds are differentiable (np.r_[0.0:1.0:3j])
    _, pb = rrule(operator.getitem, np.r_, slice(0, 3))
    assert pb(np.ones(3)) == (NoTangent(), NoTangent(), NoTangent())
    assert (
        frule((NoTangent(), NoTangent(), NoTangent()), operator.getitem, np.r_, slice(0, 3))[1]
        == ZeroTangent()
    )
    _, pb = rrule(operator.getitem, np.r_, slice(0.0, 1.0, 3j))
    assert pb(np.ones(3))[2] == Tangent[slice](start=1.5, stop=1.5)


def test_concatenator_matrix_string_is_refused():
    with pytest.raises(NotImplementedError, match="np.block"):
        rrule(operator.getitem, np.r_, "1 2; 3 4")


def test_masked_concatenator_is_not_covered():
    assert rrule(operator.getitem, np.ma.mr_, (np.ones(2), np.ones(2))) is None


# --- piecewise -----------------------------------------------------------------------------


def test_piecewise_constants():
    x = np.linspace(-1.0, 1.0, 6)
    conds = [x < 0, x > 0.5]
    test_rrule(np.piecewise, x, N(conds), [1.5, 2.5, -0.5])  # the last: "otherwise"
    test_frule(np.piecewise, x, N(conds), [1.5, 2.5, -0.5])
    _, pb = rrule(np.piecewise, x, conds, [1.5, 2.5])
    assert pb(np.ones(6))[1] is ZeroTangent()  # x only selects


def test_piecewise_later_conditions_win():
    x = np.array([1.0, 2.0, 3.0])
    _, pb = rrule(np.piecewise, x, [x > 0, x > 1], [1.0, 2.0])
    assert list(unthunk(pb(np.ones(3))[3])) == [1.0, 2.0]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_piecewise_functions_through_an_ad(dtype):
    x = maker(dtype)(6)
    conds = [x.real < 0, x.real > 0.5]
    config = RulesOnly()
    tol = TOLERANCES[dtype]
    test_rrule(config, np.piecewise, x, N(conds), N([np.sin, np.exp, np.tanh]), **tol)
    test_frule(config, np.piecewise, x, N(conds), N([np.sin, np.exp, np.tanh]), **tol)
    # extra arguments are passed to each function and differentiated
    test_rrule(config, np.piecewise, x, N(conds), N([np.multiply, np.add]), dtype(1.5), **tol)
    test_frule(config, np.piecewise, x, N(conds), N([np.multiply, np.add]), dtype(1.5), **tol)


def test_piecewise_checks_the_lengths_before_calling_functions():
    x = np.ones(3)
    with pytest.raises(ValueError, match="functions are expected"):
        rrule(RulesOnly(), np.piecewise, x, [x > 0], [np.sin, np.cos, np.exp])


def test_piecewise_functions_without_an_ad_are_refused():
    x = np.ones(3)
    with pytest.raises(TypeError, match="higher-order"):
        rrule(np.piecewise, x, [x > 0], [np.sin])


# --- round, ptp and the non-differentiable methods -------------------------------------------


@pytest.mark.parametrize("f", [np.round, np.around, nd.round])
def test_round_has_zero_derivative(f):
    x = np.array([0.26, 1.74])
    y, pb = rrule(f, x, 1)
    np.testing.assert_array_equal(y, [0.3, 1.7])
    assert pb(np.ones(2)) == (NoTangent(), ZeroTangent(), NoTangent())
    assert frule((NoTangent(), np.ones(2)), f, x, decimals=1)[1] is ZeroTangent()
    with pytest.raises(TypeError, match="out="):
        rrule(f, x, 0, np.empty(2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize(
    ("args", "kw"),
    [((), {}), ((N(0),), {}), ((), {"axis": 1, "keepdims": True}), ((N((0, 1)),), {})],
    ids=["all", "axis", "keepdims", "tuple"],
)
def test_ptp(args, kw, dtype):
    check(np.ptp, (maker(dtype)(3, 4), *args), kw, dtype)


def test_ptp_ties_and_constants():
    _, pb = rrule(np.ptp, np.array([2.0, 0.0, 2.0, 0.0]))
    np.testing.assert_array_equal(pb(1.0)[1], [0.5, -0.5, 0.5, -0.5])
    _, pb = rrule(np.ptp, np.ones(3))
    np.testing.assert_array_equal(pb(1.0)[1], [0.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (nd.argmax, ()),
        (nd.argmin, (0,)),
        (nd.argsort, ()),
        (nd.argpartition, (1,)),
        (nd.nonzero, ()),
        (nd.any, ()),
        (nd.all, (0,)),
        (nd.searchsorted, (0.5,)),
        (np.argpartition, (1,)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_index_queries_are_non_differentiable(f, args):
    x = np.array([[0.3, 0.1, 0.9], [0.2, 0.5, 0.4]]).ravel()
    y, pb = rrule(f, x, *args)
    assert np.array_equal(np.asarray(y), np.asarray(f(x, *args)))
    assert pb(ZeroTangent()) == (NoTangent(),) * (2 + len(args))
    assert (
        frule((NoTangent(), np.ones(6), *(NoTangent() for _ in args)), f, x, *args)[1]
        is NoTangent()
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)], ids=str)
def test_tolist(shape, dtype):
    check(nd.tolist, (maker(dtype)(*shape),), {}, dtype)
    _, pb = rrule(nd.tolist, np.ones((2, 2)))
    dx = pb([[1.0, ZeroTangent()], ZeroTangent()])[1]  # nested cotangents with zeros
    np.testing.assert_array_equal(dx, [[1.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_view(dtype):
    x = maker(dtype)(2, 3)
    check(nd.view, (x,), {}, dtype)
    check(nd.view, (x, N(x.dtype)), {}, dtype)
    check(nd.view, (x, N(np.ndarray)), {}, dtype)
    with pytest.raises(NotImplementedError, match="reinterprets"):
        rrule(nd.view, x, np.int8)
    with pytest.raises(NotImplementedError, match="reinterprets"):
        rrule(nd.view, x, type=np.matrix)


def test_insert_into_integers_is_non_differentiable():
    _, pb = rrule(np.insert, np.arange(3), 1, 2.5)
    assert all(t is NoTangent() for t in pb(np.ones(4)))
