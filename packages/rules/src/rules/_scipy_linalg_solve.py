"""scipy.linalg solves: solve_triangular, solve, inv, det, solve_sylvester, solve_banded.

Conventions (entries scipy does not read, ``assume_a``, the Hermitian
convention): see ``_scipy_linalg``.

>>> import numpy as np
>>> import scipy.linalg
>>> from rulescore import rrule
>>> a = np.array([[2.0, 5.0], [1.0, 4.0]])  # the 5.0 is never read with lower=True
>>> x, pb = rrule(scipy.linalg.solve_triangular, a, np.array([2.0, 1.0]), lower=True)
>>> float(pb(np.ones(2))[1][0, 1])
0.0
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg as sl

from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._linalg_basic import _det_adjugate, det_tangent
from ._linalg_triangle import triangle_cotangent, triangle_hermitian
from ._linalg_util import bind, diag_embed, is_zero, mH, unsupported
from ._scipy_linalg_util import (
    _adjoint_solve,
    _cols,
    _nd,
    _op,
    _pair,
    _solve_cotangents,
    _split,
    _swap,
    _tangent,
    _trans,
    _tri,
    _tsolve,
    _uncols,
)
from ._util import project, unbroadcast

__all__: list[str] = []


@rrule.register(sl.solve_triangular)
def solve_triangular_rrule(a, b, *rest, **kw):
    """rrule of ``solve_triangular``: ā lives on the triangle read (strict if unit_diagonal)."""
    o = bind(sl.solve_triangular, (a, b, *rest), kw)
    t, lower, unit = _trans(o["trans"]), bool(o["lower"]), bool(o["unit_diagonal"])
    a_, b_ = np.asarray(a), np.asarray(b)
    x = sl.solve_triangular(
        a_, b_, trans=t, lower=lower, unit_diagonal=unit, check_finite=o["check_finite"]
    )
    vec = b_.ndim == 1

    def solve(r, tt):
        return _tsolve(a_, r, lower, tt, unit)

    def solve_triangular_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), ZeroTangent(), ZeroTangent(), *_nd(len(rest))
        ō, b̄m = _solve_cotangents(x, x̄, vec, lambda r: _adjoint_solve(solve, t, r))
        ā = _tri(_op(ō, t), lower, unit)
        return NoTangent(), unbroadcast(a, ā), unbroadcast(b, _uncols(b̄m, vec)), *_nd(len(rest))

    return x, solve_triangular_pullback


@frule.register(sl.solve_triangular)
def solve_triangular_frule(ḟ, *args, **kw):
    """frule of ``solve_triangular``: ẋ = op(T)⁻¹ (ḃ - op(Ṫ) x)."""
    (ȧ, ḃ, *_), (a, b, *rest) = _split(args)
    o = bind(sl.solve_triangular, (a, b, *rest), kw)
    t, lower, unit = _trans(o["trans"]), bool(o["lower"]), bool(o["unit_diagonal"])
    a_, b_ = np.asarray(a), np.asarray(b)
    x = sl.solve_triangular(
        a_, b_, trans=t, lower=lower, unit_diagonal=unit, check_finite=o["check_finite"]
    )
    if is_zero(ȧ) and is_zero(ḃ):
        return x, ZeroTangent()
    vec = b_.ndim == 1
    xm = _cols(x, vec)
    rhs = _cols(_tangent(ḃ, b_), vec) - _op(_tri(_tangent(ȧ, a_), lower, unit), t) @ xm
    return x, project(x, _uncols(_tsolve(a_, rhs, lower, t, unit), vec))


# assume_a -> how the derivative treats a: the whole matrix, or the structure
# scipy reads (masks, or the Hermitian/symmetric matrix one triangle holds).
_KINDS = {
    None: "gen",
    "general": "gen",
    "gen": "gen",
    "banded": "gen",  # scipy finds the bandwidth from a: every entry counts
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper triangular": "upper",
    "lower triangular": "lower",
    "sym": "sym",
    "symmetric": "sym",
    "her": "her",
    "hermitian": "her",
    "pos": "her",
    "positive definite": "her",
}


def _kind(fname: str, assume_a: Any) -> str:
    try:
        return _KINDS[assume_a]
    except (KeyError, TypeError):
        raise ValueError(f"{fname}: {assume_a!r} is not a recognized matrix structure") from None


def _structured(
    x: np.ndarray, kind: str, lower: bool, dtype: np.dtype, adjoint: bool = False
) -> np.ndarray:
    """The tangent of the matrix scipy reads for ``kind`` given a tangent ``x`` of
    ``a`` (``adjoint``: ā given a cotangent ``x`` of that matrix).

    'her'/'pos' read the triangle ``lower`` names and the real diagonal, 'sym' that
    triangle and the whole diagonal (complex symmetric): ``triangle_hermitian`` and
    its adjoint ``triangle_cotangent`` (``dtype``: the weights' real dtype). The
    masks of the other kinds are self-adjoint.
    """
    if kind == "gen":
        return x
    if kind in ("her", "sym"):
        read = triangle_cotangent if adjoint else triangle_hermitian
        return read(x, lower, dtype, conjugate=kind == "her")
    if kind == "diagonal":
        return diag_embed(np.diagonal(x, axis1=-2, axis2=-1))
    if kind == "tridiagonal":
        return np.triu(np.tril(x, 1), -1)
    return _tri(x, kind == "lower")


_ADJOINT_ASSUME = {
    "diagonal": "diagonal",
    "tridiagonal": "tridiagonal",
    "upper": "lower triangular",
    "lower": "upper triangular",
    "sym": "sym",
}


def _solve_adjoint(a_, r, assume_a, kind, lower, transposed):
    """``op(A)⁻ᴴ r`` for scipy.linalg.solve's ``op(A)`` (A read as ``assume_a`` says)."""
    if transposed or kind == "her":  # op(A)ᴴ = A (transposed is real only)
        return sl.solve(a_, r, assume_a=assume_a, lower=lower, check_finite=False)
    if kind == "gen":
        assume = "gen" if assume_a is not None else None
    else:
        assume = _ADJOINT_ASSUME[kind]
    m = np.conj(a_) if kind in ("sym", "diagonal") else mH(a_)
    return sl.solve(m, r, assume_a=assume, lower=lower, check_finite=False)


def _solve_setup(a, b, rest, kw):
    o = bind(sl.solve, (a, b, *rest), kw)
    kind = _kind("scipy.linalg.solve", o["assume_a"])
    a_, b_ = np.asarray(a), np.asarray(b)
    if a_.ndim >= 2 and a_.shape[-1] == 1 and b_.ndim >= 2 and b_.shape[-2] != 1:
        raise unsupported(
            "scipy.linalg.solve",
            "a",
            "<1x1 matrix>",
            "scipy divides every row of b by a 1x1 a, which the rule does not follow",
            "divide by a[0, 0] directly",
        )
    x = sl.solve(
        a_,
        b_,
        lower=o["lower"],
        assume_a=o["assume_a"],
        transposed=o["transposed"],
        check_finite=o["check_finite"],
    )
    return o, kind, a_, b_, x


@rrule.register(sl.solve)
def solve_rrule(a, b, *rest, **kw):
    """rrule of ``scipy.linalg.solve``: ā zero where ``assume_a`` (and ``lower``) leave a unread."""
    o, kind, a_, b_, x = _solve_setup(a, b, rest, kw)
    vec = b_.ndim == 1
    lower, tr = o["lower"], bool(o["transposed"])

    def solve_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), ZeroTangent(), ZeroTangent(), *_nd(len(rest))
        ō, b̄m = _solve_cotangents(
            x, x̄, vec, lambda r: _solve_adjoint(a_, r, o["assume_a"], kind, lower, tr)
        )
        ā = _structured(_swap(ō) if tr else ō, kind, bool(lower), x.real.dtype, adjoint=True)
        return NoTangent(), unbroadcast(a, ā), unbroadcast(b, _uncols(b̄m, vec)), *_nd(len(rest))

    return x, solve_pullback


@frule.register(sl.solve)
def solve_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.solve``: ẋ = op(A)⁻¹ (ḃ - op(Ȧ) x), Ȧ structured as ``a``."""
    (ȧ, ḃ, *_), (a, b, *rest) = _split(args)
    o, kind, a_, b_, x = _solve_setup(a, b, rest, kw)
    if is_zero(ȧ) and is_zero(ḃ):
        return x, ZeroTangent()
    vec = b_.ndim == 1
    xm = _cols(x, vec)
    rhs = _cols(_tangent(ḃ, b_), vec)
    if not is_zero(ȧ):
        ȧs = _structured(np.asarray(unthunk(ȧ)), kind, bool(o["lower"]), x.real.dtype)
        rhs = rhs - (_swap(ȧs) if o["transposed"] else ȧs) @ xm
    ẋ = sl.solve(a_, rhs, lower=o["lower"], assume_a=o["assume_a"], transposed=o["transposed"])
    return x, project(x, _uncols(ẋ, vec))


def _inv_setup(a, rest, kw):
    o = bind(sl.inv, (a, *rest), kw)
    if o["assume_a"] == "diagonal":
        raise unsupported(
            "scipy.linalg.inv",
            "assume_a",
            "diagonal",
            "scipy copies the off-diagonal entries of a into the result instead of "
            "ignoring them, so the result is not an inverse unless a is diagonal",
            "use 1 / np.diagonal(a) (with np.diag), or assume_a=None",
        )
    kind = _kind("scipy.linalg.inv", o["assume_a"])
    a_ = np.asarray(a)
    y = sl.inv(a_, check_finite=o["check_finite"], assume_a=o["assume_a"], lower=o["lower"])
    return kind, bool(o["lower"]), y


@rrule.register(sl.inv)
def inv_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.inv``: ā = -Yᴴ Ȳ Yᴴ, zero where ``assume_a`` leaves a unread."""
    kind, lower, y = _inv_setup(a, rest, kw)

    def inv_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        yh = mH(y)
        ā = _structured(-(yh @ ȳ @ yh), kind, lower, y.real.dtype, adjoint=True)
        return NoTangent(), project(a, ā), *_nd(len(rest))

    return y, inv_pullback


@frule.register(sl.inv)
def inv_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.inv``: Ẏ = -Y Ȧ Y."""
    (ȧ, *_), (a, *rest) = _split(args)
    kind, lower, y = _inv_setup(a, rest, kw)
    if is_zero(ȧ):
        return y, ZeroTangent()
    ȧs = _structured(np.asarray(unthunk(ȧ)), kind, lower, y.real.dtype)
    return y, project(y, -(y @ ȧs @ y))


@rrule.register(sl.det)
def det_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.det``: ā = ȳ adj(a)ᴴ (exact for singular a too)."""
    o = bind(sl.det, (a, *rest), kw)
    a_ = np.asarray(a)
    d = sl.det(a_, check_finite=o["check_finite"])

    def det_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        ȳ = np.reshape(ȳ, a_.shape[:-2])
        adj = _det_adjugate(a_, np.reshape(d, a_.shape[:-2]))
        return NoTangent(), project(a, ȳ[..., None, None] * mH(adj)), *_nd(len(rest))

    return d, det_pullback


@frule.register(sl.det)
def det_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.det``: tr(adj(a) ȧ)."""
    (ȧ, *_), (a, *rest) = _split(args)
    o = bind(sl.det, (a, *rest), kw)
    a_ = np.asarray(a)
    d = sl.det(a_, check_finite=o["check_finite"])
    if is_zero(ȧ):
        return d, ZeroTangent()
    ḋ = det_tangent(a_, np.reshape(d, a_.shape[:-2]), np.asarray(unthunk(ȧ)))
    return d, project(d, np.reshape(ḋ, np.shape(d)))


@rrule.register(sl.solve_sylvester)
def solve_sylvester_rrule(a, b, q):
    """rrule of ``solve_sylvester`` (A X + X B = Q): Q̄ solves Aᴴ Q̄ + Q̄ Bᴴ = X̄."""
    a_, b_, q_ = np.asarray(a), np.asarray(b), np.asarray(q)
    x = sl.solve_sylvester(a_, b_, q_)

    def solve_sylvester_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), ZeroTangent(), ZeroTangent(), ZeroTangent()
        q̄ = sl.solve_sylvester(mH(a_), mH(b_), np.asarray(x̄))
        ā, b̄ = -(q̄ @ mH(x)), -(mH(x) @ q̄)
        return NoTangent(), unbroadcast(a, ā), unbroadcast(b, b̄), unbroadcast(q, q̄)

    return x, solve_sylvester_pullback


@frule.register(sl.solve_sylvester)
def solve_sylvester_frule(ḟ, ȧ, ḃ, q̇, a, b, q):
    """frule of ``solve_sylvester``: A Ẋ + Ẋ B = Q̇ - Ȧ X - X Ḃ."""
    a_, b_, q_ = np.asarray(a), np.asarray(b), np.asarray(q)
    x = sl.solve_sylvester(a_, b_, q_)
    if is_zero(ȧ) and is_zero(ḃ) and is_zero(q̇):
        return x, ZeroTangent()
    rhs = np.zeros_like(x)
    if not is_zero(q̇):
        rhs = rhs + np.asarray(unthunk(q̇))
    if not is_zero(ȧ):
        rhs = rhs - np.asarray(unthunk(ȧ)) @ x
    if not is_zero(ḃ):
        rhs = rhs - x @ np.asarray(unthunk(ḃ))
    return x, project(x, sl.solve_sylvester(a_, b_, rhs.astype(x.dtype)))


def _band_rows(l: int, u: int, n: int) -> list[tuple[int, int, int, int]]:
    """Per stored row r of ``ab`` (``ab[u + i - j, j] = a[i, j]``): d = i - j and the
    columns ``lo:hi`` it holds."""
    rows = [(r, r - u, max(0, u - r), n - max(0, r - u)) for r in range(l + u + 1)]
    return [row for row in rows if row[2] < row[3]]


non_differentiable(_band_rows)


def _pad(x: np.ndarray, before: int, after: int, axis: int) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    widths[axis] = (before, after)
    return np.pad(x, widths)


def _band_adjoint(ab: np.ndarray, l: int, u: int) -> np.ndarray:
    """The band storage of ``aᴴ`` (``u`` lower, ``l`` upper diagonals)."""
    n = ab.shape[-1]
    rows = {
        r: _pad(np.conj(ab[..., l + u - r, lo + d : hi + d]), lo, n - hi, -1)
        for r, d, lo, hi in _band_rows(u, l, n)
    }
    zero = np.zeros_like(ab[..., 0, :])
    return np.stack([rows.get(r, zero) for r in range(l + u + 1)], axis=-2)


def _band_matmul(ab: np.ndarray, x: np.ndarray, l: int, u: int) -> np.ndarray:
    """``a @ x`` for the banded ``a`` stored in ``ab`` and columns ``x``."""
    n = ab.shape[-1]
    return sum(
        _pad(ab[..., r, lo:hi, None] * x[..., lo:hi, :], lo + d, n - hi - d, -2)
        for r, d, lo, hi in _band_rows(l, u, n)
    )


def _band_outer(g: np.ndarray, x: np.ndarray, l: int, u: int) -> np.ndarray:
    """The band of ``g xᴴ`` in band storage (zero on the unused corners)."""
    n = x.shape[-2]
    rows = {
        r: _pad(np.sum(g[..., lo + d : hi + d, :] * np.conj(x[..., lo:hi, :]), -1), lo, n - hi, -1)
        for r, d, lo, hi in _band_rows(l, u, n)
    }
    zero = np.zeros_like(rows[u])  # the diagonal's row is always there
    return np.stack([rows.get(r, zero) for r in range(l + u + 1)], axis=-2)


def _banded_setup(l_and_u, ab, b, rest, kw):
    o = bind(sl.solve_banded, (l_and_u, ab, b, *rest), kw)
    lo_, up_ = (int(v) for v in _pair(l_and_u, "solve_banded's l_and_u"))
    ab_, b_ = np.asarray(ab), np.asarray(b)
    x = sl.solve_banded((lo_, up_), ab_, b_, check_finite=o["check_finite"])
    return lo_, up_, ab_, b_, x


@rrule.register(sl.solve_banded)
def solve_banded_rrule(l_and_u, ab, b, *rest, **kw):
    """rrule of ``solve_banded``: ab̄ holds the band of ā in band storage (zero corners)."""
    l, u, ab_, b_, x = _banded_setup(l_and_u, ab, b, rest, kw)
    vec = b_.ndim == 1

    def solve_banded_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), NoTangent(), ZeroTangent(), ZeroTangent(), *_nd(len(rest))
        abh = _band_adjoint(ab_, l, u)
        b̄m = sl.solve_banded((u, l), abh, _cols(np.asarray(x̄), vec), check_finite=False)
        ab̄ = -_band_outer(b̄m, _cols(x, vec), l, u)
        b̄ = _uncols(b̄m, vec)
        return NoTangent(), NoTangent(), unbroadcast(ab, ab̄), unbroadcast(b, b̄), *_nd(len(rest))

    return x, solve_banded_pullback


@frule.register(sl.solve_banded)
def solve_banded_frule(ḟ, *args, **kw):
    """frule of ``solve_banded``: ẋ = A⁻¹ (ḃ - Ȧ x), Ȧ the band stored in ȧb."""
    (_, ȧb, ḃ, *_), (l_and_u, ab, b, *rest) = _split(args)
    l, u, ab_, b_, x = _banded_setup(l_and_u, ab, b, rest, kw)
    if is_zero(ȧb) and is_zero(ḃ):
        return x, ZeroTangent()
    vec = b_.ndim == 1
    xm = _cols(x, vec)
    rhs = _cols(_tangent(ḃ, b_), vec)
    if not is_zero(ȧb):
        rhs = rhs - _band_matmul(np.asarray(unthunk(ȧb)), xm, l, u)
    ẋ = sl.solve_banded((l, u), ab_, rhs, check_finite=False)
    return x, project(x, _uncols(ẋ, vec))
