"""``scipy.stats.multivariate_normal.pdf``/``logpdf`` with a singular covariance
(``allow_singular=True``) through ad, to second order (issue 20, autograd's
``test_mvn_sing_cov``).

The rule had no derivative for a singular covariance (a ``NotImplementedTangent``,
which ad's shape check reported as a cotangent of shape ``()`` for ``x``). scipy's
value is the density on the support (pseudo-inverse, pseudo-determinant); the rule
now differentiates that. Checked against central differences along directions
within the support (off it, scipy's value jumps to ``-inf``), in ``x``, ``mean``
and ``cov``, for one point and a stack, in reverse and forward mode and each pair
of modes (differences of first derivatives), and on autograd's own program.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import ad

scipy_stats = pytest.importorskip("scipy.stats")
mvn = scipy_stats.multivariate_normal


def _problem(kind, npoints, seed=0):
    """``g(xs, ms, cs)``: the density, summed over points, of a rank-2 covariance in
    4 dimensions whose support (a turned plane) x, mean and cov move within."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((4, 4)))[0][:, :2]
    origin = rng.standard_normal(4)
    f = getattr(mvn, kind)

    def g(xs, ms, cs):
        cov = basis @ (0.5 * (cs + cs.T)) @ basis.T
        return np.sum(f(origin + xs @ basis.T, origin + basis @ ms, cov, allow_singular=True))

    a = rng.standard_normal((2, 2))
    args = (
        0.6 * rng.standard_normal((*npoints, 2)),
        0.6 * rng.standard_normal(2),
        a @ a.T + np.eye(2),
    )
    tangents = tuple(rng.standard_normal(np.shape(v)) for v in args)
    return g, args, tangents


@contextlib.contextmanager
def _null_space_rotations_ignored():
    """eigh's two zero eigenvalues warn at second order: the rule keeps only the
    support's eigenpairs, invariant under rotations of the null eigenvectors (the
    warning's condition for exactness). (With ``cov`` constant the warning still
    comes: the rule's body reads ``cov`` from a dict that also holds ``x``, so the
    outer pass differentiates eigh of it, to a cotangent nobody asked for.)"""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "numpy.linalg.eigh: .nearly. equal eigenvalues")
        yield


def _fd(f, args, ts, h=1e-5):
    plus = [a + h * t for a, t in zip(args, ts)]
    minus = [a - h * t for a, t in zip(args, ts)]
    return (f(*plus) - f(*minus)) / (2 * h)


def _rev(f, ts):
    return lambda *a: sum(float(np.sum(g * t)) for g, t in zip(ad.gradient(f, *a), ts))


def _fwd(f, ts):
    return lambda *a: ad.jvp(f, a, ts)[1]


MODES = {"r": _rev, "f": _fwd}


@pytest.mark.parametrize("npoints", [(), (3,)])
@pytest.mark.parametrize("mode", ["r", "f"])
@pytest.mark.parametrize("kind", ["pdf", "logpdf"])
def test_first_order_along_the_support(kind, mode, npoints):
    g, args, ts = _problem(kind, npoints)
    assert MODES[mode](g, ts)(*args) == pytest.approx(_fd(g, args, ts), rel=1e-7)


@pytest.mark.parametrize("npoints", [(), (3,)])
@pytest.mark.parametrize("pair", ["ff", "fr", "rf", "rr"])
@pytest.mark.parametrize("kind", ["pdf", "logpdf"])
def test_second_order_along_the_support(kind, pair, npoints):
    g, args, ts = _problem(kind, npoints, seed=1)
    inner = MODES[pair[1]](g, ts)
    with _null_space_rotations_ignored():
        got = MODES[pair[0]](inner, ts)(*args)
    assert got == pytest.approx(_fd(inner, args, ts), rel=1e-6)


@pytest.mark.parametrize("kind", ["pdf", "logpdf"])
def test_autograd_mvn_sing_cov(kind):
    """autograd's program: ``x``'s last two entries taken from ``mean``; gradient
    and Hessian-vector products in x and mean against differences."""
    cov = np.zeros((4, 4))
    cov[0, 0] = cov[1, 1] = 1
    f = getattr(mvn, kind)

    def pdf(x, mean):
        x = np.concatenate([x[:2], mean[2:]])
        return f(x, mean, cov, allow_singular=True)

    rng = np.random.default_rng(0)
    x = np.concatenate((rng.normal(size=2), np.zeros(2)))
    mean = np.concatenate((rng.normal(size=2), np.zeros(2)))
    gx, gm = ad.gradient(pdf, x, mean)
    y = pdf(x, mean)
    w = y if kind == "pdf" else 1.0
    r = x[:2] - mean[:2]
    np.testing.assert_allclose(gx, w * np.array([*-r, 0.0, 0.0]), rtol=1e-12)
    np.testing.assert_allclose(gm, w * np.array([*r, 0.0, 0.0]), rtol=1e-12)
    ts = (rng.normal(size=4), rng.normal(size=4))
    for pair in ("ff", "fr", "rf", "rr"):
        inner = MODES[pair[1]](pdf, ts)
        with _null_space_rotations_ignored():
            got = MODES[pair[0]](inner, ts)(x, mean)
        assert got == pytest.approx(_fd(inner, (x, mean), ts), rel=1e-6), pair
