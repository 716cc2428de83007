"""numpy.linalg rules around the singular value decomposition: svd, svdvals,
pinv, lstsq.

The svd derivative splits ``1/(sⱼ² - sᵢ²)`` into ``1/(sⱼ - sᵢ)`` and
``1/(sⱼ + sᵢ)`` halves; only the first diverges for degenerate singular values
and it multiplies the part of the cotangent that a loss invariant under
rotations of the degenerate singular vectors does not have, so it is dropped
there (with a warning). Conventions: LINALG.md.
"""

from __future__ import annotations

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_triangle import triangle_cotangent, triangle_hermitian
from ._linalg_util import (
    bind,
    dense,
    diag_embed,
    entries,
    is_zero,
    mH,
    nondiff_rest,
    unsupported,
    warn_gradient,
)
from ._util import asarray, finfo, project

_DEGENERATE = (
    "(nearly) equal or zero singular values: the singular-vector terms that diverge "
    "were set to zero, which is exact only for losses invariant under rotations of "
    "the singular vectors within each degenerate subspace (see LINALG.md)."
)


def _svd_kernels(s: np.ndarray, fname: str, warn: bool):
    """E⁻ = 1/(sⱼ - sᵢ), E⁺ = 1/(sⱼ + sᵢ) off the diagonal, and 1/s; zero where singular."""
    k = s.shape[-1]
    scale = s[..., :1, None] if k else s[..., None]
    tol = 10 * max(k, 1) * finfo(s.dtype).eps * np.maximum(scale, finfo(s.dtype).tiny)
    off = ~np.eye(k, dtype=bool)
    kernels = []
    for d in (s[..., None, :] - s[..., :, None], s[..., None, :] + s[..., :, None]):
        bad = np.abs(d) <= tol
        kernels.append(np.where(bad | ~off, 0.0, 1.0 / np.where(bad, 1.0, d)))
        if warn and (bad & off).any():
            warn_gradient(fname, _DEGENERATE)
            warn = False
    small = s <= tol[..., 0]
    if warn and small.any():
        warn_gradient(fname, _DEGENERATE)
    sinv = np.where(small, 0.0, 1.0 / np.where(small, 1.0, s))
    return kernels[0], kernels[1], sinv


def _svd_pullback(a, u, s, vh, ū, s̄, v̄h, fname):
    """ā for a = U diag(s) Vh (reduced), cotangents of U, s, Vh (zeros allowed)."""
    m, n = a.shape[-2:]
    k = s.shape[-1]
    cplx = np.iscomplexobj(u)
    p̄ = diag_embed(dense(s̄, s).real.astype(u.dtype))
    if is_zero(ū) and is_zero(v̄h):
        return u @ p̄ @ vh
    v = mH(vh)
    ū, v̄ = dense(ū, u), mH(dense(v̄h, vh))
    em, ep, sinv = _svd_kernels(s, fname, warn=True)
    g, h = mH(u) @ ū, mH(v) @ v̄
    xm, xp = em * (g + h), ep * (g - h)
    p̄ = p̄ + 0.5 * (xm + mH(xm) + xp - mH(xp))
    if cplx:
        dg = np.diagonal(g, axis1=-2, axis2=-1).imag - np.diagonal(h, axis1=-2, axis2=-1).imag
        p̄ = p̄ + diag_embed(0.5j * dg * sinv)
    ā = u @ p̄ @ vh
    if m > k:
        ā = ā + ((ū - u @ g) * sinv[..., None, :]) @ vh
    if n > k:
        ā = ā + u @ (sinv[..., :, None] * (mH(v̄) - mH(h) @ vh))
    return ā


def _svd_frule(a, u, s, vh, ȧ, fname):
    """(U̇, ṡ, V̇h), with the phase gauge split evenly between U and V."""
    m, n = a.shape[-2:]
    k = s.shape[-1]
    v = mH(vh)
    p = mH(u) @ ȧ @ v
    ṡ = np.diagonal(p, axis1=-2, axis2=-1).real
    em, ep, sinv = _svd_kernels(s, fname, warn=True)
    sym, skew = em * (p + mH(p)), ep * (p - mH(p))
    ωu, ωv = 0.5 * (sym + skew), 0.5 * (sym - skew)
    if np.iscomplexobj(p):
        phase = diag_embed(0.5j * np.diagonal(p, axis1=-2, axis2=-1).imag * sinv)
        ωu, ωv = ωu + phase, ωv - phase
    u̇, v̇ = u @ ωu, v @ ωv
    if m > k:
        u̇ = u̇ + (ȧ @ v - u @ p) * sinv[..., None, :]
    if n > k:
        v̇ = v̇ + (mH(ȧ) @ u - v @ mH(p)) * sinv[..., None, :]
    return u̇, ṡ, mH(v̇)


def _svd_options(a: np.ndarray, rest: tuple, kw: dict) -> tuple[bool, bool]:
    o = bind(np.linalg.svd, (a, *rest), kw)
    full, uv = o["full_matrices"], o["compute_uv"]
    if uv and full and a.shape[-1] != a.shape[-2]:
        raise unsupported(
            "numpy.linalg.svd",
            "full_matrices",
            True,
            f"the extra singular vectors of a {a.shape[-2]}x{a.shape[-1]} matrix are not unique",
            "pass full_matrices=False (or compute_uv=False)",
        )
    return uv, bool(o["hermitian"])


@rrule.register(np.linalg.svd)
def _(a, *rest, **kw):
    a_ = asarray(a)
    uv, hermitian = _svd_options(a_, rest, kw)
    out = np.linalg.svd(a_, *rest, **kw)
    u, s, vh = out if uv else np.linalg.svd(a_, full_matrices=False, hermitian=hermitian)

    def svd_pullback(ȳ):
        ū, s̄, v̄h = entries(ȳ, 3) if uv else (ZeroTangent(), unthunk(ȳ), ZeroTangent())
        if is_zero(ū) and is_zero(s̄) and is_zero(v̄h):
            return NoTangent(), ZeroTangent(), *nondiff_rest(rest)
        ā = _svd_pullback(a_, u, s, vh, ū, s̄, v̄h, "numpy.linalg.svd")
        ā = triangle_cotangent(ā, True, s.dtype) if hermitian else ā
        return NoTangent(), project(a, ā), *nondiff_rest(rest)

    return out, svd_pullback


@frule.register(np.linalg.svd)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, a, rest = args[0], asarray(args[h]), args[h + 1 :]
    uv, hermitian = _svd_options(a, rest, kw)
    out = np.linalg.svd(a, *rest, **kw)
    if is_zero(ȧ):
        return out, ZeroTangent()
    ȧ = asarray(unthunk(ȧ))
    # hermitian=True: numpy calls eigh(a), which reads the lower triangle.
    ȧ = triangle_hermitian(ȧ, True, (out[1] if uv else out).dtype) if hermitian else ȧ
    if not uv:
        u, s, vh = np.linalg.svd(a, full_matrices=False, hermitian=hermitian)
        ṡ = np.einsum("...ji,...jk,...ik->...i", u.conj(), ȧ, vh.conj()).real
        return out, project(out, ṡ)
    u, s, vh = out
    u̇, ṡ, v̇h = _svd_frule(a, u, s, vh, ȧ, "numpy.linalg.svd")
    return out, Tangent[type(out)](U=project(u, u̇), S=project(s, ṡ), Vh=project(vh, v̇h))


@rrule.register(np.linalg.svdvals)
def _(x):
    x_ = asarray(x)
    u, s, vh = np.linalg.svd(x_, full_matrices=False)

    def svdvals_pullback(s̄):
        s̄ = unthunk(s̄)
        if is_zero(s̄):
            return NoTangent(), s̄
        return NoTangent(), project(x, (u * asarray(s̄).real[..., None, :]) @ vh)

    return s, svdvals_pullback


@frule.register(np.linalg.svdvals)
def _(ḟ, ẋ, x):
    u, s, vh = np.linalg.svd(asarray(x), full_matrices=False)
    if is_zero(ẋ):
        return s, ZeroTangent()
    ẋ = asarray(unthunk(ẋ))
    return s, project(s, np.einsum("...ji,...jk,...ik->...i", u.conj(), ẋ, vh.conj()).real)


def _pinv_frule(a, x, ȧ):
    """Golub & Pereyra: d(a⁺) for a locally constant rank."""
    ra = np.eye(a.shape[-2], dtype=x.dtype) - a @ x
    rx = np.eye(a.shape[-1], dtype=x.dtype) - x @ a
    ȧh = mH(ȧ)
    return -(x @ ȧ @ x) + x @ mH(x) @ ȧh @ ra + rx @ ȧh @ mH(x) @ x


def _pinv_pullback(a, x, x̄):
    ra = np.eye(a.shape[-2], dtype=x.dtype) - a @ x
    rx = np.eye(a.shape[-1], dtype=x.dtype) - x @ a
    xh, x̄h = mH(x), mH(x̄)
    return -(xh @ x̄ @ xh) + ra @ x̄h @ x @ xh + xh @ x @ x̄h @ rx


def _pinv_read(a: np.ndarray, x: np.ndarray, hermitian: bool) -> np.ndarray:
    """The matrix pinv inverts: ``a``, or with ``hermitian=True`` the Hermitian one
    numpy's eigh reads from the lower triangle of ``a`` (and its real diagonal)."""
    return triangle_hermitian(a, True, x.real.dtype) if hermitian else a


@rrule.register(np.linalg.pinv)
def _(a, *rest, **kw):
    a_ = asarray(a)
    hermitian = bool(bind(np.linalg.pinv, (a_, *rest), kw)["hermitian"])
    x = np.linalg.pinv(a_, *rest, **kw)
    s_ = _pinv_read(a_, x, hermitian)

    def pinv_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), x̄, *nondiff_rest(rest)
        ā = _pinv_pullback(s_, x, asarray(x̄))
        ā = triangle_cotangent(ā, True, x.real.dtype) if hermitian else ā
        return NoTangent(), project(a, ā), *nondiff_rest(rest)

    return x, pinv_pullback


@frule.register(np.linalg.pinv)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, a, rest = args[0], asarray(args[h]), args[h + 1 :]
    hermitian = bool(bind(np.linalg.pinv, (a, *rest), kw)["hermitian"])
    x = np.linalg.pinv(a, *rest, **kw)
    if is_zero(ȧ):
        return x, ZeroTangent()
    ȧ = asarray(unthunk(ȧ))
    ȧ = triangle_hermitian(ȧ, True, x.real.dtype) if hermitian else ȧ
    return x, project(x, _pinv_frule(_pinv_read(a, x, hermitian), x, ȧ))


def _lstsq_parts(a: np.ndarray, rank: int):
    """The pseudo-inverse lstsq applied (its rank), and the full reduced SVD of a."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    x = mH(vh[:rank]) @ (mH(u[:, :rank]) / s[:rank, None])
    return x, u, vh


@rrule.register(np.linalg.lstsq)
def _(a, b, *rest, **kw):
    a_, b_ = asarray(a), asarray(b)
    out = np.linalg.lstsq(a_, b_, *rest, **kw)
    sol, res, rank, _ = out
    apinv, u, vh = _lstsq_parts(a_, rank)
    vec = b_.ndim == 1
    bm, xm = (b_[:, None], sol[:, None]) if vec else (b_, sol)

    def lstsq_pullback(ȳ):
        x̄, r̄, _, s̄ = entries(ȳ, 4)
        ā = np.zeros(a_.shape, dtype=np.result_type(a_, sol))
        b̄ = np.zeros(bm.shape, dtype=np.result_type(b_, sol))
        if not is_zero(x̄):
            x̄m = asarray(x̄)[:, None] if vec else asarray(x̄)
            ā = ā + _pinv_pullback(a_, apinv, x̄m @ mH(bm))
            b̄ = b̄ + mH(apinv) @ x̄m
        if not is_zero(r̄) and res.size:
            # res_k = |b_k - a x_k|²; aᴴ r = 0 at the solution, so ẋ drops out.
            r = (bm - a_ @ xm) * (2 * asarray(r̄).real)
            b̄ = b̄ + r
            ā = ā - r @ mH(xm)
        if not is_zero(s̄):
            ā = ā + (u * asarray(s̄).real) @ vh
        b̄ = b̄[:, 0] if vec else b̄
        return NoTangent(), project(a, ā), project(b, b̄), *nondiff_rest(rest)

    return out, lstsq_pullback


@frule.register(np.linalg.lstsq)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, ḃ = args[0], args[1]
    a, b, rest = asarray(args[h]), asarray(args[h + 1]), args[h + 2 :]
    out = np.linalg.lstsq(a, b, *rest, **kw)
    sol, res, rank, s = out
    if is_zero(ȧ) and is_zero(ḃ):
        return out, ZeroTangent()
    apinv, u, vh = _lstsq_parts(a, rank)
    vec = b.ndim == 1
    bm, xm = (b[:, None], sol[:, None]) if vec else (b, sol)
    ȧ, ḃm = dense(ȧ, a), dense(ḃ, b)
    ḃm = ḃm[:, None] if vec else ḃm
    ẋ = _pinv_frule(a, apinv, ȧ) @ bm + apinv @ ḃm
    ṙes = np.zeros_like(res)
    if res.size:
        ṙes = 2 * np.sum(((bm - a @ xm).conj() * (ḃm - ȧ @ xm)).real, axis=0)
    ṡ = np.einsum("ji,jk,ik->i", u.conj(), ȧ, vh.conj()).real
    ẋ = ẋ[:, 0] if vec else ẋ
    tangent = Tangent[tuple](project(sol, ẋ), project(res, ṙes), NoTangent(), project(s, ṡ))
    return out, tangent
