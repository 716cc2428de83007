"""Run-time support of the fused elementwise regions (``transform.fuse``).

A fused region's primal is plain numpy and its adjoint was derived when the
function was transformed: both are valid only while the rules that the
per-operation path would dispatch to are the built-in ones. ``_fast.FLAGS.fused``
says so; every registration recomputes it (with the other fast paths' flags), so
a user rule (or an ``opt_out``) for ``np.sin`` on arrays turns fusion off and the
per-operation path takes over.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rules._util import is_zero
from rulescore import unthunk

from .errors import CotangentShapeError

__all__ = ["NOVALUE", "REDUCTIONS", "UFUNCS", "fused_seed"]

#: The numpy functions a region may call, by attribute name (``transform.fuse``).
UFUNCS = ("sin", "cos", "exp", "log", "tanh", "sqrt")
REDUCTIONS = ("sum", "mean")
_f64 = np.float64


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
