"""The forward-mode hot path the generated pushforward calls: dispatch and tangent plumbing.

``fcall(f, (ḟ, ẋ1, ...), x1, ...)`` returns ``(y, ẏ)``. When every tangent is
a zero, ``f`` just runs (no derivative can flow) and ``ẏ`` is ``ZeroTangent()``.
Otherwise dispatch mirrors reverse mode's ``rcall``: an ``frule`` (with
``ADConfig``, honouring ``opt_out``); a Python function's transformed source
(cached per code object); bound methods, callable objects, ``functools.partial``
and dataclass/namedtuple constructors structurally; else a ``NoRuleError``
naming the function and the call site.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any

from ad.errors import CotangentShapeError, NoRuleError, NoSourceError
from ad.runtime import calls
from ad.runtime import dunders as _dunders
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import field_ct, fn_tangent
from ad.runtime.config import ADConfig
from ad.runtime.constructors import init_to_differentiate
from ad.runtime.keywords import keyword_reason, keywords_as_positions, maybe_differentiable
from ad.runtime.library_code import library_class
from ad.runtime.reverse import call_site
from ad.runtime.reverse_fallback import _hashable
from ad.runtime.rules_containers import unpack
from ad.runtime.state import TANGENT_PASSES as _TANGENT_PASSES
from ad.runtime.state import internal as _internal
from ad.runtime.state import suspended as _suspended
from ad.runtime.tangents import (
    entries,
    fiter,
    is_zero,
    mapping_entry,
    split,
    tan_dict,
    tan_list,
    tan_tuple,
)
from ad.runtime.tracebacks import function_name
from ad.runtime.user_iterables import CONSUMERS, materialized_fcall, through_fiter, user_iterable
from rulescore import (
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    is_duck_array,
    not_implemented,
)

__all__ = ["FORWARD_NAMES", "call_with", "dispatch", "fcall", "fcall_gen", "keyword_positions"]

CONFIG = ADConfig()
_Z = ZeroTangent()
_NO = NoTangent()
_ZEROS = frozenset([ZeroTangent, NoTangent])
_FunctionType = types.FunctionType
_MethodType = types.MethodType
_BuiltinType = types.BuiltinFunctionType
_ModuleType = types.ModuleType
_FRULES = frule.table._rules  # function -> rules; membership is the cheap "has frules?"
_lookup = frule.table.lookup
_TupleT = Tangent[tuple]
_ListT = Tangent[list]
_DictT = Tangent[dict]

#: Helpers that must go through their frule even with zero tangents, so the
#: primal behaves as in reverse mode (``x += y`` on an array is out of place,
#: item assignment into an array is an error). Filled in by ``forward_rules``.
NO_SHORTCUT: set[Any] = set()


# --- dispatch -------------------------------------------------------------------


def fcall(f: Any, ts: tuple, *args: Any) -> tuple[Any, Any]:
    """``(f(*args), ẏ)`` for one call in forward-differentiated code."""
    for ṫ in ts:
        if ṫ.__class__ not in _ZEROS:
            break
    else:
        if (f.__class__ is not _FunctionType or f not in NO_SHORTCUT) and not _TANGENT_PASSES[0]:
            return f(*args), _Z
    return dispatch(f, ts, args, None, None)


def fcall_gen(
    f: Any,
    ḟ: Any,
    args: tuple,
    arg_ts: tuple,
    stars: tuple | None,
    kwnames: tuple,
    kwvalues: tuple,
    kw_ts: tuple,
) -> tuple[Any, Any]:
    """``fcall`` for a call with keywords, ``*xs`` or ``**d``: flatten, then dispatch."""
    if stars is not None:
        flat: list = []
        flat_ts: list = []
        for a, ȧ, star in zip(args, arg_ts, stars):
            if star:
                items = list(a)
                flat.extend(items)
                flat_ts.extend(entries(ȧ, len(items), a))
            else:
                flat.append(a)
                flat_ts.append(ȧ)
        args, arg_ts = tuple(flat), tuple(flat_ts)
    kwargs: dict = {}
    kwt: dict = {}
    for k, v, v̇ in zip(kwnames, kwvalues, kw_ts):
        if k is None:  # **d
            for key in v:
                kwargs[key] = v[key]
                kwt[key] = mapping_entry(v̇, key)
        else:
            kwargs[k] = v
            kwt[k] = v̇
    return call_with(f, (ḟ, *arg_ts), args, kwargs, kwt)


def call_with(f: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple[Any, Any]:
    """``fcall`` with keyword arguments and their tangents."""
    if all(is_zero(x) for x in ts) and all(is_zero(x) for x in kw_ts.values()):
        if (f.__class__ is not _FunctionType or f not in NO_SHORTCUT) and not _TANGENT_PASSES[0]:
            return f(*args, **kwargs), _Z
    return dispatch(f, ts, args, kwargs or None, kw_ts)


def dispatch(f: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None) -> Any:
    """Forward-differentiate ``f(*args, **kwargs)``: rule, source, or structure."""
    if f.__class__ is _FunctionType and f not in _FRULES:
        return call_function(f, ts, args, kwargs, kw_ts)
    if _hashable(f) and f in _FRULES:
        if f in CONSUMERS and any(map(user_iterable, args)):  # sorted(obj), zip(obj, xs)
            return materialized_fcall(f, ts, args)
        rule = _lookup(f, tuple(map(type, args)), ADConfig)
        if rule is not None:
            if _is_numpy_function(f):
                ts = _array_like_tangents(ts, args)
            kw = kwargs or {}
            if kw_ts:
                moved = keyword_positions(f, args, kw, kw_ts)
                if moved is not None:
                    args2, kwargs2, names = moved
                    ts2 = (*ts, *(kw_ts.get(k, _Z) if k else _Z for k in names))
                    return dispatch(f, ts2, args2, kwargs2, {k: kw_ts[k] for k in kwargs2})
            if kw_ts and getattr(rule.impl, "keyword_tangents", False):
                # the rule takes the keywords' tangents itself (a dict before its own
                # arguments), as an rrule marked keyword_cotangents gives cotangents
                return rule.impl(CONFIG, kw_ts, *ts, *args, **kw)
            if rule.takes_config:
                out = rule.impl(CONFIG, *ts, *args, **kw)
            else:
                out = rule.impl(*ts, *args, **kw)
            if out is not None:  # a rule may decline (e.g. zip over an iterator)
                if type(out) is not tuple or len(out) != 2:
                    raise CotangentShapeError(
                        f"the frule for {function_name(f)} returned {type(out).__name__}, "
                        "not (value, tangent)"
                    )
                if kw_ts and _kw_derivative(kw_ts, kw):
                    return out[0], _kw_not_implemented(f, kw_ts, kw)
                return out
    return _fallback(f, ts, args, kwargs, kw_ts)


_NUMPY_FUNCTIONS: dict[Any, bool] = {}


def _is_numpy_function(f: Any) -> bool:
    """Whether ``f`` is one of numpy's functions (or ufuncs), which read lists as arrays."""
    known = _NUMPY_FUNCTIONS.get(f)
    if known is None:
        mod = getattr(f, "__module__", None)
        known = isinstance(mod, str) and (mod == "numpy" or mod.startswith("numpy."))
        if len(_NUMPY_FUNCTIONS) >= 2048:  # bounded: callables made per call leave
            _NUMPY_FUNCTIONS.clear()
        _NUMPY_FUNCTIONS[f] = known
    return known


def _array_like_tangents(ts: tuple, args: tuple) -> tuple:
    """The tangents of a numpy function's arguments, each list or tuple argument's as an array.

    numpy reads ``np.sum([a, b])``'s list as the array ``np.asarray([a, b])``; its
    tangent, a ``Tangent[list]`` of the entries' tangents, becomes that array's
    tangent (zeros filled in), which is what the function's frule can compute with.
    Sequences numpy cannot turn into one numeric array (``np.concatenate`` of arrays
    of different lengths) keep their ``Tangent[list]``.
    """
    out = None
    for i, a in enumerate(args):
        if a.__class__ is list or a.__class__ is tuple:
            ṫ = ts[i + 1]
            if is_zero(ṫ):
                continue
            d = _dense_tangent(ṫ, a)
            if d is not None:
                if out is None:
                    out = list(ts)
                out[i + 1] = d
    return ts if out is None else tuple(out)


def _dense_tangent(ṫ: Any, x: Any) -> Any:
    import numpy as np

    from rules.extension import dense

    if any(map(is_duck_array, x)):  # dask or CuPy entries: reading them would compute
        shape = (len(x), *np.shape(x[0]))
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError):  # ragged
            return None
        if arr.dtype.kind not in "fciu":
            return None
        shape = arr.shape
    try:
        d = dense(ṫ, x)
    except (ValueError, TypeError):
        return None
    return d if d.shape == shape and d.dtype.kind in "fc" else None


def keyword_positions(f: Any, args: tuple, kwargs: dict, kw_ts: dict) -> tuple | None:
    """``(args2, kwargs2, names)`` (``keywords_as_positions``) when a keyword argument of
    ``f``, which has frules, carries a derivative and can move to its position, where a
    rule for the new argument types answers the call; else ``None``. Every mode that
    differentiates forward mode's dispatch follows a keyword the same way."""
    if not _kw_derivative(kw_ts, kwargs):
        return None
    moved = keywords_as_positions(f, args, kwargs)
    if moved is not None and _lookup(f, tuple(map(type, moved[0])), ADConfig):
        return moved
    return None


def _kw_derivative(kw_ts: dict, kwargs: dict) -> bool:
    """Whether a keyword argument carries a derivative the rule drops."""
    return any(not is_zero(ṫ) and maybe_differentiable(kwargs[k]) for k, ṫ in kw_ts.items())


def _kw_not_implemented(f: Any, kw_ts: dict, kwargs: dict) -> Any:
    names = [k for k, ṫ in kw_ts.items() if not is_zero(ṫ) and maybe_differentiable(kwargs[k])]
    return not_implemented(keyword_reason(f, names, "an frule", call_site()))


def _fallback(f: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None) -> Any:
    tf = type(f)
    if tf is _FunctionType:
        return call_function(f, ts, args, kwargs, kw_ts)
    if tf is _MethodType:  # the method's tangent is its receiver's
        return _call(f.__func__, (_Z, ts[0], *ts[1:]), (f.__self__, *args), kwargs, kw_ts)
    if tf is _BuiltinType:
        owner = f.__self__
        if owner is not None and not isinstance(owner, _ModuleType):
            unbound = getattr(type(owner), f.__name__, None)
            if unbound is not None and _hashable(unbound) and unbound in _FRULES:
                return _call(unbound, (_Z, ts[0], *ts[1:]), (owner, *args), kwargs, kw_ts)
            name = f"{type(owner).__module__}.{type(owner).__qualname__}.{f.__name__}"
            return _plain_calls.forward_call(f, ts, args, kwargs, kw_ts, name)  # library code
        out = None if kwargs else _dunders.dispatch(f, args, _dunder_call(ts, args))
        if out is not None:
            return out
        return _plain_calls.forward_call(f, ts, args, kwargs, kw_ts, function_name(f))
    if isinstance(f, type):
        if f in _dunders.CONVERSIONS and not kwargs:  # float(obj): its own __float__
            out = _dunders.dispatch(f, args, _dunder_call(ts, args))
            if out is not None:
                return out
        return _construct(f, ts, args, kwargs, kw_ts)
    if tf is functools.partial:
        return _call_partial(f, ts, args, kwargs, kw_ts)
    wrapped = _wrappers.forward(f, ts, args, kwargs, kw_ts)  # lru_cache, np.vectorize...
    if wrapped is not None:
        return wrapped
    call = next((k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(call, _FunctionType):  # a callable object: differentiate __call__
        return _call(call, (_Z, ts[0], *ts[1:]), (f, *args), kwargs, kw_ts)
    return _plain_calls.forward_call(
        f, ts, args, kwargs, kw_ts, function_name(f)
    )  # C code: plainly


def _dunder_call(ts: tuple, args: tuple) -> Any:
    """``dunders.dispatch``'s ``call``: push forward ``method`` on ``args`` in ``order``."""

    def call(method: Any, order: tuple) -> tuple[Any, Any]:
        return fcall(method, (_Z, *(ts[1 + i] for i in order)), *(args[i] for i in order))

    return call


def _call(f: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None) -> Any:
    if kwargs:
        return dispatch(f, ts, args, kwargs, kw_ts)
    return fcall(f, ts, *args)


def _call_partial(
    p: functools.partial, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None
) -> Any:
    """A partial's tangent holds its bound arguments' tangents (fields func, args, keywords)."""
    ṗ = ts[0]
    bound_ts = entries(field_ct(ṗ, "args"), len(p.args), p.args)
    kw_bound = field_ct(ṗ, "keywords")
    kwt = {k: mapping_entry(kw_bound, k) for k in p.keywords}
    kwt.update(kw_ts or {})
    all_ts = (field_ct(ṗ, "func"), *bound_ts, *ts[1:])
    return dispatch(p.func, all_ts, (*p.args, *args), {**p.keywords, **(kwargs or {})}, kwt)


def _construct(cls: type, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None) -> Any:
    if issubclass(cls, Tangent):  # built in a rule's body (second order): linear in its entries
        y = cls(*args, **(kwargs or {}))
        if all(is_zero(t) for t in ts[1:]) and all(is_zero(t) for t in (kw_ts or {}).values()):
            return y, _Z
        return y, cls(*ts[1:], **(kw_ts or {}))
    if cls is functools.partial:
        # A partial's tangent: fields func, args, keywords (see _call_partial).
        y = functools.partial(*args, **(kwargs or {}))
        b: dict[str, Any] = {}
        if ts[1:] and not is_zero(ts[1]):
            b["func"] = ts[1]
        if not is_zero(bound := tan_tuple(*ts[2:])):
            b["args"] = bound
        kw = {k: ṫ for k, ṫ in (kw_ts or {}).items() if not is_zero(ṫ)}
        if kw:
            b["keywords"] = _DictT._from_backing(kw)
        return y, Tangent[functools.partial]._from_backing(b) if b else _Z
    if (init := init_to_differentiate(cls)) is not None:
        # Push forward through its __init__, whose output is the object.
        obj = object.__new__(cls)
        return call_function(init, (_Z, _Z, *ts[1:]), (obj, *args), kwargs, kw_ts, as_init=True)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        names = list(cls._fields)
    elif library_class(cls):  # C code or the standard library's: plainly
        name = f"the constructor of {cls.__module__}.{cls.__qualname__}"
        return _plain_calls.forward_call(cls, ts, args, kwargs, kw_ts, name)
    else:
        raise _no_rule(
            f"the constructor of {cls.__module__}.{cls.__qualname__}",
            extra="Dataclasses and namedtuples are differentiated structurally; for other "
            "classes register an frule for the class, or build the object outside the "
            "differentiated function and pass it in.",
        )
    y = cls(*args, **(kwargs or {}))
    fields = {names[i]: ṫ for i, ṫ in enumerate(ts[1:]) if not is_zero(ṫ)}
    fields.update({k: ṫ for k, ṫ in (kw_ts or {}).items() if not is_zero(ṫ)})
    return y, Tangent[cls]._from_backing(fields) if fields else _Z


def _no_rule(name: str, extra: str = "") -> NoRuleError:
    site = call_site()
    return NoRuleError(
        f"no rule to differentiate {name} in forward mode"
        f"{f' (called at {site})' if site else ''}: it has no frule and no Python source "
        "to transform.\n"
        + (
            extra
            or "To fix: register an frule for it with rulescore (see rulescore's README), "
            "or wrap the call in ad.ignore_derivatives if no derivative should flow through it."
        )
    )


# --- transformed Python functions ---------------------------------------------


def call_function(
    f: types.FunctionType,
    ts: tuple,
    args: tuple,
    kwargs: dict | None,
    kw_ts: dict | None,
    as_init: bool | int = False,
) -> tuple[Any, Any]:
    """Run the transformed pushforward of ``f`` with the call's tangents
    (``as_init``: see ``transform.transformed``)."""
    from ad.transform import check_guards_after, forward_transformed

    ḟ = ts[0]
    closure_active = bool(f.__code__.co_freevars) and not is_zero(ḟ)
    try:
        entry = forward_transformed(f, closure_active, as_init)
    except NoSourceError:
        if as_init or not hasattr(f, "__wrapped__"):
            raise
        return _wrappers.forward_wrapper(f, ts, args, kwargs, kw_ts)  # made by exec...
    fwd = entry.instantiate(f)
    if _internal(f.__code__):  # a rule differentiated (second order): see _state
        with _suspended():
            dt = _param_tangents(entry.spec, len(args), ts[1:], kwargs or {}, kw_ts or {})
            return fwd(*args, **(kwargs or {}), _ad_dt=dt, _ad_df=ḟ)
    if not kwargs and entry.simple and len(args) == entry.n_positional:
        out = fwd(*args, _ad_dt=ts[1:], _ad_df=ḟ)
    else:
        dt = _param_tangents(entry.spec, len(args), ts[1:], kwargs or {}, kw_ts or {})
        out = fwd(*args, **(kwargs or {}), _ad_dt=dt, _ad_df=ḟ)
    if entry.guards:  # helpers inlined: still the functions their names are?
        check_guards_after(entry.guards, f)
    return out


def _param_tangents(spec: Any, n_args: int, ts: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """The tangents of ``spec``'s parameters, in signature order (defaults get zero)."""
    pos = spec.positional
    n_bound = min(n_args, len(pos))
    by_name: dict[str, Any] = dict(zip(pos[:n_bound], ts[:n_bound]))
    if spec.vararg is not None:
        by_name[spec.vararg] = tan_tuple(*ts[n_bound:])
    named = set(pos) | set(spec.kwonly)
    extra = {}
    for k in kwargs:
        ṫ = kw_ts.get(k, _Z)
        if k in named:
            by_name[k] = ṫ
        elif not is_zero(ṫ):
            extra[k] = ṫ
    if spec.kwarg is not None:
        by_name[spec.kwarg] = _DictT._from_backing(extra) if extra else _Z
    return tuple(by_name.get(name, _Z) for name in spec.all_names)


def funpack(t: Any, ṫ: Any, n: int) -> tuple[tuple, tuple]:
    """``a, b = t`` in forward mode: the items and their tangents; a user class's
    ``__iter__`` is pushed forward (``dunders.user_iterable``)."""
    if user_iterable(t):
        t, ṫ = through_fiter(t, ṫ)
    return unpack(t, n), split(ṫ, n)


#: The names forward-mode code reads besides reverse mode's (``helpers`` binds
#: both tables for the transform).
FORWARD_NAMES: dict[str, Any] = {
    "_ad_fcall": fcall,
    "_ad_fcall_gen": fcall_gen,
    "_ad_fiter": fiter,
    "_ad_split": split,
    "_ad_funpack": funpack,
    "_ad_tan_tuple": tan_tuple,
    "_ad_tan_list": tan_list,
    "_ad_tan_dict": tan_dict,
    "_ad_fn_tangent": fn_tangent,
    "_ad_field": field_ct,
}

calls.bind(fcall=fcall, dispatch=dispatch, fcall_gen=fcall_gen)
