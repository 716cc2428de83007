"""Rules for scipy.stats: densities, CDFs and survival functions of common distributions.

Users write ``scipy.stats.norm.logpdf(x, loc, scale)``: a bound method of
scipy's module-level distribution object (a new one at every attribute access;
they compare equal, so one registration covers them all). Rules exist for

* ``pdf``, ``logpdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf`` of ``norm``, ``t``,
  ``cauchy``, ``laplace``, ``logistic``, ``expon``, ``gamma``, ``beta``,
  ``chi2``, ``lognorm``, ``uniform``, in ``x``, the shape parameters
  (``df``, ``a``, ``b``, ``s``), ``loc`` and ``scale``, broadcasting as scipy
  does;
* ``pmf``, ``logpmf`` of ``poisson`` (in ``mu``) and ``binom`` (in ``p``): the
  integers ``k``, ``n`` and ``loc`` get ``NoTangent()``;
* ``multivariate_normal`` and ``dirichlet``: see :mod:`rules._scipy_stats_multivariate`
  (a lazy rule module of its own, loaded with this one; it uses the helpers here).

This module is not imported by ``import rules`` (scipy.stats takes half a
second to import): ``rules`` registers it with
``rulescore.register_lazy_rules("scipy.stats", ...)``, and it loads when
scipy.stats is first imported.

Conventions:

* Arguments are taken as scipy takes them, ``(x, *shapes, loc, scale)``
  positionally or by keyword; as for every rule, only positional arguments get
  cotangents (a keyword argument gets none: pass a parameter you differentiate
  positionally).
* With ``z = (x - loc) / scale``: ``∂/∂loc = -∂/∂x`` and
  ``∂/∂scale = -(z ∂/∂x + [1 for densities])``. The derivative of a log-CDF is
  ``exp(log f - log F)`` (stable where ``F`` underflows, e.g. ``norm.logcdf``
  far in the tail, which scipy computes with ``log_ndtr``).
* Outside the support (``logpdf = -inf``, ``pdf = 0``, a flat CDF) the
  derivatives are 0; where scipy returns NaN (invalid parameters) they are NaN.
* The CDFs of ``t``, ``gamma``, ``beta`` and ``chi2`` are incomplete beta and
  gamma functions of their shape parameters, whose derivatives have no closed
  form: their cotangent (and tangent) is ``not_implemented(...)``, which raises
  ``NotImplementedTangentError`` naming the parameter if it is used (a
  constant shape parameter costs nothing). ``lognorm``'s shape ``s`` has one.
* Values are scipy's own; the derivatives are computed in float64 and
  projected onto each argument (float32 stays float32).

>>> import scipy.stats
>>> from rulescore import rrule, unthunk
>>> y, pb = rrule(scipy.stats.norm.logpdf, 1.0, 0.0, 2.0)   # x, loc, scale
>>> [float(unthunk(c)) for c in pb(1.0)[1:]]
[-0.25, 0.25, -0.375]
>>> _, pb = rrule(scipy.stats.gamma.cdf, 1.0, 2.0)            # x, a
>>> pb(1.0)[2]
NotImplementedTangent("scipy.stats.gamma.cdf: the derivative in the shape parameter 'a' ...")
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.stats
from scipy.special import betaln, digamma, gammaln, xlog1py, xlogy

from rulescore import NoTangent, NotImplementedTangent, Thunk, ZeroTangent, frule, rrule, unthunk
from rulescore import not_implemented as _not_implemented

from ._quiet import quietly
from ._util import is_zero, project, unbroadcast

__all__: list[str] = []

_F64 = np.float64
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LN2 = math.log(2.0)
_LOG_PI = math.log(math.pi)
_DENSITIES = ("pdf", "logpdf")
_CDFS = ("cdf", "logcdf", "sf", "logsf")
_LOC_SCALE = {"loc": 0.0, "scale": 1.0}


def _f64(v: Any) -> np.ndarray:
    return np.asarray(v, dtype=_F64)


class _Family(NamedTuple):
    """A continuous distribution in standard form, ``f(x) = f0((x - loc)/scale) / scale``."""

    logf: Callable  # (z, *shapes) -> log f0, inside the support
    grad: Callable  # (z, *shapes) -> (∂/∂z, ∂/∂shape...) of log f0
    inside: Callable | None  # (z, *shapes) -> where f0 > 0 (None: everywhere)
    # (z, *shapes) -> per shape c with ∂F0/∂shape = c ∂F0/∂z; None: no closed form
    cdf_shape: Callable | None = None


def _positive(z: Any, *shapes: Any) -> Any:
    return z > 0


def _unit(z: Any, *shapes: Any) -> Any:
    return (z >= 0) & (z <= 1)


_FAMILIES: dict[str, _Family] = {
    "norm": _Family(lambda z: -0.5 * z * z - _LOG_SQRT_2PI, lambda z: (-z,), None),
    "t": _Family(
        lambda z, df: (
            gammaln(0.5 * (df + 1))
            - gammaln(0.5 * df)
            - 0.5 * np.log(df * math.pi)
            - 0.5 * (df + 1) * np.log1p(z * z / df)
        ),
        lambda z, df: (
            -(df + 1) * z / (df + z * z),
            0.5 * (digamma(0.5 * (df + 1)) - digamma(0.5 * df) - 1 / df - np.log1p(z * z / df))
            + 0.5 * (df + 1) * z * z / (df * (df + z * z)),
        ),
        None,
    ),
    "cauchy": _Family(
        lambda z: -_LOG_PI - np.log1p(z * z), lambda z: (-2 * z / (1 + z * z),), None
    ),
    "laplace": _Family(lambda z: -_LN2 - np.abs(z), lambda z: (-np.sign(z),), None),
    "logistic": _Family(
        lambda z: -np.abs(z) - 2 * np.log1p(np.exp(-np.abs(z))),
        lambda z: (-np.tanh(0.5 * z),),
        None,
    ),
    "expon": _Family(lambda z: -z, lambda z: (-np.ones_like(z),), lambda z: z >= 0),
    "gamma": _Family(
        lambda z, a: xlogy(a - 1, z) - z - gammaln(a),
        lambda z, a: ((a - 1) / z - 1, np.log(z) - digamma(a)),
        _positive,
    ),
    "beta": _Family(
        lambda z, a, b: xlogy(a - 1, z) + xlog1py(b - 1, -z) - betaln(a, b),
        lambda z, a, b: (
            (a - 1) / z - (b - 1) / (1 - z),
            np.log(z) - digamma(a) + digamma(a + b),
            np.log1p(-z) - digamma(b) + digamma(a + b),
        ),
        _unit,
    ),
    "chi2": _Family(
        lambda z, df: xlogy(0.5 * df - 1, z) - 0.5 * z - 0.5 * df * _LN2 - gammaln(0.5 * df),
        lambda z, df: ((0.5 * df - 1) / z - 0.5, 0.5 * (np.log(z) - _LN2 - digamma(0.5 * df))),
        _positive,
    ),
    # F0 = Φ(log(z)/s): ∂F0/∂s = -φ(u) u/s = f0(z) · (-z log(z)/s).
    "lognorm": _Family(
        lambda z, s: -np.log(s * z) - _LOG_SQRT_2PI - np.log(z) ** 2 / (2 * s * s),
        lambda z, s: (-(1 + np.log(z) / (s * s)) / z, np.log(z) ** 2 / s**3 - 1 / s),
        _positive,
        lambda z, s: (-z * np.log(z) / s,),
    ),
    "uniform": _Family(lambda z: np.zeros_like(z), lambda z: (np.zeros_like(z),), _unit),
}


def _continuous_parts(
    fam: _Family, kind: str, label: str, shapes: tuple, v: dict, y: Any, wanted: set
) -> dict:
    """∂y/∂name for each wanted name, broadcast like ``y`` (or not_implemented)."""
    x, loc, scale = _f64(v["x"]), _f64(v["loc"]), _f64(v["scale"])
    θ = [_f64(v[k]) for k in shapes]
    z = (x - loc) / scale
    if kind in _DENSITIES:
        dz, *dθ = fam.grad(z, *θ)
        w = y if kind == "pdf" else 1.0
        px = w * dz / scale
        out = {"x": px, "loc": -px, "scale": -w * (1 + z * dz) / scale}
        for k, d in zip(shapes, dθ):
            out[k] = w * d
    else:
        logf = fam.logf(z, *θ)
        ρ = np.exp(logf if kind in ("cdf", "sf") else logf - y)  # ∂y/∂z
        if kind in ("sf", "logsf"):
            ρ = -ρ
        px = ρ / scale
        out = {"x": px, "loc": -px, "scale": -z * px}
        if fam.cdf_shape is not None:
            for k, c in zip(shapes, fam.cdf_shape(z, *θ)):
                out[k] = ρ * c
        else:
            for k in shapes:
                out[k] = _not_implemented(
                    f"{label}.{kind}: the derivative in the shape parameter {k!r} has no closed "
                    "form (an incomplete gamma or beta function of it), so the rule gives none.\n"
                    f"To fix: keep {k!r} constant (its derivative is then never needed)"
                )
    inside = None if fam.inside is None else fam.inside(z, *θ)
    bad = np.isnan(y)
    return {k: _masked(p, inside, bad) for k, p in out.items() if k in wanted}


def _masked(p: Any, inside: Any, bad: Any) -> Any:
    """``p`` inside the support (0 outside), NaN where the value is NaN."""
    if isinstance(p, NotImplementedTangent):
        return p
    if inside is not None:
        p = np.where(inside, p, 0.0)
    return np.where(bad, np.nan, p)


def _poisson_parts(kind: str, v: dict, y: Any, wanted: set) -> dict:
    kk = _f64(v["k"]) - _f64(v["loc"])
    mu = _f64(v["mu"])
    if kind == "pmf":  # d/dμ P(k; μ) = P(k-1; μ) - P(k; μ), exact at μ = 0 too
        d = scipy.stats.poisson.pmf(kk - 1, mu) - y
    else:
        support = (kk >= 0) & (kk == np.floor(kk))
        d = np.where(support, np.where(kk == 0, -1.0, kk / mu - 1), 0.0)
    return {"mu": np.where(np.isnan(y), np.nan, d)}


def _binom_parts(kind: str, v: dict, y: Any, wanted: set) -> dict:
    kk = _f64(v["k"]) - _f64(v["loc"])
    n, p = _f64(v["n"]), _f64(v["p"])
    if kind == "pmf":  # d/dp B(k; n, p) = n (B(k-1; n-1, p) - B(k; n-1, p)), exact at p = 0, 1
        pmf = scipy.stats.binom.pmf
        d = np.where(n == 0, 0.0, n * (pmf(kk - 1, n - 1, p) - pmf(kk, n - 1, p)))
    else:
        support = (kk >= 0) & (kk <= n) & (kk == np.floor(kk))
        d = np.where(kk == 0, 0.0, kk / p) - np.where(kk == n, 0.0, (n - kk) / (1 - p))
        d = np.where(support, d, 0.0)
    return {"p": np.where(np.isnan(y), np.nan, d)}


def _bind(names: tuple, defaults: dict, args: tuple, kwargs: dict) -> dict:
    """Every parameter's value by name, as scipy binds ``(*args, **kwargs)``."""
    v = dict(defaults)
    for k, a in zip(names, args):  # item by item: nested ADs follow item assignment
        v[k] = a
    for k, a in kwargs.items():
        v[k] = a
    return v


def _cotangent(arg: Any, ȳ: Any, p: Any) -> Any:
    if isinstance(p, NotImplementedTangent):
        return p
    return Thunk(lambda: unbroadcast(arg, ȳ * p))


def _elementwise_rules(
    method: Any, names: tuple, defaults: dict, fixed: frozenset, parts: Callable
) -> tuple[Callable, Callable]:
    """An rrule and frule for ``method(*args, **kwargs)`` from its partials.

    ``parts(v, y, wanted)`` returns ``∂y/∂name`` (broadcastable to ``y``) for
    the wanted parameter names, given every parameter's value ``v`` by name;
    the names in ``fixed`` get ``NoTangent()``.
    """

    def stats_rrule(*args: Any, **kwargs: Any) -> Any:
        """rrule of a scipy.stats distribution method (see the module docstring)."""
        y = method(*args, **kwargs)
        n = len(args)
        active = [i for i in range(n) if names[i] not in fixed]

        def stats_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            out: list[Any] = [NoTangent()] * n
            if is_zero(ȳ):
                for i in active:
                    out[i] = ZeroTangent()
                return (NoTangent(), *out)
            ps = quietly(parts, _bind(names, defaults, args, kwargs), y, {names[i] for i in active})
            for i in active:
                out[i] = _cotangent(args[i], ȳ, ps[names[i]])
            return (NoTangent(), *out)

        return y, stats_pullback

    def stats_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        """frule of a scipy.stats distribution method (see the module docstring)."""
        n = len(rest) // 2
        ẋs, args = [unthunk(t) for t in rest[:n]], rest[n:]
        y = method(*args, **kwargs)
        active = [i for i in range(n) if names[i] not in fixed and not is_zero(ẋs[i])]
        if not active:
            return y, ZeroTangent()
        ps = quietly(parts, _bind(names, defaults, args, kwargs), y, {names[i] for i in active})
        ẏ: Any = 0.0
        for i in active:
            p = ps[names[i]]
            if isinstance(p, NotImplementedTangent):
                return y, p
            ẏ = ẏ + p * _f64(ẋs[i])
        return y, project(y, _like(y, ẏ))

    return stats_rrule, stats_frule


def _like(y: Any, ẏ: Any) -> Any:
    """``ẏ`` with ``y``'s shape (a partial may not span every broadcast axis)."""
    shape = np.shape(y)
    return ẏ if np.shape(ẏ) == shape else np.array(np.broadcast_to(ẏ, shape))


def _register(f: Any, rules: tuple[Callable, Callable]) -> None:
    rrule.register(f)(rules[0])
    frule.register(f)(rules[1])


def _register_univariate() -> None:
    for dname, fam in _FAMILIES.items():
        dist = getattr(scipy.stats, dname)
        shapes = tuple(s.strip() for s in (dist.shapes or "").split(",") if s.strip())
        names = ("x", *shapes, "loc", "scale")
        label = f"scipy.stats.{dname}"
        for kind in (*_DENSITIES, *_CDFS):
            context = (fam, kind, label, shapes)

            def parts(v: dict, y: Any, wanted: set, context: tuple = context) -> dict:
                return _continuous_parts(*context, v, y, wanted)

            method = getattr(dist, kind)
            _register(method, _elementwise_rules(method, names, _LOC_SCALE, frozenset(), parts))
    for dist, names, parts_of in (
        (scipy.stats.poisson, ("k", "mu", "loc"), _poisson_parts),
        (scipy.stats.binom, ("k", "n", "p", "loc"), _binom_parts),
    ):
        fixed = frozenset(names) - {"mu", "p"}
        for kind in ("pmf", "logpmf"):

            def dparts(v: dict, y: Any, wanted: set, f: Callable = parts_of, k: str = kind) -> dict:
                return f(k, v, y, wanted)

            method = getattr(dist, kind)
            _register(method, _elementwise_rules(method, names, {"loc": 0}, fixed, dparts))


_register_univariate()
