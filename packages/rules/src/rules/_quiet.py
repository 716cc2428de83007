"""``quietly(f, *args)``: call ``f`` with numpy's floating-point warnings off.

Rules compute partials that are finite by construction but pass through
``0/0`` or ``inf`` on the way (masked out afterwards by ``np.where``); they
call ``quietly`` instead of writing ``with np.errstate(...)`` so that the
partial stays differentiable by an AD that transforms source (nested
differentiation differentiates rule bodies). Its own rules differentiate
``f`` through the AD (``rrule_via_ad``/``frule_via_ad``), also quietly.

>>> import numpy as np
>>> quietly(lambda x: np.where(x == 0, 0.0, 1 / x), np.array([0.0, 2.0]))
array([0. , 0.5])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import (
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    frule,
    frule_via_ad,
    rrule,
    rrule_via_ad,
)

__all__ = ["quietly"]


def quietly(f: Callable, *args: Any) -> Any:
    """``f(*args)`` under ``np.errstate(all="ignore")``."""
    with np.errstate(all="ignore"):
        return f(*args)


@rrule.register(quietly, config=HasReverseMode)
def _(config: Any, f: Callable, *args: Any) -> Any:
    with np.errstate(all="ignore"):
        y, pb = rrule_via_ad(config, f, *args)

    def quietly_pullback(ȳ: Any) -> tuple:
        with np.errstate(all="ignore"):
            return (NoTangent(), *pb(ȳ))

    return y, quietly_pullback


@frule.register(quietly, config=HasForwardsMode)
def _(config: Any, ṡ: Any, *rest: Any) -> Any:
    n = len(rest) // 2  # rest = (ḟ, ẋ1, ..., f, x1, ...)
    with np.errstate(all="ignore"):
        return frule_via_ad(config, rest[:n], rest[n], *rest[n + 1 :])
