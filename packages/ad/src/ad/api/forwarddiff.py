"""``forwarddiff(f, x)``: inside reverse mode, differentiate ``f`` in forward mode.

The value is ``f(x)``. Under ``ad.gradient`` its rule builds the Jacobian of
``f`` at ``x`` with one ``ad.jvp`` per element of ``x`` (forward mode keeps no
tape: constant memory, efficient for few inputs) and its pullback is ``Jᵀȳ``.
As in Zygote, variables that ``f`` captures get no gradient through it: pass
them in ``x`` (``forwarddiff(lambda ab: ab[0] * ab[1], [a, b])``).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime.config import ADConfig
from rulescore import AbstractZero, NoTangent, rrule, unthunk

__all__ = ["forwarddiff"]

_NO = NoTangent()


def forwarddiff(f: Callable[[Any], Any], x: Any) -> Any:
    """``f(x)``, differentiated in forward mode when inside ``ad.gradient``.

    ``x`` is a real number, a real array, or a (nested) list/tuple of them.

    >>> import ad
    >>> def pow_loop(x, n):
    ...     r = 1.0
    ...     for _ in range(n):
    ...         r = r * x
    ...     return r
    >>> ad.gradient(lambda x: ad.forwarddiff(lambda v: pow_loop(v, 2), x), 5.0)
    (10.0,)
    >>> ad.gradient(lambda a, b: ad.forwarddiff(lambda a: a * b, a), 2.0, 3.0)
    (3.0, None)

    See also: jvp, jacobian.
    """
    return f(x)


def _flat(v: Any, what: str) -> np.ndarray:
    arr = np.asarray(v)
    if arr.dtype.kind not in "fiub":
        raise TypeError(
            f"forwarddiff: {what} must be real numbers or arrays (or lists of them), "
            f"got {type(v).__name__} of dtype {arr.dtype}"
        )
    return arr.astype(np.float64).ravel()


def _unflatten(template: Any, values: np.ndarray) -> Any:
    """``values`` laid out like ``template`` (number, array, nested list/tuple)."""
    if isinstance(template, numbers.Number):
        return float(values[0])
    if isinstance(template, np.ndarray):
        dtype = template.dtype if template.dtype.kind == "f" else np.float64
        return values.reshape(template.shape).astype(dtype)
    out, i = [], 0
    for item in template:
        n = np.asarray(item).size
        out.append(_unflatten(item, values[i : i + n]))
        i += n
    return type(template)(out)


@rrule.register(forwarddiff, config=ADConfig)
def _(config: Any, f: Callable[[Any], Any], x: Any) -> Any:
    from ad.api.jvp import jvp

    xs = _flat(x, "the input")
    n = xs.size
    if n == 0:
        y = f(x)
        columns: list[np.ndarray] = []
    else:
        columns = []
        for k in range(n):
            e = np.zeros(n)
            e[k] = 1.0
            y, ẏ = jvp(f, (x,), (_unflatten(x, e),))
            columns.append(_flat(0.0 if ẏ is None else ẏ, "the output"))
    m = _flat(y, "the output").size
    J = np.stack(columns, axis=1) if columns else np.zeros((m, 0))

    def forwarddiff_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, ȳ)
        g = J.T @ _flat(ȳ, "the cotangent")
        return (_NO, _NO, _unflatten(x, g))

    return y, forwarddiff_pullback
