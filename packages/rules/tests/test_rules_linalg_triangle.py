"""numpy functions that read one triangle of their input (``cholesky``,
``svd``/``pinv`` with ``hermitian=True``; ``eigh`` in test_rules_linalg_factor),
differentiated exactly as functions of that triangle (``_linalg_triangle``).

The inputs are not symmetric: Hermitian positive definite plus entries LAPACK
never reads (and an imaginary diagonal when complex), so finite differences of
numpy's own function check the rules directly, with zero derivative along the
ignored entries. Before the fix the rules differentiated ``f((a + aᴴ)/2)``.
"""

import numpy as np
import pytest
from rules_testing import DTYPES, check, mH, random_maker

import rules  # noqa: F401  (registers the rules)
from rules._linalg_triangle import triangle_cotangent, triangle_hermitian
from rulescore import frule, rrule

rand = random_maker(17)


def hpd(*shape, dtype=np.float64):
    """Q diag(λ) Qᴴ with distinct eigenvalues λ in [2, 4]."""
    n = shape[-1]
    q, _ = np.linalg.qr(rand(*shape, dtype=np.complex128 if np.dtype(dtype).kind == "c" else None))
    return (q * np.linspace(2.0, 4.0, n)) @ mH(q)


def junk(*shape, dtype=np.float64, diagonal=True):
    """Small entries off the diagonal (both triangles differ) and, when complex, an
    imaginary diagonal (``diagonal``): what a Hermitian reader ignores."""
    n = shape[-1]
    x = 0.2 * rand(*shape, dtype=dtype) * (1 - np.eye(n))
    if np.dtype(dtype).kind == "c" and diagonal:
        x = x + 0.5j * np.eye(n)
    return x


def nonsym(*shape, dtype=np.float64):
    """Not Hermitian; the Hermitian completion of either triangle is positive definite
    with distinct eigenvalues."""
    return (hpd(*shape, dtype=dtype) + junk(*shape, dtype=dtype)).astype(dtype)


def completion(a, lower):
    """The Hermitian matrix LAPACK reads from the triangle ``lower`` names, by hand."""
    t = np.tril(a, -1) if lower else np.triu(a, 1)
    return t + mH(t) + np.diag(np.diagonal(a).real)


def ignored(n, lower, dtype):
    """Directions a reader of the triangle ``lower`` names never sees."""
    other = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    return [other.astype(dtype)] + ([1j * np.eye(n)] if np.dtype(dtype).kind == "c" else [])


SHAPES = [(2, 2), (3, 3), (2, 4, 4)]


def test_triangle_maps_are_adjoint():
    for dtype, conj in [(np.float64, True), (np.complex128, True), (np.complex128, False)]:
        for lower in (False, True):
            x, g = rand(2, 4, 4, dtype=dtype), rand(2, 4, 4, dtype=dtype)
            lhs = np.sum(np.conj(g) * triangle_hermitian(x, lower, np.float64, conj)).real
            rhs = np.sum(np.conj(triangle_cotangent(g, lower, np.float64, conj)) * x).real
            np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    a = rand(3, 3, dtype=np.complex128)
    np.testing.assert_allclose(triangle_hermitian(a, True, np.float64), completion(a, True))
    np.testing.assert_allclose(triangle_hermitian(a, False, np.float64), completion(a, False))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle(shape, dtype, upper):
    check(np.linalg.cholesky, (nonsym(*shape, dtype=dtype),), {"upper": upper}, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_hand_derived(dtype, upper):
    # 2x2, lower: L₁₀ = a₁₀/√a₀₀, so ∂L₁₀/∂a = [[-a₁₀/(2 a₀₀^{3/2}), 0], [1/√a₀₀, 0]]
    # (upper: U₀₁ = a₀₁/√a₀₀, the transpose); log det S = 2 Σ log Lᵢᵢ has the gradient
    # 2 S⁻¹ on the read strict triangle, Re diag S⁻¹ on the diagonal, 0 elsewhere.
    a = nonsym(2, 2, dtype=dtype)
    lower = not upper
    y, pb = rrule(np.linalg.cholesky, a, upper=upper)
    seed = np.zeros((2, 2))
    seed[(1, 0) if lower else (0, 1)] = 1.0
    off = a[1, 0] if lower else a[0, 1]
    a00 = a[0, 0].real
    # (a₀₀ is read as real: its cotangent is the real part.)
    want = np.array([[-off.real / (2 * a00**1.5), 0], [1 / np.sqrt(a00), 0]])
    np.testing.assert_allclose(pb(seed)[1], want if lower else want.T, atol=1e-14)
    a = nonsym(4, 4, dtype=dtype)
    y, pb = rrule(np.linalg.cholesky, a, upper=upper)
    d̄ = np.diag(2 / np.diagonal(y).real).astype(y.dtype)
    sinv = np.linalg.inv(completion(a, lower))
    strict = np.tril(sinv, -1) if lower else np.triu(sinv, 1)
    want = 2 * strict + np.diag(np.diagonal(sinv).real)
    np.testing.assert_allclose(pb(d̄)[1], want, rtol=1e-12, atol=1e-14)
    for ȧ in ignored(4, lower, dtype):
        _, ẏ = frule((None, ȧ), np.linalg.cholesky, a, upper=upper)
        np.testing.assert_allclose(ẏ, 0, atol=1e-14)


def test_cholesky_float32_stays_float32_and_zero_off_the_triangle():
    a = nonsym(3, 3).astype(np.float32)
    for upper in (False, True):
        _, pb = rrule(np.linalg.cholesky, a, upper=upper)
        ā = pb(np.ones((3, 3), dtype=np.float32))[1]
        assert ā.dtype == np.float32
        np.testing.assert_array_equal(np.tril(ā, -1) if upper else np.triu(ā, 1), 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("positional", [False, True])
def test_svd_hermitian_values_read_the_lower_triangle(shape, dtype, positional):
    # numpy's hermitian path is eigh(a) (UPLO='L'), abs and sort.
    a = nonsym(*shape, dtype=dtype)
    if positional:
        check(np.linalg.svd, (a, False, False, True), {}, dtype)
    else:
        check(np.linalg.svd, (a,), {"hermitian": True, "compute_uv": False}, dtype)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_svd_hermitian_vectors_read_the_lower_triangle(shape):
    # Real singular vectors are unique up to sign, which finite differences follow.
    check(np.linalg.svd, (nonsym(*shape),), {"hermitian": True}, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pinv_hermitian_reads_the_lower_triangle(shape, dtype):
    check(np.linalg.pinv, (nonsym(*shape, dtype=dtype),), {"hermitian": True}, dtype)


def test_pinv_hermitian_positional_and_hand_derived():
    # On an invertible S, pinv = inv: ∇ tr(S⁻¹) = -S⁻² read back onto the lower triangle
    # (2× below the diagonal, the real diagonal once, 0 above).
    a = nonsym(3, 3, dtype=np.complex128)
    check(np.linalg.pinv, (a, 1e-15, True), {}, np.complex128)
    x, pb = rrule(np.linalg.pinv, a, hermitian=True)
    s = completion(a, True)
    np.testing.assert_allclose(x, np.linalg.inv(s), rtol=1e-12)
    g = -mH(np.linalg.inv(s) @ np.linalg.inv(s))
    want = 2 * np.tril(g, -1) + np.diag(np.diagonal(g).real)
    np.testing.assert_allclose(pb(np.eye(3))[1], want, rtol=1e-10, atol=1e-14)
    for f, kw in [(np.linalg.pinv, {}), (np.linalg.svd, {"compute_uv": False})]:
        for ȧ in ignored(3, True, np.complex128):
            _, ẏ = frule((None, ȧ), f, a, hermitian=True, **kw)
            np.testing.assert_allclose(ẏ, 0, atol=1e-13)
