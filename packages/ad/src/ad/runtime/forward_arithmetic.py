"""Forward mode's specialised calls for scalar arithmetic, its hottest path.

The forward pass emits ``_ad_ffast_mul(a, b, ȧ, ḃ)`` instead of
``_ad_fcall(operator.mul, (ḟ, ȧ, ḃ), a, b)``. When both operands are Python
numbers with float (or zero) tangents, and the frules dispatch would pick are
still the ``rules`` package's own (no user rule or opt-out since), the value
and tangent are computed inline; anything else goes through ``fcall``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from ad.runtime.config import ADConfig
from ad.runtime.forward import fcall
from rules.extension import is_standard_rule
from rulescore import ZeroTangent, frule

__all__ = ["FAST_HELPERS"]

_Z = ZeroTangent()
_lookup = frule.table.lookup


_fast_state: dict[str, Any] = {"version": -1, "ok": False}


def _fast_ok() -> bool:
    """Whether the number frules of the arithmetic operators are still ``rules``' own."""
    if _fast_state["version"] != frule.table.version:
        ok = True
        pairs = [(a, b) for a in (float, int) for b in (float, int)]
        for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow):
            for pair in pairs:
                r = _lookup(op, pair, ADConfig)
                ok = ok and is_standard_rule(r)
        r = _lookup(operator.neg, (float,), ADConfig)
        ok = ok and is_standard_rule(r)
        _fast_state.update(version=frule.table.version, ok=ok)
    return _fast_state["ok"]


def _scalars(a: Any, b: Any, ȧ: Any, ḃ: Any) -> bool:
    """Python numbers with float-or-zero tangents, and the fast path still valid."""
    ta, tb = a.__class__, b.__class__
    return (
        (ta is float or ta is int)
        and (tb is float or tb is int)
        and (ȧ.__class__ is float or ȧ is _Z)
        and (ḃ.__class__ is float or ḃ is _Z)
        and _fast_ok()
    )


def ffast_add(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if _scalars(a, b, ȧ, ḃ):
        return a + b, ȧ + ḃ  # zeros add as the identity
    return fcall(operator.add, (_Z, ȧ, ḃ), a, b)


def ffast_sub(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if _scalars(a, b, ȧ, ḃ):
        return a - b, ȧ - ḃ
    return fcall(operator.sub, (_Z, ȧ, ḃ), a, b)


def ffast_mul(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if _scalars(a, b, ȧ, ḃ):
        if ḃ is _Z:
            return a * b, ȧ * b if ȧ is not _Z else _Z
        return a * b, a * ḃ if ȧ is _Z else ȧ * b + a * ḃ
    return fcall(operator.mul, (_Z, ȧ, ḃ), a, b)


def ffast_truediv(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if _scalars(a, b, ȧ, ḃ) and b:  # b is a number here: its truth value is defined
        y = a / b
        ȧ = 0.0 if ȧ is _Z else ȧ
        return y, (ȧ - y * ḃ) / b if ḃ is not _Z else ȧ / b
    return fcall(operator.truediv, (_Z, ȧ, ḃ), a, b)


def ffast_pow(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if a.__class__ is float and a > 0.0 and _scalars(a, b, ȧ, ḃ):
        y = a**b
        ẏ = 0.0 if ȧ is _Z else b * a ** (b - 1) * ȧ
        return y, ẏ if ḃ is _Z else ẏ + y * math.log(a) * ḃ
    return fcall(operator.pow, (_Z, ȧ, ḃ), a, b)


def ffast_neg(a: Any, ȧ: Any) -> tuple[Any, Any]:
    if a.__class__ is float and ȧ.__class__ is float and _fast_ok():
        return -a, -ȧ
    return fcall(operator.neg, (_Z, ȧ), a)


FAST_HELPERS: dict[str, Callable] = {
    "_ad_ffast_add": ffast_add,
    "_ad_ffast_sub": ffast_sub,
    "_ad_ffast_mul": ffast_mul,
    "_ad_ffast_truediv": ffast_truediv,
    "_ad_ffast_pow": ffast_pow,
    "_ad_ffast_neg": ffast_neg,
}
