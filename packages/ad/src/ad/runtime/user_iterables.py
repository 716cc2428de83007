"""Objects of a user class whose ``__iter__`` is Python code, iterated as Python
iterates them.

``for x in obj``, ``list(obj)``, ``a, b = obj``, ``sorted(obj)``, ``zip(obj, xs)``
all call ``obj.__iter__()``. The AD does too: ``through_iter`` differentiates
``iter(obj)`` (the class's ``__iter__`` from its source, returning ``iter(self.xs)``,
a ``zip``, the rows of an array) and lists the items, whose cotangents (a list)
are the iterator's and go back through ``__iter__`` to ``obj``. The loops, list
and tuple constructors and unpackings call it (``rules_containers``,
``rules_iteration``, ``tangents.fiter``, ``forward.funpack``); the builtins that
iterate their arguments (``CONSUMERS``) get their user iterables as lists first
(``materialized_call``, ``materialized_fcall``), so their rules see lists. Under
nested (higher-order) differentiation iteration of a user class's object is
refused, naming the line.

>>> import ad
>>> class Bag:
...     def __init__(self, xs):
...         self.xs = xs
...     def __iter__(self):
...         return iter(self.xs)
>>> def f(a):
...     return sum(v * v for v in Bag([a, 2.0 * a])) + max(Bag([a, 3.0]))
>>> ad.gradient(f, 1.5)     # 5a² + 3 (a < 3)
(15.0,)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ad.errors import NoRuleError
from ad.runtime import calls
from ad.runtime.cotangents import entries
from ad.runtime.dunders import method
from ad.runtime.library_code import users_method
from ad.runtime.state import Stateful, keep_stateful, nested
from ad.runtime.tracebacks import call_site
from rulescore import AbstractZero, NoTangent, ZeroTangent, unthunk

__all__ = [
    "CONSUMERS",
    "materialized_call",
    "materialized_fcall",
    "nested_iteration_refused",
    "through_iter",
    "user_iterable",
]

_NO = NoTangent()
_Z = ZeroTangent()

#: builtins that iterate their arguments
CONSUMERS = frozenset(
    [enumerate, zip, sorted, map, filter, min, max, sum, reversed, any, all, dict, set, frozenset]
)


def user_iterable(it: Any) -> bool:
    """Whether iterating ``it`` runs a user class's ``__iter__`` (``users_method``)."""
    return not isinstance(it, (list, tuple, dict)) and users_method(method(type(it), "__iter__"))


def nested_iteration_refused(obj: Any) -> NoRuleError:
    """Iterating a ``user_iterable`` under nested differentiation: not followed."""
    name = type(obj).__qualname__
    return NoRuleError(
        f"{call_site()}: a loop over (or unpacking of) a {name}, whose class defines "
        "__iter__, is differentiated at first order only; nested (higher-order) "
        "differentiation does not follow its __iter__.\n"
        f"To fix: iterate what the {name} holds (a list, tuple or array: for x in obj.items)."
    )


def through_iter(obj: Any) -> tuple[list, Callable]:
    """``list(obj)`` for a ``user_iterable``, and the pullback taking the list of
    its items' cotangents to ``(NoTangent, obj's)``."""
    if nested():
        raise nested_iteration_refused(obj)
    inner, pb = calls.rcall(iter, obj)
    y = list(inner)

    def iter_method_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        return (_NO, pb(_Z if isinstance(ȳ, AbstractZero) else list(ȳ))[1])

    return y, keep_stateful(pb, iter_method_pullback)


def through_fiter(obj: Any, ȯ: Any) -> tuple[list, Any]:
    """Forward mode's ``through_iter``: the items and their tangents (a list)."""
    if nested():
        raise nested_iteration_refused(obj)
    inner, ṫ = calls.fcall(iter, (_Z, ȯ), obj)
    return list(inner), ṫ


def materialized_call(f: Any) -> Callable:
    """``f(*args)`` (one of ``CONSUMERS``) in reverse mode, each user iterable among
    ``args`` listed first (``through_iter``): Python iterates it once either way."""

    def materialized(*args: Any) -> tuple:
        listed, backs = list(args), {}
        for i, a in enumerate(args):
            if user_iterable(a):
                listed[i], backs[i] = through_iter(a)
        y, pb = calls.rcall(f, *listed)

        def materialized_pullback(ȳ: Any) -> tuple:
            cts = list(pb(ȳ))
            for i, back in backs.items():
                ct = unthunk(cts[1 + i])
                n = len(listed[i])
                items = [_Z] * n if isinstance(ct, AbstractZero) else entries(ct, n, "a list")
                cts[1 + i] = back(list(items))[1]
            return tuple(cts)

        if any(type(b) is Stateful for b in backs.values()):
            return y, Stateful(materialized_pullback)
        return y, keep_stateful(pb, materialized_pullback)

    return materialized


def materialized_fcall(f: Any, ts: tuple, args: tuple) -> tuple:
    """Forward mode's ``materialized_call``: ``ts`` are ``(ḟ, *ẋs)``."""
    listed, listed_ts = list(args), list(ts[1:])
    for i, a in enumerate(args):
        if user_iterable(a):
            listed[i], listed_ts[i] = through_fiter(a, ts[1 + i])
    return calls.fcall(f, (ts[0], *listed_ts), *listed)
