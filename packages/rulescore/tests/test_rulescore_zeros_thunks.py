"""The zero tangents and thunks: algebra on both sides of numbers and arrays."""

import copy
import pickle

import pytest

from rulescore import (
    InplaceableThunk,
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    add_,
    iszero,
    thunk,
    unthunk,
)

ZEROS = [ZeroTangent(), NoTangent()]


@pytest.mark.parametrize("z", ZEROS)
@pytest.mark.parametrize("x", [2.0, 3, 1 + 2j, Tangent[tuple](1.0, 2.0)])
def test_zero_is_additive_identity_on_both_sides(z, x):
    assert (z + x) is x or z + x == x
    assert (x + z) is x or x + z == x
    assert x - z == x
    assert z - x == -x


@pytest.mark.parametrize("z", ZEROS)
def test_zero_annihilates(z):
    assert z * 3.0 is z
    assert 3.0 * z is z
    assert z / 2.0 is z
    assert -z is z
    assert z.conj() is z and z.T is z and z.real is z and z[0] is z


def test_singletons_survive_copy_and_pickle():
    for z in ZEROS:
        assert type(z)() is z
        assert copy.copy(z) is z and copy.deepcopy(z) is z
        assert pickle.loads(pickle.dumps(z)) is z
    assert ZeroTangent() is not NoTangent()
    assert ZeroTangent() != NoTangent()
    assert iszero(ZeroTangent()) and iszero(NoTangent()) and not iszero(0.0)
    assert not ZeroTangent()
    assert float(ZeroTangent()) == 0.0


def test_division_by_zero_tangent_is_an_error():
    with pytest.raises(ZeroDivisionError, match="zero tangent"):
        1.0 / ZeroTangent()


def test_thunk_is_lazy_and_evaluated_once():
    calls = []

    def compute():
        calls.append(1)
        return 5.0

    t = Thunk(compute)
    assert calls == []
    assert unthunk(t) == 5.0 and unthunk(t) == 5.0
    assert calls == [1]
    assert t + 1.0 == 6.0 and 1.0 + t == 6.0 and 2.0 * t == 10.0 and -t == -5.0


def test_thunk_decorator_and_nested_thunks():
    @thunk
    def t():
        return Thunk(lambda: 2.0)

    assert unthunk(t) == 2.0
    assert unthunk(3) == 3


def test_thunk_needs_a_function():
    with pytest.raises(TypeError, match="function of no arguments"):
        Thunk(3.0)


def test_add_on_scalars_zeros_and_thunks():
    assert add_(1.0, 2.0) == 3.0
    assert add_(ZeroTangent(), 2.0) == 2.0
    assert add_(2.0, NoTangent()) == 2.0
    assert add_(1.0, Thunk(lambda: 2.0)) == 3.0
    assert add_(ZeroTangent(), Thunk(lambda: 2.0)) == 2.0


def test_inplaceable_thunk_without_array_uses_thunk():
    t = InplaceableThunk(lambda acc: pytest.fail("not an array"), Thunk(lambda: 4.0))
    assert add_(1.0, t) == 5.0
    assert unthunk(t) == 4.0
