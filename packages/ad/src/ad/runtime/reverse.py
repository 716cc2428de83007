"""The hot path the generated code calls: dispatch, accumulation, call mapping.

``rcall(f, *args)`` returns ``(y, pullback)`` with ``pullback(ȳ) ->
(∂f, ∂arg1, ...)``; ``rcall_kw(f, args, kwargs)`` adds a final dict of
keyword cotangents. Dispatch order: an ``rrule`` (with ``ADConfig``, honouring
``opt_out``); a Python function's transformed source; bound methods, callable
objects and dataclass/namedtuple constructors structurally; else an error
naming the function and the call site.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
from collections.abc import Callable
from typing import Any

from ad.errors import CotangentShapeError, NoRuleError, NoSourceError
from ad.runtime import calls
from ad.runtime import dunders as _dunders
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import acc, field_ct, fn_tangent, kw_ct, tuple_ct
from ad.runtime.checks import argument_write, unpack_error
from ad.runtime.config import ADConfig
from ad.runtime.keywords import keyword_reason, keywords_as_positions, maybe_differentiable
from ad.runtime.lean_rules import NUMPY_SCALARS as _NUMPY_SCALARS
from ad.runtime.lean_rules import lean_rule as _lean_rule
from ad.runtime.lean_rules import numpy_scalar_call as _numpy_scalar_call
from ad.runtime.lean_rules import scalar_partials as _scalar_partials
from ad.runtime.single_use import ONCE as _ONCE
from ad.runtime.single_use import handoff, new_token
from ad.runtime.state import WRITES as _WRITES
from ad.runtime.state import Stateful as _Stateful
from ad.runtime.state import internal as _internal
from ad.runtime.state import suspended as _suspended
from ad.runtime.tracebacks import call_site, function_name
from rulescore import (
    AbstractThunk,
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    Tangent,
    ZeroTangent,
    not_implemented,
    rrule,
    unthunk,
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
    "tuple_ct",
    "unpack_error",
]

CONFIG = ADConfig()
_Z = ZeroTangent()
_NO = NoTangent()
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_BuiltinType = types.BuiltinFunctionType
_ModuleType = types.ModuleType
_RULES = rrule.table._rules  # function -> rules; membership test is the cheap "has rules?"
_lookup = rrule.table.lookup
_ADConfigType = ADConfig
_float = float
_InplaceableThunk = InplaceableThunk
try:
    import numpy as _numpy

    _ndarray: Any = _numpy.ndarray
except ImportError:  # pragma: no cover - ad depends on numpy
    _ndarray = None


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


def _resolve_rule(f: Any, args: tuple, key: tuple) -> Any:
    """Look up and cache ``(callable, rule-or-None-if-trusted)`` for this call's types
    (``key``: ``f`` and the types); a trusted one also goes to ``_DIRECT``.

    Bounded (``_DISPATCH_BOUND`` entries, then it starts again): a class made per
    call (``dataclasses.make_dataclass``) would otherwise stay alive in a key. A
    registration meanwhile (``clear_dispatch_cache``) drops what this resolved."""
    generation = _GENERATION[0]
    rule = _lookup(f, tuple(map(type, args)), _ADConfigType) if f in _RULES else None
    if rule is None:
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


def _hashable(f: Any) -> bool:
    try:
        hash(f)
    except TypeError:
        return False
    return True


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

    return y, keywords_moved_pullback


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

    return kw_pullback


def _fallback(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    n = _WRITES[0]
    y, pb = _fallback_dispatch(f, args, kwargs)
    if _WRITES[0] != n:  # user code wrote an object's field: see _state
        return y, _Stateful(pb)
    return y, pb


def _fallback_dispatch(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    tf = type(f)
    if tf is _FunctionType:
        return call_function(f, args, kwargs, bool(f.__code__.co_freevars))
    if tf is _MethodType:
        return _call_bound(f.__func__, f.__self__, args, kwargs)
    if tf is _BuiltinType:
        owner = f.__self__
        if owner is not None and not isinstance(owner, _ModuleType):
            unbound = getattr(type(owner), f.__name__, None)
            if unbound is not None and _hashable(unbound) and unbound in _RULES:
                return _call_bound(unbound, owner, args, kwargs)
            name = f"{type(owner).__module__}.{type(owner).__qualname__}.{f.__name__}"
            return _plain_calls.reverse_call(f, args, kwargs, name)  # library code: plain
        out = None if kwargs else _dunders.dispatch(f, args, _dunder_call(args))
        if out is not None:
            return out
        return _plain_calls.reverse_call(f, args, kwargs, function_name(f))
    if isinstance(f, type):
        return _construct(f, args, kwargs)
    if tf is functools.partial:
        return _call_partial(f, args, kwargs)
    wrapped = _wrappers.reverse(f, args, kwargs)  # lru_cache, np.vectorize...
    if wrapped is not None:
        return wrapped
    call = tf.__dict__.get("__call__") or next(
        (k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None
    )
    if isinstance(call, _FunctionType):  # a callable object: differentiate __call__
        return _call_bound(call, f, args, kwargs)
    return _plain_calls.reverse_call(f, args, kwargs, function_name(f))  # C code: run it plainly


def _call_bound(func: Any, obj: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """Call ``func(obj, *args)``; the method's own cotangent is ``obj``'s."""
    if kwargs is None:
        y, pb = rcall(func, obj, *args)
    else:
        y, pb = rcall_kw(func, (obj, *args), kwargs)

    def method_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        cts = pb(ȳ)
        return cts[1:]

    return y, method_pullback


def _dunder_call(args: tuple) -> Callable:
    """``dunders.dispatch``'s ``call``: differentiate ``method`` on ``args`` taken
    in ``order``; cotangents come back in the operator's argument order."""

    def call(method: Any, order: tuple) -> tuple[Any, Callable]:
        y, pb = rcall(method, *(args[i] for i in order))
        if order[0] == 0:
            return y, pb

        def reflected_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
            if ONCE.expect is not None:
                handoff(pb, _once)
            df, db, da = pb(ȳ)
            return df, da, db

        return y, reflected_pullback

    return call


def _call_partial(p: functools.partial, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """Call a partial; its tangent holds the cotangents of its bound arguments."""
    nb = len(p.args)
    y, pb = rcall_kw(p.func, (*p.args, *args), {**p.keywords, **(kwargs or {})})
    n = len(args)

    def partial_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        cts = pb(ȳ)
        kw = cts[-1]
        bound = cts[1 : 1 + nb]
        fields = {}
        if not isinstance(cts[0], AbstractZero):
            fields["func"] = cts[0]
        if any(not isinstance(c, AbstractZero) for c in bound):
            fields["args"] = bound
        bound_kw = {k: kw_ct(kw, k) for k in p.keywords}
        if any(not isinstance(c, AbstractZero) for c in bound_kw.values()):
            fields["keywords"] = bound_kw
        df = Tangent[functools.partial]._from_backing(fields) if fields else _Z
        out = (df, *cts[1 + nb : 1 + nb + n])
        if kwargs is not None:
            return (*out, {k: kw_ct(kw, k) for k in kwargs})
        return out

    return y, partial_pullback


def _construct(cls: type, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    if issubclass(cls, Tangent):
        return _construct_tangent(cls, args, kwargs)
    kwargs = kwargs or {}
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    else:
        init = _python_init(cls)
        if init is not None:
            return _construct_with_init(cls, init, args, kwargs)
        name = f"the constructor of {cls.__module__}.{cls.__qualname__}"
        if _plain_calls.library_class(cls):  # C code or the standard library's: plainly
            return _plain_calls.reverse_call(cls, args, kwargs or None, name)
        raise _no_rule(
            name,
            cls,
            extra="Dataclasses and namedtuples are differentiated structurally; for other "
            "classes register an rrule for the class, or build the object outside the "
            "differentiated function and pass it in.",
        )
    y = cls(*args, **kwargs)
    n = len(args)

    def constructor_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            cts = (_Z,) * n
            kw = {k: _Z for k in kwargs}
        else:
            if isinstance(ȳ, Tangent):
                get = ȳ.__getitem__
            elif type(ȳ) is tuple or type(ȳ) is list:  # a namedtuple's, given positionally
                get = dict(zip(names, ȳ)).__getitem__
            else:
                get = functools.partial(getattr, ȳ)
            cts = tuple(get(names[i]) for i in range(n))
            kw = {k: get(k) for k in kwargs}
        if kwargs:
            return (_NO, *cts, kw)
        return (_NO, *cts)

    return y, constructor_pullback


def _construct_tangent(cls: type, args: tuple, keywords: dict | None) -> tuple[Any, Callable]:
    """``Tangent[P](...)`` in differentiated code (rule bodies, under nested
    differentiation): a tangent is a vector, built linearly from its entries.
    Called with keywords (``rcall_kw``, even an empty dict), the pullback ends
    with their cotangents."""
    kwargs = keywords or {}
    y = cls(*args, **kwargs)
    n = len(args)

    def tangent_constructor_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            cts: tuple = (_Z,) * n
            kw = {k: _Z for k in kwargs}
        else:
            b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
            if n == 1 and isinstance(args[0], dict):  # Tangent[dict](mapping, **more)
                given = args[0]
                cts = (Tangent[dict]._from_backing({k: b.get(k, _Z) for k in given}),)
                kw = {k: b.get(k, _Z) for k in kwargs}
            elif isinstance(b, dict):
                cts = tuple(b.get(i, _Z) for i in range(n))
                kw = {k: b.get(k, _Z) for k in kwargs}
            else:
                cts = tuple(b[i] for i in range(n))
                kw = {k: _Z for k in kwargs}
        return (_NO, *cts, kw) if keywords is not None else (_NO, *cts)

    return y, tangent_constructor_pullback


def _python_init(cls: type) -> Any:
    """``cls.__init__`` when it is Python code and ``__new__`` is object's, else None."""
    if cls.__new__ is not object.__new__:
        return None
    init = cls.__init__
    return init if type(init) is _FunctionType else None


def _construct_with_init(cls: type, init: Any, args: tuple, kwargs: dict | None) -> tuple:
    """Build a plain object by differentiating its ``__init__`` as a function of
    its arguments whose output is the finished object."""
    obj = object.__new__(cls)
    closure = bool(init.__code__.co_freevars)
    y, pb = call_function(init, (obj, *args), kwargs or None, closure, as_init=True)
    n = len(args)

    def init_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        cts = pb(ȳ)
        out = (_NO, *cts[2 : 2 + n])
        return (*out, cts[2 + n]) if kwargs else out

    return y, init_pullback


def _no_rule(name: str, f: Any, extra: str = "") -> NoRuleError:
    site = call_site()
    return NoRuleError(
        f"no rule to differentiate {name}{f' (called at {site})' if site else ''}: it has no "
        "rrule and no Python source to transform.\n"
        + (
            extra
            or "To fix: register an rrule for it with rulescore (see rulescore's README), "
            "or wrap the call in ad.ignore_derivatives if no gradient should flow through it."
        )
    )


# --- transformed Python functions ----------------------------------------------


def call_function(
    f: types.FunctionType,
    args: tuple,
    kwargs: dict | None,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    novalue: bool = False,
) -> tuple[Any, Callable]:
    """Run the transformed primal of ``f``; map its pullback to the call's arguments.

    ``inactive``: a bit mask of positional arguments that carry no derivative
    (see ``rcall_masked``). ``novalue``: the caller (``ad.gradient``) needs no
    value; a primal that can skip it returns ``fused_regions.NOVALUE`` instead."""
    transform = _TRANSFORM[0] if _TRANSFORM else _import_transform()
    try:
        entry = transform.transformed(f, closure_active, as_init, inactive)
    except NoSourceError:
        if as_init or not hasattr(f, "__wrapped__"):
            raise
        return _wrappers.reverse_wrapper(f, args, kwargs)  # a wrapper made by exec...
    fwd = entry.instantiate(f)
    n = _WRITES[0]
    if _internal(f.__code__):  # a rule differentiated (second order): see _state
        with _suspended():
            y, back = fwd(*args, **(kwargs or {}))
    elif kwargs:
        y, back = fwd(*args, **kwargs)
    elif novalue and entry.elides:
        y, back = fwd(*args, _ad_nv=True)  # transform._nodes.NO_VALUE
    else:
        y, back = fwd(*args)
    if entry.guards:  # helpers inlined: still the functions their names are?
        transform.check_guards_after(entry.guards, f)
    if kwargs is not None or not entry.simple or len(args) != entry.n_positional:
        back = _map_pullback(back, entry, len(args), kwargs)
    if _WRITES[0] != n:  # the function wrote an object's field: see _state
        return y, _Stateful(back)
    return y, back


_TRANSFORM: list = []  # the transform package, imported on first use (it imports this module)


def _import_transform() -> Any:
    from ad import transform

    _TRANSFORM.append(transform)
    return transform


def _map_pullback(back: Callable, entry: Any, n_args: int, kwargs: dict | None) -> Callable:
    spec = entry.spec
    pos = spec.positional
    n_bound = min(n_args, len(pos))
    if kwargs is None and spec.vararg and tuple(spec.all_names) == (*pos, spec.vararg):
        return _varargs_pullback(back, len(pos), n_args)

    def mapped_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(back, _once)
        raw = back(ȳ)
        by_name = dict(zip(spec.all_names, raw[1:]))
        out = [raw[0]]
        out.extend(by_name[pos[i]] for i in range(n_bound))
        if n_args > n_bound:
            extra = by_name[spec.vararg]
            if isinstance(extra, AbstractZero):
                out.extend([_Z] * (n_args - n_bound))
            else:
                out.extend(extra[i] for i in range(n_args - n_bound))
        if kwargs is not None:
            kw = {}
            rest = by_name.get(spec.kwarg, _Z) if spec.kwarg else _Z
            for k in kwargs:
                if k in by_name and k != spec.vararg and k != spec.kwarg:
                    kw[k] = by_name[k]
                else:
                    kw[k] = kw_ct(rest, k)
            out.append(kw)
        return tuple(out)

    return mapped_pullback


def _varargs_pullback(back: Callable, n_pos: int, n_args: int) -> Callable:
    """``_map_pullback`` for ``def f(a, b, *rest)`` called with ``n_args`` positional
    arguments (at least ``n_pos``): the cotangent of ``rest`` spread out."""
    head = n_pos + 1

    def varargs_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(back, _once)
        raw = back(ȳ)
        extra = raw[head]
        if type(extra) is tuple and len(extra) == n_args - n_pos:
            return raw[:head] + extra
        if isinstance(extra, AbstractZero):
            return raw[:head] + (_Z,) * (n_args - n_pos)
        return raw[:head] + tuple(extra[i] for i in range(n_args - n_pos))

    return varargs_pullback


calls.bind(rcall=rcall, rcall_kw=rcall_kw)
