"""Reads of list and dict items on a lean tape (first-order reverse mode).

``t = xs[i]`` and ``t = d[k]`` are the commonest operations of scalar code and of
parameters kept in a dict. Generated code calls ``read_item(obj, key)``: for a
plain list read at an int, a float entry, and for a plain dict, neither
followed by identity (``ad._state``), it returns the value and a tuple for the
tape, ``(n, k)`` or ``(None, key, value)``; the adjoint turns that tuple and the
value's cotangent into the container's cotangent (``item_cotangent``), exactly
what ``rules``' getitem pullbacks return, without a closure or a rule dispatch.
Anything else goes through ``rcall(operator.getitem, ...)``, whose pullback the
adjoint calls as for any call.

>>> import ad
>>> def f(xs, d):
...     return xs[0] * xs[1] + d["w"] * xs[0]
>>> ad.gradient(f, [2.0, 3.0], {"w": 4.0})
([7.0, 2.0], {'w': 2.0})
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from rules._sequences import entry_cotangent
from rulescore import AbstractZero, ProjectTo, Tangent, ZeroTangent, unthunk

from ._fast import RCALL
from ._state import tracked

__all__ = ["item_cotangent", "read_item"]

_getitem = operator.getitem
_DICT_TANGENT = Tangent[dict]  # type: ignore[type-arg]
_TO_REAL = ProjectTo(0.0)
_Z = ZeroTangent()
_ndarray = np.ndarray


def read_item(obj: Any, key: Any) -> tuple[Any, Any]:
    """``obj[key]`` and its tape entry: a tuple (see the module), or a pullback."""
    t = type(obj)
    if t is list:
        if type(key) is int and tracked(obj) is None:
            v = obj[key]
            if type(v) is float:
                n = len(obj)
                return v, (n, key + n if key < 0 else key)
    elif t is dict and tracked(obj) is None:
        v = obj[key]
        tv = type(v)
        if tv is float or tv is _ndarray:
            return v, (None, key, v)
    return RCALL[0](_getitem, obj, key)


def item_cotangent(tape: tuple, ȳ: Any) -> Any:
    """The container's cotangent for the read ``tape`` records, given the value's."""
    if type(ȳ) is not float:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _Z
    n = tape[0]
    if n is not None:  # a list's float entry
        return entry_cotangent(n, tape[1], ȳ if type(ȳ) is float else _TO_REAL(ȳ))
    v = tape[2]
    if type(ȳ) is not type(v) or (
        type(v) is _ndarray and (ȳ.shape != v.shape or ȳ.dtype != v.dtype)
    ):
        ȳ = ProjectTo(v)(ȳ)
    return _DICT_TANGENT._from_backing({tape[1]: ȳ})


#: the names generated code calls them by (``transform.reverse``)
ITEM_HELPERS: dict[str, Callable] = {
    "_ad_read_item": read_item,
    "_ad_item_ct": item_cotangent,
}
