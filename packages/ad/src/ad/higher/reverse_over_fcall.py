"""Reverse mode over forward mode's dispatch: the ``rrule`` of ``fcall``.

``fcall(f, ts, *args)`` (and ``fcall_gen``, its form with keyword arguments) is
what a generated pushforward calls for each operation. Its ``rrule``
differentiates whatever the dispatch runs, case by case, as forward mode
chose it: nothing pushed forward (the value's own rule), a partial, an
attribute read or write (``reverse_over_writes``), a constructor or a Python
function (its generated pushforward: ``reverse_over_generated``), a linear map,
a pushforward kernel or an ``frule``'s body (``reverse_over_rules``), a bound
method (its function, the receiver first), an operator on a user class (its
dunder method), a wrapper (the function it wraps), ``np.vectorize``, or library
code run as plain Python. ``SELF_RRULES`` holds the rules for ``fcall`` of
forward mode's own dispatch (third order, filled in by ``over_pushforward``).
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

from ad.errors import NoRuleError
from ad.higher import keyword_tangents as _kw_tangents
from ad.higher import nested_partials as _nested_partials
from ad.higher.cotangent_parts import _is_zero, _pair, _tangents_ct
from ad.higher.pushforward_kernels import kernel_for
from ad.higher.reverse_over_generated import (
    _pushforward_call,
    _through_init,
    _through_pushforward,
    _through_route,
    _through_super_init,
)
from ad.higher.reverse_over_rules import (
    _STRUCTURAL,
    _through_frule,
    _through_kernel,
    _through_linear,
    _through_projector,
)
from ad.higher.reverse_over_writes import (
    _field_read_pass,
    _holds_tangents,
    _through_append,
    _through_field_read,
    _through_follow,
    _through_setattr,
    _through_setitem,
)
from ad.higher.unsupported import _unsupported
from ad.runtime import attribute_routes as _attribute_routes
from ad.runtime import dunders as _dunders
from ad.runtime import forward as _forward
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import rules_item_writes as _item_writes
from ad.runtime import rules_objects as _rules_objects
from ad.runtime import state as _state
from ad.runtime import wrappers as _wrappers
from ad.runtime.config import ADConfig
from ad.runtime.constructors import init_to_differentiate
from ad.runtime.cotangents import entries
from ad.runtime.library_code import library_callable
from ad.runtime.nested_kernels import fcall_pair
from ad.runtime.reverse import field_ct, rcall, rcall_kw
from ad.runtime.reverse_functions import call_function
from ad.runtime.tracebacks import function_name
from rulescore import NoTangent, Projector, Tangent, ZeroTangent, rrule

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()
_TupleT = Tangent[tuple]
_FunctionType = types.FunctionType
_MethodType = types.MethodType
CONFIG = ADConfig()


#: ``f -> rrule`` for ``fcall(f, ...)`` where ``f`` is forward mode's own dispatch
#: (reverse over forward over forward; filled in by ``over_pushforward``)
SELF_RRULES: dict[Any, Callable] = {}


def _fcall_rrule(config: Any, f: Any, ts: tuple, *args: Any) -> tuple[Any, Callable]:
    """``rrule`` of ``fcall(f, ts, *args)``: differentiate what the dispatch runs.
    A call that wrote an object followed by identity (``ad.runtime.state``) has a pullback
    that runs even with no cotangent along its output (``Stateful``): the method
    call ``p.scale(x)`` whose value is discarded hands on the write's derivative."""
    n = _state.WRITES[0]
    out, pb = _fcall_rrule_body(config, f, ts, *args)
    if _state.WRITES[0] != n and type(pb) is not _state.Stateful:
        return out, _state.Stateful(pb)
    return out, pb


def _fcall_rrule_body(config: Any, f: Any, ts: tuple, *args: Any) -> tuple[Any, Callable]:
    n = len(args)
    zero_ts = all(t.__class__ in _forward._ZEROS for t in ts)
    if (
        zero_ts
        and (f.__class__ is not _FunctionType or f not in _forward.NO_SHORTCUT)
        and not _holds_tangents(f, args)
    ):
        # Nothing is pushed forward: the value is f(*args), the tangent a constant zero.
        y, pb = rcall(f, *args)
        by_identity = type(pb) is _state.Stateful

        def primal_pullback(ct: Any) -> tuple:
            ȳ, _ = _pair(ct)
            if _is_zero(ȳ) and not by_identity:
                return (_NO, _Z, _Z, *([_Z] * n))
            cts = pb(ȳ)
            return (_NO, cts[0], _Z, *cts[1:])

        return (y, _Z), _state.keep_stateful(pb, primal_pullback)

    tf = type(f)
    if _forward._hashable(f) and f in SELF_RRULES:
        return SELF_RRULES[f](f, ts, args)
    if f is functools.partial or _nested_partials.is_partial(f):
        out, partial_pb = _through_partial(config, f, ts, args, {}, {})

        def partial_pullback(ct: Any) -> tuple:
            f_ct, ts_ct, args_ct, _, _ = partial_pb(ct)
            return (_NO, f_ct, _tangents_ct(ts_ct), *args_ct)

        return out, _state.keep_stateful(partial_pb, partial_pullback)
    if isinstance(f, Projector):
        return _through_projector(f, ts, args)
    if f is _rules_objects.getattr_ or f is _rules_objects.getattr_object:
        route = _attribute_routes.read_route(*args, f is _rules_objects.getattr_object)
        if route is not None:  # user code (a property's getter...): differentiate it
            return _through_route(route, ts)
        p = _field_read_pass(f, args)
        if p is not None:  # a field of an object written in this pass: by identity
            return _through_field_read(f, p, ts, args)
    elif f is _state.follow:
        return _through_follow(ts, args)
    elif f is _rules_objects.setattr_ or f is _rules_objects.setattr_object:
        route = _attribute_routes.write_route(*args, f is _rules_objects.setattr_object)
        if route is not None:
            return _through_route(route, ts, write=True)
        return _through_setattr(f, ts, args)
    elif f is _rules_objects.setdict:
        return _through_setattr(f, ts, args)
    elif f is _rules_objects.super_init:
        init = _rules_objects._next_init(args[0])
        if init is not None:  # the base class's __init__, on the instance
            return _through_super_init(init, ts, args)
    if (
        isinstance(f, type)
        and f not in _forward._FRULES  # a class with an frule (np.vectorize): its rule
        and not _tangent_class(f)  # linear in its entries (below), not its __init__
    ):
        init = init_to_differentiate(f)  # None for a record's constructor (below)
        if init is not None:
            return _through_init(f, init, ts, args)
    if (_forward._hashable(f) and f in _STRUCTURAL) or _tangent_class(f):
        return _through_linear(f, ts, args)
    if f is _rules_containers.apply:  # f(*args, **kwargs): the call itself
        return _through_apply(ts, args)
    if f is _item_writes.append:
        return _through_append(ts, args)
    if f is _item_writes.setitem and type(args[0]) in (list, dict):
        return _through_setitem(ts, args)
    if tf is _FunctionType and f not in _forward._FRULES:
        return _through_pushforward(f, ts, args)
    if _forward._hashable(f) and f in _forward._FRULES:
        kernel = kernel_for(f, args)
        if kernel is not None:  # the pushforward as one line of arithmetic
            return _through_kernel(kernel, ts, args)
        rule = _forward._lookup(f, tuple(map(type, args)), ADConfig)
        if rule is not None:
            return _through_frule(rule, f, ts, args)
    if tf is _MethodType:  # the method's tangent is its receiver's
        return _through_method(f.__func__, f.__self__, ts, args)
    if isinstance(f, type) and f in _dunders.CONVERSIONS:  # float(obj): its __float__
        out = _dunders.dispatch(f, args, _dunder_call(ts, args))
        if out is not None:
            return out
    if isinstance(f, type) and (dataclasses.is_dataclass(f) or hasattr(f, "_fields")):
        return _through_linear(f, ts, args)  # a record's constructor packs its fields
    if _wrappers.is_vectorized(f):
        return _through_vectorize(config, f, ts, args)
    call = next((k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(call, _FunctionType):  # a callable object: its __call__, f the receiver
        return _through_method(call, f, ts, args)
    if tf is types.BuiltinFunctionType:
        owner = f.__self__
        if owner is not None and not isinstance(owner, types.ModuleType):
            unbound = getattr(type(owner), f.__name__, None)
            if unbound is not None and _forward._hashable(unbound) and unbound in _forward._FRULES:
                return _through_method(unbound, owner, ts, args)
        out = _dunders.dispatch(f, args, _dunder_call(ts, args))
        if out is not None:  # an operator on a user class: its dunder method
            return out
    inner = _wrappers.unwrapped(f)
    if inner is not None:  # functools.lru_cache...: the function it wraps (see _wrappers)
        return _through_wrapper(config, f, inner, ts, args)
    name = function_name(f)
    if library_callable(f):  # C code: run as plain Python
        return _plain_calls.reverse_over_fcall(f, ts, args, name)
    raise _unsupported(
        f"cannot differentiate the forward-mode call of {name} in reverse mode (reverse "
        "over forward supports Python functions, functions with an frule, and methods)",
        "call it through a Python function, or register an frule for it",
    )


def _through_partial(
    config: Any, f: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict
) -> tuple[Any, Callable]:
    """Building a partial (``make_partial``: packing) or calling one (the call it
    makes, bound arguments first; see ``nested_partials``), in reverse over forward.
    The pullback returns ``(of f, (of ts...), (of args...), {of kwargs}, {of kw_ts})``."""
    n = len(args)
    if f is functools.partial:
        args2, ts2 = _nested_partials.constructor_call(ts, args, kwargs, kw_ts)
        out, pb = _fcall_rrule(config, _nested_partials.make_partial, ts2, *args2)
        keys = tuple(kwargs)

        def partial_ctor_pullback(ct: Any) -> tuple:
            raw = pb(ct)  # (fcall, make_partial, ts2, func, args, keywords)
            t = entries(raw[2], 4, "tangents")
            ḟ, bound_t, kw_t = _nested_partials.constructor_cts(n - 1, keys, t[1:])
            f_ct, bound, kw = _nested_partials.constructor_cts(n - 1, keys, raw[3:])
            return _NO, (_Z, ḟ, *bound_t), (f_ct, *bound), kw, kw_t

        return out, _state.keep_stateful(pb, partial_ctor_pullback)
    func, ts2, args2, kwargs2, kw_ts2 = _nested_partials.unwrap(f, ts, args, kwargs, kw_ts)
    k = len(args2)
    names = tuple(kwargs2)
    if names:
        out, pb = _fcall_gen_rrule(
            config,
            func,
            ts2[0],
            args2,
            ts2[1:],
            None,
            names,
            tuple(kwargs2.values()),
            tuple(kw_ts2[m] for m in names),
        )
    else:
        out, pb = _fcall_rrule(config, func, ts2, *args2)

    def partial_call_pullback(ct: Any) -> tuple:
        raw = pb(ct)
        if names:  # fcall_gen's: (_, f, ḟ, args, arg_ts, stars, kwnames, kwvalues, kw_ts)
            f_ct, ḟ_ct = raw[1], raw[2]
            a_ct = entries(raw[3], k, "arguments")
            t_ct = entries(raw[4], k, "tangents")
            kw_ct = dict(zip(names, entries(raw[7], len(names), "keywords")))
            kwt_ct = dict(zip(names, entries(raw[8], len(names), "keyword tangents")))
        else:  # fcall's: (_, f, ts, *args)
            t = entries(raw[2], k + 1, "tangents")
            f_ct, ḟ_ct, t_ct, a_ct = raw[1], t[0], t[1:], raw[3:]
            kw_ct = kwt_ct = {}
        p_ct, own_ct, own_kw = _nested_partials.parts_ct(f, n, f_ct, a_ct, kw_ct, kwargs)
        ṗ_ct, own_t, own_kwt = _nested_partials.parts_ct(f, n, ḟ_ct, t_ct, kwt_ct, kwargs)
        return p_ct, (ṗ_ct, *own_t), own_ct, own_kw, own_kwt

    return out, _state.keep_stateful(pb, partial_call_pullback)


def _tangent_class(f: Any) -> bool:
    """A ``Tangent`` type, built in a rule's body: linear in its entries."""
    return isinstance(f, type) and issubclass(f, Tangent)


def _fcall_gen_rrule(
    config: Any,
    f: Any,
    ḟ: Any,
    args: tuple,
    arg_ts: tuple,
    stars: tuple | None,
    kwnames: tuple,
    kwvalues: tuple,
    kw_ts: tuple,
) -> tuple[Any, Callable]:
    """``rrule`` of ``fcall_gen``: a forward-mode call with keyword arguments."""
    name = function_name(f)
    if (f is functools.partial or _nested_partials.is_partial(f)) and stars is None:
        out, partial_pb = _through_partial(
            config,
            f,
            (ḟ, *arg_ts),
            tuple(args),
            dict(zip(kwnames, kwvalues)),
            dict(zip(kwnames, kw_ts)),
        )

        def partial_kw_pullback(ct: Any) -> tuple:
            f_ct, ts_ct, args_ct, kw_ct, kw_ts_ct = partial_pb(ct)
            kw_ts_cts = tuple(kw_ts_ct.get(k, _Z) for k in kwnames)
            return _fcall_gen_cts(f_ct, ts_ct, args_ct, kw_ct, kwnames, kw_ts_cts)

        return out, _state.keep_stateful(partial_pb, partial_kw_pullback)
    if kwnames and _wrappers.is_vectorized(f):  # refused, saying why
        _wrappers.nested_call(f, tuple(args), dict(zip(kwnames, kwvalues)))
    if stars is not None or None in kwnames:
        raise _unsupported(
            f"the forward-mode call of {name} passes *args or **kwargs, which reverse "
            "over forward does not follow",
            "pass the arguments one by one",
        )
    if _kw_tangents.keyword_tangent(f, args, kwnames):  # Tangent[P](a=ȧ): by position
        return _kw_tangents.reverse_over(_FCALL, config, f, kwnames, kwvalues, kw_ts)
    if not kwnames:  # a positional call (f(*args) with an empty **{}): fcall's own rule
        out, self_pb = _fcall_rrule(config, f, (ḟ, *arg_ts), *args)

        def self_pullback(ct: Any) -> tuple:
            raw = self_pb(ct)  # (fcall, f, ts, *args)
            ts_ct = entries(raw[2], len(args) + 1, "tangents")
            return _fcall_gen_cts(raw[1], ts_ct, raw[3:], {}, (), ())

        return out, _state.keep_stateful(self_pb, self_pullback)
    owner = getattr(f, "__self__", None)
    if type(f) is _MethodType and f not in _forward._FRULES:  # the receiver first
        return _through_method_kw(
            config, f.__func__, owner, ḟ, args, arg_ts, kwnames, kwvalues, kw_ts
        )
    if type(f) is types.BuiltinFunctionType and owner is not None:
        unbound = getattr(type(owner), f.__name__, None)
        if not isinstance(owner, types.ModuleType) and unbound in _forward._FRULES:
            return _through_method_kw(
                config, unbound, owner, ḟ, args, arg_ts, kwnames, kwvalues, kw_ts
            )
    python = type(f) is _FunctionType and f not in _forward._FRULES
    args, arg_ts = tuple(args), tuple(arg_ts)
    n, m = len(args), len(kwnames)
    kwargs = dict(zip(kwnames, kwvalues))
    ts = (ḟ, *arg_ts)
    ruled = _forward._hashable(f) and f in _forward._FRULES
    moving = not all(_is_zero(t) for t in (*ts, *kw_ts))
    if moving and not python and not ruled and library_callable(f):
        # C code called with keywords (a formatter in numpy's Python source): run as
        # plain Python, its derivative along its route, as forward mode runs it
        kw_ts_d = dict(zip(kwnames, kw_ts))
        out, plain_pb = _plain_calls.reverse_over_forward(f, ts, args, kwargs, kw_ts_d, name)

        def plain_kw_pullback(ct: Any) -> tuple:
            f_ct, ts_ct, args_ct, kw, kw_ts_ct = plain_pb(ct)
            kw_ts_cts = tuple(kw_ts_ct.get(k, _Z) for k in kwnames) if kw_ts_ct else (_Z,) * m
            return _fcall_gen_cts(f_ct, ts_ct, args_ct, kw or {}, kwnames, kw_ts_cts)

        return out, _state.keep_stateful(plain_pb, plain_kw_pullback)
    init = None
    if isinstance(f, type) and not ruled and not _tangent_class(f):
        init = init_to_differentiate(f)
    if init is not None and moving:  # a class built with keywords: its __init__'s pushforward
        out, init_pb = _pushforward_call(
            init,
            (_Z, _Z, *arg_ts),
            (object.__new__(f), *args),
            kwargs,
            dict(zip(kwnames, kw_ts)),
            as_init=True,
        )

        def init_kw_pullback(ct: Any) -> tuple:
            _, ts_ct, args_ct, kw, kw_ts_ct = init_pb(ct)
            kw_ts_cts = tuple(kw_ts_ct[k] for k in kwnames)
            return _fcall_gen_cts(_NO, (_Z, *ts_ct[2:]), args_ct[1:], kw, kwnames, kw_ts_cts)

        return out, _state.keep_stateful(init_pb, init_kw_pullback)
    if not python and ruled and not all(_is_zero(t) for t in kw_ts):
        # as forward mode's dispatch follows them: moved to their positions, or to a
        # rule that takes their tangents
        kw_d = dict(zip(kwnames, kw_ts))
        moved = _forward.keyword_positions(f, args, kwargs, kw_d)
        if moved is not None:
            return _through_moved_keywords(config, f, ḟ, args, arg_ts, kwnames, kw_d, moved)
        rule = _forward._lookup(f, tuple(map(type, args)), ADConfig)
        if rule is not None and getattr(rule.impl, "keyword_tangents", False):
            try:
                return _through_keyword_tangents(rule.impl, ts, args, kwargs, kwnames, kw_d)
            except NoRuleError as e:  # the rule's body is not differentiable again
                raise _unsupported(
                    f"a keyword argument of {name} carries a derivative in forward mode, "
                    f"and reverse mode cannot differentiate its frule's body ({e})",
                    "pass the value positionally where the callable allows it, or "
                    "differentiate this call in forward mode only",
                ) from e
    if not python and not all(_is_zero(t) for t in kw_ts):
        raise _unsupported(
            f"a keyword argument of {name} carries a derivative in forward mode, which "
            "reverse over forward does not follow into an frule (it cannot be passed by "
            "position: keyword-only)",
            "compute that argument's contribution outside the call, or call a Python "
            "function without a rule",
        )
    if python and moving:
        out, pf_pb = _pushforward_call(f, ts, args, kwargs, dict(zip(kwnames, kw_ts)))

        def python_kw_pullback(ct: Any) -> tuple:
            f_ct, ts_ct, args_ct, kw, kw_ts_ct = pf_pb(ct)
            kw_ts_cts = tuple(kw_ts_ct[k] for k in kwnames)
            return _fcall_gen_cts(f_ct, ts_ct, args_ct, kw, kwnames, kw_ts_cts)

        return out, _state.keep_stateful(pf_pb, python_kw_pullback)
    if all(_is_zero(t) for t in ts) and all(_is_zero(t) for t in kw_ts):
        y, pb = rcall_kw(f, args, kwargs)
        ẏ: Any = _Z
        offset, n_ts = 1, 0
    else:
        rule = None
        if _forward._hashable(f) and f in _forward._FRULES:
            rule = _forward._lookup(f, tuple(map(type, args)), ADConfig)
        if rule is None:
            raise _unsupported(
                f"{name} is called with keyword arguments; reverse over forward follows "
                "such calls only into Python functions and functions with an frule",
                "pass every argument positionally",
            )
        call_args = (CONFIG, *ts, *args) if rule.takes_config else (*ts, *args)
        (y, ẏ), pb = call_function(rule.impl, call_args, kwargs, False)
        offset, n_ts = (2 if rule.takes_config else 1), len(ts)

    def fcall_gen_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        raw = pb(ȳ) if n_ts == 0 else pb(_TupleT._from_backing((ȳ, ẏ̄)))
        ts_ct = raw[offset : offset + n_ts] if n_ts else (_Z,) * (n + 1)
        args_ct = raw[offset + n_ts : offset + n_ts + n]
        kw = raw[-1] if isinstance(raw[-1], dict) else {}
        f_ct = raw[0] if n_ts == 0 else _NO
        return _fcall_gen_cts(f_ct, ts_ct, args_ct, kw, kwnames, (_Z,) * m)

    return (y, ẏ), _state.keep_stateful(pb, fcall_gen_pullback)


def _through_method_kw(
    config: Any,
    unbound: Any,
    owner: Any,
    ḟ: Any,
    args: tuple,
    arg_ts: tuple,
    kwnames: tuple,
    kwvalues: tuple,
    kw_ts: tuple,
) -> tuple[Any, Callable]:
    """A method of a library type called with keywords (``x.std(axis=0)``): its
    function's call with the receiver first (the method's tangent is the receiver's)."""
    n = len(args)
    out, pb = _fcall_gen_rrule(
        config, unbound, _Z, (owner, *args), (ḟ, *arg_ts), None, kwnames, kwvalues, kw_ts
    )

    def method_kw_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall_gen, unbound, ḟ, args, arg_ts, stars, kwnames, kwvalues, kw_ts)
        a = entries(raw[3], n + 1, "arguments")
        t = entries(raw[4], n + 1, "argument tangents")
        rest = (_tangents_ct(tuple(a[1:])), _tangents_ct(tuple(t[1:])), _NO, _NO, raw[7], raw[8])
        return (_NO, a[0], t[0], *rest)

    return out, _state.keep_stateful(pb, method_kw_pullback)


def _through_moved_keywords(
    config: Any,
    f: Any,
    ḟ: Any,
    args: tuple,
    arg_ts: tuple,
    kwnames: tuple,
    kw_d: dict,
    moved: tuple,
) -> tuple[Any, Callable]:
    """A call whose keywords forward mode moved to their positions (``keyword_positions``):
    the positional call's rule, its cotangents handed back to the keywords."""
    args2, kwargs2, names = moved
    n, n2, left = len(args), len(args2), tuple(kwargs2)
    arg_ts2 = (*arg_ts, *(kw_d.get(k, _Z) if k is not None else _Z for k in names))
    left_ts = tuple(kw_d.get(k, _Z) for k in left)
    out, pb = _fcall_gen_rrule(
        config, f, ḟ, args2, arg_ts2, None, left, tuple(kwargs2.values()), left_ts
    )

    def moved_keywords_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall_gen, f, ḟ, args, arg_ts, stars, kwnames, kwvalues, kw_ts)
        a_ct = entries(raw[3], n2, "arguments")
        t_ct = entries(raw[4], n2, "tangents")
        kw_ct = dict(zip(left, entries(raw[7], len(left), "keywords")))
        kwt_ct = dict(zip(left, entries(raw[8], len(left), "keyword tangents")))
        for i, k in enumerate(names):
            if k is not None:
                kw_ct[k], kwt_ct[k] = a_ct[n + i], t_ct[n + i]
        kw_ts_cts = tuple(kwt_ct.get(k, _Z) for k in kwnames)
        return _fcall_gen_cts(raw[1], (raw[2], *t_ct[:n]), a_ct[:n], kw_ct, kwnames, kw_ts_cts)

    return out, _state.keep_stateful(pb, moved_keywords_pullback)


def _through_keyword_tangents(
    impl: Any, ts: tuple, args: tuple, kwargs: dict, kwnames: tuple, kw_d: dict
) -> tuple[Any, Callable]:
    """An frule that takes its keywords' tangents, a dict before its own arguments
    (``keyword_tangents``: ``dict(a=x)``), as forward mode calls it: its body, in reverse."""
    n = len(args)
    (y, ẏ), pb = call_function(impl, (CONFIG, kw_d, *ts, *args), kwargs, False)

    def keyword_tangents_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        raw = pb(_TupleT._from_backing((ȳ, ẏ̄)))  # (impl, config, kw_d, *ts, *args[, kw])
        ts_ct, args_ct = raw[3 : 4 + n], raw[4 + n : 4 + 2 * n]
        kw = raw[-1] if len(raw) > 4 + 2 * n and isinstance(raw[-1], dict) else {}
        kw_ts_cts = tuple(_forward.mapping_entry(raw[2], k) for k in kwnames)
        return _fcall_gen_cts(_NO, ts_ct, args_ct, kw, kwnames, kw_ts_cts)

    return (y, ẏ), _state.keep_stateful(pb, keyword_tangents_pullback)


def _fcall_gen_cts(
    f_ct: Any, ts_ct: tuple, args_ct: tuple, kw: dict, kwnames: tuple, kw_ts_ct: tuple
) -> tuple:
    """The cotangents of ``fcall_gen``'s arguments, in its signature's order."""
    return (
        _NO,
        f_ct,
        ts_ct[0],
        _tangents_ct(tuple(args_ct)),
        _tangents_ct(tuple(ts_ct[1:])),
        _NO,
        _NO,
        _tangents_ct(tuple(kw.get(k, _Z) for k in kwnames)),
        _tangents_ct(kw_ts_ct),
    )


rrule.register(_forward.fcall_gen, config=ADConfig)(_fcall_gen_rrule)
_FCALL = (_fcall_rrule, _fcall_gen_cts)  # for keyword_tangents.reverse_over


def _through_apply(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    fn, a, kw = args[0], tuple(args[1]), dict(args[2])
    n = len(a)
    a_ts = tuple(_forward.entries(ts[2], n, a))
    names = tuple(kw)
    kw_ts = tuple(_forward.mapping_entry(ts[3], k) for k in names)
    out, pb = _fcall_gen_rrule(CONFIG, fn, ts[1], a, a_ts, None, names, tuple(kw.values()), kw_ts)

    def apply_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall_gen, fn, ḟn, args, arg_ts, stars, names, values, kw_ts)
        a_ct = entries(raw[3], n, "arguments")
        ȧ_ct = entries(raw[4], n, "argument tangents")
        values_ct = entries(raw[7], len(names), "keyword arguments")
        kw_ct = {k: c for k, c in zip(names, values_ct) if not _is_zero(c)}
        ts_ct = (_Z, raw[2], _tangents_ct(ȧ_ct), _Z)
        return (_NO, _NO, _tangents_ct(ts_ct), raw[1], _tangents_ct(a_ct), kw_ct or _Z)

    return out, _state.keep_stateful(pb, apply_pullback)


def _dunder_call(ts: tuple, args: tuple) -> Callable:
    """``ad.runtime.dunders.dispatch``'s ``call``: the pushforward of ``method`` on ``args``
    taken in ``order``, differentiated in reverse; cotangents in the operator's order."""

    def call(method: Any, order: tuple) -> tuple:
        inner_ts = (_Z, *(ts[1 + i] for i in order))
        out, pb = _fcall_rrule(CONFIG, method, inner_ts, *(args[i] for i in order))
        if out[0] is NotImplemented:
            return NotImplemented, None
        n = len(order)

        def dunder_pullback(ct: Any) -> tuple:
            raw = pb(ct)  # (fcall, method, ts', *args in order)
            ts_ct = entries(raw[2], n + 1, "the tangents of an operator's method")
            arg_cts, t_cts = [_Z] * n, [_Z] * n
            for j, i in enumerate(order):
                arg_cts[i], t_cts[i] = raw[3 + j], ts_ct[1 + j]
            return (_NO, _NO, _tangents_ct((_Z, *t_cts)), *arg_cts)

        return out, _state.keep_stateful(pb, dunder_pullback)

    return call


def _through_method(func: Any, owner: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    n = len(args)
    inner_ts = (_Z, ts[0], *ts[1:])
    out, pb = _fcall_rrule(CONFIG, func, inner_ts, owner, *args)

    def method_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall, func, ts', owner, *args)
        ts_ct = entries(raw[2], len(inner_ts), "the tangents of a method call")
        owner_ct = raw[3]
        return (_NO, owner_ct, _tangents_ct(ts_ct[1:]), *raw[4 : 4 + n])

    return out, _state.keep_stateful(pb, method_pullback)


def _through_wrapper(
    config: Any, f: Any, inner: Any, ts: tuple, args: tuple
) -> tuple[Any, Callable]:
    """A sourceless wrapper's forward-mode call: its wrapped function's, with the
    wrapper's own value; the wrapper's tangent holds the function's as field
    ``__wrapped__`` (see ``ad.runtime.wrappers``)."""
    inner_ts = (field_ct(ts[0], "__wrapped__"), *ts[1:])
    (y_inner, ẏ), pb = _fcall_rrule(config, inner, inner_ts, *args)
    y = f(*args)
    _wrappers.check_same(f, inner, y, y_inner)
    n = len(ts)

    def wrapper_pullback(ct: Any) -> tuple:
        cts = pb(ct)  # (∂fcall, ∂inner, ∂ts, *∂args)
        ts_ct = list(entries(cts[2], n, "tangents"))
        ts_ct[0] = _wrappers.wrapper_tangent(f, ts_ct[0])
        return (cts[0], _wrappers.wrapper_tangent(f, cts[1]), _tangents_ct(tuple(ts_ct)), *cts[3:])

    return (y, ẏ), _state.keep_stateful(pb, wrapper_pullback)


def _through_vectorize(config: Any, v: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``np.vectorize``'s call as ``ad.runtime.wrappers.vectorized_call``, a loop of Python
    whose pushforward reverse mode differentiates (the function's tangent is ``v``'s
    field ``pyfunc``)."""
    pyfunc, shape, otypes = _wrappers.nested_call(v, args, None)
    n = len(args)
    inner_ts = (_Z, field_ct(ts[0], "pyfunc"), _Z, _Z, _forward.tan_tuple(*ts[1:]))
    out, pb = _fcall_rrule(
        config, _wrappers.vectorized_call, inner_ts, pyfunc, shape, otypes, tuple(args)
    )

    def vectorize_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall, vectorized_call, ts', pyfunc, shape, otypes, args)
        ts_ct = entries(raw[2], 5, "the tangents of np.vectorize's call")
        arg_ts_ct = entries(ts_ct[4], n, "the tangents of np.vectorize's arguments")
        f_t_ct = _wrappers.vectorize_tangent(v, ts_ct[1])
        return (
            _NO,
            _wrappers.vectorize_tangent(v, raw[3]),
            _tangents_ct((f_t_ct, *arg_ts_ct)),
            *entries(raw[6], n, "np.vectorize's arguments"),
        )

    return out, _state.keep_stateful(pb, vectorize_pullback)


rrule.register(_forward.fcall, config=ADConfig)(_fcall_rrule)


@rrule.register(fcall_pair, config=ADConfig)
def _(config: Any, f: Any, ts: tuple, *args: Any) -> Any:
    return _fcall_rrule(config, f, ts, *args)
