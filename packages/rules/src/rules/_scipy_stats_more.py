"""More scipy.stats rules: ``poisson``'s CDFs, ``norm``'s quantiles, and
``multivariate_normal.entropy``. Loaded when scipy.stats is imported (see
:mod:`rules._scipy_stats` for the conventions shared by all scipy.stats rules:
positional arguments only get cotangents, values are scipy's own).

Derivations:

* ``poisson.cdf(k, mu, loc=0)`` is ``F = Σ_{j≤⌊k-loc⌋} e^{-μ} μ^j / j!``; the sum
  telescopes: ``∂F/∂μ = -pmf(⌊k-loc⌋; μ)`` (0 below the support, exact at
  μ = 0). ``sf = 1 - F`` gets ``+pmf``, ``logcdf`` ``-pmf/F`` and ``logsf``
  ``pmf/sf``. ``k`` and ``loc`` are integers: ``NoTangent()``.
* ``norm.ppf(q, loc, scale) = loc + scale·z`` with ``z = Φ⁻¹(q)``:
  ``∂/∂q = scale/φ(z)``, ``∂/∂loc = 1``, ``∂/∂scale = z``; ``isf(q) = ppf(1-q)``
  has ``∂/∂q = -scale/φ(z)`` with ``z = Φ⁻¹(1-q)``. At ``q = 0`` or ``1`` the
  quantile is infinite and so is its slope.
* ``multivariate_normal.entropy(mean=None, cov=1) = ½ log det(2πe Σ)``: ``∂/∂Σ
  = Σ⁻¹/2`` with ``Σ`` read from the lower triangle of ``cov`` as scipy reads
  it, so ``cov`` gets ``Σ⁻¹`` below the diagonal, ``Σ⁻¹/2`` on it and 0 above
  (``triangle_cotangent``, LINALG.md); a scalar
  ``cov`` (``c·I`` in dimension d) gets ``d/(2c)``, a vector ``diag(c)`` gets
  ``1/(2c)``. The entropy does not depend on ``mean``: ``ZeroTangent()``.

>>> import scipy.stats
>>> from rulescore import rrule, unthunk
>>> y, pb = rrule(scipy.stats.poisson.cdf, 2, 1.5)      # k, mu
>>> float(unthunk(pb(1.0)[2])) == -float(scipy.stats.poisson.pmf(2, 1.5))
True
>>> y, pb = rrule(scipy.stats.norm.ppf, 0.5, 1.0, 2.0)   # q, loc, scale
>>> [round(float(unthunk(c)), 6) for c in pb(1.0)[1:]]
[5.013257, 1.0, 0.0]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.stats
from scipy.special import ndtri

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_triangle import triangle_cotangent, triangle_hermitian
from ._scipy_stats import _F64, _LOC_SCALE, _elementwise_rules, _f64, _register
from ._util import is_zero, project

__all__: list[str] = []

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _poisson_cdf_parts(kind: str, v: dict, y: Any, wanted: set) -> dict:
    kk = np.floor(_f64(v["k"]) - _f64(v["loc"]))
    pmf = scipy.stats.poisson.pmf(kk, _f64(v["mu"]))  # 0 below the support
    d = {"cdf": -pmf, "sf": pmf}.get(kind)
    if d is None:  # logcdf, logsf: y is log F or log(1 - F)
        d = (-pmf if kind == "logcdf" else pmf) * np.exp(-y)
        d = np.where(pmf == 0, 0.0, d)
    return {"mu": np.where(np.isnan(y), np.nan, d)}


def _norm_quantile_parts(kind: str, v: dict, y: Any, wanted: set) -> dict:
    scale, q = _f64(v["scale"]), _f64(v["q"])
    z = ndtri(q) if kind == "ppf" else -ndtri(q)  # in float64, not from a float32 y
    dq = scale * np.exp(0.5 * z * z + _LOG_SQRT_2PI)  # scale / φ(z)
    if kind == "isf":
        dq = -dq
    bad = np.isnan(y)
    return {
        "q": np.where(bad, np.nan, dq),
        "loc": np.where(bad, np.nan, 1.0),
        "scale": np.where(bad, np.nan, z),
    }


def _register_elementwise() -> None:
    fixed = frozenset({"k", "loc"})
    for kind in ("cdf", "logcdf", "sf", "logsf"):

        def pparts(v: dict, y: Any, wanted: set, k: str = kind) -> dict:
            return _poisson_cdf_parts(k, v, y, wanted)

        method = getattr(scipy.stats.poisson, kind)
        _register(method, _elementwise_rules(method, ("k", "mu", "loc"), {"loc": 0}, fixed, pparts))
    for kind in ("ppf", "isf"):

        def nparts(v: dict, y: Any, wanted: set, k: str = kind) -> dict:
            return _norm_quantile_parts(k, v, y, wanted)

        method = getattr(scipy.stats.norm, kind)
        names = ("q", "loc", "scale")
        _register(method, _elementwise_rules(method, names, _LOC_SCALE, frozenset(), nparts))


_register_elementwise()


def _entropy_partial(mean: Any, cov: Any) -> np.ndarray:
    """∂H/∂cov with cov's own shape (scalar, diagonal vector or matrix)."""
    c = _f64(cov)
    if c.ndim == 2:  # scipy reads the lower triangle (eigh(cov, lower=True))
        inv = np.linalg.inv(triangle_hermitian(c, True, _F64))
        return triangle_cotangent(0.5 * inv, True, _F64)
    if c.ndim == 1:
        return 0.5 / c
    d = 1 if mean is None else max(np.size(mean), 1)
    return np.asarray(0.5 * d / c)


def _entropy_args(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    mean = args[0] if len(args) > 0 else kwargs.get("mean")
    cov = args[1] if len(args) > 1 else kwargs.get("cov", 1)
    return mean, cov


# One bound-method object for both registrations (each access makes a new one).
_ENTROPY = scipy.stats.multivariate_normal.entropy


@rrule.register(_ENTROPY)
def mvn_entropy_rrule(*args: Any, **kwargs: Any) -> Any:
    """rrule of ``multivariate_normal.entropy(mean=None, cov=1)``: ``∂H/∂Σ = Σ⁻¹/2``."""
    y = scipy.stats.multivariate_normal.entropy(*args, **kwargs)
    mean, cov = _entropy_args(args, kwargs)
    n = len(args)

    def mvn_entropy_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        out: list[Any] = [ZeroTangent()] * n  # the entropy does not depend on mean
        if n > 1 and not is_zero(ȳ):
            out[1] = project(args[1], ȳ * _entropy_partial(mean, cov))
        return (NoTangent(), *out)

    return y, mvn_entropy_pullback


@frule.register(_ENTROPY)
def mvn_entropy_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    """frule of ``multivariate_normal.entropy``: ``Ḣ = tr(Σ⁻¹ Σ̇)/2``."""
    n = len(rest) // 2
    args = rest[n:]
    y = scipy.stats.multivariate_normal.entropy(*args, **kwargs)
    ċ = unthunk(rest[1]) if n > 1 else ZeroTangent()
    if is_zero(ċ):
        return y, ZeroTangent()
    mean, cov = _entropy_args(args, kwargs)
    return y, project(y, np.sum(_entropy_partial(mean, cov) * np.real(ċ)))
