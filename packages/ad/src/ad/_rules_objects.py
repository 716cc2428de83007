"""ad's rules for attribute reads and writes, item writes, ``append`` and
augmented assignment (``x op= y``): the helpers the ANF pass emits for them.
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
from collections.abc import Callable
from typing import Any

from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, rrule, unthunk

from . import _runtime
from ._config import ADConfig
from ._cotangents import entries, from_list_ct, np_module
from .errors import CotangentShapeError, MutationError

_Z = ZeroTangent()
_NO = NoTangent()

__all__ = ["append", "find_property", "getattr_", "inplace_helper", "setattr_", "setitem"]


def getattr_(obj: Any, name: str) -> Any:
    return getattr(obj, name)


@rrule.register(getattr_, config=ADConfig)
def _(config: Any, obj: Any, name: str) -> Any:
    value = getattr(obj, name)
    if getattr(value, "__self__", None) is obj and callable(value):
        # A bound method: its cotangent is its receiver's (see _runtime._call_bound).
        def method_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, _NO)

        return value, method_pullback
    np = np_module()
    if np is not None and isinstance(obj, (np.ndarray, np.generic)):
        out = rrule(config, getattr, obj, name)
        if out is not None:
            return out
        if isinstance(obj, np.ndarray):
            raise TypeError(f"no rule for reading attribute {name!r} of a numpy array")
    if isinstance(obj, numbers.Number) and name in ("real", "imag"):
        return _number_part(obj, name)
    prop = find_property(type(obj), name)
    if prop is not None and prop.fget is not None:
        y, pb = _runtime.rcall(prop.fget, obj)

        def property_pullback(ȳ: Any) -> tuple:
            return (_NO, pb(ȳ)[1], _NO)

        return y, property_pullback
    cls = type(obj)

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


@rrule.register(setattr_, config=ADConfig)
def _(config: Any, obj: Any, name: str, value: Any) -> Any:
    if dataclasses.is_dataclass(obj) and type(obj).__dataclass_params__.frozen:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    setattr(obj, name, value)

    def setattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO, _Z)
        if isinstance(ȳ, Tangent):
            b = dict(ȳ._backing)
            v = b.pop(name, _Z)
            rest = type(ȳ)._from_backing(b) if b else _Z
            return (_NO, rest, _NO, v)
        raise CotangentShapeError(
            f"cotangent of an object must be a Tangent, got {type(ȳ).__name__}"
        )

    return obj, setattr_pullback


# --- item writes and in-place updates ---------------------------------------


def setitem(obj: Any, key: Any, value: Any) -> Any:
    obj[key] = value
    return obj


@rrule.register(setitem, config=ADConfig)
def _(config: Any, obj: Any, key: Any, value: Any) -> Any:
    np = np_module()
    if np is not None and isinstance(obj, np.ndarray):
        raise MutationError(
            f"in-place assignment into a numpy array (at {_runtime.call_site()}) would corrupt "
            "values the backward pass has saved.\n"
            "To fix: build the array out of place (np.where, np.concatenate, np.stack, a list "
            "then np.array), or use ad.Buffer for a buffer you fill and then copy."
        )
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
            b = dict(ȳ._backing if isinstance(ȳ, Tangent) else ȳ)
            v = b.pop(key, _Z)
            return (_NO, b or _Z, _NO, v)

        return obj, dict_setitem_pullback
    raise TypeError(
        f"cannot differentiate item assignment into a {type(obj).__name__} "
        f"(at {_runtime.call_site()}); only lists and dicts are supported"
    )


def append(lst: Any, value: Any) -> Any:
    lst.append(value)
    return lst


@rrule.register(append, config=ADConfig)
def _(config: Any, lst: list, value: Any) -> Any:
    n = len(lst)
    lst.append(value)

    def append_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _Z)
        cts = entries(ȳ, n + 1, "a list")
        return (_NO, list(cts[:n]) if n else _Z, cts[n])

    return lst, append_pullback


def inplace_helper(op: str) -> Callable:
    """``x op= y``: lists extend in place; everything else rebinds to ``x op y``.

    numpy arrays are updated out of place when differentiated (the old array
    may be saved by a pullback); another name bound to the same array does not
    see the update. Inactive code keeps Python's in-place semantics.
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
        return _runtime.rcall(outofplace, x, y)

    rrule.register(iop, config=ADConfig)(iop_rule)
    return iop
