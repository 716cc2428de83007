"""Fused elementwise regions (``ad.transform.fuse``).

An elementwise expression over float arrays of one shape, summed (or averaged) to
a number, runs as plain numpy with an adjoint derived at transform time. Each
test compares the fused path with central differences or hand-derived values,
and with the per-operation path (``FLAGS.fused`` off) on the same program; the
conditions under which a region falls back are tested too.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from fused_testing import fallback_refused, load, per_operation
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ad
from ad import CotangentShapeError
from rulescore import CotangentError, ZeroTangent


def dense(gradients, n):
    """``None`` (an argument the value does not depend on) as zeros."""
    return tuple(np.zeros(n) if g is None else g for g in gradients)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    r = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


def test_rosenbrock_is_fused_and_matches_the_hand_written_gradient():
    src = ad.code_adjoint(rosenbrock, np.ones(4))
    assert "_ad_fz1 = True" in src and "_ad_np.add.reduce" in src
    x = np.random.default_rng(0).uniform(-1.5, 1.5, 50)
    x0 = x.copy()
    ad.gradient(rosenbrock, x)  # transformed: the helpers' cells exist
    with fallback_refused("_ad_fasti_pow", "_ad_fasti_sub_into", "_ad_rcall"):
        (g,) = ad.gradient(rosenbrock, x)
    assert np.allclose(g, rosenbrock_grad(x), rtol=1e-13, atol=1e-12)
    assert np.array_equal(x, x0)
    assert g.flags.owndata and g.flags.writeable
    with per_operation():
        (g_ops,) = ad.gradient(rosenbrock, x)
    assert np.allclose(g, g_ops, rtol=1e-13, atol=1e-12)


def test_the_value_is_numpys_bit_for_bit():
    x = np.random.default_rng(1).normal(size=1001)
    y, _ = ad.pullback(rosenbrock, x)
    assert y == rosenbrock(x) and type(y) is np.float64


def test_np_square_fuses_and_a_square_of_another_module_does_not(tmp_path, numgrad):
    f = load("def f(x, y):\n    return np.sum(np.square(x - y) * y)\n", tmp_path)
    x, y = np.linspace(0.1, 1.0, 6), np.linspace(1.0, 2.0, 6)
    with fallback_refused("_ad_fasti_mul", "_ad_fasti_sub", "_ad_rcall"):
        gx, gy = ad.gradient(f, x, y)
    np.testing.assert_allclose(gx, 2 * (x - y) * y)
    np.testing.assert_allclose(gy, -2 * (x - y) * y + (x - y) ** 2)
    g = load(
        "class _Np:\n    sum = staticmethod(np.sum)\n"
        "    square = staticmethod(lambda a: a * a * a)\n\n\n"
        "def f(x, y):\n    np = _Np\n    return np.sum(np.square(x - y) * y)\n",
        tmp_path,
    )
    for got, want in zip(ad.gradient(g, x, y), numgrad(g, x, y)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


EXPRESSIONS_F32 = [
    "np.sum((x - y) * (x + y) / 3.0)",
    "np.mean((x - y) ** 2)",
    "np.sum(np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x)",
    "np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - y[:-1]) ** 2)",
    "np.mean(np.square(x - y) * 0.5)",
]


@pytest.mark.parametrize("expression", EXPRESSIONS_F32)
def test_float32_regions_fuse_and_stay_float32(tmp_path, expression):
    f = load(f"def f(x, y):\n    return {expression}\n", tmp_path)
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 2.0, 257).astype(np.float32)
    y = rng.uniform(0.5, 2.0, 257).astype(np.float32)
    with fallback_refused("_ad_fasti_mul", "_ad_fasti_add", "_ad_fasti_sub", "_ad_rcall"):
        val, (gx, gy) = ad.withgradient(f, x, y)
    want = f(x, y)
    assert type(val) is type(want) is np.float32 and val == want  # numpy's value, bit for bit
    assert gx.dtype == gy.dtype == np.float32
    with per_operation():
        px, py = ad.gradient(f, x, y)
    np.testing.assert_allclose(gx, px, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(gy, py, rtol=2e-5, atol=1e-5)
    # mixed float32 and float64 inputs: the per-operation path, numpy's promotion
    gx64, gy64 = ad.gradient(f, x, y.astype(np.float64))
    assert gx64.dtype == np.float32 and gy64.dtype == np.float64
    np.testing.assert_allclose(gx64, px, rtol=1e-4, atol=1e-4)


# Each member kind, as the only or the main operation of a summed expression; the
# arguments are positive where the function needs it (log, sqrt, division).
EXPRESSIONS = [
    "np.sum((x + y) * 2.0)",
    "np.sum((x - y) / 3.0)",
    "np.sum(2.0 - x * y)",
    "np.sum(x * y * x)",
    "np.sum(x / y - 1)",
    "np.sum(3.0 / x + y / 2)",
    "np.sum(-x * y)",
    "np.sum(x ** 2 + y ** 3 + x ** 5)",
    "np.sum(np.sin(x) * np.cos(y))",
    "np.sum(np.exp(x) - np.log(y))",
    "np.sum(np.tanh(x * y))",
    "np.sum(np.sqrt(x) * y)",
    "np.mean((x - y) ** 2)",
    "np.mean(np.sin(x) + 1)",
    "np.sum(x[1:] * y[:-1] - x[:-1])",
    "np.sum(np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x + y * y)",
    "np.sum(x * x) + np.sum(np.cos(y) * x)",
    "((x - y) ** 2 * 0.5).sum()",
    "(np.sin(x) * y).mean() + (x / y).sum()",
    "np.mean(np.square(x - y))",
    "np.sum(np.square(np.sin(x)) * y + np.square(y))",
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
@pytest.mark.parametrize("n", [1, 7, 300])
def test_each_member_kind_matches_finite_differences(tmp_path, numgrad, expression, n):
    f = load(f"def f(x, y):\n    return {expression}\n", tmp_path)
    rng = np.random.default_rng(n)
    x, y = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
    assert "_ad_fz1 = True" in ad.code_adjoint(f, x, y)
    gx, gy = dense(ad.gradient(f, x, y), n)
    nx, ny = numgrad(f, x, y)
    assert np.allclose(gx, nx, rtol=1e-6, atol=1e-7)
    assert np.allclose(gy, ny, rtol=1e-6, atol=1e-7)
    with per_operation():
        ox, oy = dense(ad.gradient(f, x, y), n)
    assert np.allclose(gx, ox, rtol=1e-12, atol=1e-13)
    assert np.allclose(gy, oy, rtol=1e-12, atol=1e-13)


def test_gradient_skips_what_only_computes_a_returned_sum(tmp_path):
    """``ad.gradient`` does not return the value: the fused primal computes only what
    the adjoint reads. Here the adjoint reads x alone; the value's x * x underflows,
    which ``withgradient`` (which returns it) meets and ``gradient`` does not."""
    f = load("def f(x):\n    return np.sum(x * x * 1e300)\n", tmp_path)
    src = ad.code_adjoint(f, np.ones(2))
    assert "_ad_nv=False" in src and "_ad_NOVALUE" in src
    x = np.full(4, 1e-200)
    with np.errstate(under="raise"):
        (g,) = ad.gradient(f, x)
        with pytest.raises(FloatingPointError):
            ad.withgradient(f, x)
    assert np.allclose(g, 2e100)
    x = np.linspace(0.5, 1.5, 4)
    val, (g,) = ad.withgradient(f, x)
    assert val == f(x) and np.allclose(g, 2e300 * x)
    y, back = ad.pullback(f, x)
    assert y == val and np.allclose(back(1.0)[0], g)


def test_a_returned_sum_read_again_or_in_a_callee_is_computed(tmp_path):
    f = load(
        """
        def g(x):
            return np.sum(np.sin(x) * 2.0 + x)

        def f(x, *, scale=3.0):
            s = np.sum(np.cos(x) * x - 1.0)
            return g(x) * scale + s
        """,
        tmp_path,
    )
    x = np.linspace(-1.0, 1.0, 5)
    (gx,) = ad.gradient(f, x)
    want = 3.0 * (2.0 * np.cos(x) + 1.0) + (np.cos(x) - np.sin(x) * x)
    assert np.allclose(gx, want)
    (gx,) = ad.gradient(lambda x: f(x, scale=0.5), x)
    assert np.allclose(gx, 0.5 * (2.0 * np.cos(x) + 1.0) + (np.cos(x) - np.sin(x) * x))


def test_members_never_run_after_a_call_that_may_write_their_inputs(tmp_path):
    """``np.sin(x)`` is computed before ``bump`` (with a rule: not differentiable)
    writes into x, as Python evaluates it, not moved to the sum after it."""
    f = load(
        """
        from rulescore import non_differentiable

        def bump(x):
            x += 1.0
            return 0.0

        non_differentiable(bump)

        def f(x):
            return np.sum(np.sin(x) * 2.0 + bump(x) + x * x)
        """,
        tmp_path,
    )
    x = np.linspace(0.0, 1.0, 4)
    want = f(x.copy())
    y, _ = ad.pullback(f, x.copy())
    assert y == want


def test_a_division_by_a_zero_constant_is_left_to_numpy(tmp_path):
    f = load("def f(x):\n    return np.sum(np.sin(x) / 0.0 + x)\n", tmp_path)
    for dtype in (np.float64, np.float32):
        with np.errstate(divide="ignore"):
            (g,) = ad.gradient(f, np.array([1.0, 2.0], dtype=dtype))
        assert np.all(np.isinf(g)) and g.dtype == dtype


def test_a_sum_of_one_operation_is_not_fused(tmp_path):
    f = load("def f(x, y):\n    return np.sum(x * y)\n", tmp_path)
    x, y = np.arange(3.0), np.arange(3.0, 6.0)
    assert "_ad_fz" not in ad.code_adjoint(f, x, y)
    assert all(np.array_equal(g, w) for g, w in zip(ad.gradient(f, x, y), (y, x)))


LAYOUTS = {
    "2-d": lambda a: a.reshape(4, 6),
    "fortran": lambda a: np.asfortranarray(a.reshape(4, 6)),
    "strided": lambda a: np.concatenate([a, a])[::2],
    "reversed": lambda a: a[::-1],
    "0-d": lambda a: np.array(a[3]),
}


@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_any_shape_and_memory_layout(tmp_path, numgrad, layout):
    f = load(
        """
        def f(x, y):
            return np.sum(np.sin(x) * y - np.exp(0.5 * y) / (1.5 + x * x))
        """,
        tmp_path,
    )
    rng = np.random.default_rng(8)
    x, y = layout(rng.normal(size=24)), layout(rng.normal(size=24))
    x0, y0 = x.copy(), y.copy()
    gx, gy = ad.gradient(f, x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    assert gx.shape == x.shape and gy.shape == y.shape
    nx, ny = numgrad(f, x, y)
    assert np.allclose(gx, nx, rtol=1e-6, atol=1e-8)
    assert np.allclose(gy, ny, rtol=1e-6, atol=1e-8)


def test_slices_of_a_matrix_and_reversed_slices(tmp_path, numgrad):
    f = load(
        """
        def f(A):
            return np.sum((A[1:] - A[:-1]) ** 2 * A[::-1][1:] + np.cos(A[:-1]))
        """,
        tmp_path,
    )
    A = np.random.default_rng(9).normal(size=(5, 3))
    assert "_ad_fz1 = True" in ad.code_adjoint(f, A)
    (g,) = ad.gradient(f, A)
    assert np.allclose(g, numgrad(f, A)[0], rtol=1e-6, atol=1e-8)


def test_a_temporary_read_after_the_sum_is_no_member(tmp_path):
    """``t`` is read again after the sum (a user variable, not a temporary): the
    region is only what the sum alone reads."""
    f = load(
        """
        def f(x, y):
            t = x * y
            s = np.sum(np.sin(t) * x)
            return s + np.sum(t)
        """,
        tmp_path,
    )
    x, y = np.linspace(0.1, 1.0, 5), np.linspace(1.0, 2.0, 5)
    gx, gy = ad.gradient(f, x, y)
    t = x * y
    assert np.allclose(gx, np.cos(t) * y * x + np.sin(t) + y)
    assert np.allclose(gy, np.cos(t) * x * x + x)


@pytest.mark.parametrize(
    "body",
    [
        # the workload's one expression, spelled with named intermediate values
        """
        r = out - y
        sq = r ** 2
        return np.mean(sq)
        """,
        """
        d = out - y
        return np.mean(d * d)
        """,
        """
        scaled = 0.5 * out
        total = np.sum(np.tanh(scaled) * y)
        return total
        """,
    ],
)
def test_named_intermediate_values_read_once_fuse_like_temporaries(tmp_path, numgrad, body):
    f = load("def f(out, y):\n" + textwrap.indent(textwrap.dedent(body), "    "), tmp_path)
    out, y = np.linspace(-1.0, 2.0, 6), np.linspace(0.5, 1.5, 6)
    with fallback_refused("_ad_fasti_sub", "_ad_fasti_pow", "_ad_fasti_mul", "_ad_rcall"):
        got = ad.gradient(f, out, y)
    for g, want in zip(got, numgrad(f, out, y)):
        assert np.allclose(g, want, rtol=1e-6, atol=1e-8)
    with per_operation():
        assert all(np.allclose(a, b) for a, b in zip(got, ad.gradient(f, out, y)))


@pytest.mark.parametrize(
    "body",
    [
        # a name read twice, bound twice, read by locals(): never members (a global
        # write is refused anyway)
        "r = x - y\nreturn np.sum(r * r) + np.sum(r)",
        "r = x - y\nr = r * 2.0\nreturn np.sum(r * x)",
        "r = x - y\nnames = locals()\nreturn np.sum(r * x) + len(names)",
    ],
)
def test_named_values_that_are_seen_elsewhere_stay_bound(tmp_path, numgrad, body):
    f = load("def f(x, y):\n" + textwrap.indent(body, "    "), tmp_path)
    x, y = np.linspace(-1.0, 2.0, 4), np.linspace(0.5, 1.5, 4)
    for g, want in zip(ad.gradient(f, x, y), numgrad(f, x, y)):
        assert np.allclose(g, want, rtol=1e-6, atol=1e-8)


def test_buffers_freed_by_what_the_adjoint_needs_are_not_reused_after(tmp_path, numgrad):
    """The part of a region the adjoint reads ends by deleting its dead members; the
    value's part, after it, must not write into their buffers (it did)."""
    f = load(
        """
        def f(x, y):
            z = x * y
            return np.sum((z * z + x**1 + y**4) * x) + np.sum(z**2)
        """,
        tmp_path,
    )
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    gx, gy = ad.gradient(f, x, y)
    # by hand: d/dx = 3x²y² + 2x + y⁴ + 2xy², d/dy = 2x³y + 4xy³ + 2x²y
    assert np.allclose(gx, 3 * x**2 * y**2 + 2 * x + y**4 + 2 * x * y**2)
    assert np.allclose(gy, 2 * x**3 * y + 4 * x * y**3 + 2 * x**2 * y)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_infinite_constants_name_nothing_of_the_users(tmp_path):
    """Generated code wrote ``1e999`` as ``inf``: in a module binding ``inf = -1.0`` the
    value was -2 and the gradient [0, -1], silently (issue 25)."""
    f = load(
        """
        inf = -1.0
        nan = 2.0

        def f(x):
            return np.sum(x * x * 1e999 + x) + np.sum(x * 1e999 * 0.0 + x)
        """,
        tmp_path,
    )
    x = np.array([1.0, 2.0])
    y, (g,) = ad.withgradient(f, x)
    assert np.isnan(y) and np.isnan(f(x))
    assert np.all(np.isnan(g))  # inf + (inf * 0 = nan)
    f2 = load("inf = -1.0\n\ndef f(x):\n    return np.sum(x * x * 1e999 + x)\n", tmp_path)
    y2, (g2,) = ad.withgradient(f2, x)
    assert y2 == np.inf and np.all(g2 == np.inf)


def test_regions_in_branches_beside_loops_and_twice_in_a_function(tmp_path, numgrad):
    f = load(
        """
        def f(x, y, flag):
            s = 0.0
            for k in range(3):  # in a loop: the per-operation path
                s = s + np.sum(np.sin(x) * k + y)
            if flag:
                t = np.sum(np.exp(x) * y - x ** 2)
            else:
                t = np.mean(np.cos(y) * y + 1.0)
            return s + t + np.sum(np.tanh(x - y) * 2.0)
        """,
        tmp_path,
    )
    src = ad.code_adjoint(f, np.ones(3), np.ones(3), True)
    assert "_ad_fz3 = True" in src and "_ad_fz4" not in src
    rng = np.random.default_rng(6)
    x, y = rng.normal(size=5), rng.normal(size=5)
    for flag in (True, False):

        def at(x, y, flag=flag):
            return f(x, y, flag)

        gx, gy = ad.gradient(at, x, y)
        nx, ny = numgrad(at, x, y)
        assert np.allclose(gx, nx, rtol=1e-6, atol=1e-7)
        assert np.allclose(gy, ny, rtol=1e-6, atol=1e-7)


def test_second_derivatives_of_a_region(tmp_path):
    """Higher order runs the per-operation path (the region's test sees no float64
    arrays): the Hessian of rosenbrock by hand."""
    x = np.array([0.3, -0.7, 1.1, 0.5])
    H = ad.hessian(rosenbrock, x)
    want = np.zeros((4, 4))
    for i in range(3):
        want[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        want[i + 1, i + 1] += 200.0
        want[i, i + 1] = want[i + 1, i] = -400.0 * x[i]
    assert np.allclose(H, want, rtol=1e-10)


@pytest.mark.parametrize(
    "x, y",
    [
        # broadcasting and a Python float: fused (test_ad_fused_broadcast.py)
        (np.linspace(0.5, 1.5, 6), np.linspace(0.5, 1.5, 3)[:, None]),
        (np.linspace(0.5, 1.5, 6).astype(np.float32), np.linspace(0.5, 1.5, 6)),  # falls back
        (np.arange(1, 7), np.linspace(0.5, 1.5, 6)),  # an integer array: falls back
        (1.25, np.linspace(0.5, 1.5, 6)),
    ],
    ids=["broadcast", "float32", "int", "scalar"],
)
def test_other_operands_fuse_or_fall_back_to_the_per_operation_path(tmp_path, numgrad, x, y):
    f = load("def f(x, y):\n    return np.sum(np.sin(x) * y + x * x)\n", tmp_path)
    gx, gy = ad.gradient(f, x, y)
    nx, ny = numgrad(f, x, y)
    if not isinstance(x, np.ndarray) or x.dtype.kind == "f":
        assert np.allclose(gx, nx, rtol=1e-4, atol=1e-5)
    assert np.allclose(gy, ny, rtol=1e-4, atol=1e-5)


def test_the_pullback_may_run_twice_and_with_any_number(tmp_path):
    f = load("def f(x):\n    return np.mean(np.exp(x[1:]) * x[:-1] - x[1:] ** 2)\n", tmp_path)
    x = np.linspace(-1.0, 1.0, 9)
    y, back = ad.pullback(f, x)
    (g1,) = ad.gradient(f, x)
    (a,) = back(2.5)
    (b,) = back(np.float64(2.5))
    (c,) = back(np.array(2.5))
    (d,) = back(2.5 + 3.0j)  # a complex cotangent of a real result: its real part
    for got in (a, b, c, d):
        assert np.allclose(got, 2.5 * g1, rtol=1e-14)
    assert a is not b
    (z,) = back(ZeroTangent())
    assert z is None or np.all(np.asarray(z) == 0)


def test_a_pullback_run_again_reads_the_primal_it_kept(tmp_path):
    """Run once (``gradient``), the adjoint writes new arrays into the buffers of
    kept primal values it has read for the last time; a pullback that may run again
    must not."""
    f = load(
        "def f(x, y):\n    return np.sum(np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x + y * y)\n",
        tmp_path,
    )
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=300), rng.normal(size=300)
    want = ad.gradient(f, x, y)
    _, back = ad.pullback(f, x, y)
    for _ in range(3):
        got = back(1.0)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    e = np.exp(-0.5 * x * x)
    assert np.allclose(want[0], (np.cos(x) - x * np.sin(x)) * e + np.tanh(y))
    assert np.allclose(want[1], (1 - np.tanh(y) ** 2) * x + 2 * y)


def test_a_cotangent_that_is_not_one_number_is_refused(tmp_path):
    f = load("def f(x):\n    return np.sum(x * x + 1.0)\n", tmp_path)
    _, back = ad.pullback(f, np.ones(3))
    with pytest.raises(CotangentShapeError, match=r"fused_\d+\.py:4: .*one number.*\(2,\)"):
        back(np.ones(2))
    with per_operation(), pytest.raises(CotangentError, match=r"np\.sum: .*one number.*\(2,\)"):
        ad.pullback(f, np.ones(3))[1](np.ones(2))


def test_an_empty_mean_has_an_empty_gradient(tmp_path):
    f = load("def f(x):\n    return np.mean(x * x)\n", tmp_path)
    with pytest.warns(RuntimeWarning):
        (g,) = ad.gradient(f, np.zeros(0))
    assert g.shape == (0,)


def test_gradients_are_fresh_arrays_and_the_inputs_untouched(tmp_path):
    """The fused primal writes into its own dead temporaries only, never into an
    argument or a slice of one, and each gradient is an array of its own."""
    f = load(
        """
        def f(x, y):
            return np.sum(np.exp(-(x[1:] - y[1:]) ** 2) + (x[:-1] * y[:-1]) / 2.0 + y[1:])
        """,
        tmp_path,
    )
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=400), rng.normal(size=400)
    x0, y0 = x.copy(), y.copy()
    gx, gy = ad.gradient(f, x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    for g in (gx, gy):
        assert g.flags.owndata and g.flags.writeable
        assert not np.shares_memory(g, x) and not np.shares_memory(g, y)
    assert not np.shares_memory(gx, gy)


def test_a_user_rule_turns_fusion_off(tmp_path):
    """Checked in a fresh interpreter: rules cannot be unregistered."""
    script = tmp_path / "user_rule.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import ad
            from ad.runtime.scalar_paths import FLAGS
            from rulescore import NoTangent, rrule

            def f(x):
                return np.sum(np.sin(x) * x)

            x = np.linspace(0.0, 1.0, 5)
            assert FLAGS.fused
            g0 = ad.gradient(f, x)[0]

            @rrule.register(np.sin)
            def _(x: np.ndarray):
                return np.sin(x), lambda ȳ: (NoTangent(), 10.0 * ȳ)

            assert not FLAGS.fused
            g1 = ad.gradient(f, x)[0]
            assert np.allclose(g1 - g0, (10.0 - np.cos(x)) * x), (g0, g1)
            print("ok")
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --- random regions -------------------------------------------------------------

UNARY = ["np.sin", "np.cos", "np.tanh", "np.exp", "-"]


@st.composite
def region(draw, depth=0):
    """An elementwise expression of slices of x and y (of one length) and constants."""
    atoms = st.sampled_from(["x[:-1]", "y[1:]", "x[1:]", "y[:-1]"]) | st.floats(0.5, 2.0).map(
        lambda c: f"{c:.3f}"
    )
    if depth >= 3:
        return draw(atoms)
    kind = draw(st.sampled_from(["atom", "bin", "bin", "unary", "pow"]))
    if kind == "atom":
        return draw(atoms)
    if kind == "bin":
        op = draw(st.sampled_from(["+", "-", "*", "/"]))
        right = draw(region(depth + 1))
        if op == "/":  # away from zero
            right = f"(1.5 + np.tanh({right}))"
        return f"({draw(region(depth + 1))} {op} {right})"
    if kind == "pow":
        return f"({draw(region(depth + 1))}) ** {draw(st.sampled_from([2, 3]))}"
    fn = draw(st.sampled_from(UNARY))
    return f"{fn}({draw(region(depth + 1))})"


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    body=region(),
    reduce=st.sampled_from(["np.sum({})", "np.mean({})", "({}).sum()", "({}).mean()"]),
    seed=st.integers(0, 2**16),
)
def test_random_regions_match_directional_differences_and_the_per_operation_path(
    tmp_path, body, reduce, seed
):
    f = load(f"def f(x, y):\n    return {reduce.format(body + ' + 0.5 * x[1:]')}\n", tmp_path)
    rng = np.random.default_rng(seed)
    n = 50
    x, y = rng.uniform(-1.5, 1.5, n), rng.uniform(-1.5, 1.5, n)
    try:
        with np.errstate(all="raise"):
            assume(np.isfinite(f(x, y)))
    except FloatingPointError:  # the program itself overflows (np.exp(np.exp(8)))
        assume(False)
    x0, y0 = x.copy(), y.copy()
    gx, gy = dense(ad.gradient(f, x, y), n)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    with per_operation():
        ox, oy = dense(ad.gradient(f, x, y), n)
    assert np.allclose(gx, ox, rtol=1e-10, atol=1e-11), body
    assert np.allclose(gy, oy, rtol=1e-10, atol=1e-11), body
    h = 1e-6
    u, w = rng.normal(size=n), rng.normal(size=n)
    fd = (f(x + h * u, y + h * w) - f(x - h * u, y - h * w)) / (2 * h)
    # the difference's rounding error grows with the value (constants like 1.9 ** 18)
    tol = 1e-5 * (1.0 + abs(f(x, y)))
    assert gx @ u + gy @ w == pytest.approx(fd, rel=1e-5, abs=tol), body
