"""Rules for building arrays: ``np.array``/``np.asarray`` from nested lists, copies
and the ``*_like`` constructors.

``np.array(x)`` is linear in ``x``: a nested list of scalars or arrays gets a
cotangent list of the same nesting (scalars get scalars, arrays arrays), an
array gets an array. An explicit integer or bool ``dtype`` truncates, so the
argument then gets ``NoTangent()``. ``zeros_like``/``ones_like``/``empty_like``
only read the shape and dtype of their argument: non-differentiable.
``full_like(a, v)`` is differentiable in the fill value ``v`` only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

from ._numpy_linear import dense, project_nested, register_linear, sum_to
from ._util import asarray

_NO = NoTangent()


def _truncating(dtype: Any) -> bool:
    return dtype is not None and np.dtype(dtype).kind in "biu"


def _array_adjoint(ȳ: Any, x: Any, dtype: Any = None, *rest: Any, **kw: Any) -> Any:
    if _truncating(kw.get("dtype", dtype)):
        return _NO
    return _copy_adjoint(ȳ, x)


def _copy_adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> Any:
    ȳ = asarray(ȳ)
    shape = np.shape(x)
    # ndmin= and ascontiguousarray's 1-d promotion of scalars add unit axes.
    return ȳ if ȳ.shape == shape else ȳ.reshape(shape)


# rules._util.asarray is np.asarray that keeps dask and CuPy arrays: rule bodies
# call it, and differentiating one (second order) meets it as np.asarray.
for _f in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray, asarray):
    register_linear(_f, _array_adjoint, _f.__name__)
register_linear(np.copy, _copy_adjoint, "copy")

non_differentiable(np.zeros_like)
non_differentiable(np.ones_like)
non_differentiable(np.empty_like)
# Constructors from shapes, sizes and ranges: their arguments are integers or
# dtypes, so no derivative flows (np.full's fill value does: see full_like).
for _f in (np.zeros, np.ones, np.empty, np.eye, np.identity, np.arange, np.tri, np.indices):
    non_differentiable(_f)


def _register_fill(f: Any) -> None:
    """Rules for ``f(first, fill_value, *rest, **kw)`` (``full``, ``full_like``):
    linear in the fill value, which is broadcast to the output (its cotangent sums
    back over the broadcast entries); an integer or bool output truncates, so no
    derivative flows."""

    def fill_rrule(first: Any, fill_value: Any, *rest: Any, **kw: Any) -> Any:
        y = f(first, fill_value, *rest, **kw)
        nots = (_NO,) * len(rest)
        truncating = y.dtype.kind in "biu"

        def fill_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero) or truncating:
                return (_NO, _NO, ZeroTangent() if not truncating else _NO, *nots)
            total = sum_to(asarray(ȳ), np.shape(fill_value))
            return (_NO, _NO, project_nested(fill_value, total), *nots)

        return y, fill_pullback

    def fill_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
        n = len(args) // 2
        first, fill_value, rest = args[n], args[n + 1], args[n + 2 :]
        y = f(first, fill_value, *rest, **kw)
        v̇ = unthunk(args[1])
        if y.dtype.kind in "biu":
            return y, _NO
        if isinstance(v̇, AbstractZero):
            return y, ZeroTangent()
        return y, np.broadcast_to(dense(v̇, fill_value), y.shape).astype(y.dtype)

    rrule.register(f)(fill_rrule)
    frule.register(f)(fill_frule)


_register_fill(np.full_like)
_register_fill(np.full)


# Queries, predicates, comparisons and index searches: their outputs are shapes,
# booleans or integer positions, so no derivative flows through them.
for _name in (
    "shape ndim size result_type iscomplexobj isrealobj iscomplex isreal isfinite isnan "
    "isinf isposinf isneginf signbit array_equal array_equiv allclose isclose any all "
    "count_nonzero argmax argmin argsort nonzero flatnonzero searchsorted greater less "
    "equal not_equal greater_equal less_equal logical_and logical_or logical_not logical_xor"
).split():
    non_differentiable(getattr(np, _name))

# Random-number generators, bit generators and their seeds: a seed (an int, an
# array of ints, a SeedSequence) picks a stream, so nothing is differentiable in
# it and ``rng = np.random.default_rng(seed)`` works with ``seed`` a parameter of
# the differentiated function. (The draws themselves, ``rng.normal()``, are constants.)
for _name in (
    "default_rng Generator RandomState SeedSequence BitGenerator PCG64 PCG64DXSM MT19937 "
    "Philox SFC64 seed get_state set_state"
).split():
    if hasattr(np.random, _name):
        non_differentiable(getattr(np.random, _name))
