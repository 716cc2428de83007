"""The guards a transform is used under: what the names it specialised on must
still resolve to.

A transform with helpers inlined (``inlining``) or captured tuples unpacked
(``captured_stars``) keeps ``((key, value), ...)``: ``transform.cache`` uses it
only while every key still names its value in the function (``guards_hold``, at
each call), and a run during which one changed is refused afterwards
(``check_guards_after``). A key is a global's name, ``("module", "attr")`` for a
helper called as ``module.helper``, ``(helper, "name")`` for a global of another
module that ``helper`` reads, ``Body(helper, "__code__")`` or ``"__defaults__"``
for what an inlined body was built from, or ``captured_stars.Length(name)``.

>>> import math
>>> def f(x):
...     return math.sqrt(x)
>>> guards_hold(((("math", "sqrt"), math.sqrt),), f)
True
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

from ad.transform.captured_stars import Length, length

__all__ = ["Body", "check_guards_after", "guarded", "guards_hold"]


def guards_hold(guards: tuple, f: types.FunctionType) -> bool:
    """Whether every name in ``guards`` still resolves to its object in ``f``
    (see ``_guarded``)."""
    get = f.__globals__.get
    for name, fn in guards:  # every call reads them: the common kinds inline
        kind = type(name)
        if kind is str:
            if get(name) is not fn:
                return False
        elif kind is Body:  # the helper's __code__ or __defaults__
            if getattr(name[0], name[1]) is not fn:
                return False
        elif kind is tuple:
            owner, attr = name
            if type(owner) is str:
                if getattr(get(owner), attr, None) is not fn:
                    return False
            elif owner.__globals__.get(attr) is not fn:
                return False
        elif not _holds(name, fn, f):
            return False
    return True


class Body(NamedTuple):
    """A guard's key: what an inlined helper's body was built from, ``__code__`` or
    ``__defaults__`` (both replaced in place by ``%autoreload``, or by hand)."""

    fn: types.FunctionType
    attr: str


def guarded(key: Any, f: types.FunctionType) -> Any:
    """What a guard's key names now in ``f``: a global (``"name"``), an attribute of
    a module ``f`` names (``("module", "attr")``: a helper called as
    ``module.helper``), a global of another module (``(helper, "name")``: one that
    ``helper``, of that module, reads), or the length of a tuple ``f`` captures or
    reads as a global (``Length(name)``, see ``captured_stars``); None where
    nothing is."""
    if type(key) is str:
        return f.__globals__.get(key)
    if type(key) is Length:
        return length(key.name, f)
    if type(key) is Body:
        return getattr(key.fn, key.attr)
    owner, name = key
    if type(owner) is types.FunctionType:
        return owner.__globals__.get(name)
    return getattr(f.__globals__.get(owner), name, None)


def _shown(key: Any) -> str:
    """A guard's key as the user spells the name."""
    if type(key) is str:
        return key
    if type(key) is Length:
        return key.name
    if type(key) is Body:
        return f"{key.fn.__qualname__}.{key.attr}"
    owner, name = key
    return name if type(owner) is types.FunctionType else f"{owner}.{name}"


def _holds(key: Any, value: Any, f: types.FunctionType) -> bool:
    if type(key) is Length:
        return guarded(key, f) == value
    return guarded(key, f) is value


def check_guards_after(guards: tuple, f: types.FunctionType) -> None:
    """After a run of ``f``'s transform with helpers inlined (or captured tuples
    unpacked): refuse the result if one of their names was rebound meanwhile (the
    run used what it held before)."""
    if guards_hold(guards, f):  # the usual case, every call
        return
    for key, value in guards:
        if not _holds(key, value, f):
            from ad.errors import MutationError

            name = _shown(key)
            if type(key) is Length:
                what = f"the {value} entries of the tuple it held had been unpacked into calls"
            elif type(key) is Body:
                what = f"{key.fn.__qualname__} had been inlined into it as it was before"
            else:
                what = f"{name} had been inlined into it as the function it was before"
            raise MutationError(
                f"{f.__qualname__} ({f.__code__.co_filename}:{f.__code__.co_firstlineno}): "
                f"the name {name!r} was rebound while it was being differentiated, and "
                f"{what}.\n"
                f"To fix: rebind {name!r} before differentiating {f.__qualname__}, or pass "
                "what it holds as an argument."
            )
