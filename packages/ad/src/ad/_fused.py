"""Run-time support of the fused elementwise regions (``transform.fuse``).

A fused region's primal is plain numpy and its adjoint was derived when the
function was transformed: both are valid only while the rules that the
per-operation path would dispatch to are the built-in ones. ``FUSED.ok`` says
so; every registration recomputes it, so a user rule (or an ``opt_out``) for
``np.sin`` on arrays turns fusion off and the per-operation path takes over.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rules._util import is_zero
from rulescore import rrule, unthunk

from ._config import ADConfig
from .errors import CotangentShapeError

__all__ = ["FUSED", "NOVALUE", "fused_seed"]

#: The numpy functions a region may call, by attribute name (``transform.fuse``).
UFUNCS = ("sin", "cos", "exp", "log", "tanh", "sqrt")
REDUCTIONS = ("sum", "mean")
_TRUSTED = ("rules.", "ad.")
_f64 = np.float64


class _Fused:
    """``ok``: whether the rules behind a fused region are still the built-in ones."""

    __slots__ = ("ok",)

    def __init__(self) -> None:
        self.ok = False


FUSED = _Fused()


def _trusted(f: Any, types: tuple) -> bool:
    r = rrule.table.lookup(f, types, ADConfig)
    return r is not None and getattr(r.impl, "__module__", "").startswith(_TRUSTED)


def _refresh() -> None:
    arr = np.ndarray
    binary = (operator.add, operator.sub, operator.mul, operator.truediv)
    FUSED.ok = (
        all(_trusted(getattr(np, n), (arr,)) for n in UFUNCS + REDUCTIONS)
        and all(_trusted(getattr(arr, n), (arr,)) for n in REDUCTIONS)
        and all(_trusted(f, (arr, arr)) for f in binary)
        and all(_trusted(f, p) for f in binary for p in ((float, arr), (arr, float)))
        and _trusted(operator.neg, (arr,))
        and _trusted(operator.pow, (arr, int))
        and _trusted(operator.getitem, (arr, slice))
    )


_refresh()
rrule.table.listeners.append(_refresh)


class _NoValue:
    """What a primal called by ``ad.gradient`` returns for a value it did not compute."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not computed: ad.gradient does not return the value>"


#: The value a fused region skipped: only ``ad.gradient`` asks for that, and sees it.
NOVALUE = _NoValue()


def fused_seed(ct: Any, site: str) -> float:
    """The cotangent ``ct`` of a fused region's ``np.sum``/``np.mean`` as a float.

    A complex cotangent of the real result keeps its real part (its projection);
    a zero is 0.0. Anything that is not one number is an error naming ``site``.
    """
    if type(ct) is _f64:  # the seed of a float64 loss
        return float(ct)
    ct = unthunk(ct)
    if is_zero(ct):
        return 0.0
    if np.ndim(ct) == 0 and isinstance(ct, (int, float, complex, np.number, np.ndarray)):
        return float(np.real(ct))
    shape = getattr(ct, "shape", None)
    got = f"an array of shape {shape}" if shape is not None else f"{type(ct).__name__}"
    raise CotangentShapeError(
        f"{site}: the cotangent of this whole-array sum (one number) must be one number, "
        f"got {got}. To fix: pass the pullback a scalar cotangent"
    )
