"""Routes of library calls whose result is built from their inputs' very objects.

A library call (``plain_calls.run``) whose result is one of its inputs, or a new
list, tuple, dict or object whose entries (attributes) are, by identity, inputs or
entries of inputs, is linear in those inputs: ``d.copy()``, ``copy.copy(obj)``,
``dataclasses.replace(p, w=v)``, ``sorted([b, a])``, ``typing.cast(float, x)``.
Its derivative routes each entry's cotangent (tangent) to the input, or the
input's entry, that it is. Identity decides, never equality; an object found
in two places is ambiguous (no route). The receiver of a bound method
(``d.copy``) is an input too: its key is ``RECEIVER``, and its cotangent is the
method's own (``reverse_fallback._call_bound``), its tangent the method's.

Here: the route (``route_of``), the cotangents it sends (``route_cotangents``)
and the tangent it gives (``route_tangent``).

>>> d = {"a": 1.5, "b": "label"}
>>> route = route_of(d.copy(), (), None, d)
>>> route_cotangents(route, {"a": 2.0}, 0, ())[0]
{'a': 2.0}
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import Any

from ad.runtime.library_code import _in_stdlib, derivative_free
from ad.runtime.tangents import mapping_entry, tan_dict, tan_list, tan_tuple
from ad.runtime.tracebacks import internal_file
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

__all__ = ["RECEIVER", "route_cotangents", "route_of", "route_tangent"]

_Z = ZeroTangent()
_NO = NoTangent()


class _Receiver:
    """The key of a bound method's receiver in a route."""

    def __repr__(self) -> str:
        return "RECEIVER"


RECEIVER: Any = _Receiver()

#: A route says where a result's derivative comes from: None (nowhere: zero), an
#: input's key (an int position, a str keyword, ``RECEIVER``: the result is that
#: object), or a ``_Built`` (a new container or object of inputs' entries).
Route = Any


@dataclasses.dataclass(frozen=True)
class _Built:
    """A result built of inputs' objects: ``kind`` and ``cls`` are the result's
    structure (``_shape``), ``pairs`` say, per slot of the result, which input
    (key) and which slot of it (None: the whole input) that entry is, and
    ``shapes`` give the structure of each input read by slot."""

    kind: str
    cls: type
    n: int
    pairs: tuple
    shapes: dict


def _shape(v: Any) -> tuple[str, list] | None:
    """``(kind, [(slot, entry)...])`` of a list, tuple, dict or object with fields,
    else None. A namedtuple, a dataclass and a plain object of the user's class are read by field."""
    t = type(v)
    if t is list or t is tuple:
        return "seq", list(enumerate(v))
    if t is dict:
        return "map", list(v.items())
    fields = getattr(t, "_fields", None) if isinstance(v, tuple) else None
    if fields is not None:
        return "obj", list(zip(fields, v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return "obj", [(f.name, getattr(v, f.name)) for f in dataclasses.fields(v)]
    d = getattr(v, "__dict__", None)
    if type(d) is dict and not isinstance(v, type) and not callable(v) and _users_class(t):
        return "obj", list(d.items())
    return None


def _users_class(t: type) -> bool:
    """Whether ``t`` is a class of the user's, whose instances' attributes are their
    state: not a library's (a dask array's attributes are its graph)."""
    mod = sys.modules.get(t.__module__)
    path = getattr(mod, "__file__", None)
    if not isinstance(path, str):
        return t.__module__ == "__main__"
    return not (_in_stdlib(path) or internal_file(path) or "-packages" + os.sep in path)


def _keyed(args: tuple, kwargs: dict | None, receiver: Any) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = list(enumerate(args))
    if kwargs:
        out.extend(kwargs.items())
    if receiver is not None:
        out.append((RECEIVER, receiver))
    return out


def whole_key(v: Any, keyed: list[tuple[Any, Any]]) -> Any:
    """The key of the one input that is ``v``; None if none, or several, are."""
    found = [k for k, a in keyed if a is v]
    return found[0] if len(found) == 1 else None


def route_of(y: Any, args: tuple, kwargs: dict | None, receiver: Any) -> Route:
    """The route of ``y``, a library call's result, to its inputs (see the module
    docstring); None when ``y`` is not built of its inputs' objects."""
    keyed = _keyed(args, kwargs, receiver)
    key = whole_key(y, keyed)
    if key is not None:
        return key
    shape = _shape(y)
    if shape is None:
        return None
    kind, slots = shape
    shapes: dict[Any, tuple] = {}
    index: dict[int, list] = {}  # id(entry of an input) -> [(key, slot)...]
    for k, a in keyed:
        s = _shape(a)
        if s is not None:
            shapes[k] = (s[0], type(a), len(s[1]))
            for slot, e in s[1]:
                index.setdefault(id(e), []).append((k, slot))
    pairs = []
    for slot, e in slots:
        whole = [(k, None) for k, a in keyed if a is e]
        found = whole + index.get(id(e), [])
        if len(found) > 1:  # one object in several places: a copy keeps its slot
            found = [
                ks
                for ks in found
                if ks[1] is not None and ks[1] == slot and shapes[ks[0]][0] == kind
            ] or found
        if len(found) != 1:
            if derivative_free(e):
                continue
            return None
        pairs.append((slot, found[0]))
    if not pairs:
        return None
    return _Built(kind, type(y), len(slots), tuple(pairs), shapes)


# --- cotangents (reverse mode) ----------------------------------------------------------


def _ct_entry(ȳ: Any, kind: str, slot: Any) -> Any:
    """The cotangent of the entry at ``slot`` of a structure of ``kind``."""
    if isinstance(ȳ, AbstractZero):
        return _Z
    if isinstance(ȳ, Tangent):
        if kind == "obj":
            return getattr(ȳ, slot) if isinstance(slot, str) else ȳ[slot]
        return ȳ[slot]
    if kind == "map":
        return ȳ.get(slot, _Z) if isinstance(ȳ, dict) else _Z
    if kind == "obj":
        return getattr(ȳ, slot, _Z)  # a primal-like object as its own cotangent
    return ȳ[slot]


def _assemble(shape: tuple, parts: dict) -> Any:
    """An input's cotangent from the cotangents of some of its slots."""
    kind, cls, n = shape
    if kind == "seq":
        cts = [parts.get(i, _Z) for i in range(n)]
        return cts if cls is list else tuple(cts)
    if kind == "map":
        return dict(parts)
    return Tangent[cls]._from_backing(dict(parts))  # type: ignore[misc]


def route_cotangents(route: Route, ȳ: Any, n: int, kwnames: Any) -> tuple[Any, list, dict]:
    """``(receiver's cotangent, per positional argument, per keyword)``: the
    cotangents ``route`` sends ``ȳ`` to."""
    from ad.runtime.accumulate import acc

    cts: list[Any] = [_Z] * n
    kw: dict[Any, Any] = {k: _Z for k in kwnames}
    kw[RECEIVER] = _Z
    ȳ = unthunk(ȳ)
    if route is not None and not isinstance(ȳ, AbstractZero):
        if type(route) is not _Built:
            _add(cts, kw, route, ȳ, acc)
        else:
            parts: dict[Any, dict] = {}
            for slot, (key, inslot) in route.pairs:
                c = unthunk(_ct_entry(ȳ, route.kind, slot))
                if isinstance(c, AbstractZero):
                    continue
                if inslot is None:
                    _add(cts, kw, key, c, acc)
                else:
                    got = parts.setdefault(key, {})
                    got[inslot] = acc(got[inslot], c) if inslot in got else c
            for key, got in parts.items():
                _add(cts, kw, key, _assemble(route.shapes[key], got), acc)
    return kw.pop(RECEIVER), cts, kw


def _add(cts: list, kw: dict, key: Any, c: Any, acc: Callable) -> None:
    if type(key) is int:
        cts[key] = c if isinstance(cts[key], AbstractZero) else acc(cts[key], c)
    else:
        kw[key] = c if isinstance(kw[key], AbstractZero) else acc(kw[key], c)


# --- tangents (forward mode) -------------------------------------------------------------


def _tan_entry(ṫ: Any, kind: str, slot: Any) -> Any:
    """The tangent of the entry at ``slot`` of a structure of ``kind``."""
    ṫ = unthunk(ṫ)
    if isinstance(ṫ, AbstractZero):
        return _Z
    if kind == "map":
        return mapping_entry(ṫ, slot)
    if isinstance(ṫ, Tangent) and kind == "obj" and isinstance(slot, str):
        return getattr(ṫ, slot)
    return ṫ[slot]


def route_tangent(route: Route, tangent_of: Callable[[Any], Any]) -> Any:
    """The tangent of a result along ``route``; ``tangent_of(key)`` is an input's."""
    if route is None:
        return _Z
    if type(route) is not _Built:
        return tangent_of(route)
    ts: dict[Any, Any] = {}
    for slot, (key, inslot) in route.pairs:
        ṫ = tangent_of(key)
        ts[slot] = ṫ if inslot is None else _tan_entry(ṫ, route.shapes[key][0], inslot)
    if route.kind == "seq":
        entries = [ts.get(i, _NO) for i in range(route.n)]
        return tan_list(*entries) if route.cls is list else tan_tuple(*entries)
    if route.kind == "map":
        return tan_dict(tuple(ts), tuple(ts.values()))
    fields = {k: v for k, v in ts.items() if not isinstance(v, AbstractZero)}
    return Tangent[route.cls]._from_backing(fields) if fields else _Z  # type: ignore[misc]
