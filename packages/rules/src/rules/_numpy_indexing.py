"""Rules for selecting entries of arrays: ``x[key]``, take, sort, diagonals, triangles.

``operator.getitem(x, key)`` on an ndarray covers basic indexing (ints, slices,
``...``, ``None``) and advanced indexing (integer arrays, lists, boolean masks,
mixed). The cotangent is scattered back into zeros shaped like ``x``; integer
arrays may repeat an index, so their cotangents are accumulated
(``np.add.at``), never overwritten. The key gets ``NoTangent()``.

``np.sort`` routes cotangents through a stable ``argsort``, so tied values
each get their own output's cotangent.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    DuckArray,
    InplaceableThunk,
    NoTangent,
    ProjectTo,
    Thunk,
    ZeroTangent,
    frule,
    is_duck_array,
    rrule,
    unthunk,
)

from . import functional
from ._numpy_linear import (
    apply_adjoint,
    dense,
    project_nested,
    register_linear,
    scatter_zeros,
    sum_to,
)
from ._util import asarray

_NO = NoTangent()
_ZERO = ZeroTangent()
_BASIC = (int, np.integer, slice, type(None), type(Ellipsis), bool, np.bool_)


def _repeats_possible(key: Any) -> bool:
    """Whether ``key`` may select an entry twice (integer-array indexing)."""
    for k in key if type(key) is tuple else (key,):
        if isinstance(k, _BASIC) or (isinstance(k, np.ndarray) and k.dtype == bool):
            continue
        return True
    return False


def scatter(ȳ: Any, x: Any, key: Any) -> np.ndarray:
    """The adjoint of ``x[key]``: ``ȳ`` scattered into zeros shaped like ``x``
    (entries selected twice add up)."""
    dx = scatter_zeros(x, ȳ)
    if _repeats_possible(key):
        np.add.at(dx, key, ȳ)
    else:
        if is_duck_array(dx):  # dask assigns through no np.newaxis: drop those axes
            key, ȳ = _without_newaxes(key, ȳ, dx.ndim)
        dx[key] = ȳ
    return dx


def _without_newaxes(key: Any, ȳ: Any, ndim: int) -> tuple:
    """``(key', ȳ')`` with ``x[key'] = ȳ'`` the same assignment as ``x[key] = ȳ``
    and no ``None`` in ``key'`` (``ȳ``'s size-1 axes that they made squeezed out)."""
    key = key if type(key) is tuple else (key,)
    if None not in key:
        return key, ȳ
    if Ellipsis in key:
        i = key.index(Ellipsis)
        fill = ndim - sum(k is not None for k in key if k is not Ellipsis)
        key = key[:i] + (slice(None),) * fill + key[i + 1 :]
    out_axis, newaxes = 0, []
    for k in key:
        if k is None:
            newaxes.append(out_axis)
        if not isinstance(k, (int, np.integer)):  # an int removes its axis
            out_axis += 1
    return tuple(k for k in key if k is not None), np.squeeze(ȳ, axis=tuple(newaxes))


@rrule.register(operator.getitem)
def getitem_rrule(x: DuckArray, key: Any) -> Any:
    y = x[key]

    def getitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _NO
        repeats = _repeats_possible(key)

        def dense() -> Any:
            return ProjectTo(x)(apply_adjoint(scatter, operator.getitem, False, ȳ, x, (key,), {}))

        def add_into(acc: Any) -> Any:
            # Accumulate into an existing cotangent of x without a dense zeros array.
            part = ȳ.real if acc.dtype.kind != "c" and np.iscomplexobj(ȳ) else ȳ
            if repeats:
                np.add.at(acc, key, part)
            else:
                acc[key] += part
            return acc

        return _NO, InplaceableThunk(add_into, Thunk(dense)), _NO

    return y, getitem_pullback


@frule.register(operator.getitem)
def _(ḟ: Any, ẋ: Any, k̇: Any, x: DuckArray, key: Any) -> Any:
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return x[key], _ZERO
    return x[key], dense(ẋ, x)[key]


def _take_adjoint(ȳ: Any, x: Any, indices: Any, axis: Any = None, *rest: Any, **kw: Any) -> Any:
    mode = kw.get("mode", rest[1] if len(rest) > 1 else "raise")
    dx = scatter_zeros(x, ȳ)
    flat = dx.reshape(-1) if axis is None else np.moveaxis(dx, axis, 0)
    n = flat.shape[0]
    indices = asarray(indices)
    if mode == "wrap":
        indices = indices % n
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    ȳ = asarray(ȳ)
    if axis is not None:
        axis %= dx.ndim
        k = indices.ndim
        ȳ = np.moveaxis(ȳ, list(range(axis, axis + k)), list(range(k)))
    np.add.at(flat, indices, ȳ)
    return dx


def _take_along_axis_adjoint(ȳ: Any, x: Any, indices: Any, axis: Any = -1) -> Any:
    dx = scatter_zeros(x, ȳ)
    target = dx.reshape(-1) if axis is None else dx
    indices = asarray(indices)
    if axis is None:
        np.add.at(target, indices, ȳ)
        return dx
    axis %= dx.ndim
    shape = np.broadcast_shapes(indices.shape, (*dx.shape[:axis], 1, *dx.shape[axis + 1 :]))
    where = list(np.indices(shape, sparse=True))
    where[axis] = indices
    np.add.at(target, tuple(where), np.broadcast_to(ȳ, shape))
    return dx


def _diagonal_positions(n1: int, n2: int, offset: int) -> tuple:
    """Row and column indices of the ``offset`` diagonal of an ``n1 × n2`` matrix."""
    if offset >= 0:
        rows = np.arange(max(0, min(n1, n2 - offset)))
        return rows, rows + offset
    cols = np.arange(max(0, min(n1 + offset, n2)))
    return cols - offset, cols


def _diagonal_adjoint(
    ȳ: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, *, keep: bool = True
) -> Any:
    dx = scatter_zeros(x, ȳ)
    moved = np.moveaxis(dx, (axis1, axis2), (-2, -1))  # a view: writes reach dx
    rows, cols = _diagonal_positions(moved.shape[-2], moved.shape[-1], offset)
    moved[..., rows, cols] = ȳ if keep else asarray(ȳ)[..., None]
    return dx


def _trace_adjoint(
    ȳ: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, *rest: Any, **kw: Any
) -> Any:
    return _diagonal_adjoint(ȳ, x, offset, axis1, axis2, keep=False)


def _diag_adjoint(ȳ: Any, x: Any, k: int = 0) -> Any:
    if np.ndim(x) == 1:
        return np.diagonal(ȳ, k).copy()
    return _diagonal_adjoint(ȳ, x, k)


def _triangle_adjoint(triangle: Any) -> Any:
    def adjoint(ȳ: Any, x: Any, k: int = 0) -> Any:
        return sum_to(triangle(ȳ, k), np.shape(x))  # a vector x was broadcast to rows

    return adjoint


_LINEAR = [
    (np.take, _take_adjoint),
    (np.take_along_axis, _take_along_axis_adjoint),
    (np.diagonal, _diagonal_adjoint),
    (np.trace, _trace_adjoint),
    (np.diag, _diag_adjoint),
    (np.triu, _triangle_adjoint(np.triu)),
    (np.tril, _triangle_adjoint(np.tril)),
]
for _f, _adjoint in _LINEAR:
    register_linear(_f, _adjoint, _f.__name__)


def _sort_permutation(a: np.ndarray, rest: tuple, kw: dict) -> tuple:
    """``(a', perm, axis)``: ``np.sort(a)`` is ``take_along_axis(a', perm, axis)``."""
    axis = kw.get("axis", rest[0] if rest else -1)
    if axis is None:
        a, axis = a.reshape(-1), 0
    return a, np.argsort(a, axis=axis, kind="stable"), axis


@rrule.register(np.sort)
def _(a: Any, *rest: Any, **kw: Any) -> Any:
    x = asarray(a)
    flat, perm, axis = _sort_permutation(x, rest, kw)
    y = np.take_along_axis(flat, perm, axis)
    nots = (_NO,) * len(rest)

    def sort_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, *nots)
        # functional, not np.put_along_axis into dx: the AD differentiates it again
        dx = functional.put_along_axis(scatter_zeros(flat, ȳ), perm, ȳ, axis)
        return (_NO, project_nested(a, dx.reshape(x.shape)), *nots)

    return y, sort_pullback


@frule.register(np.sort)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    a, rest = asarray(args[n]), args[n + 1 :]
    flat, perm, axis = _sort_permutation(a, rest, kw)
    y = np.take_along_axis(flat, perm, axis)
    ẋ = unthunk(args[0])
    if isinstance(ẋ, AbstractZero):
        return y, _ZERO
    return y, np.take_along_axis(dense(ẋ, a).reshape(flat.shape), perm, axis)
