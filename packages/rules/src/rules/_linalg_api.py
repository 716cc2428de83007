"""numpy.linalg's array-API functions and ``cond``, on the adjoints of the rules they reuse.

numpy 2 added to ``numpy.linalg`` functions that numpy has under other
signatures: ``cross(x1, x2, /, *, axis=-1)`` (3-vectors), ``outer`` (1-d),
``matmul``, ``tensordot(x1, x2, /, *, axes=2)``, ``matrix_transpose``,
``vecdot(x1, x2, /, *, axis=-1)`` and ``diagonal(x, /, *, offset=0)`` (of
the last two axes). They are distinct function objects, so each is
registered with its numpy counterpart's adjoints (``_numpy_products``,
``_numpy_indexing``). numpy's own ``np.vecdot`` (a ufunc; ``axis=`` and
``keepdims=``) and ``np.matrix_transpose`` are registered here too.
``vecdot`` conjugates its first argument, ``y = Σ conj(a) b``: it is
antilinear in ``a``, so ``ā = b conj(ȳ)`` and ``b̄ = a ȳ`` (summed over
broadcast axes).

``cond(x, p)``: for ``p`` in ``None, 2, -2`` the ratio of the extreme
singular values, through ``dsᵢ = Re(uᵢᴴ dx vᵢ)`` (a tie for the largest or
smallest singular value gets one valid subgradient); for the other ``p``
(``1, -1, inf, -inf, 'fro', 'nuc'``) ``norm(x, p) · norm(inv(x), p)``,
through the rules of ``norm`` and ``inv``. A singular ``x`` has an infinite
condition number, which numpy returns, and no derivative: the pullback (and
the frule) raise ``LinAlgError``. ``p`` passed positionally gets
``NoTangent()``.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.linalg.cond, np.diag([4.0, 2.0]))
>>> float(y), pb(1.0)[1]  # r = s₀/s₁: dr/ds₀ = 1/s₁, dr/ds₁ = -s₀/s₁²
(2.0, array([[ 0.5,  0. ],
       [ 0. , -1. ]]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import AbstractZero, NoTangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import bind
from ._numpy_indexing import _diagonal_adjoint
from ._numpy_linear import register_bilinear, register_linear, sum_to
from ._numpy_products import (
    _check_cross,
    _cross_grad,
    _matmul_grad_a,
    _matmul_grad_b,
    _outer_grad,
    _tensordot_grad,
)
from ._numpy_shape import _involution
from ._util import asarray, project

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()

la = np.linalg

register_bilinear(la.cross, _cross_grad(0), _cross_grad(1), "linalg_cross", check=_check_cross)
register_bilinear(la.outer, _outer_grad(0), _outer_grad(1), "linalg_outer")
register_bilinear(la.matmul, _matmul_grad_a, _matmul_grad_b, "linalg_matmul")
register_bilinear(la.tensordot, _tensordot_grad(0), _tensordot_grad(1), "linalg_tensordot")
register_linear(la.matrix_transpose, _involution(np.matrix_transpose), "linalg_matrix_transpose")
register_linear(np.matrix_transpose, _involution(np.matrix_transpose), "matrix_transpose")


def _linalg_diagonal_adjoint(ȳ: Any, x: Any, *, offset: int = 0) -> Any:
    return _diagonal_adjoint(ȳ, x, offset, -2, -1)


register_linear(la.diagonal, _linalg_diagonal_adjoint, "linalg_diagonal")


def _vecdot_operands(ȳ: Any, a: Any, b: Any, axis: int, keepdims: bool) -> tuple:
    """``a`` and ``b`` with the summed axis last, and ``ȳ`` broadcastable against them."""
    A, B = np.moveaxis(asarray(a), axis, -1), np.moveaxis(asarray(b), axis, -1)
    Y = asarray(ȳ)
    Y = np.moveaxis(Y, axis, -1) if keepdims else Y[..., None]
    return A, B, Y


def _check_vecdot(a: Any, b: Any, **kw: Any) -> None:
    extra = set(kw) - {"axis", "keepdims"}
    if extra:
        raise TypeError(
            f"the rule for vecdot supports the keywords axis= and keepdims= only, got "
            f"{', '.join(sorted(extra))}.\nTo fix: call vecdot(a, b, axis=...) and convert "
            "or assign the result afterwards."
        )


def _vecdot_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any, axis: int = -1, keepdims: bool = False) -> np.ndarray:
        A, B, Y = _vecdot_operands(ȳ, a, b, axis, keepdims)
        if which == 0:  # y = Σ conj(a) b is antilinear in a
            g = sum_to(asarray(B * np.conj(Y)), A.shape)
        else:
            g = sum_to(asarray(A * Y), B.shape)
        return np.moveaxis(g, -1, axis)

    return grad


register_bilinear(np.vecdot, _vecdot_grad(0), _vecdot_grad(1), "vecdot", check=_check_vecdot)
register_bilinear(la.vecdot, _vecdot_grad(0), _vecdot_grad(1), "linalg_vecdot")


# --- cond ----------------------------------------------------------------------------------

_SPECTRAL = (None, 2, -2)


def _cond_svd_weights(x: np.ndarray, p: Any) -> tuple:
    """``(U, dr/ds, Vh)``: ``dr = Re Σᵢ (dr/dsᵢ) uᵢᴴ dx vᵢ`` for the spectral ``p``."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    hi, lo = s[..., :1], s[..., -1:]
    k = s.shape[-1]
    first = (np.arange(k) == 0).astype(s.dtype)
    last = (np.arange(k) == k - 1).astype(s.dtype)
    if p == -2:  # r = lo / hi
        w = last / hi - first * lo / hi**2
    else:  # r = hi / lo
        w = first / lo - last * hi / lo**2
    return u, w, vh


def _singular(r: Any) -> None:
    if not np.all(np.isfinite(r)):
        raise np.linalg.LinAlgError(
            "numpy.linalg.cond: the matrix is singular (an infinite condition number), "
            "so cond has no derivative there.\nTo fix: regularise the matrix (x + eps*I) "
            "or differentiate a finite quantity such as 1/cond via svdvals."
        )


@rrule.register(la.cond)
def cond_rrule(x: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.linalg.cond``: through the SVD, or through ``norm`` and ``inv``."""
    p = bind(la.cond, (x, *rest), kw)["p"]
    xa = asarray(x)
    r = la.cond(xa, *rest, **kw)
    nots = (_NO,) * len(rest)

    def cond_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, *nots)
        _singular(r)
        ȳ = np.real(asarray(ȳ))[..., None]
        if p in _SPECTRAL:
            u, w, vh = _cond_svd_weights(xa, p)
            return (_NO, project(x, (u * (w * ȳ)[..., None, :]) @ vh), *nots)
        n1, pb1 = rrule(la.norm, xa, ord=p, axis=(-2, -1))
        inv, pb_inv = rrule(la.inv, xa)
        n2, pb2 = rrule(la.norm, inv, ord=p, axis=(-2, -1))
        ȳ = ȳ[..., 0]
        dx = unthunk(pb1(ȳ * n2)[1]) + unthunk(pb_inv(pb2(ȳ * n1)[1])[1])
        return (_NO, project(x, dx), *nots)

    return r, cond_pullback


@frule.register(la.cond)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    ẋ, x, rest = unthunk(args[0]), args[n], args[n + 1 :]
    p = bind(la.cond, (x, *rest), kw)["p"]
    xa = asarray(x)
    r = la.cond(xa, *rest, **kw)
    if isinstance(ẋ, AbstractZero):
        return r, _ZERO
    _singular(r)
    ẋ = asarray(ẋ)
    if p in _SPECTRAL:
        u, w, vh = _cond_svd_weights(xa, p)
        ṡ = np.real(np.einsum("...ji,...jk,...ik->...i", u.conj(), ẋ, vh.conj()))
        return r, project(r, np.sum(w * ṡ, axis=-1))
    n1, ṅ1 = frule((_NO, ẋ), la.norm, xa, ord=p, axis=(-2, -1))
    inv, i̇nv = frule((_NO, ẋ), la.inv, xa)
    n2, ṅ2 = frule((_NO, i̇nv), la.norm, inv, ord=p, axis=(-2, -1))
    return r, project(r, ṅ1 * n2 + n1 * ṅ2)
