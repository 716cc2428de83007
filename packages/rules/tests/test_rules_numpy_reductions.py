"""Tests of the numpy reduction rules (rules._numpy_reductions, rules._numpy_cumulative)."""

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, frule, rrule
from rulestest import primal_and_tangent, test_frule, test_rrule

SUM_LIKE = {  # the function and its ndarray method; one implementation behind both
    "sum": (np.sum, np.ndarray.sum),
    "prod": (np.prod, np.ndarray.prod),
    "mean": (np.mean, np.ndarray.mean),
    "var": (np.var, np.ndarray.var),
    "std": (np.std, np.ndarray.std),
    "max": (np.max, np.ndarray.max),
    "min": (np.min, np.ndarray.min),
    "amax": (np.amax,),  # the same rule as max; its method is max's
    "amin": (np.amin,),
}
CUMULATIVE = {"cumsum": (np.cumsum, np.ndarray.cumsum), "cumprod": (np.cumprod, np.ndarray.cumprod)}
NO_COMPLEX = {"max", "min", "amax", "amin"}  # numpy orders complex lexicographically

AXES = {
    "all": {},
    "axis0": {"axis": 0},
    "axis-1": {"axis": -1},
    "tuple": {"axis": (0, 2)},
    "tuple-neg-keepdims": {"axis": (-1, 1), "keepdims": True},
    "keepdims": {"keepdims": True},
}
TOL32 = {"rtol": 1e-2, "atol": 1e-3}


def make(shape, dtype=np.float64, seed=0):
    """Distinct entries in [0.5, 1.5] (no ties; prod/cumprod well scaled)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=int))
    x = (0.5 + rng.permutation(n) / max(n, 1)).reshape(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-0.5, 0.5, shape)
    return x.astype(dtype)


def _cases(table, axes, dtypes):
    return [
        pytest.param(f, kwargs, dtype, id=f"{name}-{which}-{axis_name}-{np.dtype(dtype).name}")
        for name, fs in table.items()
        for which, f in zip(("function", "method"), fs)
        for axis_name, kwargs in axes.items()
        for dtype in dtypes
        if not (np.dtype(dtype).kind == "c" and name in NO_COMPLEX)
    ]


@pytest.mark.parametrize(
    "f, kwargs, dtype", _cases(SUM_LIKE, AXES, (np.float64, np.float32, np.complex128))
)
def test_reduction_3d(f, kwargs, dtype):
    x = make((2, 3, 2), dtype)
    tol = TOL32 if dtype is np.float32 else {}
    test_rrule(f, x, fkwargs=kwargs, **tol)
    test_frule(f, x, fkwargs=kwargs, **tol)


CUM_AXES = {"flattened": {}, "axis0": {"axis": 0}, "axis-1": {"axis": -1}}


@pytest.mark.parametrize(
    "f, kwargs, dtype", _cases(CUMULATIVE, CUM_AXES, (np.float64, np.float32, np.complex128))
)
def test_cumulative_2d(f, kwargs, dtype):
    x = make((3, 4), dtype)
    tol = TOL32 if dtype is np.float32 else {}
    test_rrule(f, x, fkwargs=kwargs, **tol)
    test_frule(f, x, fkwargs=kwargs, **tol)


SMALL_SHAPES = {"scalar": None, "0-d": (), "vector": (4,)}
ALL_FUNCTIONS = {**SUM_LIKE, **CUMULATIVE}


@pytest.mark.parametrize("name", ALL_FUNCTIONS)
@pytest.mark.parametrize("shape", SMALL_SHAPES.values(), ids=SMALL_SHAPES.keys())
def test_small_shapes(name, shape):
    x = 1.3 if shape is None else make(shape)
    for f in ALL_FUNCTIONS[name][: 1 if shape is None else 2]:  # methods get arrays only
        test_rrule(f, x)
        test_frule(f, x)


@pytest.mark.parametrize("name", ALL_FUNCTIONS)
def test_nested_list_input(name):
    f = ALL_FUNCTIONS[name][0]
    _, pb = rrule(f, [[0.5, 2.0], [1.5, 0.7]])
    dx = pb(np.ones(np.shape(f(np.ones((2, 2))))))[1]
    # A list argument gets a cotangent of the same nesting (as ProjectTo of a list gives).
    assert type(dx) is list and all(type(r) is list for r in dx) and np.shape(dx) == (2, 2)


@pytest.mark.parametrize("name", ALL_FUNCTIONS)
def test_positional_axis_gets_no_tangent(name):
    # x.sum(0) arrives as np.ndarray.sum(x, 0): one cotangent per positional argument.
    f, method = ALL_FUNCTIONS[name][0], ALL_FUNCTIONS[name][-1]
    x = make((3, 2))
    axis = primal_and_tangent(0, NoTangent())
    test_rrule(method, x, axis)
    test_frule(method, x, axis)
    test_rrule(f, x, primal_and_tangent(-1, NoTangent()))
    y, pb = rrule(method, x, 0)
    assert pb(np.ones_like(y))[2] is NoTangent()


@pytest.mark.parametrize("f", [np.var, np.std, np.ndarray.var, np.ndarray.std])
@pytest.mark.parametrize("kwargs", [{"ddof": 1}, {"axis": 1, "ddof": 1}])
def test_var_std_ddof(f, kwargs):
    x = make((3, 4))
    test_rrule(f, x, fkwargs=kwargs)
    test_frule(f, x, fkwargs=kwargs)


@pytest.mark.parametrize("f", [np.var, np.std])
@pytest.mark.parametrize("kwargs", [{"correction": 1}, {"axis": 0, "correction": 2}])
def test_var_std_correction(f, kwargs):  # numpy 2's name for ddof (functions only)
    x = make((3, 4))
    test_rrule(f, x, fkwargs=kwargs)
    test_frule(f, x, fkwargs=kwargs)


def test_var_positional_ddof():
    x = make((3, 4))
    no = [primal_and_tangent(v, NoTangent()) for v in (1, None, None, 1)]  # axis dtype out ddof
    test_rrule(np.var, x, *no)
    test_frule(np.var, x, *no)


@pytest.mark.parametrize("f", [np.sum, np.mean])
def test_dtype_keyword(f):
    x = make((3, 4), np.float32)
    test_rrule(f, x, fkwargs={"dtype": np.float64, "axis": 0}, **TOL32)
    test_frule(f, x, fkwargs={"dtype": np.float64, "axis": 0}, **TOL32)
    _, pb = rrule(f, x, dtype=np.float64)
    assert pb(1.0)[1].dtype == np.float32


WHERE = np.array([[True, False, True, True], [False, True, True, True], [True, True, False, True]])
WHERE_CASES = {
    "sum": (np.sum, {"where": WHERE, "axis": 1}),
    "sum-initial": (np.sum, {"initial": 2.0, "axis": 0}),
    "mean": (np.mean, {"where": WHERE, "axis": 1}),
    "var": (np.var, {"where": WHERE, "axis": 1}),
    "std": (np.std, {"where": WHERE}),
    "prod": (np.prod, {"where": WHERE, "axis": 0, "initial": 2.0}),
    "max": (np.max, {"where": WHERE, "axis": 1, "initial": -5.0}),
    "min-initial-wins": (np.min, {"axis": 1, "initial": 0.0}),
}


@pytest.mark.parametrize("f, kwargs", WHERE_CASES.values(), ids=WHERE_CASES.keys())
def test_where_and_initial_keywords(f, kwargs):
    x = make((3, 4))
    test_rrule(f, x, fkwargs=kwargs)
    test_frule(f, x, fkwargs=kwargs)


def test_out_is_refused():
    with pytest.raises(TypeError, match="out="):
        rrule(np.sum, np.ones(3), out=np.empty(()))


# prod and cumprod with zeros: exact, and no division by zero (warnings are errors).
ZERO_CASES = {
    "one-zero": [[2.0, 0.0, 3.0], [1.5, 0.5, 2.0]],
    "two-zeros-in-a-row": [[0.0, 0.0, 3.0], [1.5, 0.5, 2.0]],
    "zeros-in-each-row": [[0.0, 1.2, 3.0], [1.5, 0.0, 0.0]],
    "all-zero": [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
}


@pytest.mark.parametrize("x", ZERO_CASES.values(), ids=ZERO_CASES.keys())
@pytest.mark.parametrize("f", [np.prod, np.cumprod])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_prod_and_cumprod_with_zeros(f, x, axis, dtype):
    x = np.asarray(x, dtype)
    test_rrule(f, x, fkwargs={"axis": axis})
    test_frule(f, x, fkwargs={"axis": axis})


def test_prod_with_one_zero_gives_the_product_of_the_others():
    _, pb = rrule(np.prod, np.array([2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(pb(1.0)[1], [0.0, 6.0, 0.0])
    _, pb = rrule(np.prod, np.array([2.0, 0.0, 0.0]))
    np.testing.assert_array_equal(pb(1.0)[1], [0.0, 0.0, 0.0])


# max/min ties: the gradient is split equally among the tied entries.
@pytest.mark.parametrize("f", [np.max, np.amax, np.ndarray.max])
def test_max_ties_split_equally(f):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    _, pb = rrule(f, x, axis=1)
    np.testing.assert_allclose(pb(np.array([1.0, 3.0]))[1], [[0, 0.5, 0.5], [1, 1, 1]])
    _, ẏ = frule((NoTangent(), np.array([[0, 1.0, 3.0], [3.0, 0, 0]])), f, x, axis=1)
    np.testing.assert_allclose(ẏ, [2.0, 1.0])


def test_min_ties_split_equally_over_everything():
    _, pb = rrule(np.min, np.array([[1.0, 5.0], [1.0, 1.0]]))
    np.testing.assert_allclose(pb(1.0)[1], [[1 / 3, 0], [1 / 3, 1 / 3]])


def test_max_of_nan_sends_the_gradient_to_the_nan():
    _, pb = rrule(np.max, np.array([1.0, np.nan, 3.0]))
    np.testing.assert_array_equal(pb(1.0)[1], [0.0, 1.0, 0.0])


def test_std_of_constant_input_has_zero_gradient():
    _, pb = rrule(np.std, np.full(3, 2.0))
    np.testing.assert_array_equal(pb(1.0)[1], 0.0)


def test_cotangent_types():
    assert type(rrule(np.sum, 2.0)[1](1.0)[1]) is float
    assert rrule(np.sum, np.array(2.0))[1](1.0)[1].shape == ()
    assert rrule(np.mean, np.ones(3, np.float32))[1](1.0)[1].dtype == np.float32
    assert rrule(np.sum, np.arange(3))[1](1.0)[1].dtype == np.float64
    dx = rrule(np.sum, np.ones((2, 2)))[1](1.0)[1]
    dx += 1  # a fresh, writable array, not a broadcast view


@pytest.mark.parametrize("f", [np.sum, np.mean])
def test_a_whole_array_sum_refuses_a_cotangent_that_is_not_one_number(f):
    from rulescore import CotangentError

    x = make((3,))
    _, pb = rrule(f, x)
    with pytest.raises(CotangentError, match=r"np\.(sum|mean): .*one number.*\(2,\)"):
        pb(np.ones(2))
    (_, dx) = pb(np.array(2.0))  # a 0-d array is one number
    assert np.allclose(dx, 2.0 * (1.0 if f is np.sum else 1 / 3))
