"""scipy functions that read one triangle of their input, differentiated exactly as
functions of that triangle (``_linalg_triangle``): ``cholesky``/``cho_factor``
(``lower``), ``solve``/``inv`` with ``assume_a`` 'her', 'pos' (and their long
names) and 'sym' (complex symmetric: the whole diagonal is read), and
``multivariate_normal``'s ``logpdf``/``pdf``/``entropy`` (scipy reads the lower
triangle of ``cov``). Inputs are not symmetric, so finite differences of scipy's
own function check the rules directly. Before the fix the rules differentiated
``f((a + aᴴ)/2)`` (``(a + aᵀ)/2`` for 'sym').
"""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")

import scipy.linalg as sl  # noqa: E402
import scipy.stats as st  # noqa: E402
from rules_testing import DTYPES, check, mH, random_maker  # noqa: E402
from test_rules_linalg_triangle import completion, ignored, junk, nonsym  # noqa: E402

import rules  # noqa: E402, F401  (registers the rules)
from rulescore import AbstractZero, NoTangent, frule, rrule, unthunk  # noqa: E402

rand = random_maker(23)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("lower", [False, True, "positional"])
def test_cholesky_reads_one_triangle(shape, dtype, lower):
    a = nonsym(*shape, dtype=dtype)
    if lower == "positional":
        check(sl.cholesky, (a, True), {}, dtype)
    else:
        check(sl.cholesky, (a,), {"lower": lower}, dtype)


def cho_factor_read(a, *, lower=False):
    """The factor's triangle of ``cho_factor(a)[0]`` (the other one is scratch)."""
    c, _ = sl.cho_factor(a, lower=lower)
    return np.tril(c) if lower else np.triu(c)


@rrule.register(cho_factor_read)
def _(a, *, lower=False):
    (c, _), pb = rrule(sl.cho_factor, a, lower=lower)
    tri = np.tril if lower else np.triu

    def cho_factor_read_pullback(z̄):
        z̄ = unthunk(z̄)
        if isinstance(z̄, AbstractZero):
            return NoTangent(), z̄
        return NoTangent(), pb((tri(np.asarray(z̄)), NoTangent()))[1]

    return tri(c), cho_factor_read_pullback


@frule.register(cho_factor_read)
def _(ḟ, ȧ, a, *, lower=False):
    (c, _), ṫ = frule((ḟ, ȧ), sl.cho_factor, a, lower=lower)
    tri = np.tril if lower else np.triu
    return tri(c), ṫ if isinstance(ṫ, AbstractZero) else tri(ṫ[0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_reads_one_triangle(shape, dtype, lower):
    check(cho_factor_read, (nonsym(*shape, dtype=dtype),), {"lower": lower}, dtype)


@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_hand_derived(lower):
    # log det S = 2 Σ log Lᵢᵢ: 2 S⁻¹ on the read strict triangle, Re diag S⁻¹, 0 elsewhere.
    a = nonsym(4, 4, dtype=np.complex128)
    sinv = np.linalg.inv(completion(a, lower))
    want = 2 * (np.tril(sinv, -1) if lower else np.triu(sinv, 1)) + np.diag(sinv.diagonal().real)
    for f in (sl.cholesky, sl.cho_factor):
        y, pb = rrule(f, a, lower=lower)
        c = y[0] if f is sl.cho_factor else y
        d̄ = np.diag(2 / np.diagonal(c).real).astype(c.dtype)
        ā = pb((d̄, NoTangent()) if f is sl.cho_factor else d̄)[1]
        np.testing.assert_allclose(ā, want, rtol=1e-12, atol=1e-14)
        for ȧ in ignored(4, lower, np.complex128):
            _, ẏ = frule((None, ȧ), f, a, lower=lower)
            np.testing.assert_allclose(ẏ[0] if f is sl.cho_factor else ẏ, 0, atol=1e-14)


def sym_nonsym(*shape, dtype):
    """For 'sym': complex symmetric, well conditioned from either triangle, plus junk."""
    n = shape[-1]
    base = 0.3 * rand(*shape, dtype=dtype)
    base = base + np.swapaxes(base, -1, -2) + 3 * np.eye(n)
    return (base + junk(*shape, dtype=dtype, diagonal=False)).astype(dtype)


ASSUME = ["her", "pos", "sym", "hermitian", "positive definite", "symmetric"]


def _input(assume_a, shape, dtype):
    return sym_nonsym(*shape, dtype=dtype) if "sym" in assume_a else nonsym(*shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assume_a", ASSUME)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize(
    ("ashape", "bshape"), [((3, 3), (3, 2)), ((3, 3), (3,)), ((2, 4, 4), (2, 4, 1))]
)
def test_solve_reads_one_triangle(ashape, bshape, lower, assume_a, dtype):
    a, b = _input(assume_a, ashape, dtype), rand(*bshape, dtype=dtype)
    check(sl.solve, (a, b), {"assume_a": assume_a, "lower": lower}, dtype)


def test_solve_lower_positional_and_transposed():
    a, b = nonsym(3, 3), rand(3, 2)
    check(sl.solve, (a, b, True), {"assume_a": "pos"}, np.float64)
    check(sl.solve, (a, b), {"assume_a": "sym", "transposed": True}, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assume_a", ["her", "pos", "sym"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_inv_reads_one_triangle(shape, lower, assume_a, dtype):
    check(sl.inv, (_input(assume_a, shape, dtype),), {"assume_a": assume_a, "lower": lower}, dtype)


@pytest.mark.parametrize("lower", [False, True])
def test_solve_and_inv_hand_derived(lower):
    # bᴴ S⁻¹ b (S Hermitian, b real) has ∂/∂S = -x xᴴ with x = S⁻¹ b, read back onto
    # the triangle; 'sym' (S = T + Tᵀ + diag a): Σ S⁻¹ b = 1ᵀ x, ∂/∂S = -(S⁻ᵀ 1) xᵀ, mapped
    # by (g + gᵀ) ∘ W (the whole diagonal). tr S⁻¹: -S⁻² read back likewise.
    a, b = nonsym(4, 4, dtype=np.complex128), rand(4)
    s = completion(a, lower)
    x, pb = rrule(sl.solve, a, b, assume_a="her", lower=lower)
    np.testing.assert_allclose(x, np.linalg.solve(s, b), rtol=1e-12)

    def read_back(g, conj=True):
        g = g + (mH(g) if conj else g.T)
        tri = np.tril(g, -1) if lower else np.triu(g, 1)
        return tri + np.diag(g.diagonal().real / 2 if conj else g.diagonal() / 2)

    np.testing.assert_allclose(pb(b)[1], read_back(-np.outer(x, x.conj())), atol=1e-13)
    y, pb = rrule(sl.inv, a, assume_a="pos", lower=lower)
    np.testing.assert_allclose(pb(np.eye(4))[1], read_back(-mH(y @ y)), atol=1e-13)
    for ȧ in ignored(4, lower, np.complex128):
        np.testing.assert_allclose(frule((None, ȧ), sl.inv, a, assume_a="her", lower=lower)[1], 0)

    c = sym_nonsym(4, 4, dtype=np.complex128)
    t = np.tril(c, -1) if lower else np.triu(c, 1)
    s = t + t.T + np.diag(c.diagonal())
    x, pb = rrule(sl.solve, c, b, assume_a="sym", lower=lower)
    ones = np.linalg.solve(s.T, np.ones(4))
    want = read_back(-np.outer(ones.conj(), x.conj()), conj=False)
    np.testing.assert_allclose(pb(np.ones(4))[1], want, atol=1e-13)
    other = ignored(4, lower, np.float64)[0]
    np.testing.assert_allclose(frule((None, other), sl.inv, c, assume_a="sym", lower=lower)[1], 0)


# multivariate_normal: scipy reads the lower triangle of cov (eigh(cov, lower=True)).
def _cov(n=3):
    return nonsym(n, n)


@pytest.mark.parametrize("kind", ["logpdf", "pdf"])
@pytest.mark.parametrize("xshape", [(3,), (4, 3)])
def test_multivariate_normal_reads_the_lower_triangle(kind, xshape):
    f = getattr(st.multivariate_normal, kind)
    check(f, (rand(*xshape), rand(3), _cov()), {}, np.float64)


def test_multivariate_normal_entropy_reads_the_lower_triangle():
    cov = _cov(4)
    check(st.multivariate_normal.entropy, (None, cov), {}, np.float64)
    # H = ½ log det(2πe Σ): Σ⁻¹ below the diagonal, Σ⁻¹/2 on it, 0 above.
    _, pb = rrule(st.multivariate_normal.entropy, None, cov)
    sinv = np.linalg.inv(completion(cov, True))
    np.testing.assert_allclose(
        unthunk(pb(1.0)[2]), np.tril(sinv, -1) + np.diag(sinv.diagonal()) / 2
    )
    _, ẏ = frule(
        (None, None, np.triu(np.ones((4, 4)), 1)), st.multivariate_normal.entropy, None, cov
    )
    assert ẏ == 0


def test_multivariate_normal_gradient_in_x_uses_the_lower_triangle():
    # u = Σ⁻¹ (x - mean) with Σ from the lower triangle: ∂ logpdf/∂x = -u.
    cov, x = _cov(), rand(3)
    _, pb = rrule(st.multivariate_normal.logpdf, x, np.zeros(3), cov)
    np.testing.assert_allclose(unthunk(pb(1.0)[1]), -np.linalg.solve(completion(cov, True), x))


def test_float32_cotangents_stay_float32():
    a = nonsym(3, 3).astype(np.float32)
    for f, kw in [(sl.cholesky, {}), (sl.inv, {"assume_a": "pos"})]:
        y, pb = rrule(f, a, **kw)
        ā = pb(np.ones_like(y))[1]
        assert ā.dtype == np.float32
        np.testing.assert_array_equal(np.tril(ā, -1), 0)  # lower=False reads the upper one
