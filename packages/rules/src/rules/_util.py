"""Helpers shared by the rule modules: un-broadcasting and zero handling."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from rulescore import AbstractZero, ProjectTo, is_duck_array, non_differentiable, unthunk

__all__ = [
    "REFCOUNTS_CALIBRATED",
    "asarray",
    "finfo",
    "getrefcount",
    "is_zero",
    "project",
    "unbroadcast",
]

_ndarray = np.ndarray

#: Whether reference counts tell the in-place fast paths (here and in ``ad``) that
#: an array has no holder but the one they were calibrated for: CPython 3.11 to
#: 3.13, whose counts they were measured on. On 3.10 a call's arguments stay on
#: the caller's stack as well (the counts are higher, and the paths would never
#: fire); later versions may pass borrowed references, so a count could be lower
#: than the holders it stands for, which would make writing in place unsafe.
#: Elsewhere ``getrefcount`` reads every object as shared: the same values, one
#: allocation more per product.
_CALIBRATED_ON = ((3, 11), (3, 12), (3, 13))
REFCOUNTS_CALIBRATED = (
    sys.implementation.name == "cpython" and sys.version_info[:2] in _CALIBRATED_ON
)


def _shared(obj: Any) -> int:
    """A reference count too high for any in-place path to take ``obj``."""
    return 1 << 30


getrefcount = sys.getrefcount if REFCOUNTS_CALIBRATED else _shared


def finfo(dtype: Any) -> Any:
    """``np.finfo(dtype)``, the machine limits a rule's tolerances use.

    Registered ``non_differentiable``: an AD that differentiates a rule's own body
    (second order) takes the limits as constants rather than failing on numpy's
    ``finfo`` class. Rule bodies call this, not ``np.finfo``.
    """
    return np.finfo(dtype)


non_differentiable(finfo)


def asarray(x: Any, dtype: Any = None) -> Any:
    """``np.asarray(x, dtype)``, except that an array of another library that follows
    numpy's protocols (a dask or CuPy array) stays in its library, uncomputed.

    Rules read their array arguments through this, so that one rule serves them all.

    >>> asarray([1.0, 2.0])
    array([1., 2.])
    """
    if type(x) is _ndarray and dtype is None:
        return x
    if is_duck_array(x):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)
    return np.asarray(x, dtype=dtype)


def is_zero(x: Any) -> bool:
    """True for ``ZeroTangent()``/``NoTangent()`` (test with this, not ``== 0``).

    >>> from rulescore import NoTangent, ZeroTangent
    >>> is_zero(ZeroTangent()), is_zero(NoTangent()), is_zero(0.0)
    (True, True, False)
    """
    return isinstance(x, AbstractZero)


def unbroadcast(x: Any, dx: Any) -> Any:
    """Reduce ``dx`` to the shape of ``x`` (summing broadcast axes), then project.

    ``x`` is the primal argument as the user passed it (Python scalar, numpy
    scalar, 0-d or n-d array, nested list). The result is a valid cotangent
    for ``x``: a Python scalar gets a scalar, float32 stays float32.

    >>> import numpy as np
    >>> unbroadcast(np.ones(3), np.ones((2, 3)))
    array([2., 2., 2.])
    >>> unbroadcast(2.0, np.ones((2, 2)))
    4.0
    """
    if type(dx) is _ndarray and type(x) is _ndarray:
        shape = x.shape
        if dx.shape == shape:
            if dx.dtype == x.dtype:
                return dx  # the common case: nothing to reduce, nothing to project
        elif dx.ndim >= len(shape) and dx.dtype == x.dtype and dx.dtype.kind == "f":
            # A float bias broadcast over leading axes (and size-1 axes): the sum below,
            # without the general path's conversions; projection would return it as is.
            summed = _sum_to(dx, shape)
            if summed.shape == shape:
                return summed
    dx = unthunk(dx)
    if isinstance(dx, AbstractZero):
        return dx
    shape = np.shape(x)
    dshape = np.shape(dx)
    if dshape != shape:
        dx = asarray(dx)
        extra = dx.ndim - len(shape)
        if extra < 0:
            dx = np.broadcast_to(dx, shape)
        else:
            dx = _sum_to(dx, shape)
    return project(x, dx)


def _sum_to(dx: Any, shape: tuple) -> Any:
    extra = dx.ndim - len(shape)
    dshape = dx.shape
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and dshape[i + extra] != 1
    )
    if axes:
        dx = dx.sum(axis=axes, keepdims=True)
    if extra:
        dx = dx.reshape(dx.shape[extra:])
    return dx


def project(x: Any, dx: Any) -> Any:
    """``ProjectTo(x)(dx)``: a list or tuple ``x`` (an array-like numpy argument, as in
    ``np.sum([a, b])``) gets a cotangent of the same nesting, from the rows of ``dx``."""
    if type(dx) is _ndarray and type(x) is _ndarray and dx.shape == x.shape and dx.dtype == x.dtype:
        return dx
    return ProjectTo(x)(dx)
