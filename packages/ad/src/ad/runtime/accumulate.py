"""Adding cotangents: the accumulation the generated adjoint performs, and the
small constructors of structured cotangents it calls (tuples, keyword
arguments, closures' captured variables)."""

from __future__ import annotations

import types
from typing import Any

from ad.errors import CotangentShapeError
from rules.extension import getrefcount as _getrefcount  # sys.getrefcount where calibrated
from rulescore import (
    AbstractThunk,
    AbstractZero,
    InplaceableThunk,
    NotImplementedTangent,
    Tangent,
    ZeroTangent,
)

_Z = ZeroTangent()
_LIST_TANGENT = Tangent[list]  # type: ignore[type-arg]
_float = float
_InplaceableThunk = InplaceableThunk
_NotImplementedTangent = NotImplementedTangent
try:
    import numpy as _numpy

    _ndarray: Any = _numpy.ndarray
    _float64: Any = _numpy.float64
except ImportError:  # pragma: no cover - ad depends on numpy
    _ndarray = _float64 = None

__all__ = ["acc", "field_ct", "fn_tangent", "kw_ct", "tuple_ct"]


def acc(a: Any, b: Any) -> Any:
    """``a + b`` for cotangents: zeros are free, containers add entry by entry.

    Never mutates an array someone else can see: a pullback may hand the same
    object to two inputs. An array is updated in place only when the caller's
    variable holds the only reference to it (CPython's reference count, the
    test numpy itself uses to reuse temporaries) and it owns its memory; an
    ``InplaceableThunk`` is then added without materialising it. Thunks added
    to a zero stay lazy.

    A ``NotImplementedTangent`` (a rule's missing derivative) absorbs what is added
    to it rather than raising here: the sum is as missing as its part, and still
    raises with the rule's reason wherever it is used (any arithmetic on it, a
    gradient handed to the caller). A cotangent nobody asks for (that of a
    constant inside an argument tuple, at second order) then costs nothing.
    """
    if type(a) is float and type(b) is float:  # scalar code: the common case
        return a + b
    if type(a) is _float64 and type(b) is _float64:  # numpy scalar code (v.sum(), v[i])
        return a + b
    if isinstance(b, AbstractZero):
        return a
    if isinstance(a, AbstractZero):
        return b
    ta = type(a)
    if ta is _NotImplementedTangent:
        return a
    if type(b) is _NotImplementedTangent:
        return b
    if ta is _ndarray:
        # refs: the caller's variable, this parameter, getrefcount's argument
        if _getrefcount(a) <= 3 and a.base is None and a.flags.writeable:
            return _add_into(a, b)
        if isinstance(b, AbstractThunk):
            b = b.unthunk()
        return a + b
    if ta is list and type(b) is _InplaceableThunk and _getrefcount(a) <= 3:
        # a list's cotangent the caller alone holds (an item write's pullback handed
        # it back) plus one entry's: written into that entry
        return b.add_fn(_LIST_TANGENT._from_backing(a))
    if ta is dict and _getrefcount(a) <= 3:
        # a dict's cotangent the caller alone holds, plus a dict's: added into it
        if isinstance(b, AbstractThunk):
            b = b.unthunk()
        bb = b._backing if isinstance(b, Tangent) else b
        if type(bb) is dict:
            for k, v in bb.items():
                a[k] = acc(a[k], v) if k in a else v
            return a
    if isinstance(a, Tangent) and ta._kind != "positional":
        # a dict's or an object's, read entry by entry or field by field
        if isinstance(b, AbstractThunk):
            b = b.unthunk()
        if type(b) is ta:
            return _add_mappings(a, b)
    if isinstance(a, Tangent) and ta._kind == "positional":
        if type(b) is _InplaceableThunk:
            return _add_into_entries(a, b)  # a list's, read entry by entry
        if type(b) is ta and type(b._backing) is list:
            return _add_entries(a, b)  # a short tuple's or list's, read entry by entry
    if isinstance(a, AbstractThunk):
        # A thunk only the caller's variable holds (as for an array above) caches
        # its value and dies with that variable: when the value is held by the
        # thunk and this frame alone, it is ours to update.
        mine = _getrefcount(a) <= 3 and (
            type(a) is not _InplaceableThunk or _getrefcount(a.thunk) <= 2
        )
        a = a.unthunk()
        ta = type(a)
        if type(b) is _InplaceableThunk and isinstance(a, Tangent) and ta._kind == "positional":
            return _add_into_entries(a, b)  # the first two entries read of a sequence
        if (
            mine
            and ta is _ndarray
            and _getrefcount(a) <= 3
            and a.base is None
            and a.flags.writeable
        ):
            return _add_into(a, b)
    if isinstance(b, AbstractThunk):
        b = b.unthunk()
    if ta is list or ta is tuple:
        if type(b) is not ta:
            if isinstance(b, Tangent):
                return b + a
            raise CotangentShapeError(
                f"cannot add cotangents of types {ta.__name__} and {type(b).__name__}"
            )
        if len(a) != len(b):
            raise CotangentShapeError(
                f"cannot add {ta.__name__} cotangents of lengths {len(a)} and {len(b)}"
            )
        return ta(acc(x, y) for x, y in zip(a, b))
    if ta is dict or isinstance(b, dict):
        if isinstance(a, Tangent):
            a = a._backing
        if isinstance(b, Tangent):
            b = b._backing
        out = dict(a)
        for k, v in b.items():
            out[k] = acc(out[k], v) if k in out else v
        return out
    if isinstance(a, Tangent) and isinstance(b, Tangent) and ta is not type(b):
        ab, bb = a._backing, b._backing
        if ta._kind == "positional" == type(b)._kind and len(ab) == len(bb):
            # a list's and a tuple's of one length (a pushforward built one from the
            # other's entries, at second order): the same entries, added by position
            return ta._from_backing(tuple(acc(x, y) for x, y in zip(ab, bb)))
    return a + b


def _add_mappings(a: Any, b: Any) -> Any:
    """Two dict (or object field) tangents of one type added key by key: into ``a``'s
    entries when the caller's variable alone holds ``a`` and ``a`` alone its
    entries (as for arrays above), so that reading many entries of a dict costs
    each read, not the dict's size."""
    ab = a._backing
    # refs to a: the caller's variable, acc's and this parameter, getrefcount's
    # argument; to its entries: a's slot, ``ab`` and getrefcount's argument
    mine = _getrefcount(a) <= 4 and _getrefcount(ab) <= 3
    out = ab if mine else dict(ab)
    for k, v in b._backing.items():
        out[k] = acc(out[k], v) if k in out else v
    return a if mine else type(a)._from_backing(out)


def _add_entries(a: Any, b: Any) -> Any:
    """Two sequence tangents of one type added entry by entry, ``b`` list-backed
    (``item_reads.item_cotangent``'s for a short sequence, mostly zeros): into
    ``a``'s entries when the caller's variable alone holds ``a`` and ``a`` alone
    its list of entries (as ``_add_mappings``); otherwise into a copy."""
    ab = a._backing
    bb = b._backing
    if len(ab) != len(bb):
        return a + b  # the tangent's own error
    if not (type(ab) is list and _getrefcount(a) <= 4 and _getrefcount(ab) <= 3):
        ab = list(ab)
        a = type(a)._from_backing(ab)
    for i, e in enumerate(bb):
        if not isinstance(e, AbstractZero):
            ab[i] = acc(ab[i], e)
    return a


def _add_into_entries(a: Any, b: Any) -> Any:
    """A sequence tangent ``a`` plus an ``InplaceableThunk`` ``b`` (one entry's
    cotangent, ``rules.entry_cotangent``): written into ``a``'s entries when the
    caller's variable alone holds ``a`` and ``a`` alone its list of entries (as
    for arrays above); otherwise into a copy, which the caller then owns."""
    # refs to a: the caller's variable, acc's and this parameter, getrefcount's
    # argument; to its entries: a's slot, ``ab`` and getrefcount's argument
    ab = a._backing
    if not (type(ab) is list and _getrefcount(a) <= 4 and _getrefcount(ab) <= 3):
        a = type(a)._from_backing(list(ab))
    return b.add_fn(a)


def _add_into(a: Any, b: Any) -> Any:
    """``a + b`` for an array ``a`` the caller has proved it alone holds: written into
    ``a`` when ``b`` has its shape and dtype (or adds itself in place)."""
    if type(b) is _InplaceableThunk:
        return b.add_fn(a)
    if isinstance(b, AbstractThunk):
        b = b.unthunk()
    if type(b) is _ndarray and b.shape == a.shape and b.dtype == a.dtype:
        a += b
        return a
    return a + b


def tuple_ct(*cts: Any) -> Any:
    """The cotangent of a tuple built from its entries' cotangents."""
    return cts


def kw_ct(kw: Any, name: str) -> Any:
    """The cotangent of one keyword argument from a dict (or dict tangent) of them."""
    if isinstance(kw, Tangent):
        kw = kw._backing
    if isinstance(kw, dict):
        return kw.get(name, _Z)
    return _Z


def field_ct(t: Any, name: str) -> Any:
    """The cotangent of a captured variable from a function's tangent."""
    if isinstance(t, AbstractZero):
        return t
    if isinstance(t, Tangent):
        return t._backing.get(name, _Z) if isinstance(t._backing, dict) else _Z
    if isinstance(t, dict):
        return t.get(name, _Z)
    return _Z


def fn_tangent(names: tuple, cts: tuple) -> Any:
    """The tangent of a closure: its captured variables' cotangents."""
    fields = {n: c for n, c in zip(names, cts) if not isinstance(c, AbstractZero)}
    if not fields:
        return _Z
    return Tangent[types.FunctionType]._from_backing(fields)
