"""Tests of the numpy.fft rules (rules._numpy_fft)."""

import numpy as np
import pytest
from rules_testing import N, random_maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

NORMS = [None, "backward", "ortho", "forward"]
TOL = {
    np.float64: {"rtol": 1e-7, "atol": 1e-9},
    np.complex128: {"rtol": 1e-7, "atol": 1e-9},
    np.float32: {"rtol": 2e-3, "atol": 1e-3},
    np.complex64: {"rtol": 2e-3, "atol": 1e-3},
}

# name -> (the dtypes numpy takes: the first is the one every option is tested on,
#          the lengths n to try as functions of the input length m)
C2C_N = (lambda m: None, lambda m: m - 3, lambda m: m + 2)
HERMITIAN_N = (  # irfft/hfft: n//2+1 input bins used, below and above m, n even and odd
    lambda m: None,
    lambda m: m - 3,
    lambda m: m - 2,
    lambda m: 2 * m + 1,
    lambda m: 2 * m + 2,
)
COMPLEX_IN = (np.complex128, np.float64, np.float32, np.complex64)
ONE_AXIS = {
    "fft": (COMPLEX_IN, C2C_N),
    "ifft": (COMPLEX_IN, C2C_N),
    "rfft": ((np.float64, np.float32), C2C_N),
    "ihfft": ((np.float64, np.float32), C2C_N),
    "irfft": (COMPLEX_IN, HERMITIAN_N),
    "hfft": (COMPLEX_IN, HERMITIAN_N),
}


def rand(*shape, dtype=np.float64, seed=0):
    return random_maker(seed)(*shape, dtype=dtype)


def check(f, args, kw, dtype):
    test_rrule(f, *args, fkwargs=kw, **TOL[dtype])
    test_frule(f, *args, fkwargs=kw, **TOL[dtype])


def _one_axis_cases():
    for name, (dtypes, ns) in ONE_AXIS.items():
        for m in (6, 7):
            for i, n_of in enumerate(ns):
                n = n_of(m)
                for norm in NORMS:
                    yield pytest.param(name, m, n, norm, dtypes[0], id=f"{name}-m{m}-n{n}-{norm}")
                for dtype in dtypes[1:]:
                    if i < 2:  # the other dtypes with the default and one other length
                        tag = f"{name}-m{m}-n{n}-{np.dtype(dtype).name}"
                        yield pytest.param(name, m, n, "ortho", dtype, id=tag)


@pytest.mark.parametrize("name, m, n, norm, dtype", list(_one_axis_cases()))
def test_one_axis(name, m, n, norm, dtype):
    f = getattr(np.fft, name)
    x = rand(3, m, dtype=dtype)
    check(f, (x,), {"n": n, "norm": norm}, dtype)


@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("axis", [0, -2])
def test_one_axis_along_a_leading_axis(name, axis):
    dtype = ONE_AXIS[name][0][0]
    x = rand(5, 2, 3, dtype=dtype, seed=1)
    check(getattr(np.fft, name), (x,), {"axis": axis}, dtype)
    check(getattr(np.fft, name), (x,), {"axis": axis, "n": 8, "norm": "ortho"}, dtype)


@pytest.mark.parametrize("name", ONE_AXIS)
def test_one_axis_positional_options_get_no_tangent(name):
    dtype = ONE_AXIS[name][0][0]
    f = getattr(np.fft, name)
    x = rand(4, 3, dtype=dtype, seed=2)
    check(f, (x, N(5), N(0), N("forward")), {}, dtype)
    check(f, (x, N(None), N(-1)), {"norm": "ortho"}, dtype)
    _, pb = rrule(f, x, 5, 0, "ortho")
    cots = pb(np.ones_like(f(x, 5, 0, "ortho")))
    assert len(cots) == 5 and all(c is NoTangent() for c in (cots[0], *cots[2:]))


# Options of the many-axis transforms, on a (3, 4, 5) input.
MANY_AXES_OPTIONS = {
    "default": {},
    "two-axes": {"axes": (0, -1)},
    "unsorted-s": {"axes": (2, 0), "s": (6, 2)},
    "all-s": {"axes": (0, 1, 2), "s": (2, 5, 7)},
    "one-negative-axis": {"axes": (-2,)},
    "minus-one-in-s": {"axes": (1, 0), "s": (-1, 3)},
}
MANY_AXES = {
    "fft2": COMPLEX_IN,
    "ifft2": COMPLEX_IN,
    "fftn": COMPLEX_IN,
    "ifftn": COMPLEX_IN,
    "rfft2": (np.float64, np.float32),
    "rfftn": (np.float64, np.float32),
    "irfft2": COMPLEX_IN,
    "irfftn": COMPLEX_IN,
}


def _many_axes_cases():
    for name, dtypes in MANY_AXES.items():
        for opt_name, opts in MANY_AXES_OPTIONS.items():
            for norm in NORMS:
                tag = f"{name}-{opt_name}-{norm}"
                yield pytest.param(name, {**opts, "norm": norm}, dtypes[0], id=tag)
        for dtype in dtypes[1:]:
            for opt_name in ("default", "unsorted-s"):
                tag = f"{name}-{opt_name}-{np.dtype(dtype).name}"
                yield pytest.param(name, MANY_AXES_OPTIONS[opt_name], dtype, id=tag)


@pytest.mark.parametrize("name, kw, dtype", list(_many_axes_cases()))
def test_many_axes(name, kw, dtype):
    x = rand(3, 4, 5, dtype=dtype, seed=3)
    check(getattr(np.fft, name), (x,), kw, dtype)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "fft2"])
def test_repeated_axis_transforms_twice(name):
    x = rand(3, 4, dtype=np.complex128, seed=4)
    check(getattr(np.fft, name), (x,), {"axes": (1, 0, 1), "s": (6, 2, 3)}, np.complex128)


@pytest.mark.parametrize("name", MANY_AXES)
def test_many_axes_positional_options(name):
    dtype = MANY_AXES[name][0]
    x = rand(3, 4, 5, dtype=dtype, seed=5)
    check(getattr(np.fft, name), (x, N((4, 6)), N((0, 2)), N("ortho")), {}, dtype)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "fftn", "irfft2"])
def test_out_is_refused(name):
    f = getattr(np.fft, name)
    x = rand(4, 4)
    out = f(x)
    with pytest.raises(TypeError, match=f"numpy.fft.{name} does not support out="):
        rrule(f, x, out=out)
    with pytest.raises(TypeError, match="does not support out="):
        rrule(f, x, None, -1, None, out)
    with pytest.raises(TypeError, match="does not support out="):
        frule((NoTangent(), np.ones_like(x)), f, x, out=out)


@pytest.mark.parametrize("n", [6, 7])
def test_irfft_ignores_imaginary_dc_and_nyquist(n):
    z = rand(5, dtype=np.complex128, seed=6)
    _, pb = rrule(np.fft.irfft, z, n)
    dz = pb(rand(n, seed=7))[1]
    assert dz.shape == (5,) and dz[0].imag == 0
    assert dz[4] == 0  # n//2+1 = 4 bins are read; the fifth is unused
    if n % 2 == 0:  # bin 3 is the Nyquist bin: numpy reads its real part only
        assert dz[3].imag == 0
    else:  # bin 3 is an ordinary bin, counted twice
        assert dz[3].imag != 0
    # Perturbing the ignored parts changes nothing, so their derivative is right at 0.
    bump = np.zeros(5, complex)
    bump[0] = 1j
    assert np.array_equal(np.fft.irfft(z + bump, n), np.fft.irfft(z, n))


def test_rfft_against_the_dense_dft():
    # x̄ = Re(W^H ȳ) for W the first n//2+1 rows of the DFT matrix, x zero-padded to n.
    x, ȳ, n = rand(5, seed=8), rand(4, dtype=np.complex128, seed=9), 7
    k, j = np.meshgrid(np.arange(n // 2 + 1), np.arange(n), indexing="ij")
    W = np.exp(-2j * np.pi * k * j / n)
    expected = np.real(W.conj().T @ ȳ)[:5]
    np.testing.assert_allclose(rrule(np.fft.rfft, x, n)[1](ȳ)[1], expected, rtol=1e-12)


@pytest.mark.parametrize(
    "name, dtype, out_dtype",
    [
        ("fft", np.float32, np.complex64),
        ("rfftn", np.float32, np.complex64),
        ("irfft", np.complex64, np.float32),
        ("hfft", np.float32, np.float32),
        ("ihfft", np.float32, np.complex64),
    ],
)
def test_float32_stays_single_precision(name, dtype, out_dtype):
    f = getattr(np.fft, name)
    x = rand(4, 6, dtype=dtype, seed=10)
    y, pb = rrule(f, x)
    assert y.dtype == out_dtype
    assert pb(np.ones_like(y))[1].dtype == dtype
    assert frule((NoTangent(), np.ones_like(x)), f, x)[1].dtype == out_dtype


def test_list_and_integer_inputs():
    _, pb = rrule(np.fft.fft, [1.0, 2.0, 3.0])
    dx = pb(np.ones(3, complex))[1]
    assert type(dx) is list and dx == [3.0, 0.0, 0.0]
    x = np.arange(6)
    _, pb = rrule(np.fft.rfft, x)
    assert pb(np.ones(4, complex))[1].dtype == np.float64
    test_frule(np.fft.rfft, x)


@pytest.mark.parametrize("name", ["fft", "irfft", "rfftn"])
def test_zero_tangents_short_circuit(name):
    f = getattr(np.fft, name)
    x = rand(4, 4)
    y, pb = rrule(f, x, None)
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent())
    assert frule((NoTangent(), ZeroTangent()), f, x)[1] is ZeroTangent()


SHIFT_OPTIONS = {
    "all": ((), {}),
    "axis": ((), {"axes": 1}),
    "negative-tuple": ((), {"axes": (-1, 0)}),
    "positional": ((N(-2),), {}),
}


@pytest.mark.parametrize("f", [np.fft.fftshift, np.fft.ifftshift])
@pytest.mark.parametrize("shape", [(4, 6), (5, 7), (3, 4, 5)])
@pytest.mark.parametrize("opt", SHIFT_OPTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_shifts(f, shape, opt, dtype):
    args, kw = SHIFT_OPTIONS[opt]
    check(f, (rand(*shape, dtype=dtype, seed=11), *args), kw, dtype)


@pytest.mark.parametrize("f", [np.fft.fftfreq, np.fft.rfftfreq])
@pytest.mark.parametrize("n", [7, 8])
def test_frequencies(f, n):
    test_rrule(f, N(n), 0.3)
    test_frule(f, N(n), 0.3)
    test_rrule(f, N(n), np.float32(2.0), rtol=1e-4, atol=1e-5)
    # d by keyword is a constant; n is a count either way.
    y, pb = rrule(f, n, d=0.5)
    np.testing.assert_array_equal(y, f(n, d=0.5))
    assert pb(np.ones_like(y)) == (NoTangent(), NoTangent())
    assert frule((NoTangent(), NoTangent()), f, n, d=0.5)[1] is ZeroTangent()


def test_s_without_axes_follows_numpy_deprecated_meaning():
    # numpy 2 warns but still transforms the last len(s) axes; the rule does the same.
    x = rand(3, 4, 5, seed=12)
    ȳ = rand(3, 6, 3, dtype=np.complex128, seed=13)
    with pytest.warns(DeprecationWarning, match="axes"):
        y, pb = rrule(np.fft.rfftn, x, s=(6, 4))
    expected_y, expected_pb = rrule(np.fft.rfftn, x, s=(6, 4), axes=(1, 2))
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(pb(ȳ)[1], expected_pb(ȳ)[1])
