"""Reverse mode over forward mode's writes: object fields, and lists and dicts being built.

Forward mode keeps the tangent of a user object's written field by identity,
so that a read through another name (the caller of a method that wrote
``self``) finds it. Reverse over forward does the same in its own reverse pass
(``ad.runtime.state``): a field write pushed forward holds the field's tangent
for the object (``_through_setattr``), and ``follow`` and plain field reads
find it there (``_through_follow``, ``_through_field_read``); cotangents of
held tangents are deposited back by identity. ``lst.append(v)`` and
``obj[key] = v`` into a container being built are written once, their
tangents beside them (``_through_append``, ``_through_setitem``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ad.higher.cotangent_parts import _is_zero, _pair, _tangents_ct
from ad.runtime import forward as _forward
from ad.runtime import forward_rules as _forward_rules
from ad.runtime import rules_item_writes as _item_writes
from ad.runtime import rules_objects as _rules_objects
from ad.runtime import state as _state
from ad.runtime.accumulate import acc
from ad.runtime.cotangents import entries
from ad.runtime.reverse import rcall
from rulescore import NoTangent, Tangent, ZeroTangent, unthunk

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()


def _holds_tangents(f: Any, args: tuple) -> bool:
    """Whether the reverse pass holds field tangents (``_through_setattr``) of an
    argument or of the receiver of ``f``: a call with zero tangents along variables
    may still read them, or write over them, so it is pushed forward."""
    p = _state.current()
    if p is None or not p.held:
        return False
    held = p.held
    return id(getattr(f, "__self__", None)) in held or any(id(a) in held for a in args)


def _through_setattr(f: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """A plain field write ``obj.name = value`` pushed forward: the object's new
    tangent is its old one with the field replaced by the value's (linear). Where
    this pass follows the object by identity (a user object), the field's tangent
    is held by identity too, for reads through other names (``_through_follow``,
    ``_through_field_read``), as forward mode keeps it at first order."""
    obj, name, _ = args
    y, pb = rcall(f, *args)
    ẏ = _forward_rules._set_field(type(obj), ts[1], name, ts[3])
    field_pb = _rules_objects.field_pullback(name)
    p = _state.tracked(obj) if _state.stateful(obj) else None
    if p is not None:
        _state.hold_tangent(p, obj, name, ts[3])
    by_identity = type(pb) is _state.Stateful

    def setattr_pullback(ct: Any) -> tuple:
        ȳ, ṫ_ct = _pair(ct)
        cts = pb(ȳ) if by_identity or not _is_zero(ȳ) else (_NO, _Z, _NO, _Z)
        _, ȯ_ct, _, v̇_ct = field_pb(ṫ_ct)
        if p is not None:
            v̇_ct = acc(v̇_ct, _state.take_held(p, obj, name))
        return (_NO, _NO, _tangents_ct((_Z, ȯ_ct, _Z, v̇_ct)), cts[1], _NO, cts[3])

    return (y, ẏ), _state.keep_stateful(pb, setattr_pullback)


def _merged_held(obj: Any, ȯ: Any, held: dict) -> Any:
    """``obj``'s tangent ``ȯ`` with the field tangents held by identity over it."""
    ȯ = unthunk(ȯ)
    b = dict(ȯ._backing) if isinstance(ȯ, Tangent) else {}
    for name, v̇ in held.items():
        if _is_zero(v̇):
            b.pop(name, None)
        else:
            b[name] = v̇
    return Tangent[type(obj)]._from_backing(b) if b else _Z


def _through_follow(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``follow(obj)`` (the transform's mark after a call that may write ``obj``)
    pushed forward: the object followed by identity in this reverse pass, and its
    tangent with the field tangents held for it (written through any name)."""
    (obj,) = args
    y, pb = rcall(_state.follow, obj)
    ȯ = ts[1]
    p = _state.tracked(obj) if _state.stateful(obj) else None
    held = dict(_state.held_tangents(p, obj) or {}) if p is not None else {}
    ẏ = _merged_held(obj, ȯ, held) if held else ȯ
    by_identity = type(pb) is _state.Stateful

    def follow_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        cts = pb(ȳ) if by_identity or not _is_zero(ȳ) else (_NO, _Z)
        ẏ̄ = unthunk(ẏ̄)
        if held and isinstance(ẏ̄, Tangent):
            rest = {}
            for k, c in ẏ̄._backing.items():
                if k in held:
                    _state.deposit_held(p, obj, k, c)
                else:
                    rest[k] = c
            ẏ̄ = type(ẏ̄)._from_backing(rest) if rest else _Z
        return (_NO, _NO, _tangents_ct((_Z, ẏ̄)), cts[1])

    return (y, ẏ), _state.keep_stateful(pb, follow_pullback)


def _through_field_read(f: Any, p: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``obj.name`` of a user object this reverse pass follows by identity (written
    in it), pushed forward: the value read by identity, its tangent the one held
    for the field if a pushforward wrote it, else the field of ``obj``'s tangent."""
    obj, name = args
    y, pb = rcall(f, obj, name)
    held = (_state.held_tangents(p, obj) or {}).get(name)
    cls = type(obj)
    if held is not None:
        ẏ = held
    else:
        ȯ = unthunk(ts[1])
        ẏ = getattr(ȯ, name) if isinstance(ȯ, Tangent) else _Z

    def field_read_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        cts = pb(ȳ)
        ẏ̄ = unthunk(ẏ̄)
        ȯ_ct: Any = _Z
        if _is_zero(ẏ̄):
            pass
        elif held is not None:
            _state.deposit_held(p, obj, name, ẏ̄)
        else:
            ȯ_ct = Tangent[cls]._from_backing({name: ẏ̄})
        return (_NO, _NO, _tangents_ct((_Z, ȯ_ct, _Z)), cts[1], _NO)

    return (y, ẏ), field_read_pullback


def _field_read_pass(f: Any, args: tuple) -> Any:
    """The reverse pass following ``obj`` by identity, for a plain read of
    ``obj.name`` (``args``) that ``_through_field_read`` takes; else None."""
    if len(args) != 2 or not _state.stateful(args[0]):
        return None
    obj, name = args
    p = _state.tracked(obj)
    if p is None or type(obj) is super or type(name) is not str:
        return None
    try:
        value = obj.__dict__[name]
    except (AttributeError, KeyError, TypeError):
        slot = next((k.__dict__[name] for k in type(obj).__mro__ if name in k.__dict__), None)
        if type(slot) is not types.MemberDescriptorType:
            return None  # a class attribute, a method: the frule's cases
        try:
            value = slot.__get__(obj, type(obj))  # a field kept in __slots__
        except AttributeError:
            return None
    return p if not callable(value) else None


def _through_append(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``lst.append(value)`` (a list being built): append once, tangents beside it."""
    lst, value = args
    n = len(lst)
    es = _forward.entries(ts[1], n, lst)
    y, pb = rcall(_item_writes.append, lst, value)
    ẏ = _forward.tan_list(*es, ts[2])

    def append_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        cts = pb(ȳ) if not _is_zero(unthunk(ȳ)) else (_NO, _Z, _Z)
        tcts = entries(ẏ̄, n + 1, "a list's tangent")
        l̇_ct = _Z if all(_is_zero(c) for c in tcts[:n]) else Tangent[list]._from_backing(tcts[:n])
        return (_NO, _NO, _tangents_ct((_Z, l̇_ct, tcts[n])), cts[1], cts[2])

    return (y, ẏ), append_pullback


def _through_setitem(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``obj[key] = value`` into a list or dict being built: written once; the
    tangent is the old one with the entry replaced, the same linear map as the
    value's, so one pullback serves both."""
    obj, key, value = args
    y, pb = rcall(_item_writes.setitem, obj, key, value)
    ẏ = _forward_rules.set_entry(obj, key, ts[1], ts[3])

    def setitem_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        cts = pb(ȳ) if not _is_zero(unthunk(ȳ)) else (_NO, _Z, _NO, _Z)
        tcts = pb(ẏ̄) if not _is_zero(unthunk(ẏ̄)) else (_NO, _Z, _NO, _Z)
        return (_NO, _NO, _tangents_ct((_Z, tcts[1], _Z, tcts[3])), cts[1], _NO, cts[3])

    return (y, ẏ), setitem_pullback
