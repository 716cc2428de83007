"""Rules for inv, det, slogdet, solve, matrix_power, multi_dot, linalg.trace,
tensorinv, tensorsolve and matrix_rank, checked against finite differences."""

import numpy as np
import pytest
from rules_testing import both, random_maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule
from rulestest import primal_and_tangent

rand = random_maker(5)


def wellcond(*shape, dtype=np.float64):
    """A random square matrix (stack) safely away from singular."""
    return rand(*shape, dtype=dtype) + 3 * np.eye(shape[-1], dtype=dtype)


TOL = {np.float64: 1e-7, np.complex128: 1e-7, np.float32: 1e-2}
DTYPES = [np.float64, np.complex128]
SQUARE = [(3, 3), (2, 3, 3), (1, 2, 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("f", [np.linalg.inv, np.linalg.det, np.linalg.slogdet])
def test_square_functions(f, shape, dtype):
    both(f, wellcond(*shape, dtype=dtype))


@pytest.mark.parametrize("f", [np.linalg.inv, np.linalg.det])
def test_float32(f):
    both(f, wellcond(3, 3, dtype=np.float32), tol=1e-2)


SOLVE_SHAPES = [
    ((3, 3), (3,)),  # vector right-hand side
    ((3, 3), (3, 2)),  # matrix right-hand side
    ((2, 3, 3), (2, 3, 2)),  # batched
    ((2, 3, 3), (3,)),  # one vector for a stack
    ((3, 3), (2, 3, 1)),  # a matrix broadcast against a stack of right-hand sides
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("ashape", "bshape"), SOLVE_SHAPES)
def test_solve(ashape, bshape, dtype):
    both(np.linalg.solve, wellcond(*ashape, dtype=dtype), rand(*bshape, dtype=dtype))


def test_solve_real_matrix_complex_rhs():
    # The cotangent of the real matrix is projected to real.
    both(np.linalg.solve, wellcond(3, 3), rand(3, dtype=np.complex128))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 3, -2])
def test_matrix_power(n, dtype):
    both(np.linalg.matrix_power, wellcond(2, 3, 3, dtype=dtype), primal_and_tangent(n, NoTangent()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("first", [(3,), (2, 3)])
@pytest.mark.parametrize("last", [(4,), (4, 2)])
def test_multi_dot(first, last, dtype):
    arrays = [rand(*first, dtype=dtype), rand(3, 3, dtype=dtype), rand(3, 4, dtype=dtype)]
    arrays.append(rand(*last, dtype=dtype))
    both(np.linalg.multi_dot, arrays)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [0, 1, -1])
def test_linalg_trace(offset, dtype):
    both(np.linalg.trace, rand(2, 3, 4, dtype=dtype), fkwargs={"offset": offset})


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorinv(dtype):
    a = wellcond(6, 6, dtype=dtype).reshape(2, 3, 6)
    both(np.linalg.tensorinv, a, fkwargs={"ind": 2})
    both(np.linalg.tensorinv, a.reshape(6, 2, 3), primal_and_tangent(1, NoTangent()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensorsolve(dtype):
    a = wellcond(6, 6, dtype=dtype)
    both(np.linalg.tensorsolve, a.reshape(2, 3, 2, 3), rand(2, 3, dtype=dtype))
    both(
        np.linalg.tensorsolve,
        a.reshape(6, 2, 3),
        rand(2, 3, dtype=dtype),
        primal_and_tangent((0,), NoTangent()),
    )


def test_matrix_rank_is_non_differentiable():
    y, pb = rrule(np.linalg.matrix_rank, np.eye(3))
    assert y == 3
    assert pb(1.0) == (NoTangent(), NoTangent())


@pytest.mark.parametrize(
    "ȳ",
    [
        (np.float64(0.3), np.float64(1.5)),
        Tangent[np.linalg.slogdet(np.eye(2)).__class__](logabsdet=np.float64(1.5)),
        (ZeroTangent(), np.float64(1.5)),
    ],
    ids=["tuple", "Tangent", "zero-sign"],
)
def test_slogdet_cotangent_forms(ȳ):
    # The sign of a real determinant is piecewise constant: its cotangent is ignored.
    a = wellcond(3, 3)
    _, pb = rrule(np.linalg.slogdet, a)
    np.testing.assert_allclose(pb(ȳ)[1], 1.5 * np.linalg.inv(a).T)


def test_slogdet_complex_phase():
    # sign = det/|det| moves with the phase of the determinant: d sign = sign·i·Im tr(a⁻¹ da).
    a = wellcond(3, 3, dtype=np.complex128)
    ȧ = rand(3, 3, dtype=np.complex128)
    (sign, _), ṫ = frule((NoTangent(), ȧ), np.linalg.slogdet, a)
    c = np.trace(np.linalg.solve(a, ȧ))
    np.testing.assert_allclose(ṫ.sign, sign * 1j * c.imag)
    np.testing.assert_allclose(ṫ.logabsdet, c.real)


def test_det_of_singular_matrix_is_the_adjugate():
    # d det / d a = adj(a)ᵀ, finite for singular a; inv(a) would fail.
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    _, pb = rrule(np.linalg.det, a)
    np.testing.assert_allclose(pb(1.0)[1], [[4.0, -2.0], [-2.0, 1.0]])
    a3 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    both(np.linalg.det, a3, tol=1e-6)


def test_singular_matrix_errors():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError):
        rrule(np.linalg.inv, a)
    with pytest.raises(np.linalg.LinAlgError):
        rrule(np.linalg.solve, a, np.ones(2))
    (sign, logabsdet), pb = rrule(np.linalg.slogdet, a)
    assert sign == 0 and logabsdet == -np.inf
    with pytest.raises(np.linalg.LinAlgError, match="slogdet: the derivative needs inv"):
        pb((0.0, 1.0))


def test_multi_dot_out_is_rejected():
    arrays = [np.eye(2), np.eye(2), np.eye(2)]
    with pytest.raises(NotImplementedError, match=r"multi_dot.*out"):
        rrule(np.linalg.multi_dot, arrays, out=np.empty((2, 2)))
