"""Rules for numpy.linalg.cond and numpy.linalg's array-API functions (cross, outer,
matmul, tensordot, matrix_transpose, vecdot, diagonal), with numpy's own vecdot and
matrix_transpose, against finite differences."""

import numpy as np
import pytest
from rules_testing import DTYPES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule

la = np.linalg

CASES = [
    ("cross", la.cross, lambda m: (m(3), m(2, 3)), {}),
    ("cross-axis", la.cross, lambda m: (m(3, 2), m(3, 2)), {"axis": 0}),
    ("outer", la.outer, lambda m: (m(3), m(2)), {}),
    ("matmul", la.matmul, lambda m: (m(2, 3, 4), m(4, 2)), {}),
    ("matmul-vector", la.matmul, lambda m: (m(3), m(3, 2)), {}),
    ("tensordot", la.tensordot, lambda m: (m(2, 3, 4), m(3, 4, 2)), {}),
    ("tensordot-axes", la.tensordot, lambda m: (m(2, 3), m(3, 2)), {"axes": ([0], [1])}),
    ("matrix_transpose", la.matrix_transpose, lambda m: (m(2, 3, 4),), {}),
    ("np-matrix_transpose", np.matrix_transpose, lambda m: (m(3, 2),), {}),
    ("diagonal", la.diagonal, lambda m: (m(2, 3, 4),), {}),
    ("diagonal-offset", la.diagonal, lambda m: (m(3, 4),), {"offset": -1}),
    ("vecdot", la.vecdot, lambda m: (m(2, 3), m(3)), {}),
    ("vecdot-axis", la.vecdot, lambda m: (m(3, 2), m(3, 1)), {"axis": 0}),
    ("np-vecdot", np.vecdot, lambda m: (m(4), m(2, 4)), {}),
    ("np-vecdot-axis", np.vecdot, lambda m: (m(3, 2), m(3)), {"axis": 0}),
    ("np-vecdot-keepdims", np.vecdot, lambda m: (m(2, 3), m(2, 3)), {"keepdims": True}),
    (
        "np-vecdot-axis-keepdims",
        np.vecdot,
        lambda m: (m(3, 2), m(3, 2)),
        {"axis": 0, "keepdims": True},
    ),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "f", "make", "kw"), CASES, ids=[c[0] for c in CASES])
def test_array_api_function(name, f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


def test_vecdot_conjugates_its_first_argument():
    a, b = np.array([1j, 2.0]), np.array([1.0, 1j])
    y, pb = rrule(np.vecdot, a, b)
    assert y == np.vdot(a, b)
    _, ā, b̄ = pb(1.0 + 0j)
    np.testing.assert_allclose(ā, b)  # ā = b conj(ȳ)
    np.testing.assert_allclose(b̄, a)
    with pytest.raises(TypeError, match="axis= and keepdims="):
        rrule(np.vecdot, a, b, dtype=complex)


def well_conditioned(*shape, dtype):
    m = maker(dtype)
    return m(*shape) + 2 * np.eye(*shape[-2:])


P_VALUES = [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", P_VALUES, ids=str)
def test_cond(p, dtype):
    x = well_conditioned(3, 3, dtype=dtype)
    kw = {} if p is None else {"p": p}
    check(la.cond, (x,), kw, dtype)
    if p is not None:
        check(la.cond, (x, N(p)), {}, dtype)  # p passed positionally


@pytest.mark.parametrize("p", [None, -2, "fro"], ids=str)
def test_cond_of_stacks(p):
    x = well_conditioned(2, 3, 3, dtype=np.float64)
    check(la.cond, (x,), {"p": p}, np.float64)


@pytest.mark.parametrize("shape", [(4, 2), (2, 4)])
def test_cond_of_rectangular_matrices(shape):
    check(la.cond, (maker(np.complex128)(*shape),), {}, np.complex128)


def test_cond_of_a_singular_matrix_has_no_derivative():
    x = np.diag([1.0, 0.0])
    for p in (None, 1):
        y, pb = rrule(la.cond, x, p)
        assert np.isinf(y)
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            pb(1.0)
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            frule((NoTangent(), np.ones((2, 2)), NoTangent()), la.cond, x, p)
    assert rrule(la.cond, x)[1](ZeroTangent()) == (NoTangent(), ZeroTangent())


def test_cond_of_one_by_one_is_constant():
    _, pb = rrule(la.cond, np.array([[3.0]]))
    np.testing.assert_allclose(pb(1.0)[1], [[0.0]], atol=1e-16)
