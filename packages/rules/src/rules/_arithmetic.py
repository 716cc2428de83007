"""Elementwise arithmetic, written once for numbers and numpy arrays.

``a * b`` reaches the AD as ``operator.mul(a, b)`` whatever the operand types,
so the arithmetic rules here serve ``operator``, ``builtins`` (``abs``, ``pow``)
and numpy's arithmetic ufuncs (``np.multiply`` ...) alike. Each operation is a
row of a table: the primal and one partial-derivative function per argument,
``partial(x, y, Ω)``, evaluated lazily (a pullback computes only the partials
it needs). The rules broadcast like numpy and reduce each cotangent back to
its argument's shape with :func:`rules._util.unbroadcast`.

Conventions:

* complex arithmetic is holomorphic: the pullback multiplies by the conjugate
  partial, ``∂x = ȳ * conj(∂Ω/∂x)``;
* ``floordiv`` is piecewise constant: zero cotangents (``NoTangent()`` for
  integer arguments);
* ``mod``: ``∂x = 1``, ``∂y = -(x // y)``; an integer divisor gets ``NoTangent()``;
* ``pow``: ``∂x = y * x**(y-1)`` (``0`` when ``y == 0``; at ``x == 0`` this is
  ``0`` for ``y > 1``, ``1`` for ``y == 1`` and ``inf`` for ``0 < y < 1``);
  ``∂y = Ω * log(x)`` for ``x > 0`` and ``0`` for a real ``x <= 0`` (there the
  power is not a differentiable real function of ``y``; ChainRules also
  returns 0 rather than NaN); complex bases use the complex log. An integer
  exponent (``x ** 3``) is a count: it gets ``NoTangent()``, so
  ``gradient(pow, 5.0, 3) == (75.0, None)`` (DESIGN.md);
* ``abs``: ``sign(x)`` for reals, with the subgradient ``0`` at ``0``; for
  complex ``z``, ``∂z = re(ȳ) * z / |z|`` (``0`` at ``0``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    DuckArray,
    NoTangent,
    ProjectTo,
    Thunk,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)

from ._quiet import quietly
from ._util import asarray, unbroadcast

__all__ = [
    "BINARY", "MINUS_ONE", "ONE", "UNARY", "Num", "NumOrList",
    "conj", "is_integer", "pow_dx", "pow_dy", "register_binary", "register_unary",
]  # fmt: skip

Num = numbers.Number | np.ndarray | np.generic | DuckArray
"""Operands the arithmetic rules accept: numbers, numpy scalars and arrays, and
the arrays of libraries that follow numpy's protocols (dask, CuPy)."""
NumOrList = Num | list
"""numpy functions also accept (nested) lists as arrays."""

_NO = NoTangent()
_ZERO = ZeroTangent()


class _Unit:
    """A partial that is exactly ``+1`` or ``-1``: the pullback skips the multiply."""

    __slots__ = ("sign",)

    def __init__(self, sign: int) -> None:
        self.sign = sign

    def __repr__(self) -> str:
        return "ONE" if self.sign > 0 else "MINUS_ONE"


ONE = _Unit(1)
MINUS_ONE = _Unit(-1)


def is_integer(v: Any) -> bool:
    """Whether ``v`` is an integer (or bool) number or array: a count, not a real."""
    t = type(v)
    if t is float or t is complex:
        return False
    if t is int or t is bool:
        return True
    if isinstance(v, (DuckArray, np.generic)):
        return v.dtype.kind in "iub"
    if isinstance(v, list):
        return asarray(v).dtype.kind in "iub"
    return isinstance(v, numbers.Integral)


def _is_complex(v: Any) -> bool:
    if type(v) is complex:
        return True
    if isinstance(v, (DuckArray, np.generic)):
        return v.dtype.kind == "c"
    return isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real)


def conj(p: Any) -> Any:
    """Complex conjugate that leaves real values (and their type) alone."""
    t = type(p)
    if t is float or t is int:
        return p
    if t is complex:
        return p.conjugate()
    if isinstance(p, (DuckArray, np.generic)):
        return np.conj(p) if p.dtype.kind == "c" else p  # type: ignore[arg-type]
    return p


def _arr(x: Any) -> Any:
    """Operands as numpy computes with them (a nested list is an array)."""
    return asarray(x) if isinstance(x, list) else x


def _cotangent(x: Any, ȳ: Any, p: Any) -> Any:
    """``unbroadcast(x, ȳ * conj(p))``, short-cutting units, zeros and plain floats."""
    if p is ONE:
        d = ȳ
    elif p is MINUS_ONE:
        d = -ȳ
    elif isinstance(p, AbstractZero):
        return p
    else:
        d = ȳ * conj(p)
    if type(x) is float and type(d) is float:  # the scalar hot path
        return d
    return unbroadcast(x, d)


def _tangent(Ω: Any, t: Any) -> Any:
    """Fit a pushed-forward tangent to the output: broadcast, then project."""
    if isinstance(t, AbstractZero):
        return t
    if type(Ω) is float and type(t) is float:
        return t
    shape = np.shape(Ω)
    if np.shape(t) != shape:
        t = np.array(np.broadcast_to(t, shape))
    return ProjectTo(Ω)(t)


def _check_kwargs(name: str, kwargs: dict) -> None:
    for k in ("out", "where"):
        if kwargs.get(k) is not None:
            raise TypeError(
                f"{name}(..., {k}=...): the derivative rule does not support {k}=.\n"
                f"To fix: write the out-of-place form without {k}= in differentiated code."
            )


# --- partial derivatives: partial(x, y, Ω) -> value, ONE, MINUS_ONE or a zero ---------


def _one(x: Any, y: Any, Ω: Any) -> Any:
    return ONE


def _minus_one(x: Any, y: Any, Ω: Any) -> Any:
    return MINUS_ONE


def _zero_x(x: Any, y: Any, Ω: Any) -> Any:
    return _NO if is_integer(x) else _ZERO


def _zero_y(x: Any, y: Any, Ω: Any) -> Any:
    return _NO if is_integer(y) else _ZERO


def _mul_dx(x: Any, y: Any, Ω: Any) -> Any:
    return y


def _mul_dy(x: Any, y: Any, Ω: Any) -> Any:
    return x


def _div_dx(x: Any, y: Any, Ω: Any) -> Any:
    return 1 / y


def _div_dy(x: Any, y: Any, Ω: Any) -> Any:
    return -Ω / y


def _mod_dy(x: Any, y: Any, Ω: Any) -> Any:
    # x % y == x - y * (x // y), and x // y is piecewise constant.
    if is_integer(y):
        return _NO
    return -(x // y)


def _float_array(v: Any) -> Any:
    a = asarray(v)
    return a.astype(np.float64) if a.dtype.kind in "iub" else a


def _power_rule(x: Any, y: Any) -> Any:
    return y * x ** (y - 1)


def _power_rule_masked(x: Any, y: Any) -> Any:
    return np.where(asarray(y) == 0, 0, y * x ** (y - 1))


def _zero_to_negative(x: Any, e: Any) -> bool:
    """Whether Python's ``x ** e`` raises ZeroDivisionError (0 to a negative or complex power)."""
    if type(x) not in (int, float, complex, bool) or type(e) not in (int, float, complex) or x != 0:
        return False
    return e.real < 0 or e.imag != 0 if type(e) is complex else e < 0


def pow_dx(x: Any, y: Any, Ω: Any = None) -> Any:
    """``∂(x**y)/∂x = y * x**(y-1)``, finite where the power is (see the module doc)."""
    if isinstance(x, DuckArray) or isinstance(y, DuckArray):
        xa = _float_array(x)
        if type(y) is int or type(y) is float:  # a scalar exponent: the common x**2
            if y == 2:
                return 2 * xa
            if y == 1:
                return np.ones_like(xa)
            if y == 0:
                return np.zeros_like(xa)
            return quietly(_power_rule, xa, y)
        return quietly(_power_rule_masked, xa, y)
    if y == 0:
        return 0 * x
    if _zero_to_negative(x, y - 1):  # Python's 0.0 ** -0.5; the one-sided derivative is inf
        return math.inf
    return quietly(_power_rule, x, y)


def _pow_dy_array(xa: Any, Ω: Any) -> Any:
    if _is_complex(xa) or _is_complex(Ω):
        nz = xa != 0
        return np.where(nz, Ω * np.log(np.where(nz, xa, 1).astype(complex)), 0)
    pos = xa > 0
    return np.where(pos, Ω * np.log(np.where(pos, xa, 1)), 0)


def pow_dy(x: Any, y: Any, Ω: Any) -> Any:
    """``∂(x**y)/∂y = Ω * log(x)``; ``NoTangent()`` for an integer exponent."""
    if is_integer(y):
        return _NO
    if isinstance(x, DuckArray) or isinstance(y, DuckArray) or isinstance(Ω, DuckArray):
        return quietly(_pow_dy_array, asarray(x), Ω)
    if _is_complex(x) or _is_complex(Ω):
        return 0 * Ω if x == 0 else Ω * complex(np.log(complex(x)))
    return Ω * math.log(x) if x > 0 else 0 * Ω


BINARY: dict[str, tuple[Callable, Callable]] = {
    # name: (∂Ω/∂x, ∂Ω/∂y)
    "add": (_one, _one),
    "sub": (_one, _minus_one),
    "mul": (_mul_dx, _mul_dy),
    "truediv": (_div_dx, _div_dy),
    "floordiv": (_zero_x, _zero_y),
    "mod": (_one, _mod_dy),
    "pow": (pow_dx, pow_dy),
}
"""The binary arithmetic table; ``_operator`` registers it for operator and numpy."""


def _same_shape_part(ȳ: Any, partial: Callable, x: Any, y: Any, Ω: Any) -> Any:
    """A cotangent when operands and output share shape and real dtype."""
    p = partial(x, y, Ω)
    if p is ONE:
        return ȳ
    if p is MINUS_ONE:
        return Thunk(lambda: -ȳ)
    if isinstance(p, AbstractZero):
        return p
    return Thunk(lambda: ȳ * p)


def binary_rules(f: Any, dx: Callable, dy: Callable, name: str) -> tuple[Callable, Callable]:
    """The ``(rrule, frule)`` implementations of a broadcasting binary operation."""

    def binary_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
        if kwargs:
            _check_kwargs(name, kwargs)
        Ω = f(x, y, **kwargs)
        lazy = isinstance(Ω, DuckArray)
        # Two real arrays of one shape and dtype: no broadcasting, no projection.
        same = (
            lazy
            and type(x) is np.ndarray
            and type(y) is np.ndarray
            and x.shape == y.shape == Ω.shape
            and x.dtype == y.dtype == Ω.dtype
            and Ω.dtype.kind == "f"
        )

        def binary_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return _NO, _ZERO, _ZERO
            if same and type(ȳ) is np.ndarray and ȳ.dtype == Ω.dtype and ȳ.shape == Ω.shape:
                return _NO, _same_shape_part(ȳ, dx, x, y, Ω), _same_shape_part(ȳ, dy, x, y, Ω)
            xa, ya = _arr(x), _arr(y)
            if lazy:  # array cotangents are computed only if someone uses them
                return (
                    _NO,
                    Thunk(lambda: _cotangent(x, ȳ, dx(xa, ya, Ω))),
                    Thunk(lambda: _cotangent(y, ȳ, dy(xa, ya, Ω))),
                )
            return _NO, _cotangent(x, ȳ, dx(xa, ya, Ω)), _cotangent(y, ȳ, dy(xa, ya, Ω))

        binary_pullback.__name__ = binary_pullback.__qualname__ = f"{name}_pullback"
        return Ω, binary_pullback

    def binary_frule(ḟ: Any, ẋ: Any, ẏ: Any, x: Any, y: Any, **kwargs: Any) -> Any:
        if kwargs:
            _check_kwargs(name, kwargs)
        Ω = f(x, y, **kwargs)
        xa, ya = _arr(x), _arr(y)
        t: Any = _ZERO
        for ṫ, partial in ((ẋ, dx), (ẏ, dy)):
            ṫ = unthunk(ṫ)
            if isinstance(ṫ, AbstractZero):
                continue
            p = partial(xa, ya, Ω)
            if p is ONE:
                t = t + ṫ
            elif p is MINUS_ONE:
                t = t - ṫ
            elif not isinstance(p, AbstractZero):
                t = t + p * _arr(ṫ)
        return Ω, _tangent(Ω, t)

    binary_rrule.__name__ = binary_rrule.__qualname__ = f"{name}_rrule"
    binary_frule.__name__ = binary_frule.__qualname__ = f"{name}_frule"
    return binary_rrule, binary_frule


def register_binary(f: Any, types: tuple, dx: Callable, dy: Callable, name: str) -> None:
    """Register the broadcasting binary rules for ``f`` at the given argument types."""
    r, fr = binary_rules(f, dx, dy, name)
    rrule.register_signature(f, r, types)
    frule.register_signature(f, fr, types)


# --- unary ---------------------------------------------------------------------------


def _complex_sign(x: Any) -> Any:
    a = np.abs(x)
    return np.where(a == 0, 0, np.conj(x) / np.where(a == 0, 1, a))


def _abs_partial(x: Any, Ω: Any) -> Any:
    """``d|x|`` as a conjugated partial: ``sign(x)`` (0 at 0), or ``conj(z)/|z|`` for complex."""
    if isinstance(x, (DuckArray, np.generic)):
        if x.dtype.kind == "c":
            return quietly(_complex_sign, x)
        return np.sign(x)  # type: ignore[arg-type]
    if _is_complex(x):
        a = abs(x)
        return 0j if a == 0 else x.conjugate() / a
    return float((x > 0) - (x < 0))


def _unit_partial(x: Any, Ω: Any) -> Any:
    return ONE


def _minus_unit_partial(x: Any, Ω: Any) -> Any:
    return MINUS_ONE


UNARY: dict[str, Callable] = {
    # name: ∂Ω/∂x as a function of (x, Ω)
    "neg": _minus_unit_partial,
    "pos": _unit_partial,
    "abs": _abs_partial,
}


def unary_rules(f: Any, partial: Callable, name: str) -> tuple[Callable, Callable]:
    """``(rrule, frule)`` implementations of an elementwise unary operation.

    ``partial(x, Ω)`` is the derivative; for a real-valued function of a complex
    argument it is the conjugate of the gradient, so that the pullback
    ``re(ȳ) * conj(partial)`` and the pushforward ``re(partial * ẋ)`` both hold.
    """

    def unary_rrule(x: Any, **kwargs: Any) -> Any:
        if kwargs:
            _check_kwargs(name, kwargs)
        Ω = f(x, **kwargs)
        real_out = not _is_complex(Ω) and _is_complex(_arr(x))

        def unary_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return _NO, _ZERO
            if real_out:  # a real output has a real cotangent
                ȳ = np.real(ȳ)
            return _NO, _cotangent(x, ȳ, partial(_arr(x), Ω))

        unary_pullback.__name__ = unary_pullback.__qualname__ = f"{name}_pullback"
        return Ω, unary_pullback

    def unary_frule(ḟ: Any, ẋ: Any, x: Any, **kwargs: Any) -> Any:
        if kwargs:
            _check_kwargs(name, kwargs)
        Ω = f(x, **kwargs)
        ẋ = unthunk(ẋ)
        if isinstance(ẋ, AbstractZero):
            return Ω, _ZERO
        p = partial(_arr(x), Ω)
        if p is ONE:
            t = ẋ
        elif p is MINUS_ONE:
            t = -ẋ
        else:
            t = p * _arr(ẋ)
        return Ω, _tangent(Ω, t)

    unary_rrule.__name__ = unary_rrule.__qualname__ = f"{name}_rrule"
    unary_frule.__name__ = unary_frule.__qualname__ = f"{name}_frule"
    return unary_rrule, unary_frule


def register_unary(f: Any, types: tuple, partial: Callable, name: str) -> None:
    """Register the elementwise unary rules for ``f`` at the given argument types."""
    r, fr = unary_rules(f, partial, name)
    rrule.register_signature(f, r, types)
    frule.register_signature(f, fr, types)
