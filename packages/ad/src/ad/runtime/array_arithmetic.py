"""Arithmetic call sites whose adjoint reads tape entries: float arrays, numpy scalars.

The reverse pass emits ``_ad_fasti_<op>`` where it also emits the inline adjoint
(see ``transform/reverse.py``): these may return, instead of a pullback, the entry
that adjoint expects — None for add/sub/neg, (b, a) for mul, (a, b) for truediv,
(a,) for a ** n. They do so for two float arrays of one shape and dtype, where the
partials are exactly the scalar ones applied elementwise; for mul and pow the entry
is then a list ([b, a], [a]), which the adjoint's array branch reads
(``inline_arithmetic``). numpy scalars keep the float tape entry, as their type
(see ``scalar_paths``); a Python number with a float array, and two float arrays
that broadcast (a bias add), get a lean pullback. Anything else takes
``scalar_paths``' helper for the operator.

``FAST_HELPERS`` binds these and ``scalar_paths``' helpers to the names the
generated code reads (``helpers``).

>>> import numpy as np
>>> y, entry = fasti_mul(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
>>> y, entry
(array([3., 8.]), [array([3., 4.]), array([1., 2.])])
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime import calls
from ad.runtime.lean_rules import is_uniform, uniform
from ad.runtime.scalar_paths import (
    _NP_SCALARS,
    FLAGS,
    FLOAT_PATHS,
    _numpy_pow_kind,
    fast_add,
    fast_mul,
    fast_neg,
    fast_pow,
    fast_sub,
    fast_truediv,
    numpy_scalar_kind,
)
from ad.runtime.single_use import ONCE as _ONCE
from ad.runtime.single_use import claim
from rules.extension import getrefcount as _sys_getrefcount  # sys.getrefcount where calibrated
from rules.extension import unbroadcast
from rulescore import NoTangent, Thunk, unthunk

__all__ = [
    "FAST_HELPERS",
    "fasti_add",
    "fasti_add_into",
    "fasti_mul",
    "fasti_neg",
    "fasti_pow",
    "fasti_sub",
    "fasti_sub_into",
    "fasti_truediv",
]

_NO = NoTangent()
_float = float
_int = int
_F64 = np.float64
_F32 = np.float32
_ndarray = np.ndarray
_zeros = np.zeros


def _same_float_arrays(a: Any, b: Any) -> bool:
    return (
        type(a) is _ndarray
        and type(b) is _ndarray
        and a.shape == b.shape
        and a.dtype == b.dtype
        and a.dtype.kind == "f"
    )


def _broadcast_float_arrays(a: Any, b: Any) -> bool:
    return (
        type(a) is _ndarray and type(b) is _ndarray and a.dtype == b.dtype and a.dtype.kind == "f"
    )


def _broadcast_pullback(a: Any, b: Any, sign: float) -> Any:
    """The pullback of ``a ± b`` for float arrays that broadcast (a bias add).

    It keeps the operands' shapes and dtype, not their values (unbroadcast reads
    nothing else): an operand the primal drops is not held until the adjoint."""
    shape, sa, sb = None, a.shape, b.shape
    if len(sa) == 2 and len(sb) == 1 and sa[1] == sb[0]:
        shape = sa  # a matrix plus a bias row
    elif len(sb) == 2 and len(sa) == 1 and sb[1] == sa[0]:
        shape = sb
    return _BroadcastAddPullback((sa, sb, shape, a.dtype, sign))


class _BroadcastAddPullback(tuple):
    """``(sa, sb, shape, dtype, sign)``: the pullback of ``a ± b`` (sign ±1) for float
    arrays of shapes ``sa``, ``sb`` that broadcast; ``shape`` is the output's when
    it is a matrix plus a bias row (either way round), else None."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        sa, sb, shape, dtype, sign = self
        if type(ȳ) is _ndarray and ȳ.shape == shape and ȳ.dtype == dtype:
            # unbroadcast's own sum over the leading axis (ndarray.sum's reduction),
            # without its general checks
            ȳb = ȳ if sign > 0 else -ȳ
            return (
                _NO,
                ȳ if len(sa) == 2 else _add_reduce(ȳ, 0),
                ȳb if len(sb) == 2 else _add_reduce(ȳb, 0),
            )
        ȳ = unthunk(ȳ)
        a, b = _zeros(sa, dtype), _zeros(sb, dtype)  # stand-ins of the operands' type
        return (_NO, unbroadcast(a, ȳ), unbroadcast(b, ȳ if sign > 0 else -ȳ))


_add_reduce = np.add.reduce


def fasti_add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is _F64 or tb is _F64 or ta is _F32 or tb is _F32:
        if numpy_scalar_kind(a, b, operator.add) is not None:
            return a + b, None  # the adjoint passes ȳ on: a T already (see scalar_paths)
        return fast_add(a, b)
    if _broadcast_float_arrays(a, b) and operator.add in FLAGS.arrays:
        y = a + b
        if a.shape == b.shape:
            return y, None
        return y, _broadcast_pullback(a, b, 1.0)
    side = _scalar_and_array(a, b, operator.add)
    if side:
        return a + b, _scalar_array_pullback(operator.add, a, b, side, None)
    return fast_add(a, b)


def fasti_sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is _F64 or tb is _F64 or ta is _F32 or tb is _F32:
        if numpy_scalar_kind(a, b, operator.sub) is not None:
            return a - b, None
        return fast_sub(a, b)
    if _broadcast_float_arrays(a, b) and operator.sub in FLAGS.arrays:
        y = a - b
        if a.shape == b.shape:
            return y, None
        return y, _broadcast_pullback(a, b, -1.0)
    side = _scalar_and_array(a, b, operator.sub)
    if side:
        return a - b, _scalar_array_pullback(operator.sub, a, b, side, None)
    return fast_sub(a, b)


def fasti_add_into(a: Any, b: Any, k: int) -> Any:
    """``fasti_add(a, b)`` where operand ``k`` (1 or 2) dies at this call (the
    transform knows it, see ``reverse.release_dead``): for two float arrays of one
    shape and dtype the sum is written into that operand when nothing but the
    caller's variable holds it, as numpy reuses a temporary in ``x * y + z``; the
    pullback reads neither operand. Same values as ``fasti_add``.

    A bias add (``x @ W + b``) gets a new array: writing it into ``x @ W``'s
    buffer measured 10% slower on the large MLP (the freed buffer no longer
    serves the next allocation of its size)."""
    out = _arrays_into(a, b, k, operator.add, _add, 1.0)
    return fasti_add(a, b) if out is None else out


def fasti_sub_into(a: Any, b: Any, k: int) -> Any:
    """``fasti_sub`` with a dying operand ``k``, as ``fasti_add_into``."""
    out = _arrays_into(a, b, k, operator.sub, _subtract, -1.0)
    return fasti_sub(a, b) if out is None else out


def _arrays_into(a: Any, b: Any, k: int, op: Any, ufunc: Any, sign: float) -> Any:
    """``(a ± b, pullback)`` for two float arrays of one dtype (None for any other
    operands, which ``fasti_add``/``fasti_sub`` take). Of one shape, the result is
    written into operand ``k`` when it owns writable memory and is held only by the
    generated code's dying variable. References to it then: that variable, the
    ``*_into`` helper's parameter, this one, getrefcount's argument."""
    if (
        type(a) is not _ndarray
        or type(b) is not _ndarray
        or a.dtype is not b.dtype
        or a.dtype.kind != "f"
        or op not in FLAGS.arrays
    ):
        return None
    if a.shape != b.shape:  # a bias add, most often
        return ufunc(a, b), _broadcast_pullback(a, b, sign)
    if k == 1:
        if _sys_getrefcount(a) <= 4 and a.base is None and a.flags.writeable:
            return ufunc(a, b, out=a), None
    elif _sys_getrefcount(b) <= 4 and b.base is None and b.flags.writeable:
        return ufunc(a, b, out=b), None
    return ufunc(a, b), None


_add, _subtract = np.add, np.subtract


def fasti_mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is _F64 or tb is _F64 or ta is _F32 or tb is _F32:
        t = numpy_scalar_kind(a, b, operator.mul)
        if t is not None:  # the float tape entry, (b, a), as T: the adjoint's partials are Ts
            return a * b, (b if tb is t else t(b), a if ta is t else t(a))
        return fast_mul(a, b)
    if _same_float_arrays(a, b) and operator.mul in FLAGS.arrays:
        return a * b, [b, a]  # a list: the adjoint's array branch (inline_arithmetic.mul_adjoint)
    side = _scalar_and_array(a, b, operator.mul)
    if side:
        return a * b, _scalar_array_pullback(operator.mul, a, b, side, None)
    return fast_mul(a, b)


def fasti_truediv(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is _F64 or tb is _F64 or ta is _F32 or tb is _F32:
        t = numpy_scalar_kind(a, b, operator.truediv)
        if t is not None and b:  # the float tape entry, (a, b), as T
            return a / b, (a if ta is t else t(a), b if tb is t else t(b))
        return fast_truediv(a, b)
    if _same_float_arrays(a, b) and operator.truediv in FLAGS.arrays:
        return a / b, (a, b)
    if _scalar_and_array(a, b, operator.truediv) == 2:  # array / number
        y = a / b
        return y, _scalar_array_pullback(operator.truediv, a, b, 2, y)
    return fast_truediv(a, b)


# --- a Python number and a float array ---------------------------------------------------
#
# ``2.0 * x``, ``1.0 - x``, ``x / n``: the rule's pullback, without its dispatch,
# partial-function table and broadcasting checks. The array's cotangent is
# computed as the rule computes it (``ȳ * 2.0``, ``-ȳ``, ``ȳ * (1 / n)``); the
# number's (a sum over the array) stays a thunk, as in the rule, since the number
# is usually a constant whose cotangent is dropped. A cotangent that is not a
# plain array of the output's shape and dtype goes through the rule itself.


def _scalar_and_array(a: Any, b: Any, op: Any) -> int:
    """2 for ``array op number``, 1 for ``number op array``, 0 otherwise."""
    ta, tb = type(a), type(b)
    if ta is _ndarray:
        if (tb is _float or tb is _int) and a.dtype.kind == "f" and op in FLAGS.scalar_arrays:
            return 2
    elif tb is _ndarray and (ta is _float or ta is _int):
        if b.dtype.kind == "f" and op in FLAGS.scalar_arrays:
            return 1
    return 0


def _scalar_array_pullback(op: Any, a: Any, b: Any, side: int, y: Any) -> Any:
    arr = b if side == 1 else a
    shape, dtype = arr.shape, arr.dtype

    def scalar_array_pullback(ȳ: Any) -> tuple:
        if type(ȳ) is not _ndarray or ȳ.shape != shape or ȳ.dtype != dtype:
            return calls.rcall(op, a, b)[1](ȳ)  # thunks, zeros, other dtypes: the rule
        # A uniform ȳ (a whole-array sum's) keeps the array's cotangent uniform.
        v = ȳ.flat[0] if not ȳ.flags.writeable and is_uniform(ȳ) else None
        if op is operator.mul:
            if side == 1:
                return (_NO, Thunk(lambda: unbroadcast(a, ȳ * b)), _scaled(ȳ, v, a))
            return (_NO, _scaled(ȳ, v, b), Thunk(lambda: unbroadcast(b, ȳ * a)))
        if op is operator.add:
            if side == 1:
                return (_NO, Thunk(lambda: unbroadcast(a, ȳ)), ȳ)
            return (_NO, ȳ, Thunk(lambda: unbroadcast(b, ȳ)))
        if op is operator.sub:
            if side == 1:
                return (_NO, Thunk(lambda: unbroadcast(a, ȳ)), _negated(ȳ, v))
            return (_NO, ȳ, Thunk(lambda: unbroadcast(b, -ȳ)))
        # array / number: ∂x = 1 / y, ∂y = -Ω / y (the rule's partials); 1 / 0 is a
        # signed inf, as in the primal's arithmetic, not a ZeroDivisionError
        inv = 1 / b if b else math.copysign(math.inf, b)
        return (_NO, _scaled(ȳ, v, inv), Thunk(lambda: unbroadcast(b, ȳ * (-y / b))))

    return scalar_array_pullback


def _scaled(ȳ: Any, v: Any, c: Any) -> Any:
    """``ȳ * c``; for a ``uniform`` ȳ of value ``v``, the uniform ``v * c`` (the same
    value in every entry, one multiply)."""
    return ȳ * c if v is None else uniform(v * c, ȳ.shape, ȳ.dtype)


def _negated(ȳ: Any, v: Any) -> Any:
    """``-ȳ``, kept uniform as ``_scaled``."""
    return -ȳ if v is None else uniform(-v, ȳ.shape, ȳ.dtype)


def fasti_pow(a: Any, n: Any) -> Any:
    if (
        type(a) is _ndarray
        and a.dtype.kind == "f"
        and type(n) is int
        and n >= 1
        and operator.pow in FLAGS.arrays
    ):
        return a**n, [a]
    if type(n) is _int and _numpy_pow_kind(a, n) is not None:
        return a**n, (a,)  # the adjoint's n * a ** (n - 1): a T
    return fast_pow(a, n)


_multiply = np.multiply


def fasti_neg(a: Any) -> Any:
    if type(a) is _ndarray and a.dtype.kind == "f" and operator.neg in FLAGS.arrays:
        return -a, None
    ta = type(a)
    if (ta is _F64 or ta is _F32) and ta in _NP_SCALARS[operator.neg]:
        return -a, None
    return fast_neg(a)


FAST_HELPERS: dict[str, Callable] = {
    "_ad_fast_add": fast_add,
    "_ad_fast_sub": fast_sub,
    "_ad_fast_mul": fast_mul,
    "_ad_fast_truediv": fast_truediv,
    "_ad_fast_pow": fast_pow,
    "_ad_fast_neg": fast_neg,
    "_ad_fasti_add": fasti_add,
    "_ad_fasti_add_into": fasti_add_into,
    "_ad_fasti_sub_into": fasti_sub_into,
    "_ad_fasti_sub": fasti_sub,
    "_ad_fasti_mul": fasti_mul,
    "_ad_fasti_truediv": fasti_truediv,
    "_ad_fasti_pow": fasti_pow,
    "_ad_fasti_neg": fasti_neg,
    "_ad_tuple": tuple,
    "_ad_FP": FLOAT_PATHS,
    # the once signal (``single_use``), read by the generated adjoint
    "_ad_O": _ONCE,
    "_ad_claim": claim,
}
