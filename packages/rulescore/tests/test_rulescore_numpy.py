"""rulescore with numpy arrays: zeros, thunks, add_ and projection (skipped without numpy)."""

import pytest

np = pytest.importorskip("numpy")

from rulescore import (  # noqa: E402
    CotangentError,
    InplaceableThunk,
    NoTangent,
    ProjectTo,
    Thunk,
    ZeroTangent,
    add_,
    unthunk,
)


@pytest.mark.parametrize("z", [ZeroTangent(), NoTangent()])
def test_numpy_does_not_broadcast_over_zeros(z):
    x = np.ones(3)
    assert (x + z) is x
    assert (z + x) is x
    assert (x * z) is z
    assert (z * x) is z
    assert (x @ z) is z
    np.testing.assert_array_equal(x - z, x)
    np.testing.assert_array_equal(z - x, -x)


def test_thunks_with_arrays():
    t = Thunk(lambda: np.arange(3.0))
    np.testing.assert_array_equal(np.ones(3) + t, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t * np.ones(3), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(t), [0.0, 1.0, 2.0])


def test_add_accumulates_in_place_into_owned_arrays():
    acc = np.zeros(3)
    out = add_(acc, np.ones(3))
    assert out is acc
    np.testing.assert_array_equal(acc, np.ones(3))
    # Broadcasting or dtype promotion cannot happen in place: a new array.
    small = np.zeros(1)
    out = add_(small, np.ones(3))
    assert out is not small and out.shape == (3,)
    ints = np.zeros(2, dtype=int)
    out = add_(ints, np.full(2, 0.5))
    assert out.dtype == np.float64
    # Read-only arrays are never written.
    ro = np.zeros(2)
    ro.flags.writeable = False
    assert add_(ro, np.ones(2)) is not ro


def test_inplaceable_thunk_adds_in_place():
    acc = np.zeros(2)

    def add_into(a):
        a += 2.0
        return a

    t = InplaceableThunk(add_into, Thunk(lambda: np.full(2, 2.0)))
    assert add_(acc, t) is acc
    np.testing.assert_array_equal(acc, [2.0, 2.0])
    np.testing.assert_array_equal(unthunk(t), [2.0, 2.0])


@pytest.mark.parametrize(
    "primal, dx, expected",
    [
        (np.zeros(2), np.array([1 + 2j, 3 - 1j]), np.array([1.0, 3.0])),
        (np.zeros(2, dtype=np.float32), np.array([1.0, 2.0]), np.array([1.0, 2.0], np.float32)),
        (np.zeros(2, dtype=int), np.array([1, 2]), np.array([1.0, 2.0])),
        (np.zeros(2, dtype=complex), np.array([1.0, 2.0]), np.array([1.0 + 0j, 2.0 + 0j])),
        (np.array(1.0), 2.0, np.array(2.0)),
    ],
)
def test_array_projection_keeps_dtype_and_shape(primal, dx, expected):
    out = ProjectTo(primal)(dx)
    assert isinstance(out, np.ndarray)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


def test_zero_d_array_stays_zero_d_and_scalars_stay_scalars():
    out = ProjectTo(np.array(1.0))(np.array(3.0))
    assert isinstance(out, np.ndarray) and out.shape == ()
    out = ProjectTo(np.float32(1.0))(np.array(3.0))
    assert type(out) is np.float32
    assert type(ProjectTo(1.0)(np.float64(2.0))) is float
    assert type(ProjectTo(1.0)(np.array(2.0))) is float
    assert ProjectTo(1.0)(np.complex128(1 + 1j)) == 1.0


def test_bool_arrays_get_no_tangent():
    assert ProjectTo(np.array([True, False]))(np.ones(2)) is NoTangent()
    assert ProjectTo(np.bool_(True))(1.0) is NoTangent()


def test_wrong_shape_is_an_error_not_a_broadcast():
    with pytest.raises(CotangentError, match=r"shape \(3,\).*shape \(2, 3\)"):
        ProjectTo(np.zeros((2, 3)))(np.ones(3))
    with pytest.raises(CotangentError, match="real number"):
        ProjectTo(1.0)(np.ones(3))


def test_projection_of_thunk_stays_lazy():
    calls = []

    def compute():
        calls.append(1)
        return np.array([1.0 + 1j])

    out = ProjectTo(np.zeros(1))(Thunk(compute))
    assert isinstance(out, Thunk) and calls == []
    np.testing.assert_array_equal(unthunk(out), [1.0])
    assert unthunk(out).dtype == np.float64


def test_tuple_with_arrays_projects_each():
    p = ProjectTo((np.zeros(2, dtype=np.float32), 1.0, "label"))
    a, b, c = p((np.ones(2), 2 + 1j, 5.0))
    assert a.dtype == np.float32 and b == 2.0 and c is NoTangent()
