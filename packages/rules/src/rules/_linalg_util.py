"""Helpers shared by the numpy.linalg rule modules.

Batched matrix algebra on ``(..., m, n)`` stacks (conjugate transpose,
Hermitian part, diagonal embedding), unpacking of structured cotangents such
as ``Tangent[EighResult]``, dense stand-ins for zero tangents, and the errors
and warnings the linalg rules raise.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import warnings
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    unthunk,
)

from ._util import asarray

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
    "solve_as",
    "triangle",
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


def _scipy_linalg() -> Any:
    """``scipy.linalg``, imported on first use (``import rules`` imports no scipy:
    scipy.linalg alone takes a fifth of a second); None where it cannot be imported."""
    try:
        import scipy.linalg
        import scipy.linalg.lapack
    except ImportError:
        return None
    return scipy.linalg


def _scipy_solve_triangular(*args: Any, **kwargs: Any) -> Any:
    return _scipy_linalg().solve_triangular(*args, **kwargs)


# None where scipy is not installed (the rules[scipy] extra), found without importing it.
_solve_triangular = (
    _scipy_solve_triangular if importlib.util.find_spec("scipy") is not None else None
)

_LAPACK_CHARS = "fdFD"  # float32, float64, complex64, complex128


@functools.cache
def _trtrs(achar: str, bchar: str) -> Any:
    """LAPACK's ``?trtrs`` for the common type of two dtypes (as scipy picks it)."""
    get_lapack_funcs = _scipy_linalg().lapack.get_lapack_funcs
    return get_lapack_funcs(("trtrs",), (np.empty(0, achar), np.empty(0, bchar)))[0]


def tri_solve(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solve ``a x = b`` for a triangular ``a``.

    Calls LAPACK's ``?trtrs`` through scipy (O(n²) per column, without the
    ~10 µs of ``scipy.linalg.solve_triangular``'s wrapper) when scipy is
    installed and the matrices are unbatched; otherwise a general solve. A
    zero on the diagonal raises ``LinAlgError``, as numpy's solve does.
    """
    if _solve_triangular is None or a.ndim != 2 or b.ndim not in (1, 2) or _scipy_linalg() is None:
        return np.linalg.solve(a, b)
    n = a.shape[0]
    if (
        n == 0
        or a.shape[1] != n
        or b.shape[0] != n
        or a.dtype.char not in _LAPACK_CHARS
        or b.dtype.char not in _LAPACK_CHARS
    ):  # scipy's checks, conversions and empty case
        return _solve_triangular(a, b, lower=lower, check_finite=False)
    # ?trtrs wants a Fortran-ordered a: pass a C-ordered one as aᵀ, transposed back.
    fortran = a.flags.f_contiguous
    trtrs = _trtrs(a.dtype.char, b.dtype.char)
    x, info = trtrs(a if fortran else a.T, b, lower=lower == fortran, trans=0 if fortran else 1)
    if info > 0:
        raise np.linalg.LinAlgError("Singular matrix")
    if info < 0:
        raise ValueError(f"tri_solve: LAPACK ?trtrs rejected argument {-info}")
    return x


# Below this order a general solve is as fast as checking for a triangle.
TRIANGULAR_MIN_ORDER = 32


@functools.lru_cache(maxsize=16)
def _strict_triangle_masks(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Read-only ``(n, n)`` masks of the entries above and below the diagonal."""
    above = ~np.tri(n, dtype=bool)
    below = np.ascontiguousarray(above.T)
    above.flags.writeable = below.flags.writeable = False
    return above, below


def triangle(a: np.ndarray, b: np.ndarray) -> bool | None:
    """Which triangular solve computes ``np.linalg.solve(a, b)``, if one may.

    ``True`` when ``a`` is lower triangular (every entry above the diagonal is
    exactly zero), ``False`` when it is upper triangular, ``None`` when it is
    neither or when ``tri_solve`` would not be faster than a general solve:
    scipy missing, a stack, a small matrix, or a dtype outside LAPACK's four.
    O(n²) against the solve's O(n³). Not differentiable: a flag chosen at the
    primal, with a solve (``solve_as``) whose derivative does not depend on it.
    """
    if _solve_triangular is None or a.ndim != 2 or b.ndim not in (1, 2):
        return None
    n = a.shape[0]
    if n < TRIANGULAR_MIN_ORDER or a.shape[1] != n or b.shape[0] != n:
        return None  # small, or numpy's error for mismatched shapes
    if a.dtype.char not in _LAPACK_CHARS or b.dtype.char not in _LAPACK_CHARS:
        return None
    above, below = _strict_triangle_masks(n)  # (NaN counts as nonzero)
    if a[0, n - 1] == 0 and not np.logical_and(above, a).any():
        return True
    if a[n - 1, 0] == 0 and not np.logical_and(below, a).any():
        return False
    return None


def solve_as(a: np.ndarray, b: np.ndarray, lower: bool | None) -> np.ndarray:
    """``np.linalg.solve(a, b)``, by ``tri_solve`` when ``lower`` is not ``None``.

    ``lower`` is ``triangle(a, b)``: the caller has checked that ``a`` is
    exactly lower (``True``) or upper (``False``) triangular. Its rules (in
    ``_linalg_basic``) are those of ``np.linalg.solve`` (a derivative for every
    entry of ``a``, not only the triangle), unlike ``tri_solve``'s.
    """
    if lower is None:
        return np.linalg.solve(a, b)
    return tri_solve(a, b, lower=lower)


def flipped(lower: bool | None) -> bool | None:
    """The triangle of ``aᴴ`` given that of ``a`` (as ``triangle`` reports it)."""
    return None if lower is None else not lower


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
    return asarray(t)


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
