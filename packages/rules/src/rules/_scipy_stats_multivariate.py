"""Rules for scipy.stats' ``multivariate_normal`` and ``dirichlet`` densities.

``multivariate_normal.logpdf(x, mean=None, cov=1, allow_singular=False)`` and
``pdf``: differentiable in ``x`` (one point or a stack of points, the last axis
the components), ``mean`` and ``cov``; ``dirichlet.logpdf(x, alpha)`` and
``pdf``: in ``x`` (components along the first axis) and ``alpha``. Loaded with
:mod:`rules._scipy_stats` when scipy.stats is imported (see there for the
conventions shared by all scipy.stats rules).

Conventions:

* ``multivariate_normal``'s covariance matrix is read as scipy reads it: its
  lower triangle only (``eigh(cov, lower=True)``), ``Σ = T + Tᵀ + diag(cov)``
  with ``T`` the strict lower triangle (LINALG.md, one triangle read). With
  ``r = x - mean`` and ``u = Σ⁻¹ r``: ``∂/∂x = -u``, ``∂/∂mean = u``, and
  ``∂/∂Σ = (u uᵀ - Σ⁻¹)/2`` per point, which ``cov`` gets as twice that below
  the diagonal, once on it and 0 above (``triangle_cotangent``). A scalar or
  vector ``cov`` (``c·I``, ``diag(c)``) gets a cotangent of its own shape; so
  does a ``mean`` scipy broadcasts.
* A singular covariance (``allow_singular=True``): scipy's value is the density
  on the support, the subspace ``Q`` that the eigenvectors of the eigenvalues above
  scipy's cut-off span (``_PSD``): ``Σ⁻¹`` is the pseudo-inverse ``Σ⁺`` and
  ``log det`` the pseudo-determinant, and off the support (``x - mean`` outside
  ``Q`` beyond scipy's tolerance) logpdf is ``-inf`` and pdf 0. The derivatives
  are those of the density on the support, the formulas above with ``Σ⁺``: ``u =
  Σ⁺ r`` lies in ``Q``, so moving ``x`` or ``mean`` out of ``Q`` has no first-order
  effect (scipy's value ignores such a move up to its tolerance, then jumps), and
  ``(u uᵀ - Σ⁺)/2`` is supported on ``Q × Q``: the derivative along perturbations
  of ``Σ`` that keep its support (a perturbation that grows or turns ``Q``
  changes the rank or moves the point off the support, where no derivative
  exists). A point off the support gets zero (the value is constant there).
* A ``scipy.stats.Covariance`` object as ``cov`` has no derivative here:
  ``not_implemented`` (``x`` and ``mean`` are still differentiated).
* ``dirichlet``'s ``x`` lies on the simplex. Given in full (K rows) its
  cotangent is the unconstrained partial ``(alpha - 1) / x`` (any multiple of
  the ones vector may be added: only its component along the simplex is
  meaningful); given without its last row (K - 1 rows, scipy then sets
  ``x_K = 1 - Σ x``) the cotangent accounts for ``x_K``.
  ``∂/∂alpha_i = ψ(Σ alpha) - ψ(alpha_i) + log x_i``.

>>> import numpy as np, scipy.stats
>>> from rulescore import rrule, unthunk
>>> y, pb = rrule(scipy.stats.multivariate_normal.logpdf, np.array([1.0, 0.0]), np.zeros(2), 2.0)
>>> x̄, m̄, c̄ = map(unthunk, pb(1.0)[1:])
>>> x̄, m̄, float(c̄)        # u = x/2; the cotangent of c in Σ = c·I is tr(∂/∂Σ)
(array([-0.5,  0. ]), array([0.5, 0. ]), -0.375)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.stats
from scipy.special import digamma

from rulescore import NoTangent, Thunk, ZeroTangent, not_implemented, unthunk

from ._linalg_triangle import triangle_cotangent, triangle_hermitian
from ._quiet import quietly
from ._scipy_stats import _F64, _bind, _f64, _register
from ._util import finfo, is_zero, project, unbroadcast

__all__: list[str] = []


class _MVN(NamedTuple):
    points: np.ndarray  # x as scipy reads it: (..., dim)
    dim: int
    u: np.ndarray  # Σ⁻¹ (x - mean) per point (Σ⁺ for a singular Σ)
    inv: np.ndarray  # Σ⁻¹, or the pseudo-inverse Σ⁺ (scipy's rank cut-off)


def _mvn_setup(x: Any, mean: Any, cov: Any) -> _MVN:
    """scipy's reading of ``(x, mean, cov)`` (``_process_parameters``, ``_process_quantiles``)."""
    if isinstance(cov, scipy.stats.Covariance):
        S = _f64(cov.covariance)
        dim = S.shape[-1]
        m = np.broadcast_to(_f64(0.0 if mean is None else mean), (dim,))
    else:
        c = _f64(cov)
        if mean is None:
            dim = 1 if c.ndim < 2 else c.shape[0]
        else:
            dim = int(np.size(mean))
        if dim == 1:
            S = c.reshape(1, 1)
        elif c.ndim == 0:
            S = c * np.eye(dim)
        elif c.ndim == 1:
            S = np.diag(c)
        else:
            S = c
        m = np.zeros(dim) if mean is None else _f64(mean).reshape(dim)
    pts = _f64(x)
    if pts.ndim == 0:
        pts = pts[np.newaxis]
    elif pts.ndim == 1:
        pts = pts[:, np.newaxis] if dim == 1 else pts[np.newaxis, :]
    # scipy's _PSD: eigh(cov, lower=True) reads the lower triangle only.
    w, V = np.linalg.eigh(triangle_hermitian(S, True, _F64))
    eps = 1e6 * finfo(_F64).eps * np.max(np.abs(w))  # scipy's rank cut-off
    if np.min(w) <= eps:  # singular (allow_singular=True): the support's eigenpairs
        keep = w > eps
        V, w = V[:, keep], w[keep]
    u = ((pts - m) @ V / w) @ V.T
    return _MVN(pts, dim, u, (V / w) @ V.T)


def _mvn_not_implemented(label: str) -> Any:
    why = "cov is a scipy.stats.Covariance object; pass the covariance matrix as an array"
    return not_implemented(f"{label}: no derivative here: {why}")


def _off_support(kind: str, y: Any, Y: np.ndarray) -> np.ndarray:
    """``Y`` (per point) with the points off a singular covariance's support zeroed:
    logpdf is ``-inf`` there, constant. (pdf is 0 there, and its weights ``ȳ·y`` 0.)"""
    if kind == "pdf":
        return Y
    off = np.isneginf(np.reshape(_f64(y), Y.shape))
    return np.where(off, 0.0, Y) if off.any() else Y


def _mvn_rules(kind: str) -> tuple[Callable, Callable]:
    method = getattr(scipy.stats.multivariate_normal, kind)
    label = f"scipy.stats.multivariate_normal.{kind}"
    names = ("x", "mean", "cov", "allow_singular")
    defaults = {"mean": None, "cov": 1}

    def mvn_rrule(*args: Any, **kwargs: Any) -> Any:
        """rrule of ``multivariate_normal.logpdf``/``pdf`` in x, mean and cov."""
        y = method(*args, **kwargs)
        n = len(args)
        v = _bind(names, defaults, args, kwargs)

        def mvn_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            out: list[Any] = [NoTangent()] * n
            diff = [i for i in range(min(n, 3)) if not (i == 1 and args[1] is None)]
            if is_zero(ȳ):
                for i in diff:
                    out[i] = ZeroTangent()
                return (NoTangent(), *out)
            g = _mvn_setup(v["x"], v["mean"], v["cov"])
            cts = quietly(_mvn_cotangents, g, v, kind, y, ȳ, label)
            for i in diff:
                out[i] = cts[i]
            return (NoTangent(), *out)

        return y, mvn_pullback

    def mvn_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        """frule of ``multivariate_normal.logpdf``/``pdf`` in x, mean and cov."""
        n = len(rest) // 2
        ẋs, args = [unthunk(t) for t in rest[:n]], rest[n:]
        y = method(*args, **kwargs)
        ts = [ẋs[i] if i < min(n, 3) and not is_zero(ẋs[i]) else None for i in range(3)]
        if all(t is None for t in ts):
            return y, ZeroTangent()
        v = _bind(names, defaults, args, kwargs)
        g = _mvn_setup(v["x"], v["mean"], v["cov"])
        if ts[2] is not None and isinstance(v["cov"], scipy.stats.Covariance):
            return y, _mvn_not_implemented(label)
        ẏ = _off_support(kind, y, quietly(_mvn_tangent, g, v["cov"], ts))
        if kind == "pdf":
            ẏ = ẏ * np.reshape(_f64(y), np.shape(ẏ))
        return y, project(y, np.reshape(ẏ, np.shape(y)))

    return mvn_rrule, mvn_frule


def _mvn_cotangents(g: _MVN, v: dict, kind: str, y: Any, ȳ: Any, label: str) -> list:
    x, mean, cov = v["x"], v["mean"], v["cov"]
    raw = g.points.shape[:-1]
    Y = _off_support(kind, y, _f64(ȳ).reshape(raw))
    if kind == "pdf":
        Y = Y * _f64(y).reshape(raw)
    wu = Y[..., np.newaxis] * g.u  # ∂logpdf/∂mean per point, weighted by ȳ
    x̄ = Thunk(lambda: project(x, (-wu).reshape(np.shape(x))))
    m̄ = ZeroTangent() if mean is None else Thunk(lambda: _to_form(mean, _points_sum(wu)))
    if isinstance(cov, scipy.stats.Covariance):
        return [x̄, m̄, _mvn_not_implemented(label)]
    return [x̄, m̄, Thunk(lambda: project(cov, _cov_form(cov, g, wu, Y)))]


def _points_sum(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1]).sum(0)


def _cov_form(cov: Any, g: _MVN, wu: np.ndarray, Y: np.ndarray) -> Any:
    """∂/∂Σ = Σₚ ȳₚ (uₚuₚᵀ - Σ⁻¹)/2, as a cotangent of ``cov`` (c·I, diag(c) or Σ)."""
    S̄ = 0.5 * (wu.reshape(-1, g.dim).T @ g.u.reshape(-1, g.dim) - Y.sum() * g.inv)
    shape = np.shape(cov)
    if g.dim == 1:
        return S̄.reshape(shape)
    if len(shape) == 0:
        return np.trace(S̄)
    if len(shape) == 1:
        return np.diagonal(S̄).copy()
    return triangle_cotangent(S̄, True, _F64)


def _to_form(arg: Any, d: np.ndarray) -> Any:
    """A cotangent of shape (dim,) for an argument scipy reshaped or broadcast to (dim,)."""
    if np.size(arg) == d.size:
        return project(arg, d.reshape(np.shape(arg)))
    return unbroadcast(arg, d)


def _mvn_tangent(g: _MVN, cov: Any, ts: list) -> np.ndarray:
    ẋ, ṁ, ċ = ts
    ẏ = np.zeros(g.points.shape[:-1])
    if ẋ is not None:
        ẏ = ẏ - np.sum(g.u * _f64(ẋ).reshape(g.points.shape), axis=-1)
    if ṁ is not None:
        ẏ = ẏ + g.u @ np.broadcast_to(_f64(ṁ).reshape(-1), (g.dim,))
    if ċ is not None:
        c = _f64(ċ)
        if g.dim == 1:
            Ṡ = c.reshape(1, 1)
        elif c.ndim == 0:
            Ṡ = c * np.eye(g.dim)
        elif c.ndim == 1:
            Ṡ = np.diag(c)
        else:
            Ṡ = triangle_hermitian(c, True, _F64)
        quad = np.einsum("...i,ij,...j->...", g.u, Ṡ, g.u)
        ẏ = ẏ + 0.5 * (quad - np.sum(g.inv * Ṡ))
    return ẏ


def _dirichlet_partials(x: Any, alpha: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(∂/∂x, ∂/∂alpha)`` of the log-density per point, shaped like ``x`` and like
    the full ``x`` (K rows; scipy appends ``1 - Σ x`` to K - 1 rows)."""
    a, xs = _f64(alpha), _f64(x)
    K = a.shape[0]
    full = np.concatenate([xs, 1 - xs.sum(0, keepdims=True)]) if xs.shape[0] == K - 1 else xs
    ac = a.reshape((K,) + (1,) * (full.ndim - 1))
    dfull = np.where(ac == 1, 0.0, (ac - 1) / full)  # xlogy(alpha - 1, x)'s partial
    dx = dfull[:-1] - dfull[-1:] if xs.shape[0] == K - 1 else dfull
    return dx, digamma(a.sum()) - digamma(ac) + np.log(full)


def _dirichlet_rules(kind: str) -> tuple[Callable, Callable]:
    method = getattr(scipy.stats.dirichlet, kind)
    names = ("x", "alpha")

    def dirichlet_rrule(*args: Any, **kwargs: Any) -> Any:
        """rrule of ``dirichlet.logpdf``/``pdf`` in x and alpha."""
        y = method(*args, **kwargs)
        n = len(args)

        def dirichlet_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), *(ZeroTangent(),) * n)
            v = _bind(names, {}, args, kwargs)
            dx, da = quietly(_dirichlet_partials, v["x"], v["alpha"])
            Y = _f64(ȳ).reshape(da.shape[1:])
            if kind == "pdf":
                Y = Y * _f64(y).reshape(Y.shape)
            cts = [
                Thunk(lambda: project(v["x"], Y * dx)),
                Thunk(lambda: _to_form(v["alpha"], (Y * da).reshape(da.shape[0], -1).sum(1))),
            ]
            return (NoTangent(), *cts[:n])

        return y, dirichlet_pullback

    def dirichlet_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        """frule of ``dirichlet.logpdf``/``pdf`` in x and alpha."""
        n = len(rest) // 2
        ẋs, args = [unthunk(t) for t in rest[:n]], rest[n:]
        y = method(*args, **kwargs)
        if all(is_zero(t) for t in ẋs):
            return y, ZeroTangent()
        v = _bind(names, {}, args, kwargs)
        dx, da = quietly(_dirichlet_partials, v["x"], v["alpha"])
        ẏ = np.zeros(da.shape[1:])
        if not is_zero(ẋs[0]):
            ẏ = ẏ + np.sum(dx * _f64(ẋs[0]), axis=0)
        if n > 1 and not is_zero(ẋs[1]):
            ȧ = _f64(ẋs[1]).reshape((-1,) + (1,) * (da.ndim - 1))
            ẏ = ẏ + np.sum(da * ȧ, axis=0)
        if kind == "pdf":
            ẏ = ẏ * np.reshape(_f64(y), np.shape(ẏ))
        return y, project(y, np.reshape(ẏ, np.shape(y)))

    return dirichlet_rrule, dirichlet_frule


for _kind in ("logpdf", "pdf"):
    _register(getattr(scipy.stats.multivariate_normal, _kind), _mvn_rules(_kind))
    _register(getattr(scipy.stats.dirichlet, _kind), _dirichlet_rules(_kind))
