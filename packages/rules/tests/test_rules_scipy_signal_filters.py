"""Tests of the scipy.signal ``lfilter`` and ``detrend`` rules (rules._scipy_signal_filters)."""

import numpy as np
import pytest
import scipy.signal as ss
from rules_testing import DTYPES, TOLERANCES, N, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

dtype_ids = lambda d: np.dtype(d).name  # noqa: E731


def tol(dtype):
    return {"rtol": 1e-2, "atol": 1e-3} if dtype is np.float32 else TOLERANCES[dtype]


def stable(dtype, n):
    """Denominator coefficients with all poles well inside the unit circle."""
    a = 0.3 * maker(dtype)(n)
    a[0] = 1.0 + 0.5 * abs(a[0])
    return a


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("nb", "na", "shape", "axis"),
    [
        (2, 2, (8,), -1),
        (3, 1, (6,), -1),
        (1, 3, (7,), 0),
        (3, 2, (4, 5), 0),
        (2, 3, (3, 6), 1),
    ],
)
def test_lfilter(nb, na, shape, axis, dtype):
    m = maker(dtype)
    args = (m(nb), stable(dtype, na), m(*shape))
    test_rrule(ss.lfilter, *args, fkwargs={"axis": axis}, **tol(dtype))
    test_frule(ss.lfilter, *args, fkwargs={"axis": axis}, **tol(dtype))


def test_lfilter_positional_axis_and_long_numerator():
    m = maker(np.float64)
    args = (m(9), stable(np.float64, 2), m(3, 5), N(1))  # more taps than samples
    test_rrule(ss.lfilter, *args)
    test_frule(ss.lfilter, *args)


def test_lfilter_by_hand():
    # y[n] = x[n] + 0.5 y[n-1]: y = (1, 1.5, 1.75) for x = 1; ∂y₂/∂a₁ = -(y₁ + 0.5 y₀) = -2,
    # ∂y₂/∂a₀ = -(y₂ + 0.5 y₁ + 0.25 y₀) = -2.75
    b, a, x = np.array([1.0]), np.array([1.0, -0.5]), np.ones(3)
    y, pb = rrule(ss.lfilter, b, a, x)
    _, db, da, dx = pb(np.array([0.0, 0.0, 1.0]))
    np.testing.assert_allclose(dx, [0.25, 0.5, 1.0])
    np.testing.assert_allclose(db, [1.75])
    np.testing.assert_allclose(da, [-2.75, -2.0])  # ∂y₂/∂a₀ = -(y₂ + 0.5·1 + 0.25·1)
    _, ẏ = frule((NoTangent(), np.zeros(1), np.array([0.0, 1.0]), np.zeros(3)), ss.lfilter, b, a, x)
    np.testing.assert_allclose(ẏ, [0.0, -1.0, -2.0])
    assert pb(ZeroTangent())[1:] == (ZeroTangent(),) * 3


def test_lfilter_with_zi_is_refused():
    with pytest.raises(NotImplementedError, match="zi"):
        rrule(ss.lfilter, np.ones(2), np.ones(1), np.ones(4), -1, np.zeros(1))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_ids)
@pytest.mark.parametrize(
    ("shape", "kw"),
    [
        ((9,), {}),
        ((9,), {"type": "constant"}),
        ((4, 6), {"axis": 0}),
        ((10,), {"bp": [4]}),
    ],
)
def test_detrend(shape, kw, dtype):
    x = maker(dtype)(*shape)
    test_rrule(ss.detrend, x, fkwargs=kw, **tol(dtype))
    test_frule(ss.detrend, x, fkwargs=kw, **tol(dtype))


def test_detrend_by_hand():
    # a line is removed entirely; a constant cotangent maps to zero (the adjoint of a
    # projection that kills constants)
    y, pb = rrule(ss.detrend, np.array([1.0, 3.0, 5.0, 7.0]))
    np.testing.assert_allclose(y, 0.0, atol=1e-12)
    np.testing.assert_allclose(pb(np.ones(4))[1], 0.0, atol=1e-12)
    np.testing.assert_allclose(pb(np.array([1.0, -1.0, -1.0, 1.0]))[1], [1.0, -1.0, -1.0, 1.0])


# --- savgol_filter (rules._scipy_signal_savgol) ------------------------------------

REAL = [np.float64, np.float32]  # scipy filters complex input as its real part
MODES = ["mirror", "constant", "nearest", "wrap", "interp"]


@pytest.mark.parametrize("dtype", REAL, ids=dtype_ids)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("shape", "window", "order", "axis"),
    [((9,), 5, 2, -1), ((4, 30), 7, 3, 1), ((25, 3), 5, 2, 0), ((6,), 3, 1, 0)],
)
def test_savgol_filter(shape, window, order, axis, mode, dtype):
    # (4, 30) and (25, 3) take the band-plus-edges path (more than 4 windows of samples)
    x = maker(dtype)(*shape)
    kw = {"axis": axis, "mode": mode}
    test_rrule(ss.savgol_filter, x, N(window), N(order), fkwargs=kw, **tol(dtype))
    test_frule(ss.savgol_filter, x, N(window), N(order), fkwargs=kw, **tol(dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("n", "window"), [(12, 4), (41, 9)])
def test_savgol_filter_deriv_delta_cval(mode, n, window):
    if mode == "interp" and window % 2 == 0:
        pytest.skip("mode='interp' needs an odd window")
    x = maker(np.float64)(n)
    args = (x, N(window), N(3), N(2), 0.7, N(-1), N(mode), 0.4)  # delta and cval active
    test_rrule(ss.savgol_filter, *args)
    test_frule(ss.savgol_filter, *args)


def test_savgol_filter_by_hand():
    # window 3, order 1, mode nearest: y₀ = (2x₀ + x₁)/3, yᵢ = (xᵢ₋₁ + xᵢ + xᵢ₊₁)/3;
    # deriv 1: yᵢ = (xᵢ₊₁ - xᵢ₋₁)/(2δ), so ∂y/∂δ = -y/δ
    x = np.array([1.0, 4.0, 2.0, 8.0])
    y, pb = rrule(ss.savgol_filter, x, 3, 1, mode="nearest")
    np.testing.assert_allclose(pb(np.array([1.0, 0.0, 0.0, 1.0]))[1], [2 / 3, 1 / 3, 1 / 3, 2 / 3])
    y, pb = rrule(ss.savgol_filter, x, 3, 1, 1, 0.5, -1, "mirror")
    np.testing.assert_allclose(y[1:3], [(2.0 - 1.0) / 1.0, (8.0 - 4.0) / 1.0])
    cts = pb(np.array([0.0, 1.0, 0.0, 0.0]))
    np.testing.assert_allclose(cts[1], [-1.0, 0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(cts[5], -y[1] / 0.5)
    _, ẏ = frule((NoTangent(), x, *(NoTangent(),) * 2), ss.savgol_filter, x, 3, 1)
    np.testing.assert_allclose(ẏ, ss.savgol_filter(x, 3, 1))
    assert pb(ZeroTangent())[1] == ZeroTangent()
