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

from rulescore import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    not_implemented,
    rrule,
    unthunk,
)
from rulescore._thunks import AbstractThunk

from ._config import ADConfig
from .errors import CotangentShapeError, NoRuleError

__all__ = ["CONFIG", "acc", "rcall", "rcall_kw"]

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


# --- accumulation -----------------------------------------------------------


def acc(a: Any, b: Any) -> Any:
    """``a + b`` for cotangents: zeros are free, containers add entry by entry.

    Never mutates ``a`` or ``b``: a pullback may hand the same object to two
    inputs. Thunks stay lazy when added to a zero.
    """
    if type(a) is float and type(b) is float:  # scalar code: the common case
        return a + b
    if isinstance(b, AbstractZero):
        return a
    if isinstance(a, AbstractZero):
        return b
    if isinstance(a, AbstractThunk):
        a = a.unthunk()
    if isinstance(b, AbstractThunk):
        b = b.unthunk()
    ta = type(a)
    if ta is list or ta is tuple:
        if type(b) is not ta:
            if isinstance(b, Tangent):
                return b + a
            raise CotangentShapeError(
                f"cannot add cotangents of types {ta.__name__} and {type(b).__name__}"
            )
        if len(a) != len(b):
            raise CotangentShapeError(
                f"cannot add {ta.__name__} cotangents of lengths {len(a)} and {len(b)}"
            )
        return ta(acc(x, y) for x, y in zip(a, b))
    if ta is dict:
        out = dict(a)
        for k, v in b.items():
            out[k] = acc(out[k], v) if k in out else v
        return out
    return a + b


def tuple_ct(*cts: Any) -> Any:
    """The cotangent of a tuple built from its entries' cotangents."""
    return cts


def kw_ct(kw: Any, name: str) -> Any:
    """The cotangent of one keyword argument from a dict (or dict tangent) of them."""
    if isinstance(kw, Tangent):
        kw = kw._backing
    if isinstance(kw, dict):
        return kw.get(name, _Z)
    return _Z


def field_ct(t: Any, name: str) -> Any:
    """The cotangent of a captured variable from a function's tangent."""
    if isinstance(t, AbstractZero):
        return t
    if isinstance(t, Tangent):
        return t._backing.get(name, _Z) if isinstance(t._backing, dict) else _Z
    if isinstance(t, dict):
        return t.get(name, _Z)
    return _Z


def fn_tangent(names: tuple, cts: tuple) -> Any:
    """The tangent of a closure: its captured variables' cotangents."""
    fields = {n: c for n, c in zip(names, cts) if not isinstance(c, AbstractZero)}
    if not fields:
        return _Z
    return Tangent[types.FunctionType]._from_backing(fields)


def bad_cotangents(cts: Any, n: int, f: Any, site: str) -> None:
    raise CotangentShapeError(
        f"the pullback of {_fname(f)} (called at {site}) returned "
        f"{len(cts) if isinstance(cts, tuple) else type(cts).__name__} cotangents; expected {n} "
        "(one for the function, then one per positional argument).\n"
        "To fix: make the rule's pullback return (∂f, ∂arg1, ..., ∂argN)."
    )


# --- dispatch ---------------------------------------------------------------


def rcall(f: Any, *args: Any) -> tuple[Any, Callable]:
    """``(f(*args), pullback)`` for one call in differentiated code."""
    if type(f) is _FunctionType and f not in _RULES:
        return call_function(f, args, None, bool(f.__code__.co_freevars))
    if f in _RULES if _hashable(f) else False:
        rule = _lookup(f, tuple(map(type, args)), _ADConfigType)
        if rule is not None:
            if rule.takes_config:
                return _checked(rule.impl(CONFIG, *args), f, args)
            return _checked(rule.impl(*args), f, args)
    return _fallback(f, args, None)


def rcall_kw(f: Any, args: tuple, kwargs: dict) -> tuple[Any, Callable]:
    """``rcall`` for a call with keyword arguments; the pullback ends with a dict."""
    if type(f) is _FunctionType and f not in _RULES:
        return call_function(f, args, kwargs, bool(f.__code__.co_freevars))
    if f in _RULES if _hashable(f) else False:
        rule = _lookup(f, tuple(map(type, args)), _ADConfigType)
        if rule is not None:
            if rule.takes_config:
                y, pb = _checked(rule.impl(CONFIG, *args, **kwargs), f, args)
            else:
                y, pb = _checked(rule.impl(*args, **kwargs), f, args)
            return y, _with_kw_cotangents(pb, f, kwargs)
    return _fallback(f, args, kwargs)


def _hashable(f: Any) -> bool:
    try:
        hash(f)
    except TypeError:
        return False
    return True


def _checked(out: Any, f: Any, args: tuple) -> tuple[Any, Callable]:
    if type(out) is not tuple or len(out) != 2:
        raise CotangentShapeError(
            f"the rrule for {_fname(f)} returned {type(out).__name__}, not (value, pullback)"
        )
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
    site = call_site()

    def shape_checked_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        if type(cts) is tuple and len(cts) == len(args) + 1:
            for i, (shape, c) in enumerate(zip(shapes, cts[1:])):
                if shape is not None and not isinstance(c, (AbstractZero, AbstractThunk)):
                    got = getattr(c, "shape", ())
                    if got != shape:
                        raise CotangentShapeError(
                            f"the pullback of {_fname(f)} (called at {site}) returned a cotangent "
                            f"of shape {got} for argument {i + 1}, whose shape is {shape}.\n"
                            "To fix: the rule must reduce broadcast dimensions (unbroadcast) "
                            "and project with rulescore.ProjectTo."
                        )
        return cts

    return shape_checked_pullback


def _with_kw_cotangents(pb: Callable, f: Any, kwargs: dict) -> Callable:
    # Rules give keyword arguments no cotangent (ChainRules' convention). A
    # float or array passed by keyword may carry a derivative: it gets a
    # not-implemented tangent, which raises only if that derivative is used.
    kw_cts = {
        k: not_implemented(
            f"{_fname(f)} has a rule, and rules give no derivative for keyword "
            f"argument {k!r}; pass it positionally or write the call in plain Python"
        )
        for k, v in kwargs.items()
        if _maybe_differentiable(v)
    }

    def kw_pullback(ȳ: Any) -> tuple:
        return (*pb(ȳ), kw_cts)

    return kw_pullback


def _maybe_differentiable(v: Any) -> bool:
    if isinstance(v, (float, complex)):
        return True
    np = sys.modules.get("numpy")
    return (
        np is not None
        and isinstance(v, (np.ndarray, np.inexact))
        and getattr(v, "dtype", None) is not None
        and v.dtype.kind in "fc"
    )


def _fallback(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
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
            raise _no_rule(f"{type(owner).__module__}.{type(owner).__qualname__}.{f.__name__}", f)
        raise _no_rule(_fname(f), f)
    if isinstance(f, type):
        return _construct(f, args, kwargs)
    if tf is functools.partial:
        return _call_partial(f, args, kwargs)
    call = tf.__dict__.get("__call__") or next(
        (k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None
    )
    if isinstance(call, _FunctionType):  # a callable object: differentiate __call__
        return _call_bound(call, f, args, kwargs)
    raise _no_rule(_fname(f), f)


def _call_bound(func: Any, obj: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """Call ``func(obj, *args)``; the method's own cotangent is ``obj``'s."""
    if kwargs is None:
        y, pb = rcall(func, obj, *args)
    else:
        y, pb = rcall_kw(func, (obj, *args), kwargs)

    def method_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        return cts[1:]

    return y, method_pullback


def _call_partial(p: functools.partial, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """Call a partial; its tangent holds the cotangents of its bound arguments."""
    nb = len(p.args)
    y, pb = rcall_kw(p.func, (*p.args, *args), {**p.keywords, **(kwargs or {})})
    n = len(args)

    def partial_pullback(ȳ: Any) -> tuple:
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
    kwargs = kwargs or {}
    y = cls(*args, **kwargs)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    else:
        raise _no_rule(
            f"the constructor of {cls.__module__}.{cls.__qualname__}",
            cls,
            extra="Dataclasses and namedtuples are differentiated structurally; for other "
            "classes register an rrule for the class, or build the object outside the "
            "differentiated function and pass it in.",
        )
    n = len(args)

    def constructor_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            cts = (_Z,) * n
            kw = {k: _Z for k in kwargs}
        else:
            get = (lambda k: ȳ[k]) if isinstance(ȳ, Tangent) else (lambda k: getattr(ȳ, k))
            cts = tuple(get(names[i]) for i in range(n))
            kw = {k: get(k) for k in kwargs}
        if kwargs:
            return (_NO, *cts, kw)
        return (_NO, *cts)

    return y, constructor_pullback


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


def call_site() -> str:
    """file:line of the innermost differentiated (generated) frame."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_ad_fwd":
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _fname(f: Any) -> str:
    mod = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    if mod in (None, "builtins"):
        return name
    return f"{mod}.{name}"


# --- transformed Python functions ----------------------------------------------


def call_function(
    f: types.FunctionType, args: tuple, kwargs: dict | None, closure_active: bool
) -> tuple[Any, Callable]:
    """Run the transformed primal of ``f``; map its pullback to the call's arguments."""
    from .transform import transformed

    entry = transformed(f, closure_active)
    fwd = entry.instantiate(f)
    if kwargs:
        y, back = fwd(*args, **kwargs)
    else:
        y, back = fwd(*args)
    if kwargs is None and entry.simple and len(args) == entry.n_positional:
        return y, back
    return y, _map_pullback(back, entry, len(args), kwargs)


def _map_pullback(back: Callable, entry: Any, n_args: int, kwargs: dict | None) -> Callable:
    spec = entry.spec
    pos = spec.positional
    n_bound = min(n_args, len(pos))

    def mapped_pullback(ȳ: Any) -> tuple:
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
