"""``to_vec`` round trips (property tests), ``rand_tangent`` and ``test_approx``."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rulescore import NoTangent, Tangent, Thunk, ZeroTangent
from rulestest import RuleTestFailure, rand_tangent, test_approx, to_vec

Pair = namedtuple("Pair", "a b")


@dataclass
class Box:
    value: object
    label: str = "box"


finite = st.floats(-1e6, 1e6, allow_nan=False)
dtypes = st.sampled_from([np.float64, np.float32, np.complex128, np.complex64, np.int64])


@st.composite
def arrays(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    dtype = draw(dtypes)
    n = int(np.prod(shape))
    re = np.array(draw(st.lists(st.integers(-100, 100), min_size=n, max_size=n)), dtype=float)
    a = re.reshape(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * a[::-1] if a.ndim else a + 1j
    return a.astype(dtype)


leaves = st.one_of(
    finite,
    st.integers(-1000, 1000),
    st.complex_numbers(max_magnitude=1e6, allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
    arrays(),
    finite.map(np.float32),
)

structures = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
        st.tuples(inner, inner).map(lambda t: Pair(*t)),
        inner.map(Box),
        st.lists(inner, max_size=3).map(lambda v: Tangent[tuple](*v)),
    ),
    max_leaves=8,
)


def _same(a, b):
    """Equal up to ints coming back as floats (they are perturbed as reals)."""
    if isinstance(a, (Tangent, list, tuple, dict, Box)) or type(a) is Pair:
        test_approx(b, a, rtol=0.0, atol=0.0)
        return
    if isinstance(a, np.ndarray):
        assert b.shape == a.shape
        expected = a.dtype if a.dtype.kind != "i" else np.float64
        assert b.dtype == expected and np.array_equal(a.astype(expected), b)
        return
    assert a == b


@settings(max_examples=150, deadline=None)
@given(structures)
@example(np.complex128(1j))  # a subclass of Python's complex: rebuilt as numpy's
@example(1j)
def test_round_trip(x):
    v, back = to_vec(x)
    assert v.dtype == np.float64 and v.ndim == 1
    y = back(v)
    _same(x, y)
    assert type(y) is type(x) or (isinstance(x, (int, np.integer)) and isinstance(y, float))
    np.testing.assert_array_equal(to_vec(y)[0], v)


@settings(max_examples=80, deadline=None)
@given(structures)
def test_rand_tangent_has_the_shape_of_to_vec(x):
    t = rand_tangent(x)
    from rulestest._to_vec import layout

    node = layout(x)
    assert node.tangent_to_vec(t).shape == (node.size,)


def test_to_vec_layout():
    v, back = to_vec({"z": 1 + 2j, "a": np.array([[1.0, 2.0]]), "n": None})
    np.testing.assert_array_equal(v, [1.0, 2.0, 1.0, 2.0])
    out = back(v * 2)
    assert out["z"] == 2 + 4j and out["n"] is None


RAND_CASES = [
    ("float", 1.5, float),
    ("int", 3, float),
    ("complex", 1j, complex),
    ("float32 array", np.zeros(2, np.float32), np.ndarray),
    ("bool", True, NoTangent),
    ("string", "s", NoTangent),
    ("dataclass", Box(1.0), Tangent),
    ("namedtuple", Pair(1.0, "x"), Tangent),
    ("dict", {"a": 1.0}, dict),
    ("all bools", (True, False), NoTangent),
]


@pytest.mark.parametrize(("x", "kind"), [c[1:] for c in RAND_CASES], ids=[c[0] for c in RAND_CASES])
def test_rand_tangent_types(x, kind):
    assert isinstance(rand_tangent(x), kind)


def test_rand_tangent_is_reproducible_and_keeps_dtype():
    x = np.zeros((2, 2), np.complex64)
    assert rand_tangent(x).dtype == np.complex64
    np.testing.assert_array_equal(rand_tangent(x), rand_tangent(x))
    g = np.random.default_rng(1)
    assert rand_tangent(1.0, g) != rand_tangent(1.0, g)


APPROX_OK = [
    ("zero and zeros", ZeroTangent(), np.zeros(3)),
    ("thunk", Thunk(lambda: 1.0), 1.0 + 1e-12),
    ("tangent tuple and tuple", Tangent[tuple](1.0, ZeroTangent()), (1.0, 0.0)),
    ("missing field reads zero", Tangent[Box](value=0.0), Tangent[Box]()),
    ("no tangent and zero tangent", NoTangent(), ZeroTangent()),
    ("strings", "a", "a"),
]


@pytest.mark.parametrize(("a", "b"), [c[1:] for c in APPROX_OK], ids=[c[0] for c in APPROX_OK])
def test_approx_accepts(a, b):
    test_approx(a, b)


APPROX_BAD = [
    ("value", 1.0, 1.1, r"value: values differ"),
    ("shape", np.zeros(2), np.zeros(3), r"shapes differ"),
    ("nested path", {"a": (1.0, 2.0)}, {"a": (1.0, 3.0)}, r"value\['a'\]\[1\]"),
    ("field path", Tangent[Box](value=1.0), Tangent[Box](value=2.0), r"value\.value"),
    ("zero vs nonzero", ZeroTangent(), 2.0, r"expected 2\.0"),
    ("structure", (1.0,), 1.0, r"structures differ"),
    ("nan", np.array([np.nan]), np.array([1.0]), r"values differ"),
]


@pytest.mark.parametrize(("a", "b", "match"), [c[1:] for c in APPROX_BAD],
                         ids=[c[0] for c in APPROX_BAD])  # fmt: skip
def test_approx_rejects(a, b, match):
    with pytest.raises(RuleTestFailure, match=match):
        test_approx(a, b)
