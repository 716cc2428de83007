"""scipy.linalg matrix functions and assembly: expm, sqrtm, block_diag.

``expm``: the pushforward is the Fréchet derivative ``L(A, Ȧ)``
(``scipy.linalg.expm_frechet``), the pullback ``L(Aᴴ, Ȳ)``. ``sqrtm``: the
Sylvester equations ``X Ẋ + Ẋ X = Ȧ`` and ``Xᴴ Ā + Ā Xᴴ = X̄``.

>>> import numpy as np
>>> import scipy.linalg
>>> from rulescore import rrule
>>> a = np.array([[0.0, 1.0], [0.0, 0.0]])
>>> y, pb = rrule(scipy.linalg.expm, a)
>>> bool(np.allclose(pb(np.eye(2))[1], y.T))  # d tr(expm(a)) = expm(a)ᵀ
True
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sl

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import bind, is_zero, mH, unsupported
from ._scipy_linalg_util import (
    _nd,
    _split,
)
from ._util import project, unbroadcast

__all__: list[str] = []


def _frechet(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The Fréchet derivative ``L(a, e)`` of expm, over any batch axes."""
    shape = np.broadcast_shapes(a.shape, e.shape)
    a, e = np.broadcast_to(a, shape), np.broadcast_to(e, shape)
    out = np.empty(shape, dtype=np.result_type(a, e, np.float64))
    for i in np.ndindex(shape[:-2]):
        out[i] = sl.expm_frechet(a[i], e[i], compute_expm=False, check_finite=False)
    return out


def _block(a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``[[a, e], [0, a]]`` over any batch axes."""
    a, e = np.broadcast_arrays(a, e)
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros_like(a), a], axis=-1)
    return np.concatenate([top, bottom], axis=-2)


# The Fréchet derivative's own rules (the rules of expm differentiate again, second
# order): ``expm([[A, E], [0, A]]) = [[expm A, L(A, E)], [0, expm A]]``, so ``L``'s
# pushforward is the top-right block of ``L(B, Ḃ)`` with ``B = [[A, E], [0, A]]``,
# and its pullback the adjoint of that block's extraction through ``L(Bᴴ, ·)``.
@rrule.register(_frechet)
def _(a, e):
    y = _frechet(a, e)
    n = np.shape(a)[-1]

    def frechet_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent(), ZeroTangent()
        ȳ = np.asarray(ȳ)
        full = np.zeros((*ȳ.shape[:-2], 2 * n, 2 * n), dtype=ȳ.dtype)
        full[..., :n, n:] = ȳ
        b̄ = _frechet(mH(_block(a, e)), full)
        ā = b̄[..., :n, :n] + b̄[..., n:, n:]
        return NoTangent(), unbroadcast(a, ā), unbroadcast(e, b̄[..., :n, n:])

    return y, frechet_pullback


@frule.register(_frechet)
def _(ḟ, ȧ, ė, a, e):
    y = _frechet(a, e)
    ȧ, ė = unthunk(ȧ), unthunk(ė)
    if is_zero(ȧ) and is_zero(ė):
        return y, ZeroTangent()
    ȧ = np.zeros(np.shape(a)) if is_zero(ȧ) else np.asarray(ȧ)
    ė = np.zeros(np.shape(e)) if is_zero(ė) else np.asarray(ė)
    n = np.shape(a)[-1]
    ẏ = _frechet(_block(a, e), _block(ȧ, ė))[..., :n, n:]
    return y, project(y, ẏ)


@rrule.register(sl.expm)
def expm_rrule(A):
    """rrule of ``expm``: Ā = L(Aᴴ, Ȳ), the Fréchet derivative at Aᴴ."""
    a_ = np.asarray(A)
    y = sl.expm(a_)

    def expm_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent()
        return NoTangent(), project(A, _frechet(mH(a_), np.asarray(ȳ)))

    return y, expm_pullback


@frule.register(sl.expm)
def expm_frule(ḟ, Ȧ, A):
    """frule of ``expm``: Ẏ = L(A, Ȧ) (scipy.linalg.expm_frechet)."""
    a_ = np.asarray(A)
    y = sl.expm(a_)
    if is_zero(Ȧ):
        return y, ZeroTangent()
    return y, project(y, _frechet(a_, np.asarray(unthunk(Ȧ))))


def _sqrtm_setup(A, rest, kw):
    o = bind(sl.sqrtm, (A, *rest), kw)
    if o["disp"] is False:
        raise unsupported(
            "scipy.linalg.sqrtm",
            "disp",
            False,
            "the error estimate it adds has no rule (and disp is deprecated)",
            "drop disp",
        )
    a_ = np.asarray(A)
    if a_.ndim < 2:
        raise ValueError("scipy.linalg.sqrtm: the rule needs a (..., n, n) matrix input")
    return sl.sqrtm(a_, *rest, **kw)


@rrule.register(sl.sqrtm)
def sqrtm_rrule(A, *rest, **kw):
    """rrule of ``sqrtm``: Ā solves the Sylvester equation Xᴴ Ā + Ā Xᴴ = X̄."""
    x = _sqrtm_setup(A, rest, kw)

    def sqrtm_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        xh = mH(x)
        return NoTangent(), project(A, sl.solve_sylvester(xh, xh, np.asarray(x̄))), *_nd(len(rest))

    return x, sqrtm_pullback


@frule.register(sl.sqrtm)
def sqrtm_frule(ḟ, *args, **kw):
    """frule of ``sqrtm``: Ẋ solves X Ẋ + Ẋ X = Ȧ."""
    (Ȧ, *_), (A, *rest) = _split(args)
    x = _sqrtm_setup(A, rest, kw)
    if is_zero(Ȧ):
        return x, ZeroTangent()
    ȧ = np.asarray(unthunk(Ȧ)).astype(x.dtype)
    return x, project(x, sl.solve_sylvester(x, x, ȧ))


def _blocks(arrs: tuple) -> list[tuple[int, int, int, int]]:
    """(row, col, rows, cols) of each argument's block."""
    out, r, c = [], 0, 0
    for x in arrs:
        rr, cc = np.shape(np.atleast_2d(np.asarray(x)))[-2:]
        out.append((r, c, rr, cc))
        r, c = r + rr, c + cc
    return out


@rrule.register(sl.block_diag)
def block_diag_rrule(*arrs):
    """rrule of ``block_diag``: each argument gets its block of ȳ (batch axes summed back)."""
    y = sl.block_diag(*arrs)
    blocks = _blocks(arrs)

    def block_diag_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), *(ZeroTangent() for _ in arrs))
        ȳ = np.asarray(ȳ)
        cts = (
            unbroadcast(x, ȳ[..., r : r + rr, c : c + cc])
            for x, (r, c, rr, cc) in zip(arrs, blocks)
        )
        return (NoTangent(), *cts)

    return y, block_diag_pullback


@frule.register(sl.block_diag)
def block_diag_frule(ḟ, *args):
    """frule of ``block_diag``: the block diagonal of the tangents (zero blocks for zeros)."""
    ẋs, arrs = _split(args)
    y = sl.block_diag(*arrs)
    if all(is_zero(ẋ) for ẋ in ẋs):
        return y, ZeroTangent()
    parts = [
        np.zeros(np.shape(x), dtype=y.dtype) if is_zero(ẋ) else np.asarray(unthunk(ẋ))
        for ẋ, x in zip(ẋs, arrs)
    ]
    return y, project(y, sl.block_diag(*parts))
