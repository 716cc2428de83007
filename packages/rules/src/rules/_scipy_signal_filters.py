"""Rules for scipy.signal's ``lfilter`` and ``detrend``. Loaded when scipy.signal is imported.

* ``lfilter(b, a, x, axis=-1)`` (no ``zi``) runs the recurrence
  ``Σ_k a_k y[n-k] = Σ_k b_k x[n-k]`` along ``axis``. In ``x`` it is a causal
  linear time-invariant map, a lower-triangular Toeplitz matrix ``T``, whose
  adjoint ``Tᴴ = J conj(T) J`` (``J`` reverses) is filtering the reversed
  cotangent with the conjugate coefficients:
  ``x̄ = flip(lfilter(conj(b), conj(a), flip(ȳ)))``. Differentiating the recurrence,
  ``ẏ = lfilter(b, a, ẋ) + lfilter(1, a, ḃ∗x - ȧ∗y)`` (``∗``: causal convolution), so
  with ``u = flip(lfilter(1, conj(a), flip(ȳ)))``, ``b̄_k = Σ_n u[n] conj(x[n-k])`` and
  ``ā_k = -Σ_n u[n] conj(y[n-k])`` (summed over the other axes too).
  ``zi`` (initial conditions, a second output) has no rule here: the rule raises.
* ``detrend(data, axis, type, bp)`` subtracts the least-squares fit of a constant or
  of a (piecewise) line: an orthogonal projection, so it is its own adjoint:
  ``x̄ = detrend(ȳ)`` with the same options, ``ẏ = detrend(ẋ)``.

``axis``, ``type``, ``bp`` and ``overwrite_data`` get ``NoTangent()``.

>>> import numpy as np, scipy.signal
>>> from rulescore import rrule
>>> y, pb = rrule(scipy.signal.lfilter, np.array([1.0]), np.array([1.0, -0.5]), np.ones(3))
>>> y, pb(np.array([0.0, 0.0, 1.0]))[3]   # ∂y₂/∂x = (0.25, 0.5, 1)
(array([1.  , 1.5 , 1.75]), array([0.25, 0.5 , 1.  ]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal

from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._numpy_elementwise import conj_if_complex
from ._numpy_linear import dense
from ._numpy_statistics import split_tangents
from ._util import is_zero, project

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()
_ONE = np.ones(1)


def _lfilter_axis(args: tuple, kwargs: dict) -> int:
    """``axis``, refusing ``zi`` (whose rule this module does not have)."""
    opts = {**dict(zip(("axis", "zi"), args)), **kwargs}
    if opts.get("zi") is not None:
        raise NotImplementedError(
            "scipy.signal.lfilter: no derivative rule for a call with zi= (initial "
            "conditions and the final state zf).\nTo fix: call lfilter without zi "
            "(zero initial state), or prepend the samples that set the state to x."
        )
    return int(opts.get("axis", -1))


non_differentiable(_lfilter_axis)


def _reversed_filter(b: Any, a: Any, ȳ: np.ndarray, axis: int) -> np.ndarray:
    """``Tᴴ ȳ`` for the filter ``T = lfilter(b, a, ·)``: the reversed cotangent filtered."""
    flipped = np.flip(ȳ, axis)
    return np.flip(
        scipy.signal.lfilter(conj_if_complex(b), conj_if_complex(a), flipped, axis), axis
    )


def _lagged_sums(u: np.ndarray, z: np.ndarray, n: int) -> np.ndarray:
    """``Σ u[..., m] conj(z[..., m-k])`` for ``k < n`` (both with the filter axis last)."""
    N = u.shape[-1]
    zc = conj_if_complex(z)
    return np.stack(
        [np.sum(u[..., k:] * zc[..., : N - k]) if k < N else np.sum(0 * u) for k in range(n)]
    )


def _causal(c: Any, z: np.ndarray, axis: int) -> np.ndarray:
    """The causal convolution ``c ∗ z`` along ``axis``, cut to ``z``'s length."""
    return scipy.signal.lfilter(c, _ONE, z, axis)


@rrule.register(scipy.signal.lfilter)
def lfilter_rrule(b: Any, a: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``scipy.signal.lfilter``: the reversed cotangent filtered (see the module)."""
    axis = _lfilter_axis(args, kwargs)
    Ω = scipy.signal.lfilter(b, a, x, *args, **kwargs)
    rest = (_NO,) * len(args)

    def lfilter_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO, _ZERO, *rest)
        Y = np.broadcast_to(np.asarray(ȳ), Ω.shape)
        B, A = np.atleast_1d(b), np.atleast_1d(a)
        dx = _reversed_filter(B, A, Y, axis)
        u = np.moveaxis(_reversed_filter(_ONE, A, Y, axis), axis, -1)
        db = _lagged_sums(u, np.moveaxis(np.asarray(x), axis, -1), B.shape[0])
        da = -_lagged_sums(u, np.moveaxis(Ω, axis, -1), A.shape[0])
        return (
            _NO,
            project(b, np.reshape(db, np.shape(b))),
            project(a, np.reshape(da, np.shape(a))),
            project(x, dx),
            *rest,
        )

    return Ω, lfilter_pullback


@frule.register(scipy.signal.lfilter)
def lfilter_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``scipy.signal.lfilter``: ``lfilter(b, a, ẋ) + lfilter(1, a, ḃ∗x - ȧ∗y)``."""
    (ḃ, ȧ, ẋ, *_), (b, a, x, *extra) = split_tangents(args)
    axis = _lfilter_axis(tuple(extra), kwargs)
    Ω = scipy.signal.lfilter(b, a, x, *extra, **kwargs)
    ḃ, ȧ, ẋ = unthunk(ḃ), unthunk(ȧ), unthunk(ẋ)
    if is_zero(ḃ) and is_zero(ȧ) and is_zero(ẋ):
        return Ω, _ZERO
    ẏ: Any = 0
    if not is_zero(ẋ):
        ẏ = scipy.signal.lfilter(b, a, dense(ẋ, x), axis)
    if not (is_zero(ḃ) and is_zero(ȧ)):
        e: Any = 0
        if not is_zero(ḃ):
            e = _causal(np.atleast_1d(dense(ḃ, b)), np.asarray(x), axis)
        if not is_zero(ȧ):
            e = e - _causal(np.atleast_1d(dense(ȧ, a)), Ω, axis)
        ẏ = ẏ + scipy.signal.lfilter(_ONE, a, e, axis)
    return Ω, project(Ω, np.broadcast_to(ẏ, Ω.shape))


def _detrend_options(args: tuple, kwargs: dict) -> dict:
    opts = {**dict(zip(("axis", "type", "bp", "overwrite_data"), args)), **kwargs}
    opts.pop("overwrite_data", None)  # the tangents are the rule's own arrays
    return opts


non_differentiable(_detrend_options)


@rrule.register(scipy.signal.detrend)
def detrend_rrule(data: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``scipy.signal.detrend``: an orthogonal projection, its own adjoint."""
    Ω = scipy.signal.detrend(data, *args, **kwargs)
    opts = _detrend_options(args, kwargs)
    rest = (_NO,) * len(args)

    def detrend_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        Y = np.broadcast_to(np.asarray(ȳ), Ω.shape) + 0.0
        return (_NO, project(data, scipy.signal.detrend(Y, **opts)), *rest)

    return Ω, detrend_pullback


@frule.register(scipy.signal.detrend)
def detrend_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``scipy.signal.detrend``: the tangent detrended."""
    (ẋ, *_), (data, *extra) = split_tangents(args)
    Ω = scipy.signal.detrend(data, *extra, **kwargs)
    ẋ = unthunk(ẋ)
    if is_zero(ẋ):
        return Ω, _ZERO
    opts = _detrend_options(tuple(extra), kwargs)
    return Ω, project(Ω, scipy.signal.detrend(dense(ẋ, data) + 0.0, **opts))
