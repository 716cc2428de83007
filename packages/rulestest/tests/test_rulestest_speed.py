"""Speed: checking a rule on a 100x100 matrix takes well under a second.

Large inputs are checked along a few random directions (one vector-valued
finite difference each), not coordinate by coordinate.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from rulescore import NoTangent, ProjectTo, frule, rrule, unthunk
from rulestest import test_frule, test_rrule


def s_square(X):
    return X @ X


@rrule.register(s_square)
def _(X: np.ndarray):
    def s_square_pullback(ȳ):
        ȳ = unthunk(ȳ)
        return NoTangent(), ProjectTo(X)(ȳ @ X.T + X.T @ ȳ)

    return s_square(X), s_square_pullback


@frule.register(s_square)
def _(ḟ, Ẋ, X: np.ndarray):
    return s_square(X), Ẋ @ X + X @ Ẋ


def s_sin(X):
    return np.sin(X)


@rrule.register(s_sin)
def _(X: np.ndarray):
    def s_sin_pullback(ȳ):
        return NoTangent(), ProjectTo(X)(ȳ * np.cos(X))

    return s_sin(X), s_sin_pullback


@pytest.mark.parametrize("f", [s_square, s_sin])
def test_100x100_matrix_is_fast(f):
    X = np.random.default_rng(0).standard_normal((100, 100))
    start = time.perf_counter()
    test_rrule(f, X)
    elapsed = time.perf_counter() - start
    # Measured about 0.01 s on a 2-core machine; a loose bound keeps CI stable.
    assert elapsed < 0.5, f"test_rrule took {elapsed:.3f} s"
    if f is s_square:
        test_frule(f, X)
