"""ad's rules for attribute reads and writes, item writes, ``append`` and
augmented assignment (``x op= y``): the helpers the ANF pass emits for them.
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
import sys
import types
from collections.abc import Callable
from typing import Any

from ad.errors import CotangentShapeError, MutationError
from ad.runtime import reverse as _runtime
from ad.runtime.checks import _carries_derivative
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, from_list_ct, np_module
from ad.runtime.dunders import defines_inplace
from ad.runtime.state import (
    current,
    follow,
    follow_pullback,
    holder,
    item_key,
    item_write_pullback,
    keep_stateful,
    nested,
    read_item_pullback,
    read_pullback,
    stateful,
    tracked,
    write_pullback,
)
from ad.runtime.tracebacks import internal_file
from ad.transform import PURE_PREFIX
from rules._sequences import dict_getitem_rrule, sequence_getitem_rrule
from rules._util import getrefcount as _getrefcount
from rules._util import unbroadcast
from rulescore import (
    AbstractZero,
    DuckArray,
    NoTangent,
    Tangent,
    ZeroTangent,
    non_differentiable,
    rrule,
    unthunk,
)

_Z = ZeroTangent()
_NO = NoTangent()
_GENERATED = frozenset(["_ad_fwd", PURE_PREFIX + "fwd"])

__all__ = [
    "append",
    "array_setitem",
    "find_property",
    "getattr_",
    "getattr_object",
    "inplace_fast",
    "inplace_helper",
    "read_route",
    "setattr_",
    "setattr_object",
    "setdict",
    "setitem",
    "super_init",
    "write_route",
]


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
# for a route (``ad.higher.reverse_over_forward``, second order) sees a constant.
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
    obj, pb = _runtime.call_function(fn, args, None, closure, as_init=i + 1, inactive=inactive)

    def attribute_protocol_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        return (_NO, cts[1 + i], _NO, cts[-1])

    return obj, keep_stateful(pb, attribute_protocol_pullback)


def getattr_(obj: Any, name: str) -> Any:
    return getattr(obj, name)


def getattr_object(obj: Any, name: str) -> Any:
    """``object.__getattribute__(obj, name)`` in differentiated code."""
    return object.__getattribute__(obj, name)


@rrule.register(getattr_object, config=ADConfig)
def _(config: Any, obj: Any, name: str) -> Any:
    return _getattr_rule(config, obj, name, True)


@rrule.register(getattr_, config=ADConfig)
def _(config: Any, obj: Any, name: str) -> Any:
    return _getattr_rule(config, obj, name, False)


def _getattr_rule(config: Any, obj: Any, name: str, bypass: bool) -> Any:
    route = read_route(obj, name, bypass)
    if route is not None:
        return _read_through(*route)
    value = object.__getattribute__(obj, name) if bypass else getattr(obj, name)
    owner = obj.__self__ if type(obj) is super else obj
    if getattr(value, "__self__", None) is owner and callable(value):
        # A bound method: its cotangent is its receiver's (see _runtime._call_bound).
        def method_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, _NO)

        return value, method_pullback
    np = np_module()
    if np is not None and isinstance(obj, (DuckArray, np.generic)):
        out = rrule(config, getattr, obj, name)
        if out is not None:
            return out
        if isinstance(obj, DuckArray):
            raise TypeError(f"no rule for reading attribute {name!r} of an array")
    if isinstance(obj, numbers.Number) and name in ("real", "imag"):
        return _number_part(obj, name)
    cls = type(obj)
    if cls is super:  # a class attribute reached through super(): a constant
        return value, lambda ȳ: (_NO, _Z, _NO)
    p = tracked(obj)
    if p is not None:  # written in this pass: its fields' cotangents are kept by identity
        return value, read_pullback(p, obj, name)

    def getattr_pullback(ȳ: Any) -> tuple:
        if isinstance(ȳ, AbstractZero):
            return (_NO, _Z, _NO)
        return (_NO, Tangent[cls]._from_backing({name: ȳ}), _NO)

    return value, getattr_pullback


def _number_part(z: Any, name: str) -> Any:
    """``z.real`` / ``z.imag``: with ∂z = ∂L/∂re + i ∂L/∂im."""
    y = getattr(z, name)
    is_complex = isinstance(z, complex) or getattr(getattr(z, "dtype", None), "kind", "") == "c"

    def part_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO)
        r = ȳ.real
        if name == "real":
            return (_NO, complex(r) if is_complex else r, _NO)
        return (_NO, 1j * r if is_complex else _Z, _NO)

    return y, part_pullback


def find_property(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        attr = klass.__dict__.get(name)
        if attr is not None:
            return attr if isinstance(attr, property) else None
    return None


def setattr_(obj: Any, name: str, value: Any) -> Any:
    setattr(obj, name, value)
    return obj


def setattr_object(obj: Any, name: str, value: Any) -> Any:
    """``object.__setattr__(obj, name, value)`` in differentiated code."""
    object.__setattr__(obj, name, value)
    return obj


def setdict(obj: Any, name: str, value: Any) -> Any:
    """``obj.__dict__[name] = value`` in differentiated code."""
    obj.__dict__[name] = value
    return obj


@rrule.register(setattr_, config=ADConfig)
def _(config: Any, obj: Any, name: str, value: Any) -> Any:
    if dataclasses.is_dataclass(obj) and type(obj).__dataclass_params__.frozen:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    route = write_route(obj, name, value)
    if route is not None:
        return _write_through(*route)
    reverse_over_reverse_write(obj, name, value)
    setattr(obj, name, value)
    return obj, _setattr_pullback(obj, name)


@rrule.register(setattr_object, config=ADConfig)
def _(config: Any, obj: Any, name: str, value: Any) -> Any:
    route = write_route(obj, name, value, True)
    if route is not None:
        return _write_through(*route)
    reverse_over_reverse_write(obj, name, value)
    object.__setattr__(obj, name, value)
    return obj, _setattr_pullback(obj, name)


@rrule.register(setdict, config=ADConfig)
def _(config: Any, obj: Any, name: str, value: Any) -> Any:
    reverse_over_reverse_write(obj, name, value)
    obj.__dict__[name] = value
    return obj, _setattr_pullback(obj, name)


def reverse_over_reverse_write(obj: Any, name: str, value: Any) -> None:
    """Refuse, naming the user's line, an attribute write that reverse mode
    differentiates again (``ad.hessian_reverse``): there the rule above is itself
    differentiated, along variables, and the object it writes in place is not its
    output. At first order (and under ``ad.hessian``) the rule runs as plain
    Python, called from a rule's frame, not from generated code."""
    if not _carries_derivative(value):
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != __file__:
        frame = frame.f_back  # the calls between a rule body's generated code and here
    if frame is None:
        return
    code = frame.f_code
    if code.co_name not in _GENERATED or "_ad_dt" in code.co_varnames:
        return
    raise MutationError(
        f"{_user_site()}: writing the attribute {name!r} of a {type(obj).__name__} "
        "is differentiated twice in reverse mode (ad.hessian_reverse), which follows "
        "objects along variables only and cannot follow this in-place write.\n"
        "To fix: use ad.hessian (forward over reverse), which follows objects, or "
        "compute the value without writing it into the object for this derivative."
    )


non_differentiable(reverse_over_reverse_write)


def _user_site() -> str:
    """file:line of the innermost generated frame of the user's code."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name in _GENERATED and not internal_file(code.co_filename):
            return f"{code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return _runtime.call_site()


def _setattr_pullback(obj: Any, name: str) -> Callable:
    """The pullback of a write of ``obj.name`` (just done): by identity (see
    ``ad.runtime.state``) for a user object in a differentiation, else along the
    variable written through."""
    p = current() if stateful(obj) else None
    if p is not None:
        return write_pullback(p, obj, name, p.mark(obj))
    return field_pullback(name)


def field_pullback(name: str) -> Callable:
    """A write of field ``name``'s pullback along the variable written through:
    the field's cotangent goes to the value, the rest to the object before."""

    def setattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO, _Z)
        if isinstance(ȳ, Tangent):
            b = ȳ._backing  # read, not popped: see dict_setitem_pullback
            v = b[name] if name in b else _Z
            others = {k: c for k, c in b.items() if k != name}
            rest = type(ȳ)._from_backing(others) if others else _Z
            return (_NO, rest, _NO, v)
        raise CotangentShapeError(
            f"cotangent of an object must be a Tangent, got {type(ȳ).__name__}"
        )

    return setattr_pullback


# --- super() ------------------------------------------------------------------


@rrule.register(super, config=ADConfig)
def _(config: Any, *args: Any) -> Any:
    """``super(C, obj)``: the super object's cotangent is ``obj``'s."""
    y = super(*args)

    def super_pullback(ȳ: Any) -> tuple:
        return (_NO, *[_NO] * (len(args) - 1), ȳ) if args else (_NO,)

    return y, super_pullback


def super_init(sup: Any, *args: Any, **kwargs: Any) -> Any:
    """``super().__init__(*args)`` in differentiated code: the initialised object
    (the transform rebinds the instance to it, so its fields' derivatives flow)."""
    sup.__init__(*args, **kwargs)
    return sup.__self__


def _next_init(sup: Any) -> Any:
    """The Python ``__init__`` that ``sup.__init__`` runs (None: C code)."""
    inst = sup.__self__
    mro = type(inst).__mro__
    this = sup.__thisclass__
    init = _class_attr(mro[mro.index(this) + 1 :] if this in mro else (), "__init__")
    return init if type(init) is _FunctionType else None


def _super_init_rule(config: Any, sup: Any, *args: Any, **kwargs: Any) -> Any:
    """Called with keywords (``super().__init__(a, b=v)``), the pullback ends with
    the keywords' cotangents (``keyword_cotangents``): the base ``__init__``'s own,
    as a call of user code gives them."""
    init = _next_init(sup)
    inst = sup.__self__
    n = len(args)
    if init is None:  # object.__init__ or C code: nothing to differentiate
        sup.__init__(*args, **kwargs)

        def c_init_pullback(ȳ: Any) -> tuple:
            out = (_NO, ȳ, *[_Z] * n)
            return (*out, {k: _Z for k in kwargs}) if kwargs else out

        return inst, c_init_pullback
    closure = bool(init.__code__.co_freevars)
    y, pb = _runtime.call_function(init, (inst, *args), kwargs or None, closure, as_init=True)

    def super_init_pullback(ȳ: Any) -> tuple:
        return (_NO, *pb(ȳ)[1:])

    return y, keep_stateful(pb, super_init_pullback)


_super_init_rule.keyword_cotangents = True  # type: ignore[attr-defined]
rrule.register(super_init, config=ADConfig)(_super_init_rule)


# --- containers followed by identity (ad.runtime.state) -------------------------------


@rrule.register(follow, config=ADConfig)
def _follow_rule(config: Any, obj: Any) -> Any:
    p = current()
    if p is None or not holder(obj):
        return obj, lambda ȳ: (_NO, ȳ)
    return obj, follow_pullback(p, obj, p.follow(obj))


def follow_written(obj: Any, site: str) -> Any:
    """``obj``, read out of another object or container to be written into
    (``self.memo[k] = v``, ``rows[i][j] = v``), followed by identity from now
    on: the write happens to the object itself, and every read of it after,
    through any holder, is differentiated (``ad.runtime.state``). An array so reached
    is refused: writing it in place would change what its holders see, which
    the AD does not follow for arrays."""
    if not holder(obj):
        raise _array_written(obj, site)
    return follow(obj)


def _array_written(obj: Any, site: str) -> MutationError:
    return MutationError(
        f"{site}: an item of a {type(obj).__name__} read out of another object or "
        "container is written in place (a.b[i] = v, a[i][j] = v): the AD follows "
        "dicts, lists and objects written that way, not arrays.\n"
        "To fix: build the new array and assign it: b = a.b.copy(); b[i] = v; a.b = b "
        "(or a[i] = new_row)."
    )


@rrule.register(follow_written, config=ADConfig)
def _(config: Any, obj: Any, site: str) -> Any:
    if not holder(obj):
        raise _array_written(obj, site)
    if current() is None or nested():  # differentiated at a higher order
        raise nested_write_refused(site)
    _, pb = _follow_rule(config, obj)
    return obj, lambda ȳ: (*pb(ȳ), _NO)


def nested_write_refused(site: str) -> MutationError:
    """A write ``a.b[i] = v`` at second order: there objects are followed along
    variables only (``ad.runtime.state.suspended``), and the container's other holders
    would not see the write."""
    return MutationError(
        f"{site}: a write into a container read out of another object or container "
        "(a.b[i] = v, a[i][j] = v) is followed by identity, which nested (higher-order) "
        "differentiation does not do.\n"
        "To fix: take this derivative at first order (ad.gradient, ad.jvp), or compute "
        "the value without writing into the container (no cache) for higher orders."
    )


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, obj: list, key: numbers.Integral | slice) -> Any:
    p = tracked(obj)
    if p is not None:  # followed by identity (ad.runtime.state)
        return obj[key], read_item_pullback(p, obj, key)
    return sequence_getitem_rrule(obj, key)


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, obj: dict, key) -> Any:  # any key, as rules' rule for dicts
    p = tracked(obj)
    if p is not None:
        return obj[key], read_item_pullback(p, obj, key)
    return dict_getitem_rrule(obj, key)


# --- item writes and in-place updates ---------------------------------------


def setitem(obj: Any, key: Any, value: Any) -> Any:
    obj[key] = value
    return obj


@rrule.register(setitem, config=ADConfig)
def _(config: Any, obj: Any, key: Any, value: Any) -> Any:
    np = np_module()
    if np is not None and isinstance(obj, np.ndarray):
        return array_setitem(obj, key, value)
    p = tracked(obj)
    if p is not None and isinstance(obj, (list, dict)):  # followed by identity (ad.runtime.state)
        if isinstance(obj, list) and not isinstance(key, int):
            raise TypeError("slice assignment into a list is not differentiable; build a new list")
        n = len(obj)
        k = item_key(obj, key)
        obj[key] = value
        p.mark(obj)  # a write: the calls it happens in must run their pullbacks
        return obj, item_write_pullback(p, obj, k, n)
    if isinstance(obj, list):
        n = len(obj)
        obj[key] = value
        if not isinstance(key, int):
            raise TypeError("slice assignment into a list is not differentiable; build a new list")

        def list_setitem_pullback(ȳ: Any) -> tuple:
            cts = list(entries(ȳ, n, "a list"))
            v = cts[key]
            cts[key] = _Z
            return (_NO, cts, _NO, v)

        return obj, list_setitem_pullback
    if isinstance(obj, dict):
        obj[key] = value

        def dict_setitem_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (_NO, ȳ, _NO, _Z)
            b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
            # reads and a comprehension, not dict.pop (C code writing its receiver):
            # this body is differentiated again at reverse over reverse
            v = b[key] if key in b else _Z
            rest = {k: c for k, c in b.items() if k != key}
            return (_NO, rest or _Z, _NO, v)

        return obj, dict_setitem_pullback
    raise TypeError(
        f"cannot differentiate item assignment into a {type(obj).__name__} "
        f"(at {_runtime.call_site()}); only lists and dicts are supported"
    )


def array_setitem(x: Any, key: Any, value: Any) -> Any:
    """``x[key] = value`` on an array that nothing else observes (``ad.runtime.ownership``
    checked that before the write): differentiated as a new array, equal to ``x``
    but at ``key``, so that values a pullback saved keep their old entries. Each
    write copies ``x``: to fill a large array entry by entry, use ``ad.Buffer``.
    """
    np = np_module()
    if isinstance(key, np.ndarray) and key.dtype.kind in "iu" and len(np.unique(key)) < key.size:
        raise MutationError(
            f"item assignment with repeated indices (at {_runtime.call_site()}): which write "
            "wins is up to numpy, so its derivative is not defined.\n"
            "To fix: index each entry once (np.unique), or build the array out of place."
        )
    y = x.copy()
    y[key] = value  # numpy's own broadcasting, casting and errors

    def array_setitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO, _Z)
        x̄ = np.array(ȳ, dtype=np.result_type(ȳ, x.dtype), copy=True)
        x̄[key] = 0
        v̄ = unbroadcast(value, ȳ[key])
        return (_NO, x̄, _NO, v̄)

    return y, array_setitem_pullback


def append(lst: Any, value: Any) -> Any:
    lst.append(value)
    return lst


@rrule.register(append, config=ADConfig)
def _(config: Any, lst: list, value: Any) -> Any:
    n = len(lst)
    lst.append(value)
    p = tracked(lst)
    if p is not None:  # followed by identity (ad.runtime.state)
        p.mark(lst)
        return lst, item_write_pullback(p, lst, n, n, append=True)

    def append_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _Z)
        # refs: the adjoint's variable, this parameter, getrefcount's argument. A list
        # cotangent only they hold gives up its last entry in place: a loop of appends
        # costs each append, not the list's length
        if type(ȳ) is list and len(ȳ) == n + 1 and _getrefcount(ȳ) <= 3:
            v̄ = ȳ.pop()
            return (_NO, ȳ if n else _Z, v̄)
        cts = entries(ȳ, n + 1, "a list")
        return (_NO, list(cts[:n]) if n else _Z, cts[n])

    return lst, append_pullback


@rrule.register(append, config=ADConfig)
def _(config: Any, obj: object, value: Any) -> Any:
    """``obj.append(v)`` on anything but a list (a user class's method, a deque):
    the method itself, differentiated as any call is (from its source, by its rule,
    or as plain Python under ``plain_calls``' checks). The helper's output is
    ``obj`` again: its cotangent passes through, plus what the method's reads of
    its receiver give."""
    # followed by identity from here, as the receiver of any method call is
    obj, fpb = _follow_rule(config, obj)
    _, pb = _runtime.rcall(obj.append, value)

    def method_append_pullback(ȳ: Any) -> tuple:
        dm, dv = pb(_Z)  # the method's value (None) carries no cotangent
        return (_NO, fpb(_runtime.acc(ȳ, dm))[1], dv)

    return obj, keep_stateful(fpb, keep_stateful(pb, method_append_pullback))


def inplace_helper(op: str) -> Callable:
    """``x op= y``: lists extend in place; everything else rebinds to ``x op y``.

    numpy arrays are updated out of place when differentiated (the old array
    may be saved by a pullback; ``ad.runtime.ownership`` made sure nothing else
    observes it), keeping numpy's in-place semantics for the result: ``x``'s
    shape and dtype (``float32 += float64`` stays float32) and numpy's error
    where ``y`` does not broadcast into ``x``. Inactive code runs in place.
    """
    inplace = getattr(operator, f"i{op}" if not op.endswith("_") else f"i{op[:-1]}")
    outofplace = getattr(operator, op)

    def iop(x: Any, y: Any) -> Any:
        return inplace(x, y)

    iop.__name__ = iop.__qualname__ = f"iop_{op}"

    def iop_rule(config: Any, x: Any, y: Any) -> Any:
        if type(x) is list and op == "add":
            n = len(x)
            x += y
            m = len(x) - n

            def extend_pullback(ȳ: Any) -> tuple:
                cts = entries(ȳ, n + m, "a list")
                return (_NO, list(cts[:n]) if n else _Z, from_list_ct(y, list(cts[n:])))

            return x, extend_pullback
        z, pb = _runtime.rcall(inplace if defines_inplace(inplace, x) else outofplace, x, y)
        np = np_module()
        if np is not None and type(x) is np.ndarray and not same_array_kind(z, x):
            z = as_inplace_result(z, x, y, inplace)
        return z, pb

    rrule.register(iop, config=ADConfig)(iop_rule)
    iop.inplace = inplace  # type: ignore[attr-defined]
    return iop


def inplace_fast(fasti: Callable, iop: Callable) -> Callable:
    """``x op= y`` for the generated code's fast path (``_ad_fasti_iop_<op>``):
    on numbers, and on an array whose shape and dtype the result keeps, the
    same program as ``x = x op y`` (``ad.runtime.ownership`` made sure nothing else
    observes ``x``), so ``fasti``'s tape entries serve; lists, user objects and
    updates numpy would cast or refuse take ``iop``'s rule."""
    np = np_module()
    ndarray = np.ndarray
    numbers_ = (float, int, complex, np.float64, np.float32, np.complex128)

    def fasti_iop(x: Any, y: Any) -> Any:
        kind = type(x)
        if kind is ndarray:
            out = fasti(x, y)
            z = out[0]
            if type(z) is ndarray and z.shape == x.shape and z.dtype == x.dtype:
                return out
        elif kind in numbers_:
            return fasti(x, y)
        return _runtime.rcall(iop, x, y)

    fasti_iop.__name__ = fasti_iop.__qualname__ = f"fasti_{iop.__name__}"
    return fasti_iop


def same_array_kind(z: Any, x: Any) -> bool:
    """Whether ``z`` has the array ``x``'s type, shape and dtype."""
    return type(z) is type(x) and z.shape == x.shape and z.dtype == x.dtype


def as_inplace_result(z: Any, x: Any, y: Any, inplace: Callable) -> Any:
    """``x op y`` (computed out of place as ``z``) as ``x op= y`` leaves ``x``: in
    ``x``'s dtype, or numpy's own error where the update could not be in place."""
    np = np_module()
    z = np.asarray(z)
    if z.shape != x.shape or not np.can_cast(z.dtype, x.dtype, "same_kind"):
        inplace(x.copy(), y)  # raises numpy's error (a broadcast or a cast it refuses)
    return z.astype(x.dtype, copy=False)
