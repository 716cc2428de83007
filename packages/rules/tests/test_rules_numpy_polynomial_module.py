"""Tests of the rules for ``numpy.polynomial.polynomial`` (``rules._numpy_polynomial_module``):
finite differences through ``test_rrule``/``test_frule`` in float64, float32 and
complex128, hand-derived values, and the trimming conventions the module documents."""

from __future__ import annotations

import numpy as np
import numpy.polynomial.polynomial as P
import pytest
from rules_testing import DTYPES, TOLERANCES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

dtype_ids = lambda d: np.dtype(d).name  # noqa: E731


def loose(dtype):
    """Tolerances for the nonlinear functions (float32 loses more digits in solves)."""
    return {"rtol": 2e-2, "atol": 2e-3} if dtype is np.float32 else TOLERANCES[dtype]


def nonlinear(f, args, kw, dtype):
    test_rrule(f, *args, fkwargs=kw, **loose(dtype))
    test_frule(f, *args, fkwargs=kw, **loose(dtype))


def test_rules_are_registered():
    for f in (P.polyval, P.polyval2d, P.polyadd, P.polydiv, P.polyfit, P.polyroots):
        assert rrule.table.rules_for(f) and frule.table.rules_for(f)


# --- polyval and its chains ------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("xs", "cs", "tensor"),
    [
        ((), (4,), True),
        ((3,), (4,), True),
        ((2, 3), (3,), True),
        ((3,), (4, 2), True),
        ((2,), (3, 2), False),
        ((2, 3), (2, 3), False),
    ],
)
def test_polyval(xs, cs, tensor, dtype):
    m = maker(dtype)
    check(P.polyval, (m(*xs), m(*cs)), {"tensor": tensor}, dtype)


def test_polyval_positional_tensor_and_scalars():
    m = maker(np.float64)
    test_rrule(P.polyval, m(2), m(3, 2), N(False))
    test_frule(P.polyval, m(2), m(3, 2), N(False))
    test_rrule(P.polyval, 0.7, m(3))
    test_frule(P.polyval, 0.7, m(3))


def test_polyval_by_hand():
    c = np.array([1.0, 3.0, 1.0])  # 1 + 3x + x²
    y, pb = rrule(P.polyval, np.array([2.0, -1.0]), c)
    np.testing.assert_allclose(y, [11.0, -1.0])
    _, dx, dc = pb(np.array([1.0, 2.0]))
    np.testing.assert_allclose(dx, [7.0, 2.0])  # (3 + 2x)·ȳ
    np.testing.assert_allclose(dc, [3.0, 0.0, 6.0])  # Σ ȳ x^k
    _, ẏ = frule((NoTangent(), np.ones(2), np.zeros(3)), P.polyval, np.array([2.0, -1.0]), c)
    np.testing.assert_allclose(ẏ, [7.0, 1.0])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("f", [P.polyval2d, P.polygrid2d], ids=lambda f: f.__name__)
def test_two_dimensional(f, dtype):
    m = maker(dtype)
    check(f, (m(3), m(3), m(3, 2)), {}, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("f", [P.polyval3d, P.polygrid3d], ids=lambda f: f.__name__)
def test_three_dimensional(f, dtype):
    m = maker(dtype)
    check(f, (m(2), m(2), m(2), m(2, 3, 2)), {}, dtype)


def test_polyval2d_by_hand():
    # c = [[0, 1], [2, 0]]: p(x, y) = y + 2x, so ∂p/∂x = 2, ∂p/∂y = 1, ∂p/∂c_ij = x^i y^j
    c = np.array([[0.0, 1.0], [2.0, 0.0]])
    y, pb = rrule(P.polyval2d, 3.0, 5.0, c)
    assert y == 11.0
    _, dx, dy, dc = pb(1.0)
    assert (dx, dy) == (2.0, 1.0)
    np.testing.assert_allclose(dc, [[1.0, 5.0], [3.0, 15.0]])
    with pytest.raises(ValueError, match="incompatible"):
        rrule(P.polyval2d, np.ones(2), np.ones(3), c)


# --- arithmetic ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("f", [P.polyadd, P.polysub, P.polymul], ids=lambda f: f.__name__)
@pytest.mark.parametrize(("n1", "n2"), [(3, 3), (2, 4), (5, 1), (0, 3)])
def test_add_sub_mul(f, n1, n2, dtype):
    m = maker(dtype)
    a1 = m(n1) if n1 else m()  # 0: a scalar (0-d) series
    check(f, (a1, m(n2)), {}, dtype)


def test_trailing_zeros_are_trimmed_and_get_zero():
    c1, c2 = np.array([1.0, 2.0, 0.0, 0.0]), np.array([3.0, 4.0, 5.0])
    y, pb = rrule(P.polyadd, c1, c2)
    np.testing.assert_allclose(y, [4.0, 6.0, 5.0])
    _, d1, d2 = pb(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(d1, [1.0, 2.0, 0.0, 0.0])
    np.testing.assert_allclose(d2, [1.0, 2.0, 3.0])
    # an exactly cancelling top coefficient leaves the output shorter
    y, pb = rrule(P.polysub, np.array([1.0, 2.0]), np.array([0.5, 2.0]))
    np.testing.assert_allclose(y, [0.5])
    _, d1, d2 = pb(np.array([1.0]))
    np.testing.assert_allclose(d1, [1.0, 0.0])
    np.testing.assert_allclose(d2, [-1.0, 0.0])
    y, pb = rrule(P.polymul, c1, c2)
    assert y.shape == (4,)
    _, d1, d2 = pb(np.ones(4))
    np.testing.assert_allclose(d1, [12.0, 12.0, 0.0, 0.0])  # Σ_i ȳ_{i+j} c2_i
    np.testing.assert_allclose(d2, [3.0, 3.0, 3.0])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("power", [0, 1, 2, 3])
def test_polypow(power, dtype):
    m = maker(dtype)
    check(P.polypow, (m(3), N(power)), {}, dtype)
    check(P.polypow, (m(2), N(power), N(5)), {}, dtype)


def test_polypow_by_hand():
    # (1 + x)² = 1 + 2x + x²: ∂/∂c0 = (2, 2, 0), ∂/∂c1 = (0, 2, 2)
    y, pb = rrule(P.polypow, np.array([1.0, 1.0]), 2)
    np.testing.assert_allclose(y, [1.0, 2.0, 1.0])
    np.testing.assert_allclose(pb(np.array([1.0, 0.0, 0.0]))[1], [2.0, 0.0])
    np.testing.assert_allclose(pb(np.array([0.0, 1.0, 0.0]))[1], [2.0, 2.0])
    assert pb(ZeroTangent())[1] == ZeroTangent()


def divisible(dtype, nu, nv):
    m = maker(dtype)
    u, v = m(nu), m(nv)
    v[-1] = v[-1] + (2 if np.real(v[-1]) >= 0 else -2)  # a top coefficient away from 0
    return u, v


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(("nu", "nv"), [(5, 3), (4, 4), (3, 1), (2, 4)])
def test_polydiv(nu, nv, dtype):
    nonlinear(P.polydiv, divisible(dtype, nu, nv), {}, dtype)


def test_polydiv_by_hand():
    # (x² + 3x + 2) / (x + 1) = x + 2, remainder 0 (kept as [0])
    (q, r), pb = rrule(P.polydiv, np.array([2.0, 3.0, 1.0]), np.array([1.0, 1.0]))
    np.testing.assert_allclose(q, [2.0, 1.0])
    np.testing.assert_allclose(r, [0.0])
    # ∂q0/∂c1_0 = 0, ∂q1/∂c1_2 = 1: dividing by a monic x + 1
    du, dv = pb(Tangent[tuple](np.array([0.0, 1.0]), np.zeros(1)))[1:]
    np.testing.assert_allclose(du, [0.0, 0.0, 1.0])
    np.testing.assert_allclose(dv, [0.0, -1.0])  # q1 = c1_2 / c2_1
    _, (q̇, ṙ) = frule(
        (NoTangent(), np.array([1.0, 0.0, 0.0]), np.zeros(2)),
        P.polydiv,
        np.array([2.0, 3.0, 1.0]),
        np.array([1.0, 1.0]),
    )
    np.testing.assert_allclose(q̇, [0.0, 0.0])
    np.testing.assert_allclose(ṙ, [1.0])


# --- fitting ------------------------------------------------------------------------------


def _fit_data(dtype, M=7, K=None):
    m = maker(dtype)
    x = (np.linspace(-1.0, 1.0, M) + 0.05 * m(M).real).astype(
        np.result_type(dtype, 0.0).type(0).real.dtype
    )
    y = m(M) if K is None else m(M, K)
    return x, y


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=dtype_ids)
@pytest.mark.parametrize("deg", [2, [0, 2], [1, 3]], ids=str)
@pytest.mark.parametrize("K", [None, 2])
def test_polyfit(deg, K, dtype):
    x, y = _fit_data(dtype, K=K)
    nonlinear(P.polyfit, (x, y, N(deg)), {}, dtype)


def test_polyfit_complex_and_weights():
    x, y = _fit_data(np.complex128)
    nonlinear(P.polyfit, (x, y, N(2)), {}, np.complex128)
    w = np.linspace(0.5, 1.5, 7)
    nonlinear(P.polyfit, (x, y.real, N(2), N(None), N(False), w), {}, np.float64)
    nonlinear(P.polyfit, (x, y.real, N([0, 2]), N(None), N(False), w), {}, np.float64)


def test_polyfit_full_residuals():
    x, y = _fit_data(np.float64)
    out, pb = rrule(P.polyfit, x, y, 2, None, True)
    c, (res, rank, s, rcond) = out
    assert rank == 3
    res̄ = np.ones(1)
    d = pb(Tangent[tuple](np.zeros(3), Tangent[list](res̄, NoTangent(), ZeroTangent(), NoTangent())))
    r = y - P.polyval(x, c)
    np.testing.assert_allclose(d[2], 2 * r, atol=1e-12)  # d‖r‖²/dy = 2r (Aᵀr = 0)
    _, ṫ = frule((NoTangent(), np.zeros(7), r, *(NoTangent(),) * 3), P.polyfit, x, y, 2, None, True)
    np.testing.assert_allclose(ṫ[1][0], 2 * r @ r)
    with pytest.raises(NotImplementedError, match="singular values"):
        pb(
            Tangent[tuple](
                np.zeros(3), Tangent[list](ZeroTangent(), NoTangent(), np.ones(3), NoTangent())
            )
        )


def test_polyfit_by_hand():
    # a line through three points: ∂slope/∂y = (-1/2, 0, 1/2), unfitted power 1 gets 0
    x, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0])
    c, pb = rrule(P.polyfit, x, y, 1)
    np.testing.assert_allclose(c, [1.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(pb(np.array([0.0, 1.0]))[2], [-0.5, 0.0, 0.5], atol=1e-12)
    c, pb = rrule(P.polyfit, x, y, [0, 2])
    assert c[1] == 0.0
    assert np.allclose(pb(np.array([0.0, 1.0, 0.0]))[2], 0.0)


# --- roots --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_polyfromroots(n, dtype):
    check(P.polyfromroots, (maker(dtype)(n),), {}, dtype)


_ROOTS = np.array([-1.5, 0.5, 2.0])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
def test_polyroots(dtype):
    c = P.polyfromroots(_ROOTS).astype(dtype)  # simple, separated real roots
    if dtype is np.complex128:
        c = c + 0.1j * maker(np.float64)(4)
    nonlinear(P.polyroots, (c,), {}, dtype)
    nonlinear(P.polyroots, (np.array([1.0, 2.0], dtype),), {}, dtype)  # one root: -c0/c1


def test_polyroots_complex_roots_of_a_real_series():
    c = np.array([5.0, 2.0, 1.0])  # x² + 2x + 5: roots -1 ± 2i
    nonlinear(P.polyroots, (c,), {}, np.float64)
    r, pb = rrule(P.polyroots, c)
    # ∂r/∂c0 = -1/p'(r) = -1/(2r + 2); a real c gets the real part
    r̄ = np.array([1.0, 0.0])
    expect = np.real(np.conj(-1 / (2 * r[0] + 2)))
    np.testing.assert_allclose(pb(r̄)[1][0], expect)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize("n", [2, 3, 5])
def test_polycompanion(n, dtype):
    c = maker(dtype)(n)
    c[-1] = c[-1] + 2
    nonlinear(P.polycompanion, (c,), {}, dtype)


def test_polycompanion_trailing_zero_gets_zero():
    c = np.array([1.0, 2.0, 4.0, 0.0])
    M, pb = rrule(P.polycompanion, c)
    assert M.shape == (2, 2)
    d = pb(np.ones((2, 2)))[1]
    np.testing.assert_allclose(d, [-0.25, -0.25, 3 / 16, 0.0])


# --- the Polynomial class goes through these rules ---------------------------------------------


def test_polynomial_class_uses_the_rules():
    p, q = P.Polynomial([1.0, 2.0]), P.Polynomial([3.0, 0.5, 1.0])
    y, pb = rrule(P.polyadd, p.coef, q.coef)
    np.testing.assert_allclose((p + q).coef, y)
    assert P.Polynomial._add is P.polyadd and P.Polynomial._val is P.polyval
    assert P.Polynomial._fit is P.polyfit and P.Polynomial._roots is P.polyroots
