"""numpy.linalg factorization rules: cholesky, qr, eigh, eigvalsh.

``cholesky`` (``upper``), ``eigh`` and ``eigvalsh`` (``UPLO``) read one triangle
of ``a`` and the real part of its diagonal: they are differentiated exactly as
functions of that triangle, ``S = T + Tᴴ + Re diag(a)`` with ``T`` its strict
part, so the cotangent of the ignored triangle is zero (``triangle_hermitian``
and its adjoint ``triangle_cotangent``, in ``_linalg_triangle``).
Conventions and restrictions: LINALG.md.
"""

from __future__ import annotations

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_triangle import read_triangle_weights, triangle_cotangent, triangle_hermitian
from ._linalg_util import (
    bind,
    dense,
    diag_embed,
    entries,
    is_zero,
    mH,
    nondiff_rest,
    rdiv,
    tri_solve,
    unsupported,
    warn_gradient,
)
from ._util import asarray, finfo, project


def _tril_half(x: np.ndarray) -> np.ndarray:
    """Φ(x): the strict lower triangle plus half the diagonal."""
    return np.tril(x, -1) + 0.5 * diag_embed(np.diagonal(x, axis1=-2, axis2=-1))


def _cholesky_frule(L: np.ndarray, ȧ: np.ndarray, lower: bool) -> np.ndarray:
    """L̇ of ``S = L Lᴴ`` (L lower triangular) along ȧ read as LAPACK reads ``a``: the
    triangle ``lower`` names and the real diagonal (``Ṡ = triangle_hermitian(ȧ)``)."""
    # L̇ = L Φ(L⁻¹ Ṡ L⁻ᴴ).
    x = tri_solve(L, triangle_hermitian(ȧ, lower, L.real.dtype), lower=True)  # L⁻¹ Ṡ
    s = mH(tri_solve(L, mH(x), lower=True))  # (L⁻¹ (L⁻¹ Ṡ)ᴴ)ᴴ = L⁻¹ Ṡ L⁻ᴴ
    return L @ _tril_half(s)


def _tril_half_of(m: np.ndarray) -> np.ndarray:
    """``tril(m, -1) + diag(m) / 2`` in one pass (Φ, with a complex diagonal kept)."""
    return m * read_triangle_weights(m.shape[-1], m.real.dtype, True)


def _cholesky_pullback(L: np.ndarray, L̄: np.ndarray, lower: bool) -> np.ndarray:
    """ā of ``L = cholesky(a)`` given L̄: zero on the triangle ``lower`` does not name,
    which LAPACK never reads (the adjoint of :func:`_cholesky_frule`)."""
    # Within Hermitian matrices the adjoint is S̄ = herm(Z), Z = L⁻ᴴ Φ L⁻¹ with
    # M = Lᴴ L̄ and Φ = tril(M, -1) + diag(M) / 2 (herm(Φ) has the real
    # diagonal). triangle_cotangent(S̄) = triangle_cotangent(Z): no herm. One
    # masking product instead of tril/diag_embed, two triangular solves with the
    # upper-triangular Lᴴ, and few n² temporaries alive at once (fresh n² arrays
    # cost page faults: about 2x faster at n = 200).
    Lh = mH(L)
    y = tri_solve(Lh, mH(_tril_half_of(Lh @ L̄)), lower=False)  # L⁻ᴴ Φᴴ = (Φ L⁻¹)ᴴ
    z = tri_solve(Lh, mH(y), lower=False)  # L⁻ᴴ Φ L⁻¹
    return triangle_cotangent(z, lower, L.real.dtype)


@rrule.register(np.linalg.cholesky)
def _(a, *, upper=False):
    a_ = asarray(a)
    y = np.linalg.cholesky(a_, upper=upper)
    L = mH(y) if upper else y

    def cholesky_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ȳ
        L̄ = mH(asarray(ȳ)) if upper else asarray(ȳ)
        return NoTangent(), project(a, _cholesky_pullback(L, L̄, not upper))

    return y, cholesky_pullback


@frule.register(np.linalg.cholesky)
def _(ḟ, ȧ, a, *, upper=False):
    y = np.linalg.cholesky(asarray(a), upper=upper)
    if is_zero(ȧ):
        return y, ZeroTangent()
    L̇ = _cholesky_frule(mH(y) if upper else y, asarray(unthunk(ȧ)), not upper)
    return y, project(y, mH(L̇) if upper else L̇)


def _qr_mode(a: np.ndarray, rest: tuple, kw: dict) -> str:
    mode = bind(np.linalg.qr, (a, *rest), kw)["mode"]
    m, n = a.shape[-2:]
    if mode == "reduced" or mode == "r" or (mode == "complete" and m <= n):
        return mode
    if mode == "complete":
        raise unsupported(
            "numpy.linalg.qr",
            "mode",
            mode,
            f"the last {m - n} columns of Q of a tall {m}x{n} matrix are not unique",
            "use mode='reduced'",
        )
    raise unsupported(
        "numpy.linalg.qr",
        "mode",
        mode,
        "only Q and R are differentiable",
        "use mode='reduced' or mode='r'",
    )


def _qr_square_frule(q, r, ȧ):
    """(Q̇, Ṙ) for m >= n: B = Qᴴ ȧ R⁻¹, C = skew part from tril(B), diag i·Im B."""
    ȧr = rdiv(ȧ, r)
    b = mH(q) @ ȧr
    low = np.tril(b, -1)
    c = (
        low - mH(low) + 1j * diag_embed(np.diagonal(b, axis1=-2, axis2=-1).imag)
        if np.iscomplexobj(b)
        else low - mH(low)
    )
    return ȧr - q @ (b - c), (b - c) @ r


def _qr_square_pullback(q, r, q̄, r̄):
    """ā = (Q̄ + Q B̄) R⁻ᴴ, B̄ = copy of the upper triangle of N = R̄Rᴴ - QᴴQ̄ (real diagonal)."""
    n_ = r̄ @ mH(r) - mH(q) @ q̄
    up = np.triu(n_, 1)
    b̄ = up + mH(up) + diag_embed(np.diagonal(n_, axis1=-2, axis2=-1).real)
    return rdiv(q̄ + q @ b̄, mH(r))


def qr_cotangent(a, q, r, q̄, r̄):
    """ā for the reduced ``a = Q R`` (any m, n) given dense cotangents of Q and R."""
    m, n = a.shape[-2:]
    if m >= n:
        return _qr_square_pullback(q, r, q̄, r̄)
    # Wide: a = [x | y] with x square, R = [Rx | Qᴴ y] (Liao et al. 2019).
    y_, v̄ = a[..., m:], r̄[..., m:]
    x̄ = _qr_square_pullback(q, r[..., :m], q̄ + y_ @ mH(v̄), r̄[..., :m])
    return np.concatenate([x̄, q @ v̄], axis=-1)


def qr_tangent(a, q, r, ȧ):
    """(Q̇, Ṙ) for the reduced ``a = Q R`` (any m, n) along ȧ."""
    m, n = a.shape[-2:]
    if m >= n:
        return _qr_square_frule(q, r, ȧ)
    q̇, ṙx = _qr_square_frule(q, r[..., :m], ȧ[..., :m])
    v̇ = mH(q̇) @ a[..., m:] + mH(q) @ ȧ[..., m:]
    return q̇, np.concatenate([ṙx, v̇], axis=-1)


@rrule.register(np.linalg.qr)
def _(a, *rest, **kw):
    a_ = asarray(a)
    mode = _qr_mode(a_, rest, kw)
    out = np.linalg.qr(a_, *rest, **kw)
    q, r = np.linalg.qr(a_) if mode == "r" else out

    def qr_pullback(ȳ):
        if mode == "r":
            q̄, r̄ = ZeroTangent(), unthunk(ȳ)
        else:
            q̄, r̄ = entries(ȳ, 2)
        if is_zero(q̄) and is_zero(r̄):
            return NoTangent(), ZeroTangent(), *nondiff_rest(rest)
        ā = qr_cotangent(a_, q, r, dense(q̄, q), dense(r̄, r))
        return NoTangent(), project(a, ā), *nondiff_rest(rest)

    return out, qr_pullback


@frule.register(np.linalg.qr)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, a, rest = args[0], asarray(args[h]), args[h + 1 :]
    mode = _qr_mode(a, rest, kw)
    out = np.linalg.qr(a, *rest, **kw)
    if is_zero(ȧ):
        return out, ZeroTangent()
    q, r = np.linalg.qr(a) if mode == "r" else out
    q̇, ṙ = qr_tangent(a, q, r, asarray(unthunk(ȧ)))
    if mode == "r":
        return out, project(r, ṙ)
    return out, Tangent[type(out)](Q=project(q, q̇), R=project(r, ṙ))


def _inv_gaps(w: np.ndarray, fname: str, used: bool) -> np.ndarray:
    """F[i, j] = 1/(w[j] - w[i]) off the diagonal; 0 on it and for (near-)equal pairs."""
    gaps = w[..., None, :] - w[..., :, None]
    scale = np.max(np.abs(w), axis=-1, keepdims=True)[..., None]
    tol = 10 * w.shape[-1] * finfo(w.dtype).eps * np.maximum(scale, finfo(w.dtype).tiny)
    close = np.abs(gaps) <= tol
    k = w.shape[-1]
    degenerate = close & ~np.eye(k, dtype=bool)
    if used and degenerate.any():
        warn_gradient(
            fname,
            "(nearly) equal eigenvalues: the eigenvector terms that diverge were set to "
            "zero, which is exact only for losses invariant under rotations of the "
            "eigenvectors within each degenerate eigenspace (see LINALG.md).",
        )
    with np.errstate(divide="ignore"):
        return np.where(close, 0.0, 1.0 / np.where(close, 1.0, gaps))


def _uplo_lower(fname, a, rest, kw, f) -> bool:
    """Whether ``UPLO`` (positional or keyword, any case, as numpy takes it) is 'L'."""
    uplo = bind(f, (a, *rest), kw)["UPLO"]
    uplo = uplo.upper() if isinstance(uplo, str) else uplo
    if uplo not in ("L", "U"):
        raise ValueError(f"{fname}: UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo == "L"


def eigh_cotangent(w, v, w̄, v̄, fname: str, lower: bool) -> np.ndarray:
    """ā for eigh's ``(w, V)`` given cotangents w̄, V̄ (zeros allowed): zero on the
    triangle ``lower`` does not name, which eigh never reads."""
    p̄ = diag_embed(dense(w̄, w).astype(v.dtype))
    if not is_zero(v̄):
        # V̇ = V (F ∘ P) with P = Vᴴ Ṡ V; the diagonal (phase) of Vᴴ V̄ is gauge.
        f = _inv_gaps(w, fname, used=True)
        p̄ = p̄ + f * (mH(v) @ asarray(v̄))
    return triangle_cotangent(v @ p̄ @ mH(v), lower, w.dtype)


def eigh_tangent(w, v, ȧ, fname: str, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """(ẇ, V̇) of eigh's ``(w, V)`` along ȧ read as eigh reads ``a`` (one triangle);
    ``diag(Vᴴ V̇) = 0``."""
    p = mH(v) @ triangle_hermitian(ȧ, lower, w.dtype) @ v
    ẇ = np.diagonal(p, axis1=-2, axis2=-1).real
    return ẇ, v @ (_inv_gaps(w, fname, used=True) * p)


def eigvals_tangent(w, v, ȧ, lower: bool) -> np.ndarray:
    """ẇᵢ = vᵢᴴ Ṡ vᵢ with Ṡ the tangent ȧ read as eigh reads ``a`` (one triangle)."""
    ṡ = triangle_hermitian(ȧ, lower, w.dtype)
    return np.einsum("...ji,...jk,...ki->...i", v.conj(), ṡ, v).real


@rrule.register(np.linalg.eigh)
def _(a, *rest, **kw):
    a_ = asarray(a)
    lower = _uplo_lower("numpy.linalg.eigh", a_, rest, kw, np.linalg.eigh)
    res = np.linalg.eigh(a_, *rest, **kw)
    w, v = res

    def eigh_pullback(ȳ):
        w̄, v̄ = entries(ȳ, 2)
        if is_zero(w̄) and is_zero(v̄):
            return NoTangent(), ZeroTangent(), *nondiff_rest(rest)
        ā = eigh_cotangent(w, v, w̄, v̄, "numpy.linalg.eigh", lower)
        return NoTangent(), project(a, ā), *nondiff_rest(rest)

    return res, eigh_pullback


@frule.register(np.linalg.eigh)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, a, rest = args[0], asarray(args[h]), args[h + 1 :]
    lower = _uplo_lower("numpy.linalg.eigh", a, rest, kw, np.linalg.eigh)
    res = np.linalg.eigh(a, *rest, **kw)
    if is_zero(ȧ):
        return res, ZeroTangent()
    w, v = res
    ẇ, v̇ = eigh_tangent(w, v, asarray(unthunk(ȧ)), "numpy.linalg.eigh", lower)
    return res, Tangent[type(res)](eigenvalues=project(w, ẇ), eigenvectors=project(v, v̇))


@rrule.register(np.linalg.eigvalsh)
def _(a, *rest, **kw):
    a_ = asarray(a)
    lower = _uplo_lower("numpy.linalg.eigvalsh", a_, rest, kw, np.linalg.eigvalsh)
    w, v = np.linalg.eigh(a_, *rest, **kw)

    def eigvalsh_pullback(w̄):
        w̄ = unthunk(w̄)
        if is_zero(w̄):
            return NoTangent(), w̄, *nondiff_rest(rest)
        ā = triangle_cotangent((v * asarray(w̄)[..., None, :]) @ mH(v), lower, w.dtype)
        return NoTangent(), project(a, ā), *nondiff_rest(rest)

    return w, eigvalsh_pullback


@frule.register(np.linalg.eigvalsh)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, a, rest = args[0], asarray(args[h]), args[h + 1 :]
    lower = _uplo_lower("numpy.linalg.eigvalsh", a, rest, kw, np.linalg.eigvalsh)
    w, v = np.linalg.eigh(a, *rest, **kw)
    if is_zero(ȧ):
        return w, ZeroTangent()
    return w, project(w, eigvals_tangent(w, v, asarray(unthunk(ȧ)), lower))
