"""Which ``__init__`` to differentiate when differentiated code builds an object.

A plain class's own ``__init__`` is Python source: the AD differentiates it
with the new object as its output. A dataclass's or namedtuple's generated
constructor only stores its arguments, so it is differentiated structurally
(each field's cotangent is its argument's), which is fast. But a dataclass
whose generated ``__init__`` also runs ``__post_init__`` computes fields from
others (``self.c = 2 * self.a``): built structurally, that code would run as
plain Python and its derivative be lost. For such a class ``init_to_differentiate``
returns a Python ``__init__`` equivalent to the generated one (the same
parameters, defaults and factories, fields stored the same way, then
``self.__post_init__(...)`` with the ``InitVar`` arguments), whose source is
registered with ``linecache`` (as ``attrs`` does for its generated methods) so
that the transform reads it like any other function.

>>> import ad
>>> from dataclasses import dataclass
>>> @dataclass
... class Box:
...     side: float
...     def __post_init__(self):
...         self.area = self.side * self.side
>>> ad.gradient(lambda s: Box(s).area, 3.0)
(6.0,)
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
import types
import weakref
from typing import Any

__all__ = ["init_to_differentiate"]

_FunctionType = types.FunctionType
_EQUIVALENTS: weakref.WeakKeyDictionary[type, Any] = weakref.WeakKeyDictionary()


def init_to_differentiate(cls: type) -> Any:
    """The Python ``__init__`` to differentiate to build a ``cls``: its own, or
    for a dataclass whose generated ``__init__`` calls ``__post_init__`` an
    equivalent in Python source; None where the object is built structurally
    (a dataclass's or namedtuple's generated constructor) or not by Python code
    (``__new__`` is not ``object``'s, or ``__init__`` is C code)."""
    if cls.__new__ is not object.__new__:
        return None
    init = cls.__init__  # type: ignore[misc]
    if type(init) is not _FunctionType:
        return None
    if dataclasses.is_dataclass(cls) and _generated(init):
        if not hasattr(cls, "__post_init__"):
            return None
        try:
            return _EQUIVALENTS[cls]
        except KeyError:
            equivalent = _EQUIVALENTS[cls] = _equivalent_init(cls, init)
            return equivalent
    return init


def _generated(init: Any) -> bool:
    """Whether ``init`` is the one ``dataclasses`` wrote (not the class body's)."""
    return init.__code__.co_filename == "<string>" or "__create_fn__" in init.__qualname__


def _equivalent_init(cls: type, init: Any) -> Any:
    """A Python function doing what the generated ``init`` does, with its source
    in ``linecache``."""
    params = list(inspect.signature(init).parameters.values())[1:]
    fields = dataclasses.fields(cls)
    names = {p.name for p in params} | {f.name for f in fields}
    me = next(n for n in ("self", "_self", "__self") if n not in names)
    frozen = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    ns: dict[str, Any] = {"object": object}
    header, star = [me], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star:
            header.append("*")
            star = True
        if p.default is p.empty:
            header.append(p.name)
        else:
            ns[f"_default_{p.name}"] = p.default
            header.append(f"{p.name}=_default_{p.name}")
    body = []
    for f in fields:
        factory = f.default_factory is not dataclasses.MISSING
        if factory:
            ns[f"_factory_{f.name}"] = f.default_factory
        if f.init:
            value = f.name
            if factory:
                value = f"_factory_{f.name}() if {f.name} is _default_{f.name} else {f.name}"
        elif factory:
            value = f"_factory_{f.name}()"
        elif f.default is not dataclasses.MISSING:
            ns[f"_default_{f.name}"] = f.default
            value = f"_default_{f.name}"
        else:
            continue
        if frozen:
            body.append(f"object.__setattr__({me}, {f.name!r}, {value})")
        else:
            body.append(f"{me}.{f.name} = {value}")
    stored = {f.name for f in fields}
    init_vars = ", ".join(p.name for p in params if p.name not in stored)
    body.append(f"{me}.__post_init__({init_vars})")
    filename = f"<dataclass __init__ of {cls.__module__}.{cls.__qualname__}>"
    source = f"def __init__({', '.join(header)}):\n" + "".join(f"    {b}\n" for b in body)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
    fn = ns["__init__"]
    fn.__qualname__ = f"{cls.__qualname__}.__init__"
    fn.__module__ = cls.__module__
    return fn
