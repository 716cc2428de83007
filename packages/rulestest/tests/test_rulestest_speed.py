"""Cost: checking a rule on a 100x100 matrix evaluates the function a few dozen
times, not once per coordinate.

Large inputs are checked along a few random directions (one vector-valued
finite difference each), not coordinate by coordinate. The test counts calls
(a property of the algorithm) rather than timing them (a property of the machine).
"""

from __future__ import annotations

import numpy as np
import pytest

from rulescore import NoTangent, ProjectTo, frule, rrule, unthunk
from rulestest import test_frule, test_rrule

CALLS = [0]


def s_square(X):
    CALLS[0] += 1
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
    CALLS[0] += 1
    return np.sin(X)


@rrule.register(s_sin)
def _(X: np.ndarray):
    def s_sin_pullback(ȳ):
        return NoTangent(), ProjectTo(X)(ȳ * np.cos(X))

    return s_sin(X), s_sin_pullback


@pytest.mark.parametrize("f", [s_square, s_sin])
def test_100x100_matrix_takes_few_evaluations(f):
    X = np.random.default_rng(0).standard_normal((100, 100))
    CALLS[0] = 0
    test_rrule(f, X)
    # Coordinate by coordinate would be 10^4 directions times the stencil's points.
    assert 0 < CALLS[0] < 200, f"test_rrule evaluated the function {CALLS[0]} times"
    if f is s_square:
        CALLS[0] = 0
        test_frule(f, X)
        assert 0 < CALLS[0] < 200, f"test_frule evaluated the function {CALLS[0]} times"
