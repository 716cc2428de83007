"""Rules for numpy functions whose output entries are copies of input entries:
``trim_zeros``, ``extract``, ``partition``, ``sort_complex``. (``ndarray.partition``
sorts in place and returns None: it has no rule.)

Each is a gather: the pushforward picks the tangents of the entries copied, the
pullback scatters the output cotangent back to them (zero elsewhere). Which
entries are copied is decided by the primal values and is constant nearby:

* ``trim_zeros``: the slice between the first and last nonzero entries (per
  axis in numpy >= 2.2), found from the primal, never from the tangent; the
  trimmed zeros get zero cotangents (moving one away from zero would lengthen
  the output).
* ``extract(condition, arr)``: the entries where ``condition`` is nonzero;
  ``condition`` gets ``NoTangent()``.
* ``partition(a, kth)``: numpy leaves the order within each side of ``kth``
  unspecified, so the rule pairs each output entry with an input entry of
  equal value by ranking both (stable): tied entries each get one output's
  cotangent, as ``np.sort``'s rule does. ``kth``, ``axis``, ``kind`` get
  ``NoTangent()``.
* ``sort_complex``: a sort along the last axis and a cast to complex; a real
  input gets the real part of its cotangent.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.trim_zeros, np.array([0.0, 2.0, 0.0, 3.0, 0.0]))
>>> y, pb(np.array([1.0, 10.0, 100.0]))[1]
(array([2., 0., 3.]), array([  0.,   1.,  10., 100.,   0.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from . import functional
from ._numpy_linear import dense, project_nested, scatter_zeros
from ._numpy_statistics import split_tangents
from ._util import asarray, is_zero, project

__all__ = []

_NO = NoTangent()
_ZERO = ZeroTangent()


# --- trim_zeros -------------------------------------------------------------------------


def _trim_slices(filt: Any, trim: str = "fb", axis: Any = None) -> tuple:
    """The index ``np.trim_zeros(filt, trim, axis)`` takes of ``filt``."""
    a = asarray(filt)
    axes = range(a.ndim) if axis is None else normalize_axis_tuple(axis, a.ndim)
    nonzero = np.argwhere(a)
    if nonzero.size == 0:
        start = stop = [0] * a.ndim
    else:
        start = nonzero.min(axis=0) if "f" in trim.lower() else [None] * a.ndim
        stop = nonzero.max(axis=0) + 1 if "b" in trim.lower() else [None] * a.ndim
    return tuple(slice(start[d], stop[d]) if d in axes else slice(None) for d in range(a.ndim))


non_differentiable(_trim_slices)


@rrule.register(np.trim_zeros)
def trim_zeros_rrule(filt: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.trim_zeros``: the kept slice's cotangent, zeros for the trimmed."""
    Ω = np.trim_zeros(filt, *args, **kwargs)
    rest = (_NO,) * len(args)

    def trim_zeros_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        dx = scatter_zeros(asarray(filt), dense(ȳ, Ω))
        dx[_trim_slices(filt, *args, **kwargs)] = dense(ȳ, Ω)
        return (_NO, project_nested(filt, dx), *rest)

    return Ω, trim_zeros_pullback


@frule.register(np.trim_zeros)
def trim_zeros_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.trim_zeros``: the tangent over the slice the primal keeps."""
    (ẋ, *_), (filt, *extra) = split_tangents(args)
    Ω = np.trim_zeros(filt, *extra, **kwargs)
    ẋ = unthunk(ẋ)
    if is_zero(ẋ):
        return Ω, _ZERO
    ẏ = np.broadcast_to(dense(ẋ, filt), np.shape(filt))[_trim_slices(filt, *extra, **kwargs)]
    return Ω, ẏ if type(Ω) is np.ndarray else project_nested(Ω, ẏ)


# --- extract ----------------------------------------------------------------------------


def _extracted(condition: Any) -> np.ndarray:
    """The flat positions ``np.extract(condition, arr)`` takes."""
    return np.flatnonzero(np.ravel(condition))


non_differentiable(_extracted)


@rrule.register(np.extract)
def extract_rrule(condition: Any, arr: Any) -> Any:
    """rrule of ``np.extract``: ȳ scattered to the extracted entries."""
    Ω = np.extract(condition, arr)

    def extract_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _NO, _ZERO)
        flat = scatter_zeros(np.ravel(arr), ȳ)
        flat[_extracted(condition)] = ȳ
        return (_NO, _NO, project_nested(arr, flat.reshape(np.shape(arr))))

    return Ω, extract_pullback


@frule.register(np.extract)
def extract_frule(ḟ: Any, ċ: Any, ȧ: Any, condition: Any, arr: Any) -> Any:
    """frule of ``np.extract``: the extracted entries of the tangent."""
    Ω = np.extract(condition, arr)
    ȧ = unthunk(ȧ)
    if is_zero(ȧ):
        return Ω, _ZERO
    return Ω, project(
        Ω, np.ravel(np.broadcast_to(dense(ȧ, arr), np.shape(arr)))[_extracted(condition)]
    )


# --- partition, sort_complex ------------------------------------------------------------

_PARTITION_ARGS = ("kth", "axis", "kind", "order")


def _source(a: np.ndarray, Ω: np.ndarray, axis: int) -> np.ndarray:
    """Indices ``s`` along ``axis`` with ``take_along_axis(a, s) == Ω``, pairing equal
    values by their stable rank (``Ω`` is a permutation of ``a`` along ``axis``)."""
    by_value = np.argsort(a, axis=axis, kind="stable")
    rank = np.argsort(np.argsort(Ω, axis=axis, kind="stable"), axis=axis, kind="stable")
    return np.take_along_axis(by_value, rank, axis)


non_differentiable(_source)


def _partition_axis(a: np.ndarray, args: tuple, kwargs: dict) -> tuple:
    """``a`` (flattened for ``axis=None``) and the axis the partition runs along."""
    axis = args[1] if len(args) > 1 else kwargs.get("axis", -1)
    if axis is None:
        return a.reshape(-1), 0
    return a, normalize_axis_index(axis, a.ndim)


@rrule.register(np.partition)
def partition_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.partition``: each output entry's cotangent to its source entry."""
    Ω = np.partition(a, *args, **kwargs)
    rest = (_NO,) * len(args)

    def partition_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        flat, axis = _partition_axis(asarray(a), args, kwargs)
        src = _source(flat, Ω, axis)
        dx = functional.put_along_axis(scatter_zeros(flat, ȳ), src, dense(ȳ, Ω), axis)
        return (_NO, project_nested(a, dx.reshape(np.shape(a))), *rest)

    return Ω, partition_pullback


@frule.register(np.partition)
def partition_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.partition``: the tangents of the source entries, in output order."""
    (ȧ, *_), (a, *extra) = split_tangents(args)
    Ω = np.partition(a, *extra, **kwargs)
    ȧ = unthunk(ȧ)
    if is_zero(ȧ):
        return Ω, _ZERO
    flat, axis = _partition_axis(asarray(a), tuple(extra), kwargs)
    ȧ = np.broadcast_to(dense(ȧ, a), np.shape(a)).reshape(flat.shape)
    return Ω, project(Ω, np.take_along_axis(ȧ, _source(flat, Ω, axis), axis))


@rrule.register(np.sort_complex)
def sort_complex_rrule(a: Any) -> Any:
    """rrule of ``np.sort_complex``: a sort along the last axis, then a cast."""
    Ω = np.sort_complex(a)

    def sort_complex_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO)
        A = asarray(a)
        dx = functional.put_along_axis(scatter_zeros(A, ȳ), _source(A, Ω, -1), dense(ȳ, Ω), -1)
        return (_NO, project_nested(a, dx))

    return Ω, sort_complex_pullback


@frule.register(np.sort_complex)
def sort_complex_frule(ḟ: Any, ȧ: Any, a: Any) -> Any:
    """frule of ``np.sort_complex``: the tangent in sorted order, as complex."""
    Ω = np.sort_complex(a)
    ȧ = unthunk(ȧ)
    if is_zero(ȧ):
        return Ω, _ZERO
    A = asarray(a)
    ȧ = np.broadcast_to(dense(ȧ, a), A.shape)
    return Ω, project(Ω, np.take_along_axis(ȧ, _source(A, Ω, -1), -1))
