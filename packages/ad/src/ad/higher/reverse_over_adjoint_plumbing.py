"""Reverse mode over the adjoint's plumbing: what a pullback calls, differentiated again.

Reverse over reverse (``reverse_over_reverse``) differentiates the generated
adjoint and the rules' pullbacks as source. Besides the pullbacks, they call
the adjoint's own plumbing: ``acc`` and the structured cotangent builders
(``tuple_ct``, ``fn_tangent``, ``field_ct``, ``kw_ct``, an entry of a
``Tangent``) and dismantlers (``take_entry``, ``take_tail``, ``take_key``: an item
write's, which write in place where they may), which get linear ``rrule``s here; thunks, evaluated where they
are made (a thunk is its value); projectors, linear and self-adjoint; and
reads of a tangent's backing (a tangent's cotangent is a tangent of the same
kind, so the read is linear and its cotangent is rebuilt the same way).
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any

from ad.higher.cotangent_parts import _is_zero, _tangents_ct
from ad.runtime import accumulate as _accumulate
from ad.runtime import cotangents as _cotangents
from ad.runtime import rules_objects as _rules_objects
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.reverse import rcall
from rulescore import (
    InplaceableThunk,
    NoTangent,
    Projector,
    ProjectTo,
    Tangent,
    Thunk,
    ZeroTangent,
    conj,
    non_differentiable,
    rrule,
    thunk,
    unthunk,
)

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()


# --- the adjoint's plumbing: linear maps --------------------------------------------------


@rrule.register(_accumulate.acc, config=ADConfig)
def _(config: Any, a: Any, b: Any) -> Any:
    held = (a, b)  # an extra reference: acc must not add into a in place here
    y = _accumulate.acc(a, b)
    del held

    def acc_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ, ȳ)

    return y, acc_pullback


@rrule.register(_accumulate.tuple_ct, config=ADConfig)
def _(config: Any, *cts: Any) -> Any:
    n = len(cts)

    def tuple_ct_pullback(ȳ: Any) -> tuple:
        return (_NO, *entries(ȳ, n, "a tuple cotangent"))

    return cts, tuple_ct_pullback


def _like(ȳ: Any, es: list) -> Any:
    """The entries ``es`` as a cotangent of the list cotangent ``ȳ``: of its kind (a
    tangent's cotangent is a tangent of the same kind), zero when they all are."""
    if all(_is_zero(e) for e in es):
        return _Z
    return es if type(ȳ) is list else Tangent[list]._from_backing(es)  # type: ignore[misc]


@rrule.register(_cotangents.take_entry, config=ADConfig)
def _(config: Any, ȳ: Any, n: int, key: int, *mine: bool) -> Any:
    y = _cotangents.take_entry(ȳ, n, key, False)  # never in place: ȳ is a primal here

    def take_entry_pullback(d: Any) -> tuple:
        d_rest, d_v = entries(d, 2, "take_entry's output")
        es = list(entries(d_rest, n, "a list"))
        es[key] = unthunk(d_v)
        return (_NO, _like(ȳ, es), _NO, _NO, *(_NO for _ in mine))

    return y, take_entry_pullback


@rrule.register(_cotangents.take_tail, config=ADConfig)
def _(config: Any, ȳ: Any, n: int, m: int, *mine: bool) -> Any:
    y = _cotangents.take_tail(ȳ, n, m, False)

    def take_tail_pullback(d: Any) -> tuple:
        d_rest, d_tail = entries(d, 2, "take_tail's output")
        # (an empty list's part is the constant zero, whatever reaches it)
        head = entries(d_rest, n, "a list") if n else ()
        es = [*head, *entries(d_tail, m, "a list")]
        return (_NO, _like(ȳ, es), _NO, _NO, *(_NO for _ in mine))

    return y, take_tail_pullback


@rrule.register(_cotangents.take_key, config=ADConfig)
def _(config: Any, ȳ: Any, key: Any, *mine: bool) -> Any:
    y = _cotangents.take_key(ȳ, key, False)
    kind = type(unthunk(ȳ))

    def take_key_pullback(d: Any) -> tuple:
        d_rest, d_v = entries(d, 2, "take_key's output")
        b = dict(_fields(d_rest))
        d_v = unthunk(d_v)
        if not _is_zero(d_v):
            b[key] = d_v
        if not b:
            return (_NO, _Z, _NO, *(_NO for _ in mine))
        ct = (
            b
            if kind is dict
            else (kind if kind._kind == "mapping" else Tangent[dict])._from_backing(b)
        )
        return (_NO, ct, _NO, *(_NO for _ in mine))

    return y, take_key_pullback


def _fields(t: Any) -> dict:
    t = unthunk(t)
    if _is_zero(t):
        return {}
    if isinstance(t, Tangent):
        b = t._backing
        return dict(b) if isinstance(b, dict) else {}
    if isinstance(t, dict):
        return t
    return {}


@rrule.register(_accumulate.fn_tangent, config=ADConfig)
def _(config: Any, names: tuple, cts: tuple) -> Any:
    def fn_tangent_pullback(ȳ: Any) -> tuple:
        got = _fields(ȳ)
        return (_NO, _NO, _tangents_ct(tuple(got.get(n, _Z) for n in names)))

    return _accumulate.fn_tangent(names, cts), fn_tangent_pullback


@rrule.register(_accumulate.field_ct, config=ADConfig)
def _(config: Any, t: Any, name: str) -> Any:
    return _accumulate.field_ct(t, name), _entry_pullback(types.FunctionType, name)


@rrule.register(_accumulate.kw_ct, config=ADConfig)
def _(config: Any, kw: Any, name: str) -> Any:
    return _accumulate.kw_ct(kw, name), _entry_pullback(dict, name)


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, t: Tangent, key: Any) -> Any:
    """A rule's pullback reading entry ``key`` of its output's cotangent (``ȳ[1]`` of a
    ``Tangent[SlogdetResult]``): ȳ goes back as that one entry, of the same kind."""
    y = t[key]
    T = type(t)
    if T._kind == "positional":
        n = len(t._backing)

        def positional_entry_pullback(ȳ: Any) -> tuple:
            if _is_zero(unthunk(ȳ)):
                return (_NO, _Z, _NO)
            return (_NO, T(*[ȳ if i == key else _Z for i in range(n)]), _NO)

        return y, positional_entry_pullback
    if T._kind == "fields" and isinstance(key, int):
        key = T._allowed[key]  # a namedtuple's index: its field
    return y, _entry_pullback(T.primal_type, key)


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, cls: type, key: Any) -> Any:
    """A generic type made in a rule's body (``Tangent[P]``): no data, no derivative."""
    return cls[key], lambda ȳ: (_NO, _NO, _NO)


def _entry_pullback(primal_type: type, name: str) -> Callable:
    """The pullback of reading entry ``name`` of a ``Tangent[primal_type]`` (a closure's
    captured variable, a keyword argument): ȳ goes back as that one entry."""

    def entry_pullback(ȳ: Any) -> tuple:
        if _is_zero(unthunk(ȳ)):
            return (_NO, _Z, _NO)
        return (_NO, Tangent[primal_type]._from_backing({name: ȳ}), _NO)

    return entry_pullback


# --- thunks and projectors inside pullbacks ------------------------------------------------


def _thunk_rrule(config: Any, fn: Any) -> Any:
    """A thunk made in differentiated code is evaluated where it is made: its value
    is what it stands for, and the derivative goes through ``fn``'s body. It stays a
    thunk (``t.unthunk()`` works), whose cotangent is its value's."""
    value, pb = rcall(fn)
    y = Thunk(lambda: value)
    y.unthunk()  # evaluated: the closure over fn's captures is dropped

    def thunk_pullback(ȳ: Any) -> tuple:
        return (_NO, pb(ȳ)[0])

    return y, thunk_pullback


rrule.register(Thunk, config=ADConfig)(_thunk_rrule)
rrule.register(thunk, config=ADConfig)(_thunk_rrule)


@rrule.register(InplaceableThunk, config=ADConfig)
def _(config: Any, add_fn: Any, value: Any) -> Any:
    # ``value`` was made by a thunk in differentiated code, so it is already evaluated.
    def inplaceable_pullback(ȳ: Any) -> tuple:
        return (_NO, _NO, ȳ)

    return unthunk(value), inplaceable_pullback


non_differentiable(ProjectTo)


# --- cotangents of tangents -----------------------------------------------------------
#
# A pullback differentiated again reads its cotangent's entries (``ȳ._backing``).
# A tangent's cotangent is a tangent of the same kind (the space is its own dual),
# so reading the backing is linear and its cotangent is rebuilt the same way.


def _tangent_getattr_rrule(config: Any, t: Any, name: str) -> Any:
    """``t._backing`` of a tangent ``t``; any other attribute by the rule for
    ``object``, looked up when called (registered by a module imported later)."""
    if name != "_backing":
        generic = rrule.table.lookup(_rules_objects.getattr_, (object, str), ADConfig)
        impl = generic.impl
        return impl(config, t, name) if generic.takes_config else impl(t, name)
    kind = type(t)

    def tangent_backing_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _Z, _NO)
        if isinstance(ȳ, Tangent):
            ȳ = ȳ._backing
        b = tuple(ȳ) if isinstance(ȳ, (tuple, list)) else dict(ȳ)
        return (_NO, kind._from_backing(b), _NO)

    return t._backing, tangent_backing_pullback


rrule.register_signature(_rules_objects.getattr_, _tangent_getattr_rrule, (Tangent, str), ADConfig)


@rrule.register(conj, config=ADConfig)
def _(config: Any, p: Any) -> Any:
    def conj_pullback(ȳ: Any) -> tuple:
        return (_NO, conj(unthunk(ȳ)))

    return conj(p), conj_pullback


def _projector_call_rrule(config: Any, project: Any, dx: Any) -> Any:
    """A projector is a linear, self-adjoint map (onto a tangent space)."""

    def projector_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _NO, _Z)
        return (_NO, _NO, project(ȳ))

    return project(dx), projector_pullback


def _projector_classes(base: type) -> list[type]:
    out = [base]
    for sub in base.__subclasses__():
        out += _projector_classes(sub)
    return out


for _cls in _projector_classes(Projector):
    if "__call__" in _cls.__dict__:
        rrule.register(_cls.__dict__["__call__"], config=ADConfig)(_projector_call_rrule)
