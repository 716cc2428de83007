"""Values used for non-numeric purposes (logging, formatting, printing, tests) and numpy
scalars in scalar code, in reverse and forward mode.

Library code with no rule (a C function, the standard library's Python) runs as
plain Python (``ad.runtime.plain_calls``): a result that provably carries no derivative
has derivative zero, a result that is one of the arguments passes its
derivative through, anything else is an error naming the function, the user's
line and a fix. numpy scalars take the floats' fast paths and keep numpy's types.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import json
import logging
import math
import random
import re
import statistics
import textwrap
import typing
import warnings

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from ad.runtime import library_code

HERE = re.escape(__file__)
log = logging.getLogger("ad.tests.nonnumeric")

# --- checking machinery -------------------------------------------------------------------


def _as64(v):
    """A float32 argument as float64 (finite differences need the precision)."""
    if isinstance(v, np.ndarray):
        return v.astype(np.float64)
    return np.float64(v) if isinstance(v, np.floating) else v


def _same_kind(g, x):
    """A gradient has its argument's type (numpy scalars) or dtype and shape (arrays)."""
    if isinstance(x, np.ndarray):
        assert isinstance(g, np.ndarray) and g.shape == x.shape and g.dtype == x.dtype
    elif isinstance(x, np.generic):
        assert type(g) is type(x), (type(g), type(x))
    else:
        assert isinstance(g, float), type(g)


def check(f, *args, rtol=1e-6, atol=1e-8):
    """Reverse mode and forward mode against central differences, with types checked."""
    low = any(np.asarray(a).dtype == np.float32 for a in args)
    if low:
        rtol, atol = 2e-3, 1e-4
    ref = fd_gradient(f, *(_as64(a) for a in args))
    grad = ad.gradient(f, *args)
    for g, r, x in zip(grad, ref, args):
        _same_kind(g, x)
        np.testing.assert_allclose(np.asarray(g, dtype=float), r, rtol=rtol, atol=atol)
    rng = np.random.default_rng(len(args))
    ts = tuple(
        np.asarray(rng.standard_normal(np.shape(a)), dtype=np.asarray(a).dtype)
        if isinstance(a, np.ndarray)
        else type(a)(rng.standard_normal())
        for a in args
    )
    y, ẏ = ad.jvp(f, args, ts)
    expected = sum(
        float(np.sum(np.asarray(r) * np.asarray(t, dtype=float))) for r, t in zip(ref, ts)
    )
    np.testing.assert_allclose(float(ẏ), expected, rtol=rtol, atol=atol)
    value = f(*args)
    assert type(y) is type(value) and float(y) == pytest.approx(float(value), rel=1e-12)
    return grad


# --- values used for non-numeric purposes -----------------------------------------------


def logs_and_formats(x, y):
    log.debug("x=%s y=%s", x, y)
    log.info("x=%.3f", x)
    # the spellings users write, each one (hence the noqa)
    label = "{:.2f}".format(x) + "%.3f" % y + "%s %s" % (x, y)  # noqa: UP031, UP032
    label += f"{x:8.3f}|{y!r}|{x:e}"
    text = str(x) + repr(y)
    return x * y + len(label) * 0.0 + 0.5 * len(text) * 0.0 + math.sin(x)


def prints_and_warns(x, y):
    print(x, y)
    warnings.warn(f"x is {x:.3g} and y is {y}")  # noqa: B028
    logging.warning("root logger: x=%s", x)
    return x**2 * y


def serialises(x, v):
    s = json.dumps([x, 2 * x, float(np.sum(v))])
    a = np.array2string(v, precision=3)
    short = textwrap.shorten(s + a, width=20)  # any library function: no list of cases
    return x * np.sum(v**2) + len(short) * 0.0


def guarded(x, v):
    if np.isfinite(x) and not np.isnan(np.sum(v)) and np.all(np.isfinite(v)):
        return np.sum(np.exp(x * v))
    return 0.0


def _report(name, value):
    log.debug("%s = %r", name, value)
    return value


def helper_logs_in_a_loop(x, v):
    total = 0.0
    for i in range(3):
        total = total + _report(f"step {i}", x * v[i])
        log.info("total %.4f", total)
    return total * x


def seeded_noise(x, seed):
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(3)
    return np.sum(x * noise) + np.sum(x) * rng.normal()


NONNUMERIC = {
    "logs_and_formats": (logs_and_formats, (1.3, -0.4)),
    "logs_and_formats_f64": (logs_and_formats, (np.float64(1.3), np.float64(-0.4))),
    "prints_and_warns": (prints_and_warns, (1.3, 0.7)),
    "serialises": (serialises, (0.8, np.array([1.0, -2.0, 0.5]))),
    "guarded": (guarded, (0.3, np.array([0.5, -1.0]))),
    "guarded_f32": (guarded, (np.float32(0.3), np.array([0.5, -1.0], dtype=np.float32))),
    "helper_logs_in_a_loop": (helper_logs_in_a_loop, (1.1, np.array([0.5, 1.5, -2.0]))),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(NONNUMERIC))
def test_values_used_for_non_numeric_purposes(name, capsys):
    f, args = NONNUMERIC[name]
    check(f, *args)


def test_the_library_call_runs_once_with_the_values(capsys, caplog):
    caplog.set_level(logging.DEBUG, logger=log.name)

    def f(x):
        log.debug("x=%s", x)
        print("printed", x)
        return x * x

    assert ad.gradient(f, 1.5) == (3.0,)
    assert [r.getMessage() for r in caplog.records] == ["x=1.5"]
    assert capsys.readouterr().out == "printed 1.5\n"


def test_random_generator_seeded_by_a_parameter():
    x = np.array([0.5, -1.0, 2.0])
    g, gs = ad.gradient(seeded_noise, x, 7)
    rng = np.random.default_rng(7)
    noise = rng.standard_normal(3)
    np.testing.assert_allclose(g, noise + rng.normal(), rtol=1e-12)
    assert gs is None
    y, ẏ = ad.jvp(seeded_noise, (x, 7), (np.ones(3), 0.0))
    assert ẏ == pytest.approx(float(np.sum(g)))


def test_identity_results_pass_the_derivative_through():
    def f(x, y):
        a = typing.cast(float, x)  # the argument itself
        b = copy.copy(y)  # a float's copy is the float
        return a * b**2

    check(f, 1.5, -0.5)
    assert ad.hessian(lambda x: typing.cast(float, x) ** 3, 2.0) == pytest.approx(12.0)


def test_second_order_through_plain_calls():
    def f(v):
        s = "%.3f" % v[0] + np.array2string(v)  # noqa: UP031
        log.debug("v=%s", s)
        return np.sum(v**3) + len(s) * 0.0

    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(ad.hessian(f, v), np.diag(6 * v))
    np.testing.assert_allclose(ad.hessian_reverse(f, v), np.diag(6 * v))


# --- what is refused: a result or a change that may carry the derivative -------------------


def _fmean(x, y):
    return statistics.fmean([x, y])


def test_library_result_carrying_the_derivative_is_an_error():
    for run in (
        lambda: ad.gradient(_fmean, 1.0, 2.0),
        lambda: ad.jvp(_fmean, (1.0, 2.0), (1.0, 0.0)),
    ):
        with pytest.raises(ad.NoRuleError) as info:
            run()
        msg = str(info.value)
        assert "statistics.fmean" in msg
        assert re.search(rf"called at {HERE}:\d+", msg)  # the user's line, not the library's
        assert "To fix" in msg and "ad.ignore_derivatives" in msg


def test_library_changing_an_argument_in_place_is_an_error():
    def pushes(x, y):
        heap = [y]
        heapq.heappush(heap, x)  # C code writing x into the list: the AD cannot follow
        return heap[0] * 2.0

    def shuffles(x, y):
        xs = [x, y, x * y]
        random.Random(0).shuffle(xs)  # the standard library's Python, writing the list
        return xs[0]

    for f in (pushes, shuffles):
        with pytest.raises(ad.NoRuleError, match=r"(?s)changed .* in place.*To fix"):
            ad.gradient(f, 1.0, 2.0)
        with pytest.raises(ad.NoRuleError, match="in place"):
            ad.jvp(f, (1.0, 2.0), (1.0, 1.0))


def _put_same(x):
    np.put(x, [0], [5.0])  # at x[0] == 5 the values do not change, the derivative does
    return np.sum(x * x)


def _put_local(x):
    a = x * 1.0
    np.put(a, [0], [5.0])
    return np.sum(a * a)


def _fill_zero_diagonal(x):
    a = x * 1.0
    np.fill_diagonal(a, 0.0)  # zeros where zeros are
    return np.sum(a * a)


def _copyto_masked(x):
    np.copyto(x, 5.0, where=x > 4.5)
    return np.sum(x * x)


def _putmask_same(x):
    np.putmask(x, x > 4.5, 5.0)
    return np.sum(x * x)


@pytest.mark.parametrize(
    "f, x",
    [
        (_put_same, np.array([5.0, 2.0, 3.0, 4.0])),
        (_copyto_masked, np.array([5.0, 2.0, 3.0, 4.0])),
        (_putmask_same, np.array([5.0, 2.0, 3.0, 4.0])),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_numpy_write_into_an_argument_is_an_error_even_of_the_values_it_holds(f, x):
    """The write leaves the values as they were but cuts the derivative of the entries
    it wrote, and the caller's array would change: refused before the write, in
    every mode (it was a silent wrong gradient once). The Hessians give f a copy
    (test_ad_nested_in_place.py), where the write is differentiated: x[0]'s is cut."""
    for run in (
        lambda x: ad.gradient(f, x),
        lambda x: ad.jvp(f, (x,), (np.ones_like(x),)),
    ):
        given = x.copy()
        with pytest.raises(ad.MutationError, match=rf"(?s){HERE}:\d+: 'x' is updated in place"):
            run(given)
        assert given.flags.writeable
        np.testing.assert_array_equal(given, x)  # and nothing was written
    for hessian in (ad.hessian, ad.hessian_reverse):
        given = x.copy()
        np.testing.assert_array_equal(hessian(f, given), np.diag([0.0, 2.0, 2.0, 2.0]))
        np.testing.assert_array_equal(given, x)


@pytest.mark.parametrize(
    "f, x, want",
    [
        # a[0] is set to 5: its derivative is cut, the rest is 2a
        (_put_local, np.array([5.0, 2.0, 3.0, 4.0]), np.array([0.0, 4.0, 6.0, 8.0])),
        (_fill_zero_diagonal, np.array([[0.0, 1.0], [2.0, 0.0]]), np.array([[0, 2.0], [4.0, 0]])),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_a_numpy_write_into_a_local_array_cuts_the_derivative_it_overwrites(f, x, want):
    """On an array the function made, the write is differentiated (``rules.functional``),
    also where it leaves the values as they were."""
    np.testing.assert_allclose(ad.gradient(f, x.copy())[0], want)
    t = np.ones_like(x)
    np.testing.assert_allclose(ad.jvp(f, (x.copy(),), (t,))[1], np.sum(want * t))
    if x.ndim == 1:
        np.testing.assert_allclose(ad.hessian(f, x.copy()), np.diag([0.0, 2.0, 2.0, 2.0]))


def test_a_library_call_may_still_read_a_locked_array():
    def f(x):
        shown = np.array2string(x, precision=2)  # C and Python code reading x
        digest = hash(x.tobytes())
        return np.sum(x * x) * (len(shown) > 0) + 0.0 * (digest % 2)

    x = np.array([3.0, 4.0])
    np.testing.assert_allclose(ad.gradient(f, x)[0], 2.0 * x)
    np.testing.assert_allclose(ad.jvp(f, (x,), (np.ones(2),))[1], 14.0)
    assert x.flags.writeable


def test_library_calling_back_into_user_code_is_an_error():
    def f(x):
        out = []
        s = re.sub("a", lambda m: out.append(x * 2) or "b", "aa")  # x * 2 runs plainly
        return x * len(s) + sum(out)

    with pytest.raises(ad.NoRuleError, match="Python function of yours"):
        ad.gradient(f, 1.0)


def test_opaque_results_are_not_derivative_free():
    assert not library_code.derivative_free(iter([1.0]))
    assert not library_code.derivative_free(zip([1.0], [2.0]))
    assert not library_code.derivative_free(map(str, [1.0]))
    assert not library_code.derivative_free(["a", 1.5])
    assert not library_code.derivative_free(np.array([1.0]))
    assert not library_code.derivative_free(np.array([1.0 + 0j], dtype=object))
    assert library_code.derivative_free(("a", 1, None, {"k": [True]}, np.array([1, 2])))
    assert library_code.derivative_free(np.random.default_rng(0))

    def f(x):
        return sum(itertools.repeat(x, 2))  # an iterator holding x

    with pytest.raises(ad.NoRuleError, match=r"constructor of itertools.repeat.*\(a repeat\)"):
        ad.gradient(f, 1.0)


def test_only_the_standard_library_runs_plainly():
    assert library_code.is_library_function(logging.Logger.debug)
    assert library_code.is_library_function(json.dumps)
    assert not library_code.is_library_function(logs_and_formats)
    assert not library_code.is_library_function(fd_gradient)  # a test helper, not stdlib


# --- numpy scalars are floats ---------------------------------------------------------------


def constructors(x, y):
    a = np.float64(x)
    z = np.complex128(x, y)
    w = np.complex128(y)  # a real argument: its imaginary part is 0
    return a * a + float(a) * y + abs(z) ** 2 + (w * w).real + np.float64(np.array(x)) * 0.5


def zero_d_array(a, x):
    return float(a) ** 2 * x + float(np.sum(a)) * np.float64(x)


def ufuncs_on_floats(x, y):
    s = np.sin(x) * np.exp(y)  # numpy scalars from Python floats
    return s * s + np.tanh(s) / 3 - s**2 + abs(-s)


def dot_in_scalar_code(v, w):
    s = np.dot(v, w)
    t = v.sum()
    u = v[1] * w[0]
    return math.sin(s) + s * s + s**2 + abs(t) - (-u) + t / 3 + u.item() * s


def _scalar_helper(s, k):
    r = s
    for _ in range(k):
        r = r * s - r / 4 + math.cos(r)
    return r


def nested_helpers_and_loops(x, v):
    acc = x
    for i in range(len(v)):
        acc = acc + _scalar_helper(v[i] * x, 2) * np.float64(0.1)
        acc -= x * 0.01
    return acc**2


def augmented(x, y):
    r = x
    r *= y
    r += 2.0
    r -= x
    r /= y
    r **= 2
    return r


NUMPY_SCALARS = {
    "constructors_float": (constructors, (1.3, -0.6)),
    "constructors_f64": (constructors, (np.float64(1.3), np.float64(-0.6))),
    "zero_d_array": (zero_d_array, (np.array(1.5), 0.7)),
    "ufuncs_on_floats": (ufuncs_on_floats, (0.4, -0.3)),
    "ufuncs_on_f32": (ufuncs_on_floats, (np.float32(0.4), np.float32(-0.3))),
    "dot_in_scalar_code": (
        dot_in_scalar_code,
        (np.array([0.5, -1.2, 2.0]), np.array([1.0, 0.3, -0.7])),
    ),
    "dot_in_scalar_code_f32": (
        dot_in_scalar_code,
        (
            np.array([0.5, -1.2, 2.0], dtype=np.float32),
            np.array([1.0, 0.3, -0.7], dtype=np.float32),
        ),
    ),
    "nested_helpers_and_loops": (nested_helpers_and_loops, (0.9, np.array([0.5, 1.0, -0.5]))),
    "nested_helpers_and_loops_f64": (
        nested_helpers_and_loops,
        (np.float64(0.9), np.array([0.5, 1.0, -0.5])),
    ),
    "augmented_f64": (augmented, (np.float64(1.3), np.float64(0.7))),
    "augmented_f32": (augmented, (np.float32(1.3), np.float32(0.7))),
    "augmented_mixed": (augmented, (np.float64(1.3), 0.7)),
}


@pytest.mark.parametrize("name", sorted(NUMPY_SCALARS))
def test_numpy_scalars_in_scalar_code(name):
    f, args = NUMPY_SCALARS[name]
    check(f, *args)


def test_float32_constructor_keeps_float32_and_projects_back():
    def f(x, y):
        b = np.float32(x) * np.float32(y)
        assert type(b) is np.float32
        return b * 2

    g = ad.gradient(f, 1.5, np.float64(0.25))
    assert type(g[0]) is float and type(g[1]) is np.float64
    assert g == (0.5, 3.0)
    y, ẏ = ad.jvp(f, (1.5, np.float64(0.25)), (1.0, np.float64(0.0)))
    assert type(y) is np.float32 and type(ẏ) is np.float32 and ẏ == np.float32(0.5)
    # and to complex: its cotangent projects back onto the real argument
    assert ad.gradient(lambda x: abs(np.complex128(x)), -2.0) == (-1.0,)
    assert ad.gradient(lambda a: float(a) * 3.0, np.array(2.0))[0].shape == ()


@pytest.mark.parametrize("kind", [np.float64, np.float32])
def test_results_keep_numpys_types(kind):
    def f(x):
        y = x * 2.0 + 1
        z = -y / 3 - x**2
        return z * y, y, z, math.sin(x)

    x = kind(0.75)
    value, back = ad.pullback(f, x)
    assert [type(v) for v in value] == [kind, kind, kind, float]
    (g,) = back((kind(1.0), kind(0.0), kind(0.0), 0.0))
    assert type(g) is kind
    # np.float64 op float is np.float64; a float op float stays a float
    y, ẏ = ad.jvp(lambda a, b: a * b, (np.float64(2.0), 3.0), (1.0, 0.0))
    assert type(y) is np.float64 and ẏ == 3.0
    assert type(ad.gradient(lambda a, b: a * b, 2.0, 3.0)[0]) is float


def test_float64_scalars_give_the_floats_gradients_bit_for_bit():
    programs = (augmented, ufuncs_on_floats, _scalar_helper_2)
    for f in programs:
        ref = ad.gradient(f, 1.3, 0.7)
        for args in [
            (np.float64(1.3), np.float64(0.7)),
            (np.float64(1.3), 0.7),
            (1.3, np.float64(0.7)),
        ]:
            got = ad.gradient(f, *args)
            assert got == ref
            for g, a in zip(got, args):
                if type(a) is np.float64:
                    assert type(g) is np.float64


def _scalar_helper_2(x, y):
    return _scalar_helper(x * y, 3) + math.atan2(x, y) + math.exp(x) * y**0.5


def test_float64_scalars_take_the_fast_path(monkeypatch):
    """The numpy-scalar paths of ad.runtime.scalar_paths serve np.float64 arithmetic and math.sin: with
    the rules' dispatch made to fail, the gradient is still computed."""

    def loop(x):
        r = 1.0
        for _ in range(20):
            r = r * x + math.sin(r) / 3 - 0.5 * r
        return r

    x = np.float64(1.01)
    expected = ad.gradient(loop, 1.01)[0]
    import ad.runtime.reverse as runtime

    def no_rules(*args, **kwargs):
        raise AssertionError("a numpy-scalar operation went through the rules")

    monkeypatch.setattr(runtime, "_checked", no_rules)
    runtime.clear_dispatch_cache()
    monkeypatch.setattr(runtime, "_resolve_rule", no_rules)
    try:
        (g,) = ad.gradient(loop, x)
    finally:
        runtime.clear_dispatch_cache()
    assert type(g) is np.float64 and g == expected


@pytest.mark.parametrize("kind", [np.float64, np.float32])
def test_hessian_of_numpy_scalar_programs(kind):
    def f(x):
        s = np.float64(x) * x + math.sin(x)
        return s * s / 3 - abs(-s) + np.exp(x).item()

    x = kind(0.8)
    h = 1e-4
    ref = (ad.gradient(f, float(x) + h)[0] - ad.gradient(f, float(x) - h)[0]) / (2 * h)
    H = ad.hessian(f, x)
    assert float(np.asarray(H)) == pytest.approx(ref, rel=1e-5 if kind is np.float64 else 1e-2)


def test_hessian_of_dot_in_scalar_code():
    v = np.array([0.5, -1.2, 2.0])

    def f(v):
        return dot_in_scalar_code(v, np.array([1.0, 0.3, -0.7]))

    from ad_testing import fd_hessian

    np.testing.assert_allclose(ad.hessian(f, v), fd_hessian(f, v), rtol=1e-4, atol=1e-5)


def test_numpy_scalar_arguments_are_immutable_numbers():
    def f(x, y):
        r = x  # an alias of a numpy scalar is no shared mutable state
        r *= y
        return r + x

    assert ad.gradient(f, np.float64(2.0), np.float64(3.0)) == (4.0, 2.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "f",
    [lambda s: s * s, lambda s: np.sum(s * s), lambda s: s**3 / 3.0, lambda s: float(s) * s],
    ids=["s*s", "np.sum(s*s)", "s**3/3", "float(s)*s"],
)
def test_a_0d_array_argument_gets_a_0d_array_gradient(f, dtype):
    # numpy's arithmetic on a 0-d array gives a numpy scalar: the gradient of one
    # was that scalar, not the 0-d array of the argument's dtype it is projected to
    s = np.array(0.7, dtype=dtype)
    (g,) = ad.gradient(f, s)
    assert type(g) is np.ndarray and g.shape == () and g.dtype == dtype
    h = 1e-3 if dtype is np.float32 else 1e-6
    fd = (float(f(np.array(0.7 + h))) - float(f(np.array(0.7 - h)))) / (2 * h)
    assert float(g) == pytest.approx(fd, rel=1e-3 if dtype is np.float32 else 1e-6)
