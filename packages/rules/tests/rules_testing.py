"""Helpers shared by the numpy rule tests: random inputs per dtype and a two-rule check."""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import HasForwardsMode, HasReverseMode, NoTangent, RuleConfig, frule, rrule
from rulestest import primal_and_tangent, test_frule, test_rrule

DTYPES = [np.float64, np.float32, np.complex128]
TOLERANCES = {
    np.float64: {"rtol": 1e-7, "atol": 1e-9},
    np.float32: {"rtol": 2e-3, "atol": 1e-4},
    np.complex128: {"rtol": 1e-7, "atol": 1e-9},
}


def N(x: Any) -> Any:
    """Mark an index, axis or subscripts argument as non-differentiable."""
    return primal_and_tangent(x, NoTangent())


def random_maker(seed: int) -> Any:
    """``rand(*shape, dtype=float64)``: seeded random arrays (complex: both parts random)."""
    rng = np.random.default_rng(seed)

    def rand(*shape: int, dtype: Any = np.float64) -> np.ndarray:
        x = rng.standard_normal(shape)
        if np.dtype(dtype).kind == "c":
            x = x + 1j * rng.standard_normal(shape)
        return np.asarray(x, dtype=dtype)

    return rand


def maker(dtype: Any) -> Any:
    """A function of a shape giving seeded random arrays of ``dtype``."""
    rand = random_maker(0)
    return lambda *shape: rand(*shape, dtype=dtype)


def mH(x: np.ndarray) -> np.ndarray:
    """Conjugate transpose of the last two axes."""
    return np.conj(np.swapaxes(x, -1, -2))


def both(f: Any, *args: Any, tol: float = 1e-7, **kw: Any) -> None:
    """``test_rrule`` and ``test_frule`` with one tolerance."""
    test_rrule(f, *args, rtol=tol, atol=tol, **kw)
    test_frule(f, *args, rtol=tol, atol=tol, **kw)


def check(f: Any, args: tuple, kw: dict, dtype: Any) -> None:
    """Both rules of ``f`` through rulestest, with the dtype's tolerances."""
    test_rrule(f, *args, fkwargs=kw, **TOLERANCES[dtype])
    test_frule(f, *args, fkwargs=kw, **TOLERANCES[dtype])


class RulesOnly(RuleConfig, HasReverseMode, HasForwardsMode):
    """A toy AD that can differentiate functions with rules only (for config-aware
    rules that call back into an AD: map, reduce, quietly)."""

    def rrule_via_ad(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        out = rrule(f, *args, **kwargs)
        if out is None:
            raise TypeError(f"no rule for {f}")
        return out

    def frule_via_ad(self, tangents: tuple, f: Any, *args: Any, **kwargs: Any) -> Any:
        out = frule(tangents, f, *args, **kwargs)
        if out is None:
            raise TypeError(f"no frule for {f}")
        return out
