"""Rules for scipy.linalg, checked against finite differences.

Functions that read one triangle of ``a`` -- ``cholesky``, ``cho_factor``,
``eigh``, ``eigvalsh``, ``solve``/``inv`` with ``assume_a`` 'sym'/'her'/'pos'
-- are differentiated exactly as functions of that triangle; here they are
also tested through ``g(x) = f(herm(x))`` (``f(sym(x))``), whose rules are the
registered ones composed by hand with that self-adjoint map (see
``test_rules_linalg_factor.py``), and on non-Hermitian input directly (here for
eigh, in ``test_rules_scipy_linalg_triangle.py`` for the others). Complex eigenvectors and singular vectors go
through gauge-invariant maps of the outputs. Integer pivots inside a tuple
argument (``lu_solve``'s ``(lu, piv)``) are passed to a wrapper as a keyword,
so that finite differences leave them alone.
"""

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")

import scipy.linalg as sl  # noqa: E402
from rules_testing import DTYPES, TOLERANCES, N, check, mH, random_maker  # noqa: E402

import rules  # noqa: E402, F401  (registers the rules)
from rules._linalg_util import LinalgGradientWarning  # noqa: E402
from rulescore import (  # noqa: E402
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)
from rulestest import test_frule, test_rrule  # noqa: E402

rand_ = random_maker(5)


def rand(*shape, dtype=np.float64):
    return rand_(*shape, dtype=dtype)


def _unitary(shape, dtype):
    q, _ = np.linalg.qr(rand(*shape, dtype=np.complex128 if np.dtype(dtype).kind == "c" else None))
    return q


def general(*shape, dtype=np.float64):
    """U diag(s) Vᴴ with singular values in [1, 2]: well conditioned, no structure."""
    n = shape[-1]
    u, v = _unitary(shape, dtype), _unitary(shape, dtype)
    return ((u * np.linspace(1.0, 2.0, n)) @ mH(v)).astype(dtype)


def hpd(*shape, dtype=np.float64):
    """Q diag(λ) Qᴴ with distinct eigenvalues λ in [1, 3]."""
    n = shape[-1]
    q = _unitary(shape, dtype)
    return ((q * np.linspace(1.0, 3.0, n)) @ mH(q)).astype(dtype)


def dominant(*shape, dtype=np.float64):
    """Random entries of size ~0.5 plus 2 on the diagonal: every triangle and band of it
    is well conditioned."""
    return (0.5 * rand(*shape, dtype=dtype) + 2 * np.eye(shape[-1])).astype(dtype)


def pivoted(*shape, dtype=np.float64):
    """Rows of a diagonally dominant matrix, shuffled: partial pivoting undoes the shuffle
    with clear margins (finite differences never switch pivots)."""
    m, n = shape[-2:]
    d = 0.3 * rand(*shape, dtype=dtype) + 2 * np.eye(m, n)
    return d[..., np.random.default_rng(m * n).permutation(m), :].astype(dtype)


def herm(x):
    return 0.5 * (x + mH(x))


def sym(x):
    return 0.5 * (x + np.swapaxes(x, -1, -2))


def composed(f, pre=None, post=None):
    """``g(x, *args, **kw) = post(f(pre(x), *args, **kw))`` with rules composed from f's.

    ``pre`` is a linear self-adjoint map of the first argument; ``post`` a
    ``(forward, pushforward, pullback)`` triple for a map of f's output.
    """
    pre = pre or (lambda x: x)

    def g(x, *args, **kw):
        y = f(pre(np.asarray(x)), *args, **kw)
        return y if post is None else post[0](y)

    @rrule.register(g)
    def _(x, *args, **kw):
        y, pb = rrule(f, pre(np.asarray(x)), *args, **kw)

        def g_pullback(z̄):
            z̄ = unthunk(z̄)
            if isinstance(z̄, AbstractZero):
                return (NoTangent(), z̄, *(z̄ for _ in args))
            cts = pb(z̄ if post is None else post[2](y, z̄))
            x̄ = cts[1] if isinstance(cts[1], AbstractZero) else pre(cts[1])
            return (NoTangent(), x̄, *cts[2:])

        return (y if post is None else post[0](y)), g_pullback

    @frule.register(g)
    def _(ḟ, *a, **kw):
        ẋs, xs = a[: len(a) // 2], a[len(a) // 2 :]
        y, ẏ = frule((ḟ, pre(np.asarray(ẋs[0])), *ẋs[1:]), f, pre(np.asarray(xs[0])), *xs[1:], **kw)
        return (y, ẏ) if post is None else (post[0](y), post[1](y, ẏ))

    g.__qualname__ = f"{f.__name__}∘pre"
    return g


def with_pair(f):
    """``g(first, *args, second, **kw) = f((first, second), *args, **kw)``: the second
    entry of f's pair argument (pivots) as a keyword, out of finite differences' way."""

    def g(first, *args, second, **kw):
        return f((first, second), *args, **kw)

    @rrule.register(g)
    def _(first, *args, second, **kw):
        y, pb = rrule(f, (first, second), *args, **kw)

        def g_pullback(z̄):
            cts = pb(z̄)
            p̄ = cts[1]
            if not isinstance(p̄, AbstractZero):
                assert p̄[1] is NoTangent()
                p̄ = p̄[0]
            return (NoTangent(), p̄, *cts[2:])

        return y, g_pullback

    @frule.register(g)
    def _(ḟ, *a, second, **kw):
        ẋs, xs = a[: len(a) // 2], a[len(a) // 2 :]
        return frule((ḟ, (ẋs[0], NoTangent()), *ẋs[1:]), f, (xs[0], second), *xs[1:], **kw)

    g.__qualname__ = f"{f.__name__}(pair)"
    return g


def tol(dtype):
    return TOLERANCES[np.dtype(dtype).type]


TRI_CASES = [
    ((3, 3), (3,), {}),
    ((3, 3), (3, 2), {"lower": True}),
    ((3, 3), (3, 2), {"trans": "T"}),
    ((3, 3), (3,), {"trans": 2, "lower": True}),
    ((3, 3), (3, 2), {"trans": 1, "unit_diagonal": True}),
    ((2, 3, 3), (3,), {"lower": True, "trans": "C"}),
    ((3, 3), (2, 3, 2), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("ashape", "bshape", "kw"), TRI_CASES)
def test_solve_triangular(ashape, bshape, kw, dtype):
    # Junk in the triangle scipy does not read: finite differences see no change there.
    a = dominant(*ashape, dtype=dtype)
    check(sl.solve_triangular, (a, rand(*bshape, dtype=dtype)), kw, dtype)


def test_solve_triangular_cotangent_on_read_entries_only():
    a, b = dominant(3, 3), rand(3)
    _, pb = rrule(sl.solve_triangular, a, b, lower=True, unit_diagonal=True)
    ā = pb(np.ones(3))[1]
    assert np.all(np.triu(ā) == 0) and np.any(ā != 0)


def test_solve_triangular_positional_options():
    a, b = dominant(3, 3), rand(3, 2)
    check(sl.solve_triangular, (a, b, N(1), N(True)), {}, np.float64)
    with pytest.raises(ValueError, match="trans"):
        rrule(sl.solve_triangular, a, b, trans="X")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky(shape, lower, dtype):
    check(composed(sl.cholesky, herm), (hpd(*shape, dtype=dtype),), {"lower": lower}, dtype)


def _factor_triangle(lower):
    """cho_factor's c restricted to the factor's triangle (the other one is scratch)."""

    def fwd(y):
        return np.tril(y[0]) if lower else np.triu(y[0])

    def push(y, ẏ):
        return fwd(ẏ)

    def back(y, z̄):
        return (fwd((np.asarray(z̄),)), NoTangent())

    return fwd, push, back


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor(shape, lower, dtype):
    g = composed(sl.cho_factor, herm, _factor_triangle(lower))
    check(g, (hpd(*shape, dtype=dtype),), {"lower": lower}, dtype)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_scratch_triangle(lower):
    a = hpd(3, 3, dtype=np.complex128)
    (c, low), pb = rrule(sl.cho_factor, a, lower=lower)
    c̄ = rand(3, 3, dtype=np.complex128)
    kept = np.tril(c̄) if lower else np.triu(c̄)
    ā = pb((c̄, NoTangent()))[1]
    np.testing.assert_allclose(ā, pb(Tangent[tuple](kept, NoTangent()))[1])
    np.testing.assert_array_equal(np.triu(ā, 1) if lower else np.tril(ā, -1), 0)  # a unread
    _, (ċ, l̇) = frule((None, rand(3, 3, dtype=np.complex128)), sl.cho_factor, a, lower=lower)
    assert l̇ is NoTangent()
    assert np.all((np.triu(ċ, 1) if lower else np.tril(ċ, -1)) == 0)
    assert pb(ZeroTangent())[1] == ZeroTangent()


def _cho_c(shape, dtype, lower):
    """A Cholesky factor with junk in the scratch triangle."""
    c, _ = sl.cho_factor(hpd(*shape, dtype=dtype), lower=lower)
    junk = rand(*shape, dtype=dtype)
    return np.tril(c) + np.triu(junk, 1) if lower else np.triu(c) + np.tril(junk, -1)


CHO_CASES = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((3, 3), (2, 3, 1))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("cshape", "bshape"), CHO_CASES)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve(cshape, bshape, lower, dtype):
    # Exact in c's triangle, complex diagonal included; zero on the scratch triangle.
    c = _cho_c(cshape, dtype, lower)
    check(sl.cho_solve, ((c, lower), rand(*bshape, dtype=dtype)), {}, dtype)


def test_cho_solve_cotangent_of_the_pair():
    c = _cho_c((3, 3), np.float64, True)
    _, pb = rrule(sl.cho_solve, (c, True), rand(3))
    _, (c̄, l̄), b̄ = pb(np.ones(3))
    assert l̄ is NoTangent() and np.all(np.triu(c̄, 1) == 0) and b̄.shape == (3,)


def test_cho_factor_then_solve_matches_solve():
    a, b = hpd(3, 3), rand(3)
    cf, pb_f = rrule(sl.cho_factor, a)
    x, pb_s = rrule(sl.cho_solve, cf, b)
    x̄ = rand(3)
    _, (c̄, _), b̄ = pb_s(x̄)
    ā = pb_f((c̄, NoTangent()))[1]
    _, pb = rrule(np.linalg.solve, a, b)
    _, ā_ref, b̄_ref = pb(x̄)
    np.testing.assert_allclose(b̄, b̄_ref)
    # cho_factor reads the upper triangle: ā is herm(ā_ref) read back onto it.
    h = herm(ā_ref)
    np.testing.assert_allclose(ā, 2 * np.triu(h, 1) + np.diag(np.diag(h)))


LU_SHAPES = [(3, 3), (4, 3), (3, 4), (2, 3, 3)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LU_SHAPES)
def test_lu_factor(shape, dtype):
    check(sl.lu_factor, (pivoted(*shape, dtype=dtype),), {}, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", LU_SHAPES)
@pytest.mark.parametrize("kw", [{}, {"permute_l": True}, {"p_indices": True}])
def test_lu(shape, kw, dtype):
    check(sl.lu, (pivoted(*shape, dtype=dtype),), kw, dtype)


lu_solve_p = with_pair(sl.lu_solve)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("ashape", "bshape", "trans"),
    [((3, 3), (3,), 0), ((3, 3), (3, 2), 1), ((3, 3), (3, 2), 2), ((2, 3, 3), (3,), 2)],
)
def test_lu_solve(ashape, bshape, trans, dtype):
    lu, piv = sl.lu_factor(pivoted(*ashape, dtype=dtype))
    check(lu_solve_p, (lu, rand(*bshape, dtype=dtype)), {"second": piv, "trans": trans}, dtype)


def test_lu_solve_piv_gets_no_tangent():
    lu, piv = sl.lu_factor(general(3, 3))
    _, pb = rrule(sl.lu_solve, (lu, piv), rand(3))
    (lū, p̄) = pb(np.ones(3))[1]
    assert p̄ is NoTangent() and lū.shape == (3, 3)


EXACT_ASSUME = [None, "gen", "banded", "diagonal", "tridiagonal", "upper triangular",
                "lower triangular"]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assume_a", EXACT_ASSUME)
def test_solve_structures_read_exactly(assume_a, dtype):
    a = dominant(4, 4, dtype=dtype)
    check(sl.solve, (a, rand(4, 2, dtype=dtype)), {"assume_a": assume_a}, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("pre", "assume_a"), [(sym, "sym"), (herm, "her"), (herm, "pos")])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_symmetric(pre, assume_a, lower, dtype):
    if assume_a == "sym" and dtype == np.complex128:
        a = sym(general(3, 3, dtype=dtype)) + 3 * np.eye(3)
    else:
        a = hpd(3, 3, dtype=dtype)
    kw = {"assume_a": assume_a, "lower": lower}
    check(composed(sl.solve, pre), (a, rand(3, 2, dtype=dtype)), kw, dtype)


@pytest.mark.parametrize(
    ("ashape", "bshape", "kw"),
    [
        ((2, 3, 3), (3,), {}),
        ((3, 3), (2, 3, 2), {}),
        ((3, 3), (3,), {"transposed": True}),
        ((3, 3), (3, 2), {"transposed": True, "assume_a": "upper triangular"}),
    ],
)
def test_solve_batched_and_transposed(ashape, bshape, kw):
    check(sl.solve, (dominant(*ashape), rand(*bshape)), kw, np.float64)


def test_solve_hermitian_cotangent():
    # assume_a='pos' reads the upper triangle (lower=False): ā is zero below it, and
    # its Hermitian part is the gradient within Hermitian matrices.
    a = hpd(3, 3, dtype=np.complex128)
    _, pb = rrule(sl.solve, a, rand(3, dtype=np.complex128), assume_a="pos")
    ā = pb(rand(3, dtype=np.complex128))[1]
    np.testing.assert_array_equal(np.tril(ā, -1), 0)
    np.testing.assert_array_equal(np.diagonal(ā).imag, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "assume_a"), [((3, 3), None), ((2, 3, 3), None), ((3, 3), "upper triangular")]
)
def test_inv(shape, assume_a, dtype):
    check(sl.inv, (dominant(*shape, dtype=dtype),), {"assume_a": assume_a}, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("pre", "assume_a"), [(sym, "sym"), (herm, "her"), (herm, "pos")])
def test_inv_symmetric(pre, assume_a, dtype):
    a = hpd(3, 3, dtype=dtype)
    check(composed(sl.inv, pre), (a,), {"assume_a": assume_a, "lower": True}, dtype)


def test_inv_diagonal_refused():
    with pytest.raises(NotImplementedError, match="assume_a='diagonal'"):
        rrule(sl.inv, np.eye(2), assume_a="diagonal")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3)])
def test_det(shape, dtype):
    check(sl.det, (general(*shape, dtype=dtype),), {}, dtype)


def test_det_singular():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    _, pb = rrule(sl.det, a)
    np.testing.assert_allclose(pb(1.0)[1], [[4.0, -2.0], [-2.0, 1.0]])


def _eigh_post():
    """(w, |V|², V diag(c) Vᴴ) for fixed weights c: invariant under the phases of V."""

    def fwd(y):
        w, v = y
        c = np.arange(1.0, w.shape[-1] + 1)
        return w, np.abs(v) ** 2, (v * c) @ mH(v)

    def push(y, ẏ):
        w, v = y
        ẇ, v̇ = ẏ
        c = np.arange(1.0, w.shape[-1] + 1)
        r = (v̇ * c) @ mH(v)
        return ẇ, 2 * np.real(np.conj(v) * v̇), r + mH(r)

    def back(y, z̄):
        w, v = y
        w̄, p̄, r̄ = (np.asarray(unthunk(e)) for e in z̄)
        c = np.arange(1.0, w.shape[-1] + 1)
        return w̄, 2 * p̄ * v + ((r̄ + mH(r̄)) @ v) * c

    return fwd, push, back


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
@pytest.mark.parametrize("lower", [False, True])
def test_eigh(shape, lower, dtype):
    # Signs (phases) of eigenvectors are a gauge, which scipy's default driver ('evr')
    # does not keep continuous: compare gauge-invariant maps of the output.
    check(
        composed(sl.eigh, herm, _eigh_post()), (hpd(*shape, dtype=dtype),), {"lower": lower}, dtype
    )


def test_eigh_real_vectors_directly():
    # The divide-and-conquer driver keeps real eigenvector signs continuous.
    check(composed(sl.eigh, herm), (hpd(2, 3, 3),), {"driver": "evd"}, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "kw",
    [
        {"eigvals_only": True},
        {"eigvals_only": True, "subset_by_index": [1, 2]},
        {"eigvals_only": True, "subset_by_value": [2.0, np.inf]},
        {"eigvals_only": True, "driver": "evd"},
    ],
)
def test_eigh_values_only(kw, dtype):
    if "subset_by_value" in kw and dtype == np.float32:
        pytest.skip("float32 finite-difference steps move eigenvalues across the bound")
    check(composed(sl.eigh, herm), (hpd(2, 4, 4, dtype=dtype),), kw, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigvalsh(dtype):
    a = hpd(4, 4, dtype=dtype)
    check(composed(sl.eigvalsh, herm), (a,), {"subset_by_index": [0, 1]}, dtype)
    check(composed(sl.eigvalsh, herm), (a,), {}, dtype)


def nonsym(*shape, dtype=np.float64):
    """``hpd`` plus small random off-diagonal entries (and an imaginary diagonal when
    complex): not Hermitian; each triangle's Hermitian completion keeps distinct
    eigenvalues."""
    n = shape[-1]
    x = 0.1 * rand(*shape, dtype=dtype) * (1 - np.eye(n))
    imag = 0.5j * np.eye(n) if np.dtype(dtype).kind == "c" else 0
    return (hpd(*shape, dtype=dtype) + x + imag).astype(dtype)


# scipy's eigh/eigvalsh read the triangle `lower` names and the real diagonal: on
# non-Hermitian input the other triangle (and the imaginary diagonal) get no derivative.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("lower", [False, True])
def test_eigh_reads_one_triangle(shape, lower, dtype):
    a = nonsym(*shape, dtype=dtype)
    check(composed(sl.eigh, None, _eigh_post()), (a,), {"lower": lower}, dtype)
    check(sl.eigvalsh, (a,), {"lower": lower}, dtype)
    check(sl.eigh, (a,), {"lower": lower, "eigvals_only": True, "subset_by_index": [1, 2]}, dtype)


@pytest.mark.parametrize("lower", [False, True])
def test_eigvalsh_reads_one_triangle_by_hand(lower):
    # Σ w² = ‖S‖²_F: 4·a on the read strict triangle, 2·Re a on the diagonal, 0 elsewhere.
    a = nonsym(4, 4, dtype=np.complex128)
    w, pb = rrule(sl.eigvalsh, a, lower=lower)
    strict = np.tril(a, -1) if lower else np.triu(a, 1)
    np.testing.assert_allclose(pb(2 * w)[1], 4 * strict + 2 * np.diag(a.diagonal().real))
    _, ẇ = frule((None, np.triu(a, 1) if lower else np.tril(a, -1)), sl.eigvalsh, a, lower=lower)
    np.testing.assert_allclose(ẇ, 0, atol=1e-14)


def test_eigh_refusals():
    a = hpd(3, 3)
    with pytest.raises(NotImplementedError, match="generalized"):
        rrule(sl.eigh, a, np.eye(3))
    with pytest.raises(NotImplementedError, match="subset_by_index"):
        frule((None, a), sl.eigh, a, subset_by_index=[0, 1])


def test_eigh_degenerate_values_only_no_warning():
    a = np.diag([1.0, 1.0, 2.0])
    (w, v), pb = rrule(sl.eigh, a)
    ā = pb((np.array([1.0, 2.0, 3.0]), ZeroTangent()))[1]
    np.testing.assert_allclose(ā, v @ np.diag([1.0, 2.0, 3.0]) @ v.T)
    with pytest.warns(LinalgGradientWarning):
        pb((np.zeros(3), np.ones((3, 3))))


def _svd_post():
    """(|U|², s, |Vh|², U diag(c) Vh): invariant under the phases of the singular vectors."""

    def fwd(y):
        u, s, vh = y
        c = np.arange(1.0, s.shape[-1] + 1)
        return np.abs(u) ** 2, s, np.abs(vh) ** 2, (u * c) @ vh

    def push(y, ẏ):
        u, s, vh = y
        u̇, ṡ, v̇h = ẏ
        c = np.arange(1.0, s.shape[-1] + 1)
        return (
            2 * np.real(np.conj(u) * u̇),
            ṡ,
            2 * np.real(np.conj(vh) * v̇h),
            (u̇ * c) @ vh + (u * c) @ v̇h,
        )

    def back(y, z̄):
        u, s, vh = y
        p̄u, s̄, p̄v, r̄ = (np.asarray(unthunk(e)) for e in z̄)
        c = np.arange(1.0, s.shape[-1] + 1)
        return 2 * p̄u * u + (r̄ @ mH(vh)) * c, s̄, 2 * p̄v * vh + c[:, None] * (mH(u) @ r̄)

    return fwd, push, back


SVD_SHAPES = [(3, 3), (4, 2), (2, 4), (2, 3, 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd(shape, dtype):
    # Signs (phases) of singular vectors are a gauge that LAPACK does not keep
    # continuous at float32 finite-difference steps: compare gauge-invariant maps.
    check(
        composed(sl.svd, None, _svd_post()),
        (rand(*shape, dtype=dtype),),
        {"full_matrices": False},
        dtype,
    )


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_svd_real_vectors_directly(shape):
    check(sl.svd, (rand(*shape),), {"full_matrices": False}, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_values_and_square_full(dtype):
    a = rand(3, 4, dtype=dtype)
    check(sl.svd, (a,), {"compute_uv": False}, dtype)
    check(sl.svdvals, (a,), {}, dtype)
    if dtype != np.complex128:
        check(sl.svd, (rand(3, 3, dtype=dtype),), {"lapack_driver": "gesvd"}, dtype)


def test_svd_full_matrices_refused():
    with pytest.raises(NotImplementedError, match="full_matrices"):
        rrule(sl.svd, rand(3, 2))


QR_CASES = [
    ((4, 3), {"mode": "economic"}),
    ((3, 3), {}),
    ((3, 4), {"mode": "full"}),
    ((4, 3), {"mode": "r"}),
    ((3, 4), {"mode": "r"}),
    ((4, 3), {"mode": "economic", "pivoting": True}),
    ((3, 4), {"mode": "r", "pivoting": True}),
    ((2, 4, 3), {"mode": "economic", "pivoting": True}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "kw"), QR_CASES)
def test_qr(shape, kw, dtype):
    # R's real diagonal fixes the gauge of complex Q: no wrapper needed.
    a = rand(*shape, dtype=dtype)
    if kw.get("pivoting"):  # column norms far apart: the pivot order is clear
        a = a * (3.0 ** np.arange(shape[-1])).astype(dtype)
    check(sl.qr, (a,), kw, dtype)


@pytest.mark.parametrize(("shape", "mode"), [((4, 3), "full"), ((3, 3), "raw")])
def test_qr_refusals(shape, mode):
    with pytest.raises(NotImplementedError, match=f"mode='{mode}'"):
        rrule(sl.qr, rand(*shape), mode=mode)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3)])
def test_expm(shape, dtype):
    check(sl.expm, (0.5 * rand(*shape, dtype=dtype),), {}, dtype)


def _positive_spectrum(*shape, dtype=np.float64):
    """S diag(λ) S⁻¹, λ in [1, 3], S near the identity: not normal, principal root real."""
    n = shape[-1]
    s = np.eye(n) + 0.3 * rand(*shape, dtype=dtype)
    return ((s * np.linspace(1.0, 3.0, n)) @ np.linalg.inv(s)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 3, 3)])
def test_sqrtm(shape, dtype):
    check(sl.sqrtm, (_positive_spectrum(*shape, dtype=dtype),), {}, dtype)


def test_sqrtm_refusals():
    with pytest.raises(ValueError, match="matrix"):
        rrule(sl.sqrtm, np.array([4.0]))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shapes", [((3, 3), (2, 2), (3, 2)), ((2, 3, 3), (2, 2), (3, 2))], ids=["2d", "batched"]
)
def test_solve_sylvester(shapes, dtype):
    (sa, sb, sq) = shapes
    a = _positive_spectrum(*sa, dtype=dtype)
    b = _positive_spectrum(*sb, dtype=dtype)
    check(sl.solve_sylvester, (a, b, rand(*sq, dtype=dtype)), {}, dtype)


def _banded(l, u, n, batch=(), dtype=np.float64):
    ab = rand(*batch, l + u + 1, n, dtype=dtype)
    ab[..., u, :] += 6  # diagonally dominant
    return ab


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("lu", "bshape", "batch"),
    [
        ((1, 1), (4,), ()),
        ((1, 2), (4, 2), ()),
        ((0, 0), (4,), ()),
        ((2, 0), (4,), (2,)),
        ((0, 1), (1,), ()),
    ],
)
def test_solve_banded(lu, bshape, batch, dtype):
    n = bshape[0]
    ab = _banded(*lu, n, batch, dtype)
    check(sl.solve_banded, (N(lu), ab, rand(*bshape, dtype=dtype)), {}, dtype)


def test_solve_banded_corners_get_zero():
    ab = _banded(1, 2, 4)
    _, pb = rrule(sl.solve_banded, (1, 2), ab, rand(4))
    l̄u, āb, _ = pb(np.ones(4))[1:]
    assert l̄u is NoTangent()
    assert āb[0, 0] == āb[0, 1] == āb[1, 0] == āb[3, 3] == 0
    assert np.count_nonzero(āb) == 4 + 3 + 3 + 2


@pytest.mark.parametrize("dtype", DTYPES)
def test_block_diag(dtype):
    check(
        sl.block_diag,
        (rand(2, 2, dtype=dtype), rand(3, dtype=dtype), rand(1, 2, dtype=dtype)),
        {},
        dtype,
    )


def test_block_diag_scalars_lists_batches():
    check(sl.block_diag, (2.0, [1.0, 3.0], rand(2, 1, 2)), {}, np.float64)
    _, pb = rrule(sl.block_diag, rand(2, 2), np.float32(1.0))
    ȳ = np.ones((3, 3))
    a̅, s̄ = pb(ȳ)[1:]
    assert a̅.shape == (2, 2) and isinstance(s̄, np.float32)
    assert rrule(sl.block_diag)[1](np.ones((1, 0))) == (NoTangent(),)
    y, ẏ = frule((None, ZeroTangent(), 1.0), sl.block_diag, rand(2, 2), 2.0)
    np.testing.assert_array_equal(ẏ, np.diag([0.0, 0.0, 1.0]))


@pytest.mark.parametrize(
    ("f", "args"),
    [
        (sl.expm, (np.eye(2),)),
        (sl.lu, (np.eye(2),)),
        (sl.cho_factor, (np.eye(2),)),
        (sl.solve, (np.eye(2), np.ones(2))),
        (sl.svd, (np.eye(2),)),
        (sl.qr, (np.eye(2),)),
    ],
)
def test_zero_tangents(f, args):
    _, pb = rrule(f, *args)
    assert all(isinstance(c, AbstractZero) for c in pb(ZeroTangent()))
    _, ẏ = frule((None, *(ZeroTangent() for _ in args)), f, *args)
    assert ẏ == ZeroTangent()


def test_positional_options_get_no_tangent():
    a = hpd(3, 3)
    test_rrule(composed(sl.cholesky, herm), a, N(True))
    test_rrule(sl.solve, general(3, 3), rand(3), N(False), N(False), N(False), N(True), N("gen"))
    test_rrule(sl.qr, rand(4, 3), N(False), N(None), N("economic"))
    test_rrule(sl.svd, rand(3, 2), N(False))
    test_frule(sl.svd, rand(3, 2), N(False), N(False))
    test_rrule(sl.det, general(3, 3), N(False))
    lu_, piv = sl.lu_factor(general(3, 3))
    test_rrule(lu_solve_p, lu_, rand(3), N(2), fkwargs={"second": piv})


def test_batched_cho_factor_flags_reach_cho_solve():
    a, b = hpd(2, 3, 3), rand(2, 3, 1)
    cf = sl.cho_factor(a, lower=True)  # a batch gives one lower flag per matrix
    x, pb = rrule(sl.cho_solve, cf, b)
    _, (c̄, _), b̄ = pb(np.ones_like(x))
    for k in range(2):
        _, (c̄k, _), b̄k = rrule(sl.cho_solve, (cf[0][k], True), b[k])[1](np.ones((3, 1)))
        np.testing.assert_allclose(c̄[k], c̄k)
        np.testing.assert_allclose(b̄[k], b̄k)


@pytest.mark.parametrize(
    ("f", "make", "kw"),
    [
        (sl.lu_factor, lambda: (np.asfortranarray(pivoted(3, 3)),), {"overwrite_a": True}),
        (sl.cho_factor, lambda: (np.asfortranarray(hpd(3, 3)),), {"overwrite_a": True}),
        (sl.cholesky, lambda: (np.asfortranarray(hpd(3, 3)),), {"overwrite_a": True}),
        (
            sl.solve,
            lambda: (np.asfortranarray(dominant(3, 3)), np.asfortranarray(rand(3, 2))),
            {"overwrite_a": True, "overwrite_b": True},
        ),
        (sl.svd, lambda: (np.asfortranarray(rand(3, 3)),), {"overwrite_a": True}),
    ],
)
def test_overwrite_flags_leave_inputs_alone(f, make, kw):
    args = make()
    before = [x.copy() for x in args]
    y, pb = rrule(f, *args, **kw)
    pb(y if not isinstance(y, tuple) else tuple(np.ones_like(e, dtype=float) for e in y))
    for x, x0 in zip(args, before):
        np.testing.assert_array_equal(x, x0)
