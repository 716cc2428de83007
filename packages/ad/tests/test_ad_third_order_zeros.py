"""Third-order forward mode (``jvp`` of ``jvp`` of ``jvp``) where a derivative is
identically zero: the user gets ``0.0``, as at first and second order, never a
``ZeroTangent()`` object (an inner ``jvp``'s tangent kept in rulescore's form)."""

from __future__ import annotations

import numpy as np
import pytest

import ad


def D(f):
    return lambda x: ad.jvp(f, (x,), (1.0,))[1]


@pytest.mark.parametrize(
    "f, third",
    [
        (lambda x: 3.0, 0.0),
        (lambda x: 2.0 * x, 0.0),
        (lambda x: x * x, 0.0),
        (lambda x: x**3, 6.0),
        (lambda x: np.sin(x), -np.cos(1.3)),
    ],
)
def test_third_derivative_in_forward_mode(f, third):
    got = D(D(D(f)))(1.3)
    assert type(got) in (float, np.float64)
    assert got == pytest.approx(third)


def test_the_values_at_each_level_are_numbers():
    y, ẏ = ad.jvp(D(D(lambda x: 3.0)), (1.3,), (1.0,))
    assert (y, ẏ) == (0.0, 0.0)
    assert type(y) is float and type(ẏ) is float
