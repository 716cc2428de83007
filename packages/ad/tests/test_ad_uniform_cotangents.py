"""The cotangent of a whole-array sum or mean is a read-only uniform array.

``lean_rules.uniform(v, shape)`` is a zero-strided view of one float64 number (eight
bytes for any shape). The lean ``np.sum``/``np.mean`` pullback returns one for
256 entries or more; scaling by a number keeps it uniform; every in-place path
leaves it alone; ``to_user`` hands the caller an array of its own. Values are
compared bit for bit with the dense path (the rule's ``np.full``).
"""

import operator

import numpy as np
import pytest
from ad_testing import same_bits

import ad
from ad.runtime import array_arithmetic, lean_rules
from ad.runtime.reverse import rcall
from rulescore import NoTangent, rrule

N = lean_rules.UNIFORM_MIN_SIZE


def test_uniform_is_a_read_only_view_of_one_number():
    u = lean_rules.uniform(2.5, (3, 4))
    assert u.shape == (3, 4) and u.dtype == np.float64
    assert not u.flags.writeable and u.strides == (0, 0) and u.nbytes == 96
    assert np.array_equal(u, np.full((3, 4), 2.5))
    with pytest.raises(ValueError, match="read-only"):
        u[0, 0] = 1.0
    assert lean_rules.is_uniform(u)
    assert not lean_rules.is_uniform(np.full((3, 4), 2.5))
    assert not lean_rules.is_uniform(np.broadcast_to(np.arange(4.0), (3, 4)))


@pytest.mark.parametrize("f", [np.sum, np.mean])
@pytest.mark.parametrize("shape", [(N,), (N // 8, 8), (N - 1,)])
def test_lean_reduction_pullback_is_uniform_from_the_threshold_on(f, shape):
    x = np.random.default_rng(0).normal(size=shape)
    y, pb = rcall(f, x)
    y0, pb0 = rrule(f, x)
    same_bits(y, y0)
    for s in (1.0, np.float64(-2.5)):
        ct = pb(s)
        same_bits(np.array(ct[1]), pb0(s)[1])
        assert lean_rules.is_uniform(ct[1]) == (x.size >= N)


# number / array has no scalar-array fast path
SCALINGS = [(op, first) for op in (operator.mul, operator.add, operator.sub) for first in (0, 1)]


@pytest.mark.parametrize("op, number_first", [*SCALINGS, (operator.truediv, 0)])
def test_scaling_a_uniform_cotangent_keeps_it_uniform(op, number_first):
    x = np.random.default_rng(1).normal(size=N)
    args = (3.0, x) if number_first else (x, 3.0)
    y, pb = array_arithmetic.FAST_HELPERS["_ad_fasti_" + op.__name__.strip("_")](*args)
    u = lean_rules.uniform(0.75, x.shape)
    got, want = pb(u), pb(np.array(u))
    same_bits(tuple(np.array(c) if isinstance(c, np.ndarray) else c for c in got), want)
    array_ct = got[2] if number_first else got[1]
    assert lean_rules.is_uniform(array_ct)


def _square_plus_sum(x):
    return np.sum(x * x) + np.sum(3.0 * x) - np.mean(x / 4.0)


def _sums_only(x):
    return np.sum(x) + np.sum(2.0 * x) + np.sum(1.0 - x)


@pytest.mark.parametrize(
    "f, hand",
    [
        (_square_plus_sum, lambda x: 2 * x + 3.0 - 0.25 / x.size),
        (_sums_only, lambda x: np.full(x.shape, 2.0)),
        (np.sum, lambda x: np.ones(x.shape)),
    ],
)
def test_gradients_are_right_and_writable_arrays_of_their_own(f, hand):
    x = np.random.default_rng(2).normal(size=(N, 2))
    (g,) = ad.gradient(f, x)
    assert type(g) is np.ndarray and g.flags.writeable and g.flags.owndata
    assert g.strides == (16, 8)
    np.testing.assert_allclose(g, hand(x), rtol=1e-13, atol=1e-13)
    g += 1.0  # the caller may update it
    y, back = ad.pullback(f, x)
    (g2,) = back(1.0)
    assert g2.flags.writeable and g2.flags.owndata


def test_a_rule_that_writes_into_its_cotangent_fails_loudly():
    def scaled(x):
        return x * 2.0

    @rrule.register(scaled)
    def _(x: np.ndarray):
        def scaled_pullback(ȳ):
            ȳ *= 2.0  # a pullback must not mutate ȳ: it may be shared, or read-only
            return NoTangent(), ȳ

        return scaled(x), scaled_pullback

    def f(x):
        return np.sum(scaled(x))

    with pytest.raises(ValueError, match="read-only") as info:
        ad.gradient(f, np.ones(N))
    e = info.value
    assert isinstance(e, ad.CotangentWriteError) and isinstance(e, ad.MutationError)
    msg = str(e)
    assert "scaled_pullback" in msg and "To fix: compute a new array" in msg
    assert f"{__file__}:{scaled_pullback_line()}" in msg  # the writing line
    assert __file__ in msg.split("wrote")[0]  # and the call site


def scaled_pullback_line():
    import inspect

    src, first = inspect.getsourcelines(test_a_rule_that_writes_into_its_cotangent_fails_loudly)
    return first + next(i for i, ln in enumerate(src) if "ȳ *= 2.0" in ln)


def _doubled_in_place(x):
    return x * 2.0


@rrule.register(_doubled_in_place)
def _(x: np.ndarray):
    def doubled_pullback(ȳ):
        ȳ[0] = 0.0  # an item assignment: numpy's "assignment destination is read-only"
        return NoTangent(), ȳ

    return _doubled_in_place(x), doubled_pullback


def _inner(x):
    return np.sum(_doubled_in_place(x))


def _outer(x):
    return 3.0 * _inner(x)


def test_a_write_under_nested_adjoints_is_reported_once_at_the_innermost_call():
    with pytest.raises(ad.CotangentWriteError) as info:
        ad.gradient(_outer, np.ones(N))
    msg = str(info.value)
    assert msg.count("wrote into") == 1 and "doubled_pullback" in msg
    inner_line = _inner.__code__.co_firstlineno + 1
    assert f"called at {__file__}:{inner_line}" in msg


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("v", [1.0, -37.5])
def test_a_power_takes_a_uniform_cotangent_in_one_product(n, v):
    # (n v) a^(n-1) instead of s * (n a^(n-1)): for a square the same bits (both
    # products scale by a power of two before the one rounding), else to rounding.
    from ad.runtime.inline_arithmetic import pow_adjoint

    a = np.random.default_rng(3).normal(size=(N, 3))
    u = lean_rules.uniform(v, a.shape)
    _, got, _ = pow_adjoint([a], u, n)
    _, want, _ = pow_adjoint([a], np.array(u), n)  # a writable, dense cotangent
    assert type(got) is np.ndarray and got.flags.writeable and got.shape == a.shape
    np.testing.assert_allclose(got, v * n * a ** (n - 1), rtol=1e-14)
    if n == 2:
        same_bits(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-14)
    assert np.array_equal(a, np.random.default_rng(3).normal(size=(N, 3)))  # a untouched


def test_a_float32_power_keeps_the_dense_path_and_its_dtype():
    from ad.runtime.inline_arithmetic import pow_adjoint

    a = np.random.default_rng(4).normal(size=N).astype(np.float32)
    _, got, _ = pow_adjoint([a], lean_rules.uniform(2.0, a.shape), 2)
    assert got.dtype == np.float64  # float64 cotangent times float32 partial, as numpy
    same_bits(got, 2.0 * (2 * a).astype(np.float64))


def _rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2 + x[1:] ** 3)


def test_powers_under_a_whole_array_sum_match_the_hand_gradient():
    x = np.random.default_rng(5).uniform(-1.5, 1.5, 3 * N)
    (g,) = ad.gradient(_rosenbrock, x)
    r = x[1:] - x[:-1] ** 2
    want = np.zeros_like(x)
    want[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    want[1:] += 200.0 * r + 3.0 * x[1:] ** 2
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("used", [1, 2, 3])
def test_a_product_takes_a_uniform_cotangent_of_ones_as_read_only_views(used):
    # 1 * f is f: each partial becomes a read-only view of the other factor, no pass.
    from ad.runtime.inline_arithmetic import mul_adjoint

    rng = np.random.default_rng(6)
    b, a = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    _, da, db = mul_adjoint([b, a], lean_rules.uniform(1.0, a.shape), used)
    for got, factor, bit in ((da, b, 1), (db, a, 2)):
        if not used & bit:
            assert got is None
            continue
        assert got.base is factor and not got.flags.writeable
        same_bits(got, factor)
    # any other value, or a writable array of ones, is multiplied out as before
    for s in (lean_rules.uniform(2.0, a.shape), np.ones(a.shape)):
        _, da, db = mul_adjoint([b, a], s, 3)
        assert da.base is None and da.flags.writeable
        same_bits(da, np.array(s) * b)
        same_bits(db, np.array(s) * a)


@pytest.mark.parametrize("shape", [(0, 3), (1,), (N,)])
def test_other_read_only_cotangents_are_multiplied_out(shape):
    # empty, one entry, or read-only but not uniform: the plain products
    from ad.runtime.inline_arithmetic import mul_adjoint

    rng = np.random.default_rng(10)
    b, a = rng.normal(size=shape), rng.normal(size=shape)
    s = np.ones(shape) if shape != (N,) else rng.normal(size=shape)
    s.flags.writeable = False
    _, da, db = mul_adjoint([b, a], s, 3)
    same_bits(da, s * b)
    same_bits(db, s * a)
    assert da.flags.writeable and db.flags.writeable


def test_a_float32_product_is_multiplied_out():
    from ad.runtime.inline_arithmetic import mul_adjoint

    b = np.arange(N, dtype=np.float32)
    _, da, _ = mul_adjoint([b, b], lean_rules.uniform(1.0, b.shape), 1)
    assert da.dtype == np.float64 and da.flags.writeable


def _products(x, y):
    return np.sum(np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x + y * y)


def test_products_under_a_sum_of_ones_match_the_hand_gradient_and_leave_inputs_alone():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=2 * N), rng.normal(size=2 * N)
    x0, y0 = x.copy(), y.copy()
    gx, gy = ad.gradient(_products, x, y)
    g, t = np.exp(-0.5 * x * x), np.tanh(y)
    np.testing.assert_allclose(gx, (np.cos(x) - x * np.sin(x)) * g + t, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(gy, (1.0 - t * t) * x + 2.0 * y, rtol=1e-13, atol=1e-13)
    same_bits(x, x0)
    same_bits(y, y0)


def test_a_gradient_that_is_a_captured_array_is_a_copy_of_its_own():
    # d/dx sum(x * c) is c itself: the caller gets a writable array sharing nothing.
    c = np.random.default_rng(8).normal(size=N)
    c0 = c.copy()
    (g,) = ad.gradient(lambda x: np.sum(x * c), np.ones(N))
    assert g.flags.writeable and g.flags.owndata and not np.shares_memory(g, c)
    same_bits(g, c0)
    g *= 2.0
    same_bits(c, c0)
