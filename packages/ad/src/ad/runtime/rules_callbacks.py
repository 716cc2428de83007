"""The builtins that call a user function for a decision: ``sorted``'s and
``min``/``max``'s ``key``, ``filter``'s predicate.

No derivative flows through the value such a function returns (it is only
compared), so ``rules`` calls it as plain Python. But the function may also
*write*: ``def key(v): r.last = v * x; return v`` stores a value that carries a
derivative into an object that the code after ``sorted`` reads. Called as plain
Python, that write would be invisible to the AD and the gradient silently wrong.
So here, under ad, a function that may write (``may_write``: its code, or a
Python function it calls, writes an attribute, an item, a global or a captured
variable, or calls a method) is called through the AD (``rrule_via_ad`` and
``frule_via_ad``), once per item and in Python's order: its writes are then
differentiated like any other, and the function's and the items' cotangents
from those writes come back through the pullback (``key``'s as a keyword
cotangent, see ``reverse.rcall_kw``). A function that only reads runs as
plain Python, as fast as before.

A rule whose function wrote returns a ``Stateful`` pullback (``_returning``): it
runs even when no cotangent reaches the rule's value (``min(objs, key=lambda o:
o.touch())`` whose value is unused, or is read only through the objects the key
wrote), and runs each call's pullback, so that the cotangents that reads after
the call left in the pass's store reach the writes. ``map`` and
``functools.reduce`` need nothing here: ``rules``' own rules call their function
through the AD already, and run (and return) a pullback that must run, such as
a ``Stateful`` one, by the ``must_run`` convention of ``rules._higher_order``.
"""

from __future__ import annotations

import builtins
import dis
import functools
import sys
import types
from collections.abc import KeysView, Mapping
from typing import Any

import numpy as np

from ad.runtime import state as _state
from ad.runtime.accumulate import acc
from ad.runtime.attribute_routes import _NOT_FOUND, _class_attr, _descriptor_plan, _python_slot
from ad.runtime.config import ADConfig
from rules.extension import item_tangents, items_cotangent, seq_entries
from rulescore import (
    AbstractZero,
    NoTangent,
    ZeroTangent,
    frule,
    frule_via_ad,
    non_differentiable,
    rrule,
    rrule_via_ad,
    unthunk,
)

__all__ = ["may_write"]

_NO = NoTangent()
_Z = ZeroTangent()
_Iterable = tuple | list | np.ndarray | Mapping | KeysView  # a dict yields its keys

#: Opcodes that write something another function can see, or call a method (which may
#: write its object). A write of the function's own locals is none of these.
_WRITES = frozenset(
    [
        "STORE_ATTR",
        "DELETE_ATTR",
        "STORE_SUBSCR",
        "DELETE_SUBSCR",
        "STORE_SLICE",
        "STORE_GLOBAL",
        "DELETE_GLOBAL",
        "LOAD_METHOD",
    ]
)
_PLAIN_MODULES = ("builtins", "math", "cmath", "numpy", "operator", "scipy")
_MAY_WRITE: dict[types.CodeType, bool] = {}


def may_write(fn: Any, depth: int = 4, kinds: Any = ()) -> bool:
    """Whether calling ``fn`` may write state that the code after the call reads
    (conservative: a method call, a call of a user class or callable object, or
    more than ``depth`` nested Python calls count as writes). An attribute read
    may run a Python getter (a property, a descriptor's ``__get__``,
    ``__getattr__``, ``__getattribute__``) that writes, such as a property that
    counts its reads or fills a cache: the getters of the classes ``fn`` can
    reach (its globals' and captured objects', and ``kinds``, the types of the
    values it will be called with) are checked as ``fn``'s own code is."""
    if isinstance(fn, functools.partial):
        parts = (*fn.args, *fn.keywords.values())
        kinds = (*kinds, *map(type, parts))
        return may_write(fn.func, depth, kinds) or any(map(_callable_may_write, parts))
    fn = getattr(fn, "__func__", fn)  # a bound method: its function
    if type(fn) is not types.FunctionType:
        call = next(
            (c.__dict__["__call__"] for c in type(fn).__mro__ if "__call__" in c.__dict__), None
        )
        if type(call) is types.FunctionType:  # a user object with a Python __call__
            return True
        return False  # a builtin, a C function or type: writes nothing of ours
    if depth == 0:
        return True
    code = fn.__code__
    known = _MAY_WRITE.get(code)
    if known is None:
        known = _code_writes(code) or any(
            _value_may_write(v, depth) for v in _names(fn, code).values()
        )
        if len(_MAY_WRITE) >= 1024:  # bounded: code made per call leaves
            _MAY_WRITE.clear()
        _MAY_WRITE[code] = known
    return known or _reads_may_write(fn, code, depth, kinds)


def _reads_may_write(fn: types.FunctionType, code: types.CodeType, depth: int, kinds: Any) -> bool:
    """Whether an attribute that ``fn`` (or a Python function it calls) reads runs a
    getter that may write, on the classes it can reach: ``kinds`` and those of the
    objects its globals and captured variables hold (and hold in a list, tuple or
    dict). Not cached with ``fn``'s code: the objects a closure captures change."""
    if depth == 0:
        return True
    names = _attributes(code)
    values = _names(fn, code).values() if names or code.co_names or code.co_freevars else ()
    if names:
        seen = set(kinds)
        for v in values:
            _add_kinds(v, seen)
        if any(_getter_writes(k, names, depth) for k in seen):
            return True
    return any(
        type(v) is types.FunctionType and _reads_may_write(v, v.__code__, depth - 1, kinds)
        for v in values
    )


def _add_kinds(v: Any, seen: set) -> None:
    if isinstance(v, (list, tuple)):
        seen.update(map(type, v[:16]))
    elif type(v) is dict:
        seen.update(type(e) for _, e in zip(range(16), v.values()))
    if not isinstance(v, (types.FunctionType, types.ModuleType, type)):
        seen.add(type(v))


_ATTRIBUTES: dict[types.CodeType, frozenset] = {}
_GETTERS: dict[tuple, bool] = {}


def _attributes(code: types.CodeType) -> frozenset:
    """The attribute names ``code`` (or a lambda or comprehension in it) reads:
    ``o.name``, and the constant strings of ``getattr(o, "name")``."""
    found = _ATTRIBUTES.get(code)
    if found is None:
        out: set = set()
        consts = "getattr" in code.co_names
        for ins in dis.get_instructions(code):
            if ins.opname == "LOAD_ATTR" or (consts and ins.opname == "LOAD_CONST"):
                if isinstance(ins.argval, str):
                    out.add(ins.argval)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                out |= _attributes(c)
        found = frozenset(out)
        if len(_ATTRIBUTES) >= 1024:  # bounded: code made per call leaves
            _ATTRIBUTES.clear()
        _ATTRIBUTES[code] = found
    return found


def _getter_writes(cls: type, names: frozenset, depth: int) -> bool:
    """Whether reading one of ``names`` on an instance of ``cls`` runs a Python
    getter that may write (``may_write``, with ``cls`` for its ``self``)."""
    if (getattr(cls, "__module__", "") or "").split(".")[0] in _PLAIN_MODULES:
        return False
    key = (cls, names)
    known = _GETTERS.get(key)
    if known is None:
        getters = []
        custom = _python_slot(cls, "__getattribute__")
        if custom is not None:
            getters.append(custom)
        fallback = _python_slot(cls, "__getattr__")
        for name in names:
            attr = _class_attr(cls.__mro__, name)
            if attr is _NOT_FOUND:
                if fallback is not None:
                    getters.append(fallback)
                continue
            plan = _descriptor_plan(attr)
            if plan is not None and type(plan[1]) is types.FunctionType:
                getters.append(plan[1])
        known = any(may_write(g, depth - 1, (cls,)) for g in getters)
        if len(_GETTERS) >= 1024:  # bounded: classes made per call leave
            _GETTERS.clear()
        _GETTERS[key] = known
    return known


def _callable_may_write(v: Any) -> bool:
    return callable(v) and may_write(v)


def _code_writes(code: types.CodeType) -> bool:
    """Whether ``code`` (or a lambda or comprehension in it) writes (``_WRITES``, or
    a ``nonlocal`` variable)."""
    for ins in dis.get_instructions(code):
        if ins.opname in _WRITES:
            return True
        if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_freevars:
            return True
        # Python 3.12+: a method call loads the attribute with the low bit set
        if ins.opname == "LOAD_ATTR" and sys.version_info >= (3, 12) and (ins.arg or 0) & 1:
            return True
    return any(_code_writes(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _names(fn: types.FunctionType, code: types.CodeType) -> dict[str, Any]:
    """What the names ``code`` reads from outside hold now (globals, captures)."""
    out: dict[str, Any] = {}
    for n in code.co_names:
        if n in fn.__globals__:
            out[n] = fn.__globals__[n]
    for n, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            out[n] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return out


def _value_may_write(v: Any, depth: int) -> bool:
    if type(v) is types.FunctionType:
        return may_write(v, depth - 1)
    if isinstance(v, type):  # constructing a user class runs its __init__
        return (getattr(v, "__module__", "") or "").split(".")[0] not in _PLAIN_MODULES
    return False


# A decision about the key, not a value: at second order, where the rules below are
# differentiated, it runs as plain Python (it loops over sets, which the AD refuses).
non_differentiable(may_write)


def _key_calls(config: Any, key: Any, items: list) -> tuple[list, list | None]:
    """``key`` of each item, in order; the pullbacks when it is called through ad
    and wrote an object's field, or an item of a container the pass follows (see
    ``_returning``)."""
    if key is None:
        return items, None
    if not may_write(key, kinds=set(map(type, items))):
        return [key(v) for v in items], None
    n = _state.WRITES[0]
    keys, pbs = [], []
    for v in items:
        k, pb = rrule_via_ad(config, key, v)
        keys.append(k)
        pbs.append(pb)
    return keys, (pbs if _state.WRITES[0] != n else None)


def _returning(y: Any, pullback: Any, pbs: list | None) -> tuple:
    """A rule's ``(y, pullback)``. When the user function it called wrote
    (``pbs``), the pullback is ``Stateful``: it must run even when no cotangent
    reaches ``y`` (``min(objs, key=lambda o: o.touch())`` whose value is unused,
    or read only through the objects the key wrote), for the writes' cotangents,
    which reads after the call left in the pass's store, to reach what was written."""
    return (y, pullback) if pbs is None else (y, _state.Stateful(pullback))


def _key_cotangents(pbs: list | None, n: int) -> tuple[Any, list]:
    """The cotangents, from the key's writes, of the key and of each item: each
    call's pullback runs with a zero cotangent for the key value (compared only),
    in reverse order."""
    if pbs is None:
        return _Z, [_Z] * n
    dkey: Any = _Z
    cts: list = [_Z] * n
    for i in reversed(range(n)):
        out = pbs[i](_Z)
        dkey = acc(dkey, out[0]) if not isinstance(out[0], (AbstractZero, NoTangent)) else dkey
        cts[i] = out[1]
    return dkey, cts


def _add(a: Any, b: Any) -> Any:
    a, b = unthunk(a), unthunk(b)
    if isinstance(a, AbstractZero):
        return b
    if isinstance(b, AbstractZero):
        return a
    return acc(a, b)


# --- sorted ---------------------------------------------------------------------------


def _sorted_rule(config: Any, xs: Any, **kwargs: Any) -> Any:
    key, reverse = kwargs.get("key"), kwargs.get("reverse", False)
    items = list(xs)
    keys, pbs = _key_calls(config, key, items)
    order = _order(keys, reverse)
    y = [items[i] for i in order]

    def sorted_pullback(ȳ: Any) -> tuple:
        dkey, entries = _key_cotangents(pbs, len(items))
        cts = seq_entries(ȳ, len(y))
        for k, i in enumerate(order):
            entries[i] = _add(entries[i], cts[k])
        out = (_NO, items_cotangent(xs, entries))
        if not kwargs:
            return out
        kw = {k: _NO for k in kwargs}
        if "key" in kw:
            kw["key"] = dkey
        return (*out, kw)

    return _returning(y, sorted_pullback, pbs)


_sorted_rule.keyword_cotangents = True  # type: ignore[attr-defined]
rrule.register(sorted, config=ADConfig)(_sorted_rule)


def _key_tangents(config: Any, key: Any, k̇: Any, items: list, ṫs: list) -> list:
    """``key`` of each item, in order, called through ad when it may write."""
    if key is None:
        return items
    if not may_write(key, kinds=set(map(type, items))):
        return [key(v) for v in items]
    return [frule_via_ad(config, (k̇, ṫ), key, v)[0] for v, ṫ in zip(items, ṫs)]


def _split_keywords(ḟ: Any, rest: tuple) -> tuple[dict, Any, tuple]:
    """(the keywords' tangents, ḟ, the rest) of a ``keyword_tangents`` frule's arguments."""
    if type(ḟ) is dict:
        return ḟ, rest[0], rest[1:]
    return {}, ḟ, rest


def _sorted_frule(config: Any, ḟ: Any, *rest: Any, key: Any = None, reverse: bool = False) -> Any:
    kw_ts, ḟ, (ẋs, xs) = _split_keywords(ḟ, rest)
    items = list(xs)
    ṫs = item_tangents(xs, ẋs, len(items))
    keys = _key_tangents(config, key, kw_ts.get("key", _Z), items, ṫs)
    order = _order(keys, reverse)
    return [items[i] for i in order], [ṫs[i] for i in order]


def _order(keys: list, reverse: bool) -> list:
    """The positions of ``keys`` in the order ``sorted`` puts them (stable)."""
    return sorted(range(len(keys)), key=keys.__getitem__, reverse=reverse)


# The keys are compared only: at second order these run as plain Python, not through
# the rules of sorted, min and max that call them (which would differentiate them).
non_differentiable(_order)


_sorted_frule.keyword_tangents = True  # type: ignore[attr-defined]
# (the signature of ``rules``' own frule, for ad's config)
frule.register_signature(sorted, _sorted_frule, (object,), config=ADConfig)


# --- min and max ------------------------------------------------------------------------


def _extremum(f: Any, items: list, keys: list, kwargs: dict) -> int | None:
    """The index of the item ``f`` (min or max) returns, as Python chooses it; None
    for an empty iterable's default."""
    if not items:
        if "default" in kwargs:
            return None
        f([])  # Python's ValueError
    return f(range(len(items)), key=keys.__getitem__)


non_differentiable(_extremum)


def _extremum_rules(f: Any) -> None:
    name = f.__name__

    def extremum_rrule(config: Any, *args: Any, **kwargs: Any) -> Any:
        items = list(args[0]) if len(args) == 1 else list(args)
        key = kwargs.get("key")
        keys, pbs = _key_calls(config, key, items)
        index = _extremum(f, items, keys, kwargs)
        y = kwargs["default"] if index is None else items[index]

        def extremum_pullback(ȳ: Any) -> tuple:
            dkey, entries = _key_cotangents(pbs, len(items))
            kw = {k: _Z for k in kwargs}
            if index is None:
                kw["default"] = ȳ
            else:
                entries[index] = _add(entries[index], ȳ)
            if "key" in kw:
                kw["key"] = dkey
            out = (_NO, items_cotangent(args[0], entries)) if len(args) == 1 else (_NO, *entries)
            return (*out, kw) if kwargs else out

        extremum_pullback.__name__ = extremum_pullback.__qualname__ = f"{name}_pullback"
        return _returning(y, extremum_pullback, pbs)

    def extremum_frule(config: Any, ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        kw_ts, ḟ, rest = _split_keywords(ḟ, rest)
        n = len(rest) // 2
        ẋs, args = rest[:n], rest[n:]
        items = list(args[0]) if n == 1 else list(args)
        ṫs = item_tangents(args[0], ẋs[0], len(items)) if n == 1 else list(ẋs)
        keys = _key_tangents(config, kwargs.get("key"), kw_ts.get("key", _Z), items, ṫs)
        index = _extremum(f, items, keys, kwargs)
        if index is None:
            return kwargs["default"], kw_ts.get("default", _Z)
        return items[index], ṫs[index]

    extremum_rrule.keyword_cotangents = True  # type: ignore[attr-defined]
    extremum_frule.keyword_tangents = True  # type: ignore[attr-defined]

    # The signatures of ``rules``' own (``rules._builtins``), for ad's config.
    def one_iterable(config: Any, xs: _Iterable, **kwargs: Any) -> Any:
        return extremum_rrule(config, xs, **kwargs)

    def several(config: Any, a: Any, b: Any, *rest: Any, **kwargs: Any) -> Any:
        return extremum_rrule(config, a, b, *rest, **kwargs)

    one_iterable.keyword_cotangents = several.keyword_cotangents = True  # type: ignore[attr-defined]
    rrule.register(f, config=ADConfig)(one_iterable)
    rrule.register(f, config=ADConfig)(several)

    def one_iterable_frule(config: Any, ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        return extremum_frule(config, ḟ, *rest, **kwargs)

    frule.register_signature(f, one_iterable_frule, (_Iterable,), config=ADConfig)

    def several_frule(config: Any, ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        k = 1 if type(ḟ) is dict else 0
        if len(rest) - k < 4:  # one argument: only tuples, lists and arrays have a rule
            return None
        return extremum_frule(config, ḟ, *rest, **kwargs)

    one_iterable_frule.keyword_tangents = several_frule.keyword_tangents = True  # type: ignore[attr-defined]
    frule.register(f, config=ADConfig)(several_frule)


_extremum_rules(builtins.max)
_extremum_rules(builtins.min)


# --- filter -----------------------------------------------------------------------------


def _filter_rule(config: Any, pred: Any, xs: Any) -> Any:
    items = list(xs)
    keys, pbs = _key_calls(config, pred, items)
    kept = [i for i, k in enumerate(keys) if k]
    y = [items[i] for i in kept]

    def filter_pullback(ȳ: Any) -> tuple:
        dpred, entries = _key_cotangents(pbs, len(items))
        cts = seq_entries(ȳ, len(y))
        for k, i in enumerate(kept):
            entries[i] = _add(entries[i], cts[k])
        return (_NO, _NO if pred is None else dpred, items_cotangent(xs, entries))

    return _returning(y, filter_pullback, pbs)


rrule.register(filter, config=ADConfig)(_filter_rule)


def _filter_frule(config: Any, ḟ: Any, ṗ: Any, ẋs: Any, pred: Any, xs: Any) -> Any:
    items = list(xs)
    ṫs = item_tangents(xs, ẋs, len(items))
    keys = _key_tangents(config, pred, ṗ, items, ṫs)
    kept = [i for i, k in enumerate(keys) if k]
    return [items[i] for i in kept], [ṫs[i] for i in kept]


frule.register(filter, config=ADConfig)(_filter_frule)
