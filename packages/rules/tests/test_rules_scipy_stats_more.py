"""Tests of rules._scipy_stats_more: poisson CDFs, norm quantiles, mvn entropy."""

import numpy as np
import pytest
import scipy.stats as st
from rules_testing import TOLERANCES, N

import rules  # noqa: F401  (registers the rules)
from rulescore import AbstractZero, NoTangent, ZeroTangent, frule, rrule, unthunk
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

TOL = {"rtol": 1e-6, "atol": 1e-8}


@pytest.mark.parametrize("kind", ["cdf", "logcdf", "sf", "logsf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_poisson_cdfs(kind, dtype):
    f = getattr(st.poisson, kind)
    rng = np.random.default_rng(4)
    k = np.array([[-1, 0, 1, 3, 7]])
    if kind.startswith("log"):  # log 0 = -inf below the support: no finite differences
        k = k[:, 1:]
    mu = rng.uniform(0.5, 5.0, (3, 1)).astype(dtype)
    tol = TOLERANCES[np.dtype(dtype).type]
    for args in ((N(k), mu), (N(k), mu, N(-1)), (N(np.array([0.5, 2.7])), 2.5)):
        test_rrule(f, *args, **tol)
        test_frule(f, *args, **tol)


def test_poisson_cdf_is_minus_pmf_at_floor_k():
    _, pb = rrule(st.poisson.cdf, 2.9, 1.5, 0)
    df, dk, dmu, dloc = map(unthunk, pb(1.0))
    assert (df, dk, dloc) == (NoTangent(), NoTangent(), NoTangent())
    np.testing.assert_allclose(dmu, -st.poisson.pmf(2, 1.5))
    assert unthunk(pb(ZeroTangent())[2]) == ZeroTangent()


@pytest.mark.parametrize("kind", ["ppf", "isf"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_norm_quantiles(kind, dtype):
    f = getattr(st.norm, kind)
    rng = np.random.default_rng(5)
    lo = 0.05 if dtype == np.float64 else 0.2  # float32 differences lose the steep tails
    q = rng.uniform(lo, 1 - lo, (2, 3)).astype(dtype)
    loc = rng.standard_normal(3).astype(dtype)
    scale = rng.uniform(0.5, 2.0, (2, 1)).astype(dtype)
    tol = TOLERANCES[np.dtype(dtype).type]
    for args in ((q,), (q, loc), (q, loc, scale), (0.3, 1.0, 2.0)):
        test_rrule(f, *args, **tol)
        test_frule(f, *args, **tol)


def test_norm_ppf_at_the_ends_is_infinite():
    _, pb = rrule(st.norm.ppf, np.array([0.0, 1.0, 0.5]))
    dq = unthunk(pb(np.ones(3))[1])
    assert np.isinf(dq[0]) and np.isinf(dq[1]) and np.isfinite(dq[2])


def spd(d, seed):
    a = np.random.default_rng(seed).standard_normal((d, d))
    return a @ a.T + d * np.eye(d)


def herm(c):
    return 0.5 * (c + c.T)


def entropy_h(mean, c):
    """``multivariate_normal.entropy(mean, herm(c))``: what finite differences see."""
    return st.multivariate_normal.entropy(mean, herm(c))


@rrule.register(entropy_h)
def _(mean, c):
    y, pb = rrule(st.multivariate_normal.entropy, mean, herm(c))

    def entropy_h_pullback(ȳ):
        _, m̄, c̄ = map(unthunk, pb(ȳ))
        return NoTangent(), m̄, c̄ if isinstance(c̄, AbstractZero) else herm(c̄)

    return y, entropy_h_pullback


@frule.register(entropy_h)
def _(ḟ, ṁ, ċ, mean, c):
    return frule((ḟ, ṁ, herm(ċ)), st.multivariate_normal.entropy, mean, herm(c))


@pytest.mark.parametrize("d", [1, 3])
def test_mvn_entropy(d):
    mean = np.random.default_rng(d).standard_normal(d)
    test_rrule(entropy_h, mean, spd(d, d), **TOL)
    test_frule(entropy_h, mean, spd(d, d), **TOL)
    _, pb = rrule(st.multivariate_normal.entropy, mean, spd(d, d))
    _, m̄, c̄ = pb(1.0)
    assert m̄ == ZeroTangent()
    np.testing.assert_array_equal(np.triu(c̄, 1), 0)  # scipy reads the lower triangle only


@pytest.mark.parametrize("cov", [2.5, np.array([0.5, 1.5, 3.0])])
def test_mvn_entropy_scalar_and_diagonal_cov(cov):
    mean = np.zeros(3)
    test_rrule(st.multivariate_normal.entropy, mean, cov, **TOL)
    test_frule(st.multivariate_normal.entropy, mean, cov, **TOL)
    test_rrule(st.multivariate_normal.entropy, N(None), 1.7, **TOL)  # d = 1
