"""Forward mode over forward mode: ``frule``s for forward mode's own dispatch.

A pushforward that forward mode generated is ordinary Python: it calls
``fcall(op, (ȯp, ẋ1, ...), x1, ...)`` for each operation (or a scalar fast
path, ``ffast_mul(a, b, ȧ, ḃ)``) and a few linear helpers that pack and unpack
tangents. So a second forward pass differentiates it, as reverse over forward
does (``reverse_over_forward``): ``fcall`` gets an ``frule`` that pushes the outer tangents
through *what the dispatch runs* (the program one level up):

- a Python function: its generated pushforward, itself pushed forward (a copy
  of it whose private names carry a prefix of their own, so the outer transform's
  names cannot collide with the inner's: ``nested_pushforward``);
- a function with an ``frule``: the rule's body, pushed forward as source;
- a linear helper (packing, selection): the same map on the outer tangents;
- library code run as plain Python: its route, the same at every level;
- a bound method: its function, the receiver first.

Three levels deep, the outer pass meets ``fcall`` (or ``jvp``, or a fast path)
inside the pushforward it differentiates: ``unfold`` (its own module) rewrites
such a call as the call it makes one level up, composing the maps of the
tangents, so every depth meets this same rule again. Each level's tangents
live in that level's generated variables, so an inner perturbation never meets
an outer one (no perturbation confusion). ``jvp``'s own ``frule`` is in ``forward_over_jvp``,
those of forward mode's helpers in ``forward_over_plumbing``; reverse mode over
all this is ``over_pushforward``.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from ad.errors import MutationError
from ad.higher import nested_partials as _nested_partials
from ad.higher.keyword_tangents import keyword_tangent, positional
from ad.higher.unfold import (
    _SELF,
    _gen_call,
    _gen_parts,
    _method_parts,
    _split_ts,
    _zero,
    linear_call,
    unfold,
)
from ad.higher.unsupported import user_site
from ad.runtime import forward as _forward
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import rules_item_writes as _item_writes
from ad.runtime import rules_objects as _rules_objects
from ad.runtime.config import ADConfig
from ad.runtime.library_code import library_callable
from ad.runtime.nested_kernels import fcall_pair
from ad.runtime.tracebacks import function_name
from rulescore import ZeroTangent, frule

__all__ = ["forward_over_fcall"]

_Z = ZeroTangent()
_FunctionType = types.FunctionType


# --- fcall pushed forward -------------------------------------------------------------


def forward_over_fcall(
    op: Any, ts: tuple, args: tuple, ȯp: Any, ṫs: tuple, ȧ: tuple
) -> tuple[Any, Any]:
    """``((y, ẏ), its tangent)`` for ``(y, ẏ) = fcall(op, ts, *args)`` along the outer
    tangents ``ȯp`` (of ``op``), ``ṫs`` (of each of ``ts``) and ``ȧ`` (of each argument)."""
    return forward_over(op, ts, args, {}, {}, ȯp, ṫs, ȧ, {}, {})


def forward_over(
    op: Any,
    ts: tuple,
    args: tuple,
    kwargs: dict,
    kw_ts: dict,
    ȯp: Any,
    ṫs: tuple,
    ȧ: tuple,
    k̇w: dict,
    k̇w_ts: dict,
) -> tuple[Any, Any]:
    """``forward_over_fcall`` for a call with keyword arguments: ``kw_ts`` their inner
    tangents, ``k̇w`` their outer tangents, ``k̇w_ts`` the outer tangents of ``kw_ts``."""
    if (
        _zero(ȯp)
        and all(_zero(t) for t in ṫs)
        and all(_zero(t) for t in ȧ)
        and all(_zero(t) for t in k̇w.values())
        and all(_zero(t) for t in k̇w_ts.values())
    ):
        return _forward.call_with(op, ts, args, kwargs, kw_ts), _Z
    if keyword_tangent(op, args, kwargs):  # Tangent[P](a=ȧ) in a rule's body: by position
        op2, args2, tail, split = positional(op, kwargs, kw_ts)
        return forward_over_fcall(op2, (_Z, *tail), args2, _Z, (_Z, *split(k̇w_ts)), split(k̇w))
    if op is getattr and len(args) == 2 and not kwargs:  # getattr(obj, name): a read
        op = _rules_objects.getattr_
    if op is functools.partial:  # building a partial: packing, at every level
        args2, ts2 = _nested_partials.constructor_call(ts, args, kwargs, kw_ts)
        ȧ2 = _nested_partials.constructor_call((_Z, *ȧ), args, kwargs, k̇w)[1][1:]
        ṫs2 = _nested_partials.constructor_call(ṫs, args, kwargs, k̇w_ts)[1]
        return forward_over_fcall(_nested_partials.make_partial, ts2, args2, _Z, ṫs2, ȧ2)
    if _nested_partials.is_partial(op):  # the call it makes, each level's tangent split
        func, ts2, args2, kwargs2, kw_ts2 = _nested_partials.unwrap(op, ts, args, kwargs, kw_ts)
        ȯf, ȧb, k̇wb = _nested_partials.split(op, ȯp)
        _, ṫs2, _, _, k̇w_ts2 = _nested_partials.unwrap(op, ṫs, args, kwargs, k̇w_ts)
        k̇w2 = {**k̇wb, **{k: k̇w.get(k, _Z) for k in kwargs}}
        return forward_over(func, ts2, args2, kwargs2, kw_ts2, ȯf, ṫs2, (*ȧb, *ȧ), k̇w2, k̇w_ts2)
    tf = type(op)
    func, owner = _method_parts(op)
    if func is not None:  # the method's tangent is its receiver's
        return forward_over(
            func,
            (_Z, ts[0], *ts[1:]),
            (owner, *args),
            kwargs,
            kw_ts,
            _Z,
            (_Z, ṫs[0], *ṫs[1:]),
            (ȯp, *ȧ),
            k̇w,
            k̇w_ts,
        )
    if (
        all(t.__class__ in _forward._ZEROS for t in ts)
        and all(_zero(t) for t in kw_ts.values())
        and (tf is not _FunctionType or op not in _forward.NO_SHORTCUT)
    ):
        # No inner tangent: the inner value is op(*args), its tangent a constant zero.
        y, ẏo = _forward.call_with(op, (ȯp, *ȧ), args, kwargs, k̇w)
        return (y, _Z), _forward.tan_tuple(ẏo, _Z)
    if not kwargs and linear_call(op, args):
        # Linear with a constant Jacobian: the same map on each level's tangents.
        y, ẏ = _forward.fcall(op, ts, *args)
        y_o = _forward.fcall(op, (_Z, *ȧ), *args)[1]
        ẏ_o = _forward.fcall(op, (_Z, *ṫs[1:]), *args)[1]
        return (y, ẏ), _forward.tan_tuple(y_o, ẏ_o)
    if op is _item_writes.append and not kwargs:  # lst.append(v): once, tangents beside
        return _over_append(ts, args, ṫs, ȧ)
    if _forward._hashable(op) and op in _FIELD_WRITES and len(args) == 3:
        raise _field_write_refused(*args)
    hashable = _forward._hashable(op)  # a dataclass with __call__ is not
    plain = not hashable or (op not in _SELF and op not in _forward._FRULES)
    if plain and library_callable(op):  # library code: as plain Python
        return _over_plain(op, ts, args, kwargs, kw_ts, ṫs, ȧ, k̇w, k̇w_ts)
    u = unfold(op, ts, args, kwargs, kw_ts)
    op2, args2, kwargs2, tmap = u
    ts2, kw_ts2 = tmap(ȯp, ṫs, ȧ, k̇w, k̇w_ts)
    return _forward.call_with(op2, ts2, args2, kwargs2, kw_ts2)


def _over_append(ts: tuple, args: tuple, ṫs: tuple, ȧ: tuple) -> tuple[Any, Any]:
    """``lst.append(value)`` (a list being built): appended once; each level's tangent
    is the list's tangent with the value's appended."""
    lst, _ = args
    n = len(lst)
    before = list(lst)
    y, ẏ = _forward.fcall(_item_writes.append, ts, *args)
    y_o = _forward.tan_list(*_forward.entries(ȧ[0], n, before), ȧ[1])
    ẏ_o = _forward.tan_list(*_forward.entries(ṫs[1], n, before), ṫs[2])
    return (y, ẏ), _forward.tan_tuple(y_o, ẏ_o)


def _field_writes() -> frozenset:
    from ad.runtime.helpers import setattr_

    return frozenset([setattr_, _rules_objects.setattr_object, _rules_objects.setdict])


#: the helpers writing an object's field (``obj.name = value`` in generated code)
_FIELD_WRITES = _field_writes()


def _field_write_refused(obj: Any, name: Any, value: Any) -> MutationError:
    """A field write pushed forward twice. Forward mode keeps the tangents of an
    object's written fields by identity (``ad.runtime.state``), so that reads through any
    name (the caller of a method that wrote ``self``) find them; forward over
    forward would need the outer tangents of those inner tangents kept the same
    way, which it does not do: pushed forward as source, the write's rule lost
    them (a wrong second derivative, or an error naming a line inside ad)."""
    site = user_site()
    return MutationError(
        f"{site}: the field {name!r} of a {type(obj).__name__} object is written under "
        "forward over forward mode (ad.jvp inside ad.jvp, or a third derivative ending "
        "in two forward passes), which does not follow the derivatives of an object's "
        "fields written while it differentiates.\n"
        "To fix: take this derivative with reverse mode on one of the levels (ad.hessian, "
        "ad.hvp, ad.jvp over ad.gradient or ad.gradient over ad.jvp follow such writes), "
        "or compute the value without writing the field (pass it as an argument or "
        "return it)."
    )


def _over_plain(
    op: Any,
    ts: tuple,
    args: tuple,
    kwargs: dict,
    kw_ts: dict,
    ṫs: tuple,
    ȧ: tuple,
    k̇w: dict,
    k̇w_ts: dict,
) -> tuple[Any, Any]:
    """Library code run as plain Python (``ad.runtime.plain_calls``): its output is one of its
    inputs or carries no derivative (its route), the same at every level."""
    y, route = _plain_calls.run(op, args, kwargs or None, function_name(op), True)

    def along(pos: tuple, kw: dict) -> Any:
        return _plain_calls._route_tangent(
            route, lambda k: pos[k] if type(k) is int else kw.get(k, _Z)
        )

    ẏ = along(ts[1:], kw_ts)
    return (y, ẏ), _forward.tan_tuple(along(ȧ, k̇w), along(ṫs[1:], k̇w_ts))


def _fcall_frule(config: Any, ṡ: Any, *rest: Any) -> Any:
    """``frule`` of ``fcall(op, ts, *args)``: forward mode over forward mode."""
    n = len(rest) // 2
    ȯp, ṫs, *ȧ = rest[:n]
    op, ts, *args = rest[n:]
    return forward_over_fcall(op, tuple(ts), tuple(args), ȯp, _split_ts(ṫs, len(ts)), tuple(ȧ))


@frule.register(_forward.fcall_gen, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any) -> Any:
    """``frule`` of ``fcall_gen`` (a forward-mode call with keywords): forward over forward."""
    f, ts, args, kwargs, kw_ts, kwnames = _gen_call(rest[8:])
    ȯp, ṫs, ȧ, k̇w, k̇w_ts = _gen_parts((_Z, *rest[:8]), len(args), kwnames)
    return forward_over(f, ts, args, kwargs, kw_ts, ȯp, ṫs, ȧ, k̇w, k̇w_ts)


for _kernel in (_forward.fcall, fcall_pair):
    frule.register(_kernel, config=ADConfig)(_fcall_frule)
