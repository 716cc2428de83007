"""Rules for higher-order builtins: ``map``, ``filter``, ``sorted``, ``functools.reduce``,
and ``sum`` over objects whose ``+`` is their class's own.

``map`` and ``reduce`` differentiate the function they are given by calling
back into the AD (``rrule_via_ad``), so they are registered for configs with
``HasReverseMode``. ``sum`` of numbers and arrays is linear (``rules``' plain rule);
``sum`` of anything else calls its items' ``__add__``/``__radd__``, which may be any
function: under a config that can, it is ``functools.reduce(operator.add, xs, start)``,
differentiated as that. Under these rules ``map``/``filter`` return lists rather
than lazy iterators, so that each element can send its derivative back.
``sorted``'s ``key`` and ``filter``'s predicate are not differentiated: no
derivative flows through a comparison. The frules of ``map`` and ``reduce``
push tangents through ``frule_via_ad`` (configs with ``HasForwardsMode``).

Pullbacks that must run. An AD may hand back, from ``rrule_via_ad``, a pullback
that must be called even when its cotangent is zero: it carries the derivative
of a side effect of the call (ad's ``Stateful``: the function wrote an object
or a container that code after the call reads). Such a pullback's class has a
true class attribute ``must_run`` and its constructor wraps a pullback:
``type(pb)(outer)`` is a pullback of the same kind running ``outer``. The rules
here follow that convention: ``map`` skips the pullback of an item whose
cotangent is zero only when it may be skipped (``must_run`` false or absent),
and a rule that got a pullback that must run returns its own pullback wrapped
in that class, so that its caller runs it too. (``map(f, xs)`` whose value is
unused, with ``f`` writing an object that is read later: without this, the
writes' derivative would be lost.)
"""

from __future__ import annotations

import builtins
import functools
import numbers
import operator
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    ZeroTangent,
    frule,
    frule_via_ad,
    rrule,
    rrule_via_ad,
    unthunk,
)

from ._arithmetic import DuckArray
from ._sequences import item_tangents, items_cotangent, seq_entries

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()


def _add(a: Any, b: Any) -> Any:
    if isinstance(b, AbstractZero):
        return a
    if isinstance(a, AbstractZero):
        return b
    return unthunk(a) + unthunk(b)


def _must_run(pb: Any) -> bool:
    """Whether the pullback ``pb`` must run even on a zero cotangent (see above)."""
    return getattr(type(pb), "must_run", False) is True


def _returning(y: Any, pullback: Any, pbs: list) -> tuple:
    """A rule's ``(y, pullback)``: ``pullback`` wrapped like the first of the
    pullbacks it runs (``pbs``) that must run, if one must (see above)."""
    for pb in pbs:
        if _must_run(pb):
            return y, type(pb)(pullback)
    return y, pullback


@rrule.register(map, config=HasReverseMode)
def _(config: Any, f: Any, *xs: Any) -> Any:
    columns = [list(x) for x in xs]
    n = min((len(c) for c in columns), default=0)
    ys, pbs = [], []
    for i in range(n):
        y, pb = rrule_via_ad(config, f, *(c[i] for c in columns))
        ys.append(y)
        pbs.append(pb)

    def map_pullback(ȳ: Any) -> tuple:
        cts = seq_entries(ȳ, n)
        df: Any = _ZERO
        per = [[_ZERO] * len(c) for c in columns]
        for i in reversed(range(n)):
            if isinstance(unthunk(cts[i]), AbstractZero) and not _must_run(pbs[i]):
                continue
            out = pbs[i](cts[i])
            df = _add(df, out[0])
            for j in range(len(xs)):
                per[j][i] = out[1 + j]
        return (_NO, df, *(items_cotangent(x, p) for x, p in zip(xs, per)))

    return _returning(ys, map_pullback, pbs)


@rrule.register(functools.reduce, config=HasReverseMode)
def _(config: Any, f: Any, xs: Any, *init: Any) -> Any:
    items = list(xs)
    if init:
        acc, rest, offset = init[0], items, 0
    else:
        if not items:
            raise TypeError("reduce() of empty iterable with no initial value")
        acc, rest, offset = items[0], items[1:], 1
    pbs = []
    for x in rest:
        acc, pb = rrule_via_ad(config, f, acc, x)
        pbs.append(pb)

    def reduce_pullback(ȳ: Any) -> tuple:
        d_acc = ȳ
        df: Any = _ZERO
        entries: list[Any] = [_ZERO] * len(items)
        for k in reversed(range(len(pbs))):
            out = pbs[k](d_acc)
            df = _add(df, out[0])
            d_acc = out[1]
            entries[k + offset] = out[2]
        if init:
            return (_NO, df, items_cotangent(xs, entries), d_acc)
        entries[0] = d_acc
        return (_NO, df, items_cotangent(xs, entries))

    return _returning(acc, reduce_pullback, pbs)


_LINEAR = (numbers.Number, np.ndarray, np.generic, DuckArray, AbstractZero)
_Sequence = tuple | list | np.ndarray


def _adds_objects(xs: Any, start: tuple) -> bool:
    """Whether ``sum(xs, *start)`` adds something other than numbers and arrays
    (whose ``+`` is linear and ``rules``' plain rule differentiates)."""
    if type(xs) is np.ndarray:
        return xs.dtype == object
    return not all(isinstance(v, _LINEAR) for v in (*start, *xs))


@rrule.register(builtins.sum, config=HasReverseMode)
def _(config: Any, xs: _Sequence, *start: Any, **kwargs: Any) -> Any:
    if not _adds_objects(xs, (*start, *kwargs.values())):
        return rrule(builtins.sum, xs, *start, **kwargs)
    # a start given by keyword is a constant here (an AD passes one carrying a
    # derivative by position, ``rulescore``'s keywords_as_positions)
    first = start[0] if start else kwargs.get("start", 0)
    y, pb = rrule(config, functools.reduce, operator.add, xs, first)

    def sum_pullback(ȳ: Any) -> tuple:
        _, _, x̄s, s̄ = pb(ȳ)
        return (_NO, x̄s, s̄) if start else (_NO, x̄s)

    return _returning(y, sum_pullback, [pb])


@rrule.register(sorted)
def _(xs: Any, *, key: Any = None, reverse: bool = False) -> Any:
    items = list(xs)
    order = sorted(
        range(len(items)),
        key=(lambda i: key(items[i])) if key is not None else items.__getitem__,
        reverse=reverse,
    )
    y = [items[i] for i in order]

    def sorted_pullback(ȳ: Any) -> tuple:
        cts = seq_entries(ȳ, len(y))
        entries: list[Any] = [_ZERO] * len(items)
        for k, i in enumerate(order):
            entries[i] = cts[k]
        return (_NO, items_cotangent(xs, entries))

    return y, sorted_pullback


@rrule.register(filter)
def _(pred: Any, xs: Any) -> Any:
    items = list(xs)
    kept = [i for i, x in enumerate(items) if (pred(x) if pred is not None else x)]
    y = [items[i] for i in kept]

    def filter_pullback(ȳ: Any) -> tuple:
        cts = seq_entries(ȳ, len(y))
        entries: list[Any] = [_ZERO] * len(items)
        for k, i in enumerate(kept):
            entries[i] = cts[k]
        return (_NO, _NO, items_cotangent(xs, entries))

    return y, filter_pullback


# --- forward mode ---------------------------------------------------------------------


@frule.register(map, config=HasForwardsMode)
def _(config: Any, ḟ: Any, *rest: Any) -> Any:
    k = len(rest) // 2
    ẋs, (f, *xs) = rest[1:k], rest[k:]
    columns = [list(x) for x in xs]
    tangents = [item_tangents(x, ẋ, len(c)) for x, ẋ, c in zip(xs, ẋs, columns)]
    n = min((len(c) for c in columns), default=0)
    ys, ẏs = [], []
    for i in range(n):
        y, ẏ = frule_via_ad(
            config, (rest[0], *(t[i] for t in tangents)), f, *(c[i] for c in columns)
        )
        ys.append(y)
        ẏs.append(ẏ)
    return ys, ẏs


@frule.register(functools.reduce, config=HasForwardsMode)
def _(config: Any, ḟ: Any, *rest: Any) -> Any:
    k = len(rest) // 2
    ḟn, ẋs, ẇ = rest[0], rest[1], rest[2:k]
    f, xs, *init = rest[k:]
    items = list(xs)
    tangents = item_tangents(xs, ẋs, len(items))
    if init:
        acc, ȧcc, start = init[0], (ẇ[0] if ẇ else _ZERO), 0
    else:
        if not items:
            raise TypeError("reduce() of empty iterable with no initial value")
        acc, ȧcc, start = items[0], tangents[0], 1
    for x, ẋ in zip(items[start:], tangents[start:]):
        acc, ȧcc = frule_via_ad(config, (ḟn, ȧcc, ẋ), f, acc, x)
    return acc, ȧcc


@frule.register(builtins.sum, config=HasForwardsMode)
def _(config: Any, ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    k = len(rest) // 2
    xs, start = rest[k], rest[k + 1 :]
    if not isinstance(xs, _Sequence) or not _adds_objects(xs, (*start, *kwargs.values())):
        return frule((ḟ, *rest[:k]), builtins.sum, *rest[k:], **kwargs)
    if not start and "start" in kwargs:  # by keyword: a constant (see the rrule)
        start, ṡ = (kwargs["start"],), (_ZERO,)
    else:
        ṡ = rest[1:k] if start else (_ZERO,)
    return frule(
        config, (ḟ, _NO, rest[0], *ṡ), functools.reduce, operator.add, xs, *(start or (0,))
    )


@frule.register(sorted)
def _(ḟ: Any, ẋs: Any, xs: Any, *, key: Any = None, reverse: bool = False) -> Any:
    items = list(xs)
    tangents = item_tangents(xs, ẋs, len(items))
    order = sorted(
        range(len(items)),
        key=(lambda i: key(items[i])) if key is not None else items.__getitem__,
        reverse=reverse,
    )
    return [items[i] for i in order], [tangents[i] for i in order]


@frule.register(filter)
def _(ḟ: Any, ṗ: Any, ẋs: Any, pred: Any, xs: Any) -> Any:
    items = list(xs)
    tangents = item_tangents(xs, ẋs, len(items))
    kept = [i for i, x in enumerate(items) if (pred(x) if pred is not None else x)]
    return [items[i] for i in kept], [tangents[i] for i in kept]
