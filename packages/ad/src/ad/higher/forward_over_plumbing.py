"""Forward mode over forward mode: the ``frule``s of forward mode's own helpers.

A pushforward that forward mode generated calls, besides ``fcall``, a few
helpers of its own: the scalar fast paths (``ffast_mul(a, b, ȧ, ḃ)`` is
``fcall(operator.mul, (0, ȧ, ḃ), a, b)``, so it is pushed forward, and unfolded
one level up, as that call) and linear maps that pack and unpack tangents
(``tan_tuple``, ``split``, ``fn_tangent``...), which act the same on the outer
tangents. ``frule`` bodies start sums at ``ZeroTangent()`` and build ``Tangent``
objects; a tangent's tangent is a tangent of the same kind. See ``forward_over_forward``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ad.higher.forward_over_forward import forward_over_fcall
from ad.higher.unfold import BINARY, SELF, split_ts, unfold_fcall, zero
from ad.runtime import accumulate as _accumulate
from ad.runtime import cotangents as _cotangents
from ad.runtime import forward as _forward
from ad.runtime import forward_arithmetic as _forward_fast
from ad.runtime import rules_objects as _rules_objects
from ad.runtime.config import ADConfig
from ad.runtime.reverse import field_ct, fn_tangent
from rulescore import (
    AbstractZero,
    InplaceableThunk,
    Tangent,
    Thunk,
    ZeroTangent,
    backing,
    frule,
    thunk,
    unthunk,
)

__all__: list[str] = []

_Z = ZeroTangent()
_zero = zero
_split_ts = split_ts
_unfold_fcall = unfold_fcall
_SELF = SELF


# --- the scalar fast paths ------------------------------------------------------------


def _ffast_frule(op: Callable) -> Callable:
    def ffast_frule(config: Any, ṡ: Any, ȧo: Any, ḃo: Any, ȧio: Any, ḃio: Any, a, b, ȧ, ḃ):
        return forward_over_fcall(op, (_Z, ȧ, ḃ), (a, b), _Z, (_Z, ȧio, ḃio), (ȧo, ḃo))

    return ffast_frule


def _unfold_ffast(op: Callable) -> Callable:
    """``ffast_op(a, b, ȧ, ḃ)`` is ``fcall(op, (0, ȧ, ḃ), a, b)``."""

    def unfold_ffast(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
        a, b, ȧ, ḃ = args

        def as_fcall(t: tuple) -> tuple:
            return (_Z, _Z, _forward.tan_tuple(_Z, t[3], t[4]), t[1], t[2])

        op2, args2, kwargs2, tmap = _unfold_fcall(as_fcall(ts), (op, (_Z, ȧ, ḃ), a, b), {}, {})

        def ffast_tmap(ȯp: Any, ṫs: tuple, ȧs: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return tmap(_Z, as_fcall(ṫs), as_fcall((_Z, *ȧs))[1:], {}, {})

        return op2, args2, kwargs2, ffast_tmap

    return unfold_ffast


for _name in BINARY:
    _fast = getattr(_forward_fast, f"ffast_{_name}")
    frule.register(_fast, config=ADConfig)(_ffast_frule(getattr(operator, _name)))
    _SELF[_fast] = _unfold_ffast(getattr(operator, _name))


@frule.register(_forward_fast.ffast_neg, config=ADConfig)
def _(config: Any, ṡ: Any, ȧo: Any, ȧio: Any, a: Any, ȧ: Any) -> Any:
    return forward_over_fcall(operator.neg, (_Z, ȧ), (a,), _Z, (_Z, ȧio), (ȧo,))


def _unfold_ffast_neg(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    a, ȧ = args

    def as_fcall(t: tuple) -> tuple:
        return (_Z, _Z, _forward.tan_tuple(_Z, t[2]), t[1])

    op2, args2, kwargs2, tmap = _unfold_fcall(as_fcall(ts), (operator.neg, (_Z, ȧ), a), {}, {})

    def ffast_neg_tmap(ȯp: Any, ṫs: tuple, ȧs: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        return tmap(_Z, as_fcall(ṫs), as_fcall((_Z, *ȧs))[1:], {}, {})

    return op2, args2, kwargs2, ffast_neg_tmap


_SELF[_forward_fast.ffast_neg] = _unfold_ffast_neg


# --- tangent plumbing: linear maps, the same on the outer tangents -----------------------


def _seq_frule(build: Callable) -> Callable:
    def tan_seq_frule(config: Any, ṡ: Any, *rest: Any) -> Any:
        n = len(rest) // 2
        return build(*rest[n:]), _forward.tan_tuple(*rest[:n])

    return tan_seq_frule


frule.register(_forward.tan_tuple, config=ADConfig)(_seq_frule(_forward.tan_tuple))
frule.register(_forward.tan_list, config=ADConfig)(_seq_frule(_forward.tan_list))


@frule.register(_forward.tan_dict, config=ADConfig)
def _(config: Any, ṡ: Any, k̇: Any, ṫs: Any, keys: tuple, ts: tuple) -> Any:
    return _forward.tan_dict(keys, ts), _forward.tan_dict(keys, _split_ts(ṫs, len(ts)))


@frule.register(_forward.split, config=ADConfig)
def _(config: Any, ṡ: Any, ṫo: Any, ṅ: Any, ṫ: Any, n: int) -> Any:
    return _forward.split(ṫ, n), _forward.tan_tuple(*_split_ts(ṫo, n))


@frule.register(fn_tangent, config=ADConfig)
def _(config: Any, ṡ: Any, ṅ: Any, ċ: Any, names: tuple, cts: tuple) -> Any:
    return fn_tangent(names, cts), fn_tangent(names, _split_ts(ċ, len(cts)))


@frule.register(field_ct, config=ADConfig)
def _(config: Any, ṡ: Any, ṫo: Any, ṅ: Any, t: Any, name: str) -> Any:
    return field_ct(t, name), (_Z if _zero(ṫo) else field_ct(ṫo, name))


def _take_frule(take: Callable, nargs: int) -> Callable:
    """``take_entry``, ``take_tail``, ``take_key`` (an item write's pullback taking
    entries out of a container's cotangent) are linear: their tangent is the same
    dismantling of the tangent. Neither is ever written in place here."""

    def take_frule(config: Any, ṡ: Any, *rest: Any) -> Any:
        ts, args = rest[: len(rest) // 2], rest[len(rest) // 2 :][:nargs]
        y = take(*args, False)
        ẏ = unthunk(ts[0])
        if _zero(ẏ):
            return y, _Z
        ṙest, v̇ = take(ẏ, *args[1:], False)
        if take is _cotangents.take_tail:
            v̇ = _forward.tan_list(*v̇)  # the tangent of the list of entries added
        return y, _forward.tan_tuple(ṙest, v̇)

    return take_frule


frule.register(_cotangents.take_entry, config=ADConfig)(_take_frule(_cotangents.take_entry, 3))
frule.register(_cotangents.take_tail, config=ADConfig)(_take_frule(_cotangents.take_tail, 3))
frule.register(_cotangents.take_key, config=ADConfig)(_take_frule(_cotangents.take_key, 2))


# --- thunks and sums of tangents: a thunk stands for its value ---------------------------
#
# As in reverse over reverse (``reverse_over_adjoint_plumbing``): a thunk made in
# differentiated code is evaluated where it is made, and its tangent is its value's;
# one that arrives made (a rule's result) has its value's tangent too. Reading it,
# as ``unthunk(t)`` or as the method ``t.unthunk()`` (``acc`` does), is then the
# identity on both, rather than the method's body differentiated as source, which
# writes its cache into the thunk (``self._value``).


def _unthunk_frule(config: Any, ṡ: Any, ẋ: Any, x: Any) -> Any:
    """``unthunk(t)`` / ``t.unthunk()``: the value, and its tangent."""
    return unthunk(x), unthunk(ẋ)


for _f in (unthunk, Thunk.unthunk, InplaceableThunk.unthunk):
    frule.register(_f, config=ADConfig)(_unthunk_frule)


def _thunk_frule(config: Any, ṡ: Any, ḟn: Any, fn: Any) -> Any:
    """``Thunk(fn)`` in differentiated code: evaluated here, through ``fn``'s body."""
    y, ẏ = _forward.fcall(fn, (ḟn,))
    t = Thunk(lambda: y)
    t.unthunk()  # evaluated: its closure over fn's captures is dropped
    return t, unthunk(ẏ)


frule.register(Thunk, config=ADConfig)(_thunk_frule)
frule.register(thunk, config=ADConfig)(_thunk_frule)


@frule.register(InplaceableThunk, config=ADConfig)
def _(config: Any, ṡ: Any, ȧdd: Any, ṫ: Any, add_fn: Any, t: Any) -> Any:
    """``InplaceableThunk(add_fn, t)``: its value is ``t``'s, and so is its tangent."""
    return InplaceableThunk(add_fn, t), unthunk(ṫ)


@frule.register(_accumulate.acc, config=ADConfig)
def _(config: Any, ṡ: Any, ȧ: Any, ḃ: Any, a: Any, b: Any) -> Any:
    """``acc(a, b)`` is linear: its tangent is ``acc(ȧ, ḃ)``."""
    held = (a, b, ȧ, ḃ)  # extra references: acc must not add into a or ȧ in place here
    y = _accumulate.acc(a, b)
    ẏ = _accumulate.acc(ȧ, ḃ)
    del held
    return y, ẏ


def _zero_arith(op: Callable) -> Callable:
    """``op`` with a zero tangent on one side (frule bodies start sums at a zero):
    the zero is a constant, so only ``+`` and ``-`` pass the other side's tangent on."""
    linear = op is operator.add or op is operator.sub

    def zero_arith_frule(config: Any, ṡ: Any, ȧ: Any, ḃ: Any, a: Any, b: Any) -> Any:
        y = op(a, b)
        if not linear or isinstance(y, AbstractZero):
            return y, _Z
        if isinstance(a, AbstractZero):
            return y, (-ḃ if op is operator.sub and not _zero(ḃ) else ḃ)
        return y, ȧ

    return zero_arith_frule


for _op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.matmul):
    for _types in ((AbstractZero, object), (object, AbstractZero), (AbstractZero, AbstractZero)):
        frule.register_signature(_op, _zero_arith(_op), _types, ADConfig)


@frule.register(operator.neg, config=ADConfig)
def _(config: Any, ṡ: Any, ȧ: Any, a: AbstractZero) -> Any:
    return a, _Z


@frule.register(_forward.fiter, config=ADConfig)
def _(config: Any, ṡ: Any, i̇t: Any, ṫo: Any, it: Any, ṫ: Any) -> Any:
    """A loop over an active iterable in a pushforward: the pairs' outer tangents."""
    pairs = list(_forward.fiter(it, ṫ))
    n = len(pairs)
    outer = zip(_forward.entries(i̇t, n, it), _forward.entries(ṫo, n, it))
    return pairs, [_forward.tan_tuple(a, b) for a, b in outer]


# --- tangents of tangents: a tangent's tangent is a tangent of the same kind ------------------


@frule.register(Tangent._from_backing.__func__, config=ADConfig)
def _(config: Any, ṡ: Any, ċls: Any, ḃ: Any, cls: type, b: Any) -> Any:
    ḃ = unthunk(ḃ)
    if _zero(ḃ):
        return cls._from_backing(b), _Z
    if isinstance(ḃ, Tangent):
        ḃ = ḃ._backing
    return cls._from_backing(b), cls._from_backing(dict(ḃ) if isinstance(b, dict) else tuple(ḃ))


@frule.register(backing, config=ADConfig)
def _(config: Any, ṡ: Any, ṫ: Any, t: Any) -> Any:
    ṫ = unthunk(ṫ)
    return backing(t), (_Z if _zero(ṫ) else backing(ṫ) if isinstance(ṫ, Tangent) else ṫ)


def _tangent_getattr_frule(config: Any, ṡ: Any, ṫ: Any, ṅ: Any, t: Any, name: str) -> Any:
    """``t._backing`` of a tangent ``t`` (a rule's body reading its entries), or a
    field ``t.name`` (``ad.gradient(loss, p)[0].b`` under an outer ``jvp``). Both are
    linear reads: a tangent's tangent is a tangent of the same kind, whose entry of
    that name (zero where it has none) is the field's tangent."""
    ṫ = unthunk(ṫ)
    if name != "_backing":
        value = getattr(t, name)
        if _zero(ṫ):
            return value, _Z
        if isinstance(ṫ, Tangent):
            entry = ṫ._backing.get(name, _Z) if isinstance(ṫ._backing, dict) else _Z
            return value, unthunk(entry)
        return value, getattr(ṫ, name, _Z)
    return t._backing, (_Z if _zero(ṫ) else backing(ṫ) if isinstance(ṫ, Tangent) else ṫ)


frule.register_signature(_rules_objects.getattr_, _tangent_getattr_frule, (Tangent, str), ADConfig)
