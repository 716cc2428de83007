"""Rules for numpy's differences and integrals: ``diff``, ``ediff1d``, ``gradient``,
``trapezoid``.

All are linear in the data; the other positional arguments that carry values
get cotangents too (keyword arguments get no derivative, the ChainRules
convention): ``diff``'s ``prepend``/``append``, ``ediff1d``'s
``to_end``/``to_begin``, ``gradient``'s spacings (a scalar step or an array of
coordinates per axis) and ``trapezoid``'s ``x`` and ``dx``.

``gradient`` is written with divided differences ``m = Δf/Δx`` (interior:
``(Δx₊·m₋ + Δx₋·m₊)/(Δx₋ + Δx₊)``, the slope of the parabola through three
points; the edges of order 1 and 2 likewise), which gives its derivative in the
coordinates as well as in ``f``. Interpolation and convolution are in
:mod:`rules._numpy_signal`.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.diff, np.array([1.0, 4.0, 9.0]))
>>> y, pb(np.array([1.0, 1.0]))[1]   # Σ diff telescopes to x[-1] - x[0]
(array([3., 5.]), array([-1.,  0.,  1.]))
>>> y, pb = rrule(np.gradient, np.array([0.0, 1.0, 4.0]), 0.5)
>>> y, pb(np.ones(3))[2]   # the step's cotangent: Σ ∂y/∂h = -Σ y / h
(array([2., 4., 6.]), -24.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import entries
from ._numpy_elementwise import conj_if_complex
from ._numpy_reductions import bind_options
from ._numpy_statistics import argument, split_tangents
from ._util import asarray, is_zero, project, unbroadcast

__all__ = ["dense_tangent", "optional_tangent"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def _diff_adjoint(g: Any, axis: int) -> np.ndarray:
    """The transpose of one ``np.diff`` along ``axis``: ``x̄_j = ȳ_{j-1} - ȳ_j``."""
    return np.diff(np.negative(g), axis=axis, prepend=0, append=0)


def optional_tangent(tangents: tuple, i: int) -> Any:
    """The unthunked tangent of positional argument ``i`` (zero if absent)."""
    return unthunk(tangents[i]) if i < len(tangents) else _ZERO


def dense_tangent(t: Any, shape: tuple) -> np.ndarray:
    """The tangent ``t`` as an array of ``shape`` (zeros for a zero tangent)."""
    return np.zeros(shape) if is_zero(t) else np.broadcast_to(asarray(t), shape)


# --- diff and ediff1d -------------------------------------------------------------------

_DIFF_ARGS = ("n", "axis", "prepend", "append")


def _diff_layout(a: Any, opts: dict) -> tuple:
    """The axis, and the extents of prepend, a and append along it in numpy's
    concatenation (0 where absent)."""
    A = np.asanyarray(a)
    axis = normalize_axis_index(opts.get("axis", -1), A.ndim)
    sizes = []
    for name in ("prepend", "append"):
        v = opts.get(name, np._NoValue)
        sizes.append(0 if v is np._NoValue else 1 if np.ndim(v) == 0 else np.shape(v)[axis])
    return axis, sizes[0], A.shape[axis], sizes[1]


def _piece_shape(shape: tuple, axis: int, size: int) -> tuple:
    return shape[:axis] + (size,) + shape[axis + 1 :]


def diff_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.diff``: ``n`` transposed differences, split between ``prepend``,
    ``a`` and ``append``."""
    opts = bind_options(np.diff, _DIFF_ARGS, args, kwargs)
    Ω = np.diff(a, *args, **kwargs)
    n = opts.get("n", 1)

    def diff_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        rest: list = [_NO] * len(args)
        slots = [i for i in (2, 3) if i < len(args) and n != 0]
        if is_zero(ȳ):
            for i in slots:
                rest[i] = _ZERO
            return (_NO, _ZERO, *rest)
        if n == 0:  # numpy returns a itself and ignores prepend/append
            return (_NO, project(a, ȳ), *rest)
        axis, pre, mid, _ = _diff_layout(a, opts)
        g = asarray(ȳ)
        for _ in range(n):
            g = _diff_adjoint(g, axis)
        parts = np.split(g, [pre, pre + mid], axis=axis)
        for i, part in zip((2, 3), (parts[0], parts[2])):
            if i in slots:
                rest[i] = unbroadcast(args[i], part)
        return (_NO, project(a, parts[1]), *rest)

    return Ω, diff_pullback


def diff_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.diff``: the differences of the tangents."""
    tangents, (a, *extra) = split_tangents(args)
    opts = bind_options(np.diff, _DIFF_ARGS, tuple(extra), kwargs)
    Ω = np.diff(a, *extra, **kwargs)
    ȧ, ṗ, q̇ = (
        optional_tangent(tangents, 0),
        optional_tangent(tangents, 3),
        optional_tangent(tangents, 4),
    )
    if is_zero(ȧ) and is_zero(ṗ) and is_zero(q̇):
        return Ω, _ZERO
    n = opts.get("n", 1)
    if n == 0:
        return Ω, project(Ω, dense_tangent(ȧ, np.shape(a)))
    axis, pre, mid, post = _diff_layout(a, opts)
    shape = np.shape(a)
    pieces = [
        dense_tangent(t, _piece_shape(shape, axis, k)) for t, k in ((ṗ, pre), (ȧ, mid), (q̇, post))
    ]
    return Ω, project(Ω, np.diff(np.concatenate(pieces, axis=axis), n=n, axis=axis))


rrule.register(np.diff)(diff_rrule)
frule.register(np.diff)(diff_frule)


_EDIFF1D_ARGS = ("to_end", "to_begin")


def ediff1d_rrule(ary: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.ediff1d``: ``concatenate(to_begin, diff(ary.ravel()), to_end)``."""
    opts = bind_options(np.ediff1d, _EDIFF1D_ARGS, args, kwargs)
    Ω = np.ediff1d(ary, *args, **kwargs)

    def ediff1d_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        rest: list = [_NO] * len(args)
        slots = [i for i in (0, 1) if i < len(args) and args[i] is not None]
        if is_zero(ȳ):
            for i in slots:
                rest[i] = _ZERO
            return (_NO, _ZERO, *rest)
        g = asarray(ȳ)
        nb = np.size(opts["to_begin"]) if opts.get("to_begin") is not None else 0
        ne = np.size(opts["to_end"]) if opts.get("to_end") is not None else 0
        mid = g[nb : g.size - ne]
        da = _diff_adjoint(mid, 0) if np.size(ary) else np.zeros(0)
        for i, part in ((0, g[g.size - ne :]), (1, g[:nb])):
            if i in slots:
                rest[i] = project(args[i], np.reshape(part, np.shape(args[i])))
        return (_NO, project(ary, np.reshape(da, np.shape(ary))), *rest)

    return Ω, ediff1d_pullback


def ediff1d_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.ediff1d``."""
    tangents, (ary, *extra) = split_tangents(args)
    opts = bind_options(np.ediff1d, _EDIFF1D_ARGS, tuple(extra), kwargs)
    Ω = np.ediff1d(ary, *extra, **kwargs)
    ȧ, ė, ḃ = (
        optional_tangent(tangents, 0),
        optional_tangent(tangents, 1),
        optional_tangent(tangents, 2),
    )
    if is_zero(ȧ) and is_zero(ė) and is_zero(ḃ):
        return Ω, _ZERO
    pieces = []
    if opts.get("to_begin") is not None:
        pieces.append(np.ravel(dense_tangent(ḃ, np.shape(opts["to_begin"]))))
    pieces.append(np.diff(np.ravel(dense_tangent(ȧ, np.shape(ary)))))
    if opts.get("to_end") is not None:
        pieces.append(np.ravel(dense_tangent(ė, np.shape(opts["to_end"]))))
    return Ω, project(Ω, np.concatenate(pieces))


rrule.register(np.ediff1d)(ediff1d_rrule)
frule.register(np.ediff1d)(ediff1d_frule)


# --- gradient ---------------------------------------------------------------------------


def _gradient_axes(f: Any, varargs: tuple, kwargs: dict) -> tuple:
    """The axes differentiated along and, for each, ``(index into varargs or None,
    is_scalar)`` telling where its spacing comes from."""
    F = np.asanyarray(f)
    axis = kwargs.get("axis")
    axes = tuple(range(F.ndim)) if axis is None else normalize_axis_tuple(axis, F.ndim)
    if not varargs:
        return axes, [(None, True)] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return axes, [(0, True)] * len(axes)
    return axes, [(i, np.ndim(v) == 0) for i, v in enumerate(varargs)]


def _coords(varargs: tuple, source: tuple, n: int) -> np.ndarray:
    i, scalar = source
    if i is None:
        return np.arange(n, dtype=np.float64)
    if scalar:
        return float(varargs[i]) * np.arange(n, dtype=np.float64)
    return asarray(varargs[i], dtype=np.float64)


def _slopes(F: np.ndarray, x: np.ndarray) -> tuple:
    """Spacings ``h`` and divided differences ``m = ΔF/h`` along the last axis."""
    h = np.diff(x)
    return h, np.diff(F, axis=-1) / h


def _gradient_value(m: np.ndarray, h: np.ndarray, edge_order: int) -> np.ndarray:
    """The gradient along the last axis from ``m`` and ``h`` (numpy's formulas)."""
    s, d = h[:-1], h[1:]
    mid = (d * m[..., :-1] + s * m[..., 1:]) / (s + d)
    if edge_order == 1:
        first, last = m[..., :1], m[..., -1:]
    else:
        r0, r1 = h[0] / (h[0] + h[1]), h[-1] / (h[-2] + h[-1])
        first = m[..., :1] - r0 * (m[..., 1:2] - m[..., :1])
        last = m[..., -1:] + r1 * (m[..., -1:] - m[..., -2:-1])
    return np.concatenate([first, mid, last], axis=-1)


def _gradient_pushforward(
    F: np.ndarray, x: np.ndarray, Ḟ: Any, ẋ: Any, edge_order: int
) -> np.ndarray:
    h, m = _slopes(F, x)
    ḣ = np.zeros_like(h) if ẋ is None else np.diff(ẋ)
    ṁ = (np.diff(Ḟ, axis=-1) - m * ḣ) / h
    out = _gradient_value(m, h, edge_order)
    s, d, ṡ, ḋ = h[:-1], h[1:], ḣ[:-1], ḣ[1:]
    mid = (ḋ * m[..., :-1] + d * ṁ[..., :-1] + ṡ * m[..., 1:] + s * ṁ[..., 1:]) / (s + d)
    mid = mid - out[..., 1:-1] * ((ṡ + ḋ) / (s + d))
    if edge_order == 1:
        first, last = ṁ[..., :1], ṁ[..., -1:]
    else:
        w0, w1 = h[0] + h[1], h[-2] + h[-1]
        r0, r1 = h[0] / w0, h[-1] / w1
        ṙ0 = (ḣ[0] * h[1] - h[0] * ḣ[1]) / w0**2
        ṙ1 = (ḣ[-1] * h[-2] - h[-1] * ḣ[-2]) / w1**2
        first = ṁ[..., :1] - ṙ0 * (m[..., 1:2] - m[..., :1]) - r0 * (ṁ[..., 1:2] - ṁ[..., :1])
        last = ṁ[..., -1:] + ṙ1 * (m[..., -1:] - m[..., -2:-1]) + r1 * (ṁ[..., -1:] - ṁ[..., -2:-1])
    return np.concatenate([first, mid, last], axis=-1)


def _gradient_pullback(F: np.ndarray, x: np.ndarray, ō: Any, edge_order: int) -> tuple:
    """Cotangents of ``F`` and of the coordinates ``x`` (along the last axis)."""
    h, m = _slopes(F, x)
    out = _gradient_value(m, h, edge_order)
    batch = tuple(range(F.ndim - 1))

    def real_sum(t: Any) -> Any:  # Σ over the batch of Re(conj(ō)·∂): a real cotangent
        return np.sum(np.real(t), axis=batch)

    m̄ = np.zeros(m.shape, np.result_type(ō, m))
    h̄ = np.zeros(h.shape)
    s, d = h[:-1], h[1:]
    w = s + d
    ō_mid = ō[..., 1:-1]
    m̄[..., :-1] += ō_mid * (d / w)
    m̄[..., 1:] += ō_mid * (s / w)
    h̄[1:] += real_sum(ō_mid * np.conj(m[..., :-1] - out[..., 1:-1])) / w
    h̄[:-1] += real_sum(ō_mid * np.conj(m[..., 1:] - out[..., 1:-1])) / w
    ō0, ōl = ō[..., 0], ō[..., -1]
    if edge_order == 1:
        m̄[..., 0] += ō0
        m̄[..., -1] += ōl
    else:
        w0, w1 = h[0] + h[1], h[-2] + h[-1]
        r0, r1 = h[0] / w0, h[-1] / w1
        m̄[..., 0] += (1 + r0) * ō0
        m̄[..., 1] -= r0 * ō0
        m̄[..., -1] += (1 + r1) * ōl
        m̄[..., -2] -= r1 * ōl
        r̄0 = -real_sum(ō0 * np.conj(m[..., 1] - m[..., 0]))
        r̄1 = real_sum(ōl * np.conj(m[..., -1] - m[..., -2]))
        h̄[0] += r̄0 * h[1] / w0**2
        h̄[1] -= r̄0 * h[0] / w0**2
        h̄[-1] += r̄1 * h[-2] / w1**2
        h̄[-2] -= r̄1 * h[-1] / w1**2
    h̄ -= real_sum(m̄ * np.conj(m)) / h
    return _diff_adjoint(m̄ / h, -1), _diff_adjoint(h̄, 0)


def _gradient_outputs(ȳ: Any, n_axes: int) -> list:
    return entries(ȳ, n_axes) if n_axes > 1 else [unthunk(ȳ)]


def gradient_rrule(f: Any, *varargs: Any, **kwargs: Any) -> Any:
    """rrule of ``np.gradient``: differentiable in ``f`` and in the spacings."""
    Ω = np.gradient(f, *varargs, **kwargs)
    edge_order = kwargs.get("edge_order", 1)

    def gradient_pullback(ȳ: Any) -> tuple:
        outs = _gradient_outputs(ȳ, len(Ω) if isinstance(Ω, tuple) else 1)
        dvar: list = [_ZERO] * len(varargs)
        if all(is_zero(o) for o in outs):
            return (_NO, _ZERO, *dvar)
        F = asarray(f)
        F = F if F.dtype.kind in "fc" else F.astype(np.float64)
        df: Any = 0
        axes, sources = _gradient_axes(f, varargs, kwargs)
        for ax, source, o in zip(axes, sources, outs):
            if is_zero(o):
                continue
            n = F.shape[ax]
            x = _coords(varargs, source, n)
            Fm = np.moveaxis(F, ax, -1)
            dF, dx = _gradient_pullback(Fm, x, np.moveaxis(asarray(o), ax, -1), edge_order)
            df = df + np.moveaxis(dF, -1, ax)
            i, scalar = source
            if i is not None:
                dx = np.dot(np.arange(n), dx) if scalar else dx
                dvar[i] = dx if is_zero(dvar[i]) else dvar[i] + dx
        dvar = [t if is_zero(t) else project(v, t) for t, v in zip(dvar, varargs)]
        return (_NO, project(f, df), *dvar)

    return Ω, gradient_pullback


def gradient_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.gradient``."""
    tangents, (f, *varargs) = split_tangents(args)
    Ω = np.gradient(f, *varargs, **kwargs)
    Ḟ = optional_tangent(tangents, 0)
    v̇ = [optional_tangent(tangents, 1 + i) for i in range(len(varargs))]
    if is_zero(Ḟ) and all(is_zero(t) for t in v̇):
        return Ω, _ZERO
    F = asarray(f)
    F = F if F.dtype.kind in "fc" else F.astype(np.float64)
    Ḟ = dense_tangent(Ḟ, F.shape)
    axes, sources = _gradient_axes(f, tuple(varargs), kwargs)
    outs = []
    for ax, (i, scalar) in zip(axes, sources):
        n = F.shape[ax]
        x = _coords(tuple(varargs), (i, scalar), n)
        ẋ = None
        if i is not None and not is_zero(v̇[i]):
            ẋ = float(np.real(v̇[i])) * np.arange(n) if scalar else asarray(v̇[i], float)
        o = _gradient_pushforward(
            np.moveaxis(F, ax, -1), x, np.moveaxis(Ḟ, ax, -1), ẋ, kwargs.get("edge_order", 1)
        )
        outs.append(np.moveaxis(o, -1, ax))
    if not isinstance(Ω, tuple):
        return Ω, project(Ω, outs[0])
    return Ω, Tangent[tuple](*(project(y, o) for y, o in zip(Ω, outs)))


rrule.register(np.gradient)(gradient_rrule)
frule.register(np.gradient)(gradient_frule)


# --- trapezoid --------------------------------------------------------------------------

_TRAPEZOID_ARGS = ("x", "dx", "axis")


def _trapezoid_steps(y: np.ndarray, x: Any, dx: Any, axis: Any) -> tuple:
    """The axis and the steps ``d`` as numpy.trapezoid lays them out (broadcastable)."""
    axis = normalize_axis_index(axis, y.ndim)
    if x is None:
        return axis, asarray(dx)
    x = np.asanyarray(x)
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[axis] = x.shape[0] - 1
        return axis, np.reshape(np.diff(x), shape)
    return axis, np.diff(x, axis=axis)


def _pad_axis(t: np.ndarray, axis: int, widths: tuple) -> np.ndarray:
    pad = [(0, 0)] * t.ndim
    pad[axis] = widths
    return np.pad(t, pad)


def _pair_sums(y: np.ndarray, axis: int) -> np.ndarray:
    """``(y[i] + y[i+1]) / 2`` along ``axis``."""
    n = y.shape[axis]
    return (np.take(y, range(1, n), axis) + np.take(y, range(n - 1), axis)) / 2


def _trapezoid_args(args: tuple, kwargs: dict) -> tuple:
    bind_options(np.trapezoid, _TRAPEZOID_ARGS, args, kwargs)  # validates the call
    x = argument(args, kwargs, 0, "x")
    return x, argument(args, kwargs, 1, "dx", 1.0), argument(args, kwargs, 2, "axis", -1)


def trapezoid_rrule(y: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.trapezoid``: ``Σ d·(y[i] + y[i+1])/2``, in ``y``, ``x`` and ``dx``."""
    x, dx, axis = _trapezoid_args(args, kwargs)
    Ω = np.trapezoid(y, *args, **kwargs)
    x_slot = len(args) > 0 and args[0] is not None
    dx_slot = len(args) > 1 and args[0] is None

    def trapezoid_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        rest: list = [_NO] * len(args)
        if is_zero(ȳ):
            if x_slot:
                rest[0] = _ZERO
            if dx_slot:
                rest[1] = _ZERO
            return (_NO, _ZERO, *rest)
        Y = np.asanyarray(y)
        ax, d = _trapezoid_steps(Y, x, dx, axis)
        g = np.expand_dims(asarray(ȳ), ax)
        n = Y.shape[ax]
        t = np.broadcast_to(g * conj_if_complex(d) / 2, _piece_shape(Y.shape, ax, n - 1))
        dy = _pad_axis(t, ax, (0, 1)) + _pad_axis(t, ax, (1, 0))
        dd = g * conj_if_complex(_pair_sums(Y, ax))  # the cotangent of the steps d
        if x_slot:
            vector = np.ndim(x) == 1
            dsteps = unbroadcast(d, dd)
            dsteps = _diff_adjoint(
                np.reshape(dsteps, -1) if vector else dsteps, 0 if vector else ax
            )
            rest[0] = project(x, dsteps)
        if dx_slot:
            rest[1] = unbroadcast(dx, dd)
        return (_NO, project(y, dy), *rest)

    return Ω, trapezoid_pullback


def trapezoid_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.trapezoid``."""
    tangents, (y, *extra) = split_tangents(args)
    x, dx, axis = _trapezoid_args(tuple(extra), kwargs)
    Ω = np.trapezoid(y, *extra, **kwargs)
    ẏ, ẋ, ḋ = (
        optional_tangent(tangents, 0),
        optional_tangent(tangents, 1),
        optional_tangent(tangents, 2),
    )
    if x is None:
        ẋ = _ZERO
    else:
        ḋ = _ZERO
    if is_zero(ẏ) and is_zero(ẋ) and is_zero(ḋ):
        return Ω, _ZERO
    Y = np.asanyarray(y)
    ax, d = _trapezoid_steps(Y, x, dx, axis)
    dΩ: Any = 0
    if not is_zero(ẏ):
        dΩ = np.sum(d * _pair_sums(dense_tangent(ẏ, Y.shape), ax), axis=ax)
    ṫ = None if is_zero(ḋ) else ḋ
    if not is_zero(ẋ):
        ṫ = _trapezoid_steps(Y, asarray(ẋ, dtype=np.float64), None, axis)[1]
    if ṫ is not None:
        dΩ = dΩ + np.sum(ṫ * _pair_sums(Y, ax), axis=ax)
    return Ω, project(Ω, dΩ)


rrule.register(np.trapezoid)(trapezoid_rrule)
frule.register(np.trapezoid)(trapezoid_frule)
