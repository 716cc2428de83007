"""Rules for the rules' own helpers, for ADs that differentiate rule bodies.

Nested differentiation (reverse mode over an ``frule``) reads the bodies of
frules and of the helpers they call. Predicates and bookkeeping are declared
non-differentiable here; a partial that reuses its temporary
(``np.subtract(1, d, out=d)``, an allocation saved on the hot path) gets its
own rules, since an AD cannot follow ``out=``; so derivatives stay exact and
the helpers keep their fast bodies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

from . import _linalg_util, _util
from ._numpy_elementwise import _one_minus_square

non_differentiable(_util.is_zero)
non_differentiable(_linalg_util.is_zero)
non_differentiable(_linalg_util._signature)


@rrule.register(_one_minus_square)
def _(Ω: Any) -> Any:
    def one_minus_square_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return NoTangent(), ZeroTangent()
        return NoTangent(), ȳ * np.conj(-2 * Ω)  # holomorphic: ȳ times conj(f'(Ω))

    return _one_minus_square(Ω), one_minus_square_pullback


@frule.register(_one_minus_square)
def _(ḟ: Any, Ω̇: Any, Ω: Any) -> Any:
    Ω̇ = unthunk(Ω̇)
    if isinstance(Ω̇, AbstractZero):
        return _one_minus_square(Ω), ZeroTangent()
    return _one_minus_square(Ω), -2 * Ω * Ω̇
