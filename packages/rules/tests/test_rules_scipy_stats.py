"""Tests of the scipy.stats rules (rules._scipy_stats), and of their lazy loading."""

import pytest

pytest.importorskip("scipy")

import subprocess
import sys
import zlib

import numpy as np
import scipy.stats as st
from rules_testing import TOLERANCES, N
from scipy.special import log_ndtr

import rules
from rulescore import (
    AbstractZero,
    NoTangent,
    NotImplementedTangent,
    NotImplementedTangentError,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)
from rulestest import primal_and_tangent, test_frule, test_rrule

DENSITIES = ("pdf", "logpdf")
CDFS = ("cdf", "logcdf", "sf", "logsf")
# Shape parameters and the range they are drawn from.
SHAPES = {
    "norm": {},
    "t": {"df": (1.5, 6.0)},
    "cauchy": {},
    "laplace": {},
    "logistic": {},
    "expon": {},
    "gamma": {"a": (0.8, 4.0)},
    "beta": {"a": (0.8, 4.0), "b": (0.8, 4.0)},
    "chi2": {"df": (1.5, 6.0)},
    "lognorm": {"s": (0.4, 1.5)},
    "uniform": {},
}
# The standardised z = (x - loc)/scale is drawn inside the support, away from kinks.
SUPPORT = {"expon": (0.2, 3.0), "gamma": (0.2, 3.0), "chi2": (0.2, 3.0), "lognorm": (0.2, 3.0)}
SUPPORT.update(beta=(0.1, 0.9), uniform=(0.1, 0.9))
NO_CLOSED_FORM_CDF = {"t", "gamma", "beta", "chi2"}  # shape derivative of the CDF
TOL = {"rtol": 1e-6, "atol": 1e-8}
FD32 = {"rtol": 3e-2, "atol": 1e-3}


def draw(dname, xshape, pshape, seed, dtype=np.float64, loc_shape=None):
    """``(x, shapes, loc, scale)``: x inside the support, parameters of ``pshape``."""
    rng = np.random.default_rng(seed)
    shapes = {k: rng.uniform(*r, pshape) for k, r in SHAPES[dname].items()}
    loc = rng.uniform(-1.0, 1.0, pshape if loc_shape is None else loc_shape)
    scale = rng.uniform(0.5, 2.0, pshape)
    lo, hi = SUPPORT.get(dname, (-2.5, 2.5))
    z = rng.uniform(lo, hi, xshape)
    if dname == "laplace":  # keep off the kink at z = 0
        z = np.where(np.abs(z) < 0.2, z + 0.5, z)
    x = loc + scale * z
    assert x.shape == xshape
    return x.astype(dtype), shapes, loc, scale


def _univariate_cases():
    cases = []
    for dname in SHAPES:
        for kind in (*DENSITIES, *CDFS):
            for layout in ("broadcast", "scalar", "keywords", "x-only", "float32"):
                cases.append(pytest.param(dname, kind, layout, id=f"{dname}-{kind}-{layout}"))
    return cases


@pytest.mark.parametrize("dname, kind, layout", _univariate_cases())
def test_univariate(dname, kind, layout):
    f = getattr(getattr(st, dname), kind)
    seed = zlib.crc32(f"{dname}-{kind}-{layout}".encode())
    shapes_kw = dname in NO_CLOSED_FORM_CDF and kind in CDFS  # shapes by keyword, see below
    if layout == "broadcast":
        x, shapes, loc, scale = draw(dname, (3, 4), (4,), seed, loc_shape=(3, 1))
    elif layout == "scalar":
        x, shapes, loc, scale = draw(dname, (), (), seed)
        x, loc, scale = float(x), float(loc), float(scale)
        shapes = {k: float(v) for k, v in shapes.items()}
    elif layout == "float32":
        x, shapes, loc, scale = draw(dname, (2, 3), (3,), seed, np.float32)
        shapes = {k: v.astype(np.float32) for k, v in shapes.items()}
        loc, scale = loc.astype(np.float32), scale.astype(np.float32)
    else:
        x, shapes, loc, scale = draw(dname, (5,), (), seed)
        loc, scale = float(loc), float(scale)
        shapes = {k: float(v) for k, v in shapes.items()}
        if layout == "x-only":  # loc 0 and scale 1: x is the standardised z
            x = (x - loc) / scale
    if layout == "x-only":
        args, kw = (x,), dict(shapes)
    elif layout == "keywords" or shapes_kw:  # shapes by keyword: loc, scale must follow
        args, kw = (x,), {**shapes, "loc": loc, "scale": scale}
    else:
        args, kw = (x, *shapes.values(), loc, scale), {}
    # float32 inputs make finite differences coarse (their steps may leave a bounded
    # support): a loose check where the support is the real line, and everywhere
    # the float32 cotangents against the float64 rule on the same values.
    if layout != "float32" or dname not in SUPPORT:
        tol = FD32 if layout == "float32" else TOL
        test_rrule(f, *args, fkwargs=kw, **tol)
        test_frule(f, *args, fkwargs=kw, **tol)
    if layout == "float32":
        ȳ = np.random.default_rng(seed).standard_normal(np.shape(f(*args, **kw)))
        cts32 = rrule(f, *args, **kw)[1](ȳ)[1:]
        cts64 = rrule(f, *(a.astype(np.float64) for a in args), **kw)[1](ȳ)[1:]
        for c32, c64 in zip(map(unthunk, cts32), map(unthunk, cts64)):
            assert c32.dtype == np.float32
            np.testing.assert_allclose(c32, c64, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dname", sorted(NO_CLOSED_FORM_CDF))
@pytest.mark.parametrize("kind", CDFS)
def test_cdf_in_x_loc_scale_with_positional_shapes(dname, kind):
    """Shapes passed positionally but held fixed: x, loc and scale are still exact."""
    f = getattr(getattr(st, dname), kind)
    x, shapes, loc, scale = draw(dname, (4,), (4,), 3)
    # The frule against finite differences, shapes fixed ...
    test_frule(f, x, *(N(v) for v in shapes.values()), loc, scale, **TOL)
    # ... and the pullback against the frule: <x̄, ẋ> + <l̄, l̇> + <s̄, ṡ> = <ȳ, ẏ>.
    rng = np.random.default_rng(3)
    ẋ, l̇, ṡ, ȳ = (rng.standard_normal(4) for _ in range(4))
    zeros = [NoTangent() for _ in shapes]
    y, ẏ = frule((NoTangent(), ẋ, *zeros, l̇, ṡ), f, x, *shapes.values(), loc, scale)
    _, pb = rrule(f, x, *shapes.values(), loc, scale)
    cts = pb(ȳ)
    x̄, l̄, s̄ = (unthunk(c) for c in (cts[1], cts[-2], cts[-1]))
    assert np.sum(x̄ * ẋ + l̄ * l̇ + s̄ * ṡ) == pytest.approx(np.sum(ȳ * ẏ), rel=1e-12)
    for name, ct in zip(shapes, cts[2 : 2 + len(shapes)]):
        assert isinstance(ct, NotImplementedTangent)
        with pytest.raises(NotImplementedTangentError, match=f"{dname}.{kind}.*'{name}'"):
            ct + np.ones(4)


@pytest.mark.parametrize("dname", sorted(NO_CLOSED_FORM_CDF))
def test_cdf_shape_tangent_is_not_implemented(dname):
    f = getattr(st, dname).cdf
    x, shapes, loc, scale = draw(dname, (3,), (), 4)
    tangents = (NoTangent(), np.zeros(3), *(1.0 for _ in shapes), 0.0, 0.0)
    _, ẏ = frule(tangents, f, x, *shapes.values(), float(loc), float(scale))
    assert isinstance(ẏ, NotImplementedTangent)
    assert repr(next(iter(shapes))) in ẏ.reason


def test_zero_cotangent_short_circuits():
    _, pb = rrule(st.norm.logpdf, np.ones(3), 0.0, 1.0)
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent(), ZeroTangent(), ZeroTangent())
    _, pb = rrule(st.poisson.pmf, np.array([1, 2]), 1.5)
    assert pb(ZeroTangent()) == (NoTangent(), NoTangent(), ZeroTangent())
    assert frule((NoTangent(), 1.0, NoTangent()), st.poisson.pmf, 1, 1.5)[1] == ZeroTangent()


@pytest.mark.parametrize(
    "f, args",
    [
        (st.gamma.logpdf, (np.array([-1.0, 2.0]), 2.0, 0.0, 1.5)),
        (st.gamma.pdf, (np.array([-1.0, 2.0]), 2.0, 0.0, 1.5)),
        (st.expon.cdf, (np.array([-1.0, 2.0]), 0.0, 1.5)),
        (st.expon.logsf, (np.array([-1.0, 2.0]), 0.0, 1.5)),
        (st.beta.logpdf, (np.array([1.5, 0.4]), 2.0, 3.0, 0.0, 1.0)),
        (st.uniform.pdf, (np.array([2.0, 0.5]), 0.0, 1.0)),
        (st.lognorm.logcdf, (np.array([-1.0, 2.0]), 0.7, 0.0, 1.0)),
        (st.poisson.logpmf, (np.array([-1.0, 2.0]), 1.5)),
        (st.poisson.logpmf, (np.array([2.5, 2.0]), 1.5)),
        (st.binom.logpmf, (np.array([4.0, 2.0]), 3, 0.4)),
    ],
)
def test_zero_outside_the_support(f, args):
    """Outside the support (the first entry) the value is flat: every derivative is 0."""
    y, pb = rrule(f, *args)
    inside = [unthunk(c) for c in pb(np.array([0.0, 1.0]))[1:]]
    outside = [unthunk(c) for c in pb(np.array([1.0, 0.0]))[1:]]
    numbers = [(i, o) for i, o in zip(inside, outside) if not isinstance(o, AbstractZero)]
    assert numbers
    for c_in, c_out in numbers:
        assert np.all(np.asarray(c_out) == 0)
        assert np.all(np.isfinite(c_in))
    assert any(np.any(np.asarray(c_in) != 0) for c_in, _ in numbers)


def test_norm_log_cdf_far_in_the_tails():
    """d/dx log Φ(x) = φ(x)/Φ(x) where Φ underflows; compared with differences of log_ndtr."""
    x = np.array([-40.0, -10.0, 10.0, 40.0])
    h = 1e-5
    fd = (log_ndtr(x + h) - log_ndtr(x - h)) / (2 * h)
    _, pb = rrule(st.norm.logcdf, x)
    np.testing.assert_allclose(unthunk(pb(np.ones(4))[1]), fd, rtol=1e-7)
    _, pb = rrule(st.norm.logsf, -x)
    np.testing.assert_allclose(unthunk(pb(np.ones(4))[1]), -fd, rtol=1e-7)


def test_invalid_parameters_give_nan():
    """scipy's NaN for a negative scale: NaN derivatives there, not numbers."""
    y, pb = rrule(st.norm.logpdf, np.array([1.0, 1.0]), 0.0, np.array([-1.0, 1.0]))
    assert np.isnan(y[0]) and not np.isnan(y[1])
    _, x̄, l̄, s̄ = (unthunk(c) for c in pb(np.ones(2)))
    assert np.isnan(x̄[0]) and np.isnan(s̄[0]) and np.isnan(l̄)
    assert np.isfinite(x̄[1]) and np.isfinite(s̄[1])


# --- discrete ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["pmf", "logpmf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_poisson(kind, dtype):
    f = getattr(st.poisson, kind)
    rng = np.random.default_rng(1)
    k = np.array([[0, 1, 3, 7]])
    mu = rng.uniform(0.5, 5.0, (3, 1)).astype(dtype)
    tol = TOLERANCES[np.dtype(dtype).type]
    for args in ((N(k), mu), (N(k), mu, N(-1)), (N(k.astype(float)), 2.5)):
        test_rrule(f, *args, **tol)
        test_frule(f, *args, **tol)
    test_rrule(f, N(k), fkwargs={"mu": 2.0})  # keyword mu: nothing to differentiate


@pytest.mark.parametrize("kind", ["pmf", "logpmf"])
def test_binom(kind):
    f = getattr(st.binom, kind)
    rng = np.random.default_rng(2)
    k = np.array([0, 1, 3, 5])
    p = rng.uniform(0.1, 0.9, (2, 1))
    for args in ((N(k), N(5), p), (N(k), N(np.array([5, 6, 7, 8])), 0.3, N(0)), (N(2), N(4), 0.6)):
        test_rrule(f, *args, **TOL)
        test_frule(f, *args, **TOL)


def test_pmf_derivative_at_the_parameter_boundary():
    """pmf identities are exact where pmf·∂log pmf is 0·∞."""
    _, pb = rrule(st.poisson.pmf, np.array([0, 1, 2]), 0.0)
    np.testing.assert_allclose(unthunk(pb(np.ones(3))[2]), 0.0)  # -1 + 1 + 0
    _, pb = rrule(st.poisson.pmf, 1, 0.0)
    assert unthunk(pb(1.0)[2]) == 1.0  # d/dμ μe^{-μ} at 0
    _, pb = rrule(st.binom.pmf, 1, 3, 0.0)
    assert unthunk(pb(1.0)[3]) == pytest.approx(3.0)  # d/dp 3p(1-p)² at 0


# --- multivariate_normal --------------------------------------------------------


def spd(d, seed):
    a = np.random.default_rng(seed).standard_normal((d, d))
    return a @ a.T + d * np.eye(d)


def herm(c):
    return 0.5 * (c + np.swapaxes(c, -1, -2))


def on_herm_cov(method):
    """``g(x, mean, c) = method(x, mean, herm(c))`` with rules composed from method's.

    scipy reads the lower triangle of ``cov`` and so do the rules; through herm
    the composition is checked in symmetric directions too (non-symmetric ``cov``:
    test_rules_scipy_linalg_triangle.py).
    """

    def g(x, mean, c):
        return method(x, mean, herm(c))

    @rrule.register(g)
    def _(x, mean, c):
        y, pb = rrule(method, x, mean, herm(c))

        def g_pullback(ȳ):
            _, x̄, m̄, c̄ = pb(ȳ)
            c̄ = unthunk(c̄)
            return NoTangent(), x̄, m̄, c̄ if isinstance(c̄, AbstractZero) else herm(c̄)

        return y, g_pullback

    @frule.register(g)
    def _(ḟ, ẋ, ṁ, ċ, x, mean, c):
        return frule((ḟ, ẋ, ṁ, herm(ċ)), method, x, mean, herm(c))

    return g


MVN_H = {kind: on_herm_cov(getattr(st.multivariate_normal, kind)) for kind in DENSITIES}


@pytest.mark.parametrize("kind", DENSITIES)
@pytest.mark.parametrize("xshape", [(3,), (4, 3), (2, 2, 3), (1, 3)])
def test_multivariate_normal(kind, xshape):
    rng = np.random.default_rng(len(xshape))
    x = rng.standard_normal(xshape)
    mean = rng.standard_normal(3)
    cov = spd(3, 0)
    test_rrule(MVN_H[kind], x, mean, cov, **TOL)
    test_frule(MVN_H[kind], x, mean, cov, **TOL)
    f = getattr(st.multivariate_normal, kind)
    test_rrule(f, x, mean, fkwargs={"cov": cov}, **TOL)  # the rule itself, cov by keyword
    test_frule(f, x, mean, fkwargs={"cov": cov}, **TOL)
    _, pb = rrule(f, x, mean, cov)
    c̄ = unthunk(pb(rng.standard_normal(np.shape(f(x, mean, cov))))[3])
    np.testing.assert_array_equal(np.triu(c̄, 1), 0)  # scipy reads the lower triangle only


@pytest.mark.parametrize("kind", DENSITIES)
@pytest.mark.parametrize(
    "case",
    [
        "scalar-cov",
        "diag-cov",
        "dim1-points",
        "dim1-scalar",
        "no-mean",
        "float32",
        "allow-singular",
    ],
)
def test_multivariate_normal_forms(kind, case):
    f = getattr(st.multivariate_normal, kind)
    rng = np.random.default_rng(5)
    if case == "scalar-cov":
        args = (rng.standard_normal((4, 2)), rng.standard_normal(2), 1.7)
    elif case == "diag-cov":
        args = (rng.standard_normal((4, 3)), rng.standard_normal(3), rng.uniform(0.5, 2, 3))
    elif case == "dim1-points":
        args = (rng.standard_normal(5), 0.3, 2.0)
    elif case == "dim1-scalar":
        args = (0.4, np.array([0.3]), np.array([[2.0]]))
    elif case == "no-mean":
        args = (rng.standard_normal(5), N(None), 1.7)  # scipy: dimension 1
    elif case == "float32":
        args = (rng.standard_normal((4, 2)).astype(np.float32), np.float32([0.1, 0.2]), 1.5)
    else:
        args = (rng.standard_normal((4, 2)), rng.standard_normal(2), 1.5, N(True))
    tol = TOLERANCES[np.float32] if case == "float32" else TOL
    test_rrule(f, *args, **tol)
    test_frule(f, *args, **tol)


def on_support(method, basis, origin):
    """``g(xs, ms, cs) = method(origin + xs Bᵀ, origin + B ms, B herm(cs) Bᵀ, True)``,
    with rules composed from method's: a singular covariance whose support is the
    span of ``B``'s columns, ``x``, ``mean`` and ``cov`` moved within it only (off
    it scipy's value jumps: logpdf ``-inf``, or the rank changes)."""

    def g(xs, ms, cs):
        return method(origin + xs @ basis.T, origin + basis @ ms, basis @ herm(cs) @ basis.T, True)

    @rrule.register(g)
    def _(xs, ms, cs):
        args = (origin + xs @ basis.T, origin + basis @ ms, basis @ herm(cs) @ basis.T, True)
        y, pb = rrule(method, *args)

        def g_pullback(ȳ):
            x̄, m̄, c̄ = map(unthunk, pb(ȳ)[1:4])
            if isinstance(x̄, AbstractZero):
                return NoTangent(), x̄, m̄, c̄
            return NoTangent(), x̄ @ basis, basis.T @ m̄, herm(basis.T @ c̄ @ basis)

        return y, g_pullback

    @frule.register(g)
    def _(ḟ, ẋ, ṁ, ċ, xs, ms, cs):
        args = (origin + xs @ basis.T, origin + basis @ ms, basis @ herm(cs) @ basis.T, True)
        tangents = (ẋ @ basis.T, basis @ ṁ, basis @ herm(ċ) @ basis.T, NoTangent())
        return frule((ḟ, *tangents), method, *args)

    return g


@pytest.mark.parametrize("kind", DENSITIES)
@pytest.mark.parametrize("dims", [(4, 2), (3, 1), (5, 3)])
@pytest.mark.parametrize("xshape", [(), (4,), (2, 3)])
def test_multivariate_normal_singular_covariance(kind, dims, xshape):
    """The density on the support (scipy's pseudo-inverse and pseudo-determinant),
    differentiated in x, mean and cov within the support, which is turned away from
    the coordinate axes."""
    d, k = dims
    rng = np.random.default_rng(d * 10 + k + len(xshape))
    basis = np.linalg.qr(rng.standard_normal((d, d)))[0][:, :k]
    g = on_support(getattr(st.multivariate_normal, kind), basis, rng.standard_normal(d))
    args = (0.5 * rng.standard_normal((*xshape, k)), 0.5 * rng.standard_normal(k), spd(k, d))
    test_rrule(g, *args, **TOL)
    test_frule(g, *args, **TOL)


@pytest.mark.parametrize("kind", DENSITIES)
def test_multivariate_normal_singular_hand_derived(kind):
    """``cov = diag(1, 1, 0, 0)``: the density of the first two coordinates, a
    standard normal, ``∂/∂x = -(x - mean)`` there and 0 off it (times pdf for pdf);
    ``∂/∂cov = ((x - mean)(x - mean)ᵀ - I)/2`` on the support block, 0 elsewhere."""
    cov = np.diag([1.0, 1.0, 0.0, 0.0])
    x, mean = np.array([0.3, -1.2, 0.5, 0.0]), np.array([-0.4, 0.2, 0.5, 0.0])
    f = getattr(st.multivariate_normal, kind)
    y, pb = rrule(f, x, mean, cov, True)
    r = (x - mean)[:2]
    w = y if kind == "pdf" else 1.0
    _, x̄, m̄, c̄ = map(unthunk, pb(1.0)[:4])
    np.testing.assert_allclose(x̄, w * np.array([*-r, 0.0, 0.0]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(m̄, -x̄, rtol=1e-12, atol=1e-15)
    want = np.zeros((4, 4))
    want[:2, :2] = w * (np.outer(r, r) - np.eye(2)) / 2
    np.testing.assert_allclose(c̄, np.tril(2 * want) - np.diag(np.diag(want)), atol=1e-14)
    ẏ = frule((None, np.ones(4), np.zeros(4), np.zeros((4, 4)), NoTangent()), f, x, mean, cov, True)
    assert ẏ[1] == pytest.approx(-w * r.sum())


@pytest.mark.parametrize("kind", DENSITIES)
def test_multivariate_normal_off_the_support_gets_zero(kind):
    """A point off a singular covariance's support: logpdf -inf, pdf 0, both constant
    nearby: zero cotangents and tangents (the point on the support is differentiated)."""
    cov = np.diag([1.0, 2.0, 0.0])
    x = np.array([[0.3, -1.2, 0.0], [0.3, -1.2, 0.5]])  # the second off the support
    f = getattr(st.multivariate_normal, kind)
    y, pb = rrule(f, x, np.zeros(3), cov, True)
    assert y[1] == (-np.inf if kind == "logpdf" else 0.0)
    x̄ = unthunk(pb(np.ones(2))[1])
    assert np.all(np.isfinite(x̄)) and not np.any(x̄[1]) and np.any(x̄[0])
    ẏ = frule(
        (None, np.ones((2, 3)), ZeroTangent(), ZeroTangent(), NoTangent()),
        f,
        x,
        np.zeros(3),
        cov,
        True,
    )[1]
    assert ẏ[1] == 0.0 and ẏ[0] != 0.0


def test_multivariate_normal_covariance_objects():
    x, mean = np.array([[1.0, 2.0], [0.5, 1.0]]), np.zeros(2)
    cov = spd(2, 1)
    y, pb = rrule(
        st.multivariate_normal.logpdf, x, mean, st.Covariance.from_precision(np.linalg.inv(cov))
    )
    _, x̄, m̄, c̄ = map(unthunk, pb(np.ones(2)))
    _, x̄0, m̄0, _ = map(unthunk, rrule(st.multivariate_normal.logpdf, x, mean, cov)[1](np.ones(2)))
    np.testing.assert_allclose(x̄, x̄0, rtol=1e-10)
    np.testing.assert_allclose(m̄, m̄0, rtol=1e-10)
    assert isinstance(c̄, NotImplementedTangent) and "Covariance" in c̄.reason


# --- dirichlet ----------------------------------------------------------------------


def simplex(k, n, seed):
    """``n`` points (columns) inside the K-simplex, away from its faces."""
    g = np.random.default_rng(seed).uniform(1.0, 2.0, (k, n))
    return g / g.sum(0)


@pytest.mark.parametrize("kind", DENSITIES)
@pytest.mark.parametrize("n", [None, 1, 4])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dirichlet_without_last_component(kind, n, dtype):
    """x with K - 1 rows (scipy appends 1 - Σx): unconstrained, checked against differences."""
    f = getattr(st.dirichlet, kind)
    x = simplex(4, n or 1, n or 0)[:-1]
    x = (x[:, 0] if n is None else x).astype(dtype)
    alpha = np.random.default_rng(7).uniform(0.5, 3.0, 4).astype(dtype)
    if dtype == np.float64:
        test_rrule(f, x, alpha, **TOL)
        test_frule(f, x, alpha, **TOL)
    else:  # float32 steps leave the simplex: compare with the float64 rule
        ȳ = np.random.default_rng(0).standard_normal(np.shape(f(x, alpha)))
        cts32 = rrule(f, x, alpha)[1](ȳ)[1:]
        cts64 = rrule(f, x.astype(np.float64), alpha.astype(np.float64))[1](ȳ)[1:]
        for c32, c64 in zip(map(unthunk, cts32), map(unthunk, cts64)):
            assert c32.dtype == np.float32
            np.testing.assert_allclose(c32, c64, rtol=1e-6)


@pytest.mark.parametrize("kind", DENSITIES)
@pytest.mark.parametrize("n", [None, 3])
def test_dirichlet_full_x_along_the_simplex(kind, n):
    """x with K rows must stay on the simplex: tangents that sum to zero, and the
    pullback checked against the frule along them (<x̄, ẋ> + <ᾱ, α̇> = <ȳ, ẏ>)."""
    f = getattr(st.dirichlet, kind)
    rng = np.random.default_rng(8)
    x = simplex(3, n or 1, 9)
    x = x[:, 0] if n is None else x
    alpha = rng.uniform(0.5, 3.0, 3)
    ẋ = rng.standard_normal(x.shape)
    ẋ = 0.1 * (ẋ - ẋ.mean(0))
    α̇ = rng.standard_normal(3)
    test_frule(f, primal_and_tangent(x, ẋ), primal_and_tangent(alpha, α̇), **TOL)
    y, ẏ = frule((NoTangent(), ẋ, α̇), f, x, alpha)
    ȳ = rng.standard_normal(np.shape(y))
    _, x̄, ᾱ = rrule(f, x, alpha)[1](ȳ)
    lhs = np.sum(unthunk(x̄) * ẋ) + np.sum(unthunk(ᾱ) * α̇)
    assert lhs == pytest.approx(np.sum(ȳ * ẏ), rel=1e-10)


# --- the bound methods, the lazy loading and the inventory ------------------------


def test_fresh_bound_methods_find_the_rule():
    m1, m2 = st.norm.logpdf, st.norm.logpdf
    assert m1 is not m2
    assert m2 in rrule.table._rules  # what an AD tests before it looks up
    assert st.t.logpdf in rrule.table._rules and st.t.logpdf != st.norm.logpdf
    assert rrule(st.norm(0, 1).logpdf, 0.0) is None  # a frozen distribution: no rule


def test_import_rules_does_not_import_scipy_stats():
    code = (
        "import sys, rules\n"
        "assert 'scipy.stats' not in sys.modules, 'import rules imported scipy.stats'\n"
        "import scipy.stats\n"
        "from rulescore import rrule\n"
        "assert rrule(scipy.stats.norm.logpdf, 0.0) is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_inventory_lists_the_methods():
    entries = {(e.module, e.name): e for e in rules.inventory() if e.module == "scipy.stats"}
    for name in ("norm.logpdf", "gamma.logcdf", "binom.pmf", "multivariate_normal.logpdf"):
        assert entries[("scipy.stats", name)].has_rrule
        assert entries[("scipy.stats", name)].has_frule
    assert ("scipy.stats", "dirichlet.logpdf") in entries


def test_list_arguments():
    """scipy reads lists as arrays; their cotangents come back as lists."""
    test_rrule(st.norm.logpdf, [0.5, 1.0], 0.0, [1.0, 2.0], **TOL)
    test_frule(st.norm.logpdf, [0.5, 1.0], 0.0, [1.0, 2.0], **TOL)
