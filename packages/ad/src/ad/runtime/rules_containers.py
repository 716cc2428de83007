"""ad's rules for the helpers the ANF pass emits for containers and calls:
tuple/list/dict displays, concatenation, ``f(*args, **kw)``, unpacking,
loops over an iterable, and building a ``functools.partial``.

Each helper is an ordinary function (inactive code just runs it) with an
``rrule`` registered under ad's own ``ADConfig``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime import reverse as _runtime
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, from_list_ct, np_module
from ad.runtime.state import keep_stateful
from ad.runtime.user_iterables import through_iter, user_iterable
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, rrule, unthunk

_Z = ZeroTangent()
_NO = NoTangent()

__all__ = [
    "aslist",
    "apply",
    "concat_list",
    "concat_tuple",
    "merge_dicts",
    "merge_kw",
    "mk_dict",
    "mk_list",
    "mk_tuple",
    "unpack",
    "unpack_star",
]


def mk_tuple(*xs: Any) -> tuple:
    return xs


def mk_list(*xs: Any) -> list:
    return list(xs)


def mk_dict(keys: tuple, *values: Any) -> dict:
    return dict(zip(keys, values))


@rrule.register(mk_tuple, config=ADConfig)
def _(config: Any, *xs: Any) -> Any:
    n = len(xs)

    def tuple_pullback(ȳ: Any) -> tuple:
        return (_NO, *entries(ȳ, n, "a tuple"))

    return xs, tuple_pullback


@rrule.register(mk_list, config=ADConfig)
def _(config: Any, *xs: Any) -> Any:
    n = len(xs)

    def list_pullback(ȳ: Any) -> tuple:
        return (_NO, *entries(ȳ, n, "a list"))

    return list(xs), list_pullback


@rrule.register(mk_dict, config=ADConfig)
def _(config: Any, keys: tuple, *values: Any) -> Any:
    def dict_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, *(_Z for _ in keys))
        b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
        return (_NO, _NO, *(b.get(k, _Z) for k in keys))

    return dict(zip(keys, values)), dict_pullback


def concat_tuple(*parts: Any) -> tuple:
    return tuple(x for p in parts for x in p)


def concat_list(*parts: Any) -> list:
    return [x for p in parts for x in p]


def _identity_pullback(ȳ: Any) -> tuple:
    return (_NO, ȳ)


def _concat_rule(kind: Callable) -> Callable:
    def rule(config: Any, *parts: Any) -> Any:
        if kind is tuple and len(parts) == 1 and type(parts[0]) is tuple:
            return parts[0], _identity_pullback  # f(*t): the tuple itself, as Python passes it
        lens = [len(p) for p in parts]
        y = kind(x for p in parts for x in p)

        def concat_pullback(ȳ: Any) -> tuple:
            cts = entries(ȳ, sum(lens), "a concatenation")
            out, i = [], 0
            for p, n in zip(parts, lens):
                out.append(from_list_ct(p, list(cts[i : i + n])))
                i += n
            return (_NO, *out)

        return y, concat_pullback

    return rule


rrule.register(concat_tuple, config=ADConfig)(_concat_rule(tuple))
rrule.register(concat_list, config=ADConfig)(_concat_rule(list))


def apply(f: Any, args: tuple, kwargs: dict) -> Any:
    return f(*args, **kwargs)


@rrule.register(apply, config=ADConfig)
def _(config: Any, f: Any, args: tuple, kwargs: dict) -> Any:
    if not kwargs:  # f(*args): a positional call
        y, pb = _runtime.rcall(f, *args)

        def apply_positional_pullback(ȳ: Any) -> tuple:
            cts = pb(ȳ)
            return (_NO, cts[0], cts[1:], _Z)

        # Stateful when the call wrote an object's field (super().__init__(*args)):
        # the pullback must run even when no cotangent reaches the call's value.
        return y, keep_stateful(pb, apply_positional_pullback)
    # (its own name: this body is differentiated again, at reverse over reverse, where
    # a closure may not capture a name bound twice)
    y, kw_pb = _runtime.rcall_kw(f, tuple(args), dict(kwargs))
    n = len(args)

    def apply_pullback(ȳ: Any) -> tuple:
        cts = kw_pb(ȳ)
        kw = cts[n + 1]
        kw = {k: v for k, v in kw.items() if not isinstance(v, AbstractZero)} if kw else {}
        return (_NO, cts[0], tuple(cts[1 : n + 1]), kw or _Z)

    return y, keep_stateful(kw_pb, apply_pullback)


def merge_kw(*dicts: dict) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in out:
                raise TypeError(f"got multiple values for keyword argument {k!r}")
            out[k] = v
    return out


@rrule.register(merge_kw, config=ADConfig)
def _(config: Any, *dicts: dict) -> Any:
    y = merge_kw(*dicts)

    def merge_kw_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, *(_Z for _ in dicts))
        b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
        parts = []
        for d in dicts:
            part = {k: b[k] for k in d if k in b and not isinstance(b[k], AbstractZero)}
            parts.append(part or _Z)
        return (_NO, *parts)

    return y, merge_kw_pullback


def merge_dicts(*parts: Any) -> dict:
    """``{**a, "k": v, **b}``: the parts in order, a later key replacing an earlier one."""
    out: dict = {}
    for p in parts:
        out.update(p)
    return out


def _last_owner(parts: tuple) -> dict:
    """For each key of the merged dict, the index of the part its value came from."""
    return {k: i for i, p in enumerate(parts) for k in p.keys()}


@rrule.register(merge_dicts, config=ADConfig)
def _(config: Any, *parts: Any) -> Any:
    y = merge_dicts(*parts)
    owner = _last_owner(parts)

    def merge_dicts_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        cts: list[dict] = [{} for _ in parts]
        if not isinstance(ȳ, AbstractZero):
            b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
            for k, v in b.items():
                if k in owner and not isinstance(v, AbstractZero):
                    cts[owner[k]][k] = v
        return (_NO, *(c or _Z for c in cts))

    return y, merge_dicts_pullback


def dict_items(source: Any) -> tuple[bool, list]:
    """``dict(source)``'s items: ``(True, keys)`` for a mapping, else ``(False, pairs)``
    (an iterable of key-value pairs, consumed as ``dict`` consumes it)."""
    if hasattr(source, "keys"):
        return True, list(source.keys())
    return False, [tuple(item) for item in source]


def _dict_rule(config: Any, *args: Any, **kwargs: Any) -> Any:
    """``dict(source, **kwargs)``: each value's cotangent goes back to where the value
    came from (a later key replaces an earlier one, keywords last), in the form of the
    source: a dict for a mapping, one ``(key, value)`` cotangent per pair otherwise.
    Called with keywords, the pullback appends their cotangents (see
    ``keyword_cotangents``)."""
    if len(args) > 1:
        return dict(*args, **kwargs), None  # Python's TypeError, raised by the call
    mapping, items = dict_items(args[0]) if args else (True, [])
    source = args[0] if args else {}
    y = {k: source[k] for k in items} if mapping else dict(items)
    y.update(kwargs)
    owner: dict = {k: i for i, k in enumerate(items)} if mapping else {}
    if not mapping:
        for i, (k, _) in enumerate(items):
            owner[k] = i
    for k in kwargs:
        owner[k] = None

    def dict_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        b = {} if isinstance(ȳ, AbstractZero) else (ȳ._backing if isinstance(ȳ, Tangent) else ȳ)
        kw_cts = {k: b.get(k, _Z) for k in kwargs}
        out: tuple = (_NO,)
        if args:
            if mapping:
                part = {k: b[k] for k in items if owner[k] is not None and k in b}
                out = (_NO, part or _Z)
            else:
                pairs = [
                    (_NO, b.get(k, _Z)) if owner[k] == i else (_NO, _Z)
                    for i, (k, _) in enumerate(items)
                ]
                out = (_NO, pairs if any(not isinstance(v, AbstractZero) for _, v in pairs) else _Z)
        return (*out, kw_cts) if kwargs else out

    return y, dict_pullback


_dict_rule.keyword_cotangents = True  # type: ignore[attr-defined]
rrule.register(dict, config=ADConfig)(_dict_rule)


def unpack(t: Any, n: int) -> tuple:
    items = tuple(t)
    if len(items) != n:
        raise ValueError(
            f"{'too many' if len(items) > n else 'not enough'} values to unpack "
            f"(expected {n}, got {len(items)})"
        )
    return items


@rrule.register(unpack, config=ADConfig)
def _(config: Any, t: Any, n: int) -> Any:
    if user_iterable(t):
        listed, pb = through_iter(t)
        items = unpack(listed, n)

        def user_unpack_pullback(ȳ: Any) -> tuple:
            return (_NO, pb(list(entries(ȳ, n, "an unpacking")))[1], _NO)

        return items, keep_stateful(pb, user_unpack_pullback)
    items = unpack(t, n)

    def unpack_pullback(ȳ: Any) -> tuple:
        return (_NO, from_list_ct(t, list(entries(ȳ, n, "an unpacking"))), _NO)

    return items, unpack_pullback


def unpack_star(t: Any, before: int, after: int) -> tuple:
    items = list(t)
    if len(items) < before + after:
        raise ValueError(
            f"not enough values to unpack (expected at least {before + after}, got {len(items)})"
        )
    return (*items[:before], items[before : len(items) - after], *items[len(items) - after :])


@rrule.register(unpack_star, config=ADConfig)
def _(config: Any, t: Any, before: int, after: int) -> Any:
    back = None
    if user_iterable(t):  # its __iter__ differentiated
        t, back = through_iter(t)
    y = unpack_star(t, before, after)
    n_mid = len(y[before])

    def unpack_star_pullback(ȳ: Any) -> tuple:
        cts = entries(ȳ, before + 1 + after, "an unpacking")
        mid = cts[before]
        mid = [_Z] * n_mid if isinstance(unthunk(mid), AbstractZero) else list(unthunk(mid))
        flat = [*cts[:before], *mid, *cts[before + 1 :]]
        t_ct = from_list_ct(t, flat) if back is None else back(flat)[1]
        return (_NO, t_ct, _NO, _NO)

    return y, unpack_star_pullback if back is None else keep_stateful(back, unpack_star_pullback)


def aslist(it: Any) -> list:
    return list(it)


@rrule.register(aslist, config=ADConfig)
def _(config: Any, it: Any) -> Any:
    np = np_module()
    if isinstance(it, (str, bytes)):  # characters carry no derivative
        return list(it), lambda ȳ: (_NO, _NO)
    if not isinstance(it, (list, tuple, range, dict)) and not (
        np is not None and isinstance(it, np.ndarray)
    ):
        if user_iterable(it):
            return through_iter(it)
        if type(it) in _ITERATORS:  # iter(xs): its cotangent is its items' (rules' iter)
            return _consumed(it)
        raise TypeError(
            f"cannot differentiate a loop over a {type(it).__name__} (at {_runtime.call_site()}): "
            "its elements cannot send their derivatives back.\n"
            "To fix: loop over a list, tuple, numpy array, range, zip/enumerate of those, or dict items."
        )
    y = list(it)

    def aslist_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _Z)
        return (_NO, from_list_ct(it, list(ȳ)))

    return y, aslist_pullback


#: the iterators ``iter`` makes of what a loop may run over (its rule's outputs)
#: Iterators whose cotangent is the list of their items' cotangents: ``iter(xs)``'s,
#: and the ``zip``/``enumerate`` objects ``rules``' own rules return (where one
#: of them wins over ad's list-making rule: ``enumerate(xs, 1)``, whose integer
#: annotation is the more specific).
_ITERATORS = frozenset([*(type(iter(x)) for x in ([], (), range(0), np.zeros(1))), zip, enumerate])


def _consumed(it: Any) -> Any:
    """``list(it)`` of an iterator ``iter(xs)`` made: the list of its items' cotangents
    is the iterator's (``rules``' ``iter`` rule takes it back to ``xs``)."""
    y = list(it)

    def iterator_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        return (_NO, ȳ if isinstance(ȳ, AbstractZero) else list(entries(ȳ, len(y), "a list")))

    return y, iterator_pullback


def _partial_rule(config: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
    """Building a partial: its tangent has fields func, args (a tuple) and keywords.

    Called with keywords, the pullback appends their cotangents (see
    ``keyword_cotangents``), which ordinary rules cannot give.
    """
    p = functools.partial(func, *args, **kwargs)
    n = len(args)

    def partial_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        b = ȳ._backing if isinstance(ȳ, Tangent) else {}
        bound = b.get("args", _Z)
        bound = (_Z,) * n if isinstance(bound, AbstractZero) else tuple(bound)
        kw_cts = b.get("keywords", {})
        kw_cts = {} if isinstance(kw_cts, AbstractZero) else kw_cts
        out = (_NO, b.get("func", _Z), *bound)
        if kwargs:
            return (*out, {k: kw_cts.get(k, _Z) for k in kwargs})
        return out

    return p, partial_pullback


_partial_rule.keyword_cotangents = True  # type: ignore[attr-defined]
rrule.register(functools.partial, config=ADConfig)(_partial_rule)
