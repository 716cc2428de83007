"""Rules for numpy.linalg.norm, vector_norm and matrix_norm, including
subgradients at non-differentiable points."""

import numpy as np
import pytest
from rules_testing import both, random_maker

import rules  # noqa: F401  (registers the rules)
from rules._linalg_util import LinalgGradientWarning
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_rrule

rand = random_maker(13)
DTYPES = [np.float64, np.complex128]
TOL = 1e-7


VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 3, 0.5, -1.5]
MATRIX_ORDS = [None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm(ord, dtype):
    x = rand(4, dtype=dtype)
    both(np.linalg.norm, x, fkwargs={"ord": ord})
    both(np.linalg.norm, rand(3, 4, dtype=dtype), fkwargs={"ord": ord, "axis": 1})
    both(np.linalg.norm, rand(3, 4, dtype=dtype), fkwargs={"ord": ord, "axis": 0, "keepdims": True})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm(ord, dtype):
    both(np.linalg.norm, rand(3, 4, dtype=dtype), fkwargs={"ord": ord})
    both(np.linalg.norm, rand(2, 3, 4, dtype=dtype), fkwargs={"ord": ord, "axis": (2, 0)})
    kw = {"ord": ord, "axis": (-2, -1), "keepdims": True}
    both(np.linalg.norm, rand(2, 3, 4, dtype=dtype), fkwargs=kw)


@pytest.mark.parametrize("ord", [2, 1, np.inf, 0.5])
def test_array_api_vector_norm(ord):
    both(np.linalg.vector_norm, rand(2, 3, 4), fkwargs={"ord": ord, "axis": (0, 2)})
    both(np.linalg.vector_norm, rand(2, 3), fkwargs={"ord": ord})


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, 1])
def test_array_api_matrix_norm(ord):
    both(np.linalg.matrix_norm, rand(2, 3, 3), fkwargs={"ord": ord, "keepdims": True})


def test_float32_and_positional_ord():
    test_rrule(np.linalg.norm, rand(3, 3).astype(np.float32), rtol=1e-2, atol=1e-2)
    _, pb = rrule(np.linalg.norm, np.array([3.0, 4.0]), 1)
    cts = pb(1.0)
    assert len(cts) == 3 and cts[2] == NoTangent()
    np.testing.assert_allclose(cts[1], [1.0, 1.0])


def test_zero_vector_has_zero_gradient():
    # The 2-norm is not differentiable at 0; 0 is a subgradient (never NaN).
    for x in (np.zeros(3), np.zeros((2, 2))):
        _, pb = rrule(np.linalg.norm, x)
        np.testing.assert_array_equal(pb(1.0)[1], np.zeros_like(x))
        _, ẏ = frule((NoTangent(), np.ones_like(x)), np.linalg.norm, x)
        assert ẏ == 0.0


def test_ties_share_the_subgradient():
    _, pb = rrule(np.linalg.norm, np.array([1.0, -3.0, 3.0]), ord=np.inf)
    np.testing.assert_allclose(pb(1.0)[1], [0.0, -0.5, 0.5])
    _, pb = rrule(np.linalg.norm, np.eye(2), ord=2)
    np.testing.assert_allclose(pb(1.0)[1], 0.5 * np.eye(2))


def test_ord_zero_counts_nonzeros():
    y, pb = rrule(np.linalg.norm, np.array([1.0, 0.0, 2.0]), ord=0)
    assert y == 2.0
    assert isinstance(pb(1.0)[1], ZeroTangent)


def test_fractional_ord_at_zero_entry_warns():
    _, pb = rrule(np.linalg.norm, np.array([1.0, 0.0]), ord=0.5)
    with pytest.warns(LinalgGradientWarning, match="ord=0.5"):
        pb(1.0)


def test_integer_input_gets_float_cotangent():
    _, pb = rrule(np.linalg.norm, np.array([3, 4]))
    np.testing.assert_allclose(pb(1.0)[1], [0.6, 0.8])
