"""Rules for svd, svdvals, pinv and lstsq, checked against finite differences.

Complex singular vectors have a free phase per column (U → U D, Vh → Dᴴ Vh):
rulestest's random output cotangent is not invariant under that gauge, so the
complex case is tested through ``svd_invariant(a) = (|U|², S, |Vh|², U S Vh)``,
whose rules are the svd rules composed by hand with those maps.
"""

import numpy as np
import pytest
from rules_testing import both, mH, random_maker

import rules  # noqa: F401  (registers the rules)
from rules._linalg_util import LinalgGradientWarning
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from rulestest import primal_and_tangent

rand = random_maker(11)
DTYPES = [np.float64, np.complex128]
SHAPES = [(3, 3), (4, 2), (2, 4), (2, 4, 3), (2, 3, 4)]
TOL = 1e-7


def svd_invariant(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.abs(u) ** 2, s, np.abs(vh) ** 2, (u * s[..., None, :]) @ vh


@rrule.register(svd_invariant)
def _(a):
    (u, s, vh), pb = rrule(np.linalg.svd, a, full_matrices=False)

    def svd_invariant_pullback(z̄):
        z̄ = unthunk(z̄)
        if isinstance(z̄, AbstractZero):
            return NoTangent(), z̄
        p̄u, s̄, p̄v, r̄ = (np.asarray(unthunk(e)) for e in z̄)
        ū = 2 * p̄u * u + (r̄ @ mH(vh)) * s[..., None, :]
        v̄h = 2 * p̄v * vh + s[..., :, None] * (mH(u) @ r̄)
        s̄ = s̄ + np.einsum("...ji,...jk,...ik->...i", u.conj(), r̄, vh.conj()).real
        return NoTangent(), pb((ū, s̄, v̄h))[1]

    return svd_invariant(a), svd_invariant_pullback


@frule.register(svd_invariant)
def _(ḟ, ȧ, a):
    (u, s, vh), ṫ = frule((ḟ, ȧ), np.linalg.svd, a, full_matrices=False)
    u̇, ṡ, v̇h = ṫ.U, ṫ.S, ṫ.Vh
    ṙ = (u̇ * s[..., None, :]) @ vh + (u * ṡ[..., None, :]) @ vh + (u * s[..., None, :]) @ v̇h
    return svd_invariant(a), (
        2 * np.real(u.conj() * u̇),
        ṡ,
        2 * np.real(vh.conj() * v̇h),
        ṙ,
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_real(shape):
    # Real singular vectors are unique up to sign, which finite differences follow.
    both(np.linalg.svd, rand(*shape), fkwargs={"full_matrices": False})


def test_svd_square_full_matrices():
    both(np.linalg.svd, rand(3, 3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_svd_gauge_invariant(shape, dtype):
    both(svd_invariant, rand(*shape, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_singular_values(shape, dtype):
    a = rand(*shape, dtype=dtype)
    both(np.linalg.svd, a, fkwargs={"compute_uv": False})
    both(np.linalg.svdvals, a)


def test_svd_hermitian():
    # hermitian=True reads the lower triangle (numpy's eigh); in Hermitian directions
    # that is svd(a); non-Hermitian input: test_rules_linalg_triangle.py.
    x = rand(3, 3)
    a = x + x.T
    d = rand(3, 3)
    d = d + d.T
    _, ṡ = frule((NoTangent(), d), np.linalg.svd, a, compute_uv=False, hermitian=True)
    h = 1e-6
    s = [np.linalg.svd(a + t * d, compute_uv=False) for t in (h, -h)]
    np.testing.assert_allclose(ṡ, (s[0] - s[1]) / (2 * h), rtol=1e-6)
    _, pb = rrule(np.linalg.svd, a, compute_uv=False, hermitian=True)
    ā = pb(np.ones(3))[1]
    np.testing.assert_array_equal(np.triu(ā, 1), 0)
    np.testing.assert_allclose(np.sum(ā * d), np.sum(ṡ), rtol=1e-9)


@pytest.mark.parametrize(
    "ȳ",
    [
        lambda s: (ZeroTangent(), s, ZeroTangent()),
        lambda s: Tangent[np.linalg._linalg.SVDResult](S=s),
    ],
    ids=["tuple-with-zeros", "Tangent[SVDResult]"],
)
def test_svd_values_only_cotangents(ȳ):
    a = rand(3, 3)
    (u, _, vh), pb = rrule(np.linalg.svd, a)
    s̄ = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(pb(ȳ(s̄))[1], u @ np.diag(s̄) @ vh)


def test_svd_degenerate_warns_and_stays_finite():
    a = np.diag([2.0, 2.0, 1.0])
    (u, s, vh), pb = rrule(np.linalg.svd, a)
    with pytest.warns(LinalgGradientWarning, match="singular values"):
        ā = pb((np.ones((3, 3)), np.zeros(3), np.zeros((3, 3))))[1]
    assert np.all(np.isfinite(ā))
    # A loss invariant under rotations in the degenerate subspace, ‖U S Vh‖²,
    # still gets its exact gradient 2a.
    r̄ = 2 * a
    with pytest.warns(LinalgGradientWarning):
        ā = pb((r̄ @ vh.T * s, np.einsum("ji,jk,ik->i", u, r̄, vh), s[:, None] * (u.T @ r̄)))[1]
    np.testing.assert_allclose(ā, 2 * a, atol=1e-12)


def test_svd_full_matrices_non_square_rejected():
    with pytest.raises(NotImplementedError, match=r"numpy\.linalg\.svd.*full_matrices=True"):
        rrule(np.linalg.svd, rand(4, 2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 4, 3)])
def test_pinv(shape, dtype):
    both(np.linalg.pinv, rand(*shape, dtype=dtype))


def test_pinv_hermitian():
    x = rand(3, 3)
    a = x @ x.T + np.eye(3)
    d = rand(3, 3)
    d = d + d.T
    _, ẏ = frule((NoTangent(), d), np.linalg.pinv, a, hermitian=True)
    h = 1e-6
    fd = (np.linalg.pinv(a + h * d) - np.linalg.pinv(a - h * d)) / (2 * h)
    np.testing.assert_allclose(ẏ, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("ashape", "bshape"), [((4, 2), (4,)), ((4, 2), (4, 3)), ((2, 4), (2,)), ((3, 3), (3, 2))]
)
def test_lstsq(ashape, bshape, dtype):
    both(
        np.linalg.lstsq,
        rand(*ashape, dtype=dtype),
        rand(*bshape, dtype=dtype),
        primal_and_tangent(None, NoTangent()),
    )


@pytest.mark.parametrize("f", [np.linalg.svdvals, np.linalg.pinv, np.linalg.qr])
def test_float32(f):
    both(f, rand(4, 3).astype(np.float32), tol=1e-2)
