"""ProjectTo on Python values (no numpy needed; array cases are in test_rulescore_numpy)."""

from collections import namedtuple
from dataclasses import dataclass

import pytest

from rulescore import CotangentError, NoTangent, ProjectTo, Tangent, Thunk, ZeroTangent, unthunk


@dataclass
class Point:
    x: float
    y: float


Pair = namedtuple("Pair", "first second")


@pytest.mark.parametrize(
    "primal, dx, expected",
    [
        (1.0, 2.0, 2.0),
        (1.0, 2, 2.0),
        (1.0, 2.0 + 3.0j, 2.0),
        (5, 32, 32.0),
        (5, 1.5, 1.5),
        (1j, 2.0, 2 + 0j),
        (1j, 2 + 1j, 2 + 1j),
    ],
)
def test_numbers(primal, dx, expected):
    out = ProjectTo(primal)(dx)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize("primal", [True, "s", None, len, range(3), str, slice(1, 2)])
def test_non_differentiable_primals_get_no_tangent(primal):
    assert ProjectTo(primal)(1.0) is NoTangent()


@pytest.mark.parametrize("z", [ZeroTangent(), NoTangent()])
def test_zeros_pass_through(z):
    assert ProjectTo(1.0)(z) is z
    assert ProjectTo((1.0, 2.0))(z) is z


def test_wrong_types_are_errors():
    with pytest.raises(CotangentError, match="real number"):
        ProjectTo(1.0)((1.0, 2.0))
    with pytest.raises(CotangentError, match="real number"):
        ProjectTo(1.0)(True)
    with pytest.raises(CotangentError, match="2 entries"):
        ProjectTo((1.0, 2.0, 3.0))((1.0, 2.0))


def test_containers():
    assert ProjectTo((1.0, 2))((1j, 3)) == (0.0, 3.0)
    assert ProjectTo([1.0, "a"])([2.0, 1.0]) == [2.0, NoTangent()]
    assert ProjectTo({"a": 1.0, "b": True})({"a": 2 + 1j}) == {"a": 2.0}
    with pytest.raises(CotangentError, match="key 'c'"):
        ProjectTo({"a": 1.0})({"c": 1.0})
    assert ProjectTo(("a", True))((1.0, 1.0)) is NoTangent()
    t = ProjectTo((1.0, 2.0))(Tangent[tuple](1j, 2.0))
    assert t == Tangent[tuple](0.0, 2.0)


def test_dataclass_and_namedtuple():
    p = ProjectTo(Point(1.0, 2.0))
    assert p(Tangent[Point](x=1 + 1j)) == Tangent[Point](x=1.0)
    assert p(Point(3.0, 4.0)) == Tangent[Point](x=3.0, y=4.0)
    with pytest.raises(CotangentError):
        p(Tangent[Pair](first=1.0))
    q = ProjectTo(Pair(1.0, "s"))
    assert q((2.0, 5.0)) == Tangent[Pair](first=2.0, second=NoTangent())


def test_thunks_project_lazily():
    out = ProjectTo(1.0)(Thunk(lambda: 2 + 5j))
    assert isinstance(out, Thunk) and unthunk(out) == 2.0


def test_thunk_evaluating_to_a_zero_projects_to_that_zero():
    out = ProjectTo(1.0)(Thunk(lambda: ZeroTangent()))
    assert unthunk(out) is ZeroTangent()
