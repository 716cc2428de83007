"""Tests of the rules for numpy's polynomial functions (``rules._numpy_polynomials``,
``rules._numpy_polyfit``): finite differences through ``test_rrule``/``test_frule``
in float64, float32 and complex128, plus the edge cases the module documents."""

from __future__ import annotations

import numpy as np
import pytest
from rules_testing import DTYPES, TOLERANCES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

REAL = [np.float64, np.float32]
dtype_ids = lambda d: np.dtype(d).name  # noqa: E731


def loose(dtype):
    """Tolerances for the nonlinear functions (float32 loses more digits in solves)."""
    return {"rtol": 2e-2, "atol": 2e-3} if dtype is np.float32 else TOLERANCES[dtype]


def nonlinear(f, args, kw, dtype):
    test_rrule(f, *args, fkwargs=kw, **loose(dtype))
    test_frule(f, *args, fkwargs=kw, **loose(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("f", [np.polyadd, np.polysub], ids=lambda f: f.__name__)
@pytest.mark.parametrize(("n1", "n2"), [(3, 3), (2, 4), (5, 1), (0, 3)])
def test_polyadd_polysub(f, n1, n2, dtype):
    m = maker(dtype)
    a1 = m(n1) if n1 else m()  # 0: a scalar (0-d) polynomial
    check(f, (a1, m(n2)), {}, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(("n1", "n2"), [(3, 2), (1, 4), (4, 4)])
def test_polymul(n1, n2, dtype):
    m = maker(dtype)
    check(np.polymul, (m(n1), m(n2)), {}, dtype)


def test_polymul_leading_zeros_get_zero():
    a1, a2 = np.array([0.0, 0.0, 2.0, 1.0]), np.array([1.0, 3.0])
    y, pb = rrule(np.polymul, a1, a2)
    assert y.shape == (3,)  # numpy strips the leading zeros
    d1, d2 = pb(np.ones(3))[1:]
    np.testing.assert_allclose(d1, [0, 0, 4, 4])  # Σ_i ȳ_{i+j} a2_i on the kept part
    np.testing.assert_allclose(d2, [3, 3])
    _, ẏ = frule((NoTangent(), np.ones(4), np.zeros(2)), np.polymul, a1, a2)
    np.testing.assert_allclose(ẏ, np.convolve([1.0, 1.0], a2))


def divisible(dtype, nu, nv):
    m = maker(dtype)
    u, v = m(nu), m(nv)
    v[0] = v[0] + (2 if np.real(v[0]) >= 0 else -2)  # a leading coefficient away from 0
    return u, v


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=dtype_ids)
@pytest.mark.parametrize(("nu", "nv"), [(5, 3), (4, 4), (3, 1), (2, 4)])
def test_polydiv(nu, nv, dtype):
    nonlinear(np.polydiv, divisible(dtype, nu, nv), {}, dtype)


def test_polydiv_float32():
    """numpy trims the remainder's leading entries below 1e-8, which float32 rounding
    noise crosses at the steps of finite differences: check against float64 instead."""
    u, v = divisible(np.float32, 5, 3)
    (q, r), pb = rrule(np.polydiv, u, v)
    q̄, r̄ = np.ones(q.shape, np.float32), np.ones(r.shape, np.float32)
    du, dv = pb(Tangent[tuple](q̄, r̄))[1:]
    assert du.dtype == dv.dtype == np.float32
    du64, dv64 = rrule(np.polydiv, u + 0.0, v + 0.0)[1]((q̄ + 0.0, r̄ + 0.0))[1:]
    np.testing.assert_allclose(du, du64, rtol=1e-5)
    np.testing.assert_allclose(dv, dv64, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(("n", "m_"), [(5, 1), (5, 2), (4, 0), (3, 3), (2, 4)])
def test_polyder(n, m_, dtype):
    p = maker(dtype)(n)
    check(np.polyder, (p, N(m_)), {}, dtype)
    check(np.polyder, (p,), {"m": m_}, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("m_", "kshape"), [(1, None), (2, None), (1, ()), (3, (3,)), (2, ()), (2, (1,)), (1, (3,))]
)
def test_polyint(m_, kshape, dtype):
    mk = maker(dtype)
    p = mk(4)
    if kshape is None:
        check(np.polyint, (p, N(m_)), {}, dtype)
        check(np.polyint, (p,), {"m": m_}, dtype)
    else:
        k = mk(*kshape)
        check(np.polyint, (p, N(m_), k), {}, dtype)


def test_polyint_keyword_k_is_a_constant():
    _, pb = rrule(np.polyint, np.array([3.0, 2.0]), 2, k=[1.0, 5.0])
    assert len(pb(np.ones(4))) == 3  # f, p, m: k by keyword gets nothing


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("n", [1, 3, 5])
def test_poly_of_roots(n, dtype):
    check(np.poly, (maker(dtype)(n),), {}, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
def test_poly_of_a_matrix(dtype):
    a = maker(dtype)(3, 3)
    if np.dtype(dtype).kind == "c":
        a = a + np.diag([0.5, 1.0, 2.0])  # eigenvalues not in conjugate pairs
    nonlinear(np.poly, (a,), {}, dtype)


def test_poly_at_repeated_roots_and_eigenvalues():
    z = np.array([1.0, 1.0, 2.0])
    test_rrule(np.poly, z)
    test_frule(np.poly, z)
    test_rrule(np.poly, np.eye(3) * 2.0)  # a triple eigenvalue: eigvals has no derivative
    test_frule(np.poly, np.eye(3) * 2.0)


def test_poly_of_conjugate_pairs_is_the_real_part():
    z = np.array([1 + 2j, 1 - 2j, 0.5 + 0j])
    y, pb = rrule(np.poly, z)
    assert y.dtype == np.float64
    ż = np.array([0.1 + 0.3j, -0.2j, 0.4])
    _, ẏ = frule((NoTangent(), ż), np.poly, z)
    h = 1e-7
    holo = (np.poly(np.array(list(z + h * ż) + [7.0])) - np.poly(np.array(list(z) + [7.0]))) / h
    # the derivative of the real part of the (holomorphic) coefficients
    np.testing.assert_allclose(np.convolve(ẏ, [1.0, -7.0]), np.real(holo), atol=1e-5)
    ā = np.array([0.0, 1.0, 2.0, 3.0])
    dz = pb(ā)[1]
    np.testing.assert_allclose(np.real(np.vdot(dz, ż)), ā @ ẏ, rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("kind", ["real-roots", "complex-roots", "trailing-zero"])
def test_roots(kind, dtype):
    if kind == "real-roots":
        p = np.poly(np.array([-1.5, 0.5, 2.0]))
    elif kind == "complex-roots":
        p = np.array([1.0, 0.3, 1.2, -0.4])
    else:
        if dtype is np.float32:
            pytest.skip("float32 eigenvalues of the perturbed companion matrix turn complex")
        p = np.array([1.0, -2.5, 1.0, 0.0])
    if np.dtype(dtype).kind == "c":
        p = p + 0.3j * np.arange(p.size)[::-1] * (p != 0)
    nonlinear(np.roots, (p.astype(dtype),), {}, dtype)


def test_roots_with_a_leading_zero():
    """Raising the leading zero adds a root far away and moves the finite ones smoothly:
    their derivative is the cotangent's first entry; the other entries are those of the
    trimmed polynomial."""
    p = np.array([0.0, 2.0, -1.0, -3.0])
    r, pb = rrule(np.roots, p)
    r̄ = np.array([1.0, -2.0])
    dp = pb(r̄)[1]
    np.testing.assert_allclose(dp[1:], rrule(np.roots, p[1:])[1](r̄)[1], rtol=1e-12)
    h = 1e-7
    moved = np.roots(p + h * np.eye(4)[0])
    finite = np.array([moved[np.argmin(np.abs(moved - ri))] for ri in r])
    np.testing.assert_allclose(dp[0], r̄ @ np.real(finite - r) / h, rtol=1e-5)
    _, ṙ = frule((NoTangent(), np.eye(4)[0]), np.roots, p)
    np.testing.assert_allclose(ṙ, np.real(finite - r) / h, rtol=1e-5)


def test_roots_output_kinds():
    y, pb = rrule(np.roots, np.array([1.0, -3.0, 2.0]))
    assert y.dtype == np.float64  # real roots: a real output and a real cotangent
    assert pb(np.ones(2))[1].dtype == np.float64
    y, pb = rrule(np.roots, np.array([1.0, 0.0, 1.0]))
    assert y.dtype == np.complex128
    dp = pb(np.array([1j, 0.0]))[1]  # ∂i/∂p for p = x² + 1: -i^(2-k) / (2i)
    np.testing.assert_allclose(dp, np.real(np.conj(-(1j ** np.arange(2, -1, -1)) / 2j) * 1j))
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent())
    y, pb = rrule(np.roots, np.array([3.0]))
    assert y.size == 0 and pb(np.zeros(0))[1] is ZeroTangent()


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("args", "kw"), [((), {}), ((N(4),), {}), ((N(2), N(True)), {}), ((), {"increasing": True})]
)
def test_vander(args, kw, dtype):
    x = maker(dtype)(3)
    check(np.vander, (x, *args), kw, dtype)


def test_vander_at_zero():
    y, pb = rrule(np.vander, np.array([0.0, 2.0]), 3)
    np.testing.assert_allclose(pb(np.ones((2, 3)))[1], [1.0, 5.0])  # 2x + 1 at x = 0, 2


# --- polyfit ----------------------------------------------------------------------------


def fit_data(dtype, m=7, k=None):
    mk = maker(dtype)
    x = np.linspace(-1.0, 1.5, m).astype(dtype) + 0.05 * np.real(mk(m)).astype(dtype)
    y = mk(m) if k is None else mk(m, k)
    return x, y


POLYFIT = [
    ("deg2", lambda x, y, w: (x, y, N(2)), {}),
    ("deg0", lambda x, y, w: (x, y, N(0)), {}),
    ("deg3-weights", lambda x, y, w: (x, y, N(3), N(None), N(False), w), {}),
    ("keyword-w", lambda x, y, w: (x, y, N(1)), {"w": np.linspace(0.5, 1.5, 7)}),
    ("full", lambda x, y, w: (x, y, N(2)), {"full": True}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("ncols", [None, 2], ids=["vector", "matrix"])
@pytest.mark.parametrize(("name", "make", "kw"), POLYFIT, ids=[c[0] for c in POLYFIT])
def test_polyfit(name, make, kw, ncols, dtype):
    x, y = fit_data(dtype, k=ncols)
    w = (0.5 + np.abs(maker(np.float64)(7))).astype(np.real(x).dtype)
    args = make(x, y, w)
    if name == "full":
        # the singular values of numpy's scaled matrix carry no derivative: fix their
        # cotangent at zero and check the coefficients and residuals
        out = np.polyfit(*[getattr(a, "primal", a) for a in args], **kw)
        ȳ = Tangent[tuple](
            np.ones_like(out[0]), np.ones_like(out[1]), NoTangent(), ZeroTangent(), NoTangent()
        )
        test_rrule(np.polyfit, *args, fkwargs=kw, output_tangent=ȳ, **loose(dtype))
        _, ṫ = frule((NoTangent(), x, y, NoTangent()), np.polyfit, x, y, 2, full=True)
        with pytest.raises(Exception, match="singular values"):
            ṫ[3] + 1.0
        _, pb = rrule(np.polyfit, x, y, 2, full=True)
        with pytest.raises(NotImplementedError, match="singular values"):
            pb(Tangent[tuple](ZeroTangent(), ZeroTangent(), NoTangent(), np.ones(3), NoTangent()))
        return
    nonlinear(np.polyfit, args, kw, dtype)


@pytest.mark.parametrize("dtype", REAL, ids=dtype_ids)
@pytest.mark.parametrize("ncols", [None, 2], ids=["vector", "matrix"])
@pytest.mark.parametrize("cov", [True, "unscaled"])
def test_polyfit_cov(cov, ncols, dtype):
    x, y = fit_data(dtype, k=ncols)
    nonlinear(np.polyfit, (x, y, N(2)), {"cov": cov}, dtype)


def test_polyfit_exact_fit_matches_a_solve():
    x = np.array([0.0, 1.0, 3.0])
    y = np.array([1.0, -2.0, 0.5])
    _, pb = rrule(np.polyfit, x, y, 2)
    c̄ = np.array([1.0, 2.0, 3.0])
    dy = pb(c̄)[2]
    np.testing.assert_allclose(dy, np.linalg.solve(np.vander(x, 3).T, c̄))  # c = V⁻¹ y


def test_polyfit_complex_cov_raises():
    x, y = fit_data(np.complex128)
    _, pb = rrule(np.polyfit, x, y, 1, cov=True)
    with pytest.raises(NotImplementedError, match="complex"):
        pb(Tangent[tuple](np.ones(2), np.ones((2, 2))))
