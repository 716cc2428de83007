"""Operators on user classes, dispatched as Python dispatches them.

``a + b`` in differentiated code calls ``operator.add(a, b)``. When no rule is
registered for the operator and the operands' types, and an operand's class
defines the operator's special method in Python, the method is differentiated
from its source, tried in the data model's order: ``type(a).__add__(a, b)``,
then, when that is missing or returns ``NotImplemented``, the reflected
``type(b).__radd__(b, a)`` (first when ``type(b)`` is a proper subclass of
``type(a)`` that overrides it). ``x op= y`` tries ``__iop__`` first, then the
binary operator. A C slot met on the way (``float.__mul__`` in ``2.0 * v``) is
called as Python calls it, to see whether it defers.

>>> import ad
>>> class V:
...     def __init__(self, x, y):
...         self.x, self.y = x, y
...     def __add__(self, o):
...         return V(self.x + o.x, self.y + o.y)
...     def __rmul__(self, s):
...         return V(s * self.x, s * self.y)
>>> def f(a, b):
...     v = 2.0 * (V(a, b) + V(b, b))
...     return v.x * v.y
>>> ad.gradient(f, 1.0, 3.0)
(24.0, 56.0)
"""

from __future__ import annotations

import builtins
import math
import operator
import types
from collections.abc import Callable
from typing import Any

from rulescore import non_differentiable

__all__ = ["CONVERSIONS", "defines_inplace", "dispatch", "method", "overriding"]

_FunctionType = types.FunctionType

#: operator -> (method, reflected method, symbol in Python's TypeError)
_BINARY: dict[Any, tuple[str, str, str]] = {
    operator.add: ("__add__", "__radd__", "+"),
    operator.sub: ("__sub__", "__rsub__", "-"),
    operator.mul: ("__mul__", "__rmul__", "*"),
    operator.truediv: ("__truediv__", "__rtruediv__", "/"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__", "//"),
    operator.mod: ("__mod__", "__rmod__", "%"),
    operator.pow: ("__pow__", "__rpow__", "** or pow()"),
    operator.matmul: ("__matmul__", "__rmatmul__", "@"),
    operator.and_: ("__and__", "__rand__", "&"),
    operator.or_: ("__or__", "__ror__", "|"),
    operator.xor: ("__xor__", "__rxor__", "^"),
    operator.lshift: ("__lshift__", "__rlshift__", "<<"),
    operator.rshift: ("__rshift__", "__rrshift__", ">>"),
    builtins.pow: ("__pow__", "__rpow__", "** or pow()"),
    builtins.divmod: ("__divmod__", "__rdivmod__", "divmod()"),
}
#: operator -> (method, Python's TypeError for an operand without it)
_UNARY: dict[Any, tuple[str, str]] = {
    operator.neg: ("__neg__", "bad operand type for unary -: '{}'"),
    operator.pos: ("__pos__", "bad operand type for unary +: '{}'"),
    operator.invert: ("__invert__", "bad operand type for unary ~: '{}'"),
    operator.abs: ("__abs__", "bad operand type for abs(): '{}'"),
    builtins.abs: ("__abs__", "bad operand type for abs(): '{}'"),
    operator.getitem: ("__getitem__", "'{}' object is not subscriptable"),
    builtins.round: ("__round__", "type {} doesn't define __round__ method"),
    builtins.iter: ("__iter__", "'{}' object is not iterable"),
    math.floor: ("__floor__", "must be real number, not {}"),
    math.ceil: ("__ceil__", "must be real number, not {}"),
    math.trunc: ("__trunc__", "type {} doesn't define __trunc__ method"),
    builtins.float: ("__float__", "float() argument must be a string or a real number, not '{}'"),
    builtins.complex: (
        "__complex__",
        "complex() first argument must be a string or a number, not '{}'",
    ),
}
#: classes whose call on an object runs its method: ``float(obj)`` is ``obj.__float__()``
CONVERSIONS = frozenset([builtins.float, builtins.complex])
#: the unary operators that take a second argument (``obj[key]``, ``round(x, n)``)
_WITH_ARGUMENT = {operator.getitem: (2,), builtins.round: (1, 2)}
#: ``x op= y`` -> (its method, the binary operator it falls back to)
_INPLACE: dict[Any, tuple[str, Any]] = {
    getattr(operator, f"i{op.__name__.rstrip('_')}"): (
        f"__i{names[0][2:]}",
        op,
    )
    for op, names in _BINARY.items()
    if op.__module__ == "_operator" and hasattr(operator, f"i{op.__name__.rstrip('_')}")
}


def method(cls: type, name: str) -> Any:
    """``cls``'s attribute ``name`` as the data model finds it (on the type, along
    its MRO), or None where it has none (or sets it to None)."""
    for k in cls.__mro__:
        if name in k.__dict__:
            return k.__dict__[name]
    return None


def _plan(f: Any, args: tuple) -> list[tuple[Any, tuple[int, ...]]] | None:
    """The methods Python would try for ``f(*args)``, each with the order of the
    arguments it takes; None when none of them is a Python function (then this
    is not a user class's operator, and the caller reports the missing rule)."""
    plan: list[tuple[Any, tuple[int, ...]]] = []
    try:
        hash(f)  # the tables below are keyed on the operator
    except TypeError:  # an unhashable callable object (a dataclass with __call__)
        return None
    if f in _INPLACE and len(args) == 2:
        name, f = _INPLACE[f]
        own = method(type(args[0]), name)
        if own is not None:
            plan.append((own, (0, 1)))
    if f in _BINARY and len(args) == 2:
        name, rname, _ = _BINARY[f]
        a, b = type(args[0]), type(args[1])
        lhs = method(a, name)
        rhs = method(b, rname) if b is not a else None
        if rhs is not None and issubclass(b, a) and rhs is not method(a, rname):
            plan += [(rhs, (1, 0)), (lhs, (0, 1))]
        else:
            plan += [(lhs, (0, 1)), (rhs, (1, 0))]
    elif f in _UNARY and len(args) in _WITH_ARGUMENT.get(f, (1,)):
        plan.append((method(type(args[0]), _UNARY[f][0]), tuple(range(len(args)))))
    plan = [(m, order) for m, order in plan if m is not None]
    if not any(type(m) is _FunctionType for m, _ in plan):
        return None
    return plan


def dispatch(f: Any, args: tuple, call: Callable[[Any, tuple], tuple]) -> tuple | None:
    """Differentiate the operator ``f`` on ``args`` through the operands' own
    methods, in Python's order: ``call(method, order)`` differentiates
    ``method(*(args[i] for i in order))`` and returns ``(value, derivative)``.

    None when no operand's class defines the operator in Python, or when a C
    slot computes a value (``ndarray.__add__`` with an object): the caller
    then reports that no rule applies. Python's own TypeError when every
    method declines."""
    plan = _plan(f, args)
    if plan is None:
        return None
    for method, order in plan:
        if type(method) is _FunctionType:
            out = call(method, order)
            if out[0] is not NotImplemented:
                return out
        elif method(*(args[i] for i in order)) is not NotImplemented:
            return None  # a C slot computed the value: no derivative through it
    f = _INPLACE.get(f, (None, f))[1]
    if f in _BINARY:
        raise TypeError(
            f"unsupported operand type(s) for {_BINARY[f][2]}: "
            f"'{type(args[0]).__name__}' and '{type(args[1]).__name__}'"
        )
    raise TypeError(_UNARY[f][1].format(type(args[0]).__name__))


def defines_inplace(inplace: Any, x: Any) -> bool:
    """Whether ``x``'s class defines ``x op= y`` (``inplace``: ``operator.iadd``,
    ...) in Python, as ``__iadd__``: then ``x op= y`` calls it, not ``x op y``."""
    name = _INPLACE[inplace][0]
    return type(method(type(x), name)) is _FunctionType


def overriding(obj: Any, name: str) -> Any:
    """The Python method ``name`` of ``obj``'s class when ``obj`` is an instance of
    a subclass of ``list`` or ``dict`` that defines it (a ``__setitem__`` that
    scales, an ``append`` that logs): Python calls it, so the builtin's rule,
    which ``isinstance`` dispatch would pick, does not apply. None otherwise."""
    cls = type(obj)
    if cls is list or cls is dict:
        return None
    m = method(cls, name)
    return m if type(m) is _FunctionType else None


# Which method a class defines: a question about types, which rule bodies ask
# (``x op= y``'s frule), so nested differentiation runs it as it is.
non_differentiable(method)
non_differentiable(defines_inplace)
non_differentiable(overriding)
