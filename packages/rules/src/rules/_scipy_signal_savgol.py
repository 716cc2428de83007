"""Rules for ``scipy.signal.savgol_filter``. Loaded when scipy.signal is imported.

``savgol_filter(x, window_length, polyorder, deriv=0, delta=1.0, axis=-1,
mode='interp', cval=0.0)`` is, for fixed options, a linear map ``M`` along ``axis``
(plus ``cval`` times a fixed signal in mode ``'constant'``), so ``ẏ`` is the filter
of ``ẋ`` and ``x̄ = Mᵀ ȳ``. ``M`` is the band matrix ``K`` of the convolution with
``savgol_coeffs`` (zeros outside the signal) plus a correction ``E`` at the edges that
each ``mode`` makes (reflection, repetition, wrap-around, or the polynomial fits of
``'interp'``). ``Kᵀ ȳ`` is a correlation; ``E`` lives in the first and last
``window_length`` rows and the first and last ``2·window_length`` columns, and is
read off the filter of an identity of ``4·window_length`` samples (a signal that
short is filtered as a dense matrix).

``x`` is real (scipy casts complex input to float64); ``delta`` scales the output by
``delta**-deriv`` (``δ̄ = -deriv/delta · ⟨ȳ, y⟩``) and ``cval`` enters in mode
``'constant'``; ``window_length``, ``polyorder``, ``deriv``, ``axis`` and ``mode``
get ``NoTangent()``.

>>> import numpy as np, scipy.signal
>>> from rulescore import rrule
>>> y, pb = rrule(scipy.signal.savgol_filter, np.arange(5.0), 3, 1, mode="nearest")
>>> pb(np.array([1.0, 0, 0, 0, 0]))[1]   # y₀ = (2x₀ + x₁)/3
array([0.66666667, 0.33333333, 0.        , 0.        , 0.        ])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.signal

from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._numpy_linear import dense
from ._numpy_statistics import split_tangents
from ._util import is_zero, project

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()
_savgol = scipy.signal.savgol_filter
_NAMES = ("window_length", "polyorder", "deriv", "delta", "axis", "mode", "cval")
_DEFAULTS = {"deriv": 0, "delta": 1.0, "axis": -1, "mode": "interp", "cval": 0.0}


def _options(args: tuple, kwargs: dict) -> dict:
    return {**_DEFAULTS, **dict(zip(_NAMES, args)), **kwargs}


non_differentiable(_options)


@functools.lru_cache(maxsize=64)
def _plan(w: int, p: int, deriv: int, mode: str, n: int) -> Any:
    """``(coeffs, shift, dense M or None, edge rows, edge columns, E)`` for a signal of
    ``n`` and ``delta = 1`` (a ``delta`` scales them all by ``delta**-deriv``)."""
    delta = 1.0
    c = scipy.signal.savgol_coeffs(w, p, deriv=deriv, delta=delta)
    # K x is the full convolution of x with c, from index `shift` on: find it once
    probe = np.random.default_rng(0).standard_normal(2 * w + 3)
    want = _savgol(probe, w, p, deriv, delta, mode="constant", cval=0.0)
    full = np.convolve(probe, c)
    shift = next(s for s in range(w) if np.allclose(full[s : s + probe.size], want, atol=1e-12))
    opts = {"deriv": deriv, "delta": delta, "mode": mode, "axis": 0}
    if n <= 4 * w:
        return c, shift, _savgol(np.eye(n), w, p, **opts), None, None, None
    L = 4 * w
    eye = np.eye(L)
    K = np.stack([np.convolve(e, c)[shift : shift + L] for e in eye], axis=1)
    E = _savgol(eye, w, p, **opts) - K
    rows = np.r_[0:w, L - w : L]
    cols = np.arange(L)
    big_rows = np.where(rows < w, rows, rows + n - L)
    big_cols = np.where(cols < 2 * w, cols, cols + n - L)
    return c, shift, None, big_rows, big_cols, E[rows]


non_differentiable(_plan)


def _transpose(ȳ: np.ndarray, o: dict, n: int) -> np.ndarray:
    """``Mᵀ ȳ`` for ``delta = 1`` along the last axis of ``ȳ`` (see the module), in
    operations that an AD differentiates again (second order)."""
    w, p = int(o["window_length"]), int(o["polyorder"])
    c, shift, M, rows, _, E = _plan(w, p, int(o["deriv"]), o["mode"], n)
    if M is not None:
        return ȳ @ M
    pad = [(0, 0)] * (ȳ.ndim - 1) + [(shift, c.size - 1 - shift)]
    kernel = np.reshape(c[::-1], (1,) * (ȳ.ndim - 1) + (c.size,))
    x̄ = scipy.signal.convolve(np.pad(ȳ, pad), kernel, mode="valid")
    edges = ȳ[..., rows] @ E  # onto the first and the last 2·window_length samples
    middle = np.zeros((*ȳ.shape[:-1], n - 4 * w), dtype=edges.dtype)
    return x̄ + np.concatenate([edges[..., : 2 * w], middle, edges[..., 2 * w :]], axis=-1)


def _cval_response(x: np.ndarray, o: dict) -> Any:
    """``∂y/∂cval``: the filter of zeros padded with ones (mode ``'constant'`` only)."""
    if o["mode"] != "constant":
        return None
    opts = {k: o[k] for k in ("deriv", "delta", "axis")}
    return _savgol(
        np.zeros(np.shape(x)), o["window_length"], o["polyorder"], **opts, mode="constant", cval=1.0
    )


@rrule.register(_savgol)
def savgol_filter_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``scipy.signal.savgol_filter``: the transpose of its linear map."""
    Ω = _savgol(x, *args, **kwargs)
    o = _options(args, kwargs)
    axis, deriv = int(o["axis"]), int(o["deriv"])
    # delta as passed (not through _options, a constant to an AD): at second order
    # the derivatives in it of x̄ and δ̄ count
    delta = args[3] if len(args) > 3 else o["delta"]
    rest = (_NO,) * len(args)

    def savgol_filter_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        Y = np.real(np.broadcast_to(np.asarray(ȳ), Ω.shape)).astype(np.float64)
        Ym = np.moveaxis(Y, axis, -1)
        x̄ = np.moveaxis(_transpose(Ym, o, Ym.shape[-1]), -1, axis)
        if deriv:
            x̄ = x̄ * delta**-deriv
        out: list[Any] = list(rest)
        if len(args) > 3 and deriv:  # delta by position
            out[3] = -deriv / delta * float(np.sum(Y * Ω))
        r = _cval_response(x, o) if len(args) > 6 else None
        if r is not None:
            out[6] = float(np.sum(Y * r))
        return (_NO, project(x, x̄), *out)

    return Ω, savgol_filter_pullback


@frule.register(_savgol)
def savgol_filter_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``scipy.signal.savgol_filter``: the tangent filtered (cval 0)."""
    (ẋ, *ṙest), (x, *extra) = split_tangents(args)
    Ω = _savgol(x, *extra, **kwargs)
    o = _options(tuple(extra), kwargs)
    ẋ = unthunk(ẋ)
    δ̇ = unthunk(ṙest[3]) if len(ṙest) > 3 else _ZERO
    ċ = unthunk(ṙest[6]) if len(ṙest) > 6 else _ZERO
    if is_zero(ẋ) and is_zero(δ̇) and is_zero(ċ):
        return Ω, _ZERO
    ẏ: Any = 0.0
    if not is_zero(ẋ):
        w, p, d = o["window_length"], o["polyorder"], o["deriv"]
        δ = extra[3] if len(extra) > 3 else o["delta"]  # as passed: see the rrule
        ẏ = _savgol(np.real(dense(ẋ, x)) + 0.0, w, p, d, δ, o["axis"], o["mode"], 0.0)
    if not is_zero(δ̇) and o["deriv"]:
        ẏ = ẏ - o["deriv"] / extra[3] * float(np.real(δ̇)) * Ω
    r = _cval_response(x, o)
    if not is_zero(ċ) and r is not None:
        ẏ = ẏ + float(np.real(ċ)) * r
    return Ω, project(Ω, np.broadcast_to(ẏ, Ω.shape))
