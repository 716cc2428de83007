"""Tests of the unary numpy ufunc rules (rules._numpy_elementwise) against finite differences."""

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rules._numpy_elementwise import HOLOMORPHIC, PIECEWISE_CONSTANT
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import primal_and_tangent, test_frule, test_rrule

# Real inputs are drawn inside each function's domain, away from kinks.
REAL_DOMAIN = {
    np.arcsin: (-0.7, 0.7),
    np.arccos: (-0.7, 0.7),
    np.arctanh: (-0.7, 0.7),
    np.arccosh: (1.3, 2.0),
    np.log: (0.5, 2.0),
    np.log2: (0.5, 2.0),
    np.log10: (0.5, 2.0),
    np.log1p: (-0.5, 1.0),
    np.sqrt: (0.5, 2.0),
    np.cbrt: (0.5, 2.0),
    np.reciprocal: (0.5, 2.0),
}
REAL_ONLY = {np.cbrt, np.deg2rad, np.radians, np.rad2deg, np.degrees}
# Away from every branch cut of the holomorphic functions (all on the axes, |.| >= 1).
COMPLEX_RE, COMPLEX_IM = (-0.7, 0.7), (0.2, 0.6)

SHAPES = {"scalar": None, "0-d": (), "vector": (3,), "matrix": (2, 3)}
TOL = {
    np.float64: {"rtol": 1e-7, "atol": 1e-9},
    np.float32: {"rtol": 1e-2, "atol": 1e-3},
    np.complex128: {"rtol": 1e-7, "atol": 1e-9},
}


def make(shape, dtype, lo=-1.0, hi=1.0, seed=0):
    """A Python number for shape None, else an array of that shape and dtype in [lo, hi]."""
    rng = np.random.default_rng(seed)
    size = () if shape is None else shape
    x = rng.uniform(lo, hi, size)
    if np.dtype(dtype).kind == "c":
        x = rng.uniform(*COMPLEX_RE, size) + 1j * rng.uniform(*COMPLEX_IM, size)
    if shape is None:
        return complex(x) if np.dtype(dtype).kind == "c" else float(x)
    return np.asarray(x, dtype=dtype)


def _name(f):
    return f.__name__


UNARY_CASES = [
    pytest.param(f, shape, dtype, id=f"{f.__name__}-{shape_name}-{np.dtype(dtype).name}")
    for f in HOLOMORPHIC
    for shape_name, shape in SHAPES.items()
    for dtype in (np.float64, np.float32, np.complex128)
    if not (dtype is np.complex128 and f in REAL_ONLY)
    if not (dtype is np.float32 and shape is None)
]


@pytest.mark.parametrize("f, shape, dtype", UNARY_CASES)
def test_holomorphic_unary(f, shape, dtype):
    lo, hi = REAL_DOMAIN.get(f, (-1.0, 1.0))
    if dtype is np.float32:  # float32 finite differences take long steps: stay well inside
        lo, hi = lo + 0.25 * (hi - lo), hi - 0.25 * (hi - lo)
    x = make(shape, dtype, lo, hi)
    test_rrule(f, x, **TOL[dtype])
    test_frule(f, x, **TOL[dtype])


@pytest.mark.parametrize("f", [np.arccosh, np.arcsin, np.arctanh, np.log, np.sqrt], ids=_name)
def test_complex_left_half_plane(f):
    # Branches where sqrt(x²-1)-style formulas would pick the wrong sign.
    x = -make((2, 2), np.complex128, seed=1).conj()
    test_rrule(f, x)
    test_frule(f, x)


def test_list_input_gets_array_cotangent():
    _y, pb = rrule(np.sin, [0.1, 0.2])
    np.testing.assert_allclose(pb(np.ones(2))[1], np.cos([0.1, 0.2]))


@pytest.mark.parametrize("f", PIECEWISE_CONSTANT, ids=_name)
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
def test_piecewise_constant_has_zero_derivative(f, shape):
    x = make(shape, np.float64, 0.1, 0.4)  # away from the integers and half-integers
    test_rrule(f, x)
    test_frule(f, x)
    assert rrule(f, x)[1](1.0)[1] is ZeroTangent()


NON_HOLOMORPHIC = [np.conj, np.conjugate, np.real, np.imag, np.angle, np.sign]


@pytest.mark.parametrize("f", NON_HOLOMORPHIC, ids=_name)
@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("dtype", [np.complex128, np.float64], ids=["complex", "real"])
def test_non_holomorphic(f, shape, dtype):
    x = make(shape, dtype, 0.3, 1.0)  # real inputs away from sign's and angle's kink at 0
    test_rrule(f, x)
    test_frule(f, x)


@pytest.mark.parametrize("f", [np.real, np.imag, np.conj], ids=_name)
def test_non_holomorphic_float32(f):
    x = make((2, 3), np.float32)
    test_rrule(f, x, **TOL[np.float32])
    test_frule(f, x, **TOL[np.float32])


def test_real_imag_cotangents_are_complex():
    z = np.array([1.0 + 2.0j])
    ȳ = np.array([3.0])
    assert rrule(np.real, z)[1](ȳ)[1] == pytest.approx(np.array([3.0 + 0.0j]))
    assert rrule(np.imag, z)[1](ȳ)[1] == pytest.approx(np.array([3.0j]))


@pytest.mark.parametrize("deg", [False, True])
def test_angle_deg(deg):
    z = make((3,), np.complex128)
    test_rrule(np.angle, z, fkwargs={"deg": deg})
    test_frule(np.angle, z, fkwargs={"deg": deg})
    # deg passed positionally (as an int: rulestest cannot yet compare bool arguments)
    test_rrule(np.angle, z, primal_and_tangent(int(deg), NoTangent()))
    assert rrule(np.angle, z, deg)[1](np.ones(3))[2] is NoTangent()


def test_complex_sign_at_zero_has_zero_gradient():
    _, pb = rrule(np.sign, np.array([0j, 1 + 1j]))
    assert pb(np.ones(2, complex))[1][0] == 0


def test_out_keyword_is_refused():
    with pytest.raises(TypeError, match="no keyword arguments"):
        rrule(np.sin, np.ones(2), out=np.empty(2))


# Domain edges: the primal and the derivative are what numpy's arithmetic gives,
# with numpy's RuntimeWarning (tests run with warnings as errors).


def test_log_at_zero_is_minus_inf_with_infinite_derivative():
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        y, pb = rrule(np.log, 0.0)
    assert y == -np.inf
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        assert pb(1.0)[1] == np.inf
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        y, ẏ = frule((NoTangent(), 1.0), np.log, np.zeros(2))
    np.testing.assert_array_equal(ẏ, [np.inf, np.inf])


def test_log_of_negative_is_nan_as_in_numpy():
    with pytest.warns(RuntimeWarning, match="invalid value"):
        y, pb = rrule(np.log, -1.0)
    assert np.isnan(y)
    assert pb(1.0)[1] == -1.0


def test_sqrt_at_zero_has_infinite_derivative():
    y, pb = rrule(np.sqrt, np.zeros(2))
    np.testing.assert_array_equal(y, 0.0)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.testing.assert_array_equal(pb(np.ones(2))[1], [np.inf, np.inf])


def test_arcsin_at_one_has_infinite_derivative():
    y, pb = rrule(np.arcsin, 1.0)
    assert y == pytest.approx(np.pi / 2)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        assert pb(1.0)[1] == np.inf


def test_cotangent_types_follow_the_primal():
    assert type(rrule(np.exp, 1.0)[1](1.0)[1]) is float
    assert rrule(np.exp, np.array(1.0))[1](1.0)[1].shape == ()
    assert rrule(np.exp, np.ones(2, np.float32))[1](np.ones(2))[1].dtype == np.float32
    assert rrule(np.exp, 2)[1](1.0)[1] == pytest.approx(np.exp(2))
