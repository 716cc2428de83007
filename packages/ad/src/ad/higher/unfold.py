"""Unfolding a forward-mode call into the program it runs, one level up.

Three levels deep, forward over forward meets ``fcall`` (or ``jvp``, or a
fast path) inside the pushforward it differentiates. ``unfold(op, ts, args,
kwargs, kw_ts)`` rewrites the forward-mode call of ``op`` as a plain call
``op2(*args2, **kwargs2)`` that returns ``(y, ẏ)``, with ``tmap``, the linear
map from the tangents of the call's parts to those of ``op2``'s: a Python
function's generated pushforward (``nested_pushforward``), an ``frule``'s body,
a linear map (``linear_call``: the call itself, the same map on every level's
tangents), a bound method (its function, the receiver first), a partial,
``np.vectorize``, library code run as plain Python, or ad's own dispatch one
level up (``SELF``: ``fcall``, ``fcall_gen``, ``apply``; ``forward_over_jvp``
and ``forward_over_plumbing`` add the rest), unfolded in turn with the maps
composed. So every depth meets the same rule again.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

from ad.higher import nested_partials as _nested_partials
from ad.higher.keyword_tangents import keyword_tangent, positional
from ad.higher.nested_pushforward import nested_pushforward
from ad.higher.reverse_over_rules import _STRUCTURAL
from ad.higher.unsupported import _unsupported
from ad.runtime import forward as _forward
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import field_ct, fn_tangent
from ad.runtime.config import ADConfig
from ad.runtime.library_code import library_callable
from ad.runtime.nested_kernels import fcall_pair
from ad.runtime.tracebacks import function_name
from rulescore import AbstractZero, Projector, Tangent, ZeroTangent, non_differentiable, unthunk

__all__ = ["linear_call", "unfold"]

_Z = ZeroTangent()
_FunctionType = types.FunctionType
_MethodType = types.MethodType
CONFIG = ADConfig()


def _zero(ṫ: Any) -> bool:
    return ṫ is None or ṫ.__class__ in _forward._ZEROS or isinstance(unthunk(ṫ), AbstractZero)


#: Functions linear in their arguments with a Jacobian that does not depend on
#: them (selection and packing): each level's tangents go through the same map.
LINEAR: set[Any] = set(_STRUCTURAL) | {fn_tangent, field_ct}

#: forward mode's dispatch: ``fcall(g, ts, *args)`` of a linear ``g`` is linear in
#: ``(ts, args)`` with a constant Jacobian too, at any depth (``linear_call``)
_DISPATCH = (_forward.fcall, fcall_pair)


def linear_call(op: Any, args: tuple) -> bool:
    """Whether ``op(*args)`` is linear with a constant Jacobian: a function of
    ``LINEAR``, a projector, or forward mode's dispatch of one (``fcall(g, ts,
    *gargs)`` for such a ``g``, however deep), so that every level's tangents go
    through the same map and no level reads the map's rule as source."""
    while True:
        if isinstance(op, Projector) or (isinstance(op, type) and issubclass(op, Tangent)):
            return True  # a tangent built in a rule's body is linear in its entries
        if not _forward._hashable(op):
            return False
        if op in LINEAR:
            return True
        if op is _rules_containers.apply and len(args) == 3 and not args[2]:
            op, args = args[0], tuple(args[1])  # fn(*args)
            continue
        if op not in _DISPATCH or len(args) < 2:
            return False
        op, args = args[0], args[2:]


_SELF: dict[Any, Callable] = {}


def unfold(op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """The program the forward-mode call ``call_with(op, ts, args, kwargs, kw_ts)`` runs,
    as a plain call: ``(op2, args2, kwargs2, tmap)`` with ``op2(*args2, **kwargs2)``
    returning ``(y, ẏ)``; ``tmap(ȯp, ṫs, ȧ, k̇w, k̇w_ts) -> (ts2, kw_ts2)`` maps tangents
    of the call's parts to tangents of ``op2``'s (a linear map, the same at every level)."""
    tf = type(op)
    if not kwargs and linear_call(op, args):
        # Packing and selection, at any depth: the call itself, pushed forward by
        # fcall's frule (the same map on every level's tangents), never its rule's body.
        def linear_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return (_Z, ȯp, _forward.tan_tuple(*ṫs), *ȧ), {}

        return _forward.fcall, (op, ts, *args), {}, linear_tmap
    if keyword_tangent(op, args, kwargs):  # Tangent[P](a=ȧ) in a rule's body: by position
        op2, args2, tail, split = positional(op, kwargs, kw_ts)

        def kw_tangent_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return (_Z, _Z, _forward.tan_tuple(_Z, *split(k̇w_ts)), *split(k̇w)), {}

        return _forward.fcall, (op2, (_Z, *tail), *args2), {}, kw_tangent_tmap
    if _forward._hashable(op) and op in _SELF:  # ad's own dispatch, one level up
        return _SELF[op](ts, args, kwargs, kw_ts)
    if op is functools.partial or _nested_partials.is_partial(op):
        return _unfold_partial(op, ts, args, kwargs, kw_ts)
    func, owner = _method_parts(op)
    if func is not None:
        # (each branch names its inner map apart: reverse mode reads these maps as
        # source, where a name assigned twice is refused; see _over_pushforward)
        op2, args2, kwargs2, func_tmap = unfold(
            func, (_Z, ts[0], *ts[1:]), (owner, *args), kwargs, kw_ts
        )

        def method_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return func_tmap(_Z, (_Z, ṫs[0], *ṫs[1:]), (ȯp, *ȧ), k̇w, k̇w_ts)

        return op2, args2, kwargs2, method_tmap
    if tf is _FunctionType and op not in _forward._FRULES:
        return _unfold_python(op, ts, args, kwargs, kw_ts)
    if _forward._hashable(op) and op in _forward._FRULES:
        rule = _forward._lookup(op, tuple(map(type, args)), ADConfig)
        if rule is not None:
            return _unfold_frule(rule, op, ts, args, kwargs, kw_ts)
    if _wrappers.is_vectorized(op):
        return _unfold_vectorize(op, ts, args, kwargs, kw_ts)
    call = next((k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(call, _FunctionType):  # a callable object: its __call__, op the receiver
        op2, args2, kwargs2, call_map = unfold(
            call, (_Z, ts[0], *ts[1:]), (op, *args), kwargs, kw_ts
        )

        def call_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return call_map(_Z, (_Z, ṫs[0], *ṫs[1:]), (ȯp, *ȧ), k̇w, k̇w_ts)

        return op2, args2, kwargs2, call_tmap
    if library_callable(op):
        return _unfold_plain(op, args, kwargs)
    if isinstance(op, type):
        raise _unsupported(
            f"a {op.__name__} object is constructed under forward over forward mode (ad.jvp "
            "inside ad.jvp), which does not follow the fields a constructor writes",
            "take this derivative with reverse mode on one of the levels (ad.hessian, "
            "ad.hvp, ad.jvp over ad.gradient or ad.gradient over ad.jvp follow such "
            f"objects), or build the {op.__name__} outside the function differentiated twice",
        )
    raise _unsupported(
        f"cannot push forward the forward-mode call of {function_name(op)} again (forward "
        "over forward supports Python functions, functions with an frule, and methods)",
        "call it through a Python function, or register an frule for it",
    )


def _unfold_partial(op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """Building a partial (as ``make_partial``, packing) or calling one (the call it
    makes, its tangents split into its parts'): see ``nested_partials``."""
    if op is functools.partial:
        args2, ts2 = _nested_partials.constructor_call(ts, args, kwargs, kw_ts)

        def partial_ctor_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            ȧ2 = _nested_partials.constructor_call((_Z, *ȧ), args, kwargs, k̇w)[1]
            ṫs2 = _nested_partials.constructor_call(ṫs, args, kwargs, k̇w_ts)[1]
            return (_Z, _Z, _forward.tan_tuple(*ṫs2), *ȧ2[1:]), {}

        return _forward.fcall, (_nested_partials.make_partial, ts2, *args2), {}, partial_ctor_tmap
    p = op
    func, ts2, args2, kwargs2, kw_ts2 = _nested_partials.unwrap(p, ts, args, kwargs, kw_ts)
    op2, args3, kwargs3, func_tmap = unfold(func, ts2, args2, kwargs2, kw_ts2)
    own = tuple(kwargs)

    def partial_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ȯf, ȧb, k̇wb = _nested_partials.split(p, ȯp)
        ṫf, ṫb, ṫkw = _nested_partials.split(p, ṫs[0])
        k̇w2 = {**k̇wb, **{k: k̇w.get(k, _Z) for k in own}}
        k̇w_ts2 = {**ṫkw, **{k: k̇w_ts.get(k, _Z) for k in own}}
        return func_tmap(ȯf, (ṫf, *ṫb, *ṫs[1:]), (*ȧb, *ȧ), k̇w2, k̇w_ts2)

    return op2, args3, kwargs3, partial_tmap


def constant_pair(y: Any) -> tuple:
    """``(y, 0)``: the forward-mode call of library code whose result carries no
    derivative, as a program of its own (``_unfold_plain``)."""
    return y, _Z


non_differentiable(constant_pair)


def _unfold_plain(op: Any, args: tuple, kwargs: dict) -> tuple:
    """Library code (C code, the standard library: ``ad.runtime.plain_calls``) at any depth: run
    as plain Python, as first-order modes run it. A result that carries no derivative
    (a string, an int...) is a constant at every level; any other is refused with
    first order's error (``ad.runtime.plain_calls.run`` raises it), unless its derivative is
    one of its arguments', which forward over forward does not follow past here."""
    name = function_name(op)
    y, route = _plain_calls.run(op, args, kwargs or None, name, True)
    if route is not None:
        raise _unsupported(
            f"{name} is library code run as plain Python whose result passes an argument "
            "through; forward over forward over forward does not follow it",
            "call it outside the differentiated function, or register an frule for it",
        )

    def constant_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        return (_Z, _Z), {}

    return constant_pair, (y,), {}, constant_tmap


def _unfold_vectorize(v: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``np.vectorize``'s call as ``ad.runtime.wrappers.vectorized_call``, a loop of Python (the
    function's tangent is ``v``'s field ``pyfunc``)."""
    pyfunc, shape, otypes = _wrappers.nested_call(v, args, kwargs)
    inner_ts = (_Z, field_ct(ts[0], "pyfunc"), _Z, _Z, _forward.tan_tuple(*ts[1:]))
    call_args = (pyfunc, shape, otypes, tuple(args))
    op2, args2, kwargs2, tmap = unfold(_wrappers.vectorized_call, inner_ts, call_args, {}, {})

    def vectorize_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ṫs2 = (_Z, field_ct(ṫs[0], "pyfunc"), _Z, _Z, _forward.tan_tuple(*ṫs[1:]))
        ȧ2 = (field_ct(ȯp, "pyfunc"), _Z, _Z, _forward.tan_tuple(*ȧ))
        return tmap(_Z, ṫs2, ȧ2, {}, {})

    return op2, args2, kwargs2, vectorize_tmap


def _method_parts(op: Any) -> tuple[Any, Any]:
    """``(function, receiver)`` of a bound method (a Python method, or a library
    type's method with an frule: ``x.std``); ``(None, None)`` for anything else, a
    bound method with rules of its own (``scipy.stats.norm.pdf``) included."""
    if _forward._hashable(op) and op in _forward._FRULES:
        return None, None
    if type(op) is _MethodType:
        return op.__func__, op.__self__
    owner = getattr(op, "__self__", None)
    if type(op) is types.BuiltinFunctionType and owner is not None:
        if not isinstance(owner, types.ModuleType):
            unbound = getattr(type(owner), op.__name__, None)
            if unbound is not None and _forward._hashable(unbound) and unbound in _forward._FRULES:
                return unbound, owner
    return None, None


def _unfold_python(f: types.FunctionType, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict):
    """A Python function: its pushforward (whose closure's tangent is ``f``'s: the
    generated function shares ``f``'s cells)."""
    closure_active = bool(f.__code__.co_freevars) and not _zero(ts[0])
    gen, spec, dt, df = nested_pushforward(f, closure_active)
    n = len(args)
    inner_dt = _forward._param_tangents(spec, n, ts[1:], kwargs, kw_ts)
    kwargs2 = {**kwargs, dt: inner_dt, df: ts[0]}

    def python_tmap(ḟ: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        outer_dt = _forward._param_tangents(spec, n, ṫs[1:], kwargs, k̇w_ts)
        kw = {k: k̇w.get(k, _Z) for k in kwargs}
        return (ḟ, *ȧ), {**kw, dt: _forward.tan_tuple(*outer_dt), df: ṫs[0]}

    return gen, args, kwargs2, python_tmap


def _unfold_frule(rule: Any, op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict):
    """A function with an frule: the rule's body (its captured variables, the function
    it was made for and its partials, are constants). Keyword arguments that carry a
    derivative go where forward mode's dispatch sends them: to their positions
    (``keyword_positions``), or to a rule that takes their tangents (``keyword_tangents``)."""
    if any(not _zero(t) for t in kw_ts.values()):
        moved = _forward.keyword_positions(op, args, kwargs, kw_ts)
        if moved is not None:
            return _unfold_moved_keywords(op, ts, args, kwargs, kw_ts, moved)
        if getattr(rule.impl, "keyword_tangents", False):
            return _unfold_keyword_tangents(rule.impl, ts, args, kwargs, kw_ts)
        raise _unsupported(
            f"a keyword argument of {function_name(op)} carries a derivative, which its "
            "frule does not follow (it cannot be passed by position: keyword-only)",
            "compute that argument's contribution outside the call, or call a Python "
            "function without a rule",
        )
    numpy = _forward._is_numpy_function(op)
    if numpy:
        ts = _forward._array_like_tangents(ts, args)
    head = (CONFIG,) if rule.takes_config else ()
    zhead = (_Z,) * len(head)
    impl = rule.impl

    def frule_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        if numpy:
            ṫs = _forward._array_like_tangents(ṫs, args)
        kw = {k: k̇w.get(k, _Z) for k in kwargs}
        return (_Z, *zhead, *ṫs, *ȧ), kw

    return impl, (*head, *ts, *args), dict(kwargs), frule_tmap


def _moved(names: tuple, k̇w: dict) -> tuple:
    """The tangents of the keywords moved to positions ``names`` (``None``: a default)."""
    out = []
    for k in names:
        out.append(k̇w.get(k, _Z) if k is not None else _Z)
    return tuple(out)


def _unfold_moved_keywords(op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict, moved):
    """``op(*args, **kwargs)`` as forward mode calls it, its keywords ``moved`` to positions."""
    args2, kwargs2, names = moved
    kw_ts2 = {k: kw_ts.get(k, _Z) for k in kwargs2}
    op2, a2, k2, inner_tmap = unfold(op, (*ts, *_moved(names, kw_ts)), args2, kwargs2, kw_ts2)

    def moved_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        left_kw = {k: k̇w.get(k, _Z) for k in kwargs2}
        left_kw_ts = {k: k̇w_ts.get(k, _Z) for k in kwargs2}
        ṫs2 = (*ṫs, *_moved(names, k̇w_ts))
        return inner_tmap(ȯp, ṫs2, (*ȧ, *_moved(names, k̇w)), left_kw, left_kw_ts)

    return op2, a2, k2, moved_tmap


def _unfold_keyword_tangents(impl: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict):
    """An frule that takes its keywords' tangents, a dict before its own arguments
    (``keyword_tangents``: ``dict(a=x)``, ``sorted(xs, key=...)``), as forward mode calls it."""
    keys = tuple(kw_ts)

    def keyword_tangents_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        k̇d = _forward.tan_dict(keys, tuple(k̇w_ts.get(k, _Z) for k in keys))
        return (_Z, _Z, k̇d, *ṫs, *ȧ), {k: k̇w.get(k, _Z) for k in kwargs}

    return impl, (CONFIG, dict(kw_ts), *ts, *args), dict(kwargs), keyword_tangents_tmap


def _split_ts(ṫ: Any, n: int) -> tuple:
    """The outer tangents of a tuple of ``n`` inner tangents.

    No shortcut on a zero ``ṫ``: the tangent maps that use this are linear, and
    reverse mode takes cotangents back through them by running their source at
    one point (``over_pushforward._over_unfolded``), where a symbolic zero must
    still pass its entries' cotangents on (``split``'s rule does)."""
    ṫ = unthunk(ṫ)
    if ṫ is None:
        return (_Z,) * n
    return tuple(_forward.split(ṫ, n))


def _unfold_fcall(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``fcall(g, gts, *gargs)`` pushed forward along ``ts``: it runs ``g``'s unfolded
    program ``op2`` in forward mode, with the tangents ``tmap`` gives; so unfold that
    call in turn, the tangent maps composed."""
    g, gts, *gargs = args
    m = len(gts)

    def parts(t: tuple) -> tuple:  # tangents of (fcall, g, gts, *gargs) -> of g's call
        return t[1], _split_ts(t[2], m), tuple(t[3:]), {}, {}

    return _unfold_twice((g, tuple(gts), tuple(gargs), {}, {}), parts, ts)


def _unfold_twice(call: tuple, parts: Callable, ts: tuple) -> tuple:
    """Unfold a forward-mode kernel's inner ``call`` ``(g, gts, gargs, gkw, gkw_ts)``,
    then the program it unfolds to, along ``ts`` (the kernel's own argument
    tangents, which ``parts`` maps to those of ``call``); the tangent maps composed."""
    op2, args2, kwargs2, tmap = unfold(*call)

    def to_op2(t: tuple) -> tuple:
        return tmap(*parts(t))

    ts2, kw_ts2 = to_op2(ts)
    op3, args3, kwargs3, tmap3 = unfold(op2, ts2, args2, kwargs2, kw_ts2)

    def composed_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ȧ2, k̇w2 = to_op2((_Z, *ȧ))
        ṫs2, k̇w_ts2 = to_op2(ṫs)
        return tmap3(ȧ2[0], ṫs2, ȧ2[1:], k̇w2, k̇w_ts2)

    return op3, args3, kwargs3, composed_tmap


def _gen_parts(t: tuple, n: int, kwnames: tuple) -> tuple:
    """Tangents of ``fcall_gen``'s arguments ``(f, ḟ, args, arg_ts, stars, kwnames,
    kwvalues, kw_ts)`` (``t[0]``: its own) as those of the call it makes:
    ``(of f, of (ḟ, *arg_ts), of args, of kwvalues, of kw_ts)``."""
    m = len(kwnames)
    ṫs = (t[2], *_split_ts(t[4], n))
    k̇w = dict(zip(kwnames, _split_ts(t[7], m)))
    k̇w_ts = dict(zip(kwnames, _split_ts(t[8], m)))
    return t[1], ṫs, _split_ts(t[3], n), k̇w, k̇w_ts


def _gen_call(args: tuple) -> tuple:
    f, ḟ, fargs, arg_ts, stars, kwnames, kwvalues, kw_ts = args
    if stars is not None or None in kwnames:
        raise _unsupported(
            f"the forward-mode call of {function_name(f)} passes *args or **kwargs, which "
            "forward over forward does not follow",
            "pass the arguments one by one",
        )
    kwargs = dict(zip(kwnames, kwvalues))
    return f, (ḟ, *arg_ts), tuple(fargs), kwargs, dict(zip(kwnames, kw_ts)), tuple(kwnames)


def _unfold_fcall_gen(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``fcall_gen(...)`` pushed forward: as ``_unfold_fcall``, keywords included."""
    g, gts, gargs, gkw, gkw_ts, kwnames = _gen_call(args)
    n = len(gargs)
    return _unfold_twice((g, gts, gargs, gkw, gkw_ts), lambda t: _gen_parts(t, n, kwnames), ts)


_SELF[_forward.fcall_gen] = _unfold_fcall_gen


for _kernel in (_forward.fcall, fcall_pair):
    _SELF[_kernel] = _unfold_fcall


def _unfold_apply(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``apply(fn, args, kwargs)`` (a call with ``*args``/``**kwargs``): ``fn``'s call."""
    fn, a, kw = args[0], tuple(args[1]), dict(args[2])
    n = len(a)

    def parts(t: tuple) -> tuple:  # tangents of (apply, fn, a, kw) -> of fn's call
        pos = (t[1], *_forward.entries(t[2], n, a))
        return pos, {k: _forward.mapping_entry(t[3], k) for k in kw}

    inner_ts, inner_kw_ts = parts(ts)
    op2, args2, kwargs2, tmap = unfold(fn, inner_ts, a, kw, inner_kw_ts)

    def apply_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ȧ_pos, ȧ_kw = parts((_Z, *ȧ))
        ṫ_pos, ṫ_kw = parts(ṫs)
        return tmap(ȧ_pos[0], ṫ_pos, ȧ_pos[1:], ȧ_kw, ṫ_kw)

    return op2, args2, kwargs2, apply_tmap


_SELF[_rules_containers.apply] = _unfold_apply


#: the binary operators with a scalar fast path (``ad.runtime.forward_arithmetic``)
BINARY = ("add", "sub", "mul", "truediv", "pow")

# For the modules that register the rest of forward over forward's rules
# (``forward_over_plumbing``, ``forward_over_jvp``) and reverse over it.
SELF = _SELF
zero = _zero
split_ts = _split_ts
unfold_fcall = _unfold_fcall
