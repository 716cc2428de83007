"""Tangents of containers in forward mode: built from their entries' and taken apart.

The pushforward the transform generates builds a tuple's, list's or dict's
tangent from its entries' (``tan_tuple``, ``tan_list``, ``tan_dict``), and
takes one apart where the primal is unpacked, iterated or read by key
(``split``, ``fiter``, ``entries``, ``mapping_entry``). A zero tangent stays a
zero: ``ZeroTangent()`` (or ``NoTangent()``) for a container of zeros.

>>> from rulescore import ZeroTangent
>>> tan_tuple(1.0, ZeroTangent())
Tangent[tuple](1.0, ZeroTangent())
>>> tan_tuple(ZeroTangent(), ZeroTangent())
ZeroTangent()
>>> split(tan_list(1.0, 2.0), 2)
(1.0, 2.0)
"""

from __future__ import annotations

import itertools
from typing import Any

from ad.errors import CotangentShapeError
from ad.runtime.user_iterables import through_fiter, user_iterable
from rulescore import AbstractThunk, AbstractZero, NoTangent, Tangent, ZeroTangent

__all__ = [
    "entries",
    "fiter",
    "is_zero",
    "mapping_entry",
    "split",
    "tan_dict",
    "tan_list",
    "tan_tuple",
]

_Z = ZeroTangent()
_NO = NoTangent()
_ZEROS = frozenset([ZeroTangent, NoTangent])
_TupleT = Tangent[tuple]  # type: ignore[type-arg]
_ListT = Tangent[list]  # type: ignore[type-arg]
_DictT = Tangent[dict]  # type: ignore[type-arg]


def is_zero(ṫ: Any) -> bool:
    """Whether ``ṫ`` is a structural zero (``ZeroTangent()``, ``NoTangent()``...)."""
    return ṫ.__class__ in _ZEROS or isinstance(ṫ, AbstractZero)


def tan_tuple(*ts: Any) -> Any:
    """The tangent of a tuple display from its entries' tangents."""
    for ṫ in ts:
        if ṫ.__class__ not in _ZEROS:
            return _TupleT._from_backing(ts)
    return _Z


def tan_list(*ts: Any) -> Any:
    """The tangent of a list display from its entries' tangents."""
    for ṫ in ts:
        if ṫ.__class__ not in _ZEROS:
            return _ListT._from_backing(ts)
    return _Z


def tan_dict(keys: tuple, ts: tuple) -> Any:
    """The tangent of a dict display: a ``Tangent[dict]`` of the non-zero entries."""
    b = {k: ṫ for k, ṫ in zip(keys, ts) if not is_zero(ṫ)}
    return _DictT._from_backing(b) if b else _Z


def entries(ṫ: Any, n: int, primal: Any) -> list:
    """The tangents of the ``n`` items that iterating ``primal`` yields."""
    if isinstance(ṫ, AbstractThunk):
        ṫ = ṫ.unthunk()
    if is_zero(ṫ):
        return [_Z] * n
    if isinstance(primal, (dict, range, str)):
        return [_NO] * n  # iterating a dict yields its keys
    if isinstance(ṫ, Tangent) and type(ṫ)._kind == "fields":
        out = [ṫ[i] for i in range(n)]
    else:
        out = list(ṫ)
    if len(out) != n:
        raise CotangentShapeError(
            f"a tangent of a {type(primal).__name__} of {n} items has {len(out)} entries"
        )
    return out


def split(ṫ: Any, n: int) -> tuple:
    """The tangents of ``a, b, ... = t`` from ``t``'s tangent."""
    if isinstance(ṫ, AbstractThunk):
        ṫ = ṫ.unthunk()
    if ṫ.__class__ in _ZEROS:
        return (ṫ,) * n
    if isinstance(ṫ, Tangent):
        kind = type(ṫ)._kind
        if kind == "positional":
            out = tuple(ṫ)
        elif kind == "mapping":
            return (_NO,) * n  # unpacking a dict yields its keys
        else:
            out = tuple(ṫ[i] for i in range(n))
    else:
        out = tuple(ṫ)
    if len(out) != n:
        raise CotangentShapeError(f"cannot unpack a tangent of {len(out)} entries into {n}")
    return out


def mapping_entry(ṫ: Any, key: Any) -> Any:
    """The tangent of ``d[key]`` from ``d``'s tangent."""
    if isinstance(ṫ, AbstractThunk):
        ṫ = ṫ.unthunk()
    if is_zero(ṫ):
        return _Z
    if isinstance(ṫ, Tangent):
        return ṫ[key]
    return ṫ.get(key, _Z)


def fiter(it: Any, ṫ: Any) -> Any:
    """Pairs ``(element, its tangent)`` for a loop over an active iterable."""
    if isinstance(ṫ, AbstractThunk):
        ṫ = ṫ.unthunk()
    if is_zero(ṫ):
        return zip(it, itertools.repeat(_Z))
    if user_iterable(it):  # a user class's __iter__: iter(it) pushed forward
        it, ṫ = through_fiter(it, ṫ)
        if isinstance(ṫ, AbstractThunk):
            ṫ = ṫ.unthunk()
        if is_zero(ṫ):
            return zip(it, itertools.repeat(_Z))
    if isinstance(it, (dict, range, str)):
        return zip(it, itertools.repeat(_NO))
    if isinstance(ṫ, Tangent) and type(ṫ)._kind == "fields":
        ṫ = [ṫ[i] for i in range(len(it))]
    if hasattr(it, "__len__") and hasattr(ṫ, "__len__") and len(it) != len(ṫ):
        raise CotangentShapeError(
            f"a loop over a {type(it).__name__} of {len(it)} items has a tangent of "
            f"{len(ṫ)} entries"
        )
    return zip(it, ṫ)
