"""scipy.linalg Cholesky and LU rules: cholesky, cho_factor, cho_solve, lu_factor,
lu_solve, lu.

The LU derivative (any m x n, partial pivoting held fixed): with
``a[perm] = L U``, ``F = L1⁻¹ ȧ1 U1⁻¹`` for the leading k x k blocks gives
``L̇1 = L1 tril(F, -1)`` and ``U̇1 = triu(F) U1``; the rows below (tall) or
columns to the right (wide) follow from ``ȧ = L̇ U + L U̇``. Conventions
(tuple results and arguments, the scratch triangle of ``cho_factor``'s ``c``):
see ``_scipy_linalg``.

>>> import numpy as np
>>> import scipy.linalg
>>> from rulescore import rrule
>>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> x, pb = rrule(scipy.linalg.lu_solve, scipy.linalg.lu_factor(a), np.array([1.0, 0.0]))
>>> _, (lū, p̄), b̄ = pb(np.ones(2))
>>> bool(np.allclose(b̄, np.linalg.solve(a.T, np.ones(2)))), p̄
(True, NoTangent())
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sl

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_factor import (
    _cholesky_frule,
    _cholesky_pullback,
)
from ._linalg_util import bind, dense, entries, is_zero, mH
from ._scipy_linalg_util import (
    _adjoint_solve,
    _cols,
    _nd,
    _op,
    _pair,
    _rdiv,
    _rdiv_h,
    _rows,
    _solve_cotangents,
    _split,
    _tangent,
    _trans,
    _tsolve,
    _uncols,
    _unrows,
)
from ._util import project, unbroadcast

__all__: list[str] = []


@rrule.register(sl.cholesky)
def cholesky_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.cholesky``: zero on the triangle ``lower`` leaves unread."""
    o = bind(sl.cholesky, (a, *rest), kw)
    lower = bool(o["lower"])
    a_ = np.asarray(a)
    y = sl.cholesky(a_, lower=lower, check_finite=o["check_finite"])
    L = y if lower else mH(y)

    def cholesky_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        L̄ = np.asarray(ȳ) if lower else mH(np.asarray(ȳ))
        return NoTangent(), project(a, _cholesky_pullback(L, L̄, lower)), *_nd(len(rest))

    return y, cholesky_pullback


@frule.register(sl.cholesky)
def cholesky_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.cholesky`` along ȧ's triangle that ``lower`` names."""
    (ȧ, *_), (a, *rest) = _split(args)
    o = bind(sl.cholesky, (a, *rest), kw)
    lower = bool(o["lower"])
    y = sl.cholesky(np.asarray(a), lower=lower, check_finite=o["check_finite"])
    if is_zero(ȧ):
        return y, ZeroTangent()
    L̇ = _cholesky_frule(y if lower else mH(y), np.asarray(unthunk(ȧ)), lower)
    return y, project(y, L̇ if lower else mH(L̇))


def _flag(lower: Any) -> bool:
    """cho_factor's ``lower``: a bool, or one per matrix of a batch (all equal)."""
    flags = np.asarray(lower, dtype=bool)
    if flags.size and flags.any() != flags.all():
        raise ValueError("cho_solve: the lower flags of a batch of factors differ")
    return bool(flags.any())


def _factor_of(c: np.ndarray, lower: bool) -> np.ndarray:
    """The lower factor ``L`` (``A = L Lᴴ``) held in one triangle of ``c``."""
    return np.tril(c) if lower else mH(np.triu(c))


@rrule.register(sl.cho_factor)
def cho_factor_rrule(a, *rest, **kw):
    """rrule of ``cho_factor``: reads only the factor's triangle of the cotangent of ``c``;
    ā is zero on the triangle of ``a`` that ``lower`` leaves unread."""
    o = bind(sl.cho_factor, (a, *rest), kw)
    a_, low = np.asarray(a), bool(o["lower"])
    out = sl.cho_factor(a_, lower=low, check_finite=o["check_finite"])
    L = _factor_of(out[0], low)

    def cho_factor_pullback(ȳ):
        c̄, _ = entries(ȳ, 2)
        if is_zero(c̄):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        ā = _cholesky_pullback(L, _factor_of(np.asarray(c̄), low), low)
        return NoTangent(), project(a, ā), *_nd(len(rest))

    return out, cho_factor_pullback


@frule.register(sl.cho_factor)
def cho_factor_frule(ḟ, *args, **kw):
    """frule of ``cho_factor``: ``Tangent[tuple](ċ, NoTangent())``, ċ zero off the factor."""
    (ȧ, *_), (a, *rest) = _split(args)
    o = bind(sl.cho_factor, (a, *rest), kw)
    low = bool(o["lower"])
    out = sl.cho_factor(np.asarray(a), lower=low, check_finite=o["check_finite"])
    if is_zero(ȧ):
        return out, ZeroTangent()
    L̇ = _cholesky_frule(_factor_of(out[0], low), np.asarray(unthunk(ȧ)), low)
    return out, Tangent[tuple](project(out[0], L̇ if low else mH(L̇)), NoTangent())


@rrule.register(sl.cho_solve)
def cho_solve_rrule(c_and_lower, b, *rest, **kw):
    """rrule of ``cho_solve``: the cotangent of ``(c, lower)`` is ``(c̄, NoTangent())``."""
    o = bind(sl.cho_solve, (c_and_lower, b, *rest), kw)
    c, flags = _pair(c_and_lower, "cho_solve's c_and_lower")
    c_, b_, low = np.asarray(c), np.asarray(b), _flag(flags)
    x = sl.cho_solve((c_, flags), b_, check_finite=o["check_finite"])
    vec = b_.ndim == 1

    def cho_solve_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), ZeroTangent(), ZeroTangent(), *_nd(len(rest))
        # A = L Lᴴ is Hermitian: b̄ = A⁻¹ x̄, and L̄ = (Ā + Āᴴ) L on L's triangle.
        ō, b̄m = _solve_cotangents(
            x, x̄, vec, lambda r: sl.cho_solve((c_, low), r, check_finite=False)
        )
        ō = ō + mH(ō)
        c̄ = np.tril(ō @ np.tril(c_)) if low else np.triu(np.triu(c_) @ ō)
        c̄ = unbroadcast(c, c̄)
        return NoTangent(), (c̄, NoTangent()), unbroadcast(b, _uncols(b̄m, vec)), *_nd(len(rest))

    return x, cho_solve_pullback


@frule.register(sl.cho_solve)
def cho_solve_frule(ḟ, *args, **kw):
    """frule of ``cho_solve``: ẋ = A⁻¹ (ḃ - Ȧ x), Ȧ = L̇ Lᴴ + L L̇ᴴ from the triangle of ċ."""
    (ṗ, ḃ, *_), (c_and_lower, b, *rest) = _split(args)
    o = bind(sl.cho_solve, (c_and_lower, b, *rest), kw)
    c, flags = _pair(c_and_lower, "cho_solve's c_and_lower")
    c_, b_, low = np.asarray(c), np.asarray(b), _flag(flags)
    x = sl.cho_solve((c_, flags), b_, check_finite=o["check_finite"])
    ċ = entries(ṗ, 2)[0] if not is_zero(ṗ) else ZeroTangent()
    if is_zero(ċ) and is_zero(ḃ):
        return x, ZeroTangent()
    vec = b_.ndim == 1
    xm = _cols(x, vec)
    rhs = _cols(_tangent(ḃ, b_), vec)
    if not is_zero(ċ):
        L, L̇ = _factor_of(c_, low), _factor_of(np.asarray(unthunk(ċ)), low)
        ȧ = L̇ @ mH(L)
        rhs = rhs - (ȧ + mH(ȧ)) @ xm
    return x, project(x, _uncols(sl.cho_solve((c_, low), rhs, check_finite=False), vec))


def _ipiv_perm(piv: np.ndarray, m: int) -> np.ndarray:
    """Rows ``perm`` with ``a[perm] = L U`` from LAPACK's (0-based) row interchanges."""
    perm = np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    for i in range(piv.shape[-1]):
        j = piv[..., i : i + 1].astype(np.intp)
        pi = perm[..., i : i + 1].copy()
        perm[..., i : i + 1] = np.take_along_axis(perm, j, -1)
        np.put_along_axis(perm, j, pi, -1)
    return perm


def _lu_tangent(L, U, ȧp):
    """(L̇, U̇) of ``a[perm] = L U`` (L m×k unit lower, U k×n upper) along ``ȧp = ȧ[perm]``."""
    m, k = L.shape[-2:]
    n = U.shape[-1]
    L1, U1 = L[..., :k, :], U[..., :, :k]
    # F = L1⁻¹ Ȧ1 U1⁻¹ = L1⁻¹ L̇1 + U̇1 U1⁻¹: the strict lower part is L1⁻¹ L̇1.
    f = _rdiv(_tsolve(L1, ȧp[..., :k, :k], True, unit=True), U1, False)
    fl, fu = np.tril(f, -1), np.triu(f)
    l̇, u̇ = L1 @ fl, fu @ U1
    if m > k:  # tall: the rows below follow from Ȧ2 = L̇2 U + L2 U̇
        l̇2 = _rdiv(ȧp[..., k:, :], U1, False) - L[..., k:, :] @ fu
        l̇ = np.concatenate([l̇, l̇2], axis=-2)
    if n > k:  # wide: the columns on the right from Ȧ2 = L̇ U2 + L U̇2
        u̇2 = _tsolve(L1, ȧp[..., :k, k:], True, unit=True) - fl @ U[..., :, k:]
        u̇ = np.concatenate([u̇, u̇2], axis=-1)
    return l̇, u̇


def _lu_cotangent(L, U, L̄, Ū):
    """``ā[perm]`` for ``a[perm] = L U`` given cotangents of L and U (the adjoint of the above)."""
    m, k = L.shape[-2:]
    n = U.shape[-1]
    L1, U1 = L[..., :k, :], U[..., :, :k]
    f̄ = np.tril(mH(L1) @ np.tril(L̄[..., :k, :], -1), -1) + np.triu(np.triu(Ū[..., :, :k]) @ mH(U1))
    extra = None
    if m > k:
        L̄2 = L̄[..., k:, :]
        f̄ = f̄ - np.triu(mH(L[..., k:, :]) @ L̄2)
        extra = _rdiv_h(L̄2, U1, False)
    if n > k:
        Ū2 = Ū[..., :, k:]
        f̄ = f̄ - np.tril(Ū2 @ mH(U[..., :, k:]), -1)
        extra = _tsolve(L1, Ū2, True, trans=2, unit=True)
    ā1 = _rdiv_h(_tsolve(L1, f̄, True, trans=2, unit=True), U1, False)
    if extra is None:
        return ā1
    return np.concatenate([ā1, extra], axis=-2 if m > k else -1)


def _lu_parts(lu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L (unit lower, m×k) and U (upper, k×n) packed in ``lu``."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    return np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype), np.triu(lu[..., :k, :])


def _lu_pack(l̇: np.ndarray, u̇: np.ndarray) -> np.ndarray:
    """The tangent of ``lu``: the strict lower part of L̇ plus U̇."""
    k = u̇.shape[-2]
    out = np.zeros(l̇.shape[:-1] + (u̇.shape[-1],), dtype=np.result_type(l̇, u̇))
    out[..., :, :k] += np.tril(l̇, -1)
    out[..., :k, :] += np.triu(u̇)
    return out


@rrule.register(sl.lu_factor)
def lu_factor_rrule(a, *rest, **kw):
    """rrule of ``lu_factor``: cotangent ``(lū, anything)``; ``piv`` is piecewise constant."""
    o = bind(sl.lu_factor, (a, *rest), kw)
    a_ = np.asarray(a)
    lu, piv = sl.lu_factor(a_, check_finite=o["check_finite"])
    L, U = _lu_parts(lu)

    def lu_factor_pullback(ȳ):
        lū, _ = entries(ȳ, 2)
        if is_zero(lū):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        lū = np.asarray(lū)
        k = U.shape[-2]
        āp = _lu_cotangent(L, U, np.tril(lū[..., :, :k], -1), np.triu(lū[..., :k, :]))
        return NoTangent(), project(a, _unrows(āp, _ipiv_perm(piv, L.shape[-2]))), *_nd(len(rest))

    return (lu, piv), lu_factor_pullback


@frule.register(sl.lu_factor)
def lu_factor_frule(ḟ, *args, **kw):
    """frule of ``lu_factor``: ``Tangent[tuple](l̇u, NoTangent())``."""
    (ȧ, *_), (a, *rest) = _split(args)
    o = bind(sl.lu_factor, (a, *rest), kw)
    lu, piv = sl.lu_factor(np.asarray(a), check_finite=o["check_finite"])
    if is_zero(ȧ):
        return (lu, piv), ZeroTangent()
    L, U = _lu_parts(lu)
    l̇, u̇ = _lu_tangent(L, U, _rows(np.asarray(unthunk(ȧ)), _ipiv_perm(piv, L.shape[-2])))
    return (lu, piv), Tangent[tuple](project(lu, _lu_pack(l̇, u̇)), NoTangent())


def _lu_solve_setup(lu_and_piv, b, rest, kw):
    o = bind(sl.lu_solve, (lu_and_piv, b, *rest), kw)
    lu, piv = _pair(lu_and_piv, "lu_solve's lu_and_piv")
    lu_, piv_, b_ = np.asarray(lu), np.asarray(piv), np.asarray(b)
    t = _trans(o["trans"])
    x = sl.lu_solve((lu_, piv_), b_, trans=o["trans"], check_finite=o["check_finite"])

    def solve(r, tt):
        return sl.lu_solve((lu_, piv_), r, trans=tt, check_finite=False)

    return lu, lu_, piv_, b_, t, x, solve


@rrule.register(sl.lu_solve)
def lu_solve_rrule(lu_and_piv, b, *rest, **kw):
    """rrule of ``lu_solve``: the cotangent of ``(lu, piv)`` is ``(lū, NoTangent())``."""
    lu, lu_, piv_, b_, t, x, solve = _lu_solve_setup(lu_and_piv, b, rest, kw)
    vec = b_.ndim == 1

    def lu_solve_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), ZeroTangent(), ZeroTangent(), *_nd(len(rest))
        ō, b̄m = _solve_cotangents(x, x̄, vec, lambda r: _adjoint_solve(solve, t, r))
        # A = P L U with A[perm] = L U: Ā[perm] = L̄ Uᴴ + ... on L's and U's parts.
        L, U = _lu_parts(lu_)
        āp = _rows(_op(ō, t), _ipiv_perm(piv_, lu_.shape[-2]))
        lū = np.tril(āp @ mH(U), -1) + np.triu(mH(L) @ āp)
        lū = unbroadcast(lu, lū)
        return NoTangent(), (lū, NoTangent()), unbroadcast(b, _uncols(b̄m, vec)), *_nd(len(rest))

    return x, lu_solve_pullback


@frule.register(sl.lu_solve)
def lu_solve_frule(ḟ, *args, **kw):
    """frule of ``lu_solve``: ẋ = op(A)⁻¹ (ḃ - op(Ȧ) x) with Ȧ[perm] = L̇ U + L U̇."""
    (ṗ, ḃ, *_), (lu_and_piv, b, *rest) = _split(args)
    _, lu_, piv_, b_, t, x, solve = _lu_solve_setup(lu_and_piv, b, rest, kw)
    l̇u = entries(ṗ, 2)[0] if not is_zero(ṗ) else ZeroTangent()
    if is_zero(l̇u) and is_zero(ḃ):
        return x, ZeroTangent()
    vec = b_.ndim == 1
    xm = _cols(x, vec)
    rhs = _cols(_tangent(ḃ, b_), vec)
    if not is_zero(l̇u):
        L, U = _lu_parts(lu_)
        l̇u = np.asarray(unthunk(l̇u))
        ȧp = np.tril(l̇u, -1) @ U + L @ np.triu(l̇u)
        ȧ = _unrows(ȧp, _ipiv_perm(piv_, lu_.shape[-2]))
        rhs = rhs - _op(ȧ, t) @ xm
    return x, project(x, _uncols(solve(rhs, t), vec))


def _lu_call(a_, o):
    """scipy's ``lu`` output, and (perm, L, U) with ``a[perm] = L U``."""
    out = sl.lu(
        a_, permute_l=o["permute_l"], p_indices=o["p_indices"], check_finite=o["check_finite"]
    )
    if o["permute_l"]:
        p, L, U = sl.lu(a_, p_indices=True, check_finite=False)
    elif o["p_indices"]:
        p, L, U = out
    else:
        P, L, U = out
        p = np.argmax(P, axis=-1)  # a = P L U = L[p] U
    return out, np.argsort(p, axis=-1), L, U


@rrule.register(sl.lu)
def lu_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.lu``: cotangents of (P, L, U), (p, L, U) or (PL, U)."""
    o = bind(sl.lu, (a, *rest), kw)
    a_ = np.asarray(a)
    out, perm, L, U = _lu_call(a_, o)

    def lu_pullback(ȳ):
        if o["permute_l"]:
            pl̄, Ū = entries(ȳ, 2)
            L̄ = ZeroTangent() if is_zero(pl̄) else _rows(np.asarray(pl̄), perm)
        else:
            _, L̄, Ū = entries(ȳ, 3)
        if is_zero(L̄) and is_zero(Ū):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        āp = _lu_cotangent(L, U, dense(L̄, L), dense(Ū, U))
        return NoTangent(), project(a, _unrows(āp, perm)), *_nd(len(rest))

    return out, lu_pullback


@frule.register(sl.lu)
def lu_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.lu``: the permutation gets a zero tangent."""
    (ȧ, *_), (a, *rest) = _split(args)
    o = bind(sl.lu, (a, *rest), kw)
    a_ = np.asarray(a)
    out, perm, L, U = _lu_call(a_, o)
    if is_zero(ȧ):
        return out, ZeroTangent()
    l̇, u̇ = _lu_tangent(L, U, _rows(np.asarray(unthunk(ȧ)), perm))
    if o["permute_l"]:
        return out, Tangent[tuple](project(out[0], _unrows(l̇, perm)), project(U, u̇))
    ṗ = NoTangent() if o["p_indices"] else ZeroTangent()
    return out, Tangent[tuple](ṗ, project(L, l̇), project(U, u̇))
