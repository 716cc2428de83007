"""``f(a, *b)`` in first-order reverse mode: one call with its parts.

Generated code calls ``rcall_star(stars, inactive, f, *parts)`` for a call
with ``*`` arguments (``transform.anf``'s ``star_calls``): the parts at the set
bits of ``stars`` are unpacked into the argument list, as Python does. The
parts at the set bits of ``inactive`` carry no derivative (constants, data a
lambda captured: ``lambda *p: loss(*p, *data)``), so a Python function is
transformed with the parameters they fill inactive (``rcall_masked``) and
nothing is computed for them. The pullback returns one cotangent per part
(a tuple or list of entries for an unpacked part), like any call's.

Nested differentiation (the pure form) and forward mode lower the same call
to ``_ad_apply`` of a built tuple (``rules_containers.apply``), which each
mode differentiates: this is the lean first-order path.

>>> import numpy as np, ad
>>> data = (np.array([1.0, 2.0]), 3.0)
>>> def loss(w, x, c):
...     return np.sum(w * x) * c
>>> ad.gradient(lambda *p: loss(*p, *data), np.ones(2))
(array([3., 6.]),)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ad.runtime.cotangents import from_list_ct
from ad.runtime.reverse import call_site, rcall_tail
from ad.runtime.state import keep_stateful
from rulescore import ZeroTangent

__all__ = ["rcall_star", "rcall_star_tail"]

_Z = ZeroTangent()


def rcall_star(stars: int, inactive: int, f: Any, *parts: Any) -> tuple[Any, Callable]:
    """``f(*args)`` and its pullback, ``args`` the ``parts`` with those at the bits
    of ``stars`` unpacked; the pullback maps ``ȳ`` to ``(∂f, ∂part...)``."""
    return _star_call(stars, inactive, f, parts, False)


def rcall_star_tail(
    novalue: bool, stars: int, inactive: int, f: Any, *parts: Any
) -> tuple[Any, Callable]:
    """``rcall_star`` for the call whose value the calling function returns and
    nothing else reads (``return g(*p, *data)``; see ``reverse.rcall_tail``)."""
    return _star_call(stars, inactive, f, parts, novalue)


def _star_call(
    stars: int, inactive: int, f: Any, parts: tuple, novalue: bool
) -> tuple[Any, Callable]:
    args: list = []
    mask = 0
    spans: list[tuple[int, int]] = []  # each part's entries in args
    for i, p in enumerate(parts):
        start = len(args)
        if stars >> i & 1:
            try:
                args.extend(p)
            except TypeError:
                raise _not_iterable(f, p) from None
        else:
            args.append(p)
        end = len(args)
        spans.append((start + 1, end + 1))  # in the pullback's result, after ∂f
        if inactive >> i & 1:
            mask |= ((1 << (end - start)) - 1) << start
    y, pb = rcall_tail(novalue, mask, f, *args)

    def star_call_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        out = [cts[0]]
        for i, (a, b) in enumerate(spans):
            if not stars >> i & 1:
                out.append(cts[a])
            elif inactive >> i & 1:
                out.append(_Z)  # data: nothing asks for its cotangent
            else:
                out.append(from_list_ct(parts[i], list(cts[a:b])))
        return tuple(out)

    return y, keep_stateful(pb, star_call_pullback)


def _not_iterable(f: Any, p: Any) -> TypeError:
    """Python's error for ``f(*p)`` with ``p`` not iterable, at the user's line."""
    name = getattr(f, "__qualname__", None) or type(f).__name__
    return TypeError(
        f"{name}() argument after * must be an iterable, not {type(p).__name__} (at {call_site()})"
    )
