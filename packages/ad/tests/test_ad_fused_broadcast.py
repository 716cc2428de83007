"""Fused regions whose operands broadcast (``ad.transform.fuse``, ``ad.runtime.fused_regions``).

A region computes at the shape its operands broadcast to: arrays of other shapes
(``(m, n) + (n,)``, ``(m, n) + (1,)``, ``(m, 1) * (1, n)``, 0-d), Python floats and
numpy scalars of the arrays' dtype. Each input's cotangent is summed back to its
own shape, as the per-operation rules do. Every case is compared with the
per-operation path (``FLAGS.fused`` off), with central differences and with
hand-derived values, in reverse and forward mode and at second order; the value
with numpy's own, bit for bit.
"""

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian, same_bits
from fused_testing import fallback_refused, load, per_operation

import ad
from ad.runtime.fused_regions import fused_fit, fused_full, fused_shape

rng = np.random.default_rng(20)
M, N = 4, 3
X = rng.uniform(0.5, 1.5, (M, N))

# (name, source of f(x, b), b, hand-derived gradient (gx, gb)); x: X, or its first
# column where b is a row
CASES = [
    (
        "(m,n)+(n,)",
        "np.sum(np.tanh(x + b) * x)",
        rng.uniform(-0.5, 0.5, N),
        lambda x, b: (
            (1 - np.tanh(x + b) ** 2) * x + np.tanh(x + b),
            ((1 - np.tanh(x + b) ** 2) * x).sum(axis=0),
        ),
    ),
    (
        "(m,n)+(1,)",
        "np.mean((x + b - 2.0 * x) ** 2)",
        np.array([0.3]),
        lambda x, b: (-2 * (b - x) / x.size, np.array([2 * np.sum(b - x) / x.size])),
    ),
    (
        "(m,1)*(1,n)",
        "np.sum(np.sin(x * b) + x ** 2 * b)",
        rng.uniform(-1.0, 1.0, (1, N)),
        lambda x, b: (
            (np.cos(x * b) * b + 2 * x * b).sum(axis=1, keepdims=True),
            (np.cos(x * b) * x + x**2).sum(axis=0, keepdims=True),
        ),
    ),
    (
        "0-d array",
        "np.sum(x * b - np.exp(b * x))",
        np.array(0.7),
        lambda x, b: (b - b * np.exp(b * x), np.sum(x - x * np.exp(b * x))),
    ),
    (
        "python float",
        "np.sum(x * b - b * b * x ** 2)",
        0.7,
        lambda x, b: (b - 2 * b * b * x, float(np.sum(x - 2 * b * x**2))),
    ),
    (
        "numpy scalar",
        "np.sum(x / b + np.cos(x) * b)",
        np.float64(1.3),
        lambda x, b: (1 / b - np.sin(x) * b, np.sum(-x / b**2 + np.cos(x))),
    ),
]
IDS = [c[0] for c in CASES]


def first_argument(b):
    return X[:, :1].copy() if np.shape(b) == (1, N) else X.copy()


@pytest.mark.parametrize("name, expression, b, hand", CASES, ids=IDS)
def test_broadcast_operands_fuse(tmp_path, name, expression, b, hand):
    f = load(f"def f(x, b):\n    return {expression}\n", tmp_path)
    x = first_argument(b)
    x0, b0 = x.copy(), np.copy(b)
    assert "_ad_fz1 = True" in ad.code_adjoint(f, x, b)
    ad.gradient(f, x, b)  # transformed: the helpers' cells exist
    with fallback_refused():
        val, (gx, gb) = ad.withgradient(f, x, b)
    same_bits(val, f(x, b))  # numpy's value, bit for bit
    assert np.array_equal(x, x0) and np.array_equal(b, b0)
    want_x, want_b = hand(x, b)
    np.testing.assert_allclose(gx, want_x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gb, want_b, rtol=1e-12, atol=1e-14)
    assert gx.shape == x.shape and np.shape(gb) == np.shape(b)
    assert gx.flags.writeable and gx.dtype == x.dtype
    nx, nb = fd_gradient(f, x, b)
    np.testing.assert_allclose(gx, nx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, nb, rtol=1e-6, atol=1e-8)
    with per_operation():
        ox, ob = ad.gradient(f, x, b)
    np.testing.assert_allclose(gx, ox, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gb, ob, rtol=1e-12, atol=1e-14)
    if type(b) is not np.ndarray:  # a number's cotangent is a number of its type
        assert type(gb) is type(ob) is type(b)


@pytest.mark.parametrize("name, expression, b, hand", CASES, ids=IDS)
def test_broadcast_regions_in_forward_mode_and_at_second_order(tmp_path, name, expression, b, hand):
    f = load(f"def f(x, b):\n    return {expression}\n", tmp_path)
    x = first_argument(b)
    tx = rng.normal(size=x.shape)
    tb = rng.normal(size=np.shape(b)) if isinstance(b, np.ndarray) else 0.5
    if type(b) is np.float64:
        tb = np.float64(tb)
    # forward mode: ⟨∇f, t⟩, against the reverse gradient and central differences
    _, dy = ad.jvp(f, (x, b), (tx, tb))
    gx, gb = ad.gradient(f, x, b)
    want = np.sum(gx * tx) + np.sum(gb * tb)
    assert np.isclose(dy, want, rtol=1e-10, atol=1e-12)
    h = 1e-6
    fd = (f(x + h * tx, b + h * tb) - f(x - h * tx, b - h * tb)) / (2 * h)
    assert np.isclose(dy, fd, rtol=1e-6, atol=1e-8)

    # second order: the Hessian in x (b held) by forward over reverse, against
    # central differences of the (fused) gradient and the hand-derived gradient's
    def in_x(x):
        return f(x, b)

    H = ad.hessian(in_x, x)
    np.testing.assert_allclose(H, fd_hessian(in_x, x), rtol=1e-5, atol=1e-6)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = 1e-5
        e = e.reshape(x.shape)
        cols.append(((hand(x + e, b)[0] - hand(x - e, b)[0]) / 2e-5).ravel())
    np.testing.assert_allclose(H, np.stack(cols, axis=1), rtol=1e-5, atol=1e-6)
    v = rng.normal(size=x.shape)
    (hv,) = ad.hvp(in_x, (x,), (v,))
    np.testing.assert_allclose(hv.ravel(), H @ v.ravel(), rtol=1e-9, atol=1e-10)


def test_float32_broadcast_regions_stay_float32(tmp_path):
    f = load("def f(x, b):\n    return np.sum(np.tanh(x + b) * x * 0.5 + b * b)\n", tmp_path)
    x = X.astype(np.float32)
    for b in (rng.uniform(-0.5, 0.5, N).astype(np.float32), np.float32(0.25), 0.25):
        ad.gradient(f, x, b)
        with fallback_refused():
            val, (gx, gb) = ad.withgradient(f, x, b)
        same_bits(val, f(x, b))
        assert type(val) is np.float32 and gx.dtype == np.float32
        with per_operation():
            ox, ob = ad.gradient(f, x, b)
        assert type(gb) is type(ob) and np.asarray(gb).dtype == np.asarray(ob).dtype
        np.testing.assert_allclose(gx, ox, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gb, ob, rtol=1e-5, atol=1e-5)
        nx, nb = fd_gradient(
            f, x.astype(float), np.float64(b) if np.ndim(b) == 0 else b.astype(float)
        )
        np.testing.assert_allclose(gx, nx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gb, nb, rtol=1e-4, atol=1e-3)


def test_a_member_of_another_shape_keeps_its_own_buffer(tmp_path):
    """``b * b + 1.0`` has b's shape (3,), not the region's (4, 3): the primal must
    not write the region's values into its buffer, nor the adjoint a cotangent of
    the region's shape; ``(m, 1) * (1, n)``: no operand has the region's shape."""
    f = load(
        """
        def f(x, b, c):
            return np.sum(x * (b * b + 1.0) * np.exp(b - 1.0) + np.sin(c * b) * (c - b))
        """,
        tmp_path,
    )
    x, b, c = X.copy(), rng.uniform(0.5, 1.5, N), rng.uniform(0.5, 1.5, (M, 1))
    ad.gradient(f, x, b, c)
    with fallback_refused():
        val, got = ad.withgradient(f, x, b, c)
        _, back = ad.pullback(f, x, b, c)
        again = [back(1.0), back(2.0)]  # a pullback run twice writes into nothing it reads
    same_bits(val, f(x, b, c))
    for g, want in zip(got, fd_gradient(f, x, b, c)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    for g, one, two in zip(got, *again):
        np.testing.assert_allclose(one, g, rtol=1e-13)
        np.testing.assert_allclose(two, 2 * g, rtol=1e-13)
    with per_operation():
        for g, want in zip(got, ad.gradient(f, x, b, c)):
            np.testing.assert_allclose(g, want, rtol=1e-12)


def test_sliced_arrays_fuse_with_broadcast_operands(tmp_path):
    """Rosenbrock through a closure over Python floats ``a``, ``b``."""
    f = load(
        """
        def make(a, b):
            def f(x):
                return np.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)
            return f

        f = make(1.0, 100.0)
        """,
        tmp_path,
    )
    x = rng.uniform(-1.5, 1.5, 30)
    ad.gradient(f, x)
    with fallback_refused():
        (g,) = ad.gradient(f, x)
    r = x[1:] - x[:-1] ** 2
    want = np.zeros_like(x)
    want[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    want[1:] += 200.0 * r
    np.testing.assert_allclose(g, want, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize(
    "b",
    [
        np.ones(5),  # does not broadcast with (4, 3): numpy's error, as unfused
        np.ones(N, dtype=np.float32),  # another dtype: numpy's promotion
        np.arange(N),  # integers
        np.float32(0.5),  # a float32 scalar with float64 arrays: promotion
        1,  # a Python int
    ],
    ids=["no-broadcast", "float32", "int-array", "float32-scalar", "int"],
)
def test_other_operands_take_the_per_operation_path(tmp_path, b):
    f = load("def f(x, b):\n    return np.sum(np.tanh(x + b) * x)\n", tmp_path)
    x = X.copy()
    ad.gradient(f, x, np.zeros(N))
    if np.shape(b) == (5,):
        with pytest.raises(ValueError, match="broadcast"):
            ad.gradient(f, x, b)
        return
    got = ad.gradient(f, x, b)
    with per_operation():
        want = ad.gradient(f, x, b)
    for g, w in zip(got, want):
        same_bits(g, w)


def test_fused_shape_checks_types_dtypes_and_required_shapes():
    a, row = np.ones((2, 3)), np.ones(3)
    assert fused_shape(0, a, row, 2.0, np.float64(1.0)) == ((2, 3), a.dtype, 1, 6, False)
    assert fused_shape(0, row, a) == ((2, 3), a.dtype, 2, 6, False)  # bit 1: the (2, 3) one
    assert fused_shape(0, a, a) == ((2, 3), a.dtype, 3, 6, True)  # all of the shape
    assert fused_shape(0, a, 1.0)[4] is False  # a number: a product of numbers is one
    assert fused_shape(0, np.ones((2, 1)), np.ones((1, 3)))[2] == 0
    assert fused_shape(0, np.ones(()), 1.0) is None  # 0-d: numbers, not arrays
    assert fused_shape(0, 1.0, 2.0) is None  # no array
    assert fused_shape(0, a, np.ones(4)) is None  # no broadcast
    assert fused_shape(0, a, 1) is None  # an int
    assert fused_shape(0, a, np.float32(1.0)) is None  # promotes
    assert fused_shape(0, a.astype(np.float16)) is None
    assert fused_shape(1, row, a) is None  # the first must have the region's shape
    assert fused_shape(2, a, a, row) is not None


def test_fused_fit_and_full_give_each_input_its_shape_and_type():
    g = np.arange(24.0).reshape(2, 3, 4)
    for x in (np.ones(4), np.ones((1, 4)), np.ones((3, 1)), np.ones((2, 1, 1)), np.ones(())):
        got = fused_fit(x, g)
        want = g.reshape(-1, *x.shape).sum(axis=0) if x.ndim < 2 else None
        assert got.shape == x.shape
        assert got.sum() == g.sum()
        if want is not None and x.shape == (4,):
            np.testing.assert_array_equal(got, want)
    assert fused_fit(g, g) is g
    assert type(fused_fit(2.0, g)) is float and fused_fit(2.0, g) == g.sum()
    assert type(fused_fit(np.float64(2.0), g)) is np.float64
    dt = np.dtype(np.float64)
    np.testing.assert_array_equal(
        fused_full(np.ones((1, 4)), 0.5, (2, 3, 4), 24, dt), np.full((1, 4), 3.0)
    )
    np.testing.assert_array_equal(fused_full(None, 0.5, (2, 3), 6, dt), np.full((2, 3), 0.5))
    assert fused_full(2.0, 0.5, (2, 3), 6, dt) == 3.0
    assert type(fused_full(np.float32(1.0), 0.5, (2,), 2, np.dtype(np.float32))) is np.float32
