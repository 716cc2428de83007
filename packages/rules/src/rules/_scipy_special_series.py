"""Derivatives of scipy.special functions that scipy has no function for, or none stable.

* ``trigamma(z)``: ψ'(z), the derivative of digamma. scipy's ``polygamma`` is
  real only; for complex z the reflection ψ'(1-z) + ψ'(z) = π²/sin²(πz) moves
  z into Re z ≥ ½, the recurrence ψ'(z) = ψ'(z+1) + 1/z² moves it ten steps
  right (|z| ≥ 10.5), and the asymptotic series
  1/z + 1/(2z²) + Σₖ B₂ₖ/z^(2k+1) finishes (error below 1e-16 there).
* ``zeta_ds(s, q)``: ∂ζ(s, q)/∂s, the Euler–Maclaurin formula for ζ
  differentiated term by term: ζ(s, q) = Σ_{k<N} (q+k)^-s + a^(1-s)/(s-1)
  + a^-s/2 + Σⱼ B₂ⱼ/(2j)! (s)₂ⱼ₋₁ a^(-s-2j+1) with a = q + N, where
  (s)ₘ = s(s+1)…(s+m-1). N grows with |Im s| so the remainder stays below
  1e-14. The sum's terms grow like k^-s for Re s < 0 and cancel, so for
  Riemann's ζ at Re s < -1/2 the functional equation
  ζ(s) = χ(s) ζ(1-s), χ(s) = 2^s π^(s-1) sin(πs/2) Γ(1-s), gives
  ζ'(s) = χ'(s) ζ(1-s) - χ(s) ζ'(1-s) (no cancellation at the trivial zeros).
* ``erfcx_d(x, Ω)``: erfcx'(x) = 2xΩ - 2/√π cancels for large x (both terms
  are near 2/√π, the result near -1/(√π x²)); there the asymptotic series
  -(2/√π) t (1 - 3t + 15t² - …), t = 1/(2x²), is used instead.
* ``boxcox_dlmbda(x, λ)``: ∂/∂λ of (x^λ - 1)/λ is L² g(λL), L = log x,
  g(u) = (u eᵘ - expm1(u))/u², which cancels near u = 0; there its Taylor
  series Σₖ (k+1)/(k+2)! uᵏ (g(0) = ½, the λ = 0 limit (log x)²/2).

Each computes in at least double precision (float32 arguments are promoted);
the rules project the result back to the argument's dtype.

>>> round(float(zeta_ds(2.0)), 12)          # ζ'(2)
-0.937548254316
>>> float(erfcx_d(1e10, 1 / (1e10 * 3.141592653589793**0.5)))  # ≈ -1/(√π x²)
-5.641895835477563e-21
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sc

__all__ = ["boxcox_dlmbda", "erfcx_d", "trigamma", "zeta_ds"]

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LOG_2PI = math.log(2.0 * math.pi)
# Bernoulli numbers B₂, B₄, ..., B₁₆.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
# B₂ⱼ/(2j)!: the Euler–Maclaurin coefficients.
_EM = tuple(b / math.factorial(2 * j) for j, b in enumerate(_BERNOULLI, 1))
# (2k-1)!! with alternating signs: erfcx's asymptotic series in t = 1/(2x²), from k = 1.
_REFLECT_BELOW = -0.5  # Riemann's ζ' by the functional equation for Re s below this
_ERFCX = (1.0, -3.0, 15.0, -105.0, 945.0, -10395.0, 135135.0, -2027025.0, 34459425.0)
_ERFCX_ASYMPTOTIC = 25.0  # |x| above which the series is exact to double precision
# g(u) = (u eᵘ - expm1(u))/u² = Σₖ (k+1)/(k+2)! uᵏ, for |u| < 0.1 (error < 1e-19).
_BOXCOX_G = tuple((k + 1) / math.factorial(k + 2) for k in range(11))
_BOXCOX_SERIES = 0.1


def _double(x: Any) -> np.ndarray:
    """``x`` as an array of at least double precision (float32 -> float64, complex64 -> 128)."""
    x = np.asarray(x)
    return x.astype(np.result_type(x.dtype, np.float64), copy=False)


def _horner(coefficients: tuple, t: Any) -> Any:
    out: Any = 0.0
    for c in reversed(coefficients):
        out = out * t + c
    return out


def trigamma(z: Any) -> Any:
    """ψ'(z) = polygamma(1, z), for complex z too."""
    if not np.iscomplexobj(z):
        return sc.polygamma(1, z)
    z = _double(z)
    left = z.real < 0.5
    w = np.where(left, 1 - z, z)
    shifted: Any = 0.0
    for k in range(10):
        shifted = shifted + 1 / ((w + k) * (w + k))
    r = 1 / (w + 10)
    r2 = r * r
    t = shifted + r + 0.5 * r2 + r * r2 * _horner(_BERNOULLI, r2)
    return np.where(left, (np.pi / np.sin(np.pi * z)) ** 2 - t, t)


def _euler_maclaurin_ds(s: Any, q: Any) -> Any:
    """∂ζ(s, q)/∂s, accurate for Re s ≥ -1/2 (see the module docstring)."""
    n = 12 + min(int(np.ceil(np.max(np.abs(np.imag(s)), initial=0.0))), 2000)
    total: Any = 0.0
    for k in range(n):
        t = q + k
        total = total - np.log(t) * t ** (-s)
    a = q + n
    la = np.log(a)
    a_s = a ** (-s)
    total = total - a * a_s * (la / (s - 1) + 1 / ((s - 1) * (s - 1))) - 0.5 * la * a_s
    rising, d_rising, power = s, 1.0, a_s / a  # (s)₂ⱼ₋₁, its derivative, a^(-s-2j+1)
    for j, c in enumerate(_EM, 1):
        total = total + c * power * (d_rising - rising * la)
        u, v = s + (2 * j - 1), s + 2 * j
        d_rising = d_rising * u * v + rising * (u + v)
        rising = rising * u * v
        power = power / (a * a)
    return total


def _reflected_ds(s: Any) -> Any:
    """ζ'(s) for Riemann's ζ by the functional equation (used at Re s < -1/2)."""
    r = 1 - s
    h = 0.5 * np.pi * s
    base = 2.0**s * np.pi ** (s - 1) * sc.gamma(r)
    chi = base * np.sin(h)
    d_chi = base * ((_LOG_2PI - sc.digamma(r)) * np.sin(h) + 0.5 * np.pi * np.cos(h))
    return d_chi * sc.zeta(r) - chi * _euler_maclaurin_ds(r, 1.0)


def zeta_ds(s: Any, q: Any = None) -> Any:
    """∂ζ(s, q)/∂s: the Hurwitz ζ for a given ``q`` (q > 0), else Riemann's."""
    s = _double(s)
    if q is not None:
        return _euler_maclaurin_ds(s, _double(q))
    left = np.real(s) < _REFLECT_BELOW
    if not np.any(left):
        return _euler_maclaurin_ds(s, 1.0)
    right = _euler_maclaurin_ds(np.where(left, 2.0, s), 1.0)
    return np.where(left, _reflected_ds(np.where(left, s, -2.0)), right)


def erfcx_d(x: Any, Ω: Any) -> Any:
    """erfcx'(x) = 2xΩ - 2/√π, by its asymptotic series where that cancels."""
    x, Ω = _double(x), _double(Ω)
    direct = 2 * x * Ω - _2_SQRT_PI
    far = (np.real(x) > 0) & (np.abs(x) > _ERFCX_ASYMPTOTIC)
    if not np.any(far):
        return direct
    t = 1 / (2 * np.where(far, x, 1.0) ** 2)
    return np.where(far, -_2_SQRT_PI * t * _horner(_ERFCX, t), direct)


def boxcox_dlmbda(x: Any, lmbda: Any) -> Any:
    """∂/∂λ of boxcox(x, λ); 1/λ² at x = 0 (where boxcox is -1/λ)."""
    x, lmbda = _double(x), _double(lmbda)
    log_x = np.log(x)
    u = lmbda * log_x
    small = np.abs(u) < _BOXCOX_SERIES
    series = _horner(_BOXCOX_G, np.where(small, u, 0.0))
    big = np.where(small, 1.0, u)
    direct = (big * np.exp(big) - np.expm1(big)) / (big * big)
    g = np.where(small, series, direct)
    return np.where(x == 0, 1 / (lmbda * lmbda), log_x * log_x * g)
