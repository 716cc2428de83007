"""ad's rules for attribute reads and writes, ``super()``, and containers followed by identity.

The helpers the ANF pass emits for ``obj.name`` (``getattr_``,
``getattr_object``), ``obj.name = value`` (``setattr_``, ``setattr_object``,
``setdict``) and ``super().__init__(...)`` (``super_init``), each an ordinary
function with an ``rrule``; a read or write that runs user code goes through
it (``attribute_routes``). A container read out of another object to be
written into is followed by identity from then on (``follow_written``). Item
writes, ``append`` and ``x op= y`` are in ``rules_item_writes``.
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
from ad.runtime.attribute_routes import (
    _class_attr,
    _read_through,
    _write_through,
    read_route,
    write_route,
)
from ad.runtime.checks import _carries_derivative
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import np_module
from ad.runtime.dunders import overriding
from ad.runtime.reverse_functions import call_function
from ad.runtime.state import (
    current,
    follow,
    follow_pullback,
    holder,
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
from rules.extension import dict_getitem_rrule, sequence_getitem_rrule
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

__all__ = [
    "find_property",
    "getattr_",
    "getattr_object",
    "setattr_",
    "setattr_object",
    "setdict",
    "super_init",
]

_Z = ZeroTangent()
_NO = NoTangent()
_GENERATED = frozenset(["_ad_fwd", PURE_PREFIX + "fwd"])
_FunctionType = types.FunctionType


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
        # A bound method: its cotangent is its receiver's (see reverse_fallback._call_bound).
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
    y, pb = call_function(init, (inst, *args), kwargs or None, closure, as_init=True)

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


def holder_print(obj: Any) -> Any:
    """Under nested differentiation, what the captured or global holder ``obj``
    holds, by identity, three levels deep (``follow_after`` compares it after a
    call); else None (first order follows ``obj`` by identity: nothing to compare)."""
    return _print(obj, 3) if nested() else None


def _print(v: Any, depth: int) -> Any:
    if depth == 0:
        return id(v)
    if type(v) is list or type(v) is tuple:
        return (id(v), tuple(_print(x, depth - 1) for x in v))
    if type(v) is dict:
        return (id(v), tuple((k, _print(x, depth - 1)) for k, x in v.items()))
    if stateful(v) and hasattr(v, "__dict__"):
        return (id(v), tuple((k, _print(x, depth - 1)) for k, x in vars(v).items()))
    return id(v)


def follow_after(obj: Any, before: Any, site: str) -> Any:
    """``follow(obj)`` after a call that may write the captured or global holder
    ``obj``; under nested differentiation, which follows no holder by identity, a
    write by the call (what ``obj`` holds changed from ``before``) is refused: the
    reads after it would take its value as a constant."""
    _unchanged(obj, before, site)
    return follow(obj)


def _unchanged(obj: Any, before: Any, site: str) -> None:
    if before is not None and _print(obj, 3) != before:
        raise MutationError(
            f"{site}: the call here wrote into a global or captured container (or object) "
            "that this function reads, which nested (higher-order) differentiation does "
            "not follow: the derivative of what it wrote would be lost.\n"
            "To fix: pass the container to the function that writes it as an argument "
            "and return it, or take this derivative at first order."
        )


non_differentiable(holder_print)


@rrule.register(follow_after, config=ADConfig)
def _(config: Any, obj: Any, before: Any, site: str) -> Any:
    _unchanged(obj, before, site)
    y, pb = _follow_rule(config, obj)
    return y, keep_stateful(pb, lambda ȳ: (*pb(ȳ), _NO, _NO))


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
    # Stateful as follow's: it must run to hand back what reads after the write left
    return obj, keep_stateful(pb, lambda ȳ: (*pb(ȳ), _NO))


def nested_write_refused(site: str) -> MutationError:
    """A write ``a.b[i] = v`` at second order: there objects are followed along
    variables only (``ad.runtime.state.suspended``), and the container's other holders
    would not see the write."""
    return MutationError(
        f"{site}: a write into a container read out of another object or container "
        "(a.b[i] = v, a[i][j] = v, a.b.pop()) is followed by identity, which nested (higher-order) "
        "differentiation does not do.\n"
        "To fix: take this derivative at first order (ad.gradient, ad.jvp), or compute "
        "the value without writing into the container (no cache) for higher orders."
    )


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, obj: list, key: numbers.Integral | slice) -> Any:
    if (own := overriding(obj, "__getitem__")) is not None:  # a list subclass's own
        return _runtime.rcall(own, obj, key)
    p = tracked(obj)
    if p is not None:  # followed by identity (ad.runtime.state)
        return obj[key], read_item_pullback(p, obj, key)
    return sequence_getitem_rrule(obj, key)


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, obj: dict, key) -> Any:  # any key, as rules' rule for dicts
    if (own := overriding(obj, "__getitem__")) is not None:  # a dict subclass's own
        return _runtime.rcall(own, obj, key)
    p = tracked(obj)
    if p is not None:
        return obj[key], read_item_pullback(p, obj, key)
    return dict_getitem_rrule(obj, key)
