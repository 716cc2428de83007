"""scipy.linalg eigen, singular value and QR decompositions: eigh, eigvalsh, svd,
svdvals, qr.

numpy.linalg's math (``eigh_cotangent``, ``_svd_pullback``, ``qr_cotangent``
and their tangents) on scipy's outputs: ``(w, v)`` ascending, ``(U, s, Vh)``,
``(Q, R[, P])``. Gauge and degenerate spectra: LINALG.md.

>>> import numpy as np
>>> import scipy.linalg
>>> from rulescore import rrule
>>> w, pb = rrule(scipy.linalg.eigh, np.diag([1.0, 3.0]), eigvals_only=True)
>>> pb(np.array([1.0, 0.0]))[1]
array([[1., 0.],
       [0., 0.]])
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sl

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_factor import (
    eigh_cotangent,
    eigh_tangent,
    eigvals_tangent,
    qr_cotangent,
    qr_tangent,
)
from ._linalg_svd import _svd_frule, _svd_pullback
from ._linalg_util import bind, dense, entries, is_zero, unsupported
from ._scipy_linalg_util import (
    _nd,
    _split,
    _swap,
    _unrows,
)
from ._util import project

__all__: list[str] = []


def _eigh_setup(f, fname, a, rest, kw, values_only):
    o = bind(f, (a, *rest), kw)
    if o["b"] is not None:
        raise unsupported(
            fname,
            "b",
            "<array>",
            "the generalized eigenproblem has no rule",
            "reduce it with the Cholesky factor of b: eigh(inv(L) a inv(L)ᴴ) with L = cholesky(b)",
        )
    values_only = values_only or o.get("eigvals_only", False)
    subset = o["subset_by_index"] is not None or o["subset_by_value"] is not None
    if subset and not values_only:
        raise unsupported(
            fname,
            "subset_by_index" if o["subset_by_index"] is not None else "subset_by_value",
            o["subset_by_index"] if o["subset_by_index"] is not None else o["subset_by_value"],
            "the derivative of a subset of eigenvectors needs the whole spectrum",
            "pass eigvals_only=True, or drop the subset and select columns afterwards",
        )
    lower = bool(o["lower"])
    w, v = sl.eigh(
        np.asarray(a),
        lower=lower,
        check_finite=o["check_finite"],
        subset_by_index=o["subset_by_index"],
        subset_by_value=o["subset_by_value"],
        driver=o["driver"],
    )
    return values_only, lower, w, v


def _eigh_rules(f, fname, values_only_always):
    @rrule.register(f)
    def eigh_rrule(a, *rest, **kw):
        values_only, lower, w, v = _eigh_setup(f, fname, a, rest, kw, values_only_always)

        def eigh_pullback(ȳ):
            w̄, v̄ = (unthunk(ȳ), ZeroTangent()) if values_only else entries(ȳ, 2)
            if is_zero(w̄) and is_zero(v̄):
                return NoTangent(), ZeroTangent(), *_nd(len(rest))
            ā = eigh_cotangent(w, v, w̄, v̄, fname, lower)
            return NoTangent(), project(a, ā), *_nd(len(rest))

        return (w if values_only else (w, v)), eigh_pullback

    @frule.register(f)
    def eigh_frule(ḟ, *args, **kw):
        (ȧ, *_), (a, *rest) = _split(args)
        values_only, lower, w, v = _eigh_setup(f, fname, a, rest, kw, values_only_always)
        out = w if values_only else (w, v)
        if is_zero(ȧ):
            return out, ZeroTangent()
        ȧ = np.asarray(unthunk(ȧ))
        if values_only:
            return out, project(w, eigvals_tangent(w, v, ȧ, lower))
        ẇ, v̇ = eigh_tangent(w, v, ȧ, fname, lower)
        return out, Tangent[tuple](project(w, ẇ), project(v, v̇))

    eigh_rrule.__doc__ = f"rrule of ``{fname}``: zero on the triangle ``lower`` leaves unread."
    eigh_frule.__doc__ = f"frule of ``{fname}`` along ȧ's triangle that ``lower`` names."
    return eigh_rrule, eigh_frule


eigh_rrule, eigh_frule = _eigh_rules(sl.eigh, "scipy.linalg.eigh", False)
eigvalsh_rrule, eigvalsh_frule = _eigh_rules(sl.eigvalsh, "scipy.linalg.eigvalsh", True)


def _svd_setup(a, rest, kw):
    o = bind(sl.svd, (a, *rest), kw)
    a_ = np.asarray(a)
    uv, full = bool(o["compute_uv"]), bool(o["full_matrices"])
    if uv and full and a_.ndim >= 2 and a_.shape[-1] != a_.shape[-2]:
        raise unsupported(
            "scipy.linalg.svd",
            "full_matrices",
            True,
            f"the extra singular vectors of a {a_.shape[-2]}x{a_.shape[-1]} matrix are not unique",
            "pass full_matrices=False (or compute_uv=False)",
        )
    driver, cf = o["lapack_driver"], o["check_finite"]
    out = sl.svd(a_, full_matrices=full, compute_uv=uv, check_finite=cf, lapack_driver=driver)
    usv = out if uv else sl.svd(a_, full_matrices=False, check_finite=False, lapack_driver=driver)
    return uv, a_, out, usv


def _svals_tangent(u, vh, ȧ):
    """ṡᵢ = Re uᵢᴴ ȧ vᵢ."""
    return np.einsum("...ji,...jk,...ik->...i", u.conj(), ȧ, vh.conj()).real


@rrule.register(sl.svd)
def svd_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.svd``: numpy's svd pullback on scipy's (U, s, Vh)."""
    uv, a_, out, (u, s, vh) = _svd_setup(a, rest, kw)

    def svd_pullback(ȳ):
        ū, s̄, v̄h = entries(ȳ, 3) if uv else (ZeroTangent(), unthunk(ȳ), ZeroTangent())
        if is_zero(ū) and is_zero(s̄) and is_zero(v̄h):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        ā = _svd_pullback(a_, u, s, vh, ū, s̄, v̄h, "scipy.linalg.svd")
        return NoTangent(), project(a, ā), *_nd(len(rest))

    return out, svd_pullback


@frule.register(sl.svd)
def svd_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.svd`` (the phase gauge split evenly between U and V)."""
    (ȧ, *_), (a, *rest) = _split(args)
    uv, a_, out, (u, s, vh) = _svd_setup(a, rest, kw)
    if is_zero(ȧ):
        return out, ZeroTangent()
    ȧ = np.asarray(unthunk(ȧ))
    if not uv:
        return out, project(s, _svals_tangent(u, vh, ȧ))
    u̇, ṡ, v̇h = _svd_frule(a_, u, s, vh, ȧ, "scipy.linalg.svd")
    return out, Tangent[tuple](project(u, u̇), project(s, ṡ), project(vh, v̇h))


@rrule.register(sl.svdvals)
def svdvals_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.svdvals``: ā = U diag(s̄) Vh."""
    o = bind(sl.svdvals, (a, *rest), kw)
    u, s, vh = sl.svd(np.asarray(a), full_matrices=False, check_finite=o["check_finite"])

    def svdvals_pullback(s̄):
        s̄ = unthunk(s̄)
        if is_zero(s̄):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        return NoTangent(), project(a, (u * np.real(s̄)[..., None, :]) @ vh), *_nd(len(rest))

    return s, svdvals_pullback


@frule.register(sl.svdvals)
def svdvals_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.svdvals``: ṡᵢ = Re uᵢᴴ ȧ vᵢ."""
    (ȧ, *_), (a, *rest) = _split(args)
    o = bind(sl.svdvals, (a, *rest), kw)
    u, s, vh = sl.svd(np.asarray(a), full_matrices=False, check_finite=o["check_finite"])
    if is_zero(ȧ):
        return s, ZeroTangent()
    return s, project(s, _svals_tangent(u, vh, np.asarray(unthunk(ȧ))))


def _qr_setup(a, rest, kw):
    o = bind(sl.qr, (a, *rest), kw)
    a_ = np.asarray(a)
    mode, piv = o["mode"], bool(o["pivoting"])
    m, n = a_.shape[-2:]
    if mode == "full" and m > n:
        raise unsupported(
            "scipy.linalg.qr",
            "mode",
            mode,
            f"the last {m - n} columns of Q of a tall {m}x{n} matrix are not unique",
            "use mode='economic' (or mode='r')",
        )
    if mode not in ("full", "economic", "r"):
        raise unsupported(
            "scipy.linalg.qr",
            "mode",
            mode,
            "only Q and R are differentiable",
            "use mode='economic' or mode='r'",
        )
    out = sl.qr(a_, mode=mode, pivoting=piv, lwork=o["lwork"], check_finite=o["check_finite"])
    if mode == "r":
        q, r, *p = sl.qr(a_, mode="economic", pivoting=piv, check_finite=False)
    else:
        q, r, *p = out
    p = p[0] if piv else None
    ap = a_ if p is None else np.take_along_axis(a_, p[..., None, :], -1)
    return mode, piv, out, q, r, p, ap


@rrule.register(sl.qr)
def qr_rrule(a, *rest, **kw):
    """rrule of ``scipy.linalg.qr``: numpy's reduced-QR math on ``a[:, P]`` (P fixed)."""
    mode, piv, out, q, r, p, ap = _qr_setup(a, rest, kw)
    k = r.shape[-2]

    def qr_pullback(ȳ):
        if mode == "r":
            q̄, r̄ = ZeroTangent(), entries(ȳ, 1 + piv)[0]
        else:
            q̄, r̄ = entries(ȳ, 2 + piv)[:2]
        if is_zero(q̄) and is_zero(r̄):
            return NoTangent(), ZeroTangent(), *_nd(len(rest))
        # mode='r' of a tall matrix pads R with zero rows: their cotangent drops out.
        r̄ = dense(r̄, r)[..., :k, :]
        āp = qr_cotangent(ap, q, r, dense(q̄, q), r̄)
        ā = āp if p is None else _swap(_unrows(_swap(āp), p))
        return NoTangent(), project(a, ā), *_nd(len(rest))

    return out, qr_pullback


@frule.register(sl.qr)
def qr_frule(ḟ, *args, **kw):
    """frule of ``scipy.linalg.qr``: ``Tangent[tuple]``, with ``NoTangent()`` for P."""
    (ȧ, *_), (a, *rest) = _split(args)
    mode, piv, out, q, r, p, ap = _qr_setup(a, rest, kw)
    if is_zero(ȧ):
        return out, ZeroTangent()
    ȧ = np.asarray(unthunk(ȧ))
    ȧp = ȧ if p is None else np.take_along_axis(ȧ, p[..., None, :], -1)
    q̇, ṙ = qr_tangent(ap, q, r, ȧp)
    tail = (NoTangent(),) if piv else ()
    if mode == "r":
        r_out = out[0]
        pad = np.zeros(ṙ.shape[:-2] + (r_out.shape[-2] - ṙ.shape[-2], ṙ.shape[-1]), ṙ.dtype)
        return out, Tangent[tuple](project(r_out, np.concatenate([ṙ, pad], axis=-2)), *tail)
    return out, Tangent[tuple](project(q, q̇), project(r, ṙ), *tail)
