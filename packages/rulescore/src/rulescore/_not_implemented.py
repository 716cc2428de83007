"""``not_implemented(reason)`` and the ``NotImplementedTangent`` it returns.

A tangent type of its own module, below both ``_projection`` (which lets one
pass through a projection) and ``_rule_tools`` (which re-exports it), so that
neither of the two has to import the other.
"""

from __future__ import annotations

import sys
from typing import Any

from ._zeros import AbstractZero
from .errors import NotImplementedTangentError

__all__ = ["NotImplementedTangent", "not_implemented"]


class NotImplementedTangent:
    """A tangent that is not implemented; any arithmetic on it raises.

    Returned by :func:`not_implemented`. Adding a zero keeps it, so it only
    fails if the missing derivative is actually needed.
    """

    __slots__ = ("reason", "where")
    __array_ufunc__ = None

    def __init__(self, reason: str, where: str = "") -> None:
        self.reason = reason
        self.where = where

    def _fail(self, *args: Any) -> Any:
        where = f" (at {self.where})" if self.where else ""
        raise NotImplementedTangentError(f"tangent not implemented{where}: {self.reason}")

    def __add__(self, other: Any) -> Any:
        return self if isinstance(other, AbstractZero) else self._fail()

    __radd__ = __add__
    __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = _fail
    __array__ = __float__ = __complex__ = conj = conjugate = _fail

    def __repr__(self) -> str:
        return f"NotImplementedTangent({self.reason!r})"


def not_implemented(reason: str) -> NotImplementedTangent:
    """A placeholder tangent for a derivative a rule does not provide.

    >>> t = not_implemented("derivative w.r.t. the order")
    >>> t + 1.0
    Traceback (most recent call last):
    ...
    rulescore.errors.NotImplementedTangentError: tangent not implemented (at ...): derivative w.r.t. the order
    """
    frame = sys._getframe(1)
    return NotImplementedTangent(reason, f"{frame.f_code.co_filename}:{frame.f_lineno}")
