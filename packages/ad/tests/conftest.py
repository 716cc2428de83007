"""Shared test helpers for ad: a finite-difference gradient to check against; the
path entry makes ``ad_testing`` (helpers shared as plain functions) importable."""

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def _numgrad(f, args, i, h=1e-6):
    """Central-difference gradient of real-valued f with respect to args[i]."""
    x = args[i]
    if isinstance(x, (int, float)) and not isinstance(x, bool):

        def at(v):
            a = list(args)
            a[i] = v
            return f(*a)

        return (at(x + h) - at(x - h)) / (2 * h)
    if isinstance(x, complex):

        def at(v):
            a = list(args)
            a[i] = v
            return f(*a)

        re = (at(x + h) - at(x - h)) / (2 * h)
        im = (at(x + 1j * h) - at(x - 1j * h)) / (2 * h)
        return re + 1j * im
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[k] += h
        xm[k] -= h
        a, b = list(args), list(args)
        a[i], b[i] = xp, xm
        g[k] = (f(*a) - f(*b)) / (2 * h)
    return g


@pytest.fixture
def numgrad():
    """numgrad(f, *args) -> tuple of finite-difference gradients, one per argument."""

    def run(f, *args):
        return tuple(_numgrad(f, args, i) for i in range(len(args)))

    return run


@pytest.fixture
def check_grad(numgrad):
    """Assert ad.gradient agrees with finite differences for every argument."""
    import ad

    def run(f, *args, rtol=1e-5, atol=1e-7):
        got = ad.gradient(f, *args)
        want = numgrad(f, *args)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)
        return got

    return run


@pytest.fixture
def no_inlining():
    """Helpers stay calls (``ad.transform.inlining``): for tests of the call
    machinery itself. Transforms built meanwhile are dropped afterwards."""
    from ad_testing import helpers_as_calls

    with helpers_as_calls():
        yield
