"""Fused regions with several reductions (``ad.transform.fuse``): ``np.sum(a) +
np.sum(b)``, ``100.0 * np.sum(a)``, ``s = s + np.sum(a) + np.sum(b)``.

A linear combination of sums (or of means) of elementwise expressions is one
region: one test, the value the user's own operations on numpy's sums (bit for
bit), and one cotangent array per input however many reductions read it. Each
case is compared with the per-operation path (``FLAGS.fused`` off), central
differences and hand-derived values, in reverse and forward mode and at second
order.
"""

import textwrap

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian, same_bits
from fused_testing import fallback_refused, load, per_operation

import ad

rng = np.random.default_rng(30)
X, Y = rng.uniform(0.5, 1.5, 9), rng.uniform(0.5, 1.5, 9)
S = 0.75

# (name, body of f(x, y, s), hand-derived gradient (gx, gy, gs))
CASES = [
    (
        "two sums",
        "return np.sum(np.sin(x) * np.exp(-0.5 * x * x)) + np.sum(np.tanh(y) * x + y * y)",
        lambda x, y, s: (
            (np.cos(x) - x * np.sin(x)) * np.exp(-0.5 * x * x) + np.tanh(y),
            (1 - np.tanh(y) ** 2) * x + 2 * y,
            0.0,
        ),
    ),
    (
        "rosenbrock's two sums",
        "return 100.0 * np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum((1.0 - x[:-1]) ** 2)",
        lambda x, y, s: (rosenbrock_grad(x), np.zeros_like(y), 0.0),
    ),
    (
        "s = s + sum + sum",
        "s = s + np.sum(x * y) + np.sum(y * y * 0.5)\nreturn s",
        lambda x, y, s: (y, x + y, 1.0),
    ),
    (
        "means, negated, divided, minus a number",
        "return -np.mean(x * y) + np.mean(x * x) / 4.0 - 2.0 * s",
        lambda x, y, s: ((-y + x / 2.0) / x.size, -x / x.size, -2.0),
    ),
    (
        "a number times a sum",
        "return 0.5 * np.sum(x * x * y)",
        lambda x, y, s: (x * y, 0.5 * x * x, 0.0),
    ),
    (
        "methods",
        "return (np.sin(x) * y).sum() - 3.0 * (x * x).sum() + s",
        lambda x, y, s: (np.cos(x) * y - 6.0 * x, np.sin(x), 1.0),
    ),
]
IDS = [c[0] for c in CASES]


def rosenbrock_grad(x):
    r = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


def define(body, tmp_path):
    return load("def f(x, y, s):\n" + textwrap.indent(body, "    ") + "\n", tmp_path)


@pytest.mark.parametrize("name, body, hand", CASES, ids=IDS)
def test_combined_reductions_are_one_region(tmp_path, name, body, hand):
    f = define(body, tmp_path)
    x, y = X.copy(), Y.copy()
    src = ad.code_adjoint(f, x, y, S)
    assert "_ad_fz1 = True" in src and "_ad_fz2" not in src  # one region
    ad.gradient(f, x, y, S)  # transformed: the helpers' cells exist
    with fallback_refused():
        val, got = ad.withgradient(f, x, y, S)
    same_bits(val, f(x, y, S))  # the user's operations on numpy's sums, bit for bit
    want = hand(x, y, S)
    for g, w in zip(got, want):
        np.testing.assert_allclose(0.0 if g is None else g, w, rtol=1e-12, atol=1e-13)
    for g, w in zip(got, fd_gradient(f, x, y, S)):
        np.testing.assert_allclose(0.0 if g is None else g, w, rtol=1e-6, atol=1e-8)
    with per_operation():
        ops = ad.gradient(f, x, y, S)
    for g, o in zip(got, ops):
        assert (g is None) == (o is None)
        if g is not None:
            np.testing.assert_allclose(g, o, rtol=1e-12, atol=1e-13)
            # a float's cotangent is a float (per operation: np.float64, a float too)
            assert type(g) is (float if type(o) is np.float64 else type(o))


@pytest.mark.parametrize("name, body, hand", CASES, ids=IDS)
def test_combined_reductions_forward_and_second_order(tmp_path, name, body, hand):
    f = define(body, tmp_path)
    x, y = X.copy(), Y.copy()
    tx, ty, ts = rng.normal(size=x.size), rng.normal(size=y.size), 0.3
    _, dy = ad.jvp(f, (x, y, S), (tx, ty, ts))
    gx, gy, gs = hand(x, y, S)
    assert np.isclose(dy, np.sum(gx * tx) + np.sum(gy * ty) + gs * ts, rtol=1e-10, atol=1e-12)
    h = 1e-6
    fd = (f(x + h * tx, y + h * ty, S + h * ts) - f(x - h * tx, y - h * ty, S - h * ts)) / (2 * h)
    assert np.isclose(dy, fd, rtol=1e-6, atol=1e-8)

    def in_x(x):
        return f(x, y, S)

    H = ad.hessian(in_x, x)
    np.testing.assert_allclose(H, fd_hessian(in_x, x), rtol=1e-5, atol=1e-6)
    e = np.eye(x.size) * 1e-5
    by_hand = np.stack([(hand(x + d, y, S)[0] - hand(x - d, y, S)[0]) / 2e-5 for d in e], axis=1)
    np.testing.assert_allclose(H, by_hand, rtol=1e-5, atol=1e-6)


def test_a_pullback_of_a_combined_region_runs_twice_and_skips_the_value(tmp_path):
    f = define(CASES[1][1], tmp_path)
    x = rng.uniform(-1.5, 1.5, 40)
    assert "_ad_NOVALUE" in ad.code_adjoint(f, x, Y, S)  # gradient skips both sums
    (g, _, _) = ad.gradient(f, x, Y, S)
    y, back = ad.pullback(f, x, Y, S)
    same_bits(y, f(x, Y, S))
    for seed in (1.0, 2.5, np.float64(-1.0)):
        np.testing.assert_allclose(back(seed)[0], float(seed) * g, rtol=1e-13)


@pytest.mark.parametrize(
    "body, x, y, s",
    [
        # a sum and a mean: two regions, each fused
        ("return np.sum(x * x * 2.0) + np.mean(y * x * 3.0)", X, Y, S),
        # reductions of unrelated arrays: two regions (one test would tie them)
        ("return np.sum(x * x * 2.0) + np.sum(y[:4] * y[:4] * 3.0)", X, Y, S),
    ],
    ids=["sum and mean", "unrelated arrays"],
)
def test_reductions_that_do_not_combine_stay_regions_of_their_own(tmp_path, body, x, y, s):
    f = define(body, tmp_path)
    src = ad.code_adjoint(f, x, y, s)
    assert "_ad_fz1 = True" in src and "_ad_fz2 = True" in src
    got = ad.gradient(f, x, y, s)
    for g, w in zip(got, fd_gradient(f, x, y, s)):
        np.testing.assert_allclose(0.0 if g is None else g, w, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    "s",
    [
        0,  # an int constant: no cotangent, combined
        np.float64(0.75),  # a numpy scalar: its cotangent of its type
        np.float32(0.75),
        np.array([0.75, 0.25]),  # an array: not a number, the per-operation path
    ],
    ids=["int", "float64", "float32", "array"],
)
def test_the_value_a_combination_reads_besides_reductions(tmp_path, s):
    f = define("s = s + np.sum(x * y) + np.sum(y * y * 0.5)\nreturn s", tmp_path)
    x, y = X.copy(), Y.copy()
    ad.gradient(f, x, y, 1.0)
    if isinstance(s, np.ndarray):  # an array result: its pullback
        val, back = ad.pullback(f, x, y, s)
        same_bits(val, f(x, y, s))
        gx, gy, gs = back(np.ones(2))
        np.testing.assert_allclose(gx, 2 * y)
        np.testing.assert_allclose(gy, 2 * (x + y))
        np.testing.assert_allclose(gs, np.ones(2))
        return
    with fallback_refused():
        val, (gx, gy, gs) = ad.withgradient(f, x, y, s)
    same_bits(val, f(x, y, s))
    np.testing.assert_allclose(gx, y, rtol=1e-13)
    np.testing.assert_allclose(gy, x + y, rtol=1e-13)
    with per_operation():
        ox, oy, os_ = ad.gradient(f, x, y, s)
    assert type(gs) is (float if type(s) is int else type(s)) and gs == os_ == 1.0


def test_a_reduction_over_a_broadcast_operand_takes_the_per_operation_path(tmp_path):
    """``np.sum(b * b * 2.0)`` reduces an array of b's shape, not the region's: the
    region's test fails (one cotangent of the region's shape would count b's
    entries once per row) and the members run one by one."""
    f = load("def f(x, b):\n    return np.sum(x * b * 3.0) + np.sum(b * b * 2.0)\n", tmp_path)
    x, b = rng.normal(size=(4, 3)), rng.normal(size=3)
    gx, gb = ad.gradient(f, x, b)
    np.testing.assert_allclose(gx, np.broadcast_to(3.0 * b, x.shape), rtol=1e-13)
    np.testing.assert_allclose(gb, 3.0 * x.sum(axis=0) + 4.0 * b, rtol=1e-13)
    same_bits(ad.pullback(f, x, b)[0], f(x, b))
    # of one shape, the same program is one fused region
    with fallback_refused():
        gx, gb = ad.gradient(f, x, rng.normal(size=(4, 3)))


def test_combined_reductions_with_broadcast_operands(tmp_path):
    """Both reductions read x of the region's shape (4, 3); b (3,) broadcasts."""
    f = load(
        "def f(x, b):\n    return np.sum(np.tanh(x + b) * x) + 0.5 * np.sum(x * x * b)\n",
        tmp_path,
    )
    x, b = rng.normal(size=(4, 3)), rng.normal(size=3)
    ad.gradient(f, x, b)
    with fallback_refused():
        val, (gx, gb) = ad.withgradient(f, x, b)
    same_bits(val, f(x, b))
    t = np.tanh(x + b)
    np.testing.assert_allclose(gx, (1 - t * t) * x + t + x * b, rtol=1e-13)
    np.testing.assert_allclose(gb, ((1 - t * t) * x + 0.5 * x * x).sum(axis=0), rtol=1e-13)
    for g, w in zip((gx, gb), fd_gradient(f, x, b)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
    with per_operation():
        for g, w in zip((gx, gb), ad.gradient(f, x, b)):
            np.testing.assert_allclose(g, w, rtol=1e-12)
