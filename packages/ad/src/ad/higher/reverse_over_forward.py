"""Nested differentiation: reverse mode over forward mode, and rules for ad's own API.

Second derivatives come from one composition, **reverse over forward**: the
reverse pass differentiates the pushforward that forward mode generates (and
the ``frule`` bodies it calls), so ``∇ₓ ⟨J(x), v⟩`` — the gradient of a
directional derivative — is an ordinary gradient. Everything nested is built
on it:

- ``gradient``/``withgradient`` called inside differentiated code get an
  ``rrule`` whose pullback maps ``ḡ`` to ``∇ ⟨∇f, ḡ⟩`` (a Hessian-vector
  product, including the derivative through ``f``'s captured variables), and
  an ``frule`` whose pushforward is the same product along ``ẋ``;
- ``jvp`` called inside differentiated code gets an ``rrule`` (its ``frule``,
  forward over forward, is in ``forward_over_forward``), ``withgradient`` an ``rrule``
  and an ``frule``;
- the vector-Jacobian-product kernel all of these run, ``reverse_over_forward``,
  has an ``rrule`` and an ``frule`` of its own, so a second derivative can be
  differentiated again (third order, and deeper);
- ``hessian`` is forward mode over ``gradient`` (one pushforward per column),
  ``hessian_reverse`` is reverse mode over it (one pullback per row).

The pieces: an ``rrule`` for ``fcall`` (forward mode's dispatch), which
differentiates whatever the dispatch runs — an ``frule``'s body, or the
generated pushforward of a Python function (``transform.source`` keeps the
trees of generated code for this); ``rrule``s for the other helpers that
generated pushforwards call; and linear ``rrule``s for the tangent plumbing
that ``frule`` bodies use (``unthunk``, zero tangents in arithmetic).

Each level keeps its own tangent variables in its own generated code, so one
level's perturbation cannot leak into another's (no "perturbation confusion").
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from ad.api import gradient as _api
from ad.api import jvp as _forward_api
from ad.errors import NoRuleError
from ad.higher import nested_partials as _nested_partials
from ad.higher.pushforward_kernels import kernel_for
from ad.runtime import checks as _runtime_checks
from ad.runtime import dunders as _dunders
from ad.runtime import forward as _forward
from ad.runtime import forward_arithmetic as _forward_fast
from ad.runtime import forward_rules as _forward_rules
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import rules_objects as _rules_objects
from ad.runtime import state as _state
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import acc
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, from_list_ct, np_module
from ad.runtime.reverse import (
    _python_init,
    call_function,
    call_site,
    field_ct,
    fn_tangent,
    rcall,
    rcall_kw,
)
from rulescore import (
    AbstractZero,
    NoTangent,
    NotImplementedTangent,
    Tangent,
    ZeroTangent,
    backing,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)
from rulescore._dispatch import RuleTable
from rulescore._projection import Projector
from rulescore.errors import NotImplementedTangentError

__all__ = ["directional", "fcall_pair", "reverse_over_forward", "weighted"]

_Z = ZeroTangent()
_NO = NoTangent()
_TupleT = Tangent[tuple]
_FunctionType = types.FunctionType
_MethodType = types.MethodType
CONFIG = ADConfig()
_RRULES = rrule.table._rules


def _unsupported(what: str, fix: str) -> NoRuleError:
    """The error for a call nested differentiation cannot follow, with the user's line
    that led to it (``user_site``)."""
    site = user_site()
    where = f" (at {site})" if site else ""
    return NoRuleError(f"nested differentiation: {what}{where}.\nTo fix: {fix}.")


def _own_dirs() -> tuple[str, ...]:
    """The directories of ad, rulescore and rules: code there is not the user's."""
    import rulescore

    ad_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    dirs = [ad_dir, os.path.dirname(os.path.realpath(rulescore.__file__ or ""))]
    rules = sys.modules.get("rules")
    if rules is not None and getattr(rules, "__file__", None):
        dirs.append(os.path.dirname(os.path.realpath(rules.__file__)))
    return tuple(d + os.sep for d in dirs)


def _library_file(filename: str, own: tuple[str, ...]) -> bool:
    if filename.startswith("<frozen ") or filename.startswith(own):
        return True
    path = os.path.realpath(filename)
    return (
        path.startswith(own)
        or f"{os.sep}site-packages{os.sep}" in path
        or f"{os.sep}dist-packages{os.sep}" in path
        or _plain_calls._in_stdlib(path)
    )


def user_site() -> str:
    """file:line of the innermost differentiated frame of the user's code. At depth,
    the frames being differentiated include rules' bodies, ad's own kernels and
    library source (numpy's Python functions): the line to name is the user's that
    led there, the innermost one outside ad, rulescore, rules, the standard library
    and installed packages; else the innermost differentiated frame."""
    own = _own_dirs()
    frame: Any = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name in ("_ad_fwd", "_ad_back") and not _library_file(code.co_filename, own):
            return f"{code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return call_site()


def _is_zero(x: Any) -> bool:
    return isinstance(x, AbstractZero)


def _pair(ct: Any) -> tuple[Any, Any]:
    """The cotangents of ``(y, ẏ)`` from the cotangent of the pair."""
    return entries(ct, 2, "the (value, tangent) pair of a forward-mode call")


def kw_entry(ct: Any, key: Any) -> Any:
    """The cotangent of ``d[key]`` from that of a dict ``d`` (zero where absent)."""
    ct = unthunk(ct)
    if _is_zero(ct):
        return _Z
    b = ct._backing if isinstance(ct, Tangent) else ct
    return b.get(key, _Z) if isinstance(b, dict) else _Z


def _tangents_ct(cts: tuple) -> Any:
    """The cotangent of a tuple of tangents, from its entries' cotangents."""
    if all(_is_zero(c) for c in cts):
        return _Z
    return _TupleT._from_backing(tuple(cts))


# --- the kernels nested differentiation differentiates -------------------------


def fcall_pair(f: Any, ts: tuple, *args: Any) -> tuple[Any, Any]:
    """``(f(*args), ẏ)``: forward mode's dispatch, as a function reverse mode can call."""
    return _forward.fcall(f, ts, *args)


def directional(f: Any, ts: tuple, *args: Any) -> Any:
    """The directional derivative of ``f`` at ``args`` along ``ts = (ḟ, ẋ1, ...)``.

    When ``f`` returns a tuple, its first entry's (as ``gradient`` differentiates).
    """
    y, ẏ = fcall_pair(f, ts, *args)
    if type(y) is tuple:
        ẏ = _forward.split(ẏ, len(y))[0]
    return ẏ


def tangent_of(f: Any, ts: tuple, *args: Any) -> Any:
    """The tangent of ``f(*args)`` along ``ts``: the kernel whose gradient is a
    second derivative along ``ts`` (``reverse_over_forward``'s ``rrule``)."""
    return fcall_pair(f, ts, *args)[1]


def weighted(f: Any, w: Any, ts: tuple, *args: Any) -> Any:
    """``w * y + ẏ``: ``withgradient``'s pullback differentiates it (value and gradient)."""
    y, ẏ = fcall_pair(f, ts, *args)
    if type(y) is tuple:
        ẏ = _forward.split(ẏ, len(y))[0]
        y = y[0]
    return w * y + ẏ


def reverse_over_forward(kernel: Callable, seed: Any, *args: Any) -> tuple:
    """The cotangents ``(∂kernel, ∂args...)`` of ``kernel(*args)`` for the output
    cotangent ``seed``, where ``kernel`` runs forward mode: a second derivative.
    (``nestlevel`` counts this frame as two levels of differentiation.)

    One reverse pass of its own (``ad.runtime.state``): a user object the pushforward
    writes is followed by identity, its fields' tangents too (``_through_setattr``),
    so a read through another name (the caller of a method that wrote ``self``)
    differentiates the write."""
    with _state.scope(over_forward=True):
        _, pb = rcall(kernel, *args)
        return pb(seed)


# --- reverse mode over forward mode's dispatch --------------------------------


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
    if f in SELF_RRULES and _forward._hashable(f):
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
        route = _rules_objects.read_route(*args, f is _rules_objects.getattr_object)
        if route is not None:  # user code (a property's getter...): differentiate it
            return _through_route(route, ts)
        p = _field_read_pass(f, args)
        if p is not None:  # a field of an object written in this pass: by identity
            return _through_field_read(f, p, ts, args)
    elif f is _state.follow:
        return _through_follow(ts, args)
    elif f is _rules_objects.setattr_ or f is _rules_objects.setattr_object:
        route = _rules_objects.write_route(*args, f is _rules_objects.setattr_object)
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
        and not dataclasses.is_dataclass(f)
        and not hasattr(f, "_fields")
        and f not in _forward._FRULES  # a class with an frule (np.vectorize): its rule
        and not _tangent_class(f)  # linear in its entries (below), not its __init__
    ):
        init = _python_init(f)
        if init is not None:
            return _through_init(f, init, ts, args)
    if (_forward._hashable(f) and f in _STRUCTURAL) or _tangent_class(f):
        return _through_linear(f, ts, args)
    if f is _rules_containers.apply:  # f(*args, **kwargs): the call itself
        return _through_apply(ts, args)
    if f is _rules_objects.append:
        return _through_append(ts, args)
    if f is _rules_objects.setitem and type(args[0]) in (list, dict):
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
    name = _forward._fname(f)
    if _plain_calls.library_callable(f):  # C code: run as plain Python
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


def _holds_tangents(f: Any, args: tuple) -> bool:
    """Whether the reverse pass holds field tangents (``_through_setattr``) of an
    argument or of the receiver of ``f``: a call with zero tangents along variables
    may still read them, or write over them, so it is pushed forward."""
    p = _state.current()
    if p is None or not p.held:
        return False
    held = p.held
    return id(getattr(f, "__self__", None)) in held or any(id(a) in held for a in args)


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
    name = _forward._fname(f)
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
    if moving and not python and not ruled and _plain_calls.library_callable(f):
        # C code called with keywords (a formatter in numpy's Python source): run as
        # plain Python, its derivative along its route, as forward mode runs it
        kw_ts_d = dict(zip(kwnames, kw_ts))
        out, plain_pb = _plain_calls.reverse_over_forward(f, ts, args, kwargs, kw_ts_d, name)

        def plain_kw_pullback(ct: Any) -> tuple:
            f_ct, ts_ct, args_ct, kw, kw_ts_ct = plain_pb(ct)
            kw_ts_cts = tuple(kw_ts_ct.get(k, _Z) for k in kwnames) if kw_ts_ct else (_Z,) * m
            return _fcall_gen_cts(f_ct, ts_ct, args_ct, kw or {}, kwnames, kw_ts_cts)

        return out, _state.keep_stateful(plain_pb, plain_kw_pullback)
    if not python and not all(_is_zero(t) for t in kw_ts):
        raise _unsupported(
            f"a keyword argument of {name} carries a derivative in forward mode, which "
            "reverse over forward does not follow into an frule",
            "pass it positionally",
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


def _through_append(ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``lst.append(value)`` (a list being built): append once, tangents beside it."""
    lst, value = args
    n = len(lst)
    es = _forward.entries(ts[1], n, lst)
    y, pb = rcall(_rules_objects.append, lst, value)
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
    y, pb = rcall(_rules_objects.setitem, obj, key, value)
    ẏ = _forward_rules.set_entry(obj, key, ts[1], ts[3])

    def setitem_pullback(ct: Any) -> tuple:
        ȳ, ẏ̄ = _pair(ct)
        cts = pb(ȳ) if not _is_zero(unthunk(ȳ)) else (_NO, _Z, _NO, _Z)
        tcts = pb(ẏ̄) if not _is_zero(unthunk(ẏ̄)) else (_NO, _Z, _NO, _Z)
        return (_NO, _NO, _tangents_ct((_Z, tcts[1], _Z, tcts[3])), cts[1], _NO, cts[3])

    return (y, ẏ), setitem_pullback


def _through_route(route: tuple, ts: tuple, write: bool = False) -> tuple[Any, Callable]:
    """An attribute read (``write``: write) that runs user code ``fn(*args)``
    (``ad.runtime.rules_objects.read_route``), the object at ``args[i]``."""
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
        return None  # a class attribute, a slot, a method: the frule's cases
    return p if not callable(value) else None


def _through_super_init(init: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """``super().__init__(...)`` (``ad.runtime.rules_objects.super_init``): the base
    ``__init__``'s pushforward on the instance (whose tangent is the super object's)."""
    inst = args[0].__self__
    out, pb = _pushforward_call(init, (_Z, *ts[1:]), (inst, *args[1:]), {}, as_init=True)

    def super_init_pullback(ct: Any) -> tuple:
        _, ts_ct, args_ct, _, _ = pb(ct)
        return (_NO, _NO, _tangents_ct((_Z, *ts_ct[1:])), *args_ct)

    return out, _state.keep_stateful(pb, super_init_pullback)


def _through_init(cls: type, init: Any, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    """A plain class's constructor: its ``__init__``'s pushforward on a new object."""
    obj = object.__new__(cls)
    out, pb = _pushforward_call(init, (_Z, _Z, *ts[1:]), (obj, *args), {}, as_init=True)

    def init_pullback(ct: Any) -> tuple:
        _, ts_ct, args_ct, _, _ = pb(ct)
        return (_NO, _NO, _tangents_ct((_Z, *ts_ct[2:])), *args_ct[1:])

    return out, _state.keep_stateful(pb, init_pullback)


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
            f"the frule for {_forward._fname(f)} declined these arguments, and reverse "
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
    if type(entry) is _plain_calls.PlainEntry:  # library code: run as plain Python
        name = _forward._fname(f)
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


def _through_pushforward(f: types.FunctionType, ts: tuple, args: tuple) -> tuple[Any, Callable]:
    out, pb = _pushforward_call(f, ts, args, {})

    def pushforward_pullback(ct: Any) -> tuple:
        f_ct, ts_ct, args_ct, _, _ = pb(ct)
        return (_NO, f_ct, _tangents_ct(ts_ct), *args_ct)

    return out, _state.keep_stateful(pb, pushforward_pullback)


def _closure_ct(gen_ct: Any, own: frozenset) -> Any:
    """The cotangent of a function from its generated pushforward's (same cells)."""
    gen_ct = unthunk(gen_ct)
    if _is_zero(gen_ct) or not isinstance(gen_ct, Tangent):
        return _Z
    b = gen_ct._backing
    fields = {k: v for k, v in b.items() if k in own and not _is_zero(v)}
    return Tangent[types.FunctionType]._from_backing(fields) if fields else _Z


rrule.register(_forward.fcall, config=ADConfig)(_fcall_rrule)


@rrule.register(fcall_pair, config=ADConfig)
def _(config: Any, f: Any, ts: tuple, *args: Any) -> Any:
    return _fcall_rrule(config, f, ts, *args)


# The kernels ``reverse_over_forward`` runs have rules of their own, so that the
# pushforward runs in the kernel's reverse pass (a kernel's body, differentiated as
# ad's own code, would run with no pass: ``ad.runtime.state.suspended``).


def _first_entry(y: Any, ẏ: Any) -> tuple[Any, Any, Callable]:
    """``(y[0], ẏ[0], to_pair_ct)`` when ``f`` returned a tuple (the value and the
    tangent the kernels use), else ``(y, ẏ, to_pair_ct)``; ``to_pair_ct(ȳ, ẏ̄)``
    is the cotangent of ``(y, ẏ)`` from those of the entries used."""
    if type(y) is not tuple:
        return y, ẏ, lambda ȳ, ẏ̄: _tangents_ct((ȳ, ẏ̄))
    n = len(y)
    parts, split_pb = rcall(_forward.split, ẏ, n)

    def to_pair_ct(ȳ: Any, ẏ̄: Any) -> Any:
        y_ct = _tangents_ct((ȳ, *([_Z] * (n - 1))))
        ẏ_ct = _Z if _is_zero(ẏ̄) else split_pb(_tangents_ct((ẏ̄, *([_Z] * (n - 1)))))[1]
        return _tangents_ct((y_ct, ẏ_ct))

    return y[0], parts[0], to_pair_ct


@rrule.register(directional, config=ADConfig)
def _(config: Any, f: Any, ts: tuple, *args: Any) -> Any:
    (y, ẏ), pb = _fcall_rrule(config, f, ts, *args)
    _, ẏ, to_pair_ct = _first_entry(y, ẏ)

    def directional_pullback(c̄: Any) -> tuple:
        return pb(to_pair_ct(_Z, c̄))

    return ẏ, _state.keep_stateful(pb, directional_pullback)


@rrule.register(tangent_of, config=ADConfig)
def _(config: Any, f: Any, ts: tuple, *args: Any) -> Any:
    (_, ẏ), pb = _fcall_rrule(config, f, ts, *args)

    def tangent_of_pullback(c̄: Any) -> tuple:
        return pb(_tangents_ct((_Z, c̄)))

    return ẏ, _state.keep_stateful(pb, tangent_of_pullback)


@rrule.register(weighted, config=ADConfig)
def _(config: Any, f: Any, w: Any, ts: tuple, *args: Any) -> Any:
    (y, ẏ), pb = _fcall_rrule(config, f, ts, *args)
    y, ẏ, to_pair_ct = _first_entry(y, ẏ)
    wy, mul_pb = rcall(operator.mul, w, y)
    out, add_pb = rcall(operator.add, wy, ẏ)

    def weighted_pullback(c̄: Any) -> tuple:
        _, wy_ct, ẏ̄ = add_pb(c̄)
        _, w_ct, ȳ = mul_pb(wy_ct)
        raw = pb(to_pair_ct(ȳ, ẏ̄))  # (fcall, f, ts, *args)
        return (_NO, raw[1], w_ct, *raw[2:])

    return out, _state.keep_stateful(pb, weighted_pullback)


def _ffast_rrule(op: Callable) -> Callable:
    def ffast_rrule(config: Any, a: Any, b: Any, ȧ: Any, ḃ: Any) -> Any:
        out, pb = _fcall_rrule(config, op, (_Z, ȧ, ḃ), a, b)

        def ffast_pullback(ct: Any) -> tuple:
            raw = pb(ct)  # (fcall, op, ts, a, b)
            ts_ct = entries(raw[2], 3, "tangents")
            return (_NO, raw[3], raw[4], ts_ct[1], ts_ct[2])

        return out, _state.keep_stateful(pb, ffast_pullback)

    return ffast_rrule


for _name in ("add", "sub", "mul", "truediv", "pow"):
    rrule.register(getattr(_forward_fast, f"ffast_{_name}"), config=ADConfig)(
        _ffast_rrule(getattr(operator, _name))
    )


@rrule.register(_forward_fast.ffast_neg, config=ADConfig)
def _(config: Any, a: Any, ȧ: Any) -> Any:
    out, pb = _fcall_rrule(config, operator.neg, (_Z, ȧ), a)

    def ffast_neg_pullback(ct: Any) -> tuple:
        raw = pb(ct)
        ts_ct = entries(raw[2], 2, "tangents")
        return (_NO, raw[3], ts_ct[1])

    return out, _state.keep_stateful(pb, ffast_neg_pullback)


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


@rrule.register(unthunk, config=ADConfig)
def _(config: Any, x: Any) -> Any:
    def unthunk_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ)

    return unthunk(x), unthunk_pullback


# --- ad's API inside differentiated code ------------------------------------------


def _as_tangent(ḡ: Any) -> Any:
    """A cotangent used as a tangent: the same vector, zeros kept symbolic."""
    ḡ = unthunk(ḡ)
    if ḡ is None:
        return _Z
    return ḡ


def _own_ct(bound_ct: Any, kwargs: dict) -> Any:
    """``f``'s cotangent from that of ``_api.bind_keywords(f, kwargs)`` (field
    ``f``); the keywords' own derivative is not followed: rcall_kw gives them a
    not-implemented cotangent, which raises only where it is used."""
    return field_ct(bound_ct, "f") if kwargs else bound_ct


@rrule.register(_api.gradient, config=ADConfig)
def _(config: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    g = _api.gradient(f, *args, **kwargs)
    n = len(args)
    bound = _api.bind_keywords(f, kwargs)

    def gradient_pullback(ḡ: Any) -> tuple:
        ḡs = tuple(_as_tangent(c) for c in entries(ḡ, n, "a gradient tuple"))
        if all(_is_zero(c) for c in ḡs):
            return (_NO, _Z, *([_Z] * n))
        raw = reverse_over_forward(directional, 1.0, bound, (_Z, *ḡs), *args)
        return (_NO, _own_ct(raw[1], kwargs), *raw[3:])  # raw: (directional, f, ts, *args)

    return g, gradient_pullback


def _gradient_frule(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    """Forward mode over ``gradient``: ``ġ = ∇ₓ ⟨Df(x), (ḟ, ẋ)⟩``, a Hessian-vector
    product (plus the derivative through ``f``'s captured variables along ``ḟ``)."""
    m = len(rest) // 2
    ts, (f, *args) = rest[:m], rest[m:]
    g = _api.gradient(f, *args, **kwargs)
    if all(_is_zero(unthunk(t)) for t in ts):
        return g, _Z
    if kwargs:  # the bound function's tangent: f's, in its field "f"
        f = _api.bind_keywords(f, kwargs)
        ts = (fn_tangent(("f",), (ts[0],)), *ts[1:])
    raw = reverse_over_forward(directional, 1.0, f, tuple(unthunk(t) for t in ts), *args)
    return g, _TupleT._from_backing(tuple(raw[3:]))  # raw: (directional, f, ts, *args)


frule.register(_api.gradient, config=ADConfig)(_gradient_frule)


def _withgradient_frule(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    """Forward mode over ``withgradient``: the value's tangent (a pushforward of ``f``)
    and the gradient's (a Hessian-vector product, as ``gradient``'s frule)."""
    m = len(rest) // 2
    ts, (f, *args) = rest[:m], rest[m:]
    out = _api.withgradient(f, *args, **kwargs)
    ts = tuple(unthunk(t) for t in ts)
    if all(_is_zero(t) for t in ts):
        return out, _Z
    if kwargs:  # the bound function's tangent: f's, in its field "f"
        f = _api.bind_keywords(f, kwargs)
        ts = (fn_tangent(("f",), (ts[0],)), *ts[1:])
    v̇ = fcall_pair(f, ts, *args)[1]
    raw = reverse_over_forward(directional, 1.0, f, ts, *args)
    ġ = _forward.tan_tuple(*raw[3:])  # raw: (directional, f, ts, *args)
    return out, Tangent[_api.WithGradient]._from_backing({"val": v̇, "grad": ġ})


frule.register(_api.withgradient, config=ADConfig)(_withgradient_frule)


@rrule.register(_api.withgradient, config=ADConfig)
def _(config: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    out = _api.withgradient(f, *args, **kwargs)
    n = len(args)
    bound = _api.bind_keywords(f, kwargs)

    def withgradient_pullback(ct: Any) -> tuple:
        v̄, ḡ = entries(ct, 2, "withgradient's (val, grad)")
        v̄ = unthunk(v̄)
        if type(out.val) is tuple:
            v̄ = entries(v̄, len(out.val), "the value tuple")[0]
        ḡs = tuple(_as_tangent(c) for c in entries(ḡ, n, "a gradient tuple"))
        if _is_zero(v̄) and all(_is_zero(c) for c in ḡs):
            return (_NO, _Z, *([_Z] * n))
        w = 0.0 if _is_zero(v̄) else v̄
        raw = reverse_over_forward(weighted, 1.0, bound, w, (_Z, *ḡs), *args)
        return (_NO, _own_ct(raw[1], kwargs), *raw[4:])  # raw: (weighted, f, w, ts, *args)

    return out, withgradient_pullback


@rrule.register(_forward_api.jvp, config=ADConfig)
def _(config: Any, f: Any, args: tuple, tangents: tuple, **kwargs: Any) -> Any:
    out = _forward_api.jvp(f, args, tangents, **kwargs)
    n = len(args)
    ts = tuple(_as_tangent(t) for t in tangents)
    bound = _api.bind_keywords(f, kwargs)

    def jvp_pullback(ct: Any) -> tuple:
        raw = reverse_over_forward(fcall_pair, ct, bound, (_Z, *ts), *args)
        # raw: (fcall_pair, f, ts, *args)
        ts_ct = entries(raw[2], n + 1, "tangents")
        f_ct = _own_ct(raw[1], kwargs)
        return (_NO, f_ct, _tangents_ct(raw[3 : 3 + n]), _tangents_ct(ts_ct[1:]))

    return out, jvp_pullback


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


@rrule.register(reverse_over_forward, config=ADConfig)
def _(config: Any, kernel: Callable, seed: Any, *args: Any) -> Any:
    """Reverse mode over ``vjp = (∂kernel, ∂args) = J(args)ᵀ seed``, itself reverse mode
    over forward mode: ``vjp`` is linear in ``seed``, so ``∂seed = J c̄`` (a pushforward
    of ``kernel``), and ``∂args = ∇ ⟨seed, J(args) c̄⟩`` (reverse over the pushforward).
    Both run ``kernel`` (forward mode) one level up: a third derivative, or deeper."""
    out = reverse_over_forward(kernel, seed, *args)
    n = len(args)

    def reverse_over_forward_pullback(c̄: Any) -> tuple:
        ts = tuple(_as_tangent(c) for c in entries(c̄, n + 1, "the cotangents of a pullback"))
        if all(_is_zero(t) for t in ts):
            return (_NO, _Z, _Z, *([_Z] * n))
        seed_ct = fcall_pair(kernel, ts, *args)[1]
        raw = reverse_over_forward(tangent_of, seed, kernel, ts, *args)
        return (_NO, raw[1], seed_ct, *raw[3:])  # raw: (tangent_of, kernel, ts, *args)

    return out, reverse_over_forward_pullback


def _reverse_over_forward_frule(config: Any, ṡ: Any, *rest: Any) -> Any:
    """Forward mode over ``vjp = J(args)ᵀ seed``: ``J(args)ᵀ ṡeed`` plus the derivative
    along the arguments' tangents, ``∇ ⟨seed, J(args)·(k̇, ȧrgs)⟩`` (reverse over the
    pushforward of the kernel): a third derivative, or deeper."""
    m = len(rest) // 2
    k̇, ṡeed, *ȧ = rest[:m]
    kernel, seed, *args = rest[m:]
    out = reverse_over_forward(kernel, seed, *args)
    n = len(args)
    parts = []
    if not _is_zero(unthunk(ṡeed)):
        parts.append(reverse_over_forward(kernel, unthunk(ṡeed), *args))
    ts = (unthunk(k̇), *(unthunk(a) for a in ȧ))
    if not all(_is_zero(t) for t in ts):
        raw = reverse_over_forward(tangent_of, seed, kernel, ts, *args)
        parts.append((raw[1], *raw[3:]))  # raw: (tangent_of, kernel, ts, *args)
    if not parts:
        return out, _Z
    total = parts[0] if len(parts) == 1 else tuple(map(acc, *parts))
    return out, _forward.tan_tuple(*(total[i] for i in range(n + 1)))


frule.register(reverse_over_forward, config=ADConfig)(_reverse_over_forward_frule)


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
