"""Tests of the scipy.special rules (rules._scipy_special and its _logsumexp, _series parts)."""

import math

import numpy as np
import pytest

pytest.importorskip("scipy")

import scipy.special as sc
from numpy.testing import assert_allclose
from rules_testing import TOLERANCES, N

import rules  # noqa: F401  (registers the rules)
from rulescore import (
    NoTangent,
    NotImplementedTangent,
    Tangent,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)
from rulestest import central_fdm, j_vp, test_frule, test_rrule

F64, F32, C128 = np.float64, np.float32, np.complex128
# float32 finite differences take long steps; a little more slack than the shared table.
TOL = {**TOLERANCES, F32: {"rtol": 5e-3, "atol": 5e-4}}


def sample(lo, hi, shape, dtype, seed=0, signed=False):
    """A Python number for shape None, else an array in [lo, hi] (±[lo, hi] if signed).

    float32 keeps to the middle of the interval. Complex: the real part as for real
    input, the imaginary part in [-0.5, 0.5].
    """
    rng = np.random.default_rng(seed)
    size = () if shape is None else shape
    if dtype is F32:  # float32 finite differences take long steps: stay well inside
        lo, hi = lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo)
    x = rng.uniform(lo, hi, size)
    if signed:
        x = x * rng.choice([-1.0, 1.0], size)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-0.5, 0.5, size)
    if shape is None:
        return complex(x) if np.dtype(dtype).kind == "c" else float(x)
    return np.asarray(x, dtype=dtype)


def check(f, *args, dtype=F64, fkwargs=None):
    test_rrule(f, *args, fkwargs=fkwargs, **TOL[dtype])
    test_frule(f, *args, fkwargs=fkwargs, **TOL[dtype])


def _ids(f):
    return getattr(f, "__name__", str(f))


# ---- one-argument functions: f -> (lo, hi, signed, complex supported)
UNARY = {
    sc.gammaln: (0.5, 3.0, False, False),
    sc.loggamma: (0.5, 3.0, False, True),
    sc.gamma: (0.5, 3.0, False, True),
    sc.rgamma: (0.5, 3.0, False, True),
    sc.digamma: (0.5, 3.0, False, True),
    sc.erf: (-1.5, 1.5, False, True),
    sc.erfc: (-1.5, 1.5, False, True),
    sc.erfinv: (-0.8, 0.8, False, False),
    sc.erfcinv: (0.2, 1.8, False, False),
    sc.erfcx: (-1.5, 3.0, False, True),
    sc.ndtr: (-2.0, 2.0, False, True),
    sc.log_ndtr: (-3.0, 2.0, False, True),
    sc.ndtri: (0.1, 0.9, False, False),
    sc.expit: (-3.0, 3.0, False, False),
    sc.logit: (0.1, 0.9, False, False),
    sc.log_expit: (-3.0, 3.0, False, False),
    sc.entr: (0.2, 2.0, False, False),
    sc.expm1: (-1.0, 1.0, False, True),
    sc.log1p: (-0.5, 1.0, False, True),
    sc.cbrt: (0.5, 2.0, True, False),
    sc.i0: (-2.0, 2.0, False, False),
    sc.i0e: (0.2, 2.0, True, False),  # kinked at 0
    sc.i1: (-2.0, 2.0, False, False),
    sc.i1e: (0.2, 2.0, True, False),
    sc.j0: (-3.0, 3.0, False, False),
    sc.j1: (-3.0, 3.0, False, False),
    sc.y0: (0.5, 3.0, False, False),
    sc.y1: (0.5, 3.0, False, False),
    sc.k0: (0.5, 3.0, False, False),
    sc.k1: (0.5, 3.0, False, False),
    sc.k0e: (0.5, 3.0, False, False),
    sc.k1e: (0.5, 3.0, False, False),
}
SHAPES = {"scalar": None, "0-d": (), "matrix": (2, 3)}
UNARY_CASES = [
    pytest.param(f, shape, dtype, id=f"{f.__name__}-{name}-{np.dtype(dtype).name}")
    for f, (_, _, _, cplx) in UNARY.items()
    for name, shape in SHAPES.items()
    for dtype in (F64, F32, C128)
    if not (dtype is C128 and not cplx)
    if not (dtype is F32 and shape is None)
]


@pytest.mark.parametrize("f, shape, dtype", UNARY_CASES)
def test_unary(f, shape, dtype):
    lo, hi, signed, _ = UNARY[f]
    check(f, sample(lo, hi, shape, dtype, signed=signed), dtype=dtype)


@pytest.mark.parametrize("f", [sc.gammaln, sc.erf, sc.expit], ids=_ids)
def test_list_and_integer_inputs(f):
    check(f, [0.5, 1.5, 2.5])
    y, pb = rrule(f, np.array([1, 2, 3]))
    dx = pb(np.ones(3))[1]
    assert dx.dtype == np.float64  # integers are real numbers: a float cotangent
    assert_allclose(dx, rrule(f, np.array([1.0, 2.0, 3.0]))[1](np.ones(3))[1])


# ---- two-argument functions, broadcasting: f -> ((lo, hi, signed) per argument, complex)
BINARY = {
    sc.beta: (((0.5, 3.0, False), (0.5, 3.0, False)), False),
    sc.betaln: (((0.5, 3.0, False), (0.5, 3.0, False)), False),
    sc.xlogy: (((0.5, 2.0, True), (0.5, 3.0, False)), True),
    sc.xlog1py: (((0.5, 2.0, True), (-0.5, 2.0, False)), True),
    sc.rel_entr: (((0.2, 2.0, False), (0.2, 2.0, False)), False),
    sc.kl_div: (((0.2, 2.0, False), (0.2, 2.0, False)), False),
    sc.boxcox: (((0.5, 3.0, False), (-1.5, 1.5, False)), False),
}
PAIRS = {
    "same": ((3,), (3,)),
    "outer": ((2, 1), (3,)),
    "scalar-x": (None, (2, 3)),
    "0-d-y": ((2, 3), ()),
}
BINARY_CASES = [
    pytest.param(f, shapes, dtype, id=f"{f.__name__}-{name}-{np.dtype(dtype).name}")
    for f, (_, cplx) in BINARY.items()
    for name, shapes in PAIRS.items()
    for dtype in (F64, F32, C128)
    if not (dtype is C128 and not cplx)
    if not (dtype is F32 and None in shapes)
]


@pytest.mark.parametrize("f, shapes, dtype", BINARY_CASES)
def test_binary(f, shapes, dtype):
    domains, _ = BINARY[f]
    args = [
        sample(lo, hi, shape, dtype, seed=i, signed=signed)
        for i, ((lo, hi, signed), shape) in enumerate(zip(domains, shapes))
    ]
    check(f, *args, dtype=dtype)


def test_scalar_gets_summed_cotangent():
    a, b = 1.5, np.array([[0.7, 1.2, 2.0], [1.0, 0.9, 3.0]])
    _, pb = rrule(sc.beta, a, b)
    da = unthunk(pb(np.ones((2, 3)))[1])
    assert type(da) is float
    assert_allclose(da, np.sum(sc.beta(a, b) * (sc.digamma(a) - sc.digamma(a + b))))


# ---- orders: integer orders get NoTangent, float orders a not-implemented tangent
ORDER = {sc.jv: (-3.0, 3.0), sc.yv: (0.5, 3.0), sc.iv: (-2.0, 2.0), sc.ive: (0.3, 2.0)}
ORDER.update({sc.kv: (0.5, 3.0), sc.kve: (0.5, 3.0)})


@pytest.mark.parametrize("f", ORDER, ids=_ids)
@pytest.mark.parametrize("dtype", [F64, F32, C128], ids=lambda d: np.dtype(d).name)
def test_bessel_integer_order(f, dtype):
    lo, hi = ORDER[f]
    signed = f is sc.ive
    z = sample(lo, hi, (2, 3), dtype, signed=signed)
    check(f, N(1), z, dtype=dtype)
    check(f, N(np.array([0, 1, 3])), z, dtype=dtype)  # an order per column
    _, pb = rrule(f, 2, z)
    assert pb(np.ones((2, 3), np.result_type(z)))[1] is NoTangent()


def test_ive_complex_is_not_holomorphic():
    # ive = iv·exp(-|Re z|): d/d(Im z) sees no exp factor change, d/d(Re z) does.
    z = np.array([0.7 + 0.4j, -1.2 + 0.3j])
    _, pb = rrule(sc.ive, 1, z)
    dz = pb(np.array([1.0, 1.0 + 0j]))[2]
    h = 1e-6
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        d_re = (sc.ive(1, z + e) - sc.ive(1, z - e)) / (2 * h)
        d_im = (sc.ive(1, z + 1j * e) - sc.ive(1, z - 1j * e)) / (2 * h)
        assert_allclose(dz[k], np.real(d_re[k]) + 1j * np.real(d_im[k]), rtol=1e-7)


def test_yn_and_polygamma_orders():
    x = sample(0.5, 3.0, (2, 3), F64)
    check(sc.yn, N(2), x)
    check(sc.yn, N(np.array([0, 1, 2])), x)
    check(sc.polygamma, N(1), x)
    check(sc.polygamma, N(np.array([0, 1, 2])), x)
    check(sc.polygamma, N(0), 1.7)
    check(sc.polygamma, N(1), x.astype(F32), dtype=F32)


def partial_only(f, args, differentiable, tol=1e-7):
    """Rules of ``f`` whose other arguments' derivatives are not implemented: those get
    a NotImplementedTangent, the differentiable ones match finite differences."""
    y, pb = rrule(f, *args)
    assert_allclose(y, f(*args))
    ȳ = np.random.default_rng(1).standard_normal(np.shape(y))
    cts = pb(ȳ)
    fdm = central_fdm(5, 1)
    for i, x in enumerate(args):
        ct = unthunk(cts[1 + i])
        if i not in differentiable:
            assert isinstance(ct, NotImplementedTangent), (i, ct)
            continue

        def only_i(xi, i=i):
            return f(*args[:i], xi, *args[i + 1 :])

        assert_allclose(ct, j_vp(fdm, only_i, ȳ, x)[0], rtol=tol, atol=tol)
    test_frule(f, *(x if i in differentiable else N(x) for i, x in enumerate(args)), rtol=tol)
    # A tangent on a parameter without an implemented derivative: the output's is missing.
    _, ẏ = frule((NoTangent(), *(np.ones_like(x) for x in args)), f, *args)
    assert isinstance(ẏ, NotImplementedTangent)


@pytest.mark.parametrize("f", [sc.gammainc, sc.gammaincc], ids=_ids)
def test_incomplete_gamma(f):
    a = sample(0.5, 3.0, (3,), F64, seed=1)
    partial_only(f, (a, sample(0.2, 3.0, (2, 3), F64)), {1})
    partial_only(f, (2.5, sample(0.2, 3.0, (3,), F64)), {1})
    test_frule(f, N(a), sample(0.5, 3.0, (3,), F32), rtol=5e-3, atol=5e-4)


def test_incomplete_beta():
    a, b = sample(0.5, 3.0, (3,), F64, seed=1), sample(0.5, 3.0, (2, 1), F64, seed=2)
    partial_only(sc.betainc, (a, b, sample(0.1, 0.9, (2, 3), F64)), {2})
    partial_only(sc.betainc, (1.5, 2.5, 0.4), {2})


@pytest.mark.parametrize("f", [sc.jv, sc.iv, sc.kv], ids=_ids)
def test_float_order_is_not_implemented(f):
    partial_only(f, (1.5, sample(0.5, 2.0, (3,), F64)), {1})


# ---- the Python functions: polygamma, multigammaln, zeta (keywords bind as in Python)
def test_multigammaln():
    a = sample(2.0, 4.0, (3,), F64)
    check(sc.multigammaln, a, N(3))
    check(sc.multigammaln, 2.5, N(2))
    check(sc.multigammaln, a, fkwargs={"d": 2})


@pytest.mark.parametrize("dtype", [F64, F32], ids=lambda d: np.dtype(d).name)
def test_zeta_real(dtype):
    s = sample(1.5, 4.0, (3,), dtype)
    check(sc.zeta, s, dtype=dtype)  # Riemann
    check(sc.zeta, s, sample(0.5, 3.0, (2, 3), dtype, seed=1), dtype=dtype)  # Hurwitz, in s and q
    check(sc.zeta, s, fkwargs={"q": 2.5}, dtype=dtype)  # q by keyword: no cotangent for it
    check(sc.zeta, np.array([-6.5, -2.5, -0.7, -0.3, 0.4, 0.9]), dtype=dtype)  # continuation


def test_zeta_complex():
    check(sc.zeta, sample(-3.0, 3.0, (2, 3), C128) + 1.2j, dtype=C128)
    check(sc.zeta, np.array([0.5 + 14.1j, -7.0 + 2.0j, 2.0 - 25.0j]), dtype=C128)


def test_zeta_keyword_and_out():
    _, pb = rrule(sc.zeta, 2.0, q=3.0)
    assert len(pb(1.0)) == 2
    with pytest.raises(TypeError, match="out="):
        rrule(sc.zeta, np.array([2.0]), None, np.empty(1))
    with pytest.raises(TypeError, match="keyword"):
        rrule(sc.erf, np.array([2.0]), out=np.empty(1))


def test_polygamma_x_by_keyword_gets_no_cotangent():
    y, pb = rrule(sc.polygamma, 1, x=np.array([1.5, 2.0]))
    assert_allclose(y, sc.polygamma(1, [1.5, 2.0]))
    assert pb(np.ones(2)) == (NoTangent(), NoTangent())


# ---- logsumexp, softmax, log_softmax
LSE_KWARGS = {
    "all": {},
    "axis0": {"axis": 0},
    "axis-1-keepdims": {"axis": -1, "keepdims": True},
    "tuple": {"axis": (0, 1)},
    "b": {"b": np.array([0.5, 2.0, 1.0])},
    "b-axis1": {"axis": 1, "b": np.array([[0.5], [2.0]])},
}


@pytest.mark.parametrize("kw", LSE_KWARGS.values(), ids=LSE_KWARGS.keys())
@pytest.mark.parametrize("dtype", [F64, F32, C128], ids=lambda d: np.dtype(d).name)
def test_logsumexp(kw, dtype):
    check(sc.logsumexp, sample(-2.0, 2.0, (2, 3), dtype), dtype=dtype, fkwargs=kw)


@pytest.mark.parametrize("dtype", [F64, C128], ids=lambda d: np.dtype(d).name)
def test_logsumexp_positional_b_and_sign(dtype):
    a = sample(-1.0, 1.0, (2, 3), dtype)
    b = sample(0.5, 2.0, (3,), F64, seed=3)
    check(sc.logsumexp, a, N(1), b, dtype=dtype)  # b differentiable
    check(sc.logsumexp, a, N(None), b, N(True), dtype=dtype)  # keepdims positional
    # A negative sum: the sign output (constant for real, a phase for complex).
    b_neg = np.array([0.3, -2.0, 0.5])
    check(sc.logsumexp, a, N(1), b_neg, N(False), N(True), dtype=dtype)
    check(sc.logsumexp, a, fkwargs={"b": b_neg, "return_sign": True}, dtype=dtype)
    check(sc.logsumexp, 0.7, N(None), b, dtype=dtype)  # a scalar broadcast against b


def test_logsumexp_scalar_and_list():
    check(sc.logsumexp, 1.5)
    check(sc.logsumexp, [0.5, 1.0, -2.0])


def test_logsumexp_real_sign_cotangent_is_ignored():
    a, b = np.array([1.0, 2.0]), np.array([1.0, -3.0])
    _, pb = rrule(sc.logsumexp, a, None, b, False, True)
    with_sign = pb((1.0, 5.0))
    without = pb(Tangent[tuple](1.0, ZeroTangent()))
    assert_allclose(with_sign[1], without[1])
    assert pb((ZeroTangent(), 5.0))[1] is ZeroTangent()


@pytest.mark.parametrize("f", [sc.softmax, sc.log_softmax], ids=_ids)
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, 2)}], ids=str)
@pytest.mark.parametrize("dtype", [F64, F32, C128], ids=lambda d: np.dtype(d).name)
def test_softmax(f, kw, dtype):
    check(f, sample(-2.0, 2.0, (2, 3, 2), dtype), dtype=dtype, fkwargs=kw)


@pytest.mark.parametrize("f", [sc.softmax, sc.log_softmax], ids=_ids)
def test_softmax_positional_axis_and_scalar(f):
    check(f, sample(-2.0, 2.0, (2, 3), F64), N(1))
    check(f, 0.3)
    _, pb = rrule(f, np.ones((2, 2)), 0)
    assert pb(np.ones((2, 2)))[2] is NoTangent()


# ---- stability at extreme inputs, against closed forms and asymptotic expansions
def grad(f, *args, i=0, ȳ=1.0):
    y, pb = rrule(f, *args)
    return unthunk(pb(np.broadcast_to(ȳ, np.shape(y)).astype(np.result_type(y)))[1 + i])


def test_log_ndtr_far_left():
    # Φ(x) ~ φ(x)/|x| Σ (-1)ᵏ (2k-1)!!/x²ᵏ, so φ/Φ ~ -x - 1/x + 2/x³ - 10/x⁵ + 74/x⁷.
    x = np.array([-40.0, -1e3, -1e5, -1e100])
    r = 1 / x
    assert_allclose(grad(sc.log_ndtr, x), -x - r + 2 * r**3 - 10 * r**5 + 74 * r**7, rtol=1e-13)
    assert grad(sc.log_ndtr, np.array([40.0]))[0] == 0.0  # φ(40) underflows
    assert_allclose(grad(sc.log_ndtr, np.array([-200.0], F32)), [200.005], rtol=1e-6)


def test_erfcx_far_right():
    # erfcx(x) ~ (1 - 1/(2x²) + 3/(4x⁴) - …)/(x√π): erfcx' ~ -(1 - 3/(2x²) + 15/(4x⁴))/(√π x²).
    x = np.array([1e3, 1e6, 1e100])
    r2 = (1 / x) ** 2
    series = 1 - 1.5 * r2 + 3.75 * r2**2
    assert_allclose(grad(sc.erfcx, x), -series * r2 / math.sqrt(math.pi), rtol=1e-14)
    # Either side of the switch to the series, against finite differences.
    check(sc.erfcx, np.array([24.0, 26.0, 60.0]))
    assert_allclose(
        grad(sc.erfcx, np.array([-5.0])), 2 * -5.0 * sc.erfcx(-5.0) - 2 / math.sqrt(math.pi)
    )


def test_expit_family_tails():
    x = np.array([40.0, 700.0, -700.0])
    assert_allclose(
        grad(sc.expit, x), np.exp(-np.abs(x)) * (1 - 2 * np.exp(-np.abs(x))), rtol=1e-14
    )
    assert_allclose(grad(sc.log_expit, np.array([-800.0, 800.0, 40.0])), [1.0, 0.0, np.exp(-40.0)])


def test_logsumexp_infinities_and_large_values():
    # -inf entries get weight 0; an all -inf slice shares the weight equally (as max does).
    a = np.array([[-np.inf, -np.inf], [0.0, np.log(3.0)], [-np.inf, 1.0]])
    assert_allclose(_lse_grad(a), [[0.5, 0.5], [0.25, 0.75], [0.0, 1.0]])
    assert_allclose(_lse_grad(np.array([[np.inf, 1.0]])), [[1.0, 0.0]])
    assert_allclose(_lse_grad(np.array([[1e300, 1e300, -1e300]])), [[0.5, 0.5, 0.0]])
    # Invariant under a common shift, however large.
    x = sample(-2.0, 2.0, (2, 3), F64)
    assert_allclose(_lse_grad(x + 1e6), _lse_grad(x), atol=1e-10)


def _lse_grad(a):
    _, pb = rrule(sc.logsumexp, a, 1)
    return pb(np.ones(a.shape[0]))[1]


@pytest.mark.parametrize("f", [sc.softmax, sc.log_softmax], ids=_ids)
def test_softmax_shift_invariance(f):
    x = sample(-2.0, 2.0, (4,), F64)
    ȳ = sample(-1.0, 1.0, (4,), F64, seed=5)
    _, pb = rrule(f, x)
    _, pb_big = rrule(f, x + 1e5)
    assert_allclose(pb_big(ȳ)[1], pb(ȳ)[1], atol=1e-10)
    _, ẏ = frule((NoTangent(), ȳ), f, np.array([1000.0, 0.0, -1000.0, -np.inf]))
    assert np.all(np.isfinite(ẏ))


def test_xlogy_at_zero():
    # xlogy(0, y) = 0 for all y: ∂/∂y = 0 there; ∂/∂x = log y, the derivative of x log y.
    x, y = np.array([0.0, 0.0, 2.0]), np.array([3.0, 0.0, 5.0])
    for f, dx in ((sc.xlogy, [math.log(3.0), -np.inf, math.log(5.0)]), (sc.xlog1py, np.log1p(y))):
        _, pb = rrule(f, x, y)
        cts = [unthunk(c) for c in pb(np.ones(3))[1:]]
        assert_allclose(cts[0], dx)
        assert_allclose(cts[1][:2], [0.0, 0.0])


def test_entropy_edges():
    assert_allclose(grad(sc.entr, np.array([0.0, -1.0, 1.0])), [np.inf, 0.0, -1.0])
    assert np.isnan(grad(sc.entr, np.array([np.nan]))[0])
    x, y = np.array([0.0, 0.0, 1.0, -1.0]), np.array([2.0, 0.0, 1.0, 1.0])
    _, pb = rrule(sc.rel_entr, x, y)
    dx, dy = (unthunk(c) for c in pb(np.ones(4))[1:])
    assert_allclose(dx, [-np.inf, 0.0, 1.0, 0.0])
    assert_allclose(dy, [0.0, 0.0, -1.0, 0.0])
    _, pb = rrule(sc.kl_div, x, y)
    dx, dy = (unthunk(c) for c in pb(np.ones(4))[1:])
    assert_allclose(dx, [-np.inf, 0.0, 0.0, 0.0])
    assert_allclose(dy, [1.0, 1.0, 0.0, 0.0])


def test_rgamma_at_its_zeros():
    # 1/Γ(x) ≈ (-1)ⁿ n! (x + n) near x = -n.
    assert_allclose(grad(sc.rgamma, np.array([0.0, -1.0, -2.0, -3.0])), [1.0, -1.0, 2.0, -6.0])
    assert_allclose(grad(sc.rgamma, np.array([-2.0 + 0j])), [2.0])


def test_gammainc_at_zero():
    # x^(a-1) e^-x / Γ(a) at x = 0: 1 for a = 1, 0 for a > 1, inf for a < 1.
    _, pb = rrule(sc.gammainc, np.array([1.0, 2.0, 0.5]), np.zeros(3))
    assert_allclose(unthunk(pb(np.ones(3))[2]), [1.0, 0.0, np.inf])


def test_boxcox_near_lambda_zero():
    x = np.array([2.0, 0.3, 5.0])
    for lam in (0.0, 1e-10, -1e-7):
        _, pb = rrule(sc.boxcox, x, lam)
        L = np.log(x)
        expected = np.sum(L**2 / 2 + lam * L**3 / 3 + lam**2 * L**4 / 8)
        assert_allclose(unthunk(pb(np.ones(3))[2]), expected, rtol=1e-12)
    check(sc.boxcox, x, np.array([-0.05, 0.0, 0.05]))


def test_zeta_known_derivatives():
    s = np.array([2.0, 3.0, 0.0, -1.0, -2.0])
    expected = [
        -0.93754825431584375370,  # ζ'(2) = π²/6 (γ + log 2π - 12 log A)
        -0.19812624288563685333,  # ζ'(3)
        -0.5 * math.log(2 * math.pi),  # ζ'(0)
        -0.16542114370045092921,  # ζ'(-1) = 1/12 - log A
        -sc.zeta(3.0) / (4 * math.pi**2),  # ζ'(-2)
    ]
    assert_allclose(grad(sc.zeta, s), expected, rtol=1e-12)
    _, pb = rrule(sc.zeta, 2.0, 1.5)  # ∂ζ(s, q)/∂q = -s ζ(s+1, q)
    assert_allclose(unthunk(pb(1.0)[2]), -2.0 * sc.zeta(3.0, 1.5))


def test_digamma_complex_matches_trigamma():
    z = np.array([1.0 + 0j, 0.5 + 0j, -0.5 + 0j])
    assert_allclose(
        grad(sc.digamma, z), [math.pi**2 / 6, math.pi**2 / 2, math.pi**2 / 2 + 4], rtol=1e-13
    )


# ---- zero cotangents, non-differentiable functions
@pytest.mark.parametrize("f", [sc.erf, sc.xlogy, sc.logsumexp, sc.softmax], ids=_ids)
def test_zero_cotangent(f):
    args = (np.array([0.5, 1.5]),) * (2 if f is sc.xlogy else 1)
    _, pb = rrule(f, *args)
    assert all(c is ZeroTangent() for c in pb(ZeroTangent())[1:])
    _, ẏ = frule((NoTangent(), *(ZeroTangent() for _ in args)), f, *args)
    assert ẏ is ZeroTangent()


def test_gammasgn_is_non_differentiable():
    y, pb = rrule(sc.gammasgn, np.array([-0.5, 1.5]))
    assert_allclose(y, [-1.0, 1.0])
    assert pb(np.ones(2))[1] is NoTangent()


def test_float32_stays_float32():
    x = sample(0.5, 2.0, (3,), F32)
    for f in (sc.gammaln, sc.erfcx, sc.digamma, sc.zeta, sc.log_ndtr):
        y, pb = rrule(f, x)
        assert pb(np.ones(3, F32))[1].dtype == F32, f
    _, ẏ = frule((NoTangent(), np.ones(3, F32)), sc.zeta, x)
    assert ẏ.dtype == F32
