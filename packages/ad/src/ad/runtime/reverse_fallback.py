"""What ``rcall`` does with a callable that has no rule: Python's calling conventions.

A bound method is its function called with its receiver (the method's cotangent
is the receiver's); a builtin's reflected operator runs the user class's dunder
(``dunders``); a ``functools.partial`` calls its function with its bound
arguments, whose cotangents make its tangent; a class builds its object
structurally (a dataclass, a namedtuple, a ``Tangent``) or by differentiating
its Python ``__init__``; a callable object differentiates its ``__call__``; a
wrapper (``lru_cache``, ``np.vectorize``) its function (``wrappers``). C code
and the standard library run as plain Python (``plain_calls``); anything else
is a ``NoRuleError`` naming the callable and the call site.

These call back into the dispatch through ``calls`` (``calls.rcall``), which
``reverse`` binds: nothing here imports it.

>>> import ad
>>> class Scale:
...     def __init__(self, k):
...         self.k = k
...     def __call__(self, x):
...         return self.k * x
>>> ad.gradient(lambda x: Scale(3.0)(x), 2.0)
(3.0,)
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

from ad.errors import NoRuleError
from ad.runtime import calls
from ad.runtime import dunders as _dunders
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import kw_ct
from ad.runtime.constructors import init_to_differentiate
from ad.runtime.library_code import library_class
from ad.runtime.reverse_functions import call_function
from ad.runtime.single_use import ONCE, handoff, new_token
from ad.runtime.tracebacks import call_site, function_name
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, rrule, unthunk

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_BuiltinType = types.BuiltinFunctionType
_ModuleType = types.ModuleType
_RULES = rrule.table._rules  # function -> rules; membership test is the cheap "has rules?"


def _hashable(f: Any) -> bool:
    try:
        hash(f)
    except TypeError:
        return False
    return True


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
        if f in _dunders.CONVERSIONS and not kwargs:  # float(obj): its own __float__
            out = _dunders.dispatch(f, args, _dunder_call(args))
            if out is not None:
                return out
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
        y, pb = calls.rcall(func, obj, *args)
    else:
        y, pb = calls.rcall_kw(func, (obj, *args), kwargs)

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
        y, pb = calls.rcall(method, *(args[i] for i in order))
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
    y, pb = calls.rcall_kw(p.func, (*p.args, *args), {**p.keywords, **(kwargs or {})})
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
    init = init_to_differentiate(cls)
    if init is not None:
        return _construct_with_init(cls, init, args, kwargs)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    else:
        name = f"the constructor of {cls.__module__}.{cls.__qualname__}"
        if library_class(cls):  # C code or the standard library's: plainly
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
