"""Rules for ``np.cumsum`` and ``np.cumprod`` (and the ``ndarray`` methods).

``axis=None`` works on the flattened array, as numpy does; the cotangent is
reshaped back. ``cumprod`` is exact with zeros: along a slice whose first zero
is at position z, entries before z get ``Σ_{k≥i} ȳ_k y_k / x_i`` (no zero
divides), the entry at z gets ``Σ_{k≥z} ȳ_k y'_k`` where ``y'`` is the
cumulative product with that one zero replaced by 1, and entries after z get 0
(every product through them contains the zero).

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.cumsum, np.array([1.0, 2.0, 3.0]))
>>> pb(np.ones(3))[1]
array([3., 2., 1.])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_elementwise import conj_if_complex
from ._numpy_reductions import bind_options
from ._util import asarray, is_zero, project

__all__ = []

_CUM_ARGS = ("axis", "dtype", "out")


def _along(x: Any, axis: Any) -> tuple[Any, int]:
    """``x`` as an array and the axis the cumulation runs along (flattened for ``None``)."""
    x = asarray(x)
    if axis is None:
        return x.reshape(-1), 0
    return x, normalize_axis_tuple(axis, x.ndim)[0]


def _reverse_cumsum(a: Any, axis: int) -> Any:
    return np.flip(np.cumsum(np.flip(a, axis), axis), axis)


def cumsum_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.cumsum``: the pullback is a cumulative sum from the end."""
    opts = bind_options(np.cumsum, _CUM_ARGS, args, kwargs)
    rest = (NoTangent(),) * len(args)  # for axis, dtype passed positionally
    Ω = np.cumsum(x, *args, **kwargs)

    def cumsum_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        axis = 0 if opts.get("axis") is None else opts["axis"]
        dx = _reverse_cumsum(asarray(ȳ), axis).reshape(np.shape(x))
        return (NoTangent(), project(x, dx), *rest)

    return Ω, cumsum_pullback


def cumsum_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    n = len(args) // 2
    ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
    Ω = np.cumsum(x, *extra, **kwargs)
    if is_zero(ẋ):
        return Ω, ZeroTangent()
    return Ω, project(Ω, np.cumsum(ẋ, *extra, **kwargs))


def _zero_structure(x: Any, axis: int) -> tuple[Any, Any, Any]:
    """Masks along ``axis``: before the first zero, at the first zero; and y' (see module)."""
    zeros_so_far = np.cumsum(x == 0, axis=axis)
    before = zeros_so_far == 0
    first = (x == 0) & (zeros_so_far == 1)
    y_skip = np.cumprod(np.where(first, 1, x), axis=axis)
    return before, first, y_skip


def cumprod_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.cumprod``, exact when the input has zeros."""
    opts = bind_options(np.cumprod, _CUM_ARGS, args, kwargs)
    rest = (NoTangent(),) * len(args)  # for axis, dtype passed positionally
    Ω = np.cumprod(x, *args, **kwargs)

    def cumprod_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        xa, axis = _along(x, opts.get("axis"))
        ȳ = asarray(ȳ).reshape(np.shape(Ω))
        y = asarray(Ω).reshape(xa.shape)
        ȳ = ȳ.reshape(xa.shape)
        if not np.any(xa == 0):
            dx = _reverse_cumsum(ȳ * conj_if_complex(y), axis) / conj_if_complex(xa)
        else:
            before, first, y_skip = _zero_structure(xa, axis)
            safe = conj_if_complex(np.where(before, xa, 1))
            g_before = _reverse_cumsum(ȳ * conj_if_complex(y), axis) / safe
            g_first = _reverse_cumsum(ȳ * conj_if_complex(y_skip), axis)
            dx = np.where(before, g_before, np.where(first, g_first, 0))
        return (NoTangent(), project(x, dx.reshape(np.shape(x))), *rest)

    return Ω, cumprod_pullback


def cumprod_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.cumprod``: ẏ_k = Σ_{i≤k} ẋ_i Π_{j≤k, j≠i} x_j."""
    n = len(args) // 2
    ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
    opts = bind_options(np.cumprod, _CUM_ARGS, extra, kwargs)
    Ω = np.cumprod(x, *extra, **kwargs)
    if is_zero(ẋ):
        return Ω, ZeroTangent()
    xa, axis = _along(x, opts.get("axis"))
    ẋa = np.broadcast_to(ẋ, np.shape(x)).reshape(xa.shape)
    y = asarray(Ω).reshape(xa.shape)
    if not np.any(xa == 0):
        dΩ = y * np.cumsum(ẋa / xa, axis=axis)
    else:
        # Up to the first zero as without zeros; from it on only the zero's own term survives.
        before, first, y_skip = _zero_structure(xa, axis)
        safe = np.where(before, xa, 1)
        head = y * np.cumsum(np.where(before, ẋa, 0) / safe, axis=axis)
        ẋ_zero = np.sum(np.where(first, ẋa, 0), axis=axis, keepdims=True)
        dΩ = np.where(before, head, ẋ_zero * y_skip)
    return Ω, project(Ω, dΩ.reshape(np.shape(Ω)))


for _f, _r, _fr in (
    (np.cumsum, cumsum_rrule, cumsum_frule),
    (np.ndarray.cumsum, cumsum_rrule, cumsum_frule),
    (np.cumprod, cumprod_rrule, cumprod_frule),
    (np.ndarray.cumprod, cumprod_rrule, cumprod_frule),
):
    rrule.register(_f)(_r)
    frule.register(_f)(_fr)
