"""Objects with state: the derivatives of a mutable object's fields, kept by the
object's identity, as Zygote keeps a mutable struct's.

The AD passes an object's cotangent along the variables that hold it. That is
exact until a field is written while another name (an alias, a container, the
caller of a method that writes ``self``) holds the object: reads through that
other name would send their cotangents along a path the write never sees. So
from its first write in a differentiation, an object of a user class is kept
by identity instead:

* a read of ``obj.name`` after that write adds its cotangent to the object's
  entry in the pass's store, whoever reads it;
* a write ``obj.name = v`` takes the field's cotangent from the store as
  ``v``'s (the reads after it, through any name, saw ``v``);
* the first write hands what is left (fields read but written by nobody since)
  back to the variable it wrote through, as the cotangent of the object's state
  before: from there it flows to where the object came from.

The pullbacks of writes, and of calls that wrote, must run even when no
cotangent reaches them along variables: they are ``Stateful``, and the
generated adjoint runs a ``Stateful`` pullback whatever its input.

In forward mode the same identity keeps the tangents of the fields written,
which reads through any name find first.

Each differentiation (``ad.gradient``, ``ad.jvp``, ...) is one pass (``scope``);
outside any, objects are followed along variables as before.

>>> import ad
>>> class Counter:
...     def __init__(self, w):
...         self.w = w
...     def __call__(self, x):
...         self.last = self.w * x      # a method writing self
...         return self.last
>>> def f(w, x):
...     m = Counter(w)
...     y = m(x)
...     return y + m.last ** 2          # read through the caller's name
>>> ad.gradient(f, 2.0, 3.0)            # y = wx: (x + 2wx^2, w + 2w^2x)
(39.0, 26.0)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

from ._accumulate import acc
from ._once import ONCE

__all__ = [
    "Pass",
    "Stateful",
    "current",
    "followed",
    "keep_stateful",
    "scope",
    "stateful",
    "tracked",
]

_Z = ZeroTangent()
_NO = NoTangent()
_LOCAL = threading.local()
#: store-mode writes so far (any thread): a call during which it changed wrote
WRITES = [0]
#: passes (any thread) holding field tangents by identity: while there are any,
#: forward mode runs no call as plain Python (it could write such a field)
TANGENT_PASSES = [0]


class Pass:
    """One differentiation: the objects written in it (by id, held so the ids
    stay theirs), the cotangents of their fields, and their fields' tangents."""

    __slots__ = ("forward", "store", "tangents", "written")

    def __init__(self, forward: bool) -> None:
        self.forward = forward  # a forward-mode pass (jvp): it keeps tangents
        self.written: dict[int, Any] = {}
        self.store: dict[int, dict[str, Any]] = {}
        self.tangents: dict[int, dict[str, Any]] = {}

    def mark(self, obj: Any) -> bool:
        """Note a write to ``obj``; whether it is the object's first."""
        WRITES[0] += 1
        if id(obj) in self.written:
            return False
        self.written[id(obj)] = obj
        return True

    def deposit(self, obj: Any, name: str, ct: Any) -> None:
        fields = self.store.setdefault(id(obj), {})
        fields[name] = acc(fields[name], ct) if name in fields else ct

    def take(self, obj: Any, name: str) -> Any:
        fields = self.store.get(id(obj))
        return _Z if fields is None else fields.pop(name, _Z)

    def take_all(self, obj: Any) -> dict[str, Any]:
        return self.store.pop(id(obj), None) or {}


def current(forward: bool = False) -> Pass | None:
    """The innermost differentiation running on this thread, if it is of this
    mode. Under second order (reverse over forward) the forward pass runs inside
    a reverse one: its tangents then follow variables, which the outer reverse
    pass differentiates."""
    stack = getattr(_LOCAL, "stack", None)
    if not stack or stack[-1].forward is not forward:
        return None
    return stack[-1]


@contextlib.contextmanager
def scope(forward: bool = False) -> Iterator[Pass]:
    """One differentiation's pass (nested ones get their own)."""
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    p = Pass(forward)
    stack.append(p)
    try:
        yield p
    finally:
        stack.pop()
        if p.tangents:
            TANGENT_PASSES[0] -= 1


_STATEFUL: dict[type, bool] = {}
_PLAIN_MODULES = ("builtins", "numpy")


def stateful(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a user class whose fields can be written
    (not a tuple, a frozen dataclass, a class, a function, a tangent, numpy's)."""
    cls = type(obj)
    try:
        return _STATEFUL[cls]
    except KeyError:
        pass
    from ._buffer import Buffer  # keeps its own account of its writes

    out = not (
        cls.__module__.split(".")[0] in _PLAIN_MODULES
        or issubclass(cls, Buffer)
        or issubclass(cls, (tuple, type, Tangent, types.FunctionType, types.ModuleType))
        or (dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen)  # type: ignore[attr-defined]
    )
    _STATEFUL[cls] = out
    return out


def tracked(obj: Any) -> Pass | None:
    """The pass that keeps ``obj`` by identity (it was written in it), if any."""
    p = current()
    if p is not None and p.written.get(id(obj)) is obj:
        return p
    return None


def followed(obj: Any, forward: bool = False) -> bool:
    """Whether the pass of this mode already follows ``obj`` by identity: a user
    object written in it before, so its holders read it as differentiated. One
    built without a derivative (``a = Acc()``) is read by its holders as a
    constant until then: a first write that another holder would see (an alias,
    the caller of a method) stays ownership's to refuse."""
    if not stateful(obj):
        return False
    p = current(forward)
    return p is not None and p.written.get(id(obj)) is obj


class Stateful:
    """A pullback that must run even when its input cotangent is zero: it hands
    on the cotangents of writes that reads through other names left in the store."""

    __slots__ = ("pb",)

    def __init__(self, pb: Any) -> None:
        self.pb = pb

    def __call__(self, ȳ: Any) -> Any:
        if ONCE.expect is self:  # run once: so is the pullback it wraps
            ONCE.expect = self.pb
        return self.pb(ȳ)


def keep_stateful(inner: Any, outer: Any) -> Any:
    """``outer``, a pullback wrapping ``inner``: ``Stateful`` when ``inner`` is."""
    return Stateful(outer) if type(inner) is Stateful else outer


def read_pullback(p: Pass, obj: Any, name: str) -> Any:
    """``obj.name``'s pullback when ``obj`` is kept by identity."""

    def stateful_getattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if not isinstance(ȳ, AbstractZero):
            p.deposit(obj, name, ȳ)
        return (_NO, _Z, _NO)

    return stateful_getattr_pullback


def write_pullback(p: Pass, obj: Any, name: str, first: bool) -> Stateful:
    """``obj.name = v``'s pullback (``first``: the object's first write in ``p``)."""
    cls = type(obj)

    def stateful_setattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        v = p.take(obj, name)
        rest: Any = _Z
        if isinstance(ȳ, Tangent):
            b = dict(ȳ._backing)
            if name in b:
                v = acc(v, b.pop(name))
            rest = type(ȳ)._from_backing(b) if b else _Z
        if first:
            fields = p.take_all(obj)
            if fields:
                rest = acc(rest, Tangent[cls]._from_backing(fields))
        return (_NO, rest, _NO, v)

    return Stateful(stateful_setattr_pullback)


def write_tangent(p: Pass, obj: Any, name: str, v̇: Any) -> None:
    """Forward mode: the tangent of ``obj.name`` after a write, for every reader."""
    if not p.tangents:
        TANGENT_PASSES[0] += 1
    p.written.setdefault(id(obj), obj)
    p.tangents.setdefault(id(obj), {})[name] = v̇


def read_tangent(obj: Any, name: str) -> Any:
    """Forward mode: the tangent written to ``obj.name`` in this pass, or None."""
    p = current(forward=True)
    if p is None or not p.tangents:
        return None
    fields = p.tangents.get(id(obj))
    if fields is None or p.written.get(id(obj)) is not obj:
        return None
    return fields.get(name)


# Differentiating the AD's own rules (second order: reverse over reverse, forward
# over reverse), the inner pass follows objects along variables: while a rule's
# code runs transformed, no pass keeps them by identity (ownership refuses what
# variables cannot follow).
_SUSPENDED = Pass(None)  # type: ignore[arg-type]
_INTERNAL: dict[types.CodeType, bool] = {}
_INTERNAL_DIRS = tuple(
    os.path.dirname(m.__file__) + os.sep for m in (sys.modules["rules"], sys.modules["rulescore"])
) + (os.path.dirname(__file__) + os.sep,)


def internal(code: types.CodeType) -> bool:
    """Whether ``code`` is the AD's own (a rule, a helper): see ``suspended``."""
    try:
        return _INTERNAL[code]
    except KeyError:
        out = _INTERNAL[code] = code.co_filename.startswith(_INTERNAL_DIRS)
        return out


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """No pass while the AD's own code runs transformed (differentiated)."""
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    stack.append(_SUSPENDED)
    try:
        yield
    finally:
        stack.pop()
