"""The lean pullbacks of the numpy rules give exactly what the general code gives.

Covered: ``maximum``/``minimum``/``fmax``/``fmin`` without ties (boolean masks
instead of split weights), unary pullbacks that write ``ȳ * f'(x)`` into the fresh
derivative buffer (never into the output the rule keeps), those that keep only the
output, and ``unbroadcast``'s float-array shortcut.
"""

import numpy as np
import pytest

import rules  # noqa: F401  (registers the rules)
from rules import _numpy_binary
from rules._util import unbroadcast
from rulescore import ProjectTo, rrule, unthunk

KINKED = [np.maximum, np.minimum, np.fmax, np.fmin]


def _general_binary(f, x, y, ȳ):
    """The split-weight pullback, as the rule computes it when there are ties."""
    px, py = _numpy_binary.BINARY[f](np.asarray(x), np.asarray(y), f(x, y))
    return _numpy_binary._cotangent(x, ȳ, px), _numpy_binary._cotangent(y, ȳ, py)


@pytest.mark.parametrize("f", KINKED, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "y",
    [0.0, np.float64(0.1), np.array([0.3, -0.2, 0.0, 1.0]), np.array([[0.1], [-0.4]]), np.nan],
    ids=["float", "np-scalar", "same-shape", "column", "nan"],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kinked_without_ties_match_split_weights(f, y, dtype):
    x = np.array([[-0.7, 0.25, 0.5, np.nan], [1.5, -0.05, -2.0, 0.75]], dtype)
    if isinstance(y, np.ndarray):
        y = y.astype(dtype)
    _, pb = rrule(f, x, y)
    ȳ = np.linspace(-1.0, 1.0, 8).reshape(2, 4).astype(dtype)
    _, dx, dy = pb(ȳ)
    want_x, want_y = _general_binary(f, x, y, ȳ)
    for got, want in ((unthunk(dx), want_x), (unthunk(dy), want_y)):
        assert type(got) is type(want)
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).dtype == np.asarray(want).dtype


@pytest.mark.parametrize("f", KINKED, ids=lambda f: f.__name__)
def test_kinked_with_ties_still_split(f):
    x = np.array([1.0, 2.0, 5.0])
    _, pb = rrule(f, x, 2.0)
    _, dx, dy = pb(np.ones(3))
    want = [0.0, 0.5, 1.0] if f in (np.maximum, np.fmax) else [1.0, 0.5, 0.0]
    np.testing.assert_array_equal(dx, want)
    assert unthunk(dy) == 1.5


@pytest.mark.parametrize("f", [np.sin, np.tanh, np.exp, np.sqrt, np.log, np.cos, np.expm1])
def test_unary_pullback_never_overwrites_what_it_keeps(f):
    x = np.linspace(0.1, 2.0, 6)
    x0 = x.copy()
    pb = rrule(f, x)[1]  # the output is dropped: the pullback's closure alone holds it
    ȳ = np.linspace(-1.0, 3.0, 6)
    first = pb(ȳ)[1]
    second = pb(ȳ)[1]  # called again: same answer, nothing it keeps was modified
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(x, x0)
    Ω, pb = rrule(f, x)
    Ω0 = Ω.copy()
    np.testing.assert_array_equal(pb(ȳ)[1], first)
    np.testing.assert_array_equal(Ω, Ω0)
    assert first is not ȳ and first is not Ω
    h = 1e-6
    np.testing.assert_allclose(first, ȳ * (f(x + h) - f(x - h)) / (2 * h), rtol=1e-6)


@pytest.mark.parametrize("f", [np.tanh, np.exp, np.sqrt])
def test_output_only_pullback_projects_like_the_input(f):
    x = np.linspace(0.1, 2.0, 6, dtype=np.float32)
    _, pb = rrule(f, x)
    dx = pb(np.ones(6))[1]  # a float64 cotangent is projected to float32
    assert dx.dtype == np.float32 and dx.shape == (6,)
    dx = pb(2.0)[1]  # a scalar cotangent broadcasts
    assert dx.shape == (6,) and dx.dtype == np.float32


@pytest.mark.parametrize(
    "xshape, dshape",
    [((3,), (2, 3)), ((1, 3), (4, 3)), ((2, 1), (2, 5)), ((), (3,)), ((3,), (5, 2, 3))],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unbroadcast_shortcut_matches_sum_and_projection(xshape, dshape, dtype):
    x = np.ones(xshape, dtype)
    dx = np.arange(np.prod(dshape), dtype=dtype).reshape(dshape)
    got = unbroadcast(x, dx)
    extra = len(dshape) - len(xshape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(xshape) if n == 1 and dshape[i + extra] != 1
    )
    want = ProjectTo(x)(dx.sum(axis=axes, keepdims=True).reshape(xshape))
    np.testing.assert_array_equal(got, want)
    assert got.shape == x.shape and got.dtype == x.dtype


def test_unbroadcast_refuses_shapes_that_do_not_broadcast():
    with pytest.raises(Exception):
        unbroadcast(np.ones(3), np.ones((2, 4)))
