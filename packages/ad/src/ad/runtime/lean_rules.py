"""Specialised calls for scalar code, the hottest path of the AD.

Two fast paths, both taken for Python floats (and ints for arithmetic) and
numpy's float64 and float32 scalars, and only while dispatch would still pick
the built-in rule for them:

* arithmetic: the reverse pass emits ``_ad_fast_mul(a, b)`` instead of
  ``_ad_rcall(operator.mul, a, b)``; the helper computes the value and a
  minimal pullback inline — the derivative the ``rules`` package gives,
  without dispatch, broadcasting or projection;
* functions defined with ``rulescore.scalar_rule`` (``math.sin``, ...):
  ``scalar_call`` evaluates the registered partials directly.

Registering any rule re-checks which fast paths are still valid (a user rule
or an ``opt_out`` for these types turns them off). Anything else goes
through ``rcall`` unchanged.

numpy scalars (``np.float64(1.5) * x``, ``s = v.sum()``, ``v[i]``) take the
helpers below (the inline test in the generated code is for Python floats):
an operation whose operands are numpy scalars of one type ``T`` (float64 or
float32) and Python numbers computes in numpy (the result is numpy's: ``T``)
and keeps the same tape entry as floats, its values converted to ``T``, so
every partial ``ȳ * entry`` is a ``T`` whatever ``ȳ``'s type: an ``np.float64``
variable's cotangent stays an ``np.float64`` and a float32 one a float32, as the
rules' projection gives. A Python float operand of such an operation gets a
``T`` cotangent too (the rule would give a float: for float64, the same value).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.runtime import calls
from ad.runtime.config import ADConfig
from ad.runtime.single_use import ONCE as _ONCE
from ad.runtime.single_use import claim
from ad.transform.fuse import REDUCTIONS, UFUNCS
from rules import extension as _ew
from rules.extension import getrefcount as _sys_getrefcount  # sys.getrefcount where calibrated
from rules.extension import is_standard_rule, unbroadcast
from rules.extension import matmul_fast_cotangents as _matmul_fast_cotangents
from rules.extension import product as _product
from rulescore import AbstractZero, InplaceableThunk, NoTangent, Thunk, ZeroTangent, rrule, unthunk

__all__ = ["FAST_HELPERS", "FLAGS", "FLOAT_PATHS", "lean_rule", "scalar_partials"]

_NO = NoTangent()
_ZERO = ZeroTangent()
_float = float
_int = int
_table = rrule.table

# Validity flags, recomputed by _refresh after every registration.
_ADD = _SUB = _MUL = _DIV = _POW = _NEG = False
_F64 = np.float64
_F32 = np.float32
#: Per operator, the numpy scalar types whose rules (with each other and with
#: Python numbers) are still the built-in ones (see ``numpy_scalar_kind``).
_NP_SCALARS: dict[Any, frozenset] = {}


class _Flags:
    """The same flags as attributes, read by the arithmetic the reverse pass inlines;
    ``arrays`` holds the operators whose rule on two float arrays is still the built-in one;
    ``fused``: a fused region's rules (``transform.fuse``) all are, its test reads it."""

    __slots__ = ("add", "arrays", "fused", "mul", "neg", "pow", "scalar_arrays", "sub", "truediv")

    def __init__(self) -> None:
        self.add = self.sub = self.mul = self.neg = self.truediv = self.pow = False
        self.fused = False
        self.arrays: frozenset = frozenset()
        self.scalar_arrays: frozenset = frozenset()


FLAGS = _Flags()

_OPERATORS = ("add", "mul", "neg", "pow", "sub", "truediv")


class _NoFastPath:
    """The type no value has: an operand's type is never this one."""


class _FloatPaths:
    """Per operator, ``float`` while its inline float path is valid (its flag in
    ``FLAGS``), else ``_NoFastPath``: the primal's one test per operation,
    ``type(a) is _ad_FP.mul is type(b)``, fewer AST nodes than a flag and a type
    per operand."""

    __slots__ = _OPERATORS


FLOAT_PATHS = _FloatPaths()
_SCALAR: dict[tuple[Any, int], Any] = {}


def _builtin_rule(f: Any, types: tuple) -> bool:
    return is_standard_rule(_table.lookup(f, types, ADConfig))


def _packaged_rule(f: Any, types: tuple) -> bool:
    """Whether ``f``'s rule for ``types`` is the ``rules`` package's."""
    return is_standard_rule(_table.lookup(f, types, ADConfig))


def _refresh() -> None:
    global _ADD, _SUB, _MUL, _DIV, _POW, _NEG
    pairs = [(a, b) for a in (float, int) for b in (float, int)]
    ok = {f: all(_builtin_rule(f, p) for p in pairs) for f in _BINARY}
    _ADD, _SUB, _MUL = ok[operator.add], ok[operator.sub], ok[operator.mul]
    _DIV, _POW = ok[operator.truediv], ok[operator.pow]
    _NEG = _builtin_rule(operator.neg, (float,))
    FLAGS.add, FLAGS.sub, FLAGS.mul, FLAGS.neg = _ADD, _SUB, _MUL, _NEG
    FLAGS.truediv, FLAGS.pow = _DIV, _POW
    for op in _OPERATORS:
        setattr(FLOAT_PATHS, op, float if getattr(FLAGS, op) else _NoFastPath)
    for f in (*_BINARY, operator.neg):
        _NP_SCALARS[f] = frozenset(t for t in (_F64, _F32) if _builtin_scalar_rules(f, t))
    arr = np.ndarray
    FLAGS.arrays = frozenset(
        [f for f in _BINARY if f is not operator.pow and _builtin_rule(f, (arr, arr))]
        + ([operator.pow] if _builtin_rule(operator.pow, (arr, int)) else [])
        + ([operator.neg] if _builtin_rule(operator.neg, (arr,)) else [])
    )
    # A Python number and a float array, either way round.
    FLAGS.scalar_arrays = frozenset(
        f
        for f in (operator.add, operator.sub, operator.mul, operator.truediv)
        if all(_builtin_rule(f, p) for s in (float, int) for p in ((s, arr), (arr, s)))
    )
    # A fused region computes these operators (all of them, on arrays and with numbers)
    # and numpy's functions itself, and derives their adjoints when transformed.
    FLAGS.fused = (
        len(FLAGS.arrays) == len(_BINARY) + 1  # and neg
        and len(FLAGS.scalar_arrays) == 4
        and _packaged_rule(operator.getitem, (arr, slice))
        and all(_packaged_rule(getattr(np, n), (arr,)) for n in UFUNCS + REDUCTIONS)
        and all(_packaged_rule(getattr(arr, n), (arr,)) for n in REDUCTIONS)
    )
    _SCALAR.clear()


def _builtin_scalar_rules(f: Any, t: type) -> bool:
    """Whether ``f``'s rules for the numpy scalar type ``t`` with itself and with
    Python numbers (either side) are the built-in arithmetic."""
    if f is operator.neg:
        return _builtin_rule(f, (t,))
    others = (t, float, int)
    return all(_builtin_rule(f, p) for u in others for p in ((t, u), (u, t)))


def numpy_scalar_kind(a: Any, b: Any, f: Any) -> Any:
    """``T`` when the operands of ``f`` are numpy scalars of the one type ``T``
    (float64 or float32, at least one of them) and Python floats or ints, and
    ``f``'s fast path is valid for ``T``; else None. numpy computes such an
    operation in ``T`` (a Python number is weak, NEP 50) and returns a ``T``.

    >>> numpy_scalar_kind(np.float64(2.0), 3, operator.mul)
    <class 'numpy.float64'>
    >>> numpy_scalar_kind(np.float32(2.0), np.float64(3.0), operator.mul) is None
    True
    """
    ta, tb = type(a), type(b)
    t = ta if ta is _F64 or ta is _F32 else tb
    if (
        (ta is t or ta is _float or ta is _int)
        and (tb is t or tb is _float or tb is _int)
        and t in _NP_SCALARS[f]
    ):
        return t
    return None


#: The numpy scalar types ``numpy_scalar_call`` takes.
NUMPY_SCALARS = frozenset([_F64, _F32])


def numpy_scalar_call(f: Any, args: tuple) -> Any:
    """``(y, pullback)`` for a function defined with ``scalar_rule`` (``math.sin``...)
    on numpy float64 or float32 scalars and Python floats, from the rule's partials
    as ``reverse`` does for floats; None when the rule that dispatch picks for
    these types has no partials, or the value or a partial is not a real number.
    Each argument's cotangent is computed as the rule computes it, ``ȳ * p``, then
    given the argument's type (``ProjectTo``'s conversion).

    >>> y, pb = numpy_scalar_call(math.sin, (np.float64(0.0),))
    >>> type(y).__name__, pb(1.0)
    ('float', (NoTangent(), np.float64(1.0)))
    """
    n = len(args)
    key = (f, type(args[0])) if n == 1 else (f, *map(type, args))
    partials = _SCALAR.get(key, _UNKNOWN)
    if partials is _UNKNOWN:
        partials = _numpy_scalar_partials(f, key[1:])
        _SCALAR[key] = partials
    if partials is None:
        return None
    y = f(*args)
    if not isinstance(y, _float):  # a complex value (cmath), an int (round)
        return None
    p = partials(*args, y)
    if n == 1:
        if type(p) is tuple:
            (p,) = p
        if not isinstance(p, _float):
            return None
        return y, _NumpyScalarCallPullback((p, key[1], f, args))
    if type(p) is not tuple or len(p) != n or not all(isinstance(q, _float) for q in p):
        return None
    return y, _NumpyScalarCallPullbackN((p, key[1:], f, args))


_UNKNOWN = object()


def _numpy_scalar_partials(f: Any, types: tuple) -> Any:
    """The partials of the ``scalar_rule`` dispatch picks for ``f`` at ``types``, or None."""
    if not all(t in NUMPY_SCALARS or t is _float for t in types):
        return None
    r = _table.lookup(f, types, ADConfig)
    return getattr(r.impl, "scalar_partials", None) if r is not None else None


class _NumpyScalarCallPullback(tuple):
    """``(p, t, f, args)``: the pullback of ``numpy_scalar_call`` for one argument of
    type ``t``, ``t(ȳ · p)``; a cotangent that is not a real float goes through the
    rule itself."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        tȳ = type(ȳ)
        if tȳ is _float or tȳ is _F64:
            return (_NO, self[1](ȳ * self[0]))
        return rrule(_CONFIG, self[2], *self[3])[1](ȳ)


class _NumpyScalarCallPullbackN(tuple):
    """``(partials, types, f, args)``: as ``_NumpyScalarCallPullback``, several arguments."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        p, types, f, args = self
        tȳ = type(ȳ)
        if tȳ is _float or tȳ is _F64:
            return (_NO, *[t(ȳ * q) for q, t in zip(p, types)])
        return rrule(_CONFIG, f, *args)[1](ȳ)


_CONFIG = ADConfig()


def scalar_partials(f: Any, n: int) -> Any:
    """The ``scalar_rule`` partials that dispatch uses for ``f`` on ``n`` floats, or None."""
    key = (f, n)
    try:
        return _SCALAR[key]
    except KeyError:
        pass
    r = _table.lookup(f, (float,) * n, ADConfig)
    partials = getattr(r.impl, "scalar_partials", None) if r is not None else None
    _SCALAR[key] = partials
    return partials


def fast_add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if _ADD and (ta is _float or ta is _int) and (tb is _float or tb is _int):

        def add_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, ȳ)

        return a + b, add_pullback
    if numpy_scalar_kind(a, b, operator.add) is not None:
        return a + b, _numpy_add_pullback
    return _rcall(operator.add, a, b)


def fast_sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if _SUB and (ta is _float or ta is _int) and (tb is _float or tb is _int):

        def sub_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, -ȳ)

        return a - b, sub_pullback
    if numpy_scalar_kind(a, b, operator.sub) is not None:
        return a - b, _numpy_sub_pullback
    return _rcall(operator.sub, a, b)


def fast_mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if _MUL and (ta is _float or ta is _int) and (tb is _float or tb is _int):

        def mul_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ * b, ȳ * a)

        return a * b, mul_pullback
    t = numpy_scalar_kind(a, b, operator.mul)
    if t is not None:
        return a * b, _NumpyScalarPullback((operator.mul, t(b), t(a)))
    return _rcall(operator.mul, a, b)


def fast_truediv(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if _DIV and (ta is _float or ta is _int) and (tb is _float or tb is _int) and b:
        y = a / b

        def truediv_pullback(ȳ: Any) -> tuple:
            d = ȳ / b
            return (_NO, d, -d * y)

        return y, truediv_pullback
    t = numpy_scalar_kind(a, b, operator.truediv)
    if t is not None and b:
        return a / b, _NumpyScalarPullback((operator.truediv, t(a), t(b)))
    return _rcall(operator.truediv, a, b)


def fast_pow(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if (
        _POW
        and ta is _float
        and ((tb is _int and (b >= 1 or a != 0.0)) or (tb is _float and a > 0.0))
    ):
        y = a**b
        if tb is _int:  # any base: x**n is a polynomial

            def pow_int_pullback(ȳ: Any) -> tuple:
                return (_NO, ȳ * b * a ** (b - 1), _NO)

            return y, pow_int_pullback

        def pow_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ * b * a ** (b - 1), ȳ * y * math.log(a))

        return y, pow_pullback
    t = _numpy_pow_kind(a, b)
    if t is not None:
        y = a**b
        return y, _NumpyScalarPullback((operator.pow, t(a), b, y))
    return _rcall(operator.pow, a, b)


def fast_neg(a: Any) -> Any:
    if _NEG and type(a) is _float:

        def neg_pullback(ȳ: Any) -> tuple:
            return (_NO, -ȳ)

        return -a, neg_pullback
    ta = type(a)
    if (ta is _F64 or ta is _F32) and ta in _NP_SCALARS[operator.neg]:
        return -a, _numpy_neg_pullback
    return _rcall(operator.neg, a)


# --- numpy float64 and float32 scalars (see the module docstring) ------------------------


def _numpy_add_pullback(ȳ: Any) -> tuple:
    return (_NO, ȳ, ȳ)


def _numpy_sub_pullback(ȳ: Any) -> tuple:
    return (_NO, ȳ, -ȳ)


def _numpy_neg_pullback(ȳ: Any) -> tuple:
    return (_NO, -ȳ)


class _NumpyScalarPullback(tuple):
    """``(op, u, v[, y])``: the pullback of ``a * b`` (``u, v = b, a``), ``a / b``
    (``u, v = a, b``) or ``a ** b`` (``u, v, y = a, b, a ** b``) on numpy scalars, its
    operands as the numpy type ``T`` of the result: each partial is a ``T``."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        op = self[0]
        if op is operator.mul:
            return (_NO, ȳ * self[1], ȳ * self[2])
        if op is operator.truediv:
            d = ȳ / self[2]
            return (_NO, d, -d * (self[1] / self[2]))
        a, b, y = self[1], self[2], self[3]
        if type(b) is _int:  # any base: x**n is a polynomial; n is a count
            return (_NO, ȳ * b * a ** (b - 1), _NO)
        return (_NO, ȳ * b * a ** (b - 1), ȳ * y * type(a)(math.log(a)))


def _numpy_pow_kind(a: Any, b: Any) -> Any:
    """``numpy_scalar_kind`` for ``a ** b`` where the float path's conditions hold: a
    numpy base to an int power (``n >= 1`` or a nonzero base), or to a float one
    with a positive base."""
    t = numpy_scalar_kind(a, b, operator.pow)
    if t is None or type(a) is not t:
        return None
    tb = type(b)
    if (tb is _int and (b >= 1 or a != 0.0)) or (tb is not _int and a > 0.0):
        return t
    return None


def _rcall(f: Any, *args: Any) -> Any:
    return calls.rcall(f, *args)  # the general dispatch


_BINARY = (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow)

# --- call sites whose adjoint reads tape entries --------------------------------------
#
# The reverse pass emits ``_ad_fasti_<op>`` where it also emits the inline adjoint
# (see transform/reverse.py): these may return, instead of a pullback, the entry
# that adjoint expects — None for add/sub/neg, (b, a) for mul, (a, b) for truediv,
# (a,) for a ** n. They do so for two float arrays of one shape and dtype, where the
# partials are exactly the scalar ones applied elementwise; for mul and pow the entry
# is then a list ([b, a], [a]), which the adjoint's array branch reads (``inline_arithmetic``).
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
            return a + b, None  # the adjoint passes ȳ on: a T already (see the module docstring)
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
        return a * b, [b, a]  # a list: the adjoint's array branch (_fast_adjoint.mul_adjoint)
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
            return _rcall(op, a, b)[1](ȳ)  # thunks, zeros, other dtypes: the rule
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
    return ȳ * c if v is None else uniform(v * c, ȳ.shape)


def _negated(ȳ: Any, v: Any) -> Any:
    """``-ȳ``, kept uniform as ``_scaled``."""
    return -ȳ if v is None else uniform(-v, ȳ.shape)


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

_table.listeners.append(_refresh)
_refresh()


# --- lean rules for the commonest numpy calls on float64 arrays ---------------------
#
# ``rcall`` caches, per (function, argument types), the callable that computes
# ``(y, pullback)``. When the rule that dispatch resolves is still the ``rules``
# package's own, ``lean_rule`` may hand it a leaner callable for float64 arrays:
# the same arithmetic (the rule's own derivative functions), without the rule's
# option handling, thunks of zeros and projections that are identities here. Any
# other dtype, shape or cotangent goes through the rule itself. The cache is
# cleared by every registration, so a rule registered later is honoured.

_f64 = np.dtype(np.float64)
_NOTANGENT = _NO

# The lean paths' pullbacks are small tuples with a ``__call__``, holding what the
# cotangent needs and nothing else: on a loop's tape one costs 64-80 bytes where a
# closure costs 300-400 (a function object and a cell per captured variable). The
# generated adjoint's own partials are exact ``tuple``s (``type(p) is tuple``), so
# it never mistakes these for them.


def _times_fresh(ȳ: Any, p: Any) -> Any:
    """``rules.extension.times_reusing`` for a float64 ``ȳ`` of the output's shape: the product is
    written into ``p`` when ``p`` is a fresh array nobody else holds (its reference
    count is then 2: this parameter and getrefcount's argument)."""
    if (
        type(p) is _ndarray
        and _sys_getrefcount(p) <= 2
        and p.base is None
        and p.shape == ȳ.shape
        and p.dtype is _f64
        and p.flags.writeable
    ):
        return _multiply(ȳ, p, out=p)
    return ȳ * p


class _UnaryPullback(tuple):
    """``(deriv, impl, x, shape)``: the pullback of a unary ufunc on a float64 array,
    ``ȳ · f'(x)`` with the rule's derivative ``deriv``; any other cotangent goes
    through the rule ``impl``. The output is not kept: outside ``OUTPUT_ONLY`` the
    derivatives read ``x`` alone (``deriv(x, None)``)."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        deriv, impl, x, shape = self
        if type(ȳ) is not _ndarray:
            ȳ = unthunk(ȳ)  # as the rule does first
        if type(ȳ) is _ndarray and ȳ.dtype is _f64 and ȳ.shape == shape:
            return _NOTANGENT, _times_fresh(ȳ, deriv(x, None))
        return impl(x)[1](ȳ)


class _OutputOnlyPullback(tuple):
    """``(deriv, Ω, f)``: as ``_UnaryPullback`` for a ufunc ``f`` whose derivative
    reads only its output (``exp``, ``tanh``, ...), so ``x`` is not kept; other
    cotangents take the rule's own code (``x``'s stand-in is ``Ω``'s: same shape,
    float64 both).

    Called once (``ONCE.expect is self``) while nothing but this tuple holds ``Ω``,
    ``exp`` and ``tanh`` compute the cotangent in ``Ω``'s buffer, which is dead
    afterwards: the same operations in the same order, one array fewer at the
    backward pass's peak."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        deriv, Ω, f = self
        if type(ȳ) is not _ndarray:
            ȳ = unthunk(ȳ)  # as the rule does first
        if type(ȳ) is _ndarray and ȳ.dtype is _f64 and ȳ.shape == Ω.shape:
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
        if x.dtype is not _f64:
            return impl(x)
        Ω = f(x)
        if type(Ω) is not _ndarray or Ω.dtype is not _f64:
            return impl(x)
        if output_only:
            return Ω, _OutputOnlyPullback((deriv, Ω, f))
        return Ω, _UnaryPullback((deriv, impl, x, Ω.shape))

    return lean_unary


class _Float64Shape:
    """A float64 array's shape and dtype, standing in for it where nothing else is read."""

    __slots__ = ("shape",)
    dtype = _f64

    def __init__(self, shape: tuple) -> None:
        self.shape = shape


def uniform(value: float, shape: tuple) -> np.ndarray:
    """A read-only float64 array of ``shape`` whose entries are all ``value``, in
    eight bytes: a zero-strided view of one number (``np.broadcast_to``'s result,
    built directly). The pullback of a whole-array sum returns one, as ChainRules
    returns a ``Fill``: every consumer reads it like any array, none may write into
    it (the in-place paths test ``base is None`` or ``flags.writeable``), and
    ``to_user`` hands the user a copy."""
    # a numpy scalar's buffer is read-only, and so is every view of it
    return _ndarray(shape, _f64, _f64_scalar(value), 0, (0,) * len(shape))


def is_uniform(a: Any) -> bool:
    """Whether ``a`` is a ``uniform`` array (read-only, every stride zero)."""
    return type(a) is _ndarray and not a.flags.writeable and a.size > 1 and not any(a.strides)


_f64_scalar = np.float64
#: Below this many entries a filled array is as cheap to make as a ``uniform`` one
#: and can be updated in place downstream.
UNIFORM_MIN_SIZE = 256


def _lean_reduction(f: Any, impl: Callable, mean: bool) -> Callable:
    # np.sum / np.mean of a whole float64 array: what the rule computes
    # (np.add.reduce, then / n for the mean, as numpy's _mean), and its pullback,
    # the rule's np.full(shape, ȳ * scale) for a float ȳ, as a ``uniform`` array.
    reduce, empty = np.add.reduce, np.empty
    f64_scalar = np.float64
    name = f.__name__

    def lean_reduction(x: Any) -> Any:
        n = x.size
        if x.dtype is not _f64 or (mean and not n):
            return impl(x)
        y = reduce(x, None)
        scale = 1.0
        if mean:
            y = f64_scalar(y / n)
            scale = 1.0 / n
        shape = x.shape

        def lean_reduction_pullback(ȳ: Any) -> tuple:
            tȳ = type(ȳ)
            if tȳ is _float or tȳ is f64_scalar:
                if n >= UNIFORM_MIN_SIZE:
                    return _NOTANGENT, uniform(ȳ * scale, shape)
                out = empty(shape, _f64)
                out.fill(ȳ * scale)
                return _NOTANGENT, out
            # the rule's own pullback; it reads only x's shape and dtype (x may be large)
            return _ew.whole_array_pullback(_Float64Shape(shape), scale, name)(ȳ)

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
    # a @ b for two float64 matrices or a matrix and a vector: the rule's value
    # (rules' ``product``: np.dot where it has the bits of @) and its pullback (the
    # rule's fast cotangents, thunks included).

    def lean_matmul(a: Any, b: Any) -> Any:
        # matmul_fast_case for float64: a matrix or vector on each side
        if a.dtype is not _f64 or b.dtype is not _f64 or not (0 < a.ndim < 3 and 0 < b.ndim < 3):
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
    """``(impl, x, key, y_shape)``: the pullback of ``x[key]`` for a float64 array and
    a basic key: an ``InplaceableThunk`` that adds ``ȳ`` into ``x[key]`` of an
    accumulator, or scatters it into zeros."""

    __slots__ = ()

    def __call__(self, ȳ: Any) -> tuple:
        impl, x, key, y_shape = self
        if type(ȳ) is not _ndarray or ȳ.dtype is not _f64 or ȳ.shape != y_shape:
            return impl(x, key)[1](ȳ)
        shape = x.shape

        def add_into(acc: Any) -> Any:
            acc[key] += ȳ
            return acc

        def dense() -> Any:
            dx = _zeros(shape, _f64)
            dx[key] = ȳ
            return dx

        return _NOTANGENT, _InplaceableThunk(add_into, _Thunk(dense)), _NOTANGENT


_zeros = np.zeros


def _lean_getitem(impl: Callable) -> Callable:
    # x[key] of a float64 array with a basic key (ints and slices): the rule's view
    # and its pullback, without the rule's unthunk, key analysis, dtype promotion
    # and projection (identities for a float64 ȳ of the view's shape). Anything
    # else goes through the rule itself.

    def lean_getitem(x: Any, key: Any) -> Any:
        if x.dtype is not _f64 or not _basic_key(key):
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
        elif (
            types == (_ndarray, _ndarray)
            and (f is np.matmul or f is operator.matmul)
            and name == "matmul_rrule"
        ):
            return _lean_matmul(f, impl)
    except TypeError:  # an unhashable f
        return None
    return None
