"""Reverse mode's dispatch, the hot path the generated code calls: ``rcall``.

``rcall(f, *args)`` returns ``(y, pullback)`` with ``pullback(ȳ) ->
(∂f, ∂arg1, ...)``; ``rcall_kw(f, args, kwargs)`` adds a final dict of
keyword cotangents. Dispatch order: an ``rrule`` (with ``ADConfig``, honouring
``opt_out``; cached per function and argument types, in a lean form from
``lean_rules`` where one applies, and evaluated from its partials for floats
and numpy scalars, ``scalar_paths``); a Python function's transformed source
(``reverse_functions``); bound methods, callable objects and dataclass/namedtuple
constructors structurally, library code as plain Python (``reverse_fallback``);
else an error naming the function and the call site.

A rule's result is checked here (a ``(value, pullback)`` pair, cotangents of the
arguments' shapes) unless the rule is this project's own.
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from typing import Any

from ad.errors import CotangentShapeError
from ad.runtime import calls
from ad.runtime.accumulate import acc, field_ct, fn_tangent, kw_ct, tuple_ct
from ad.runtime.checks import argument_write, unpack_error
from ad.runtime.config import ADConfig
from ad.runtime.keywords import keyword_reason, keywords_as_positions, maybe_differentiable
from ad.runtime.lean_rules import lean_rule as _lean_rule
from ad.runtime.reverse_fallback import _fallback_dispatch, _hashable
from ad.runtime.reverse_functions import call_function
from ad.runtime.scalar_paths import NUMPY_SCALARS as _NUMPY_SCALARS
from ad.runtime.scalar_paths import numpy_scalar_call as _numpy_scalar_call
from ad.runtime.scalar_paths import scalar_partials as _scalar_partials
from ad.runtime.single_use import ONCE as _ONCE
from ad.runtime.state import WRITES as _WRITES
from ad.runtime.state import Stateful as _Stateful
from ad.runtime.tracebacks import call_site, function_name
from ad.runtime.user_iterables import CONSUMERS, materialized_call, user_iterable
from rulescore import (
    AbstractThunk,
    AbstractZero,
    NoTangent,
    not_implemented,
    rrule,
)

__all__ = [
    "CONFIG",
    "ONCE",
    "acc",
    "argument_write",
    "field_ct",
    "fn_tangent",
    "kw_ct",
    "rcall",
    "rcall_masked",
    "rcall_kw",
    "rcall_tail",
    "tuple_ct",
    "unpack_error",
]

CONFIG = ADConfig()
_NO = NoTangent()
_FunctionType = types.FunctionType
_BuiltinType = types.BuiltinFunctionType
_ModuleType = types.ModuleType
_RULES = rrule.table._rules  # function -> rules; membership test is the cheap "has rules?"
_lookup = rrule.table.lookup
_ADConfigType = ADConfig
_float = float


# --- pullbacks called once: see ``single_use`` ---------------------------------------

ONCE = _ONCE


# --- dispatch ---------------------------------------------------------------


def rcall(f: Any, *args: Any) -> tuple[Any, Callable]:
    """``(f(*args), pullback)`` for one call in differentiated code."""
    tf = type(f)
    if tf is _FunctionType and f not in _RULES:
        return call_function(f, args, None, bool(f.__code__.co_freevars))
    if tf is _BuiltinType and args and type(args[0]) is _float:
        # math.sin and friends on floats: evaluate the scalar_rule's partials directly.
        partials = _scalar_partials(f, len(args))
        if partials is not None:
            out = _scalar_call(f, partials, args)
            if out is not None:
                return out
    elif tf is _BuiltinType and args and type(args[0]) in _NUMPY_SCALARS:
        out = _numpy_scalar_call(f, args)  # math.sin(np.float64): the same, as numpy's type
        if out is not None:
            return out
    n = len(args)
    if n == 2:
        key: tuple = (f, type(args[0]), type(args[1]))
    elif n == 1:
        key = (f, type(args[0]))
    else:
        key = (f, *map(type, args))
    try:
        impl = _DIRECT.get(key)
    except TypeError:  # an unhashable callable object
        impl = None
    if impl is not None:
        return impl(*args)  # a rule (or its lean form) whose results need no checks
    if tf in _STATIC_CALLABLES or (tf is _BuiltinType and type(f.__self__) is _ModuleType):
        # Module-level functions, ufuncs, classes, method descriptors: a fixed set,
        # so their dispatch is cached here by (f, argument types).
        try:
            hit = _RULE_CACHE[key]
        except KeyError:
            hit = _resolve_rule(f, args, key)
        if hit is not None:
            impl, rule = hit
            if rule is None:
                return impl(*args)
            return _checked(impl(*args), f, args, rule)
        return _fallback(f, args, None)
    try:
        has_rules = f in _RULES
    except TypeError:  # unhashable callable objects have no rules
        has_rules = False
    if has_rules:
        rule = _lookup(f, tuple(map(type, args)), _ADConfigType)
        if rule is not None:
            out = rule.impl(CONFIG, *args) if rule.takes_config else rule.impl(*args)
            if rule in _TRUSTED:
                return out
            return _checked(out, f, args, rule)
    return _fallback(f, args, None)


def rcall_masked(mask: int, f: Any, *args: Any) -> tuple[Any, Callable]:
    """``rcall`` for a call whose positional arguments at the set bits of ``mask``
    carry no derivative (constants, inactive names). A plain Python function is
    then transformed with those parameters inactive, so its adjoint neither
    computes nor keeps what only their cotangents need; their cotangents are
    zero. Anything else (a function that gained a rule, a ufunc) is ``rcall``."""
    if type(f) is _FunctionType and f not in _RULES:
        return call_function(f, args, None, bool(f.__code__.co_freevars), inactive=mask)
    return rcall(f, *args)


def rcall_tail(novalue: bool, mask: int, f: Any, *args: Any) -> tuple[Any, Callable]:
    """``rcall_masked`` for the call whose value the calling function returns and
    nothing else reads (``return g(x)``): when the caller was asked for no value
    (``novalue``, ``ad.gradient``'s), a Python function is asked for none either,
    and may return ``fused_regions.NOVALUE`` (see ``call_function``)."""
    if novalue and type(f) is _FunctionType and f not in _RULES:
        closure = bool(f.__code__.co_freevars)
        return call_function(f, args, None, closure, inactive=mask, novalue=True)
    return rcall_masked(mask, f, *args) if mask else rcall(f, *args)


def _resolve_rule(f: Any, args: tuple, key: tuple) -> Any:
    """Look up and cache ``(callable, rule-or-None-if-trusted)`` for this call's types
    (``key``: ``f`` and the types); a trusted one also goes to ``_DIRECT``.

    Bounded (``_DISPATCH_BOUND`` entries, then it starts again): a class made per
    call (``dataclasses.make_dataclass``) would otherwise stay alive in a key. A
    registration meanwhile (``clear_dispatch_cache``) drops what this resolved."""
    generation = _GENERATION[0]
    rule = _lookup(f, tuple(map(type, args)), _ADConfigType) if f in _RULES else None
    if f in CONSUMERS and any(map(user_iterable, args)):  # sorted(obj), zip(obj, xs)
        hit = (materialized_call(f), None)
    elif rule is None:
        hit = None
    else:
        impl = functools.partial(rule.impl, CONFIG) if rule.takes_config else rule.impl
        trusted = getattr(rule.impl, "__module__", "").startswith(_TRUSTED_MODULES)
        hit = (impl, None if trusted else rule)
        if trusted:
            lean = _lean_rule(f, tuple(map(type, args)), rule)
            if lean is not None:
                hit = (lean, None)
    if len(_RULE_CACHE) >= _DISPATCH_BOUND:
        _RULE_CACHE.clear()
        _DIRECT.clear()
    if hit is not None and hit[1] is None:
        _DIRECT[key] = hit[0]
    _RULE_CACHE[key] = hit
    if _GENERATION[0] != generation:  # a rule registered while this resolved: stale
        _RULE_CACHE.pop(key, None)
        _DIRECT.pop(key, None)
    return hit


def _static_callable_types() -> frozenset:
    kinds: set[type] = {_FunctionType, type, type(dict.items), type(object.__init__)}
    np = sys.modules.get("numpy")
    if np is not None:
        kinds |= {np.ufunc, type(np.sum), type(np.ndarray.sum)}
    return frozenset(kinds)


_RULE_CACHE: dict[tuple, Any] = {}
#: ``(f, *types)`` -> the callable computing ``(y, pullback)``, for the static
#: callables whose rule is trusted: ``rcall`` looks here first.
_DIRECT: dict[tuple, Callable] = {}
_STATIC_CALLABLES = _static_callable_types()
#: How many dispatches ``_RULE_CACHE`` keeps (a program's own are far fewer).
_DISPATCH_BOUND = 1024
#: Bumped by every ``clear_dispatch_cache``, before it clears: a dispatch resolved
#: across it is not kept (see ``_resolve_rule``; no lock on either path).
_GENERATION = [0]


def clear_dispatch_cache() -> None:
    """Forget every cached dispatch (each registration does it; tests that swap
    ``_lean_rule`` do too)."""
    _GENERATION[0] += 1
    _RULE_CACHE.clear()
    _DIRECT.clear()


rrule.table.listeners.append(clear_dispatch_cache)


def _scalar_call(f: Any, partials: Callable, args: tuple) -> Any:
    for a in args:
        if type(a) is not _float:
            return None
    y = f(*args)
    if type(y) is not _float:
        return None
    p = partials(*args, y)
    if len(args) == 1:
        if type(p) is tuple:
            (p,) = p
        if type(p) is not _float:
            return None
        return y, _ScalarPullback((p, f, args))
    if type(p) is not tuple or len(p) != len(args) or any(type(q) is not _float for q in p):
        return None
    return y, _ScalarPullbackN((p, f, args))


class _ScalarPullback(tuple):
    """``(p, f, args)``: the pullback of a one-argument scalar rule at floats, ``ȳ·p``
    with its partial ``p``. A tuple with ``__call__``, 80 bytes on the tape where a
    closure takes 270."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        if type(ȳ) is _float:
            return (_NO, ȳ * self[0])
        return _slow_scalar_pullback(self[1], self[2], ȳ)


class _ScalarPullbackN(tuple):
    """``(partials, f, args)``: as ``_ScalarPullback`` for several arguments."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        if type(ȳ) is _float:
            return (_NO, *(ȳ * q for q in self[0]))
        return _slow_scalar_pullback(self[1], self[2], ȳ)


def _slow_scalar_pullback(f: Any, args: tuple, ȳ: Any) -> tuple:
    """A cotangent that is not a plain float (a thunk, a complex): use the rule itself."""
    _y, pb = rrule(CONFIG, f, *args)
    return pb(ȳ)


def rcall_kw(f: Any, args: tuple, kwargs: dict) -> tuple[Any, Callable]:
    """``rcall`` for a call with keyword arguments; the pullback ends with a dict."""
    if type(f) is _FunctionType and f not in _RULES:
        return call_function(f, args, kwargs, bool(f.__code__.co_freevars))
    if f in _RULES if _hashable(f) else False:
        rule = _lookup(f, tuple(map(type, args)), _ADConfigType)
        if rule is not None:
            moved = keywords_as_positions(f, args, kwargs) if kwargs else None
            if moved is not None and _lookup(f, tuple(map(type, moved[0])), _ADConfigType):
                return _keywords_moved(f, len(args), *moved)
            if rule.takes_config:
                y, pb = _checked(rule.impl(CONFIG, *args, **kwargs), f, args)
            else:
                y, pb = _checked(rule.impl(*args, **kwargs), f, args)
            if getattr(rule.impl, "keyword_cotangents", False):
                return y, pb  # the rule itself appends a dict of keyword cotangents
            return y, _with_kw_cotangents(pb, f, kwargs)
    return _fallback(f, args, kwargs)


# Rules from this project's packages project their cotangents and are tested
# with rulestest: their results skip the per-call validation below.
_TRUSTED_MODULES = ("rules.", "ad.")
_TRUSTED: set[Any] = set()


def _checked(out: Any, f: Any, args: tuple, rule: Any = None) -> tuple[Any, Callable]:
    if type(out) is not tuple or len(out) != 2:
        raise CotangentShapeError(
            f"the rrule for {function_name(f)} returned {type(out).__name__}, not (value, pullback)"
        )
    if rule is not None and getattr(rule.impl, "__module__", "").startswith(_TRUSTED_MODULES):
        _TRUSTED.add(rule)
        return out
    np = sys.modules.get("numpy")
    if np is not None:
        nd = np.ndarray
        for a in args:
            if type(a) is nd:
                return out[0], _shape_checked(out[1], f, args)
    return out


def _shape_checked(pb: Callable, f: Any, args: tuple) -> Callable:
    """Wrap a rule's pullback so a cotangent of the wrong shape names the rule."""
    shapes = [getattr(a, "shape", None) if hasattr(a, "dtype") else None for a in args]

    def shape_checked_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        if type(cts) is tuple and len(cts) == len(args) + 1:
            for i, (shape, c) in enumerate(zip(shapes, cts[1:])):
                if shape is not None and not isinstance(c, (AbstractZero, AbstractThunk)):
                    got = getattr(c, "shape", ())
                    if got != shape:
                        raise CotangentShapeError(
                            f"the pullback of {function_name(f)} (called at {call_site()}) returned a cotangent "
                            f"of shape {got} for argument {i + 1}, whose shape is {shape}.\n"
                            "To fix: the rule must reduce broadcast dimensions (unbroadcast) "
                            "and project with rulescore.ProjectTo."
                        )
        return cts

    return shape_checked_pullback


def _keywords_moved(f: Any, n: int, args: tuple, kwargs: dict, names: tuple) -> tuple:
    """``rcall_kw`` of the call with keywords passed by position (``keywords``): the
    cotangents of the positions past the first ``n`` go back to their keywords."""
    y, pb = rcall_kw(f, args, kwargs)

    def keywords_moved_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        kw = dict(cts[-1])
        kw.update((k, c) for k, c in zip(names, cts[n + 1 : -1]) if k is not None)
        return (*cts[: n + 1], kw)

    return y, _Stateful(keywords_moved_pullback) if type(
        pb
    ) is _Stateful else keywords_moved_pullback


def _with_kw_cotangents(pb: Callable, f: Any, kwargs: dict) -> Callable:
    # Rules give keyword arguments no cotangent (ChainRules' convention). A
    # float or array passed by keyword may carry a derivative: it gets a
    # not-implemented tangent, which raises only if that derivative is used.
    kw_cts = {
        k: not_implemented(keyword_reason(f, [k], "a rule", call_site()))
        for k, v in kwargs.items()
        if maybe_differentiable(v)
    }

    def kw_pullback(ȳ: Any) -> tuple:
        return (*pb(ȳ), kw_cts)

    return _Stateful(kw_pullback) if type(pb) is _Stateful else kw_pullback  # must run too


def _fallback(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    n = _WRITES[0]
    y, pb = _fallback_dispatch(f, args, kwargs)
    if _WRITES[0] != n:  # user code wrote an object's field: see _state
        return y, _Stateful(pb)
    return y, pb


calls.bind(rcall=rcall, rcall_kw=rcall_kw)
