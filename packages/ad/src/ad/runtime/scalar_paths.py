"""Specialised calls for scalar code, the hottest path of the AD: floats and numpy scalars.

Two fast paths, both taken for Python floats (and ints for arithmetic) and
numpy's float64 and float32 scalars, and only while dispatch would still pick
the built-in rule for them:

* arithmetic: the reverse pass emits ``_ad_fast_mul(a, b)`` instead of
  ``_ad_rcall(operator.mul, a, b)``; the helper computes the value and a
  minimal pullback inline — the derivative the ``rules`` package gives,
  without dispatch, broadcasting or projection;
* functions defined with ``rulescore.scalar_rule`` (``math.sin``, ...):
  ``rcall`` evaluates the registered partials (``scalar_partials``,
  ``numpy_scalar_call``) directly; and the generated code calls such a
  function of one float itself, with its partial on the tape
  (``SCALAR_FUNCTIONS``, ``scalar_adjoint``; see ``transform.inline.scalar_call``).

Registering any rule re-checks which fast paths are still valid (a user rule
or an ``opt_out`` for these types turns them off): ``FLAGS`` and
``FLOAT_PATHS`` hold the answers, for these paths and for those of
``array_arithmetic`` and ``transform.fuse`` (float arrays). Anything else goes
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

See also ``array_arithmetic`` (the call sites whose adjoint reads tape entries)
and ``lean_rules`` (numpy's functions on float64 arrays).
"""

from __future__ import annotations

import math
import operator
import sys
import types
from typing import Any

import numpy as np

from ad.runtime import calls
from ad.runtime.config import ADConfig
from ad.transform.fuse import REDUCTIONS, UFUNCS
from rules.extension import is_standard_rule
from rulescore import NoTangent, rrule

__all__ = [
    "FLAGS",
    "FLOAT_PATHS",
    "NUMPY_SCALARS",
    "SCALAR_FUNCTIONS",
    "fast_add",
    "fast_mul",
    "fast_neg",
    "fast_pow",
    "fast_sub",
    "fast_truediv",
    "numpy_scalar_call",
    "numpy_scalar_kind",
    "scalar_adjoint",
    "scalar_partials",
]

_NO = NoTangent()
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


class _ScalarFunctions:
    """The generated code's test for a builtin scalar function of one float
    (``transform.inline.scalar_call``): attribute ``math__sin`` is ``math.sin``
    while its rule for a float is the ``rules`` package's ``scalar_rule``, else
    ``_NoFastPath``; ``d_math__sin`` is that rule's partials, ``(x, y) -> ∂y/∂x``.
    Only ``math``'s functions qualify: a float's image is a float, and so is the
    partial (``cmath.sqrt`` of a float is complex: its derivative is the rule's).
    Looked up on first use, forgotten at every rule registration."""

    def __getattr__(self, key: str) -> Any:
        base = key[2:] if key.startswith("d_") else key
        module, _, name = base.partition("__")
        fn = getattr(sys.modules.get(module), name, None) if module == "math" else None
        partials = scalar_partials(fn, 1) if type(fn) is types.BuiltinFunctionType else None
        valid = partials is not None and _builtin_rule(fn, (float,))
        self.__dict__[base] = fn if valid else _NoFastPath
        self.__dict__["d_" + base] = partials
        return self.__dict__[key]


SCALAR_FUNCTIONS = _ScalarFunctions()


def scalar_adjoint(p: Any, ȳ: Any) -> tuple:
    """The adjoint of an inlined scalar call whose tape entry ``p`` is no float: a
    pullback (the dispatched call's), or a partial of another type.

    >>> scalar_adjoint((2.0,), 3.0)
    (None, 6.0)
    """
    if callable(p):
        return p(ȳ)
    if type(p) is tuple:
        (p,) = p
    return None, ȳ * p


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
    vars(SCALAR_FUNCTIONS).clear()


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

_table.listeners.append(_refresh)
_refresh()
