"""Tests of the scipy.signal convolution rules (rules._scipy_signal)."""

import numpy as np
import pytest
import scipy.signal as ss
from rules_testing import DTYPES, TOLERANCES, N, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, rrule
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

FUNCTIONS = [ss.convolve, ss.correlate, ss.fftconvolve, ss.oaconvolve]
SHAPES = [((5,), (3,)), ((3,), (4,)), ((4, 3), (2, 2)), ((2, 3, 3), (2, 1, 2))]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("sa, sv", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_convolutions(f, mode, sa, sv, dtype):
    if mode == "valid" and not (
        all(p >= q for p, q in zip(sa, sv)) or all(p <= q for p, q in zip(sa, sv))
    ):
        pytest.skip("scipy needs one input at least as large as the other in 'valid' mode")
    m = maker(dtype)
    a, v = m(*sa), m(*sv)
    tol = TOLERANCES[dtype]
    test_rrule(f, a, v, fkwargs={"mode": mode}, **tol)
    test_frule(f, a, v, fkwargs={"mode": mode}, **tol)


@pytest.mark.parametrize("f", [ss.convolve, ss.correlate])
def test_positional_mode_and_method(f):
    m = maker(np.float64)
    a, v = m(6), m(3)
    test_rrule(f, a, v, N("same"), N("direct"))
    test_frule(f, a, v, N("same"), N("fft"))
    _, pb = rrule(f, a, v, "valid")
    out = pb(np.ones(4))
    assert out[0] == NoTangent() and out[3] == NoTangent()
    assert pb(ZeroTangent())[1:3] == (ZeroTangent(), ZeroTangent())


def test_axes_refused():
    with pytest.raises(TypeError, match="axes"):
        rrule(ss.fftconvolve, np.ones((2, 3)), np.ones((2, 2)), axes=1)
