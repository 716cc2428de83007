"""ad's rules for the iteration builtins: ``list``/``tuple`` of an iterable,
``enumerate``, ``zip``, ``reversed`` and the ``dict`` views.

They materialise lists, so a loop over them can send each element's
cotangent back to its source. Registered under ``ADConfig``, twice where
another rule set has a rule for the same types, so ad's wins the tie.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, from_list_ct
from ad.runtime.state import keep_stateful
from ad.runtime.user_iterables import through_iter, user_iterable
from rulescore import AbstractZero, NoTangent, ZeroTangent, rrule, unthunk

_Z = ZeroTangent()
_NO = NoTangent()

__all__: list[str] = []


def _container_rule(kind: type) -> Any:
    def rule(config: Any, *args: Any) -> Any:
        if not args:

            def empty_pullback(ȳ: Any) -> tuple:
                return (_NO,)

            return kind(), empty_pullback
        (it,) = args
        if user_iterable(it):  # its __iter__ differentiated
            listed, pb = through_iter(it)
            n = len(listed)

            def user_container_pullback(ȳ: Any) -> tuple:
                ȳ = unthunk(ȳ)
                cts = [_Z] * n if isinstance(ȳ, AbstractZero) else entries(ȳ, n, kind.__name__)
                return pb(list(cts))

            return kind(listed), keep_stateful(pb, user_container_pullback)
        src = list(it)
        y = kind(src)

        def container_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (_NO, ȳ)
            return (_NO, from_list_ct(it, list(entries(ȳ, len(src), kind.__name__))))

        return y, container_pullback

    return rule


rrule.register(list, config=ADConfig)(_container_rule(list))
rrule.register(tuple, config=ADConfig)(_container_rule(tuple))


def _enumerate_rule(config: Any, xs: Any, start: Any = 0) -> Any:
    src = list(xs)
    y = list(enumerate(src, start))

    def enumerate_pullback(ȳ: Any) -> tuple:
        cts = entries(ȳ, len(src), "enumerate's output")
        xs_ct = [entries(c, 2, "an (index, value) pair")[1] for c in cts]
        return (_NO, from_list_ct(xs, xs_ct), *([_NO] if start != 0 else []))

    return y, enumerate_pullback


def _zip_rule(config: Any, *seqs: Any) -> Any:
    srcs = [list(s) for s in seqs]
    y = list(zip(*srcs))
    k = len(seqs)

    def zip_pullback(ȳ: Any) -> tuple:
        cts = entries(ȳ, len(y), "zip's output")
        # comprehensions, not writes into nested lists: reverse over reverse
        # differentiates this pullback too
        rows = [entries(c, k, "a zipped tuple") for c in cts]
        per = [[row[j] for row in rows] + [_Z] * (len(s) - len(rows)) for j, s in enumerate(srcs)]
        return (_NO, *(from_list_ct(s, p) for s, p in zip(seqs, per)))

    return y, zip_pullback


def _reversed_rule(config: Any, xs: Any) -> Any:
    src = list(xs)
    y = src[::-1]

    def reversed_pullback(ȳ: Any) -> tuple:
        cts = list(entries(ȳ, len(y), "reversed's output"))[::-1]
        return (_NO, from_list_ct(xs, cts))

    return y, reversed_pullback


_Seq = tuple | list | np.ndarray | range


def _register_iteration_rules() -> None:
    """ad's list-materialising rules for the iteration builtins.

    They are registered twice: for any iterable, and with the sequence types
    other rule sets use, so that under ``ADConfig`` they win the tie.
    """

    def enumerate_seq(config: Any, xs: _Seq, start: Any = 0) -> Any:
        return _enumerate_rule(config, xs, start)

    def zip_seq(config: Any, *seqs: _Seq) -> Any:
        return _zip_rule(config, *seqs)

    def reversed_seq(config: Any, xs: _Seq) -> Any:
        return _reversed_rule(config, xs)

    for f, general, specific in (
        (enumerate, _enumerate_rule, enumerate_seq),
        (zip, _zip_rule, zip_seq),
        (reversed, _reversed_rule, reversed_seq),
    ):
        rrule.register(f, config=ADConfig)(general)
        rrule.register(f, config=ADConfig)(specific)


_register_iteration_rules()


@rrule.register(dict.items, config=ADConfig)
def _(config: Any, d: dict) -> Any:
    keys = list(d)
    y = list(d.items())

    def items_pullback(ȳ: Any) -> tuple:
        cts = entries(ȳ, len(keys), "dict.items()")
        out = {}
        for k, c in zip(keys, cts):
            v = entries(c, 2, "a (key, value) pair")[1]
            if not isinstance(v, AbstractZero):
                out[k] = v
        return (_NO, out or _Z)

    return y, items_pullback


@rrule.register(dict.values, config=ADConfig)
def _(config: Any, d: dict) -> Any:
    keys = list(d)

    def values_pullback(ȳ: Any) -> tuple:
        cts = entries(ȳ, len(keys), "dict.values()")
        out = {k: c for k, c in zip(keys, cts) if not isinstance(c, AbstractZero)}
        return (_NO, out or _Z)

    return list(d.values()), values_pullback


@rrule.register(dict.keys, config=ADConfig)
def _(config: Any, d: dict) -> Any:
    def keys_pullback(ȳ: Any) -> tuple:
        return (_NO, _NO)

    return list(d.keys()), keys_pullback


@rrule.register(dict.get, config=ADConfig)
def _(config: Any, d: dict, key: Any, *rest: Any) -> Any:
    # one cotangent per argument passed: ``d.get(k, None)`` passes a default too
    present = key in d
    y = d[key] if present else (rest[0] if rest else None)

    def get_pullback(ȳ: Any) -> tuple:
        if present:
            return (_NO, {key: ȳ}, _NO, *(_Z for _ in rest))
        return (_NO, _Z, _NO, *(ȳ for _ in rest))

    return y, get_pullback


def next_of(f: Any, first: list) -> Any:
    """``next(<generator expression>)`` in generated code (``_ad_next``): the
    transform runs the expression's loops to its first item only, collected in
    ``first`` (at most one item), and this returns it. Differentiated as any
    Python function (the item's derivative is ``first[0]``'s), to any order."""
    if f is not builtins.next:
        raise _shadowed(f)
    if first:
        return first[0]
    raise StopIteration


def next_or(f: Any, first: list, default: Any) -> Any:
    """``next(<generator expression>, default)`` (``_ad_next_or``): as ``next_of``."""
    if f is not builtins.next:
        raise _shadowed(f)
    if first:
        return first[0]
    return default


def _shadowed(f: Any) -> Exception:
    from ad.errors import NoRuleError

    return NoRuleError(
        f"a generator expression is passed to {getattr(f, '__qualname__', f)!r}, called "
        "next but not the builtin: ad runs a generator expression given to next only "
        "to its first item.\nTo fix: give the function another name, or pass it a list "
        "comprehension."
    )
