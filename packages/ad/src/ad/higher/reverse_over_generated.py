"""Reverse mode over a Python function's generated pushforward.

``_pushforward_call`` runs the pushforward that forward mode generates for a
Python function (``transform.forward_transformed``) under reverse mode: its
pullback gives the cotangents of the function, of each tangent and of each
argument (``transform.source`` keeps the generated trees, so reverse mode reads
them as source). The calls that run one: a plain call of a Python function
(``_through_pushforward``), a plain class's constructor (its ``__init__`` on a
new object, ``_through_init``), ``super().__init__`` (``_through_super_init``)
and an attribute read or write that runs user code, a property's getter or
setter (``_through_route``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ad.higher.cotangent_parts import _closure_ct, _is_zero, _tangents_ct, kw_entry
from ad.runtime import forward as _forward
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import state as _state
from ad.runtime.cotangents import entries
from ad.runtime.plain_functions import PlainEntry
from ad.runtime.reverse import rcall_kw
from ad.runtime.reverse_functions import call_function
from ad.runtime.tracebacks import function_name
from rulescore import NoTangent, ZeroTangent

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()


def _pushforward_call(
    f: types.FunctionType,
    ts: tuple,
    args: tuple,
    kwargs: dict,
    kw_ts: dict | None = None,
    as_init: bool | int = False,
    inactive: int = 0,
) -> tuple[Any, Callable]:
    """Run ``f``'s generated pushforward under reverse mode. The pullback returns
    ``(∂f, ∂ts, ∂args, ∂kwargs, ∂kw_ts)``: ``ts = (ḟ, one per positional argument)``,
    ``kw_ts`` the keyword arguments' tangents (zero when not given)."""
    from ad.transform import forward_transformed

    ḟ = ts[0]
    closure_active = bool(f.__code__.co_freevars) and not _is_zero(ḟ)
    entry = forward_transformed(f, closure_active, as_init)
    if type(entry) is PlainEntry:  # library code: run as plain Python
        name = function_name(f)
        return _plain_calls.reverse_over_forward(f, ts, args, kwargs, kw_ts or {}, name, as_init)
    gen = entry.instantiate(f)
    n = len(args)
    spec = entry.spec
    kw_ts = {k: _Z for k in kwargs} if kw_ts is None else kw_ts
    dt = _forward._param_tangents(spec, n, ts[1:], kwargs, kw_ts)
    named = set(spec.positional) | set(spec.kwonly)
    gen_kw = {**kwargs, "_ad_dt": dt, "_ad_df": ḟ}
    if inactive:  # positional arguments that carry no derivative (an attribute's name)
        out, pb = call_function(
            gen, args, gen_kw, bool(gen.__code__.co_freevars), inactive=inactive
        )
    else:
        out, pb = rcall_kw(gen, args, gen_kw)
    own = frozenset(f.__code__.co_freevars)
    index = {name: i for i, name in enumerate(spec.all_names)}
    n_bound = min(n, len(spec.positional))

    def pushforward_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (∂gen, ∂args..., {**∂kwargs, "_ad_dt": ..., "_ad_df": ...})
        kw = dict(raw[-1])
        dt_ct = entries(kw.pop("_ad_dt"), len(dt), "the parameter tangents")
        df_ct = kw.pop("_ad_df")
        arg_ts_ct = [dt_ct[index[spec.positional[i]]] for i in range(n_bound)]
        if n > n_bound:  # the rest went to *args, as one tuple tangent
            rest = dt_ct[index[spec.vararg]]
            arg_ts_ct.extend(entries(rest, n - n_bound, "the *args tangents"))
        f_ct = _closure_ct(raw[0], own)
        # a keyword landing in **kwargs: its tangent is an entry of that dict's
        star_ct = dt_ct[index[spec.kwarg]] if spec.kwarg is not None else _Z
        kw_ts_ct = {k: dt_ct[index[k]] if k in named else kw_entry(star_ct, k) for k in kwargs}
        return f_ct, (df_ct, *arg_ts_ct), tuple(raw[1 : 1 + n]), kw, kw_ts_ct

    return out, _state.keep_stateful(pb, pushforward_pullback)


def _through_pushforward(f: types.FunctionType, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    out, pb = _pushforward_call(f, ts, args, {})

    def pushforward_pullback(ct: Any) -> tuple:
        f_ct, ts_ct, args_ct, _, _ = pb(ct)
        return (_NO, f_ct, _tangents_ct(ts_ct), *args_ct)

    return out, _state.keep_stateful(pb, pushforward_pullback)


def _through_init(cls: type, init: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """A plain class's constructor: its ``__init__``'s pushforward on a new object."""
    obj = object.__new__(cls)
    out, pb = _pushforward_call(init, (_Z, _Z, *ts[1:]), (obj, *args), {}, as_init=True)

    def init_pullback(ct: Any) -> tuple:
        _, ts_ct, args_ct, _, _ = pb(ct)
        return (_NO, _NO, _tangents_ct((_Z, *ts_ct[2:])), *args_ct[1:])

    return out, _state.keep_stateful(pb, init_pullback)


def _through_super_init(init: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``super().__init__(...)`` (``ad.runtime.rules_objects.super_init``): the base
    ``__init__``'s pushforward on the instance (whose tangent is the super object's)."""
    inst = args[0].__self__
    out, pb = _pushforward_call(init, (_Z, *ts[1:]), (inst, *args[1:]), {}, as_init=True)

    def super_init_pullback(ct: Any) -> tuple:
        _, ts_ct, args_ct, _, _ = pb(ct)
        return (_NO, _NO, _tangents_ct((_Z, *ts_ct[1:])), *args_ct)

    return out, _state.keep_stateful(pb, super_init_pullback)


def _through_route(route: tuple, ts: tuple, write: bool = False) -> tuple[Any, Callable]:
    """An attribute read (``write``: write) that runs user code ``fn(*args)``
    (``ad.runtime.attribute_routes.read_route``), the object at ``args[i]``."""
    fn, args, i = route
    inner = [_Z] * (1 + len(args))
    inner[1 + i] = ts[1]
    n = len(args) - 1 if write else len(args)  # a write's value is active
    inactive = ((1 << n) - 1) & ~(1 << i)
    if write:
        inner[-1] = ts[3]
    as_init = i + 1 if write else False
    out, pb = _pushforward_call(fn, tuple(inner), args, {}, None, as_init, inactive)

    def attribute_protocol_pullback(ct: Any) -> tuple:
        _, ts_ct, args_ct, _, _ = pb(ct)
        obj_t = ts_ct[1 + i]
        if write:
            t = _tangents_ct((_Z, obj_t, _Z, ts_ct[-1]))
            return (_NO, _NO, t, args_ct[i], _NO, args_ct[-1])
        return (_NO, _NO, _tangents_ct((_Z, obj_t, _Z)), args_ct[i], _NO)

    return out, _state.keep_stateful(pb, attribute_protocol_pullback)
