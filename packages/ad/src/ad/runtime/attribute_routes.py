"""Python's attribute protocol: which user code a read or write of an attribute runs.

A read or write of an attribute of a user object may run user code: a
property's getter or setter, a descriptor's Python ``__get__``/``__set__``, a
``__getattr__``, ``__getattribute__`` or ``__setattr__``. ``read_route`` and
``write_route`` say which (``None``: a plain field read or write), worked out
once per (type, name) and cached, so the plain path costs one dict lookup;
``_read_through`` and ``_write_through`` differentiate such an access through
that code, transformed like any Python function. The rules of the helpers that
generated code calls for attributes are in ``rules_objects``.
"""

from __future__ import annotations

import types
from typing import Any

from ad.runtime import library_code
from ad.runtime import reverse as _runtime
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import np_module
from ad.runtime.reverse_functions import call_function
from ad.runtime.state import keep_stateful
from rulescore import DuckArray, NoTangent, Tangent, rrule

__all__ = ["is_duck_array_type", "read_route", "write_route"]

_NO = NoTangent()


# --- Python's attribute protocol ----------------------------------------------
#
# A read or write of an attribute of a user object may run user code: a
# descriptor's Python ``__get__``/``__set__`` (``property`` among them), a
# ``__getattr__``, ``__getattribute__`` or ``__setattr__``. Such an access is
# differentiated through that code (transformed like any Python function); any
# other access is a plain field read or write. What a type's protocol is for a
# name is worked out once per (type, name) and cached: the plain path costs one
# dict lookup.

_FunctionType = types.FunctionType
_READS: dict[tuple, Any] = {}
_WRITES: dict[tuple, Any] = {}
_NOT_FOUND = object()


def _python_slot(cls: type, slot: str) -> Any:
    """The Python function that implements ``slot`` for ``cls`` (None: C code)."""
    for k in cls.__mro__:
        v = k.__dict__.get(slot)
        if v is not None:
            return v if type(v) is _FunctionType else None
    return None


def _class_attr(mro: tuple, name: str) -> Any:
    for k in mro:
        d = k.__dict__
        if name in d:
            return d[name]
    return _NOT_FOUND


def _descriptor_plan(attr: Any) -> Any:
    """How a class attribute found by a read acts: ("get", fget) for a property,
    ("data"/"nondata", __get__) for a descriptor with Python ``__get__``, None else."""
    if isinstance(attr, property):
        return ("property", attr.fget) if attr.fget is not None else None
    kind = type(attr)
    get = _python_slot(kind, "__get__") if kind.__module__ != "builtins" else None
    if get is None:
        return None
    data = hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    return ("data" if data else "nondata", get)


def is_duck_array_type(cls: type) -> bool:
    """Whether ``cls`` is an array class of another library than numpy's (dask, CuPy)."""
    np = np_module()
    return issubclass(cls, DuckArray) and (np is None or not issubclass(cls, np.ndarray))


def _read_plan(cls: type, name: str, bypass: bool) -> Any:
    if issubclass(cls, Tangent):
        return None  # a tangent's fields are data (its __getattr__ reads its backing)
    if is_duck_array_type(cls):
        return None  # a dask or CuPy array: its attributes have rules, as numpy's (getattr)
    if issubclass(cls, library_code.DERIVATIVE_FREE_TYPES):
        # no derivative rides on it: its attributes are constants, whatever code
        # computes them (np.finfo's cached_property ``tiny`` caches on first read)
        return None
    if not bypass:
        custom = _python_slot(cls, "__getattribute__")
        if custom is not None:
            return ("getattribute", custom)
    attr = _class_attr(cls.__mro__, name)
    if attr is not _NOT_FOUND:
        plan = _descriptor_plan(attr)
        if plan is not None:
            return (*plan, attr)
        return None
    fallback = _python_slot(cls, "__getattr__")
    return ("getattr", fallback) if fallback is not None else None


def read_route(obj: Any, name: str, bypass: bool = False) -> Any:
    """None when reading ``obj.name`` runs no user code; else ``(fn, args, i)``:
    the read is ``fn(*args)``, with ``obj`` (a ``super`` object's instance) at
    ``args[i]``. ``bypass``: as ``object.__getattribute__`` reads (no
    ``__getattribute__`` override)."""
    cls = type(obj)
    if cls is super:
        return _super_read(obj, name)
    key = (cls, name, bypass)
    try:
        plan = _READS[key]
    except KeyError:
        if len(_READS) >= 1024:  # bounded: classes made per call leave
            _READS.clear()
        plan = _READS[key] = _read_plan(cls, name, bypass)
    if plan is None:
        return None
    kind = plan[0]
    if kind == "property":
        return plan[1], (obj,), 0
    if kind == "getattribute":
        return plan[1], (obj, name), 0
    if kind == "getattr":
        if name in getattr(obj, "__dict__", ()):
            return None
        return plan[1], (obj, name), 0
    if kind == "nondata" and name in getattr(obj, "__dict__", ()):
        return None
    return plan[1], (plan[2], obj, cls), 1


def _super_read(sup: Any, name: str) -> Any:
    """``super(C, obj).name``: the class attribute after ``C`` in ``obj``'s MRO."""
    inst = sup.__self__
    if inst is None or isinstance(inst, type):
        return None
    mro = type(inst).__mro__
    this = sup.__thisclass__
    attr = _class_attr(mro[mro.index(this) + 1 :] if this in mro else (), name)
    if attr is _NOT_FOUND:
        return None
    plan = _descriptor_plan(attr)
    if plan is None:
        return None
    if plan[0] == "property":
        return plan[1], (inst,), 0
    return plan[1], (attr, inst, type(inst)), 1


def _write_plan(cls: type, name: str, bypass: bool) -> Any:
    if issubclass(cls, Tangent):
        return None
    if not bypass:
        custom = _python_slot(cls, "__setattr__")
        if custom is not None:
            return ("setattr", custom)
    attr = _class_attr(cls.__mro__, name)
    if attr is _NOT_FOUND:
        return None
    if isinstance(attr, property):
        return ("property", attr.fset) if attr.fset is not None else None
    kind = type(attr)
    put = _python_slot(kind, "__set__") if kind.__module__ != "builtins" else None
    return ("set", put, attr) if put is not None else None


def write_route(obj: Any, name: str, value: Any, bypass: bool = False) -> Any:
    """None when ``obj.name = value`` runs no user code; else ``(fn, args, i)``:
    the write is ``fn(*args)``, which updates ``args[i]`` (``obj``) in place."""
    cls = type(obj)
    key = (cls, name, bypass)
    try:
        plan = _WRITES[key]
    except KeyError:
        if len(_WRITES) >= 1024:  # bounded: classes made per call leave
            _WRITES.clear()
        plan = _WRITES[key] = _write_plan(cls, name, bypass)
    if plan is None:
        return None
    kind = plan[0]
    if kind == "setattr":
        return plan[1], (obj, name, value), 0
    if kind == "property":
        return plan[1], (obj, value), 0
    return plan[1], (plan[2], obj, value), 1


# Routing is no computation on the data: reverse mode over an frule that asks
# for a route (``ad.higher.reverse_over_rules``, second order) sees a constant.
for _route in (read_route, write_route):
    rrule.register(_route, config=ADConfig)(
        lambda config, *args, _f=_route: (_f(*args), lambda ȳ: (_NO,) * (1 + len(args)))
    )


def _read_through(fn: Any, args: tuple, i: int) -> Any:
    """Differentiate a read that runs ``fn(*args)``; the object's cotangent is
    that of ``args[i]`` (the name, descriptor and type carry none)."""
    y, pb = _runtime.rcall_masked(((1 << len(args)) - 1) & ~(1 << i), fn, *args)

    def attribute_protocol_pullback(ȳ: Any) -> tuple:
        return (_NO, pb(ȳ)[1 + i], _NO)

    return y, keep_stateful(pb, attribute_protocol_pullback)


def _write_through(fn: Any, args: tuple, i: int) -> Any:
    """Differentiate a write that runs ``fn(*args)`` (which updates ``args[i]`` in
    place and returns None) as a function whose output is ``args[i]``."""
    closure = bool(fn.__code__.co_freevars)
    inactive = ((1 << (len(args) - 1)) - 1) & ~(1 << i)  # all but the object and the value
    obj, pb = call_function(fn, args, None, closure, as_init=i + 1, inactive=inactive)

    def attribute_protocol_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        return (_NO, cts[1 + i], _NO, cts[-1])

    return obj, keep_stateful(pb, attribute_protocol_pullback)
