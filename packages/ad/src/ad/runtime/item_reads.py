"""Reads of list and dict items and of object fields on a lean tape (first-order
reverse mode).

``t = xs[i]``, ``t = d[k]`` and ``t = o.w`` are the commonest operations of scalar
code and of parameters kept in a dict, a dataclass or a model object. Generated
code calls ``read_item(obj, key)`` and ``read_attr(obj, name)``: for a float or
array entry of a plain list or tuple read at an int or of a plain dict, and for a
field in a user object's ``__dict__`` that no descriptor or ``__getattribute__``
stands in front of, none of them followed by identity (``ad.runtime.state``), they
return the value and a tuple for the tape, ``(n, k, list or tuple, value)``,
``(None, key, value)`` or ``(cls, name)``; the adjoint turns that tuple and the
value's cotangent into the container's or the object's cotangent
(``item_cotangent``), exactly what the getitem and getattr pullbacks return, without a closure or a rule dispatch. Anything else goes
through ``rcall``, whose pullback the adjoint calls as for any call.

>>> import ad
>>> def f(xs, d):
...     return xs[0] * xs[1] + d["w"] * xs[0]
>>> ad.gradient(f, [2.0, 3.0], {"w": 4.0})
([7.0, 2.0], {'w': 2.0})
>>> class P:
...     def __init__(self, w):
...         self.w = w
>>> ad.gradient(lambda p: p.w * p.w, P(3.0))
(Tangent[P](w=6.0),)
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime import calls
from ad.runtime.attribute_routes import read_route
from ad.runtime.rules_objects import getattr_
from ad.runtime.state import stateful, tracked
from rules.extension import entry_cotangent
from rulescore import AbstractZero, ProjectTo, Tangent, ZeroTangent, unthunk

__all__ = ["item_cotangent", "read_attr", "read_item"]

_getitem = operator.getitem
_DICT_TANGENT = Tangent[dict]  # type: ignore[type-arg]
_Z = ZeroTangent()
_ndarray = np.ndarray


def read_item(obj: Any, key: Any) -> tuple[Any, Any]:
    """``obj[key]`` and its tape entry: a tuple (see the module), or a pullback."""
    t = type(obj)
    if t is list or t is tuple:
        if type(key) is int and tracked(obj) is None:
            v = obj[key]
            tv = type(v)
            if tv is float or tv is _ndarray:
                n = len(obj)
                return v, (n, key + n if key < 0 else key, t, v)
    elif t is dict and tracked(obj) is None:
        v = obj[key]
        tv = type(v)
        if tv is float or tv is _ndarray:
            return v, (None, key, v)
    return calls.rcall(_getitem, obj, key)


def read_attr(obj: Any, name: str) -> tuple[Any, Any]:
    """``obj.name`` and its tape entry: a tuple (see the module), or a pullback."""
    d = getattr(obj, "__dict__", None)
    if (
        d is not None
        and name in d
        and stateful(obj)  # a user class's instance (not numpy's, a number's, a class)
        and read_route(obj, name) is None  # no property, descriptor or __getattribute__
        and tracked(obj) is None
    ):
        v = d[name]
        if getattr(v, "__self__", None) is not obj:  # not a method bound to obj itself
            return v, (type(obj), name)
    return calls.rcall(getattr_, obj, name)


def item_cotangent(tape: tuple, ȳ: Any) -> Any:
    """The container's or object's cotangent for the read ``tape`` records, given
    the value's."""
    if type(ȳ) is not float:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _Z
    head = tape[0]
    if type(head) is int:  # a list's or tuple's entry
        if head > SHORT:  # many entries: one written into the accumulator alone
            return entry_cotangent(head, tape[1], _fit(ȳ, tape[3]), tape[2])
        entries = [_Z] * head  # a few: the dense tangent, added entry by entry
        entries[tape[1]] = _fit(ȳ, tape[3])
        return Tangent[tape[2]]._from_backing(entries)  # type: ignore[misc]
    if head is not None:  # an object's field
        return Tangent[head]._from_backing({tape[1]: ȳ})  # type: ignore[misc]
    return _DICT_TANGENT._from_backing({tape[1]: _fit(ȳ, tape[2])})


#: A sequence of at most this many entries gets a dense cotangent per read: cheaper
#: than ``entry_cotangent``'s thunk, and no more than a few entries to add.
SHORT = 8


def _fit(ȳ: Any, v: Any) -> Any:
    """The cotangent ``ȳ`` of the float or array ``v``, projected onto ``v``'s
    type, shape and dtype where it is not of them already."""
    if type(ȳ) is not type(v) or (
        type(v) is _ndarray and (ȳ.shape != v.shape or ȳ.dtype != v.dtype)
    ):
        return ProjectTo(v)(ȳ)
    return ȳ


#: the names generated code calls them by (``transform.reverse``)
ITEM_HELPERS: dict[str, Callable] = {
    "_ad_read_item": read_item,
    "_ad_read_attr": read_attr,
    "_ad_item_ct": item_cotangent,
}
