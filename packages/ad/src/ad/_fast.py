"""Specialised calls for scalar arithmetic, the hottest path of scalar code.

The reverse pass emits ``_ad_fast_mul(a, b)`` instead of
``_ad_rcall(operator.mul, a, b)``. When both operands are Python floats or
ints, and the rule that dispatch would pick for them is still the ``rules``
package's own (no user rule or opt-out registered since), the helper computes
the value and a minimal pullback inline — the same derivative the rule
gives, without dispatch, broadcasting or projection machinery. Anything else
goes through ``rcall`` unchanged.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from rulescore import NoTangent, rrule

from ._config import ADConfig
from ._runtime import rcall

__all__ = ["FAST_HELPERS"]

_NO = NoTangent()
_float = float
_int = int
_table = rrule.table
_state = {"version": -1, "ok": frozenset()}


def _fast_ok(op: Callable) -> bool:
    """Whether ``op`` on (float, float) still dispatches to the built-in rule."""
    if _state["version"] != _table.version:
        ok = set()
        for f in _OPS:
            rules = [_table.lookup(f, (a, b), ADConfig) for a in (float, int) for b in (float, int)]
            if all(r is not None and r.impl.__module__ == "rules._arithmetic" for r in rules):
                ok.add(f)
        for f in _UNARY:
            r = _table.lookup(f, (float,), ADConfig)
            if r is not None and r.impl.__module__ in (
                "rules._arithmetic",
                "rulescore._rule_tools",
            ):
                ok.add(f)
        _state["ok"] = frozenset(ok)
        _state["version"] = _table.version
    return op in _state["ok"]


def fast_add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (ta is _float or ta is _int) and (tb is _float or tb is _int) and _fast_ok(operator.add):

        def add_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, ȳ)

        return a + b, add_pullback
    return rcall(operator.add, a, b)


def fast_sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (ta is _float or ta is _int) and (tb is _float or tb is _int) and _fast_ok(operator.sub):

        def sub_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, -ȳ)

        return a - b, sub_pullback
    return rcall(operator.sub, a, b)


def fast_mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (ta is _float or ta is _int) and (tb is _float or tb is _int) and _fast_ok(operator.mul):

        def mul_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ * b, ȳ * a)

        return a * b, mul_pullback
    return rcall(operator.mul, a, b)


def fast_truediv(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (
        (ta is _float or ta is _int)
        and (tb is _float or tb is _int)
        and b
        and _fast_ok(operator.truediv)
    ):
        y = a / b

        def truediv_pullback(ȳ: Any) -> tuple:
            d = ȳ / b
            return (_NO, d, -d * y)

        return y, truediv_pullback
    return rcall(operator.truediv, a, b)


def fast_pow(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is _float and a > 0.0 and (tb is _int or tb is _float) and _fast_ok(operator.pow):
        y = a**b
        if tb is _int:

            def pow_int_pullback(ȳ: Any) -> tuple:
                return (_NO, ȳ * b * a ** (b - 1), _NO)

            return y, pow_int_pullback

        def pow_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ * b * a ** (b - 1), ȳ * y * math.log(a))

        return y, pow_pullback
    return rcall(operator.pow, a, b)


def fast_neg(a: Any) -> Any:
    if type(a) is _float and _fast_ok(operator.neg):

        def neg_pullback(ȳ: Any) -> tuple:
            return (_NO, -ȳ)

        return -a, neg_pullback
    return rcall(operator.neg, a)


_OPS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow)
_UNARY = (operator.neg,)

FAST_HELPERS: dict[str, Callable] = {
    "_ad_fast_add": fast_add,
    "_ad_fast_sub": fast_sub,
    "_ad_fast_mul": fast_mul,
    "_ad_fast_truediv": fast_truediv,
    "_ad_fast_pow": fast_pow,
    "_ad_fast_neg": fast_neg,
}
