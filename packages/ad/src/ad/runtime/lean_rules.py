"""Lean rules for the commonest numpy calls on float arrays, and ``uniform`` arrays.

``rcall`` caches, per (function, argument types), the callable that computes
``(y, pullback)``. When the rule that dispatch resolves is still the ``rules``
package's own, ``lean_rule`` may hand it a leaner callable for float64 and
float32 arrays: the same arithmetic (the rule's own derivative functions), without
the rule's option handling, thunks of zeros and projections that are identities
here (a cotangent of the primal's shape and dtype). Any other dtype, shape or
cotangent goes through the rule itself. The cache is
cleared by every registration, so a rule registered later is honoured.

Served: unary ufuncs (``np.exp``, ``np.tanh``...), whole-array ``np.sum`` and
``np.mean`` (whose pullback returns a ``uniform`` array), ``x[key]`` with a basic
key, and ``a @ b`` (and ``np.dot(a, b)``) for matrices and vectors.

>>> import numpy as np
>>> from ad.runtime.config import ADConfig
>>> from rulescore import rrule
>>> rule = rrule.table.lookup(np.sum, (np.ndarray,), ADConfig)
>>> f = lean_rule(np.sum, (np.ndarray,), rule)
>>> y, pullback = f(np.ones((2, 3)))
>>> y, pullback(1.0)[1]
(np.float64(6.0), array([[1., 1., 1.],
       [1., 1., 1.]]))

See also ``scalar_paths`` (floats and numpy scalars) and ``array_arithmetic``
(operators on float arrays).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime.single_use import ONCE as _ONCE
from rules import extension as _ew
from rules.extension import getrefcount as _sys_getrefcount  # sys.getrefcount where calibrated
from rules.extension import is_standard_rule
from rules.extension import matmul_fast_cotangents as _matmul_fast_cotangents
from rules.extension import product as _product
from rulescore import AbstractZero, InplaceableThunk, NoTangent, Thunk, ZeroTangent, unthunk

__all__ = ["EAGER_MATMUL_ENTRIES", "UNIFORM_MIN_SIZE", "is_uniform", "lean_rule", "uniform"]

_NO = NoTangent()
_ZERO = ZeroTangent()
_float = float
_int = int
_ndarray = np.ndarray
_multiply = np.multiply
_subtract = np.subtract

_f64 = np.dtype(np.float64)
_f32 = np.dtype(np.float32)
_NOTANGENT = _NO

# The lean paths' pullbacks are small tuples with a ``__call__``, holding what the
# cotangent needs and nothing else: on a loop's tape one costs 64-80 bytes where a
# closure costs 300-400 (a function object and a cell per captured variable). The
# generated adjoint's own partials are exact ``tuple``s (``type(p) is tuple``), so
# it never mistakes these for them.


def _times_fresh(ȳ: Any, p: Any) -> Any:
    """``rules.extension.times_reusing`` for a float ``ȳ`` of the output's shape and dtype:
    the product is written into ``p`` when ``p`` is a fresh array of them nobody
    else holds (its reference count is then 2: this parameter and getrefcount's
    argument)."""
    if (
        type(p) is _ndarray
        and _sys_getrefcount(p) <= 2
        and p.base is None
        and p.shape == ȳ.shape
        and p.dtype is ȳ.dtype
        and p.flags.writeable
    ):
        return _multiply(ȳ, p, out=p)
    return ȳ * p


class _UnaryPullback(tuple):
    """``(deriv, impl, x, shape)``: the pullback of a unary ufunc on a float array,
    ``ȳ · f'(x)`` with the rule's derivative ``deriv``; any other cotangent goes
    through the rule ``impl``. The output is not kept: outside ``OUTPUT_ONLY`` the
    derivatives read ``x`` alone (``deriv(x, None)``)."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        deriv, impl, x, shape = self
        if type(ȳ) is not _ndarray:
            ȳ = unthunk(ȳ)  # as the rule does first
        if type(ȳ) is _ndarray and ȳ.dtype is x.dtype and ȳ.shape == shape:
            return _NOTANGENT, _times_fresh(ȳ, deriv(x, None))
        return impl(x)[1](ȳ)


class _OutputOnlyPullback(tuple):
    """``(deriv, Ω, f)``: as ``_UnaryPullback`` for a ufunc ``f`` whose derivative
    reads only its output (``exp``, ``tanh``, ...), so ``x`` is not kept; other
    cotangents take the rule's own code (``x``'s stand-in is ``Ω``'s: same shape
    and dtype).

    Called once (``ONCE.expect is self``) while nothing but this tuple holds ``Ω``,
    ``exp`` and ``tanh`` compute the cotangent in ``Ω``'s buffer, which is dead
    afterwards: the same operations in the same order, one array fewer at the
    backward pass's peak."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        deriv, Ω, f = self
        if type(ȳ) is not _ndarray:
            ȳ = unthunk(ȳ)  # as the rule does first
        if type(ȳ) is _ndarray and ȳ.dtype is Ω.dtype and ȳ.shape == Ω.shape:
            if _ONCE.expect is self:
                _ONCE.expect = None
                # refs of Ω: this tuple, the local name, getrefcount's argument
                if f in _IN_PLACE and _sys_getrefcount(Ω) <= 3 and Ω.flags.writeable:
                    return _NOTANGENT, _IN_PLACE[f](Ω, ȳ)
            return _NOTANGENT, _times_fresh(ȳ, deriv(None, Ω))
        if isinstance(ȳ, AbstractZero):  # the rule's own code
            return _NOTANGENT, _ZERO
        return _NOTANGENT, _ew.project_like(_ew.PrimalLike(Ω), _ew.times_reusing(ȳ, deriv(None, Ω)))


def _exp_ct_into(Ω: Any, ȳ: Any) -> Any:
    """``ȳ * Ω`` (exp's derivative is its output), written into ``Ω``."""
    return _multiply(ȳ, Ω, out=Ω)


def _tanh_ct_into(Ω: Any, ȳ: Any) -> Any:
    """``ȳ * (1 - Ω * Ω)`` (the rule's ``_one_minus_square``, then ``_times``),
    written into ``Ω``."""
    _multiply(Ω, Ω, out=Ω)
    _subtract(1, Ω, out=Ω)
    return _multiply(ȳ, Ω, out=Ω)


_IN_PLACE = {np.exp: _exp_ct_into, np.tanh: _tanh_ct_into}


def _lean_unary(f: Any, impl: Callable) -> Callable | None:
    deriv = _ew.HOLOMORPHIC.get(f)
    if deriv is None:
        return None
    output_only = f in _ew.OUTPUT_ONLY

    def lean_unary(x: Any) -> Any:
        dtype = x.dtype
        if dtype is not _f64 and dtype is not _f32:
            return impl(x)
        Ω = f(x)
        if type(Ω) is not _ndarray or Ω.dtype is not dtype:
            return impl(x)
        if output_only:
            return Ω, _OutputOnlyPullback((deriv, Ω, f))
        return Ω, _UnaryPullback((deriv, impl, x, Ω.shape))

    return lean_unary


class _ShapeAndDtype:
    """An array's shape and dtype, standing in for it where nothing else is read."""

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype


def uniform(value: float, shape: tuple, dtype: np.dtype = _f64) -> np.ndarray:
    """A read-only array of ``shape`` and ``dtype`` (float64 unless given) whose
    entries are all ``value``, in one number's bytes: a zero-strided view of it
    (``np.broadcast_to``'s result,
    built directly). The pullback of a whole-array sum returns one, as ChainRules
    returns a ``Fill``: every consumer reads it like any array, none may write into
    it (the in-place paths test ``base is None`` or ``flags.writeable``), and
    ``to_user`` hands the user a copy."""
    # a numpy scalar's buffer is read-only, and so is every view of it
    return _ndarray(shape, dtype, dtype.type(value), 0, (0,) * len(shape))


def is_uniform(a: Any) -> bool:
    """Whether ``a`` is a ``uniform`` array (read-only, every stride zero)."""
    return type(a) is _ndarray and not a.flags.writeable and a.size > 1 and not any(a.strides)


#: Below this many entries a filled array is as cheap to make as a ``uniform`` one
#: and can be updated in place downstream.
UNIFORM_MIN_SIZE = 256


def _lean_reduction(f: Any, impl: Callable, mean: bool) -> Callable:
    # np.sum / np.mean of a whole float64 or float32 array: what the rule computes
    # (np.add.reduce, then / n for the mean, as numpy's _mean, in the array's
    # dtype), and its pullback, the rule's np.full(shape, ȳ * scale, dtype) for a
    # float ȳ (Python's or numpy's of those two), as a ``uniform`` array.
    reduce, empty = np.add.reduce, np.empty
    f64_scalar, f32_scalar = np.float64, np.float32
    name = f.__name__

    def lean_reduction(x: Any) -> Any:
        n = x.size
        dtype = x.dtype
        if (dtype is not _f64 and dtype is not _f32) or (mean and not n):
            return impl(x)
        y = reduce(x, None)
        scale = 1.0
        if mean:
            y = dtype.type(y / n)
            scale = 1.0 / n
        shape = x.shape

        def lean_reduction_pullback(ȳ: Any) -> tuple:
            tȳ = type(ȳ)
            if tȳ is _float or tȳ is f64_scalar or tȳ is f32_scalar:
                if n >= UNIFORM_MIN_SIZE:
                    return _NOTANGENT, uniform(ȳ * scale, shape, dtype)
                out = empty(shape, dtype)
                out.fill(ȳ * scale)
                return _NOTANGENT, out
            # the rule's own pullback; it reads only x's shape and dtype (x may be large)
            return _ew.whole_array_pullback(_ShapeAndDtype(shape, dtype), scale, name)(ȳ)

        return y, lean_reduction_pullback

    return lean_reduction


class _MatmulPullback(tuple):
    """``(a, b)``: the pullback of ``a @ b`` (the rule's ``matmul_fast_cotangents``).

    With at most ``EAGER_MATMUL_ENTRIES`` entries in the two operands the products
    are computed at once rather than as thunks: creating and evaluating a thunk
    costs about a microsecond, more than such a product, so even one unused
    cotangent computed for nothing comes out ahead (batch-8 MLP 65.5 -> 61 µs, the
    RNN 1.65 -> 1.59 ms)."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        a, b = self
        return _matmul_fast_cotangents(a, b, ȳ, a.size + b.size <= EAGER_MATMUL_ENTRIES)


EAGER_MATMUL_ENTRIES = 2048


def _lean_matmul(f: Any, impl: Callable) -> Callable:
    # a @ b for two float64 (or float32) matrices or a matrix and a vector: the rule's value
    # (rules' ``product``: np.dot where it has the bits of @) and its pullback (the
    # rule's fast cotangents, thunks included).

    def lean_matmul(a: Any, b: Any) -> Any:
        # matmul_fast_case for one float dtype: a matrix or vector on each side
        dtype = a.dtype
        if (
            (dtype is not _f64 and dtype is not _f32)
            or b.dtype is not dtype
            or not (0 < a.ndim < 3 and 0 < b.ndim < 3)
        ):
            return impl(a, b)
        return _product(a, b), _MatmulPullback((a, b))

    return lean_matmul


def _basic_key(key: Any) -> bool:
    """Whether ``key`` is an int, a slice or a tuple of them (basic indexing, no repeats)."""
    tk = type(key)
    if tk is _slice or tk is _int:
        return True
    if tk is tuple:
        for k in key:
            tk = type(k)
            if tk is not _slice and tk is not _int:
                return False
        return True
    return False


_slice = slice


class _GetitemPullback(tuple):
    """``(impl, x, key, y_shape)``: the pullback of ``x[key]`` for a float array and
    a basic key: an ``InplaceableThunk`` that adds ``ȳ`` into ``x[key]`` of an
    accumulator, or scatters it into zeros."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        impl, x, key, y_shape = self
        dtype = x.dtype
        if type(ȳ) is not _ndarray or ȳ.dtype is not dtype or ȳ.shape != y_shape:
            return impl(x, key)[1](ȳ)
        shape = x.shape

        def add_into(acc: Any) -> Any:
            acc[key] += ȳ
            return acc

        def dense() -> Any:
            dx = _zeros(shape, dtype)
            dx[key] = ȳ
            return dx

        return _NOTANGENT, _InplaceableThunk(add_into, _Thunk(dense)), _NOTANGENT


_zeros = np.zeros


def _lean_getitem(impl: Callable) -> Callable:
    # x[key] of a float64 or float32 array with a basic key (ints and slices): the
    # rule's view and its pullback, without the rule's unthunk, key analysis, dtype
    # promotion and projection (identities for a ȳ of the view's shape and
    # dtype). Anything else goes through the rule itself.

    def lean_getitem(x: Any, key: Any) -> Any:
        dtype = x.dtype
        if (dtype is not _f64 and dtype is not _f32) or not _basic_key(key):
            return impl(x, key)
        y = x[key]
        if type(y) is not _ndarray:  # a scalar entry
            return impl(x, key)
        return y, _GetitemPullback((impl, x, key, y.shape))

    return lean_getitem


_InplaceableThunk = InplaceableThunk
_Thunk = Thunk


def lean_rule(f: Any, types: tuple, rule: Any) -> Callable | None:
    """A leaner callable for ``rule`` (the ``rules`` package's own) at ``types``, or None."""
    impl = rule.impl
    if rule.takes_config or not is_standard_rule(rule):
        return None
    name = getattr(impl, "__name__", "")
    try:
        if types == (_ndarray,):
            if type(f) is np.ufunc and name == f"{f.__name__}_rrule":
                if f in _ew.HOLOMORPHIC:
                    return _lean_unary(f, impl)
            elif f is np.sum or f is np.mean:
                if name == f"{f.__name__}_rrule":
                    return _lean_reduction(f, impl, f is np.mean)
        elif (
            f is operator.getitem
            and len(types) == 2
            and types[0] is _ndarray
            and types[1] in (_slice, _int, tuple)
            and name == "getitem_rrule"
        ):
            return _lean_getitem(impl)
        elif types == (_ndarray, _ndarray) and (
            ((f is np.matmul or f is operator.matmul) and name == "matmul_rrule")
            or (f is np.dot and name == "dot_rrule")  # the same product on 1-d and 2-d
        ):
            return _lean_matmul(f, impl)
    except TypeError:  # an unhashable f
        return None
    return None
