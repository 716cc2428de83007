"""Run-time support of the fused elementwise regions (``transform.fuse``).

A fused region's primal is plain numpy and its adjoint was derived when the
function was transformed: both are valid only while the rules that the
per-operation path would dispatch to are the built-in ones. ``scalar_paths.FLAGS.fused``
says so; every registration recomputes it (with the other fast paths' flags), so
a user rule (or an ``opt_out``) for ``np.sin`` on arrays turns fusion off and the
per-operation path takes over. ``fused_shape`` is the rest of a region's test: the
operands it computes on and the shape it computes at; ``fused_fit`` and
``fused_full`` give each input's cotangent that input's shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ad.errors import CotangentShapeError
from rules.extension import is_zero, unbroadcast
from rulescore import unthunk

__all__ = [
    "NOVALUE",
    "fused_fit",
    "fused_full",
    "fused_seed",
    "fused_shape",
]

_f64 = np.float64
_f32 = np.float32
_ndarray = np.ndarray
_DT64 = np.dtype(np.float64)
_DT32 = np.dtype(np.float32)
_broadcast_shapes = np.broadcast_shapes
_add_reduce = np.add.reduce
#: ``np.broadcast_shapes`` by its arguments (it makes arrays: microseconds a call)
_BROADCAST: dict[tuple, tuple] = {}
#: ``fused_fit``'s axes to sum, and the shape to give the sum, by the two shapes
_FIT: dict[tuple, tuple] = {}


class _NoValue:
    """What a primal called by ``ad.gradient`` returns for a value it did not compute."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not computed: ad.gradient does not return the value>"


#: The value a fused region skipped: only ``ad.gradient`` asks for that, and sees it.
NOVALUE = _NoValue()


def fused_seed(ct: Any, site: str) -> float:
    """The cotangent ``ct`` of a fused region's ``np.sum``/``np.mean`` as a float.

    A complex cotangent of the real result keeps its real part (its projection);
    a zero is 0.0. Anything that is not one number is an error naming ``site``.
    """
    if type(ct) is _f64:  # the seed of a float64 loss
        return float(ct)
    ct = unthunk(ct)
    if is_zero(ct):
        return 0.0
    if np.ndim(ct) == 0 and isinstance(ct, (int, float, complex, np.number, np.ndarray)):
        return float(np.real(ct))
    shape = getattr(ct, "shape", None)
    got = f"an array of shape {shape}" if shape is not None else f"{type(ct).__name__}"
    raise CotangentShapeError(
        f"{site}: the cotangent of this whole-array sum (one number) must be one number, "
        f"got {got}. To fix: pass the pullback a scalar cotangent"
    )


def fused_shape(full: int, *inputs: Any) -> tuple | None:
    """The shape, dtype, mask and size a fused region computes at, and whether all
    its operands are arrays of that shape; or None (the region's members then run
    the per-operation path).

    ``inputs`` are the region's operands: float64 (or all float32) arrays, Python
    floats, and numpy scalars of the arrays' dtype (numpy computes those in the
    arrays' dtype, NEP 50). Their shapes must broadcast to a shape of at least one
    dimension (on 0-d operands numpy's operations return numbers, not arrays): the
    region computes at that shape ``S``. Bit ``i`` of the mask is set when
    ``inputs[i]`` is an array of shape ``S``: a member computed from such an input
    has shape ``S`` itself, and only then may its buffer take another member's
    result. The first ``full`` inputs must have shape ``S`` (the slices a region
    scatters its cotangents into, and the arrays they are views of).

    >>> import numpy as np
    >>> fused_shape(0, np.ones((2, 3)), np.ones(3), 2.0)
    ((2, 3), dtype('float64'), 1, 6, False)
    >>> fused_shape(0, np.ones((2, 1)), np.ones((1, 3)))
    ((2, 3), dtype('float64'), 0, 6, False)
    >>> fused_shape(0, np.ones((2, 3)), np.ones((2, 3)))
    ((2, 3), dtype('float64'), 3, 6, True)
    >>> fused_shape(0, np.ones(3), np.ones(3, np.float32)) is None   # two dtypes
    True
    >>> fused_shape(1, np.ones(3), np.ones((2, 3))) is None   # the first must be full
    True
    """
    first = inputs[0]
    if type(first) is _ndarray:  # the common case first: arrays of one shape and dtype
        dtype, shape = first.dtype, first.shape
        if (dtype is _DT64 or dtype is _DT32) and shape:
            for a in inputs:
                if type(a) is not _ndarray or a.dtype is not dtype or a.shape != shape:
                    break
            else:
                return shape, dtype, (1 << len(inputs)) - 1, first.size, True
    dtype = shape = None
    same = True
    for a in inputs:
        t = type(a)
        if t is _ndarray:
            d = a.dtype
            if dtype is None:
                if d is not _DT64 and d is not _DT32:
                    return None
                dtype, shape = d, a.shape
            elif d is not dtype:
                return None
            elif same and a.shape != shape:
                same = False
        elif t is not float and t is not _f64 and t is not _f32:
            return None
    if dtype is None:
        return None
    if not same:
        shapes = tuple([a.shape for a in inputs if type(a) is _ndarray])
        shape = _BROADCAST.get(shapes)
        if shape is None:
            try:
                shape = _broadcast_shapes(*shapes)
            except ValueError:  # the per-operation path raises numpy's error, on its line
                return None
            if len(_BROADCAST) > 4096:
                _BROADCAST.clear()
            _BROADCAST[shapes] = shape
    if not shape:
        return None
    mask = 0
    size = 1
    for i, a in enumerate(inputs):
        t = type(a)
        if t is not _ndarray:
            if t is not float and a.dtype is not dtype:  # a numpy scalar of another type
                return None
        elif a.shape == shape:
            mask |= 1 << i
    if mask & ((1 << full) - 1) != (1 << full) - 1:
        return None
    for n in shape:
        size *= n
    return shape, dtype, mask, size, mask == (1 << len(inputs)) - 1


def fused_fit(x: Any, dx: Any) -> Any:
    """Input ``x``'s cotangent from ``dx``, the region's (an array of the region's
    shape): the axes ``x`` was broadcast along summed, as the per-operation rules
    do (``rules.extension.unbroadcast``: ``np.add.reduce`` over those axes), without
    their general path's conversions.

    >>> import numpy as np
    >>> fused_fit(np.ones((1, 3)), np.ones((2, 2, 3)))
    array([[4., 4., 4.]])
    >>> fused_fit(2.0, np.ones((2, 3)))
    6.0
    """
    if type(x) is _ndarray and type(dx) is _ndarray:
        key = (x.shape, dx.shape)
        plan = _FIT.get(key)
        if plan is None:
            shape = x.shape
            extra = dx.ndim - len(shape)
            if extra < 0:  # pragma: no cover - a region's shape holds each input's
                return unbroadcast(x, dx)
            axes = tuple(range(extra)) + tuple(
                i + extra for i, n in enumerate(shape) if n == 1 and dx.shape[i + extra] != 1
            )
            if len(_FIT) > 4096:
                _FIT.clear()
            plan = _FIT[key] = (axes, shape if extra else None)
        axes, reshape = plan
        if axes:
            dx = _add_reduce(dx, axes, keepdims=True)
        return dx if reshape is None else dx.reshape(reshape)
    if type(x) is float and type(dx) is _ndarray:
        return float(_add_reduce(dx, None))
    return unbroadcast(x, dx)


def fused_full(x: Any, c: Any, shape: tuple, size: int, dtype: Any) -> Any:
    """The cotangent of input ``x`` when each of the region's ``size`` elements (of
    ``shape``) contributes ``c`` to it: ``c`` times the number of elements ``x`` was
    broadcast to, in ``x``'s shape (a number for a number; None: ``x`` has ``shape``).

    >>> import numpy as np
    >>> fused_full(np.ones((1, 3)), 0.5, (2, 3), 6, np.dtype(np.float64))
    array([[1., 1., 1.]])
    >>> fused_full(2.0, 0.5, (2, 3), 6, np.dtype(np.float64))
    3.0
    """
    if x is None:
        return np.full(shape, c, dtype=dtype)
    if type(x) is _ndarray:
        n = x.size
        return np.full(x.shape, c * (size // n) if n else 0.0, dtype=dtype)
    return unbroadcast(x, dtype.type(c * size))
