"""Tests for the numpy product rules (``_numpy_products``, ``_numpy_einsum``).

matmul/``@``, dot, vdot, inner, outer, tensordot, kron, cross and einsum,
each through ``test_rrule`` and ``test_frule`` for float64, float32 and
complex128 operands.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from rules_testing import DTYPES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rules._numpy_einsum import parse_einsum
from rulescore import NoTangent, Thunk, ZeroTangent, rrule, unthunk

MATMUL_SHAPES = [
    ((2, 3), (3, 4)),
    ((3,), (3, 2)),
    ((2, 3), (3,)),
    ((3,), (3,)),
    ((4, 2, 3), (3, 2)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((3,), (2, 3, 4)),
]

PRODUCTS = [
    *(
        (f"{op.__name__}-{sa}-{sb}", op, lambda m, sa=sa, sb=sb: (m(*sa), m(*sb)), {})
        for op in (np.matmul, operator.matmul)
        for sa, sb in MATMUL_SHAPES
    ),
    ("dot-matrices", np.dot, lambda m: (m(2, 3), m(3, 4)), {}),
    ("dot-vectors", np.dot, lambda m: (m(3), m(3)), {}),
    ("dot-scalar-left", np.dot, lambda m: (m(), m(3)), {}),
    ("dot-scalar-right", np.dot, lambda m: (m(3, 2), m()), {}),
    ("dot-nd-vector", np.dot, lambda m: (m(2, 3, 4), m(4)), {}),
    ("dot-nd-nd", np.dot, lambda m: (m(2, 3, 4), m(2, 4, 2)), {}),
    ("dot-matrix-vector", np.dot, lambda m: (m(2, 3), m(3)), {}),
    ("vdot-vectors", np.vdot, lambda m: (m(3), m(3)), {}),
    ("vdot-matrices", np.vdot, lambda m: (m(2, 2), m(2, 2)), {}),
    ("vdot-flattens", np.vdot, lambda m: (m(2, 3), m(6)), {}),
    ("inner-vectors", np.inner, lambda m: (m(3), m(3)), {}),
    ("inner-matrices", np.inner, lambda m: (m(2, 3), m(4, 3)), {}),
    ("inner-matrix-vector", np.inner, lambda m: (m(2, 3), m(3)), {}),
    ("inner-scalar", np.inner, lambda m: (m(), m(2)), {}),
    ("outer-vectors", np.outer, lambda m: (m(3), m(2)), {}),
    ("outer-flattens", np.outer, lambda m: (m(2, 2), m(3)), {}),
    ("tensordot-default", np.tensordot, lambda m: (m(2, 3, 4), m(3, 4, 2)), {}),
    ("tensordot-pairs", np.tensordot, lambda m: (m(2, 3, 4), m(4, 3, 2), N(([1, 2], [1, 0]))), {}),
    ("tensordot-outer", np.tensordot, lambda m: (m(2, 3), m(2, 2), N(0)), {}),
    (
        "tensordot-negative",
        np.tensordot,
        lambda m: (m(2, 3, 4), m(4, 2)),
        {"axes": ([0, -1], [1, 0])},
    ),
    ("tensordot-vectors", np.tensordot, lambda m: (m(3), m(3), N(1)), {}),
    ("kron-matrices", np.kron, lambda m: (m(2, 3), m(2, 2)), {}),
    ("kron-vectors", np.kron, lambda m: (m(3), m(2)), {}),
    ("kron-mixed-rank", np.kron, lambda m: (m(2), m(2, 3)), {}),
    ("kron-3d", np.kron, lambda m: (m(2, 1, 2), m(3, 2)), {}),
    ("cross", np.cross, lambda m: (m(3), m(3)), {}),
    ("cross-broadcast", np.cross, lambda m: (m(4, 3), m(3)), {}),
    ("cross-axes", np.cross, lambda m: (m(3, 2), m(2, 3)), {"axisa": 0, "axisb": -1, "axisc": 0}),
    ("cross-axis", np.cross, lambda m: (m(3, 2), m(3, 2)), {"axis": 0}),
]

EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
    ("implicit", "ij,jk", [(2, 3), (3, 4)]),
    ("implicit-order", "ba,Ab", [(2, 3), (4, 2)]),
    ("spaces", " ij , jk -> ik ", [(2, 3), (3, 2)]),
    ("transpose", "ij->ji", [(2, 3)]),
    ("sum-all", "ij->", [(2, 3)]),
    ("sum-rows", "ij->i", [(2, 3)]),
    ("diagonal", "ii->i", [(3, 3)]),
    ("trace", "ii", [(3, 3)]),
    ("partial-trace", "iij->j", [(2, 2, 3)]),
    ("split-diagonal", "iji->j", [(2, 3, 2)]),
    ("diagonal-with-operand", "ii,i->i", [(2, 2), (2,)]),
    ("diagonal-and-broadcast-letter", "iij,k->ik", [(2, 2, 1), (3,)]),
    ("hadamard", "ij,ij->ij", [(2, 3), (2, 3)]),
    ("dot", "i,i", [(3,), (3,)]),
    ("outer", "i,j->ij", [(2,), (3,)]),
    ("batched", "bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ellipsis-batched", "...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("ellipsis-reduce", "...i,...i->...", [(2, 3), (3,)]),
    ("ellipsis-implicit", "i...", [(2, 3, 4)]),
    ("broadcast-unit-axis", "ij,ij->ij", [(1, 3), (2, 3)]),
    ("broadcast-summed", "ij,i->j", [(1, 3), (4,)]),
    ("three-operands", "ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("triple-dot", "i,i,i->", [(3,), (3,), (3,)]),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "f", "make", "kw"), PRODUCTS, ids=[c[0] for c in PRODUCTS])
def test_product_rule(name, f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "subscripts", "shapes"), EINSUM, ids=[c[0] for c in EINSUM])
def test_einsum(name, subscripts, shapes, dtype):
    m = maker(dtype)
    check(np.einsum, (subscripts, *(m(*s) for s in shapes)), {}, dtype)


@pytest.mark.parametrize(
    ("args", "kw"),
    [
        (lambda m: (m(2, 3), N([0, 1]), m(3, 2), N([1, 2]), N([0, 2])), {}),
        (lambda m: (m(2, 2), N([0, 0])), {}),
        (lambda m: (m(2, 3, 4), N([Ellipsis, 1]), N([Ellipsis])), {}),
        (lambda m: ("ij,jk->ik", m(2, 3), m(3, 2)), {"optimize": True}),
    ],
    ids=["sublists", "sublist-trace", "sublist-ellipsis", "optimize"],
)
def test_einsum_other_forms(args, kw):
    check(np.einsum, args(maker(np.float64)), kw, np.float64)


def test_products_of_mixed_real_and_complex():
    m, z = maker(np.float64), maker(np.complex128)
    check(np.matmul, (m(2, 3), z(3, 2)), {}, np.float64)
    check(np.einsum, ("ij,j->i", z(2, 3), m(3)), {}, np.float64)


def test_products_of_lists():
    check(np.matmul, ([[1.0, 2.0]], maker(np.float64)(2, 2)), {}, np.float64)
    check(np.einsum, ("i,i->", [1.0, 2.0], np.array([3.0, 4.0])), {}, np.float64)
    check(np.dot, ([1.0, 2.0], [3.0, 4.0]), {}, np.float64)


def test_matmul_complex_convention():
    # In C = A @ B the cotangent of A is C̄ @ conj(B)ᵀ.
    A = np.array([[1 + 2j, 0.5j]])
    B = np.array([[2 - 1j], [1j]])
    C̄ = np.array([[1.0 - 1j]])
    _, pullback = rrule(np.matmul, A, B)
    np.testing.assert_allclose(unthunk(pullback(C̄)[1]), C̄ @ B.conj().T)
    np.testing.assert_allclose(unthunk(pullback(C̄)[2]), A.conj().T @ C̄)


def test_product_cotangents_are_thunks():
    _, pullback = rrule(np.matmul, np.ones((2, 2)), np.ones((2, 2)))
    cots = pullback(np.ones((2, 2)))
    assert isinstance(cots[1], Thunk) and isinstance(cots[2], Thunk)
    assert pullback(ZeroTangent()) == (NoTangent(), ZeroTangent(), ZeroTangent())


def test_operator_matmul_needs_an_array():
    assert rrule(operator.matmul, [[1.0]], [[2.0]]) is None
    assert rrule(operator.matmul, np.ones((1, 1)), [[2.0]]) is not None


def test_cross_of_2_vectors_raises():
    with pytest.raises(NotImplementedError, match="3-vectors"):
        rrule(np.cross, np.ones(2), np.ones(2))


def test_parse_einsum():
    assert parse_einsum("ij,jk", [(2, 3), (3, 4)]) == (["ij", "jk"], "ik")
    assert parse_einsum("ba,Ab", [(2, 3), (4, 2)]) == (["ba", "Ab"], "Aa")
    specs, out = parse_einsum("...ij,jk->...ik", [(5, 2, 3), (3, 4)])
    assert len(specs[0]) == 3 and out == specs[0][0] + "ik"


# --- product: np.dot for contiguous float64 operands, the same bits as @ ------------


def _layouts(rng, m, k, n):
    """Operand pairs of every contiguous layout: C, F (a transposed C array), the
    syrk case a @ a.T (one buffer), vectors, and strided views (not contiguous)."""
    a = rng.normal(size=(m, k))
    b = rng.normal(size=(k, n))
    v, u = rng.normal(size=k), rng.normal(size=m)
    return [
        (a, b),
        (np.asfortranarray(a), b),
        (a, np.asfortranarray(b)),
        (rng.normal(size=(k, m)).T, rng.normal(size=(n, k)).T),
        (a, a.T),
        (a.T, a),
        (a, v),
        (u, a),
        (v, v.copy()),
        (rng.normal(size=(m, 2 * k))[:, ::2], b),  # not contiguous: plain @
        (a, rng.normal(size=(2 * k,))[::2]),
    ]


@pytest.mark.parametrize(
    "m, k, n",
    [
        (1, 1, 1),
        (8, 16, 16),
        (8, 16, 1),
        (1, 7, 5),
        (33, 65, 17),
        (0, 3, 2),
        (3, 0, 2),
        (120, 90, 110),
    ],
)
def test_product_has_the_bits_of_matmul(m, k, n):
    from rules._numpy_products import product

    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    for x, y in _layouts(rng, m, k, n):
        got, want = product(x, y), x @ y
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want), (x.shape, y.shape, x.flags.forc, y.flags.forc)


def test_product_of_other_dtypes_is_matmul():
    from rules._numpy_products import product

    rng = np.random.default_rng(9)
    for dtype in (np.float32, np.float16, np.complex128):
        a = rng.normal(size=(5, 4)).astype(dtype)
        b = rng.normal(size=(4, 3)).astype(dtype)
        got = product(a, b)
        assert got.dtype == (a @ b).dtype and np.array_equal(got, a @ b)
