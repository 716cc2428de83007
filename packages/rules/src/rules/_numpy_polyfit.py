"""Rules for ``np.polyfit``: a weighted linear least-squares fit.

With ``A = W V`` (``V = vander(x, deg + 1)``, ``W = diag(w)``) and ``b = W y`` the
coefficients are ``c = argmin ‖A c - b‖``, so (full column rank, the case numpy
does not warn about)

    ċ = (AᴴA)⁻¹ (Ȧᴴ r + Aᴴ (ḃ - Ȧ c)),   r = b - A c,

and the pullback, with ``z = (AᴴA)⁻¹ c̄``, is ``Ā = r zᴴ - A z cᴴ``, ``b̄ = A z``,
passed on to ``x`` (through ``∂V/∂x``), ``y`` and a positional ``w``. The
solves use a QR factorisation of ``A`` with its columns scaled to unit norm,
as numpy's fit does. ``w`` passed by keyword gets no derivative (the
ChainRules convention); ``deg``, ``rcond`` and the flags get ``NoTangent()``.

Extra outputs:

* ``full=True``: the residual sums of squares ``‖r‖²`` are differentiable
  (``d‖r‖² = 2 Re⟨r, ḃ - Ȧ c⟩``, since ``Aᴴr = 0``); the rank and ``rcond``
  are constants. The singular values of numpy's internally column-scaled
  matrix get ``not_implemented``: a cotangent for them raises.
* ``cov=True`` / ``cov="unscaled"`` (real data): ``Σ = (AᵀA)⁻¹ · fac`` with
  ``fac = ‖r‖² / (M - deg - 1)`` (1 when unscaled), differentiable in both
  factors; for complex data it raises (numpy forms ``AᵀA`` without a
  conjugate there).

>>> import numpy as np
>>> from rulescore import rrule
>>> x, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0])
>>> c, pb = rrule(np.polyfit, x, y, 1)
>>> np.round(c, 12), np.round(pb(np.array([1.0, 0.0]))[2], 12)   # ∂slope/∂y
(array([2., 1.]), array([-0.5,  0. ,  0.5]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import (
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    non_differentiable,
    not_implemented,
    rrule,
    unthunk,
)

from ._linalg_util import entries, mH
from ._numpy_elementwise import conj_if_complex
from ._numpy_polynomials import vander_derivative
from ._numpy_statistics import argument, split_tangents
from ._util import asarray, is_zero, project

__all__ = []

_NO = NoTangent()
_ZERO = ZeroTangent()
_ARGS = ("deg", "rcond", "full", "w", "cov")
_SV = "np.polyfit: the singular values of numpy's column-scaled Vandermonde matrix"


def _options(args: tuple, kwargs: dict, names: tuple = _ARGS) -> dict:
    """The optional arguments by name (read ``w`` with ``argument``: this is a constant);
    ``names``: their order in the signature (``numpy.polynomial``'s has no ``cov``)."""
    opts = dict(zip(names, args))
    opts.update(kwargs)
    return opts


non_differentiable(_options)


class _Fit:
    """The least-squares problem behind a ``polyfit`` call, as 2-d arrays."""

    def __init__(self, x: Any, y: Any, w: Any, Ω: Any, opts: dict) -> None:
        self.x = asarray(x) + 0.0
        self.vec = np.ndim(y) == 1
        Y = asarray(y) + 0.0
        self.Y = Y[:, None] if self.vec else Y
        self.order = int(opts["deg"]) + 1
        self.w = None if w is None else asarray(w) + 0.0
        self.V = np.vander(self.x, self.order)
        self.dV = vander_derivative(self.x, self.order)
        wcol = 1.0 if w is None else self.w[:, None]
        self.A, self.b = self.V * wcol, self.Y * wcol
        c = Ω[0] if isinstance(Ω, tuple) else Ω
        self.C = c[:, None] if self.vec else c
        self.R = self.b - self.A @ self.C
        scale = np.sqrt(np.sum(np.abs(self.A) ** 2, axis=0))
        self.scale = np.where(scale == 0, 1.0, scale)
        self.Rf = np.linalg.qr(self.A / self.scale, mode="r")

    def gram_solve(self, t: np.ndarray) -> np.ndarray:
        """``(AᴴA)⁻¹ t`` from the QR factor of the scaled ``A``."""
        s = self.scale[:, None]
        u = np.linalg.solve(mH(self.Rf), t / s)
        return np.linalg.solve(self.Rf, u) / s

    def inputs_dot(self, ẋ: Any, ẏ: Any, ẇ: Any) -> tuple:
        """``(Ȧ, ḃ)`` for tangents of ``x``, ``y``, ``w`` (zeros allowed)."""
        wcol = 1.0 if self.w is None else self.w[:, None]
        Ȧ = np.zeros_like(self.A) if is_zero(ẋ) else self.dV * asarray(ẋ)[:, None] * wcol
        ḃ = np.zeros_like(self.b) if is_zero(ẏ) else np.reshape(ẏ, self.Y.shape) * wcol
        if not is_zero(ẇ):
            Ȧ = Ȧ + self.V * asarray(ẇ)[:, None]
            ḃ = ḃ + self.Y * asarray(ẇ)[:, None]
        return Ȧ, ḃ

    def inputs_bar(self, Ā: np.ndarray, b̄: np.ndarray) -> tuple:
        """``(x̄, ȳ, w̄)`` from the cotangents of ``A`` and ``b``."""
        wcol = 1.0 if self.w is None else conj_if_complex(self.w)[:, None]
        dx = np.sum(conj_if_complex(self.dV) * Ā * wcol, axis=1)
        dy = b̄ * wcol
        dw = np.sum(conj_if_complex(self.V) * Ā, axis=1) + np.sum(conj_if_complex(self.Y) * b̄, 1)
        return dx, dy[:, 0] if self.vec else dy, dw

    def vbase(self) -> np.ndarray:
        if np.iscomplexobj(self.A):
            raise NotImplementedError(
                "np.polyfit: no derivative of cov= for complex data (numpy's covariance "
                "uses AᵀA without a conjugate).\nTo fix: fit the real and imaginary parts "
                "separately, or do not differentiate the covariance."
            )
        return np.linalg.inv(self.A.T @ self.A)

    def fac(self, opts: dict) -> tuple:
        """``fac`` per column and ``∂fac/∂‖r‖²`` (0 for ``cov="unscaled"``)."""
        if opts.get("cov") == "unscaled":
            return np.ones(1), 0.0  # numpy's Σ has one trailing column then
        dof = self.x.shape[0] - self.order
        return np.sum(np.abs(self.R) ** 2, axis=0) / dof, 1.0 / dof


def polyfit_rrule(x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.polyfit`` (see the module for the outputs that carry derivatives)."""
    opts = _options(args, kwargs)
    Ω = np.polyfit(x, y, *args, **kwargs)
    w, w_slot = argument(args, kwargs, 3, "w"), len(args) > 3 and args[3] is not None
    rest = (_NO,) * len(args)

    def polyfit_pullback(ȳ: Any) -> tuple:
        fit = _Fit(x, y, w, Ω, opts)
        res̄: Any = _ZERO
        cov̄: Any = _ZERO
        if opts.get("full"):
            c̄, res̄, _, s̄, _ = entries(ȳ, 5)
            if not is_zero(s̄):
                raise NotImplementedError(f"{_SV} have no derivative rule")
        elif opts.get("cov"):
            c̄, cov̄ = entries(ȳ, 2)
        else:
            c̄ = unthunk(ȳ)
        if is_zero(c̄) and is_zero(res̄) and is_zero(cov̄):
            return (_NO, _ZERO, _ZERO, *rest)
        C̄ = np.zeros(fit.C.shape) if is_zero(c̄) else np.reshape(c̄, fit.C.shape)
        r̄2 = np.zeros(fit.C.shape[1]) if is_zero(res̄) else np.reshape(np.real(res̄), -1)
        Ā = np.zeros(fit.A.shape, np.result_type(fit.A, C̄))
        if not is_zero(cov̄):
            Vb = fit.vbase()
            fac, dfac = fit.fac(opts)
            S = np.reshape(cov̄, (*Vb.shape, -1))
            V̄b = np.sum(S * fac, axis=-1)
            r̄2 = r̄2 + np.sum(S * Vb[..., None], axis=(0, 1)) * dfac
            Ā = Ā - fit.A @ Vb @ (V̄b + V̄b.T) @ Vb
        Z = fit.gram_solve(C̄)
        Ā = Ā + fit.R @ mH(Z) - fit.A @ Z @ mH(fit.C) - 2 * (fit.R * r̄2) @ mH(fit.C)
        b̄ = fit.A @ Z + 2 * fit.R * r̄2
        dx, dy, dw = fit.inputs_bar(Ā, b̄)
        out = [project(x, dx), project(y, dy), *rest]
        if w_slot:
            out[5] = project(w, dw)
        return (_NO, *out)

    return Ω, polyfit_pullback


def polyfit_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.polyfit``: ``ċ = (AᴴA)⁻¹ (Ȧᴴ r + Aᴴ (ḃ - Ȧ c))``."""
    tangents, (x, y, *extra) = split_tangents(args)
    opts = _options(tuple(extra), kwargs)
    Ω = np.polyfit(x, y, *extra, **kwargs)
    w = argument(tuple(extra), kwargs, 3, "w")
    ẋ, ẏ = unthunk(tangents[0]), unthunk(tangents[1])
    ẇ = unthunk(tangents[5]) if len(extra) > 3 and w is not None else _ZERO
    if is_zero(ẋ) and is_zero(ẏ) and is_zero(ẇ):
        return Ω, _ZERO
    fit = _Fit(x, y, w, Ω, opts)
    Ȧ, ḃ = fit.inputs_dot(ẋ, ẏ, ẇ)
    Ċ = fit.gram_solve(mH(Ȧ) @ fit.R + mH(fit.A) @ (ḃ - Ȧ @ fit.C))
    ṙ2 = 2 * np.real(np.sum(conj_if_complex(fit.R) * (ḃ - Ȧ @ fit.C), axis=0))
    c = Ω[0] if isinstance(Ω, tuple) else Ω
    ċ = project(c, Ċ[:, 0] if fit.vec else Ċ)
    if opts.get("full"):
        res = Ω[1]
        ṙes = project(res, ṙ2) if res.size else project(res, np.zeros(0))
        ṡ = not_implemented(_SV)
        return Ω, Tangent[tuple](ċ, ṙes, _NO, ṡ, _NO)
    if opts.get("cov"):
        Vb = fit.vbase()
        fac, dfac = fit.fac(opts)
        V̇b = -Vb @ (Ȧ.T @ fit.A + fit.A.T @ Ȧ) @ Vb
        Σ̇ = V̇b[..., None] * fac
        if dfac:
            Σ̇ = Σ̇ + Vb[..., None] * (ṙ2 * dfac)
        cov = Ω[1]
        return Ω, Tangent[tuple](ċ, project(cov, Σ̇[..., 0] if fit.vec else Σ̇))
    return Ω, ċ


rrule.register(np.polyfit)(polyfit_rrule)
frule.register(np.polyfit)(polyfit_frule)
