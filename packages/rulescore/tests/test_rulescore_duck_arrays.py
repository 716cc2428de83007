"""``DuckArray``: arrays of other libraries that follow numpy's protocols, and their
projection (kept in their library, never converted to numpy)."""

from __future__ import annotations

from typing import Any

import pytest

from rulescore import DuckArray, NoTangent, ProjectTo, is_duck_array
from rulescore.errors import CotangentError

np = pytest.importorskip("numpy")


class Wrapped:
    """A minimal array of 'another library': numpy's protocols over a numpy array,
    every result wrapped again. Converting it to numpy is refused, as a lazy
    library's would compute."""

    def __init__(self, a: Any) -> None:
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)
    dtype = property(lambda self: self.a.dtype)
    real = property(lambda self: Wrapped(self.a.real))

    def astype(self, dtype: Any) -> Wrapped:
        return Wrapped(self.a.astype(dtype))

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("converted to numpy")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raw = [i.a if isinstance(i, Wrapped) else i for i in inputs]
        return Wrapped(getattr(ufunc, method)(*raw, **kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        unwrap = lambda v: v.a if isinstance(v, Wrapped) else v  # noqa: E731
        out = func(*map(unwrap, args), **{k: unwrap(v) for k, v in kwargs.items()})
        return Wrapped(out) if isinstance(out, np.ndarray) else out


class OptedOut:
    shape, dtype = (2,), np.dtype(float)
    __array_ufunc__ = None

    def __array_function__(self, *args: Any) -> Any: ...


def test_recognised_by_protocol() -> None:
    assert isinstance(Wrapped([1.0]), DuckArray) and is_duck_array(Wrapped([1.0]))
    assert issubclass(np.ndarray, DuckArray) and not is_duck_array(np.ones(2))
    assert not isinstance(OptedOut(), DuckArray)
    for x in (1.0, [1.0], (1.0,), np.float64(1.0), "a", None):
        assert not isinstance(x, DuckArray) and not is_duck_array(x)
    assert issubclass(DuckArray, DuckArray)  # rule dispatch orders signatures by this


def test_projection_keeps_the_library_shape_and_dtype() -> None:
    x = Wrapped(np.ones(3, np.float32))
    p = ProjectTo(x)
    d = p(Wrapped(np.array([1.0, 2.0, 3.0])))
    assert type(d) is Wrapped and d.dtype == np.float32
    d = p(Wrapped(np.array([1.0 + 2j, 2.0, 3.0])))  # a real primal: the real part
    assert type(d) is Wrapped and d.dtype == np.float32 and d.a[0] == 1.0
    with pytest.raises(CotangentError, match=r"shape \(3,\)"):
        p(Wrapped(np.ones(4)))
    with pytest.raises(CotangentError):
        p((1.0, 2.0, 3.0))


def test_integer_and_bool_primals() -> None:
    assert ProjectTo(Wrapped(np.arange(3)))(Wrapped(np.ones(3))).dtype == np.float64
    assert ProjectTo(Wrapped(np.array([True])))(Wrapped(np.ones(1))) == NoTangent()


def test_scalar_primals_keep_a_zero_dimensional_cotangent_uncomputed() -> None:
    d = Wrapped(np.array(2.5))
    assert ProjectTo(1.0)(d) is d  # float(d) would compute a lazy array
    assert type(ProjectTo(1.0 + 0j)(d)) is Wrapped
    assert type(ProjectTo(1.0)(Wrapped(np.array(1.0 + 2j)))) is Wrapped


def test_numpy_primal_with_a_cotangent_of_another_library() -> None:
    d = ProjectTo(np.ones(3, np.float32))(Wrapped(np.arange(3.0)))
    assert type(d) is Wrapped and d.dtype == np.float32
    with pytest.raises(CotangentError):
        ProjectTo(np.ones(3))(Wrapped(np.ones(2)))
