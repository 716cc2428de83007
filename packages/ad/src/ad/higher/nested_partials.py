"""``functools.partial`` under nested differentiation, in every mode combination.

First-order modes call a partial as the call of its function, the bound
arguments first (``ad.runtime.forward._call_partial``,
``ad.runtime.reverse_fallback._call_partial``); its tangent or cotangent is a
``Tangent[functools.partial]`` with fields ``func``, ``args`` (the bound
positional arguments') and ``keywords`` (the bound keywords'). Nested
differentiation unwraps it the same way, whatever the pair of modes: the call
``p(*args, **kwargs)`` is ``p.func(*p.args, *args, **{**p.keywords,
**kwargs})``, each level's tangent of ``p`` split into those of its parts
(``unwrap``, ``split``), and the cotangents of the parts packed back into one of
``p`` (``pack``).

Building a partial, ``functools.partial(func, *args, **kwargs)``, is linear in
its parts: nested modes run it as ``make_partial(func, args, keywords)``, one
positional call with linear rules of its own, so every depth treats it as
packing (``unfold.LINEAR``, ``reverse_over_rules._STRUCTURAL``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ad.runtime import forward as _forward
from ad.runtime.accumulate import field_ct
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

__all__ = ["is_partial", "make_partial", "pack", "split", "unwrap"]

_Z = ZeroTangent()
_NO = NoTangent()
_PartialT = Tangent[functools.partial]  # type: ignore[type-arg]
_TupleT = Tangent[tuple]  # type: ignore[type-arg]
_DictT = Tangent[dict]  # type: ignore[type-arg]
_FRULES = frule.table._rules
_RRULES = rrule.table._rules


def is_partial(f: Any) -> bool:
    """Whether ``f`` is a ``functools.partial`` (subclasses included) with no rules of
    its own (``rules.functional`` registers some on the partials it caches)."""
    if not isinstance(f, functools.partial):
        return False
    try:
        return f not in _FRULES and f not in _RRULES
    except TypeError:  # unhashable bound arguments
        return True


def _zero(t: Any) -> bool:
    return t is None or isinstance(unthunk(t), AbstractZero)


def _kw_entry(t: Any, key: str) -> Any:
    t = unthunk(t)
    if _zero(t):
        return _Z
    b = t._backing if isinstance(t, Tangent) else t
    return b.get(key, _Z) if isinstance(b, dict) else _Z


def split(p: functools.partial, ṗ: Any) -> tuple:
    """``(of func, (of each bound argument...), {of each bound keyword})`` from the
    tangent (or cotangent) ``ṗ`` of the partial ``p``."""
    ṗ = unthunk(ṗ)
    nb = len(p.args)
    if _zero(ṗ):
        return _Z, (_Z,) * nb, {k: _Z for k in p.keywords}
    bound = tuple(_forward.entries(field_ct(ṗ, "args"), nb, p.args))
    kw = field_ct(ṗ, "keywords")
    return field_ct(ṗ, "func"), bound, {k: _kw_entry(kw, k) for k in p.keywords}


def pack(f_t: Any, bound: tuple, kw: dict) -> Any:
    """A partial's tangent (or cotangent) from its parts' (``split``'s inverse), as
    first-order reverse mode builds it (``ad.runtime.reverse_fallback._call_partial``):
    fields ``func``, ``args`` (a tuple) and ``keywords`` (a dict), zero parts left
    out. Linear, with rules of its own."""
    b = {}
    if not _zero(f_t):
        b["func"] = f_t
    if any(not _zero(t) for t in bound):
        b["args"] = tuple(bound)
    kw = {k: t for k, t in kw.items() if not _zero(t)}
    if kw:
        b["keywords"] = kw
    return _PartialT._from_backing(b) if b else _Z


@rrule.register(pack, config=ADConfig)
def _(config: Any, f_t: Any, bound: tuple, kw: dict) -> Any:
    nb, keys = len(bound), tuple(kw)

    def pack_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if _zero(ȳ):
            return (_NO, _Z, _Z, _Z)
        b = entries(field_ct(ȳ, "args"), nb, "a partial's bound arguments")
        k̄w = field_ct(ȳ, "keywords")
        kw_c = {k: c for k in keys if not _zero(c := _kw_entry(k̄w, k))}
        b_c = _TupleT._from_backing(tuple(b)) if any(not _zero(c) for c in b) else _Z
        return (_NO, field_ct(ȳ, "func"), b_c, _DictT._from_backing(kw_c) if kw_c else _Z)

    return pack(f_t, bound, kw), pack_pullback


@frule.register(pack, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ḃ: Any, k̇w: Any, f_t: Any, bound: tuple, kw: dict) -> Any:
    b = tuple(_forward.entries(ḃ, len(bound), bound))
    return pack(f_t, bound, kw), pack(ḟ, b, {k: _forward.mapping_entry(k̇w, k) for k in kw})


@rrule.register(split, config=ADConfig)
def _(config: Any, p: functools.partial, ṗ: Any) -> Any:
    nb = len(p.args)

    def split_pullback(ȳ: Any) -> tuple:
        c = entries(ȳ, 3, "a partial's parts")
        b = entries(c[1], nb, "a partial's bound arguments")
        return (_NO, _NO, pack(c[0], b, {k: _kw_entry(c[2], k) for k in p.keywords}))

    return split(p, ṗ), split_pullback


@frule.register(split, config=ADConfig)
def _(config: Any, ṡ: Any, ṗ_: Any, ṗ̇: Any, p: functools.partial, ṗ: Any) -> Any:
    f_t, b, kw = split(p, ṗ̇)
    return split(p, ṗ), _forward.tan_tuple(f_t, _forward.tan_tuple(*b), _tan_kw(kw))


def _tan_kw(kw: dict) -> Any:
    return _forward.tan_dict(tuple(kw), tuple(kw.values()))


def unwrap(p: functools.partial, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """The call ``p`` makes, ``(func, ts, args, kwargs, kw_ts)``, from the call of ``p``
    with tangents ``ts = (ṗ, *ẋ)`` and ``kw_ts``: bound arguments first, the call's
    keywords over the bound ones."""
    ḟ, bound, kw_bound = split(p, ts[0])
    all_kw_ts = {**kw_bound, **{k: kw_ts.get(k, _Z) for k in kwargs}}
    all_args = (*p.args, *args)
    return p.func, (ḟ, *bound, *ts[1:]), all_args, {**p.keywords, **kwargs}, all_kw_ts


def parts_ct(p: functools.partial, n: int, f_ct: Any, a_ct: tuple, kw_ct: dict, own: Any) -> tuple:
    """``(of p, (of each argument...), {of each keyword})`` for the call of ``p`` with
    ``n`` positional arguments and the keywords ``own``, from the cotangents of the
    call it makes (``f_ct``, ``a_ct`` of every positional argument, ``kw_ct`` of every
    keyword). A keyword the call passes is its own, not the bound one's."""
    nb = len(p.args)
    bound_kw = {k: kw_ct.get(k, _Z) for k in p.keywords if k not in own}
    p_ct = pack(f_ct, tuple(a_ct[:nb]), bound_kw)
    return p_ct, tuple(a_ct[nb : nb + n]), {k: kw_ct.get(k, _Z) for k in own}


# --- building a partial -----------------------------------------------------------


def make_partial(func: Any, args: tuple, keywords: dict) -> functools.partial:
    """``functools.partial(func, *args, **keywords)``, one positional call: linear in
    ``func``, ``args`` and ``keywords`` (its rules pack and split the tangents)."""
    return functools.partial(func, *args, **keywords)


@rrule.register(make_partial, config=ADConfig)
def _(config: Any, func: Any, args: tuple, keywords: dict) -> Any:
    p = make_partial(func, args, keywords)
    n = len(args)

    def make_partial_pullback(ȳ: Any) -> tuple:
        f_ct, bound, kw = split(p, ȳ)
        a_ct = _Z if all(_zero(c) for c in bound) else _TupleT._from_backing(bound)
        kw = {k: c for k, c in kw.items() if not _zero(c)}
        return (_NO, f_ct, a_ct if n else _Z, _DictT._from_backing(kw) if kw else _Z)

    return p, make_partial_pullback


@frule.register(make_partial, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ȧ: Any, k̇w: Any, func: Any, args: tuple, keywords: dict) -> Any:
    p = make_partial(func, args, keywords)
    bound = tuple(_forward.entries(ȧ, len(args), args))
    return p, pack(ḟ, bound, {k: _forward.mapping_entry(k̇w, k) for k in keywords})


def constructor_call(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``functools.partial(*args, **kwargs)`` (tangents ``ts``, ``kw_ts``) as the call
    ``make_partial(func, bound, keywords)``: ``(args2, ts2)``."""
    kw = dict(kwargs)
    kw_t = _forward.tan_dict(tuple(kw), tuple(kw_ts.get(k, _Z) for k in kw))
    return (args[0], tuple(args[1:]), kw), (_Z, ts[1], _forward.tan_tuple(*ts[2:]), kw_t)


def constructor_cts(n: int, keys: tuple, raw: tuple) -> tuple:
    """``(of func, (of each bound argument...), {of each keyword})`` from the
    cotangents ``raw`` of ``make_partial``'s ``(func, args, keywords)``."""
    bound = entries(raw[1], n, "a partial's bound arguments")
    kw = unthunk(raw[2])
    return raw[0], bound, {k: _kw_entry(kw, k) for k in keys}


# --- reverse mode over reverse mode: the first-order pullback of a partial's call --


def first_order_cts(
    cts: tuple, nb: int, n: int, bound_keys: tuple, own_keys: tuple | None, with_kw: bool
) -> tuple:
    """What first-order reverse mode's pullback of ``p(*args)`` returns
    (``ad.runtime.reverse_fallback._call_partial``), from that of the call ``p``
    makes (``(of func, of each argument..., [{of each keyword}])``): ``(of p, of each
    argument..., [{of each keyword}])``. Linear (its own ``rrule``)."""
    kw = cts[-1] if with_kw else {}
    fields: dict[str, Any] = {}
    if not _zero(cts[0]):
        fields["func"] = cts[0]
    bound = tuple(cts[1 : 1 + nb])
    if any(not _zero(c) for c in bound):
        fields["args"] = bound
    bound_kw = {k: _kw_entry(kw, k) for k in bound_keys}
    if any(not _zero(c) for c in bound_kw.values()):
        fields["keywords"] = bound_kw
    p_ct = _PartialT._from_backing(fields) if fields else _Z
    out = (p_ct, *cts[1 + nb : 1 + nb + n])
    if own_keys is None:
        return out
    return (*out, {k: _kw_entry(kw, k) for k in own_keys})


@rrule.register(first_order_cts, config=ADConfig)
def _(
    config: Any,
    cts: tuple,
    nb: int,
    n: int,
    bound_keys: tuple,
    own_keys: tuple | None,
    with_kw: bool,
) -> Any:
    out = first_order_cts(cts, nb, n, bound_keys, own_keys, with_kw)
    m = len(cts)

    def first_order_cts_pullback(ȳ: Any) -> tuple:
        c = entries(ȳ, len(out), "a partial call's cotangents")
        p̄ = unthunk(c[0])
        f_c = field_ct(p̄, "func") if not _zero(p̄) else _Z
        bound = entries(field_ct(p̄, "args"), nb, "a partial's bound arguments")
        kw_c = field_ct(p̄, "keywords")
        kw = {k: _kw_entry(kw_c, k) for k in bound_keys}
        if own_keys is not None:
            kw.update({k: _kw_entry(c[-1], k) for k in own_keys})
        rest = c[1 : 1 + n]
        back = [f_c, *bound, *rest]
        if with_kw:
            kw = {k: v for k, v in kw.items() if not _zero(v)}
            back.append(_DictT._from_backing(kw) if kw else _Z)
        back += [_Z] * (m - len(back))
        if all(_zero(b) for b in back):
            return (_NO, _Z, _NO, _NO, _NO, _NO, _NO)
        return (_NO, _TupleT._from_backing(tuple(back)), _NO, _NO, _NO, _NO, _NO)

    return out, first_order_cts_pullback


def first_order(
    pb: Callable, nb: int, n: int, bound_keys: tuple, own_keys: tuple | None, with_kw: bool
) -> Callable:
    """A partial's call's first-order pullback, from ``pb``, the pullback of the call
    it makes (differentiated as source by reverse over reverse)."""

    def partial_call_pullback(ȳ: Any) -> tuple:
        return first_order_cts(pb(ȳ), nb, n, bound_keys, own_keys, with_kw)

    return partial_call_pullback
