"""Rules for numpy's unary non-arithmetic ufuncs and ``np.real``/``np.imag``/``np.angle``.

Most of them are holomorphic where numpy accepts complex input, so one table
of derivatives ``f'(x)`` (given ``x`` and the output ``Ω``) drives both rules:
the frule is ``ẏ = f'(x) ẋ`` and the pullback ``∂x = ȳ conj(f'(x))``, as in
ChainRules. The non-holomorphic ones (``conj``, ``real``, ``imag``, ``angle``
and complex ``sign``) are written out by hand below the table.

Derivatives use numpy's own arithmetic, so at a domain edge they give what
numpy gives (``log`` at 0: ``-inf`` and an infinite derivative, with numpy's
``RuntimeWarning``). Piecewise-constant functions (``floor``, ``ceil``,
``trunc``, ``rint``, real ``sign``) have a ``ZeroTangent()`` derivative.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.sin, np.array([0.0, np.pi]))
>>> pb(np.ones(2))[1]
array([ 1., -1.])
>>> rrule(np.imag, 1.0 + 2.0j)[1](3.0)[1]   # the gradient of Im z is i
3j

The arithmetic ufuncs (``add``, ``multiply``, ``power``, ``absolute``, ...) live
with the operator rules, the binary ones here in :mod:`rules._numpy_binary`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import DuckArray, NoTangent, ZeroTangent, frule, rrule, unthunk

from ._util import asarray, is_zero, project
from ._util import getrefcount as _getrefcount  # sys.getrefcount where calibrated

__all__ = [
    "HOLOMORPHIC",
    "OUTPUT_ONLY",
    "PrimalLike",
    "conj_if_complex",
    "no_ufunc_kwargs",
    "project_like",
    "times_reusing",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
# Python floats, not numpy scalars, so that float32 arrays stay float32 (NEP 50).
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0


def _arcsin_d(x: Any, Ω: Any) -> Any:
    return 1 / np.sqrt(1 - x * x)


def _arccosh_d(x: Any, Ω: Any) -> Any:
    # sqrt(x-1)·sqrt(x+1) rather than sqrt(x²-1): the two differ in sign for
    # complex x with a negative real part, and only the first matches numpy's branch.
    return 1 / (np.sqrt(x - 1) * np.sqrt(x + 1))


def _one_minus_square(Ω: Any) -> Any:
    """``1 - Ω * Ω``, in one fresh buffer for an array (the same values, one temporary)."""
    if type(Ω) is np.ndarray:
        d = Ω * Ω
        return np.subtract(1, d, out=d)
    return 1 - Ω * Ω


# ufunc -> f'(x) given (x, Ω); the x of a list argument arrives as an array.
HOLOMORPHIC: dict[Any, Callable[[Any, Any], Any]] = {
    np.sin: lambda x, Ω: np.cos(x),
    np.cos: lambda x, Ω: -np.sin(x),
    np.tan: lambda x, Ω: 1 + Ω * Ω,
    np.arcsin: _arcsin_d,
    np.arccos: lambda x, Ω: -_arcsin_d(x, Ω),
    np.arctan: lambda x, Ω: 1 / (1 + x * x),
    np.sinh: lambda x, Ω: np.cosh(x),
    np.cosh: lambda x, Ω: np.sinh(x),
    np.tanh: lambda x, Ω: _one_minus_square(Ω),
    np.arcsinh: lambda x, Ω: 1 / np.sqrt(x * x + 1),
    np.arccosh: _arccosh_d,
    np.arctanh: lambda x, Ω: 1 / (1 - x * x),
    np.exp: lambda x, Ω: Ω,
    np.exp2: lambda x, Ω: Ω * _LN2,
    np.expm1: lambda x, Ω: Ω + 1,
    np.log: lambda x, Ω: 1 / x,
    np.log2: lambda x, Ω: 1 / (x * _LN2),
    np.log10: lambda x, Ω: 1 / (x * _LN10),
    np.log1p: lambda x, Ω: 1 / (1 + x),
    np.sqrt: lambda x, Ω: 1 / (2 * Ω),
    np.cbrt: lambda x, Ω: 1 / (3 * Ω * Ω),
    np.square: lambda x, Ω: 2 * x,
    np.reciprocal: lambda x, Ω: -Ω * Ω,
    np.deg2rad: lambda x, Ω: _RAD,
    np.radians: lambda x, Ω: _RAD,
    np.rad2deg: lambda x, Ω: _DEG,
    np.degrees: lambda x, Ω: _DEG,
}

# Derivatives that read only the output Ω: their pullbacks need not keep ``x`` alive.
OUTPUT_ONLY = frozenset(
    [np.tan, np.tanh, np.exp, np.exp2, np.expm1, np.sqrt, np.cbrt, np.reciprocal]
)

# Piecewise constant: the derivative is zero wherever it exists.
PIECEWISE_CONSTANT = (np.floor, np.ceil, np.trunc, np.rint)


def no_ufunc_kwargs(f: Any, kwargs: dict) -> None:
    """Reject ``out=``, ``where=``, ``dtype=``...: the rules cover the plain call only."""
    if kwargs:
        name = getattr(f, "__name__", repr(f))
        raise TypeError(
            f"the rules for numpy.{name} support no keyword arguments; got "
            f"{', '.join(sorted(kwargs))}.\n"
            f"To fix: call numpy.{name} on the arguments alone (no out=, where=, dtype=) "
            "and convert or assign the result afterwards."
        )


def conj_if_complex(p: Any) -> Any:
    """``conj(p)``, skipping the copy when ``p`` is real."""
    if isinstance(p, (complex, np.complexfloating)) or (
        isinstance(p, DuckArray) and p.dtype.kind == "c"
    ):
        return np.conj(p)
    return p


def _arr(x: Any) -> Any:
    """``x`` as numpy sees it: lists become arrays and Python numbers numpy scalars.

    So the derivative follows numpy's arithmetic (``1 / 0.0`` is ``inf`` with a
    ``RuntimeWarning``, not a ``ZeroDivisionError``).
    """
    if isinstance(x, DuckArray):
        return x
    return asarray(x)[()]


def _name(fn: Callable, name: str) -> Callable:
    fn.__name__ = fn.__qualname__ = name
    return fn


def times_reusing(ȳ: Any, p: Any) -> Any:
    """``ȳ * p``, written into ``p`` when ``p`` is a fresh real array nobody else holds
    and already has the product's shape and dtype.

    Call it with ``p`` as a temporary (never a variable): CPython's reference count
    is then 2 (this parameter and getrefcount's argument) exactly when nothing else
    holds ``p``; an output ``Ω`` that the derivative returns as is (``exp``) is also
    held by the pullback's closure, so it is never overwritten. Where reference
    counts are not calibrated (``REFCOUNTS_CALIBRATED``) it always allocates.

    >>> ȳ = np.array([1.0, 2.0])
    >>> times_reusing(ȳ, np.cos(np.zeros(2)))      # a temporary: may be reused
    array([1., 2.])
    >>> p = np.array([3.0, 4.0])
    >>> times_reusing(ȳ, p), p                     # a variable: never written
    (array([3., 8.]), array([3., 4.]))
    """
    if (
        type(p) is _ndarray
        and type(ȳ) is _ndarray
        and _getrefcount(p) <= 2
        and p.base is None
        and p.dtype.kind == "f"
        and p.shape == ȳ.shape
        and p.dtype == ȳ.dtype
        and p.flags.writeable
    ):
        return _multiply(ȳ, p, out=p)
    return ȳ * p


#: The old name, which ``ad`` imports until it switches to ``rules.extension``.
_times = times_reusing
_ndarray = np.ndarray
_multiply = np.multiply


class PrimalLike:
    """What projection reads of an array primal (type, dtype, shape), without its data:
    pullbacks whose derivative needs only the output keep this instead of ``x``.

    >>> like = PrimalLike(np.zeros((2, 3), np.float32))
    >>> like.shape, like.dtype, like.zeros().sum()
    ((2, 3), dtype('float32'), np.float32(0.0))

    See also: :func:`project_like`.
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, x: np.ndarray) -> None:
        self.dtype, self.shape = x.dtype, x.shape

    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape, self.dtype)


def project_like(x: Any, d: Any) -> Any:
    """``d`` projected onto the primal ``x``, which may be a :class:`PrimalLike`.

    For a ``PrimalLike`` a ``d`` of its shape and dtype is returned as it is, and any
    other ``d`` is projected as onto an array of zeros like the primal; any other
    ``x`` is projected onto as ``rulescore.ProjectTo(x)`` does.

    >>> x = np.ones(2, np.float32)
    >>> project_like(PrimalLike(x), np.array([1.5, 2.5]))      # float64 -> float32
    array([1.5, 2.5], dtype=float32)
    >>> project_like(2.0, np.float64(3.0) + 1j)                 # real primal: real part
    3.0
    """
    if type(x) is PrimalLike:
        if type(d) is _ndarray and d.shape == x.shape and d.dtype == x.dtype:
            return d
        x = x.zeros()  # the rare case: a stand-in with x's type, dtype and shape
    return project(x, d)


#: The old names, which ``ad`` imports until it switches to ``rules.extension``.
_Like = PrimalLike
_project_like = project_like


def _register_holomorphic(f: Any, deriv: Callable[[Any, Any], Any]) -> None:
    name = f.__name__
    output_only = f in OUTPUT_ONLY

    def holomorphic_rrule(x: Any, **kwargs: Any) -> Any:
        no_ufunc_kwargs(f, kwargs)
        Ω = f(x)
        if output_only and type(x) is _ndarray and type(Ω) is _ndarray and Ω.dtype.kind == "f":
            x_like: Any = PrimalLike(x)

            def holomorphic_pullback(ȳ: Any) -> tuple:
                ȳ = unthunk(ȳ)
                if is_zero(ȳ):
                    return NoTangent(), ZeroTangent()
                return NoTangent(), project_like(x_like, times_reusing(ȳ, deriv(None, Ω)))

            return Ω, _name(holomorphic_pullback, f"{name}_pullback")

        def holomorphic_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return NoTangent(), ZeroTangent()
            return NoTangent(), project(x, times_reusing(ȳ, conj_if_complex(deriv(_arr(x), Ω))))

        return Ω, _name(holomorphic_pullback, f"{name}_pullback")

    def holomorphic_frule(ḟ: Any, ẋ: Any, x: Any, **kwargs: Any) -> Any:
        no_ufunc_kwargs(f, kwargs)
        Ω = f(x)
        ẋ = unthunk(ẋ)
        if is_zero(ẋ):
            return Ω, ZeroTangent()
        # Projected: constant derivatives times a Python-float ẋ would give a Python float.
        return Ω, project(Ω, deriv(_arr(x), Ω) * ẋ)

    rrule.register(f)(_name(holomorphic_rrule, f"{name}_rrule"))
    frule.register(f)(_name(holomorphic_frule, f"{name}_frule"))


def _register_constant(f: Any) -> None:
    name = f.__name__

    def constant_rrule(x: Any, **kwargs: Any) -> Any:
        no_ufunc_kwargs(f, kwargs)

        def constant_pullback(ȳ: Any) -> tuple:
            return NoTangent(), ZeroTangent()

        return f(x), _name(constant_pullback, f"{name}_pullback")

    def constant_frule(ḟ: Any, ẋ: Any, x: Any, **kwargs: Any) -> Any:
        no_ufunc_kwargs(f, kwargs)
        return f(x), ZeroTangent()

    rrule.register(f)(_name(constant_rrule, f"{name}_rrule"))
    frule.register(f)(_name(constant_frule, f"{name}_frule"))


for _f, _d in HOLOMORPHIC.items():
    _register_holomorphic(_f, _d)
for _f in PIECEWISE_CONSTANT:
    _register_constant(_f)


def _is_complex(x: Any) -> bool:
    return np.iscomplexobj(x)


# Non-holomorphic functions. Each writes the real-linear map dy = A(dz) and its
# adjoint under <a, b> = Re(conj(a) b), which is ChainRules' complex convention.


@rrule.register(np.conj)  # np.conj is np.conjugate
def _(x, **kwargs):
    no_ufunc_kwargs(np.conj, kwargs)

    def conj_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent()
        return NoTangent(), project(x, np.conj(ȳ))

    return np.conj(x), conj_pullback


@frule.register(np.conj)
def _(ḟ, ẋ, x, **kwargs):
    no_ufunc_kwargs(np.conj, kwargs)
    ẋ, Ω = unthunk(ẋ), np.conj(x)
    return Ω, ẋ if is_zero(ẋ) else project(Ω, np.conj(ẋ))


@rrule.register(np.real)
def _(x):
    def real_pullback(ȳ):
        # d(Re z) = Re(dz): the cotangent is real, as a complex number.
        return NoTangent(), project(x, np.real(unthunk(ȳ)))

    return np.real(x), real_pullback


@frule.register(np.real)
def _(ḟ, ẋ, x):
    Ω = np.real(x)
    return Ω, project(Ω, np.real(unthunk(ẋ)))


@rrule.register(np.imag)
def _(x):
    def imag_pullback(ȳ):
        # d(Im z) = Im(dz) = Re(conj(i) dz): the cotangent is i·Re(ȳ) (zero for real x).
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or not _is_complex(x):
            return NoTangent(), ZeroTangent()
        return NoTangent(), project(x, 1j * np.real(ȳ))

    return np.imag(x), imag_pullback


@frule.register(np.imag)
def _(ḟ, ẋ, x):
    ẋ = unthunk(ẋ)
    if is_zero(ẋ) or not _is_complex(x):
        return np.imag(x), ZeroTangent()
    Ω = np.imag(x)
    return Ω, project(Ω, np.imag(ẋ))


def _angle_direction(x: Any, deg: bool) -> Any:
    """i·z/|z|² (times 180/π for degrees), the gradient of arg(z); 0 at z = 0."""
    z = asarray(x)
    r2 = np.real(z * np.conj(z))
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(r2 == 0, 0, 1j * z / r2)
    return g * _DEG if deg else g


@rrule.register(np.angle)
def _(x, *args, **kwargs):
    # `deg` may come positionally; the pullback then answers NoTangent for it.
    Ω = np.angle(x, *args, **kwargs)
    deg = args[0] if args else kwargs.get("deg", False)
    rest = (NoTangent(),) * len(args)

    def angle_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or not _is_complex(x):  # real x: arg is 0 or π, piecewise constant
            return (NoTangent(), ZeroTangent(), *rest)
        return (NoTangent(), project(x, np.real(ȳ) * _angle_direction(x, deg)), *rest)

    return Ω, angle_pullback


@frule.register(np.angle)
def _(ḟ, *args, **kwargs):
    n = len(args) // 2
    ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
    Ω = np.angle(x, *extra, **kwargs)
    deg = extra[0] if extra else kwargs.get("deg", False)
    if is_zero(ẋ) or not _is_complex(x):
        return Ω, ZeroTangent()
    # d arg(z) = Re(conj(i z / |z|²) dz)
    return Ω, project(Ω, np.real(np.conj(_angle_direction(x, deg)) * ẋ))


def _sign_jvp(z: Any, Ω: Any, dz: Any) -> Any:
    """d(z/|z|) = (dz - Ω Re(conj(Ω) dz)) / |z|; self-adjoint, so also the pullback."""
    r = np.abs(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (dz - Ω * np.real(np.conj(Ω) * dz)) / r
    return np.where(r == 0, 0, out)


@rrule.register(np.sign)
def _(x, **kwargs):
    no_ufunc_kwargs(np.sign, kwargs)
    Ω = np.sign(x)

    def sign_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or not _is_complex(x):  # real sign is piecewise constant
            return NoTangent(), ZeroTangent()
        return NoTangent(), project(x, _sign_jvp(_arr(x), Ω, ȳ))

    return Ω, sign_pullback


@frule.register(np.sign)
def _(ḟ, ẋ, x, **kwargs):
    no_ufunc_kwargs(np.sign, kwargs)
    Ω = np.sign(x)
    ẋ = unthunk(ẋ)
    if is_zero(ẋ) or not _is_complex(x):
        return Ω, ZeroTangent()
    return Ω, project(Ω, _sign_jvp(_arr(x), Ω, ẋ))
