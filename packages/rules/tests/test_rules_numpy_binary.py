"""Tests of the binary numpy ufunc rules, np.clip and np.where (rules._numpy_binary)."""

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, frule, rrule
from rulestest import central_fdm, primal_and_tangent, test_frule, test_rrule

# (shape of x, shape of y); None is a Python float.
SHAPE_PAIRS = {
    "scalars": (None, None),
    "0-d": ((), ()),
    "vectors": ((3,), (3,)),
    "matrix-vector": ((2, 3), (3,)),
    "scalar-matrix": (None, (2, 3)),
    "0d-matrix": ((), (2, 3)),
    "column-row": ((2, 1), (1, 3)),
}
TOL = {np.float64: {}, np.float32: {"rtol": 3e-2, "atol": 3e-3}}


def make(shape, dtype=np.float64, lo=-1.0, hi=1.0, seed=0):
    rng = np.random.default_rng(seed)
    if shape is None:
        return float(rng.uniform(lo, hi))
    return np.asarray(rng.uniform(lo, hi, shape), dtype=dtype)


SMOOTH = [np.logaddexp, np.logaddexp2, np.arctan2, np.hypot]
KINKED = [np.maximum, np.minimum, np.fmax, np.fmin, np.copysign]


def _cases(fs):
    return [
        pytest.param(f, shapes, dtype, id=f"{f.__name__}-{name}-{np.dtype(dtype).name}")
        for f in fs
        for name, shapes in SHAPE_PAIRS.items()
        for dtype in (np.float64, np.float32)
        if not (dtype is np.float32 and None in shapes)
    ]


@pytest.mark.parametrize("f, shapes, dtype", _cases(SMOOTH))
def test_smooth_binary(f, shapes, dtype):
    x = make(shapes[0], dtype, -1.0, 1.0, 0)
    y = make(shapes[1], dtype, 0.3, 1.0, 1)  # hypot and arctan2 away from the origin
    test_rrule(f, x, y, **TOL[dtype])
    test_frule(f, x, y, **TOL[dtype])


@pytest.mark.parametrize("f, shapes, dtype", _cases(KINKED))
def test_kinked_binary_away_from_ties(f, shapes, dtype):
    # x in [-1, -0.3] ∪ [0.3, 1], y in [0.05, 0.15]: never equal, both away from 0.
    x = make(shapes[0], dtype, 0.3, 1.0, 0)
    x = x * np.where(make(shapes[0], np.float64, -1, 1, 5) > 0, 1, -1)
    x = float(x) if shapes[0] is None else np.asarray(x, dtype)
    y = make(shapes[1], dtype, 0.05, 0.15, 1)
    fdm = central_fdm(5, 1, max_range=0.05)  # float32 steps would otherwise cross the kinks
    test_rrule(f, x, y, fdm=fdm, **TOL[dtype])
    test_frule(f, x, y, fdm=fdm, **TOL[dtype])


@pytest.mark.parametrize("f", [np.maximum, np.minimum, np.fmax, np.fmin])
def test_ties_split_half_and_half(f):
    x, y = np.array([1.0, 2.0, 5.0]), np.array([1.0, 3.0, 4.0])
    _, pb = rrule(f, x, y)
    _, dx, dy = pb(np.ones(3))
    assert dx[0] == dy[0] == 0.5
    np.testing.assert_array_equal(dx + dy, 1.0)
    _, ẏ = frule((NoTangent(), np.ones(3), np.zeros(3)), f, x, y)
    assert ẏ[0] == 0.5


@pytest.mark.parametrize(
    "f, nan_gets",
    [(np.maximum, "nan"), (np.minimum, "nan"), (np.fmax, "other"), (np.fmin, "other")],
)
def test_nan_handling(f, nan_gets):
    x, y = np.array([np.nan, 1.0]), np.array([2.0, np.nan])
    _, pb = rrule(f, x, y)
    _, dx, dy = pb(np.ones(2))
    expected = [1.0, 0.0] if nan_gets == "nan" else [0.0, 1.0]
    np.testing.assert_array_equal(dx, expected)
    np.testing.assert_array_equal(dy, expected[::-1])


@pytest.mark.parametrize("shapes", [(None, None), ((2, 3), (3,)), ((3,), ())], ids=str)
def test_ldexp_integer_exponent_is_non_differentiable(shapes):
    x = make(shapes[0])
    e = (
        2
        if shapes[1] is None
        else np.arange(-1, np.prod(shapes[1], dtype=int) - 1).reshape(shapes[1])
    )
    test_rrule(np.ldexp, x, primal_and_tangent(e, NoTangent()))
    test_frule(np.ldexp, x, primal_and_tangent(e, NoTangent()))


def test_heaviside_away_from_zero_and_at_zero():
    x, h0 = np.array([-0.5, 0.7]), np.array([0.3, 0.4])
    test_rrule(np.heaviside, x, h0)
    test_frule(np.heaviside, x, h0)
    _, pb = rrule(np.heaviside, np.array([0.0, 1.0]), h0)
    np.testing.assert_array_equal(pb(np.ones(2))[2], [1.0, 0.0])


def test_hypot_at_origin_has_zero_subgradient():
    _, pb = rrule(np.hypot, 0.0, 0.0)
    assert pb(1.0)[1:] == (0.0, 0.0)


# np.clip: x in [-1, 1] against bounds ±0.5 (entries placed away from the bounds).
X = np.array([[-0.9, -0.2, 0.3], [0.8, 0.1, -0.7]])
CLIP_CASES = {
    "scalars": (X, -0.5, 0.5),
    "lower-none": (X, None, 0.5),
    "upper-none": (X, -0.5, None),
    "array-bounds": (X, np.array([-0.5, -0.4, 0.0]), np.array([[0.6], [0.5]])),
    "0-d": (np.array(0.9), np.array(-0.5), np.array(0.5)),
    "python-scalar": (0.2, -0.5, 0.5),
    "float32": (X.astype(np.float32), np.float32(-0.5), np.float32(0.5)),
}


@pytest.mark.parametrize("x, lo, hi", CLIP_CASES.values(), ids=CLIP_CASES.keys())
def test_clip(x, lo, hi):
    args = [x] + [primal_and_tangent(None, NoTangent()) if b is None else b for b in (lo, hi)]
    tol = TOL[np.float32] if np.result_type(x) == np.float32 else {}
    test_rrule(np.clip, *args, **tol)
    test_frule(np.clip, *args, **tol)


def test_clip_gradient_goes_to_the_bound_that_clips():
    _, pb = rrule(np.clip, np.array([-2.0, 0.0, 2.0, 0.5]), -1.0, 0.5)
    _, dx, dlo, dhi = pb(np.ones(4))
    np.testing.assert_array_equal(dx, [0.0, 1.0, 0.0, 1.0])  # x == hi: x keeps it
    assert (dlo, dhi) == (1.0, 1.0)


@pytest.mark.parametrize("kwargs", [{"a_min": -0.5, "a_max": 0.5}, {"min": -0.5}, {"max": 0.35}])
def test_clip_keyword_bounds(kwargs):
    test_rrule(np.clip, X, fkwargs=kwargs)
    test_frule(np.clip, X, fkwargs=kwargs)


@pytest.mark.parametrize(
    "args, kwargs", [((-0.5,), {}), ((), {"min": -0.5}), ((), {"max": 0.35})], ids=repr
)
def test_clip_method_with_one_bound(args, kwargs):
    # x.clip(lo) takes one bound alone, as np.clip(x, lo) may not
    test_rrule(np.ndarray.clip, X, *args, fkwargs=kwargs)
    test_frule(np.ndarray.clip, X, *args, fkwargs=kwargs)


COND = np.array([[True, False, True], [False, False, True]])
WHERE_CASES = {
    "matrices": (COND, X, -X),
    "broadcast": (COND, np.array([1.0, 2.0, 3.0]), np.array([[0.5], [0.7]])),
    "scalars": (True, 1.5, 2.5),
    "scalar-branch": (COND, 1.5, X),
    "complex": (COND, X + 1j * X.T.sum(), 2.0),
    "float32": (COND, X.astype(np.float32), np.float32(0.5)),
}


@pytest.mark.parametrize("cond, x, y", WHERE_CASES.values(), ids=WHERE_CASES.keys())
def test_where(cond, x, y):
    # cond as 0/1 integers: rulestest cannot yet compare bool arguments (same np.where).
    c = primal_and_tangent(np.asarray(cond, np.int8), NoTangent())
    tol = TOL[np.float32] if np.result_type(x) == np.float32 else {}
    test_rrule(np.where, c, x, y, **tol)
    test_frule(np.where, c, x, y, **tol)


def test_where_bool_condition_routes_the_cotangent():
    _, pb = rrule(np.where, COND, X, 1.0)
    _, dc, dx, dy = pb(np.ones((2, 3)))
    assert dc is NoTangent()
    np.testing.assert_array_equal(dx, COND)
    assert dy == 3.0


def test_where_one_argument_is_non_differentiable():
    _y, pb = rrule(np.where, COND)
    assert pb(None) == (NoTangent(), NoTangent())
