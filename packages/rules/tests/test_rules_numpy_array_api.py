"""Tests for the array-API functions, the layout functions, the number-parts functions
and the non-differentiable integer-result functions (rules._numpy_array_api,
_numpy_layout, _numpy_number_parts, _numpy_integer_results)."""

import numpy as np
import pytest
from rules_testing import DTYPES, N, check, maker

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, ZeroTangent, frule, rrule
from rulestest import test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False

REAL = [np.float64, np.float32]


def ids(d):
    return np.dtype(d).name


# --- cumulative_sum / cumulative_prod / nancumsum / nancumprod -------------------------------

CUMULATIVE = [
    ((5,), {}),
    ((5,), {"include_initial": True}),
    ((3, 4), {"axis": 1}),
    ((3, 4), {"axis": 0, "include_initial": True}),
    ((2, 3, 2), {"axis": -2}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize(("shape", "kw"), CUMULATIVE)
@pytest.mark.parametrize("f", [np.cumulative_sum, np.cumulative_prod], ids=lambda f: f.__name__)
def test_cumulative(f, shape, kw, dtype):
    check(f, (maker(dtype)(*shape),), kw, dtype)


def test_cumulative_prod_with_zeros():
    x = np.array([[2.0, 0.0, 3.0, 0.0], [1.5, -1.0, 0.5, 2.0]])
    check(np.cumulative_prod, (x,), {"axis": 1, "include_initial": True}, np.float64)


def test_cumulative_refuses_out_and_integer_dtype_has_no_derivative():
    with pytest.raises(TypeError, match="out="):
        rrule(np.cumulative_sum, np.ones(3), out=np.empty(3))
    y, pb = rrule(np.cumulative_sum, np.array([1.5, 2.5]), dtype=int)
    assert y.dtype.kind == "i" and pb(np.ones(2)) == (NoTangent(), NoTangent())


@pytest.mark.parametrize("dtype", REAL, ids=ids)
@pytest.mark.parametrize(("args", "kw"), [((), {}), ((N(1),), {}), ((), {"axis": 0})])
@pytest.mark.parametrize("f", [np.nancumsum, np.nancumprod], ids=lambda f: f.__name__)
def test_nancumulative(f, args, kw, dtype):
    x = maker(dtype)(3, 4)
    x[0, 1] = x[2, 3] = np.nan
    # finite differences of the NaN entries are NaN-free: they are ignored (constant)
    check(f, (x, *args), kw, dtype)
    _, pb = rrule(f, x, *[a.primal for a in args], **kw)
    g = pb(np.ones_like(f(x, *[a.primal for a in args], **kw)))[1]
    assert g[0, 1] == 0 and g[2, 3] == 0


# --- matvec / vecmat / unstack / astype -----------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize(
    ("ashape", "bshape"),
    [((3, 4), (4,)), ((2, 3, 4), (4,)), ((3, 4), (2, 4)), ((1, 3, 2), (4, 1, 2))],
)
def test_matvec(ashape, bshape, dtype):
    m = maker(dtype)
    check(np.matvec, (m(*ashape), m(*bshape)), {}, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize(
    ("vshape", "ashape"),
    [((3,), (3, 4)), ((3,), (2, 3, 4)), ((2, 3), (3, 4)), ((4, 1, 3), (2, 3, 2))],
)
def test_vecmat(vshape, ashape, dtype):
    m = maker(dtype)
    check(np.vecmat, (m(*vshape), m(*ashape)), {}, dtype)


def test_vecmat_conjugates_the_vector():
    v, a = np.array([1j, 2.0]), np.eye(2)
    _, pb = rrule(np.vecmat, v, a)
    np.testing.assert_allclose(pb(np.array([1.0, 1j]))[1], [1.0, -1j])  # A conj(ȳ)
    with pytest.raises(TypeError, match="axes"):
        rrule(np.matvec, a, v, axes=[(0, 1), 0, 0])


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": -1}])
def test_unstack(kw, dtype):
    check(np.unstack, (maker(dtype)(3, 2, 4),), kw, dtype)


def test_unstack_zero_entries():
    x = np.ones((2, 3))
    _, pb = rrule(np.unstack, x)
    np.testing.assert_array_equal(pb((ZeroTangent(), np.ones(3)))[1], [[0, 0, 0], [1, 1, 1]])


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (np.float64, np.float32),
        (np.float32, np.float64),
        (np.float64, np.complex128),
        (np.complex128, np.complex64),
    ],
)
def test_astype(src, dst):
    x = maker(src)(4)
    test_rrule(np.astype, x, N(dst), rtol=1e-3, atol=1e-4)
    test_frule(np.astype, x, N(dst), rtol=1e-3, atol=1e-4)


# --- layout ---------------------------------------------------------------------------------

LAYOUT = [
    (np.rot90, lambda m: (m(2, 3),), {}),
    (np.rot90, lambda m: (m(2, 3, 4), N(3), N((1, 2))), {}),
    (np.rot90, lambda m: (m(2, 3),), {"k": -2}),
    (np.rollaxis, lambda m: (m(2, 3, 4), N(2)), {}),
    (np.rollaxis, lambda m: (m(2, 3, 4), N(0), N(2)), {}),
    (np.resize, lambda m: (m(2, 3), N((4, 4))), {}),
    (np.resize, lambda m: (m(5), N(3)), {}),
    (np.diagflat, lambda m: (m(3),), {}),
    (np.diagflat, lambda m: (m(2, 2), N(-1)), {}),
    (np.diagflat, lambda m: (m(3),), {"k": 2}),
    (np.block, lambda m: ([[m(2, 2), m(2, 1)], [m(1, 3)]],), {}),
    (np.block, lambda m: ([m(2), m(3)],), {}),
    (np.block, lambda m: ([[[m(1, 2)]], [[m(1, 2)]]],), {}),
    (np.broadcast_arrays, lambda m: (m(3, 1), m(4), m(1, 1)), {}),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=ids)
@pytest.mark.parametrize(
    ("f", "make", "kw"), LAYOUT, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(LAYOUT)]
)
def test_layout(f, make, kw, dtype):
    check(f, make(maker(dtype)), kw, dtype)


def test_block_with_numbers_and_zero_tangents():
    y, pb = rrule(np.block, [[1.0, np.array([2.0, 3.0])]])
    [[d_number, d_array]] = pb(np.array([10.0, 20.0, 30.0]))[1]
    assert d_number == 10.0 and type(d_number) is float
    np.testing.assert_array_equal(d_array, [20.0, 30.0])
    _, ẏ = frule(
        (NoTangent(), [[ZeroTangent(), np.ones(2)]]), np.block, [[1.0, np.array([2.0, 3.0])]]
    )
    np.testing.assert_array_equal(ẏ, [[0.0, 1.0, 1.0]])


def test_resize_repeats_accumulate():
    _, pb = rrule(np.resize, np.array([1.0, 2.0]), 5)
    np.testing.assert_array_equal(pb(np.arange(5.0))[1], [0 + 2 + 4, 1 + 3])


# --- number parts ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", REAL, ids=ids)
@pytest.mark.parametrize("f", [np.frexp, np.modf, np.fix], ids=lambda f: f.__name__)
def test_unary_parts(f, dtype):
    # away from the jumps: integers (modf, fix), powers of two (frexp's exponent)
    rng = np.random.default_rng(1)
    u = rng.uniform(0.2, 0.8, (3, 4))
    sign = np.where(rng.uniform(size=(3, 4)) < 0.5, -1.0, 1.0)
    x = sign * (
        2.0 ** (rng.integers(-3, 4, (3, 4)) + u)
        if f is np.frexp
        else rng.integers(-3, 4, (3, 4)) + u
    )
    check(f, (x.astype(dtype),), {}, dtype)


def test_frexp_exponent_has_no_tangent():
    (m, e), ṁ = frule((NoTangent(), np.ones(2)), np.frexp, np.array([3.0, 10.0]))
    assert ṁ[1] is NoTangent()
    np.testing.assert_array_equal(ṁ[0], [0.25, 1 / 16])
    assert rrule(np.frexp, np.ones(2))[1]((ZeroTangent(), ZeroTangent()))[1] is ZeroTangent()


@pytest.mark.parametrize("dtype", REAL, ids=ids)
@pytest.mark.parametrize("f", [np.divmod, np.fmod], ids=lambda f: f.__name__)
@pytest.mark.parametrize(("xshape", "yshape"), [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (2,))])
def test_binary_parts(f, xshape, yshape, dtype):
    # x / y = an integer plus a fraction in [0.2, 0.8]: away from the jumps
    rng = np.random.default_rng(2)
    y = rng.uniform(0.5, 2.0, yshape) * np.where(rng.uniform(size=yshape) < 0.5, -1, 1)
    shape = np.broadcast_shapes(xshape, yshape)
    q = rng.integers(-4, 5, shape) + rng.uniform(0.2, 0.8, shape)
    x = q * y
    if xshape == ():
        x, y = np.float64(0.7), np.array([2.0, -3.0])  # 0.35, -0.23
    check(f, (np.asarray(x, dtype)[()], y.astype(dtype)), {}, dtype)


def test_divmod_quotient_has_no_derivative():
    _, pb = rrule(np.divmod, np.array([7.5]), np.array([2.0]))
    assert pb((np.ones(1), ZeroTangent())) == (NoTangent(), ZeroTangent(), ZeroTangent())
    np.testing.assert_array_equal(pb((ZeroTangent(), np.ones(1)))[2], [-3.0])


@pytest.mark.parametrize("dtype", REAL, ids=ids)
@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"period": 4.0}, {"discont": 4.0}])
def test_unwrap(kw, dtype):
    x = np.cumsum(maker(dtype)(4, 5) * 3, axis=-1).astype(dtype)
    check(np.unwrap, (x,), kw, dtype)


def test_real_if_close_follows_the_branch():
    z = np.array([1.0 + 1e-20j, 2.0])
    y, pb = rrule(np.real_if_close, z)
    assert y.dtype.kind == "f"
    assert pb(np.ones(2))[1].dtype.kind == "c"
    assert frule((NoTangent(), np.array([1 + 1j, 1j])), np.real_if_close, z)[1].dtype.kind == "f"
    check(np.real_if_close, (maker(np.complex128)(3),), {}, np.complex128)
    check(np.real_if_close, (maker(np.float64)(3),), {}, np.float64)


# --- non-differentiable -----------------------------------------------------------------------

NONDIFF = [
    (np.gcd, (np.array([4, 6]), 2)),
    (np.lcm, (np.array([4, 6]), 3)),
    (np.bitwise_and, (np.array([5]), 3)),
    (np.invert, (np.array([5]),)),
    (np.left_shift, (np.array([5]), 1)),
    (np.spacing, (np.array([1.0, 2.0]),)),
    (np.nextafter, (np.array([1.0]), 2.0)),
    (np.tril_indices, (3,)),
    (np.triu_indices_from, (np.ones((3, 3)),)),
    (np.diag_indices, (3,)),
    (np.lexsort, ((np.array([1.0, 0.0]), np.array([0.0, 1.0])),)),
    (np.hanning, (5,)),
    (np.isscalar, (1.0,)),
    (np.broadcast_shapes, ((2, 1), (3,))),
]


@pytest.mark.parametrize(("f", "args"), NONDIFF, ids=[c[0].__name__ for c in NONDIFF])
def test_non_differentiable(f, args):
    y, pb = rrule(f, *args)
    assert pb(ZeroTangent()) == (NoTangent(),) * (1 + len(args))
    assert frule((NoTangent(),) * (1 + len(args)), f, *args)[1] is NoTangent()
