"""Rules for ranges and grids: ``linspace``, ``logspace``, ``geomspace``, ``meshgrid``.

``linspace(start, stop, num)`` is ``start + t_k (stop - start)`` with
``t_k = k / div`` (``div = num - 1``, or ``num`` without the endpoint), so
``start`` gets ``Σ_k ȳ_k (1 - t_k)`` and ``stop`` gets ``Σ_k ȳ_k t_k``; both
may be arrays (broadcast together, the samples laid along ``axis``), and
``retstep=True``'s step ``(stop - start) / div`` is differentiable too (with
``num=1`` numpy's step is NaN, a constant: zero tangent). ``logspace`` is
``base ** linspace(...)``, differentiable in ``start``, ``stop`` and
``base``. ``geomspace`` is ``start^(1-t) stop^t`` (numpy's sign and branch
handling is locally constant), so ``∂y/∂start = y (1 - t) / start`` and
``∂y/∂stop = y t / stop``, also for complex and negative endpoints. An
integer ``dtype`` truncates: no derivative. ``num``, ``endpoint``, ``dtype``
and ``axis`` get ``NoTangent()``.

``meshgrid(*xs)`` returns a tuple: output ``i`` repeats ``xs[i]`` along the
other axes, so its cotangent is summed over them (``indexing='xy'`` swaps the
first two axes; ``sparse=True`` repeats nothing). The pullback accepts a
tuple, list or ``Tangent`` with zero entries.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.linspace, 0.0, 1.0, 5)
>>> pb(np.ones(5))
(NoTangent(), 2.5, 2.5, NoTangent())
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from rulescore import AbstractZero, NoTangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import bind, entries
from ._numpy_elementwise import conj_if_complex
from ._numpy_linear import dense, project_nested, sum_to
from ._util import asarray, unbroadcast

__all__ = ["truncated_pullback"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def _truncating(y: Any) -> bool:
    return asarray(y).dtype.kind in "biu"


def truncated_pullback(n: int) -> Any:
    """The pullback of a call with ``n`` arguments whose integer result truncates."""

    def truncated(ȳ: Any) -> tuple:
        return (_NO,) * (n + 1)

    return truncated


def _ramp(num: int, endpoint: bool, ndim: int, axis: int) -> tuple[np.ndarray, int]:
    """``t`` laid along ``axis`` of an ``ndim + 1``-d output, and numpy's divisor."""
    div = num - 1 if endpoint else num
    t = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    axis = normalize_axis_index(axis, ndim + 1)
    return t.reshape((num,) + (1,) * ndim).swapaxes(0, axis) if ndim else t, div


def _ends_shape(start: Any, stop: Any) -> tuple:
    return np.broadcast_shapes(np.shape(start), np.shape(stop))


def _linspace_adjoint(ȳ: Any, start: Any, stop: Any, num: int, endpoint: bool, axis: int):
    """``(start̄, stop̄)`` of ``linspace`` (broadcast shape, before unbroadcasting)."""
    ndim = len(_ends_shape(start, stop))
    t, _ = _ramp(num, endpoint, ndim, axis)
    ȳ = asarray(ȳ)
    axis = normalize_axis_index(axis, ndim + 1)
    to_stop = np.sum(ȳ * t, axis=axis)
    return np.sum(ȳ, axis=axis) - to_stop, to_stop


@rrule.register(np.linspace)
def linspace_rrule(start: Any, stop: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.linspace``, differentiable in ``start`` and ``stop`` (and the step)."""
    o = bind(np.linspace, (start, stop, *rest), kw)
    out = np.linspace(start, stop, *rest, **kw)
    nots = (_NO,) * len(rest)
    if _truncating(out[0] if o["retstep"] else out):
        return out, truncated_pullback(2 + len(rest))
    num, endpoint, axis = o["num"], o["endpoint"], o["axis"]

    def linspace_pullback(ȳ: Any) -> tuple:
        ȳ, step̄ = entries(ȳ, 2) if o["retstep"] else (unthunk(ȳ), _ZERO)
        if isinstance(ȳ, AbstractZero) and isinstance(step̄, AbstractZero):
            return (_NO, _ZERO, _ZERO, *nots)
        shape = _ends_shape(start, stop)
        if isinstance(ȳ, AbstractZero):
            ds = de = np.zeros(shape)
        else:
            ds, de = _linspace_adjoint(ȳ, start, stop, num, endpoint, axis)
        div = num - 1 if endpoint else num
        if not isinstance(step̄, AbstractZero) and div > 0:
            ds, de = ds - asarray(step̄) / div, de + asarray(step̄) / div
        return (_NO, unbroadcast(start, ds), unbroadcast(stop, de), *nots)

    return out, linspace_pullback


@frule.register(np.linspace)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    (ṡ, ė), (start, stop, *rest) = args[:2], args[n:]
    o = bind(np.linspace, (start, stop, *rest), kw)
    out = np.linspace(start, stop, *rest, **kw)
    y = out[0] if o["retstep"] else out
    if _truncating(y):
        return out, _NO
    ṡ, ė = unthunk(ṡ), unthunk(ė)
    if isinstance(ṡ, AbstractZero) and isinstance(ė, AbstractZero):
        return out, _ZERO
    ṡ, ė = dense(ṡ, start), dense(ė, stop)
    ẏ = np.linspace(ṡ, ė, o["num"], o["endpoint"], axis=o["axis"])  # linear in the ends
    ẏ = project_nested(y, ẏ)
    if not o["retstep"]:
        return out, ẏ
    div = o["num"] - 1 if o["endpoint"] else o["num"]
    ṡtep = project_nested(out[1], (ė - ṡ) / div) if div > 0 else _ZERO
    return out, (ẏ, ṡtep)


def _logspace_parts(o: dict) -> tuple:
    """numpy's steps: the ends and base as broadcast, and the exponents."""
    start, stop, base, axis = o["start"], o["stop"], o["base"], o["axis"]
    if not isinstance(base, (float, int)) and np.ndim(base):
        ndmax = np.broadcast(start, stop, base).ndim
        start, stop, base = (np.array(a, copy=None, ndmin=ndmax) for a in (start, stop, base))
        base = np.expand_dims(base, axis=axis)
    e = np.linspace(start, stop, num=o["num"], endpoint=o["endpoint"], axis=axis)
    return start, stop, base, e


@rrule.register(np.logspace)
def logspace_rrule(start: Any, stop: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.logspace``: ``base ** linspace(start, stop)``, all three differentiable."""
    o = bind(np.logspace, (start, stop, *rest), kw)
    y = np.logspace(start, stop, *rest, **kw)
    nots = [_NO] * len(rest)
    if _truncating(y):
        return y, truncated_pullback(2 + len(rest))
    base_at = 2 if len(rest) > 2 else None  # base passed positionally: rest[2]

    def logspace_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        out = [_NO, _ZERO, _ZERO, *nots]
        if base_at is not None:
            out[3 + base_at] = _ZERO
        if isinstance(ȳ, AbstractZero):
            return tuple(out)
        s, e_, b, e = _logspace_parts(o)
        ȳ = asarray(ȳ)
        ē = ȳ * conj_if_complex(y * np.log(b))
        ds, de = _linspace_adjoint(ē, s, e_, o["num"], o["endpoint"], o["axis"])
        out[1], out[2] = unbroadcast(start, ds), unbroadcast(stop, de)
        if base_at is not None:
            b̄ = sum_to(asarray(ȳ * conj_if_complex(e * b ** (e - 1))), np.shape(b))
            out[3 + base_at] = project_nested(o["base"], b̄.reshape(np.shape(o["base"])))
        return tuple(out)

    return y, logspace_pullback


@frule.register(np.logspace)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    (ṡ, ė, *ṙest), (start, stop, *rest) = args[:n], args[n:]
    o = bind(np.logspace, (start, stop, *rest), kw)
    y = np.logspace(start, stop, *rest, **kw)
    if _truncating(y):
        return y, _NO
    s, e_, b, e = _logspace_parts(o)
    ṡ, ė = np.reshape(dense(ṡ, start), np.shape(s)), np.reshape(dense(ė, stop), np.shape(e_))
    ẏ = np.linspace(ṡ, ė, o["num"], o["endpoint"], axis=o["axis"]) * y * np.log(b)
    if len(rest) > 2 and not isinstance(unthunk(ṙest[2]), AbstractZero):
        ḃ = np.reshape(dense(ṙest[2], o["base"]), np.shape(b))
        ẏ = ẏ + ḃ * e * b ** (e - 1)
    return y, project_nested(y, ẏ)


def _geomspace_coefficients(o: dict, y: np.ndarray, start: Any, stop: Any) -> tuple:
    """``∂y/∂start`` and ``∂y/∂stop`` entrywise (output-shaped), and the samples' axis.

    ``start`` and ``stop`` are passed as such, not read from ``o``: ``bind`` is
    non-differentiable, so an AD differentiating this rule (second order) would
    take values read from ``o`` as constants."""
    shape = _ends_shape(start, stop)
    ndim = len(shape)
    axis = normalize_axis_index(o["axis"], ndim + 1)
    t, _ = _ramp(o["num"], o["endpoint"], ndim, axis)
    s = np.expand_dims(np.broadcast_to(start, shape), axis)
    e = np.expand_dims(np.broadcast_to(stop, shape), axis)
    return y * (1 - t) / s, y * t / e, axis


@rrule.register(np.geomspace)
def geomspace_rrule(start: Any, stop: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.geomspace``: ``y_k = start^(1-t_k) stop^t_k``."""
    o = bind(np.geomspace, (start, stop, *rest), kw)
    y = np.geomspace(start, stop, *rest, **kw)
    nots = (_NO,) * len(rest)
    if _truncating(y):
        return y, truncated_pullback(2 + len(rest))

    def geomspace_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, _ZERO, *nots)
        cs, ce, axis = _geomspace_coefficients(o, y, start, stop)
        ȳ = asarray(ȳ)
        ds = np.sum(ȳ * conj_if_complex(cs), axis=axis)
        de = np.sum(ȳ * conj_if_complex(ce), axis=axis)
        return (_NO, unbroadcast(start, ds), unbroadcast(stop, de), *nots)

    return y, geomspace_pullback


@frule.register(np.geomspace)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    (ṡ, ė), (start, stop, *rest) = args[:2], args[n:]
    o = bind(np.geomspace, (start, stop, *rest), kw)
    y = np.geomspace(start, stop, *rest, **kw)
    if _truncating(y):
        return y, _NO
    ṡ, ė = unthunk(ṡ), unthunk(ė)
    if isinstance(ṡ, AbstractZero) and isinstance(ė, AbstractZero):
        return y, _ZERO
    cs, ce, axis = _geomspace_coefficients(o, y, start, stop)
    shape = _ends_shape(start, stop)
    ṡ = np.expand_dims(np.broadcast_to(dense(ṡ, start), shape), axis)
    ė = np.expand_dims(np.broadcast_to(dense(ė, stop), shape), axis)
    return y, project_nested(y, cs * ṡ + ce * ė)


def _grid_axis(i: int, n: int, indexing: str) -> int:
    """The output axis along which ``meshgrid``'s ``i``-th input varies."""
    return 1 - i if indexing == "xy" and n > 1 and i < 2 else i


@rrule.register(np.meshgrid)
def meshgrid_rrule(*xs: Any, **kw: Any) -> Any:
    """rrule of ``np.meshgrid``: each input gets its output's cotangent summed over the grid."""
    ys = np.meshgrid(*xs, **kw)
    indexing = kw.get("indexing", "xy")
    n = len(xs)

    def meshgrid_pullback(ȳ: Any) -> tuple:
        out: list = [_NO]
        for i, (x, ȳi) in enumerate(zip(xs, entries(ȳ, n))):
            if isinstance(ȳi, AbstractZero):
                out.append(_ZERO)
                continue
            k = _grid_axis(i, n, indexing)
            others = tuple(a for a in range(n) if a != k)
            dx = np.sum(asarray(ȳi), axis=others).reshape(np.shape(x))
            out.append(project_nested(x, dx))
        return tuple(out)

    return ys, meshgrid_pullback


@frule.register(np.meshgrid)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    ẋs, xs = args[:n], args[n:]
    ys = np.meshgrid(*xs, **kw)
    if all(isinstance(unthunk(t), AbstractZero) for t in ẋs):
        return ys, _ZERO
    kw_copy = dict(kw)  # (no `**` in a dict display: an AD differentiates this body)
    kw_copy["copy"] = True
    ẏs = np.meshgrid(*(np.ravel(dense(t, x)) for t, x in zip(ẋs, xs)), **kw_copy)
    return ys, tuple(project_nested(y, ẏ) for y, ẏ in zip(ys, ẏs))
