"""Pushforwards of the commonest operations as small Python kernels, for second order.

Reverse mode over forward mode (``reverse_over_forward``) differentiates, for each operation
of a pushforward, what forward mode's dispatch ran: in general the body of the
operation's ``frule``, a few dozen generic calls (argument checks, projections,
loops over partials). For the operations a loss is made of (arithmetic, ``@``,
``np.tanh`` and its kin, ``np.sum``, ``np.mean``) the pushforward is one line of
arithmetic, ``ẏ = ȧ * b + a * ḃ``; here it is written as such, and reverse mode
differentiates that line instead, through first-order rules only. A kernel is
used only while the operation's ``frule`` is still the ``rules`` package's own
(a user's rule or opt-out wins), for numbers and float arrays.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime.config import ADConfig
from ad.runtime.tangents import is_zero
from rules.extension import is_standard_rule
from rulescore import frule

__all__ = ["kernel_for"]

_lookup = frule.table.lookup
_NUMERIC = (float, int, np.ndarray, np.float64)


def _fitted(y: Any, ṫ: Any) -> Any:
    """One operand's tangent as the tangent of the broadcast output ``y``.

    ``a + b`` with only ``a`` perturbed has the tangent ``ȧ`` broadcast to ``y``'s
    shape, as the ``frule`` returns it. Written here, the broadcast is an operation
    reverse mode differentiates: the cotangent of the tangent is summed back over
    the broadcast axes (``np.broadcast_to``'s pullback), not handed to ``ȧ`` whole.
    """
    shape = np.shape(y)
    if np.shape(ṫ) == shape:
        return ṫ
    return np.array(np.broadcast_to(ṫ, shape))


def add_pushforward(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    y = a + b
    if is_zero(ȧ):
        return y, _fitted(y, ḃ)
    if is_zero(ḃ):
        return y, _fitted(y, ȧ)
    return y, _fitted(y, ȧ + ḃ)


def sub_pushforward(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    y = a - b
    if is_zero(ȧ):
        return y, _fitted(y, -ḃ)
    if is_zero(ḃ):
        return y, _fitted(y, ȧ)
    return y, _fitted(y, ȧ - ḃ)


def mul_pushforward(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if is_zero(ȧ):
        return a * b, a * ḃ
    if is_zero(ḃ):
        return a * b, ȧ * b
    return a * b, ȧ * b + a * ḃ


def truediv_pushforward(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    y = a / b
    if is_zero(ḃ):
        return y, ȧ / b
    if is_zero(ȧ):
        return y, -(y * ḃ) / b
    return y, (ȧ - y * ḃ) / b


def matmul_pushforward(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    if is_zero(ȧ):
        return a @ b, a @ ḃ
    if is_zero(ḃ):
        return a @ b, ȧ @ b
    return a @ b, ȧ @ b + a @ ḃ


def pow_pushforward(a: Any, b: Any, ȧ: Any, ḃ: Any) -> tuple[Any, Any]:
    y = a**b
    if is_zero(ḃ):
        return y, b * a ** (b - 1) * ȧ
    if is_zero(ȧ):
        return y, y * np.log(a) * ḃ
    return y, b * a ** (b - 1) * ȧ + y * np.log(a) * ḃ


def neg_pushforward(a: Any, ȧ: Any) -> tuple[Any, Any]:
    return -a, -ȧ


def tanh_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    y = np.tanh(x)
    return y, (1.0 - y * y) * ẋ


def exp_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    y = np.exp(x)
    return y, y * ẋ


def log_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    return np.log(x), ẋ / x


def sin_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    return np.sin(x), np.cos(x) * ẋ


def cos_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    return np.cos(x), -np.sin(x) * ẋ


def sum_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    return np.sum(x), np.sum(ẋ)


def mean_pushforward(x: Any, ẋ: Any) -> tuple[Any, Any]:
    return np.mean(x), np.mean(ẋ)


_KERNELS: dict[Any, Callable] = {
    operator.add: add_pushforward,
    operator.sub: sub_pushforward,
    operator.mul: mul_pushforward,
    operator.truediv: truediv_pushforward,
    operator.matmul: matmul_pushforward,
    operator.pow: pow_pushforward,
    operator.neg: neg_pushforward,
    np.tanh: tanh_pushforward,
    np.exp: exp_pushforward,
    np.log: log_pushforward,
    np.sin: sin_pushforward,
    np.cos: cos_pushforward,
    np.sum: sum_pushforward,
    np.mean: mean_pushforward,
}

_OWN: dict[tuple, bool] = {}


def kernel_for(f: Any, args: tuple) -> Callable | None:
    """The kernel for ``f(*args)``, or None: ``f`` has one, the arguments are numbers
    or float arrays, and the ``frule`` dispatch picks is still ``rules``' own."""
    try:
        kernel = _KERNELS.get(f)
    except TypeError:  # unhashable
        return None
    if kernel is None or 2 * len(args) != kernel.__code__.co_argcount:  # np.sum(x, axis)...
        return None
    for a in args:
        if a.__class__ not in _NUMERIC or (a.__class__ is np.ndarray and a.dtype.kind != "f"):
            return None
    types = tuple(map(type, args))
    key = (f, types, frule.table.version)
    own = _OWN.get(key)
    if own is None:
        rule = _lookup(f, types, ADConfig)
        own = _OWN[key] = is_standard_rule(rule)
    return kernel if own else None
