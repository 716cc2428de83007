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
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    ZeroTangent,
    frule,
    frule_via_ad,
    non_differentiable,
    rrule,
    rrule_via_ad,
    unthunk,
)

from . import _linalg_basic, _linalg_util, _numpy_elementwise, _util
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


non_differentiable(_linalg_util.bind)
non_differentiable(_linalg_util.triangle)
non_differentiable(_linalg_util.flipped)


# solve_as(a, b, lower) is np.linalg.solve(a, b) for the flag triangle(a, b)
# chose: it has solve's rules, so a derivative through it (nested
# differentiation of solve's rules) reaches every entry of a.
@rrule.register(_linalg_util.solve_as)
def _(a: Any, b: Any, lower: Any) -> Any:
    x, pb = rrule(np.linalg.solve, a, b)

    def solve_as_pullback(x̄: Any) -> tuple:
        return (*pb(x̄), NoTangent())

    return x, solve_as_pullback


@frule.register(_linalg_util.solve_as)
def _(ḟ: Any, ȧ: Any, ḃ: Any, l̇: Any, a: Any, b: Any, lower: Any) -> Any:
    return frule((ḟ, ȧ, ḃ), np.linalg.solve, a, b)


def _delegate(helper: Any, reference: Any) -> None:
    """Give ``helper`` the rules of ``reference`` (same arguments, same value), which
    an AD differentiates: ``helper`` keeps a ``try`` or a fast library call that
    the AD cannot follow."""

    @rrule.register(helper, config=HasReverseMode)
    def _(config: Any, *args: Any, **kwargs: Any) -> Any:
        y, pb = rrule_via_ad(config, reference, *args, **kwargs)

        def delegated_pullback(ȳ: Any) -> tuple:
            return (NoTangent(), *pb(ȳ)[1:])

        return y, delegated_pullback

    @frule.register(helper, config=HasForwardsMode)
    def _(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
        n = len(rest) // 2
        return frule_via_ad(config, (ZeroTangent(), *rest[:n]), reference, *rest[n:], **kwargs)


def _solve_with_name(fname: str, a: Any, b: Any) -> Any:
    return np.linalg.solve(a, b)


def _det_adjugate_regular(a: Any, d: Any) -> Any:
    return np.reshape(d, np.shape(d) + (1, 1)) * np.linalg.inv(a)


_delegate(_linalg_basic.det_tangent, _linalg_basic.det_tangent_regular)
# det's pullback: d·a⁻¹, falling back (in a ``try``) to the SVD adjugate when a is
# singular; differentiated again, the regular form (the second derivative of det
# at a singular matrix goes through inv, which raises there).
_delegate(_linalg_basic._det_adjugate, _det_adjugate_regular)
_delegate(_linalg_basic._solve_or_explain, _solve_with_name)
_delegate(_linalg_util.tri_solve, _linalg_util.tri_solve_reference)


def _times_reference(ȳ: Any, p: Any) -> Any:
    return ȳ * p


# ``times_reusing`` writes into its temporary when nobody else holds it (a pullback's
# fast path); differentiated again, it is the product it computes.
_delegate(_numpy_elementwise.times_reusing, _times_reference)
