"""Matrices LAPACK reads from one triangle: ``cholesky``, ``eigh``, ``eigvalsh``,
``svd``/``pinv`` with ``hermitian=True``, scipy's ``cho_factor`` and
``solve``/``inv`` with ``assume_a`` 'her', 'pos' or 'sym'.

Such a function of ``a`` is a function of the Hermitian ``S = T + Tᴴ + Re
diag(a)`` (``T`` the strict triangle read; complex symmetric ``T + Tᵀ +
diag(a)`` for ``assume_a='sym'``). The rules differentiate exactly that:
:func:`triangle_hermitian` maps a tangent ``ȧ`` to ``Ṡ``, and its adjoint
:func:`triangle_cotangent` a cotangent ``S̄`` of ``S`` to ``ā``, which is zero
on the triangle never read. Conventions: LINALG.md.

>>> import numpy as np
>>> a = np.array([[1.0, 9.0], [2.0, 3.0]])
>>> triangle_hermitian(a, True, np.float64)
array([[1., 2.],
       [2., 3.]])
>>> triangle_cotangent(np.ones((2, 2)), True, np.float64)
array([[1., 0.],
       [2., 1.]])
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import DTypeLike

from rulescore import non_differentiable

from ._linalg_util import mH

__all__ = ["read_triangle_weights", "triangle_cotangent", "triangle_hermitian"]


@functools.lru_cache(maxsize=16)
def _tril_half_weights(n: int, dtype: np.dtype) -> np.ndarray:
    """A read-only ``(n, n)`` matrix: 1 below the diagonal, 1/2 on it, 0 above."""
    w = np.tri(n, k=-1, dtype=dtype)
    w.flat[:: n + 1] = 0.5
    w.flags.writeable = False
    return w


non_differentiable(_tril_half_weights)


def read_triangle_weights(n: int, dtype: DTypeLike, lower: bool) -> np.ndarray:
    """``W``: 1 on the strict triangle ``lower`` names, 1/2 on the diagonal, 0 elsewhere.

    >>> read_triangle_weights(2, np.float64, False)
    array([[0.5, 1. ],
           [0. , 0.5]])
    """
    w = _tril_half_weights(n, np.dtype(dtype))
    return w if lower else w.T


def _adjoint(x: np.ndarray, conjugate: bool) -> np.ndarray:
    """``xᴴ``, or ``xᵀ`` where ``conjugate`` is False (complex symmetric matrices)."""
    return mH(x) if conjugate else np.swapaxes(x, -1, -2)


def triangle_hermitian(
    x: np.ndarray, lower: bool, dtype: DTypeLike, conjugate: bool = True
) -> np.ndarray:
    """The Hermitian matrix LAPACK reads from ``x``: the strict triangle ``lower``
    names, its conjugate mirrored across the diagonal, and ``Re diag(x)``.

    With ``Y = x ∘ W`` (:func:`read_triangle_weights`) this is ``Y + Yᴴ``. It is
    linear: the tangent of the input, read as LAPACK reads it. ``dtype`` is the
    real dtype of the weights. ``conjugate=False`` gives the complex symmetric
    ``Y + Yᵀ`` (the whole diagonal), which ``assume_a='sym'`` reads; for real
    ``x`` both agree.

    >>> triangle_hermitian(np.array([[1j, 9.0], [2j, 3.0]]), True, np.float64)
    array([[0.+0.j, 0.-2.j],
           [0.+2.j, 3.+0.j]])

    See also: :func:`triangle_cotangent`, its adjoint.
    """
    y = x * read_triangle_weights(x.shape[-1], dtype, lower)
    return y + _adjoint(y, conjugate)


def triangle_cotangent(
    g: np.ndarray, lower: bool, dtype: DTypeLike, conjugate: bool = True
) -> np.ndarray:
    """The adjoint of :func:`triangle_hermitian`: ``(g + gᴴ) ∘ W``.

    Entries of the read strict triangle get ``gᵢⱼ + conj(gⱼᵢ)``, the diagonal
    ``Re gᵢᵢ``, the ignored triangle 0 (for ``⟨a, b⟩ = Re tr(aᴴ b)``); with
    ``conjugate=False`` ``(g + gᵀ) ∘ W`` (``gᵢⱼ + gⱼᵢ``, the diagonal ``gᵢᵢ``).

    >>> triangle_cotangent(np.array([[1.0, 2.0], [3.0, 4.0]]), False, np.float64)
    array([[1., 5.],
           [0., 4.]])
    """
    return (g + _adjoint(g, conjugate)) * read_triangle_weights(g.shape[-1], dtype, lower)
