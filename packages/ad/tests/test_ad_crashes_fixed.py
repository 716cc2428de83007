"""Correct programs that used to crash inside ``ad``: each gives the derivative
finite differences give, in reverse mode (gradient, pullback) and forward mode
(jvp), and at second order where it applies.

1. numpy functions of Python lists and tuples of active values (``np.sum([a, b])``);
2. unpacking a user namedtuple returned by a function;
3. pullback seeds with ``None`` entries (no cotangent, as Zygote's ``nothing``);
4. reading a list by a negative index while the list grows (``out[-1]`` after append);
5. ``ad.jvp`` of a division by an array;
6. a fused sum of a slice of a computed array (``(x + x)[1:]``);
7. the Hessian of a function unpacking an array into its rows.
"""

import collections

import numpy as np
import pytest
from ad_testing import fd_gradient as fd_grad
from ad_testing import fd_hessian

import ad

RTOL = 1e-5
ATOL = 1e-7


def fd_jvp(f, args, tangents, h=1e-6):
    plus = [x + h * t for x, t in zip(args, tangents)]
    minus = [x - h * t for x, t in zip(args, tangents)]
    return (f(*plus) - f(*minus)) / (2 * h)


def check_both_modes(f, *args, rtol=RTOL, atol=ATOL):
    """ad.gradient and ad.jvp of ``f`` agree with finite differences."""
    want = fd_grad(f, *args)
    got = ad.gradient(f, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=float), w, rtol=rtol, atol=atol)
    rng = np.random.default_rng(0)
    tangents = tuple(
        float(rng.normal()) if isinstance(x, float) else rng.normal(size=np.shape(x)) for x in args
    )
    y, ẏ = ad.jvp(f, args, tangents)
    np.testing.assert_allclose(y, f(*args), rtol=1e-12)
    np.testing.assert_allclose(ẏ, fd_jvp(f, args, tangents), rtol=rtol, atol=atol)
    return got


# --- 1. numpy functions of lists and tuples of active values -----------------------


def sum_of_list(a, b):
    return np.sum([a, a * b])


def mean_of_entries(x):
    return np.mean([x[0], x[0] * x[1]])


def norm_of_list(a, b):
    return np.linalg.norm([a, b])


def prod_of_entries(x):
    return np.prod([x[0], x[1], x[2]])


def max_of_entries(x):
    return np.max([x[0], x[1] * 3.0])


def sum_of_tuple(a, b):
    return np.sum((a, a * b))


def sum_of_nested_list(a, b):
    return np.sum([[a, b], [b * b, a * b]])


def var_of_list(a, b):
    return np.var([a, a * b, b])


def exp_of_list(a, b):
    return np.sum(np.exp([a, b]) * np.array([1.0, 2.0]))


def cumsum_of_list(a, b):
    return np.sum(np.cumsum([a, b, a * b]) ** 2)


def sum_of_list_of_arrays(x):
    return np.sum([x, x * x]) + np.linalg.norm([x[0], x[1]])


def sum_axis_of_list_of_arrays(x):
    return np.sum(np.sum([np.sin(x), x * 2.0], axis=0) ** 2)


def stack_of_list(x):
    return np.sum(np.stack([x, x * x]) ** 2)


def list_built_by_append(x):
    out = []
    for i in range(3):
        out.append(x[i] * x[i])
    return np.mean(out) + np.max(out)


def inner(a, b):
    return np.sum([a * b, np.sin(a)])


def nested_call_on_list(x):
    return inner(x[0], x[1]) * np.prod([x[1], x[2]])


@pytest.mark.parametrize(
    "f, args",
    [
        (sum_of_list, (2.0, 3.0)),
        (norm_of_list, (2.0, 3.0)),
        (sum_of_tuple, (2.0, 3.0)),
        (sum_of_nested_list, (0.7, -1.3)),
        (var_of_list, (2.0, 3.0)),
        (exp_of_list, (0.2, -0.4)),
        (cumsum_of_list, (0.5, 1.5)),
        (mean_of_entries, (np.array([1.5, 0.7, 2.0]),)),
        (prod_of_entries, (np.array([1.5, 0.7, 2.0]),)),
        (max_of_entries, (np.array([1.5, 0.7, 2.0]),)),
        (sum_of_list_of_arrays, (np.array([1.5, 0.7, 2.0]),)),
        (sum_axis_of_list_of_arrays, (np.array([[1.5, 0.7], [2.0, -0.3]]),)),
        (stack_of_list, (np.array([1.5, 0.7, 2.0]),)),
        (list_built_by_append, (np.array([1.5, -0.7, 2.0]),)),
        (nested_call_on_list, (np.array([1.5, 0.7, 2.0]),)),
    ],
)
def test_numpy_function_of_a_list_of_active_values(f, args):
    check_both_modes(f, *args)


def test_list_argument_of_numpy_function_gets_list_cotangent():
    def f(xs):
        return np.sum(xs) * np.prod(xs)

    (g,) = ad.gradient(f, [2.0, 3.0])
    assert type(g) is list
    np.testing.assert_allclose(g, [6.0 + 3.0 * 5.0, 6.0 + 2.0 * 5.0])


def test_list_of_float32_arrays_keeps_dtype():
    def f(x):
        return np.sum([x, x * x])

    x = np.array([1.5, 0.5], dtype=np.float32)
    (g,) = ad.gradient(f, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 1.0 + 2.0 * x, rtol=1e-6)
    _, ẏ = ad.jvp(f, (x,), (np.ones(2, np.float32),))
    np.testing.assert_allclose(ẏ, np.sum(1.0 + 2.0 * x), rtol=1e-6)


def test_complex_entries_of_a_list():
    def f(z):
        return np.real(np.sum([z * z, np.conj(z) * 2.0]))

    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    _, back = ad.pullback(f, z)
    (g,) = back(1.0)
    # d/dz of Re(z² + 2 z̄) as a cotangent: conj(2z) + 2
    np.testing.assert_allclose(g, np.conj(2.0 * z) + 2.0)
    v = np.array([0.3 - 0.1j, 1.0 + 0.5j])
    _, ẏ = ad.jvp(f, (z,), (v,))
    np.testing.assert_allclose(ẏ, np.real(np.sum(2.0 * z * v + 2.0 * np.conj(v))))


def test_concatenate_of_ragged_list_still_works():
    def f(x):
        return np.sum(np.concatenate([x, x[:2] * 3.0]) ** 2)

    check_both_modes(f, np.array([1.5, 0.7, 2.0]))


def test_hessian_of_numpy_function_of_a_list():
    def f(p):
        return np.sum([p[0] * p[1], p[1] ** 2, np.sin(p[2])]) + np.linalg.norm([p[0], p[2]])

    p = np.array([0.3, 0.5, 0.8])
    np.testing.assert_allclose(ad.hessian(f, p), fd_hessian(f, p), rtol=1e-5, atol=1e-6)


# --- 2. unpacking a namedtuple returned by a function -------------------------------

Pair = collections.namedtuple("Pair", "a b")
Triple = collections.namedtuple("Triple", "a b c")


def make_pair(x):
    return Pair(x * 2.0, x * x)


def unpack_pair(x):
    a, b = make_pair(x)
    return np.sum(a * b)


def make_triple(x):
    return Triple(x * 2.0, x * x, np.sin(x))


def unpack_triple_starred(x):
    a, *rest = make_triple(x)
    return np.sum(a * rest[1] + rest[0])


def loop_over_namedtuple(x):
    s = 0.0
    for v in make_triple(x):
        s = s + np.sum(v * v)
    return s


def unpack_and_attribute(x):
    p = make_triple(x)
    a, b, c = p
    return np.sum(a * p.b + c)


@pytest.mark.parametrize(
    "f", [unpack_pair, unpack_triple_starred, loop_over_namedtuple, unpack_and_attribute]
)
@pytest.mark.parametrize("x", [0.7, np.array([0.3, -1.2, 0.5])])
def test_unpacking_namedtuple_from_function(f, x):
    check_both_modes(f, x)


def test_hessian_of_unpacked_namedtuple():
    def f(p):
        a, b = Pair(p[0] * p[1], np.sin(p[1]))
        return a * b

    p = np.array([0.3, 0.5])
    np.testing.assert_allclose(ad.hessian(f, p), fd_hessian(f, p), rtol=1e-5, atol=1e-6)


# --- 3. pullback seeds with None entries --------------------------------------------


def two_outputs(x):
    return [x * 2.0, x * 3.0]


def nested_outputs(x):
    return (x * 2.0, {"u": x * 3.0, "v": [x, x * x]})


def record_output(x):
    return Pair(x * 2.0, x * x)


@pytest.mark.parametrize(
    "f, seed, want",
    [
        (two_outputs, [1.0, None], 2.0),
        (two_outputs, [None, 1.0], 3.0),
        (two_outputs, (None, 2.0), 6.0),
        (nested_outputs, (None, {"u": 1.0, "v": [None, 2.0]}), 3.0 + 2.0 * 2.0 * 2.0),
        (nested_outputs, (1.0, None), 2.0),
        (nested_outputs, (1.0, {"u": None, "v": None}), 2.0),
        (record_output, Pair(None, 1.0), 4.0),
        (record_output, Pair(1.0, 2.0), 2.0 + 2.0 * 4.0),
    ],
)
def test_pullback_seed_with_none_entries(f, seed, want):
    _, back = ad.pullback(f, 2.0)
    (g,) = back(seed)
    assert g == pytest.approx(want)


def test_pullback_seed_all_none_gives_no_gradient():
    _, back = ad.pullback(two_outputs, 2.0)
    assert back([None, None]) == (None,)


def test_pullback_seed_none_with_arrays():
    x = np.array([1.0, 2.0], dtype=np.float32)
    _, back = ad.pullback(two_outputs, x)
    (g,) = back([None, np.ones(2, np.float32)])
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [3.0, 3.0])


# --- 4. negative indices into a growing list ----------------------------------------


def append_then_scale_last(x):
    out = []
    for i in range(3):
        out.append(x[i] * 2.0)
        out[-1] = out[-1] * x[i]
    return sum(out)


def append_and_update_earlier(x):
    out = [x[0]]
    for i in range(1, 4):
        out.append(out[-1] * x[i])
        out[-2] = out[-2] + x[i] ** 2
        if len(out) > 2:
            out[-3] = out[-3] * out[-1]
    return sum(out)


def append_and_slice_tail(x):
    out = []
    for i in range(4):
        out.append(x[i])
        tail = out[-2:]
        out[-1] = tail[-1] * 2.0 + (tail[0] if len(tail) > 1 else 0.0)
    return sum(out) * out[-1]


def append_arrays_inplace_ops(x):
    out = []
    for i in range(3):
        out.append(np.sin(x[i]))
        out[-1] = out[-1] * x[i]
        out[-1] = out[-1] + out[0]
    return np.sum(out)


@pytest.mark.parametrize(
    "f",
    [
        append_then_scale_last,
        append_and_update_earlier,
        append_and_slice_tail,
    ],
)
def test_negative_index_into_growing_list(f):
    check_both_modes(f, np.array([1.5, 0.7, 2.0, -0.4]))


def test_negative_index_into_growing_list_of_arrays():
    check_both_modes(append_arrays_inplace_ops, np.array([[1.5, 0.7], [2.0, -0.4], [0.3, 0.2]]))


# --- 5. forward mode of a division by an array --------------------------------------


def reciprocal_sum(x):
    return np.sum(1.0 / x)


def ratio_sum(x):
    return np.sum(x / (x + 1.0))


def scalar_over_array_element(x):
    return np.sum(x[0] / x) + np.sum(x[-1] / (x[0] + 2.0))


@pytest.mark.parametrize("f", [reciprocal_sum, ratio_sum, scalar_over_array_element])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_division_by_array(f, shape):
    x = np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape)
    check_both_modes(f, x)


def test_division_by_array_float32_jvp():
    x = np.array([0.5, 1.5, 2.5], dtype=np.float32)
    v = np.ones(3, dtype=np.float32)
    y, ẏ = ad.jvp(reciprocal_sum, (x,), (v,))
    np.testing.assert_allclose(ẏ, np.sum(-1.0 / x.astype(float) ** 2), rtol=1e-5)


def test_division_by_array_hessian():
    x = np.array([0.5, 1.5, 2.5])
    np.testing.assert_allclose(
        ad.hessian(ratio_sum, x), fd_hessian(ratio_sum, x), rtol=1e-5, atol=1e-6
    )


# --- 6. fused sums of slices of computed arrays -------------------------------------


def slice_of_sum(x):
    return np.sum((x + x)[1:] * x[:-1])


def slices_of_one_product(x):
    y = x * x
    return np.sum(y[1:] * y[:-1] + y[1:])


def mean_of_sliced_ufunc(x):
    return np.mean(np.sin(x * 2.0)[:-1] + (x - 1.0)[1:] ** 2)


def slice_of_slice_product(x):
    return np.sum(((x + 1.0)[1:] * x[:-1])[1:] - x[2:])


def method_sum_of_sliced(x):
    return ((x * 3.0)[::2] * x[1::2]).sum()


@pytest.mark.parametrize(
    "f",
    [
        slice_of_sum,
        slices_of_one_product,
        mean_of_sliced_ufunc,
        slice_of_slice_product,
        method_sum_of_sliced,
    ],
)
def test_fused_sum_of_slice_of_computed_array(f):
    check_both_modes(f, np.array([0.4, 1.3, 0.7, 1.1, -0.3, 0.9]))
    np.testing.assert_allclose(
        ad.withgradient(f, np.array([0.4, 1.3, 0.7, 1.1, -0.3, 0.9])).val,
        f(np.array([0.4, 1.3, 0.7, 1.1, -0.3, 0.9])),
    )


# --- 7. second order through unpacking an array -------------------------------------


def unpack_exp(p):
    a, b = np.exp(p)
    return a * b


def unpack_rows(p):
    r0, r1, r2 = np.outer(p, p)
    return np.sum(r0 * r1 + np.sin(r2))


def unpack_starred(p):
    a, *rest = np.sin(p)
    return a * rest[0] * rest[1]


def loop_over_array(p):
    s = 0.0
    for v in np.exp(p):
        s = s + v * v
    return s


@pytest.mark.parametrize(
    "f, p",
    [
        (unpack_exp, np.array([0.3, 0.5])),
        (unpack_rows, np.array([0.3, 0.5, 0.8])),
        (unpack_starred, np.array([0.3, 0.5, 0.8])),
        (loop_over_array, np.array([0.3, 0.5, 0.8])),
    ],
)
def test_hessian_through_unpacking_an_array(f, p):
    np.testing.assert_allclose(ad.hessian(f, p), fd_hessian(f, p), rtol=1e-5, atol=1e-6)
    check_both_modes(f, p)
