"""Rules for numpy functions that lay entries out anew: ``block``, ``rot90``,
``rollaxis``, ``resize``, ``diagflat``, ``broadcast_arrays``.

All of them are linear: each output entry is a copy of one input entry (or a
constant zero, for ``diagflat``). ``rot90``, ``rollaxis`` and ``resize``
(which repeats the input cyclically) are differentiated through the positions
the entries come from (``gather_adjoint``: an entry copied several times gets
the sum of its copies' cotangents); ``block``'s nested lists of arrays and
numbers, like ``np.r_``'s keys, through ``copy_sources``, and the cotangent
has the nesting of the argument. ``diagflat(v, k)``'s cotangent is the ``k``-th
diagonal of the output's; ``broadcast_arrays`` sums each cotangent over the
axes its argument was broadcast along.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.block, [[np.ones((1, 2)), np.zeros((1, 1))]])
>>> y, pb(np.array([[1.0, 2.0, 3.0]]))[1]
(array([[1., 1., 0.]]), [[array([[1., 2.]]), array([[3.]])]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_assembly import _gather, _scatter, copy_sources
from ._numpy_linear import dense, project_nested, register_linear
from ._numpy_shape import gather_adjoint
from ._sequences import seq_entries
from ._util import asarray, is_zero, unbroadcast

__all__: list[str] = []

_NO = NoTangent()
_ZERO = ZeroTangent()

for _f in (np.rot90, np.rollaxis, np.resize):
    register_linear(_f, gather_adjoint(_f), _f.__name__)


def _diagflat_adjoint(ȳ: Any, v: Any, k: int = 0) -> Any:
    return np.diagonal(asarray(ȳ), k).reshape(np.shape(v))


register_linear(np.diagflat, _diagflat_adjoint, "diagflat")


# --- block --------------------------------------------------------------------------------


def _leaves(x: Any) -> list:
    """The arrays and numbers of ``block``'s nested lists, depth first."""
    if type(x) is list:
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _rebuild(x: Any, leaves: Any) -> Any:
    """``x``'s nesting with its leaves replaced, in order, from the iterator ``leaves``."""
    if type(x) is list:
        return [_rebuild(item, leaves) for item in x]
    return next(leaves)


def _leaf_tangents(ẋ: Any, x: Any) -> list:
    ẋ = unthunk(ẋ)
    if type(x) is list:
        if is_zero(ẋ):
            return [ẋ] * len(_leaves(x))
        return [t for e, item in zip(seq_entries(ẋ, len(x)), x) for t in _leaf_tangents(e, item)]
    return [ẋ]


def _block_sources(arrays: Any) -> tuple[np.ndarray, list]:
    leaves = _leaves(arrays)
    shapes = [np.shape(leaf) for leaf in leaves]
    src = copy_sources(lambda parts: np.block(_rebuild(arrays, iter(parts))), shapes)
    return src, leaves


@rrule.register(np.block)
def block_rrule(arrays: Any) -> Any:
    """rrule of ``np.block``: each block gets its part of the cotangent."""
    y = np.block(arrays)

    def block_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO)
        src, leaves = _block_sources(arrays)
        parts = _scatter(src, ȳ, [np.shape(leaf) for leaf in leaves])
        cts = [project_nested(leaf, part) for leaf, part in zip(leaves, parts)]
        return (_NO, _rebuild(arrays, iter(cts)))

    return y, block_pullback


@frule.register(np.block)
def block_frule(ḟ: Any, ȧ: Any, arrays: Any) -> Any:
    """frule of ``np.block``: the blocks' tangents laid out as the blocks are."""
    y = np.block(arrays)
    if is_zero(unthunk(ȧ)):
        return y, _ZERO
    src, leaves = _block_sources(arrays)
    ẏ = _gather(src, _leaf_tangents(ȧ, arrays), leaves, y)
    return y, project_nested(y, ẏ.reshape(y.shape))


# --- broadcast_arrays ------------------------------------------------------------------------


@rrule.register(np.broadcast_arrays)
def broadcast_arrays_rrule(*args: Any, **kw: Any) -> Any:
    """rrule of ``np.broadcast_arrays``: each cotangent summed back to its argument's shape."""
    ys = np.broadcast_arrays(*args, **kw)

    def broadcast_arrays_pullback(ȳ: Any) -> tuple:
        parts = seq_entries(unthunk(ȳ), len(args)) if not is_zero(unthunk(ȳ)) else None
        if parts is None:
            return (_NO, *(_ZERO for _ in args))
        out = []
        for x, p in zip(args, parts):
            p = unthunk(p)
            out.append(p if is_zero(p) else unbroadcast(x, asarray(p)))
        return (_NO, *out)

    return ys, broadcast_arrays_pullback


@frule.register(np.broadcast_arrays)
def broadcast_arrays_frule(ḟ: Any, *rest: Any, **kw: Any) -> Any:
    """frule of ``np.broadcast_arrays``: each tangent broadcast like its argument."""
    n = len(rest) // 2
    ys = np.broadcast_arrays(*rest[n:], **kw)
    ẏs = []
    for ẋ, x, y in zip(rest[:n], rest[n:], ys):
        ẋ = unthunk(ẋ)
        ẏs.append(ẋ if is_zero(ẋ) else np.broadcast_to(dense(ẋ, x), y.shape).copy())
    if all(is_zero(t) for t in ẏs):
        return ys, _ZERO
    return ys, Tangent[tuple](*ẏs)
