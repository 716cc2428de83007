"""Delayed tangents: ``Thunk``, ``InplaceableThunk``, ``unthunk`` and ``add_``.

A rule wraps a costly cotangent in a thunk so that it is computed only if
someone uses it (the AD never unthunks a cotangent for an argument the caller
did not ask about). Arithmetic on a thunk unthunks it first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ._zeros import AbstractZero

__all__ = ["AbstractThunk", "InplaceableThunk", "Thunk", "add_", "thunk", "unthunk"]

_UNSET = object()


class AbstractThunk:
    """Base of the delayed tangents; ``unthunk`` evaluates one."""

    __slots__ = ()
    __array_ufunc__ = None  # make numpy defer to our reflected operators

    def unthunk(self) -> Any:
        raise NotImplementedError

    def __add__(self, other: Any) -> Any:
        return self.unthunk() + unthunk(other)

    def __radd__(self, other: Any) -> Any:
        return unthunk(other) + self.unthunk()

    def __sub__(self, other: Any) -> Any:
        return self.unthunk() - unthunk(other)

    def __rsub__(self, other: Any) -> Any:
        return unthunk(other) - self.unthunk()

    def __mul__(self, other: Any) -> Any:
        return self.unthunk() * unthunk(other)

    def __rmul__(self, other: Any) -> Any:
        return unthunk(other) * self.unthunk()

    def __matmul__(self, other: Any) -> Any:
        return self.unthunk() @ unthunk(other)

    def __rmatmul__(self, other: Any) -> Any:
        return unthunk(other) @ self.unthunk()

    def __truediv__(self, other: Any) -> Any:
        return self.unthunk() / unthunk(other)

    def __rtruediv__(self, other: Any) -> Any:
        return unthunk(other) / self.unthunk()

    def __neg__(self) -> Any:
        return -self.unthunk()

    def __getitem__(self, key: Any) -> Any:
        return self.unthunk()[key]

    def __eq__(self, other: object) -> Any:
        return self.unthunk() == unthunk(other)

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(self.unthunk(), dtype=dtype)

    def conj(self) -> Any:
        return _conj(self.unthunk())

    conjugate = conj

    @property
    def real(self) -> Any:
        return self.unthunk().real

    @property
    def imag(self) -> Any:
        return self.unthunk().imag

    @property
    def T(self) -> Any:
        return self.unthunk().T


def _conj(x: Any) -> Any:
    f = getattr(x, "conjugate", None)
    return x if f is None else f()


class Thunk(AbstractThunk):
    """A tangent computed on demand by calling ``fn()`` (once; the value is kept).

    >>> t = Thunk(lambda: 2.0 * 3.0)
    >>> unthunk(t)
    6.0
    >>> t + 1.0
    7.0
    """

    __slots__ = ("_fn", "_value")

    def __init__(self, fn: Callable[[], Any]) -> None:
        if not callable(fn):
            raise TypeError(f"Thunk needs a function of no arguments, got {fn!r}")
        self._fn: Any = fn  # None once evaluated
        self._value = _UNSET

    def unthunk(self) -> Any:
        value = self._value
        if value is _UNSET:
            value = unthunk(self._fn())
            self._value = value
            self._fn = None  # drop what the closure kept alive
        return value

    def __repr__(self) -> str:
        if self._value is _UNSET:
            return f"Thunk({self._fn!r})"
        return f"Thunk(= {self._value!r})"


def thunk(fn: Callable[[], Any]) -> Thunk:
    """Decorator form of :class:`Thunk`: ``@thunk`` over a zero-argument ``def``.

    >>> @thunk
    ... def dx():
    ...     return 4.0
    >>> unthunk(dx)
    4.0
    """
    return Thunk(fn)


class InplaceableThunk(AbstractThunk):
    """A thunk that can also be added into an accumulator in place.

    ``add_fn(acc)`` must add the tangent into ``acc`` (mutating it) and return
    it; ``thunk`` computes the tangent on its own. :func:`add_` chooses.

    >>> import numpy as np
    >>> acc = np.zeros(2)
    >>> t = InplaceableThunk(lambda a: a.__iadd__(1.0), Thunk(lambda: np.ones(2)))
    >>> add_(acc, t) is acc, acc
    (True, array([1., 1.]))
    """

    __slots__ = ("add_fn", "thunk")

    def __init__(self, add_fn: Callable[[Any], Any], thunk: Any) -> None:
        if not callable(add_fn):
            raise TypeError(f"InplaceableThunk needs a callable add_fn, got {add_fn!r}")
        self.add_fn = add_fn
        self.thunk = thunk

    def unthunk(self) -> Any:
        return unthunk(self.thunk)

    def __repr__(self) -> str:
        return f"InplaceableThunk({self.add_fn!r}, {self.thunk!r})"


def unthunk(x: Any) -> Any:
    """Evaluate a thunk; any other value is returned unchanged.

    >>> unthunk(3.0), unthunk(Thunk(lambda: 3.0))
    (3.0, 3.0)
    """
    if isinstance(x, AbstractThunk):
        return x.unthunk()
    return x


def _is_writable_array(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and type(x) is np.ndarray and x.flags.writeable and x.ndim > 0


def add_(x: Any, y: Any) -> Any:
    """Accumulate ``y`` into ``x``: ChainRules' ``add!!``, maybe in place.

    Returns ``x + y``. When ``x`` is a writable numpy array the result may be
    ``x`` itself, updated in place, so call it only on an accumulator you own.
    Zeros cost nothing and an :class:`InplaceableThunk` is added without
    materialising its tangent.

    >>> add_(1.0, 2.0)
    3.0
    >>> from rulescore import ZeroTangent
    >>> add_(ZeroTangent(), Thunk(lambda: 5.0))
    5.0
    """
    if isinstance(y, AbstractZero):
        return x
    if isinstance(x, AbstractZero):
        return unthunk(y)
    if _is_writable_array(x):
        if isinstance(y, InplaceableThunk):
            return y.add_fn(x)
        y = unthunk(y)
        np = sys.modules["numpy"]
        if np.shape(y) == x.shape and np.result_type(x, y) == x.dtype:
            x += y
            return x
        return x + y
    return unthunk(x) + unthunk(y)
