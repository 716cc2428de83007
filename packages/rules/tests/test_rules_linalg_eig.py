"""Rules for numpy.linalg.eig and eigvals, checked against finite differences.

numpy normalises each eigenvector to unit norm with its largest entry real, and
the rules differentiate exactly that, so ``eig`` is checked directly with random
output cotangents (not gauge-invariant). It is also checked through
``eig_invariant(a) = (w, |V|², V diag(exp w) V⁻¹)``, gauge-invariant functions
whose rules are eig's composed by hand with those maps: the part of the
derivative every convention must agree on.
"""

import warnings

import numpy as np
import pytest
from rules_testing import random_maker

import rules  # noqa: F401  (registers the rules)
from rules._linalg_eig import _paired_vectors
from rules._linalg_util import LinalgGradientWarning
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk
from rulestest import test_frule, test_rrule

rand = random_maker(5)
DTYPES = [np.float64, np.float32, np.complex128]
SHAPES = [(1, 1), (3, 3), (2, 4, 4)]
TOL = {np.float64: 1e-7, np.float32: 2e-2, np.complex128: 1e-7}


def matrix(*shape, dtype=np.float64, real_spectrum=False):
    """Random square matrices with well-separated eigenvalues (complex ones for a real
    ``a`` unless ``real_spectrum``: then a triangular matrix plus a small perturbation)."""
    n = shape[-1]
    spread = np.diag(np.arange(n) * 1.5)
    x = rand(*shape, dtype=dtype)
    if real_spectrum:
        x = np.triu(x, 1) + 0.05 * x + np.diag(np.arange(n) * 2.0 + 1.0)
    else:
        x = x + 0.5 * spread
    return x.astype(dtype)


def _both(f, a, dtype, **kw):
    tol = TOL[dtype]
    test_rrule(f, a, rtol=tol, atol=tol, **kw)
    test_frule(f, a, rtol=tol, atol=tol, **kw)


@pytest.mark.parametrize("f", [np.linalg.eig, np.linalg.eigvals], ids=["eig", "eigvals"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_eig(f, shape, dtype):
    _both(f, matrix(*shape, dtype=dtype), dtype)


@pytest.mark.parametrize("f", [np.linalg.eig, np.linalg.eigvals], ids=["eig", "eigvals"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_eig_float32(f, shape):
    # numpy lists eigenvalues in the order LAPACK finds them, which float32 finite
    # differences' larger steps can permute; so the float32 rules are checked against
    # the float64 ones (checked above), and against finite differences at 1x1.
    a = matrix(*shape, dtype=np.float32, real_spectrum=True)
    _, pb32 = rrule(f, a)
    _, pb64 = rrule(f, a.astype(np.float64))
    w̄ = rand(*shape[:-1])
    ȳ64 = (w̄, rand(*shape)) if f is np.linalg.eig else w̄
    ȳ32 = tuple(t.astype(np.float32) for t in ȳ64) if f is np.linalg.eig else w̄.astype(np.float32)
    ā32 = pb32(ȳ32)[1]
    assert ā32.dtype == np.float32
    np.testing.assert_allclose(ā32, pb64(ȳ64)[1], rtol=1e-3, atol=1e-3)
    ȧ = rand(*shape)
    ẏ32 = frule((NoTangent(), ȧ.astype(np.float32)), f, a)[1]
    ẏ64 = frule((NoTangent(), ȧ), f, a.astype(np.float64))[1]
    pairs = [(ẏ32, ẏ64)] if f is np.linalg.eigvals else list(zip(ẏ32, ẏ64))
    for t32, t64 in pairs:
        assert t32.dtype == np.float32
        np.testing.assert_allclose(t32, t64, rtol=1e-3, atol=1e-3)
    if shape == (1, 1):
        _both(f, a, np.float32)


@pytest.mark.parametrize("f", [np.linalg.eig, np.linalg.eigvals], ids=["eig", "eigvals"])
def test_real_input_real_and_complex_spectra(f):
    real = matrix(4, 4, real_spectrum=True)
    assert np.linalg.eigvals(real).dtype == np.float64  # numpy returns real outputs
    _both(f, real, np.float64)
    rotation = np.array([[0.2, -1.0, 0.3], [1.0, 0.1, 0.2], [0.0, 0.4, 2.0]])
    assert np.linalg.eigvals(rotation).dtype == np.complex128  # a conjugate pair
    _both(f, rotation, np.float64)
    _, pb = rrule(f, rotation)
    assert pb(f(rotation))[1].dtype == np.float64  # a real matrix: a real cotangent


def test_eig_of_integers_and_lists():
    _both(np.linalg.eig, [[2.0, 1.0], [0.5, 3.0]], np.float64)
    _, pb = rrule(np.linalg.eigvals, np.array([[2, 1], [0, 3]]))
    assert pb(np.ones(2))[1].dtype == np.float64


# --- gauge-invariant functions of the eigenvectors ------------------------------------------


def eig_invariant(a):
    w, v = np.linalg.eig(a)
    return w, np.abs(v) ** 2, (v * np.exp(w)[..., None, :]) @ np.linalg.inv(v)


@rrule.register(eig_invariant)
def _(a):
    (w, v), pb = rrule(np.linalg.eig, a)
    vinv = np.linalg.inv(v)
    e = np.exp(w)
    m = (v * e[..., None, :]) @ vinv

    def eig_invariant_pullback(z̄):
        z̄ = unthunk(z̄)
        if isinstance(z̄, AbstractZero):
            return NoTangent(), z̄
        w̄, p̄, r̄ = (np.asarray(unthunk(t)) for t in z̄)
        # m = V D V⁻¹: V̄ = R̄ V⁻ᴴ Dᴴ - mᴴ R̄ V⁻ᴴ, D̄ = diag(Vᴴ R̄ V⁻ᴴ), D = diag(exp w).
        r_vinvh = r̄ @ vinv.conj().swapaxes(-1, -2)
        v̄ = 2 * p̄ * v + r_vinvh * e.conj()[..., None, :] - m.conj().swapaxes(-1, -2) @ r_vinvh
        d̄ = np.einsum("...ji,...ji->...i", v.conj(), r_vinvh)
        return NoTangent(), pb((w̄ + d̄ * e.conj(), v̄))[1]

    return eig_invariant(a), eig_invariant_pullback


@frule.register(eig_invariant)
def _(ḟ, ȧ, a):
    (w, v), ẏ = frule((ḟ, ȧ), np.linalg.eig, a)
    ẇ, v̇ = ẏ.eigenvalues, ẏ.eigenvectors
    vinv = np.linalg.inv(v)
    e = np.exp(w)
    m = (v * e[..., None, :]) @ vinv
    ṁ = (v̇ * e[..., None, :]) @ vinv + (v * (e * ẇ)[..., None, :]) @ vinv - m @ v̇ @ vinv
    return eig_invariant(a), (ẇ, 2 * np.real(np.conj(v) * v̇), ṁ)


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_gauge_invariant_functions(shape, dtype):
    _both(eig_invariant, matrix(*shape, dtype=dtype), dtype)


def test_vectors_have_unit_norm_tangents():
    a = matrix(3, 3, dtype=np.complex128)
    (w, v), ẏ = frule((NoTangent(), rand(3, 3, dtype=np.complex128)), np.linalg.eig, a)
    v̇ = ẏ.eigenvectors
    np.testing.assert_allclose(np.real(np.sum(v.conj() * v̇, axis=0)), 0, atol=1e-12)
    k = np.argmax(np.abs(v), axis=0)  # numpy's largest entries are real, and stay real
    np.testing.assert_allclose(v.imag[k, range(3)], 0, atol=1e-15)
    np.testing.assert_allclose(v̇.imag[k, range(3)], 0, atol=1e-12)


# --- structured and zero cotangents, degenerate and defective spectra -----------------------


def test_cotangent_forms():
    a = matrix(3, 3)
    res, pb = rrule(np.linalg.eig, a)
    w̄ = np.ones(3, dtype=res.eigenvalues.dtype)
    expected = pb((w̄, ZeroTangent()))[1]
    np.testing.assert_allclose(pb(Tangent[type(res)](eigenvalues=w̄))[1], expected)
    np.testing.assert_allclose(pb([w̄, ZeroTangent()])[1], expected)
    np.testing.assert_allclose(expected, np.eye(3), atol=1e-12)  # d(Σ w) = d tr(a)
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent())
    assert pb((ZeroTangent(), ZeroTangent()))[1] is ZeroTangent()
    assert frule((NoTangent(), ZeroTangent()), np.linalg.eig, a)[1] is ZeroTangent()


def test_repeated_eigenvalues():
    a = np.diag([1.0, 1.0, 2.0])
    _, pb = rrule(np.linalg.eigvals, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # values only: nothing diverges, no warning
        np.testing.assert_allclose(pb(np.array([1.0, 2.0, 3.0]))[1], np.diag([1.0, 2.0, 3.0]))
    (_, v), pb = rrule(np.linalg.eig, a)
    with pytest.warns(LinalgGradientWarning, match="equal eigenvalues"):
        pb((ZeroTangent(), np.ones_like(v)))


def test_eigvals_pairs_values_with_their_vectors():
    a = matrix(2, 4, 4, dtype=np.complex128)
    w, v = np.linalg.eig(a)
    order = np.array([[2, 0, 3, 1], [3, 2, 1, 0]])
    shuffled = np.take_along_axis(w, order, axis=-1)
    np.testing.assert_array_equal(
        _paired_vectors(a, shuffled), np.take_along_axis(v, order[:, None, :], axis=-1)
    )


def test_defective_matrix_has_no_eigenvalue_derivative():
    a = np.array([[1.0, 1.0], [0.0, 1.0]])  # a Jordan block: dw/da is unbounded
    _, pb = rrule(np.linalg.eigvals, a)
    np.testing.assert_allclose(pb(np.ones(2))[1], np.eye(2))  # but d(Σ w) = d tr(a)
    assert np.max(np.abs(pb(np.array([1.0, 0.0]))[1])) > 1e10
