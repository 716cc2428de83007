"""Tangent[P] for dataclasses, namedtuples, plain objects, tuples and dicts."""

from collections import namedtuple
from dataclasses import dataclass

import pytest

from rulescore import NoTangent, Tangent, Thunk, ZeroTangent, backing, canonicalize


@dataclass
class Point:
    x: float
    y: float


@dataclass(frozen=True)
class Frozen:
    a: float
    b: float = 0.0


Pair = namedtuple("Pair", "first second")


class Plain:
    def __init__(self, w, b):
        self.w = w
        self.b = b


class Slotted:
    __slots__ = ("u", "v")

    def __init__(self, u, v):
        self.u, self.v = u, v


def test_parametrised_class_is_cached_and_a_subclass():
    assert Tangent[Point] is Tangent[Point]
    t = Tangent[Point](x=1.0)
    assert isinstance(t, Tangent) and type(t).primal_type is Point


def test_missing_fields_read_as_zero():
    t = Tangent[Point](x=1.0)
    assert t.x == 1.0 and t.y is ZeroTangent()
    assert t["y"] is ZeroTangent()


@pytest.mark.parametrize(
    "P, kwargs, bad",
    [(Point, {"z": 1.0}, "z"), (Pair, {"third": 1.0}, "third"), (Slotted, {"w": 1.0}, "w")],
)
def test_unknown_field_is_an_error(P, kwargs, bad):
    with pytest.raises(AttributeError, match=f"has no field '{bad}'"):
        Tangent[P](**kwargs)


def test_unknown_field_access_is_an_error():
    with pytest.raises(AttributeError, match="no field 'z'"):
        Tangent[Point](x=1.0).z


def test_plain_objects_accept_any_attribute():
    t = Tangent[Plain](w=2.0)
    assert t.w == 2.0 and t.b is ZeroTangent()


def test_fields_take_keywords_only():
    with pytest.raises(TypeError, match="keywords"):
        Tangent[Point](1.0, 2.0)


def test_algebra():
    a = Tangent[Point](x=1.0)
    b = Tangent[Point](x=2.0, y=3.0)
    assert a + b == Tangent[Point](x=3.0, y=3.0)
    assert b - a == Tangent[Point](x=1.0, y=3.0)
    assert 2 * b == Tangent[Point](x=4.0, y=6.0) == b * 2
    assert -a == Tangent[Point](x=-1.0)
    assert b / 2 == Tangent[Point](x=1.0, y=1.5)
    assert a + ZeroTangent() is a and NoTangent() + a is a
    assert a * ZeroTangent() is ZeroTangent()


def test_equality_treats_missing_as_zero():
    assert Tangent[Point](x=1.0) == Tangent[Point](x=1.0, y=0.0)
    assert Tangent[Point](x=1.0) == Tangent[Point](x=1.0, y=ZeroTangent())
    assert Tangent[Point](x=1.0) != Tangent[Point](x=2.0)
    assert Tangent[Point]() == ZeroTangent()


def test_adding_different_tangent_types_is_an_error():
    with pytest.raises(TypeError, match="cannot add"):
        Tangent[Point](x=1.0) + Tangent[Pair](first=1.0)


def test_primal_plus_tangent_for_each_kind():
    assert Point(1.0, 2.0) + Tangent[Point](x=0.5) == Point(1.5, 2.0)
    assert Frozen(1.0) + Tangent[Frozen](b=2.0) == Frozen(1.0, 2.0)
    assert Pair(1.0, 2.0) + Tangent[Pair](second=1.0) == Pair(1.0, 3.0)
    moved = Plain(1.0, 2.0) + Tangent[Plain](w=1.0)
    assert (moved.w, moved.b) == (2.0, 2.0)
    s = Slotted(1.0, 1.0) + Tangent[Slotted](v=1.0)
    assert (s.u, s.v) == (1.0, 2.0)
    assert (1.0, 2.0) + Tangent[tuple](1.0, ZeroTangent()) == (2.0, 2.0)
    assert {"a": 1.0} + Tangent[dict]({"a": 1.0}) == {"a": 2.0}


def test_tuple_tangents_index_iterate_and_check_length():
    t = Tangent[tuple](1.0, ZeroTangent(), 3.0)
    assert t[0] == 1.0 and list(t) == [1.0, ZeroTangent(), 3.0] and len(t) == 3
    assert t + (1.0, 1.0, 1.0) == Tangent[tuple](2.0, 1.0, 4.0)
    with pytest.raises(ValueError, match="length"):
        Tangent[tuple](1.0) + Tangent[tuple](1.0, 2.0)
    with pytest.raises(ValueError, match="needs 2 entries"):
        Tangent[tuple[float, float]](1.0)


def test_dict_tangents():
    t = Tangent[dict]({"a": 1.0}, b=2.0)
    assert t["a"] == 1.0 and t["missing"] is ZeroTangent()
    assert t + Tangent[dict](a=1.0) == Tangent[dict](a=2.0, b=2.0)
    assert backing(t) == {"a": 1.0, "b": 2.0}
    assert sorted(t) == ["a", "b"]


def test_namedtuple_tangent_positional_access():
    t = Tangent[Pair](second=2.0)
    assert t[1] == 2.0 and t[0] is ZeroTangent()


def test_backing_and_canonicalize():
    t = Tangent[Point](y=2.0)
    assert backing(t) == {"y": 2.0}
    c = canonicalize(t)
    assert list(backing(c)) == ["x", "y"] and c.x is ZeroTangent()
    assert canonicalize(Tangent[Plain](w=1.0)) == Tangent[Plain](w=1.0)
    with pytest.raises(TypeError):
        backing(1.0)


def test_field_access_unthunks():
    t = Tangent[Point](x=Thunk(lambda: 4.0))
    assert t.x == 4.0
    assert (t + Tangent[Point](x=1.0)).x == 5.0


def test_repr():
    assert repr(Tangent[Point](x=1.0)) == "Tangent[Point](x=1.0)"
    assert repr(Tangent[tuple](1.0, 2.0)) == "Tangent[tuple](1.0, 2.0)"
    assert repr(Tangent[dict]({"a": 1})) == "Tangent[dict]({'a': 1})"


def test_bare_tangent_needs_a_type():
    with pytest.raises(TypeError, match=r"Tangent\[P\]"):
        Tangent(x=1.0)
    with pytest.raises(TypeError, match="needs a type"):
        Tangent[3]


def test_container_fields_add_entry_by_entry():
    t = Tangent[Plain](w=[1.0, 2.0], b={"k": 1.0}) + Tangent[Plain](
        w=[3.0, 4.0], b={"k": 1.0, "j": 2.0}
    )
    assert t.w == [4.0, 6.0] and t.b == {"k": 2.0, "j": 2.0}
    with pytest.raises(ValueError, match="lengths 1 and 2"):
        Tangent[Plain](w=[1.0]) + Tangent[Plain](w=[1.0, 2.0])


def test_backing_of_a_positional_tangent_is_a_tuple_whatever_holds_its_entries():
    # ad accumulates a list's cotangent entry by entry in a list of its own
    t = Tangent[list]._from_backing([1.0, 2.0])
    assert backing(t) == (1.0, 2.0) and type(backing(t)) is tuple
    assert list(t) == [1.0, 2.0] and t + Tangent[list](1.0, 1.0) == Tangent[list](2.0, 3.0)
