"""Reverse mode over forward-mode calls that run a rule rather than generated code.

``reverse_over_fcall`` hands these cases here:

- a linear map with a constant Jacobian (``_STRUCTURAL``: selection, packing,
  the tangent plumbing; projectors): ``ẏ = J ẋ`` and ``y = J x`` share one
  pullback;
- an operation whose pushforward is one line of arithmetic
  (``pushforward_kernels``): that kernel, differentiated by first-order rules;
- any other function with an ``frule``: the rule's body, differentiated as
  source. A tangent the rule does not implement raises only where a cotangent
  reaches it (``_raise_if_needed``), never as a silent zero.
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any

from ad.higher import nested_partials as _nested_partials
from ad.higher.cotangent_parts import _is_zero, _pair, _tangents_ct
from ad.higher.keyword_tangents import tangent_of
from ad.higher.unsupported import _unsupported
from ad.runtime import forward as _forward
from ad.runtime import rules_objects as _rules_objects
from ad.runtime import state as _state
from ad.runtime.config import ADConfig
from ad.runtime.reverse import rcall
from ad.runtime.reverse_functions import call_function
from ad.runtime.tracebacks import function_name
from rulescore import (
    NoTangent,
    NotImplementedTangent,
    Tangent,
    ZeroTangent,
    backing,
    rrule,
    unthunk,
)
from rulescore.errors import NotImplementedTangentError

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()
_FunctionType = types.FunctionType
CONFIG = ADConfig()
_RRULES = rrule.table._rules


def _structural() -> frozenset:
    from ad.runtime import rules_containers as c

    return frozenset(
        [
            _rules_objects.getattr_,
            _rules_objects.getattr_object,
            operator.getitem,
            c.mk_tuple,
            c.mk_list,
            c.mk_dict,
            c.unpack,
            c.unpack_star,
            c.concat_tuple,
            c.concat_list,
            c.aslist,
            c.merge_dicts,
            dict,  # dict(source, **kwargs): its rules are linear and structural
            # the tangent plumbing that generated code and rule bodies call: linear,
            # with an rrule and an frule each, so no level reads their rules as source
            _forward.tan_tuple,
            _forward.tan_list,
            _forward.tan_dict,
            _forward.split,
            unthunk,
            backing,
            Tangent._from_backing.__func__,  # type: ignore[attr-defined]
            # a partial built, and its tangent split and packed (_nested_partials)
            _nested_partials.make_partial,
            _nested_partials.split,
            _nested_partials.pack,
            tangent_of,  # Tangent[P](a=ȧ) in a rule's body, by position (keyword_tangents)
        ]
    )


#: Functions linear in their data with a Jacobian that does not depend on it
#: (selection and packing): the tangent's cotangent is the primal pullback's.
_STRUCTURAL = _structural()


def _through_linear(f: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``ẏ = J ẋ`` with a constant ``J``: ``∂x = Jᵀȳ`` and ``∂ẋ = Jᵀẏ̄``, both by ``f``'s pullback."""
    n = len(args)
    y, pb = rcall(f, *args)
    ẏ = _forward.fcall(f, ts, *args)[1]
    tpb = pb
    p = _state.current()
    if p is not None and p.written and any(p.written.get(id(a)) is a for a in args):
        # The value's pullback takes a read of an object followed by identity into the
        # pass's store (``ad.runtime.state``); the tangents' cotangent goes along variables.
        with _state.suspended():
            tpb = rcall(f, *args)[1]

    def structural_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        args_ct = pb(ȳ)[1:] if not _is_zero(unthunk(ȳ)) else (_Z,) * n
        ts_ct = tpb(ẏ̄)[1:] if not _is_zero(unthunk(ẏ̄)) else (_Z,) * n
        return (_NO, _NO, _tangents_ct((_Z, *ts_ct)), *args_ct)

    return (y, ẏ), structural_pullback


def _through_projector(project: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """A projector (in a rule's body): a linear map onto a tangent space, its own adjoint."""
    (dx,) = args
    ḋx = ts[1]
    y = project(dx)
    ẏ = _Z if _is_zero(unthunk(ḋx)) else project(ḋx)

    def projector_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = (unthunk(c) for c in _pair(ct))
        dx_ct = _Z if _is_zero(ȳ) else project(ȳ)
        ḋx_ct = _Z if _is_zero(ẏ̄) else project(ẏ̄)
        return (_NO, _NO, _tangents_ct((_Z, ḋx_ct)), dx_ct)

    return (y, ẏ), projector_pullback


def _through_kernel(kernel: Callable, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """An operation whose pushforward is a kernel of ``pushforward_kernels``:
    ``kernel(*args, *tangents)``, differentiated by first-order rules."""
    n = len(args)
    out, pb = rcall(kernel, *args, *ts[1:])

    def kernel_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (kernel, *args, *tangents)
        return (_NO, _NO, _tangents_ct((_Z, *raw[1 + n :])), *raw[1 : 1 + n])

    return out, _state.keep_stateful(pb, kernel_pullback)


def _through_frule(rule: Any, f: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    n, m = len(args), len(ts)
    if _forward._is_numpy_function(f):
        # As forward mode's dispatch does: a list argument's tangent as an array (its
        # cotangent, an array, splits into the entries' rows where the list was built).
        ts = _forward._array_like_tangents(ts, args)
    # A rule's captured variables (the function it was made for, its partials)
    # are constants: differentiate its body with the closure inactive.
    call_args = (CONFIG, *ts, *args) if rule.takes_config else (*ts, *args)
    offset = 2 if rule.takes_config else 1
    impl = rule.impl
    if type(impl) is _FunctionType and impl not in _RRULES:
        out, pb = call_function(impl, call_args, None, False)
    else:
        out, pb = rcall(impl, *call_args)
    if out is None:
        raise _unsupported(
            f"the frule for {function_name(f)} declined these arguments, and reverse "
            "over forward cannot follow its fallback",
            "call it with arguments its frule accepts, or differentiate to first order",
        )

    missing = _missing_tangents(out[1]) if type(out) is tuple and len(out) == 2 else ()

    def frule_pullback(ct: Any) -> tuple:
        if missing:
            _raise_if_needed(missing, _pair(ct)[1])
        raw = pb(ct)
        ts_ct = raw[offset : offset + m]
        return (_NO, _NO, _tangents_ct(ts_ct), *raw[offset + m : offset + m + n])

    return out, _state.keep_stateful(pb, frule_pullback)


def _missing_tangents(ẏ: Any) -> tuple:
    """Where an ``frule``'s output tangent is a ``NotImplementedTangent`` (the rule
    lacks that derivative): ``((None, t),)`` for the whole tangent, ``((i, t), ...)``
    for entries of a tuple tangent."""
    if type(ẏ) is NotImplementedTangent:
        return ((None, ẏ),)
    b = ẏ._backing if isinstance(ẏ, Tangent) else ẏ
    if type(b) is tuple:
        return tuple((i, t) for i, t in enumerate(b) if type(t) is NotImplementedTangent)
    return ()


def _raise_if_needed(missing: tuple, ẏ̄: Any) -> None:
    """A missing tangent is a value reverse mode differentiates again: a cotangent
    reaching it means the derivative asked for needs the derivative of what the rule
    does not give, so raise with the rule's reason (never a silent zero)."""
    ẏ̄ = unthunk(ẏ̄)
    if _is_zero(ẏ̄):
        return
    for i, t in missing:
        if i is None:
            c = ẏ̄
        else:
            b = ẏ̄._backing if isinstance(ẏ̄, Tangent) else ẏ̄
            c = b[i] if type(b) in (tuple, list) and i < len(b) else ẏ̄
        if not _is_zero(unthunk(c)):
            where = f" (at {t.where})" if t.where else ""
            raise NotImplementedTangentError(
                f"tangent not implemented{where}: {t.reason}.\nA derivative of higher "
                "order needs the derivative of this missing one (reverse mode over the "
                "forward-mode derivative the rule lacks)."
            )
