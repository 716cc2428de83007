"""Reverse mode over the tangent plumbing that pushforwards and ``frule`` bodies use.

Linear maps that pack and unpack tangents (``tan_tuple``, ``tan_dict``,
``split``, ``entries``, ``unthunk``, ``Tangent._from_backing``, ``backing``) get
linear ``rrule``s whose cotangents are shaped like their inputs; arithmetic
with a zero tangent on one side (``frule`` bodies start sums at
``ZeroTangent()``) passes a cotangent on only through ``+`` and ``-``;
``getattr(obj, name)`` called as a function is an attribute read; and a few
checks and lookups that rule bodies call carry no derivative.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ad.higher.cotangent_parts import _is_zero, _tangents_ct
from ad.runtime import checks as _runtime_checks
from ad.runtime import forward as _forward
from ad.runtime import rules_objects as _rules_objects
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, from_list_ct, np_module
from ad.runtime.reverse import rcall
from rulescore import (
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    RuleTable,
    Tangent,
    Thunk,
    ZeroTangent,
    backing,
    canonicalize,
    non_differentiable,
    rrule,
    unthunk,
)

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()


# --- tangent plumbing: linear maps ---------------------------------------------


def _tan_seq_rrule(build: Callable, n_what: str) -> Callable:
    def tan_seq_rrule(config: Any, *ts: Any) -> Any:
        n = len(ts)

        def tan_seq_pullback(ct: Any) -> tuple:
            return (_NO, *entries(ct, n, n_what))

        return build(*ts), tan_seq_pullback

    return tan_seq_rrule


@rrule.register(_forward.tan_dict, config=ADConfig)
def _(config: Any, keys: tuple, ts: tuple) -> Any:
    def tan_dict_pullback(ct: Any) -> tuple:
        ct = unthunk(ct)
        if _is_zero(ct):
            return (_NO, _NO, _Z)
        b = ct._backing if isinstance(ct, Tangent) else ct
        return (_NO, _NO, _tangents_ct(tuple(b.get(k, _Z) for k in keys)))

    return _forward.tan_dict(keys, ts), tan_dict_pullback


rrule.register(_forward.tan_tuple, config=ADConfig)(_tan_seq_rrule(_forward.tan_tuple, "a tuple"))
rrule.register(_forward.tan_list, config=ADConfig)(_tan_seq_rrule(_forward.tan_list, "a list"))


@rrule.register(_forward.split, config=ADConfig)
def _(config: Any, ṫ: Any, n: int) -> Any:
    out = _forward.split(ṫ, n)
    src = unthunk(ṫ)
    # The cotangent of ṫ is shaped like ṫ: an array's tangent is an array
    # (``a, b = np.exp(p)``), whose cotangent stacks the rows'; a namedtuple's is a
    # Tangent of its fields.
    np = np_module()
    is_array = np is not None and isinstance(src, np.ndarray)
    fields = type(src)._allowed if isinstance(src, Tangent) else None
    record = fields is not None and type(src)._kind == "fields" and len(fields) == n

    def split_pullback(ct: Any) -> tuple:
        cts = entries(ct, n, "an unpacked tangent")
        if is_array:
            return (_NO, from_list_ct(src, list(cts)), _NO)
        if record and not all(_is_zero(c) for c in cts):
            b = {k: c for k, c in zip(fields, cts) if not _is_zero(c)}
            return (_NO, type(src)._from_backing(b), _NO)
        return (_NO, _tangents_ct(cts), _NO)

    return out, split_pullback


@rrule.register(_forward.entries, config=ADConfig)
def _(config: Any, ṫ: Any, n: int, primal: Any) -> Any:
    """The tangents of the items of ``primal`` from its tangent ``ṫ``: linear in ``ṫ``.
    Its cotangent is shaped like ``primal`` (a tuple's a tuple, a list's a list, an
    array's an array): the tangent maps of nested differentiation (``forward_over_forward``)
    are also run on values, whose cotangents must match those values' own."""
    out = _forward.entries(ṫ, n, primal)
    no_items = isinstance(primal, (dict, range, str))

    def entries_pullback(ct: Any) -> tuple:
        cts = entries(ct, n, "the tangents of a sequence's items")
        if no_items or all(_is_zero(c) for c in cts):
            return (_NO, _Z, _NO, _NO)
        return (_NO, from_list_ct(primal, list(cts)), _NO, _NO)

    return out, entries_pullback


@rrule.register(_forward._array_like_tangents, config=ADConfig)
def _(config: Any, ts: tuple, args: tuple) -> Any:
    """A numpy function's argument tangents, a list argument's as an array: linear in
    ``ts`` (``args``, the arguments, only say which are lists). An array made of a
    list's tangent takes its cotangent back as the list's rows."""
    out = _forward._array_like_tangents(ts, args)
    n = len(ts)
    dense = [i for i in range(1, n) if out[i] is not ts[i]]

    def array_like_pullback(ct: Any) -> tuple:
        cts = list(entries(ct, n, "a call's tangents"))
        for i in dense:
            c = unthunk(cts[i])
            if not _is_zero(c):
                cts[i] = from_list_ct(args[i - 1], list(c))
        return (_NO, _tangents_ct(tuple(cts)), _NO)

    return out, array_like_pullback


def _unthunk_rrule(config: Any, x: Any) -> Any:
    """``unthunk(t)`` / ``t.unthunk()``: a thunk's cotangent is its value's."""

    def unthunk_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ)

    return unthunk(x), unthunk_pullback


for _f in (unthunk, Thunk.unthunk, InplaceableThunk.unthunk):
    rrule.register(_f, config=ADConfig)(_unthunk_rrule)


# --- zero tangents in arithmetic (frule bodies start sums at ZeroTangent()) --------


def _zero_arith(op: Callable) -> Callable:
    """The rrule of ``op`` with a zero on one side: the zero is a constant, so only
    ``+`` and ``-`` pass a cotangent on (to the other operand)."""
    linear = op is operator.add or op is operator.sub

    def zero_arith_rrule(config: Any, a: Any, b: Any) -> Any:
        y = op(a, b)

        def zero_arith_pullback(ȳ: Any) -> tuple:
            if not linear or _is_zero(y):
                return (_NO, _Z, _Z)
            if _is_zero(a):  # y = ±b
                return (_NO, _Z, -unthunk(ȳ) if op is operator.sub else ȳ)
            return (_NO, ȳ, _Z)  # y = a

        return y, zero_arith_pullback

    return zero_arith_rrule


for _op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.matmul):
    for _types in ((AbstractZero, object), (object, AbstractZero), (AbstractZero, AbstractZero)):
        rrule.register_signature(_op, _zero_arith(_op), _types, ADConfig)


@rrule.register(operator.neg, config=ADConfig)
def _(config: Any, a: AbstractZero) -> Any:
    return a, lambda ȳ: (_NO, _Z)


# --- plumbing that rule bodies use ----------------------------------------------------

non_differentiable(_forward.is_zero)
# A check in generated code (reverse over a pushforward that writes an argument):
# run as it is, so that it sees the pass that follows the object by identity.
non_differentiable(_runtime_checks.argument_write)
# A rule body that dispatches to another rule (rrule(g, ...), frule(...)) and is
# differentiated again: which rule wins carries no derivative; the rule it returns
# is then differentiated as any function is.
non_differentiable(RuleTable.lookup)


@rrule.register(Tangent._from_backing.__func__, config=ADConfig)
def _(config: Any, cls: type, b: Any) -> Any:
    container = Tangent[dict] if isinstance(b, dict) else Tangent[type(b)]  # tuple or list

    def from_backing_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _NO, _Z)
        inner = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
        if isinstance(b, dict):
            if isinstance(inner, (list, tuple)):
                # The cotangent of the tangent's iteration (``entries`` reads a
                # namedtuple's tangent as ``tuple(t)``): its fields', in order.
                fields = tuple(canonicalize(cls._from_backing({}))._backing)
                if len(fields) != len(inner):
                    raise TypeError(
                        f"the cotangent of a {cls.__name__} has {len(inner)} entries for "
                        f"its {len(fields)} fields"
                    )
                inner = dict(zip(fields, inner))
            return (_NO, _NO, container._from_backing(dict(inner)))
        return (_NO, _NO, container._from_backing(tuple(inner)))

    return cls._from_backing(b), from_backing_pullback


@rrule.register(backing, config=ADConfig)
def _(config: Any, t: Any) -> Any:
    kind = type(t)

    def backing_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _Z)
        if isinstance(ȳ, Tangent):
            ȳ = ȳ._backing
        return (_NO, kind._from_backing(tuple(ȳ) if isinstance(ȳ, (tuple, list)) else dict(ȳ)))

    return backing(t), backing_pullback


def _getattr_rrule(config: Any, obj: Any, name: str, *default: Any) -> Any:
    """``getattr(obj, name[, default])`` called as a function: attribute access."""
    if default and not hasattr(obj, name):
        return default[0], lambda ȳ: (_NO, _Z, _NO, ȳ)
    y, pb = rcall(_rules_objects.getattr_, obj, name)

    def getattr_call_pullback(ȳ: Any) -> tuple:
        return (*pb(ȳ), *([_Z] * len(default)))

    return y, getattr_call_pullback


rrule.register_signature(getattr, _getattr_rrule, (object, str), ADConfig)
rrule.register_signature(getattr, _getattr_rrule, (object, str, object), ADConfig)
