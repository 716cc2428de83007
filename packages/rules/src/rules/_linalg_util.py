"""Helpers shared by the numpy.linalg rule modules.

Batched matrix algebra on ``(..., m, n)`` stacks (conjugate transpose,
Hermitian part, diagonal embedding), unpacking of structured cotangents such
as ``Tangent[EighResult]``, dense stand-ins for zero tangents, and the errors
and warnings the linalg rules raise.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import numpy as np

from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

__all__ = [
    "LinalgGradientWarning",
    "bind",
    "dense",
    "diag_embed",
    "entries",
    "herm",
    "is_zero",
    "mH",
    "nondiff_rest",
    "rdiv",
    "unsupported",
    "warn_gradient",
]


class LinalgGradientWarning(RuntimeWarning):
    """A linalg derivative was taken where it is not (uniquely) defined.

    Raised as a warning, with a documented finite value returned, e.g. for
    degenerate eigenvalues or singular values (see LINALG.md).
    """


def warn_gradient(fname: str, what: str) -> None:
    """Warn that a derivative of ``fname`` used a documented convention."""
    warnings.warn(f"{fname}: {what}", LinalgGradientWarning, stacklevel=3)


def unsupported(fname: str, arg: str, value: Any, why: str, fix: str) -> NotImplementedError:
    """The error for a keyword value whose derivative is not implemented."""
    return NotImplementedError(
        f"{fname}: no derivative rule for {arg}={value!r}: {why}.\nTo fix: {fix}"
    )


def mH(x: np.ndarray) -> np.ndarray:
    """Conjugate transpose of the last two axes."""
    x = np.swapaxes(x, -1, -2)
    return x.conj() if np.iscomplexobj(x) else x


def herm(x: np.ndarray) -> np.ndarray:
    """The Hermitian (symmetric, for real input) part ``(x + xᴴ) / 2``."""
    return 0.5 * (x + mH(x))


def diag_embed(v: np.ndarray) -> np.ndarray:
    """``(..., k) -> (..., k, k)`` diagonal matrices."""
    k = v.shape[-1]
    return v[..., :, None] * np.eye(k, dtype=v.dtype)


try:
    from scipy.linalg import solve_triangular as _solve_triangular
except ImportError:  # scipy is optional (the rules[scipy] extra)
    _solve_triangular = None


def tri_solve(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solve ``a x = b`` for a triangular ``a``.

    Uses ``scipy.linalg.solve_triangular`` (O(n²) per column) when scipy is
    installed and the matrices are unbatched; otherwise a general solve.
    """
    if _solve_triangular is not None and a.ndim == 2 and b.ndim in (1, 2):
        return _solve_triangular(a, b, lower=lower, check_finite=False)
    return np.linalg.solve(a, b)


def tri_solve_reference(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """``tri_solve`` by a general solve of the triangle: the form nested
    differentiation follows (only the triangle of ``a`` gets a derivative)."""
    return np.linalg.solve(np.tril(a) if lower else np.triu(a), b)


def rdiv(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``x @ inv(r)`` by a solve: ``(r⁻ᴴ xᴴ)ᴴ``."""
    return mH(np.linalg.solve(mH(r), mH(x)))


def entries(ȳ: Any, n: int) -> list[Any]:
    """The ``n`` entries of a cotangent of a tuple-valued output.

    Accepts a plain tuple/list, ``Tangent[SomeNamedTuple]`` (missing fields are
    zero), ``Tangent[tuple]``, a zero, or a thunk of any of those.
    """
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return [ZeroTangent()] * n
    if isinstance(ȳ, Tangent):
        vals = [ȳ[i] for i in range(n)] if type(ȳ)._kind == "fields" else list(ȳ)
    elif isinstance(ȳ, (tuple, list)):
        vals = list(ȳ)
    else:
        raise TypeError(
            f"expected a cotangent with {n} entries (a tuple or a Tangent of the "
            f"result namedtuple), got {type(ȳ).__name__}"
        )
    if len(vals) != n:
        raise ValueError(f"expected a cotangent with {n} entries, got {len(vals)}")
    return [unthunk(v) for v in vals]


def dense(t: Any, like: np.ndarray) -> np.ndarray:
    """``t`` as an array (zeros shaped like ``like`` for a zero tangent)."""
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return np.zeros_like(like)
    return np.asarray(t)


def is_zero(t: Any) -> bool:
    """True for a zero tangent (or a thunk of one)."""
    return isinstance(unthunk(t), AbstractZero)


@functools.cache
def _signature(f: Any) -> inspect.Signature:
    return inspect.signature(f)


def bind(f: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call ``f(*args, **kwargs)`` by name, defaults filled in."""
    bound = _signature(f).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def nondiff_rest(rest: tuple) -> tuple:
    """``NoTangent()`` for each trailing positional option (``ord``, ``UPLO``, ...)."""
    return (NoTangent(),) * len(rest)
