"""Cotangents of the parts of forward mode's calls, as the nested rules build them.

A forward-mode call takes a tuple of tangents ``ts`` and returns a pair
``(y, ẏ)``; reverse mode over it needs the cotangent of that tuple from its
entries' (``_tangents_ct``), the cotangents of the pair's entries
(``_pair``), of one keyword argument (``kw_entry``), and of a function from its
generated pushforward's (``_closure_ct``). ``_is_zero`` tells a structural zero.
``as_called`` keeps a function as it was called, for a pullback that runs it again.
"""

from __future__ import annotations

import types
from typing import Any

from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

__all__ = ["as_called", "kw_entry"]

_Z = ZeroTangent()
_TupleT = Tangent[tuple]
_RRULES = rrule.table._rules
_FRULES = frule.table._rules


def as_called(f: Any) -> Any:
    """``f`` as it is now, for a pullback that calls it again later (a nested
    ``gradient``'s rule differentiates ``f`` anew in the backward pass): a closure
    becomes a copy whose cells hold what its captured variables hold now, so that
    later rebinding (a lambda made in a loop, ``k`` the loop variable) does not
    change the function the pullback differentiates. Its cotangent has the same
    fields (the captured variables' names). Anything else, and a function with
    rules (dispatch finds those by identity), is returned as it is.

    >>> def made_in_a_loop():
    ...     fs = []
    ...     for k in (1.0, 3.0):
    ...         fs.append(as_called(lambda z: z * k))
    ...     return [f(2.0) for f in fs]
    >>> made_in_a_loop()  # the lambdas themselves would both give 6.0
    [2.0, 6.0]
    """
    if type(f) is not types.FunctionType or not f.__closure__:
        return f
    if f in _RRULES or f in _FRULES:
        return f  # a rule's function (a decorated library function): found by identity
    cells = []
    for c in f.__closure__:
        try:
            cells.append(types.CellType(c.cell_contents))
        except ValueError:  # an empty cell: a name bound later in the enclosing scope
            return f
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, tuple(cells))
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    g.__dict__.update(f.__dict__)
    return g


# Inside differentiated code (a nested rule's body, at higher order) the copy is the
# identity: its tangent and cotangent are the function's, field by field.
@rrule.register(as_called, config=ADConfig)
def _(config: Any, f: Any) -> Any:
    def as_called_pullback(ȳ: Any) -> tuple:
        return (NoTangent(), ȳ)

    return as_called(f), as_called_pullback


@frule.register(as_called, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, f: Any) -> Any:
    return as_called(f), ḟ


def _is_zero(x: Any) -> bool:
    return isinstance(x, AbstractZero)


def _pair(ct: Any) -> tuple[Any, Any]:
    """The cotangents of ``(y, ẏ)`` from the cotangent of the pair."""
    return entries(ct, 2, "the (value, tangent) pair of a forward-mode call")


def kw_entry(ct: Any, key: Any) -> Any:
    """The cotangent of ``d[key]`` from that of a dict ``d`` (zero where absent)."""
    ct = unthunk(ct)
    if _is_zero(ct):
        return _Z
    b = ct._backing if isinstance(ct, Tangent) else ct
    return b.get(key, _Z) if isinstance(b, dict) else _Z


def _tangents_ct(cts: tuple) -> Any:
    """The cotangent of a tuple of tangents, from its entries' cotangents."""
    if all(_is_zero(c) for c in cts):
        return _Z
    return _TupleT._from_backing(tuple(cts))


def _closure_ct(gen_ct: Any, own: frozenset) -> Any:
    """The cotangent of a function from its generated pushforward's (same cells)."""
    gen_ct = unthunk(gen_ct)
    if _is_zero(gen_ct) or not isinstance(gen_ct, Tangent):
        return _Z
    b = gen_ct._backing
    fields = {k: v for k, v in b.items() if k in own and not _is_zero(v)}
    return Tangent[types.FunctionType]._from_backing(fields) if fields else _Z
