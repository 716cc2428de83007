"""Reverse mode over forward mode over forward mode: ``fcall`` of ``fcall``.

When reverse mode differentiates a pushforward of a pushforward (a third
derivative, or a gradient of a ``jvp`` of a ``jvp``), the outer pushforward
calls ``fcall(fcall, T, g, gts, *gargs)``: the inner call ``fcall(g, gts, *gargs)``
pushed forward along ``T``. ``forward_over_forward`` computes that by running the
program the inner call runs (``g``'s generated pushforward, or the body of
``g``'s ``frule``) in forward mode. Here the same computation is written as
small Python kernels, which reverse mode differentiates as source like any
other function; ``reverse_over_fcall``'s ``rrule`` of ``fcall`` hands these calls to
``through_self``.
"""

from __future__ import annotations

import functools
import operator
import types
from collections.abc import Callable
from typing import Any

from ad.api import jvp as _forward_api
from ad.higher import forward_over_jvp as _forward_over_jvp
from ad.higher import nested_partials as _nested_partials
from ad.higher import unfold as _unfold
from ad.higher.cotangent_parts import _closure_ct, _is_zero, _pair, _tangents_ct, kw_entry
from ad.higher.nested_pushforward import nested_pushforward
from ad.higher.reverse_over_fcall import SELF_RRULES, _fcall_gen_rrule
from ad.higher.unsupported import _unsupported
from ad.runtime import forward as _forward
from ad.runtime import forward_arithmetic as _forward_fast
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import rules_item_writes as _item_writes
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import field_ct
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, from_list_ct
from ad.runtime.library_code import library_callable
from ad.runtime.nested_kernels import fcall_pair
from ad.runtime.reverse import rcall
from ad.runtime.tracebacks import function_name
from rulescore import NoTangent, Tangent, ZeroTangent, non_differentiable, rrule, unthunk

__all__ = ["through_self"]

_Z = ZeroTangent()
_NO = NoTangent()
_FunctionType = types.FunctionType
CONFIG = ADConfig()


# --- the kernels (differentiated as source) ------------------------------------------


def pushforward_of(g: types.FunctionType, closure_active: bool) -> Any:
    """``g``'s generated pushforward (``nested_pushforward``), bound to ``g``'s cells."""
    return nested_pushforward(g, closure_active)[0]


def pushforward_names(g: types.FunctionType, closure_active: bool) -> tuple:
    """The names of the keyword-only tangent parameters of ``pushforward_of(g, ...)``."""
    _, _, dt, df = nested_pushforward(g, closure_active)
    return (dt, df)


non_differentiable(pushforward_names)


@rrule.register(pushforward_of, config=ADConfig)
def _(config: Any, g: Any, closure_active: bool) -> Any:
    own = frozenset(g.__code__.co_freevars)

    def pushforward_of_pullback(ct: Any) -> tuple:  # the same cells: g's own
        return (_NO, _closure_ct(ct, own), _NO)

    return pushforward_of(g, closure_active), pushforward_of_pullback


def ff_python(
    ġ: Any, ġts: Any, ġargs: tuple, g: Any, gts: tuple, gargs: tuple, active: bool, npos: int
):
    """``fcall(g, gts, *gargs)`` pushed forward along ``(ġ, ġts, ġargs)`` for a Python
    function ``g`` of ``npos`` plain positional parameters and perhaps ``*args``: its
    pushforward, pushed forward (the tangents past ``npos`` are ``*args``' tuple's)."""
    gen = pushforward_of(g, active)
    names = pushforward_names(g, active)
    m = len(gts)
    ṫs = _forward.split(ġts, m)
    if m - 1 == npos:
        dt = gts[1:]
        ḋt = _forward.tan_tuple(*ṫs[1:])
    else:
        dt = (*gts[1 : npos + 1], _forward.tan_tuple(*gts[npos + 1 :]))
        ḋt = _forward.tan_tuple(*ṫs[1 : npos + 1], _forward.tan_tuple(*ṫs[npos + 1 :]))
    return _forward.fcall_gen(gen, ġ, gargs, ġargs, None, names, (dt, gts[0]), (ḋt, ṫs[0]))


def ff_frule(
    ġts: Any, ġargs: tuple, impl: Any, head: tuple, gts: tuple, gargs: tuple, numpy: bool
) -> Any:
    """The same for a function with an ``frule``: the rule's body, pushed forward.

    For a numpy function (``numpy``) forward mode hands the rule a list or tuple
    argument's tangent as an array (``_array_like_tangents``); the outer tangents of
    those tangents are converted the same way, here, where reverse mode follows
    the conversion (its cotangent goes back to the sequence's entries)."""
    m = len(gts)
    ṫs = _forward.split(ġts, m)
    if numpy:
        gts = _forward._array_like_tangents(gts, gargs)
        ṫs = _forward._array_like_tangents(ṫs, gargs)
    zeros = (_Z,) * (len(head) + 1)
    return _forward.fcall(impl, (*zeros, *ṫs, *ġargs), *head, *gts, *gargs)


def ff_linear(ġts: Any, ġargs: tuple, g: Any, gts: tuple, gargs: tuple) -> Any:
    """The same for a linear helper (packing, selection): one map on every level."""
    m = len(gts)
    ṫs = _forward.split(ġts, m)
    inner = _forward.fcall(g, gts, *gargs)
    y_o = _forward.fcall(g, (_Z, *ġargs), *gargs)[1]
    ẏ_o = _forward.fcall(g, (_Z, *ṫs[1:]), *gargs)[1]
    return inner, _forward.tan_tuple(y_o, ẏ_o)


non_differentiable(_unfold.zero)
# forward over forward mode's rules run it (a yes/no question about a callable); at
# fourth order their bodies are differentiated as source
non_differentiable(library_callable)


# --- rrule of fcall(fcall, ...) --------------------------------------------------------


def _simple(g: types.FunctionType, n: int) -> bool:
    """Whether ``g`` called with ``n`` positional arguments binds each to a plain
    parameter, or the rest to ``*args`` (no defaults used, no keywords)."""
    code = g.__code__
    if code.co_kwonlyargcount or code.co_flags & 0x08:  # keyword-only, **kwargs
        return False
    if code.co_flags & 0x04:  # *args
        return code.co_argcount <= n
    return code.co_argcount == n


def _over_fcall(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``(out, pullback)`` for ``fcall(fcall, ts, g, gts, *gargs)``; the pullback
    returns ``(∂ts entries..., ∂g, ∂gts, ∂gargs entries...)`` as ``(ts_ct, args_ct)``."""
    g, gts, *gargs = args
    gts, gargs = tuple(gts), tuple(gargs)
    n, m = len(gargs), len(gts)
    ġ, ġts, ġargs = ts[1], ts[2], tuple(ts[3:])
    tg = type(g)
    linear = _unfold.linear_call(g, gargs)
    if not linear and _forward._hashable(g) and g in _unfold.SELF:
        return _over_self(ts, g, gts, gargs)
    if g is functools.partial or _nested_partials.is_partial(g):  # as unfold follows it
        return _over_self(ts, g, gts, gargs)
    func, owner = _unfold._method_parts(g)  # a Python method, or x.sum with an frule
    if func is not None:  # the method's tangent is its receiver's
        inner_ts = (_Z, _Z, _forward.tan_tuple(_Z, *_forward.split(ġts, m)), ġ, *ġargs)
        new_args = (func, (_Z, *gts), owner, *gargs)
        out, pb = _over_fcall(inner_ts, new_args)

        def method_pullback(ct: Any) -> tuple:
            ts_ct, a_ct = pb(ct)
            gts_ct = entries(a_ct[1], m + 1, "tangents")
            ṫs_ct = entries(ts_ct[2], m + 1, "tangents")
            new_ts = (_Z, ts_ct[3], _tangents_ct(ṫs_ct[1:]), *ts_ct[4:])
            return new_ts, (a_ct[2], _tangents_ct(gts_ct[1:]), *a_ct[3:])

        return out, method_pullback
    if _wrappers.is_vectorized(g):
        return _over_vectorize(ts, g, gts, gargs)
    if g is _rules_containers.apply and not gargs[2]:
        return _over_apply(ts, gts, gargs)
    if g is _item_writes.append:  # its frule appends in place: written out here
        return _over_append(ts, gts, gargs)
    call = next((k.__dict__["__call__"] for k in tg.__mro__ if "__call__" in k.__dict__), None)
    if tg is not _FunctionType and isinstance(call, _FunctionType):  # a callable object
        return _over_fcall(ts, (types.MethodType(call, g), gts, *gargs))
    if linear:
        out, pb = rcall(ff_linear, ġts, ġargs, g, gts, gargs)

        def linear_pullback(ct: Any) -> tuple:
            raw = pb(ct)  # (kernel, ġts, ġargs, g, gts, gargs)
            ġargs_ct = entries(raw[2], n, "tangents")
            gargs_ct = entries(raw[5], n, "arguments")
            return (_Z, _Z, raw[1], *ġargs_ct), (_NO, raw[4], *gargs_ct)

        return out, linear_pullback
    if tg is _FunctionType and g not in _forward._FRULES:
        if not _simple(g, n):  # defaults: the pushforward's call, keywords and all
            return _over_self(ts, g, gts, gargs)
        active = bool(g.__code__.co_freevars) and not _unfold.zero(gts[0])
        npos = g.__code__.co_argcount
        out, pb = rcall(ff_python, ġ, ġts, ġargs, g, gts, gargs, active, npos)

        def python_pullback(ct: Any) -> tuple:
            raw = pb(ct)  # (kernel, ġ, ġts, ġargs, g, gts, gargs, active, npos)
            ġargs_ct = entries(raw[3], n, "tangents")
            gargs_ct = entries(raw[6], n, "arguments")
            return (_Z, raw[1], raw[2], *ġargs_ct), (raw[4], raw[5], *gargs_ct)

        return out, python_pullback
    if _forward._hashable(g) and g in _forward._FRULES:
        rule = _forward._lookup(g, tuple(map(type, gargs)), ADConfig)
        if rule is not None:
            numpy = _forward._is_numpy_function(g)
            head = (CONFIG,) if rule.takes_config else ()
            out, pb = rcall(ff_frule, ġts, ġargs, rule.impl, head, gts, gargs, numpy)

            def frule_pullback(ct: Any) -> tuple:
                raw = pb(ct)  # (kernel, ġts, ġargs, impl, head, gts, gargs, numpy)
                ġargs_ct = entries(raw[2], n, "tangents")
                gargs_ct = entries(raw[6], n, "arguments")
                return (_Z, _Z, raw[1], *ġargs_ct), (_NO, raw[5], *gargs_ct)

            return out, frule_pullback
    raise _unsupported(
        f"reverse mode over forward over forward mode of {function_name(g)} (it follows "
        "Python functions, functions with an frule, linear helpers and methods)",
        "call it through a Python function, or register an frule for it",
    )


def _over_self(ts: tuple, g: Any, gts: tuple, gargs: tuple) -> tuple[Any, Callable]:
    """``_over_fcall`` for ``g`` forward mode's own dispatch (``fcall`` of ``fcall``...,
    ``jvp``, a fast path): four levels or more. See ``_over_unfolded``."""
    m, n = len(gts), len(gargs)
    outer = (ts[1], _unfold.split_ts(ts[2], m), tuple(ts[3:]), {}, {})
    out, pb = _over_unfolded(outer, g, gts, gargs, {}, {})

    def self_pullback(ct: Any) -> tuple:
        t, a = pb(ct)  # each (tmap, of op, of the tangents, of the arguments, kw, kw_ts)
        ṫs_ct = entries(t[2], m, "tangents")
        gts_ct = entries(a[2], m, "tangents")
        t_ct = (_Z, t[1], _tangents_ct(tuple(ṫs_ct)), *entries(t[3], n, "tangents"))
        a_ct = (a[1], _tangents_ct(tuple(gts_ct)), *entries(a[3], n, "arguments"))
        return t_ct, a_ct

    return out, self_pullback


def _over_unfolded(
    outer: tuple, g: Any, gts: tuple, gargs: tuple, gkw: dict, gkw_ts: dict
) -> tuple[Any, Callable]:
    """Reverse mode over the forward-mode call ``call_with(g, gts, gargs, gkw, gkw_ts)``
    pushed forward along ``outer = (ȯp, ṫs, ȧ, k̇w, k̇w_ts)``, for any ``g`` that
    ``unfold.unfold`` follows (the same at every depth). The inner call runs
    the program ``op2(*args2, **kwargs2)`` that ``unfold`` gives, so the whole is the
    forward-mode call of ``op2`` along the tangents ``tmap`` gives, which ``reverse_over_fcall``'s
    rules differentiate. ``tmap`` is linear and maps the parts of a call to those of
    ``op2``'s, values as tangents, so its pullback (reverse mode over its source)
    takes both sides' cotangents back. The pullback returns ``(t, a)``: ``tmap``'s
    input cotangents for the outer tangents and for the call's own parts."""
    op2, args2, kwargs2, tmap = _unfold.unfold(g, gts, gargs, gkw, gkw_ts)
    args2 = tuple(args2)
    kwnames = tuple(kwargs2)
    ts2, kw_ts2 = tmap(*outer)
    out, pb = _fcall_gen_rrule(
        CONFIG,
        op2,
        ts2[0],
        args2,
        tuple(ts2[1:]),
        None,
        kwnames,
        tuple(kwargs2.values()),
        tuple(kw_ts2.get(k, _Z) for k in kwnames),
    )

    def back(parts: tuple, kw: dict) -> tuple:
        """``tmap``'s pullback of the cotangents of ``op2``'s parts (at ``outer``:
        ``tmap`` is linear, so the point does not matter)."""
        _, tpb = rcall(tmap, *outer)
        kw_ct = Tangent[dict]._from_backing(kw) if kw else _Z
        return tpb(_forward.tan_tuple(_tangents_ct(parts), kw_ct))

    def unfolded_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall_gen, op2, its ḟ, args2, their ts, stars, names, kwvalues, kw_ts)
        k = len(args2)
        args_ct = entries(raw[3], k, "arguments")
        arg_ts_ct = entries(raw[4], k, "tangents")
        kw_ct = dict(zip(kwnames, entries(raw[7], len(kwnames), "keywords")))
        kw_ts_ct = dict(zip(kwnames, entries(raw[8], len(kwnames), "keyword tangents")))
        t = back((raw[2], *arg_ts_ct), kw_ts_ct)  # (tmap, ȯp, ṫs, ȧ, k̇w, k̇w_ts)
        a = back((raw[1], *args_ct), kw_ct)
        return t, a

    return out, unfolded_pullback


def _over_gen(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``rrule`` of ``fcall(fcall_gen, ts, *args)``: a forward-mode call with keyword
    arguments (``f(x, copy=False)`` in a rule's body), pushed forward along ``ts``
    (``fcall_gen``'s frule: forward over forward), differentiated in reverse as
    ``_over_unfolded``; a call without keywords as ``fcall`` of ``fcall``."""
    f, ḟ, fargs, arg_ts, stars, kwnames, _, _ = args
    n = len(fargs)
    if not kwnames and stars is None:  # f(*args): fcall(f, (ḟ, *arg_ts), *args)
        ṫ_ts = _forward.tan_tuple(ts[2], *_unfold.split_ts(ts[4], n))
        inner_ts = (_Z, ts[1], ṫ_ts, *_unfold.split_ts(ts[3], n))
        out, pb = _over_fcall(inner_ts, (f, (ḟ, *arg_ts), *fargs))

        def positional_pullback(ct: Any) -> tuple:
            ts_ct, a_ct = pb(ct)  # (_, ∂ġ, ∂ġts, ∂ġargs...), (∂f, ∂gts, ∂args...)
            ṫs_ct = entries(ts_ct[2], n + 1, "tangents")
            gts_ct = entries(a_ct[1], n + 1, "tangents")
            tc = _tangents_ct
            t_ct = (_Z, ts_ct[1], ṫs_ct[0], tc(tuple(ts_ct[3:])), tc(ṫs_ct[1:]), _NO, _NO, _Z, _Z)
            return t_ct, (a_ct[0], gts_ct[0], tc(tuple(a_ct[2:])), tc(gts_ct[1:]), _NO, _NO, _Z, _Z)

        return out, positional_pullback
    g, gts, gargs, gkw, gkw_ts, _ = _unfold._gen_call(args)
    outer = _unfold._gen_parts(ts, n, kwnames)
    out, pb = _over_unfolded(outer, g, gts, gargs, gkw, gkw_ts)

    def gen_pullback(ct: Any) -> tuple:
        t, a = pb(ct)  # each (tmap, of f, of (ḟ, *arg_ts), of args, of kwargs, of kw_ts)
        tc = _tangents_ct
        ṫs_ct = entries(t[2], n + 1, "tangents")
        gts_ct = entries(a[2], n + 1, "tangents")

        def kw(c: Any) -> Any:
            return tc(tuple(kw_entry(c, k) for k in kwnames))

        ȧ_ct = tc(entries(t[3], n, "tangents"))
        args_ct = tc(entries(a[3], n, "arguments"))
        t_ct = (_Z, t[1], ṫs_ct[0], ȧ_ct, tc(ṫs_ct[1:]), _NO, _NO, kw(t[4]), kw(t[5]))
        a_ct = (a[1], gts_ct[0], args_ct, tc(gts_ct[1:]), _NO, _NO, kw(a[4]), kw(a[5]))
        return t_ct, a_ct

    return out, gen_pullback


def _over_append(ts: tuple, gts: tuple, gargs: tuple) -> tuple[Any, Callable]:
    """``_over_fcall`` for ``lst.append(value)`` (a list being built, as in a list
    comprehension): appended once; each level's tangent of the list is its old
    tangent with the value's appended (packing, whose adjoint splits the last entry off)."""
    lst, value = gargs
    n = len(lst)
    before = list(lst)
    ṫs = _forward.split(ts[2], 3)  # outer tangents of (append's, the list's, the value's)
    y, pb = rcall(_item_writes.append, lst, value)
    ẏ = _forward.tan_list(*_forward.entries(gts[1], n, before), gts[2])
    y_o = _forward.tan_list(*_forward.entries(ts[3], n, before), ts[4])
    ẏ_o = _forward.tan_list(*_forward.entries(ṫs[1], n, before), ṫs[2])

    def unpacked(ct: Any) -> tuple:  # a list's tangent's cotangent -> (of the old, of v)
        if _is_zero(unthunk(ct)):
            return _Z, _Z
        c = entries(ct, n + 1, "a list's tangent")
        old = _Z if all(_is_zero(e) for e in c[:n]) else Tangent[list]._from_backing(c[:n])
        return old, c[n]

    def append_pullback(ct: Any) -> tuple:
        pair_ct, outer_ct = entries(ct, 2, "a forward-mode call pushed forward")
        ȳ, ẏ̄ = _pair(pair_ct)
        ȳ_o, ẏ̄_o = entries(outer_ct, 2, "the tangents of a forward-mode call")
        ȳ = unthunk(ȳ)
        cts = pb(ȳ) if not _is_zero(ȳ) else (_NO, _Z, _Z)
        l̇_ct, v̇_ct = unpacked(ẏ̄)
        ṫl_ct, ṫv_ct = unpacked(ȳ_o)
        ṫl̇_ct, ṫv̇_ct = unpacked(ẏ̄_o)
        t = _tangents_ct
        return (_Z, _Z, t((_Z, ṫl̇_ct, ṫv̇_ct)), ṫl_ct, ṫv_ct), (
            _NO,
            t((_Z, l̇_ct, v̇_ct)),
            cts[1],
            cts[2],
        )

    return ((y, ẏ), _forward.tan_tuple(y_o, ẏ_o)), append_pullback


def _over_apply(ts: tuple, gts: tuple, gargs: tuple) -> tuple[Any, Callable]:
    """``_over_fcall`` for ``fn(*a)`` (``_rules_containers.apply(fn, a, {})``, a call
    with ``*``): the call of ``fn`` on the entries of ``a``, each level's tangent of
    ``a`` split into its entries' (a linear map, its adjoint the packing)."""
    fn, a, _ = gargs
    a = tuple(a)
    n = len(a)
    ṫs = _forward.split(ts[2], 4)  # outer tangents of (apply's, fn's, a's, kwargs')
    ġfn, ġa = ts[3], ts[4]
    inner_gts = (gts[1], *_forward.entries(gts[2], n, a))
    inner_ṫs = _forward.tan_tuple(ṫs[1], *_forward.entries(ṫs[2], n, a))
    inner_ts = (_Z, ġfn, inner_ṫs, *_forward.entries(ġa, n, a))
    out, pb = _over_fcall(inner_ts, (fn, inner_gts, *a))

    def apply_pullback(ct: Any) -> tuple:
        ts_ct, a_ct = pb(ct)  # a_ct: (fn, its ts, *a)
        t = _tangents_ct
        gts_ct = entries(a_ct[1], n + 1, "tangents")
        ṫs_ct = entries(ts_ct[2], n + 1, "tangents")
        new_ts = (_Z, _Z, t((_Z, ṫs_ct[0], t(tuple(ṫs_ct[1:])), _Z)), ts_ct[1], t(ts_ct[3:]), _Z)
        return new_ts, (_NO, t((_Z, gts_ct[0], t(tuple(gts_ct[1:])), _Z)), a_ct[0], t(a_ct[2:]), _Z)

    return out, apply_pullback


def _over_vectorize(ts: tuple, v: Any, gts: tuple, gargs: tuple) -> tuple[Any, Callable]:
    """``_over_fcall`` for an ``np.vectorize`` object ``v``: as the call of
    ``ad.runtime.wrappers.vectorized_call`` (a loop of Python), ``v``'s tangents being its
    function's (field ``pyfunc``)."""
    pyfunc, shape, otypes = _wrappers.nested_call(v, gargs, None)
    n, m = len(gargs), len(gts)
    ġ, ṫs, ġargs = ts[1], _forward.split(ts[2], m), tuple(ts[3:])
    tan = _forward.tan_tuple

    def to_call(t: tuple) -> Any:  # tangents of v's (ṽ, ẋ...) -> of vectorized_call's
        return tan(_Z, field_ct(t[0], "pyfunc"), _Z, _Z, tan(*t[1:]))

    inner_ts = (_Z, _Z, to_call(ṫs), field_ct(ġ, "pyfunc"), _Z, _Z, tan(*ġargs))
    args2 = (_wrappers.vectorized_call, _forward.split(to_call(gts), 5))
    out, pb = _over_fcall(inner_ts, (*args2, pyfunc, shape, otypes, tuple(gargs)))

    def from_call(ct: Any) -> Any:  # the inverse map, on cotangents
        c = entries(ct, 5, "the tangents of np.vectorize's call")
        own = _wrappers.vectorize_tangent(v, c[1])
        return _tangents_ct((own, *entries(c[4], n, "tangents")))

    def vectorize_pullback(ct: Any) -> tuple:
        ts_ct, a_ct = pb(ct)  # a_ct: (vectorized_call, its ts, pyfunc, shape, otypes, args)
        ġ_ct = _wrappers.vectorize_tangent(v, ts_ct[3])
        new_ts = (_Z, ġ_ct, from_call(ts_ct[2]), *entries(ts_ct[6], n, "tangents"))
        own = _wrappers.vectorize_tangent(v, a_ct[2])
        return new_ts, (own, from_call(a_ct[1]), *entries(a_ct[5], n, "arguments"))

    return out, vectorize_pullback


def through_self(f: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``rrule`` of ``fcall(f, ts, *args)`` for ``f`` forward mode's own dispatch
    (``fcall``, ``fcall_pair``), a scalar fast path or ``jvp``: pullback as
    ``reverse_over_fcall._fcall_rrule``'s."""
    if f is _forward.fcall or f is fcall_pair or f is _forward.fcall_gen:
        out, pb = (_over_gen if f is _forward.fcall_gen else _over_fcall)(ts, args)

        def fcall_pullback(ct: Any) -> tuple:
            ts_ct, a_ct = pb(ct)
            return (_NO, _NO, _tangents_ct(ts_ct), *a_ct)

        return out, fcall_pullback
    if f in _FAST:
        op = _FAST[f]
        k = len(args) // 2  # (a, b, ȧ, ḃ) or (a, ȧ)
        vals, dots = args[:k], args[k:]
        inner_ts = (_Z, _Z, _forward.tan_tuple(_Z, *ts[1 + k :]), *ts[1 : 1 + k])
        out, pb = _over_fcall(inner_ts, (op, (_Z, *dots), *vals))

        def ffast_pullback(ct: Any) -> tuple:
            ts_ct, a_ct = pb(ct)  # a_ct: (op, its ts, *vals)
            dots_ct = entries(a_ct[1], k + 1, "tangents")[1:]
            ṫs_ct = entries(ts_ct[2], k + 1, "tangents")[1:]
            t_ct = (_Z, *ts_ct[3 : 3 + k], *ṫs_ct)
            return (_NO, _NO, _tangents_ct(t_ct), *a_ct[2:], *dots_ct)

        return out, ffast_pullback
    return _over_jvp(ts, args)


def _over_jvp(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``jvp(f, xs, ẋs)`` inside a pushforward: as ``fcall(f, (0, *ẋs), *xs)``."""
    f, xs, ẋs = args
    n = len(xs)
    user = _forward_over_jvp.user_tangents
    inner_ts = (
        _Z,
        ts[1],
        _forward.tan_tuple(_Z, *user(xs, ts[3])),
        *_unfold.split_ts(ts[2], n),
    )
    out, pb = _over_fcall(inner_ts, (f, (_Z, *user(xs, tuple(ẋs))), *xs))
    (y, ẏ), ṫ = out

    def jvp_pullback(ct: Any) -> tuple:
        ts_ct, a_ct = pb(ct)  # a_ct: (f, (0, *ẋs), *xs)
        t = _tangents_ct
        ẋs_ct = entries(a_ct[1], n + 1, "tangents")[1:]
        ṫs_ct = entries(ts_ct[2], n + 1, "tangents")[1:]
        jvp_ts = (_Z, ts_ct[1], t(tuple(ts_ct[3:])), t(tuple(ṫs_ct)))
        return (_NO, _NO, t(jvp_ts), a_ct[0], t(tuple(a_ct[2:])), t(tuple(ẋs_ct)))

    return ((y, _forward_api.tangent_out(y, ẏ)), ṫ), jvp_pullback


_FAST = {
    **{getattr(_forward_fast, f"ffast_{k}"): getattr(operator, k) for k in _unfold.BINARY},
    _forward_fast.ffast_neg: operator.neg,
}
SELF_RRULES.update(
    dict.fromkeys(
        [_forward.fcall, fcall_pair, _forward.fcall_gen, _forward_api.jvp, *_FAST],
        through_self,
    )
)


# --- loops in a pushforward, differentiated in reverse -------------------------------


@rrule.register(_forward.fiter, config=ADConfig)
def _(config: Any, it: Any, ṫ: Any) -> Any:
    """``fiter(it, ṫ)``: the pairs ``(element, tangent)`` of a loop in a pushforward
    (materialised: a zero tangent repeats without end)."""
    pairs = list(_forward.fiter(it, ṫ))
    n = len(pairs)
    src = unthunk(ṫ)

    def fiter_pullback(ct: Any) -> tuple:
        cts = [entries(c, 2, "an (element, tangent) pair") for c in entries(ct, n, "pairs")]
        it_ct = from_list_ct(it, [c[0] for c in cts]) if not isinstance(it, dict) else _Z
        t_cts = [c[1] for c in cts]
        if _unfold.zero(src) or all(_unfold.zero(c) for c in t_cts):
            return (_NO, it_ct, _Z)
        if isinstance(src, Tangent):
            return (_NO, it_ct, type(src)._from_backing(tuple(t_cts)))
        return (_NO, it_ct, from_list_ct(src, t_cts))

    return pairs, fiter_pullback
