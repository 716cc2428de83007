"""Helpers shared by the scipy.linalg rule modules (``_scipy_linalg_*``).

Right-hand sides as columns, LAPACK's ``trans`` codes and ``op(A)`` (``A``,
``Aᵀ`` or ``Aᴴ``), triangular solves and divisions on batches, the cotangents
of a solve ``x = M⁻¹ b``, and the flat tangent/primal split of variadic frules.

>>> import numpy as np
>>> a = np.array([[1.0, 2.0j], [3.0, 4.0]])
>>> bool(np.array_equal(_op(a, 2), a.conj().T)), _trans("T")
(True, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sl

from rulescore import NoTangent, unthunk

from ._linalg_util import dense, mH

__all__: list[str] = []


def _split(args: tuple) -> tuple[tuple, tuple]:
    """An frule's flat ``(ẋ1, ..., ẋn, x1, ..., xn)`` as tangents and primals."""
    h = len(args) // 2
    return args[:h], args[h:]


def _nd(n: int) -> tuple:
    return (NoTangent(),) * n


def _tangent(ẋ: Any, x: np.ndarray) -> np.ndarray:
    """A tangent as an array (zeros for a zero tangent)."""
    return dense(unthunk(ẋ), x)


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _cols(x: np.ndarray, vec: bool) -> np.ndarray:
    """A right-hand side as columns: a 1-D ``b`` becomes ``(..., n, 1)``."""
    return x[..., None] if vec else x


def _uncols(x: np.ndarray, vec: bool) -> np.ndarray:
    return x[..., 0] if vec else x


def _op(x: np.ndarray, trans: int) -> np.ndarray:
    """``x``, ``xᵀ`` or ``xᴴ`` for LAPACK's trans = 0, 1, 2 (self-adjoint as a map)."""
    return x if trans == 0 else _swap(x) if trans == 1 else mH(x)


def _adjoint_solve(solve: Any, trans: int, r: np.ndarray) -> np.ndarray:
    """``op(A)⁻ᴴ r`` given ``solve(r, t) = op_t(A)⁻¹ r``."""
    if trans == 0:
        return solve(r, 2)
    if trans == 2:
        return solve(r, 0)
    return np.conj(solve(np.conj(r), 0))  # (Aᵀ)⁻ᴴ = conj(A)⁻¹


_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _trans(t: Any) -> int:
    try:
        return _TRANS[t]
    except (KeyError, TypeError):
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {t!r}") from None


def _tri(x: np.ndarray, lower: bool, strict: bool = False) -> np.ndarray:
    """The lower or upper triangle (without the diagonal when ``strict``)."""
    k = int(strict)
    return np.tril(x, -k) if lower else np.triu(x, k)


def _tsolve(t: np.ndarray, x: np.ndarray, lower: bool, trans: int = 0, unit: bool = False):
    """``op(t)⁻¹ x`` for a (batched) triangular ``t`` and a matrix ``x``."""
    return sl.solve_triangular(
        t, x, trans=trans, lower=lower, unit_diagonal=unit, check_finite=False
    )


def _rdiv(x: np.ndarray, t: np.ndarray, lower: bool, unit: bool = False) -> np.ndarray:
    """``x t⁻¹`` for a triangular ``t``: ``(t⁻ᵀ xᵀ)ᵀ``."""
    return _swap(_tsolve(t, _swap(x), lower, 1, unit))


def _rdiv_h(x: np.ndarray, t: np.ndarray, lower: bool, unit: bool = False) -> np.ndarray:
    """``x t⁻ᴴ`` for a triangular ``t``: ``(t⁻¹ xᴴ)ᴴ``."""
    return mH(_tsolve(t, mH(x), lower, 0, unit))


def _solve_cotangents(x, x̄, vec, adjoint_solve):
    """``(Ō, b̄)`` for ``x = M⁻¹ b``: ``b̄ = M⁻ᴴ x̄`` (as columns) and ``Ō = -b̄ xᴴ``."""
    b̄m = adjoint_solve(_cols(np.asarray(x̄), vec))
    return -(b̄m @ mH(_cols(x, vec))), b̄m


def _pair(x: Any, what: str) -> tuple:
    try:
        first, second = x
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a pair, got {type(x).__name__}") from None
    return first, second


def _rows(x: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``x[..., perm, :]`` with batched ``perm``."""
    return np.take_along_axis(x, perm[..., :, None], -2)


def _unrows(x: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """``y`` with ``y[..., perm, :] = x``."""
    return _rows(x, np.argsort(perm, axis=-1))
