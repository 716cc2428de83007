"""Rules for scipy.special's elementwise functions (its ufuncs and their Python kin).

Each function is a table entry: one partial derivative per argument, given the
arguments and the output Ω. One generic pair of rules serves them all: the
frule adds ``∂f/∂xᵢ · ẋᵢ`` on the broadcast shape, and the pullback reduces
``ȳ · conj(∂f/∂xᵢ)`` back to each argument's shape with
:func:`rules._util.unbroadcast` (a Python float gets a float, float32 stays
float32). Where scipy evaluates complex arguments the functions are
holomorphic (ChainRules' convention), except ``ive``, which scales by
``exp(-|Re z|)``: its real-linear part is written out. With two or more
differentiable arguments each cotangent is a thunk, computed only if used.

Arguments without a derivative:

* orders and counts (``polygamma``'s and ``yn``'s ``n``, ``multigammaln``'s
  ``d``; the order ``v`` of ``jv``/``yv``/``iv``/``ive``/``kv``/``kve`` when
  it is an integer or an integer array) get ``NoTangent()``;
* parameters whose derivative exists but is not implemented (``gammainc``'s
  and ``gammaincc``'s ``a``, ``betainc``'s ``a`` and ``b``, a float Bessel
  order) get ``not_implemented(...)``: an error if the derivative is used,
  never a silent zero. Keyword arguments get no cotangent (ChainRules'
  convention; pass ``zeta``'s ``q`` positionally to differentiate it).

Edges, each the one-sided limit of the derivative where one exists:

* ``xlogy(x, y)`` is 0 at x = 0 for every y (scipy's convention), so there
  ``∂/∂y = 0`` and ``∂/∂x = log y`` (the derivative of x log y, as in JAX);
  ``xlog1py`` likewise (``log1p(y)``, 0).
* ``entr`` has derivative +inf at 0; ``rel_entr``/``kl_div`` have ``∂/∂x = -inf``
  at x = 0 < y, and ``∂/∂y`` = 0 (rel_entr), 1 (kl_div) for x = 0 ≤ y; where
  they are +inf (outside their domain) and at x = y = 0 for ``∂/∂x`` the
  derivative is taken as 0. A NaN output has NaN derivatives.
* ``rgamma`` has slope (-1)ⁿ n! at its zeros -n (where ψ is infinite);
  ``i0e``/``i1e``/``ive`` (kinked at 0 by the ``|x|``) use sign(0) = 0.

Stable forms: ``expit' = expit(x)·expit(-x)``, ``log_expit' = expit(-x)``,
``log_ndtr' = √(2/π)/erfcx(-x/√2)`` (→ -x as x → -∞, no 0/0),
``gammainc' = exp((a-1)log x - x - gammaln(a))`` and the same in logs for
``betainc``; ``erfcx``, ``boxcox``'s λ, ``digamma`` for complex z and ``zeta``'s
s are in :mod:`rules._scipy_special_series`. ``logsumexp``, ``softmax`` and
``log_softmax`` are in :mod:`rules._scipy_special_logsumexp`.

>>> import numpy as np, scipy.special as sc
>>> from rulescore import rrule, unthunk
>>> y, pb = rrule(sc.xlogy, np.array([0.0, 2.0]), np.e)
>>> dx, dy = map(unthunk, pb(np.ones(2))[1:])   # two arguments: thunks
>>> dx, dy      # log y for x; x/y, summed over the broadcast, for y
(array([1., 1.]), 0.7357588823428847)
>>> rrule(sc.log_ndtr, -1e5)[1](1.0)[1]    # ≈ -x: no overflow, no 0/0
100000.00001
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sc

from rulescore import (
    NoTangent,
    NotImplementedTangent,
    Thunk,
    ZeroTangent,
    frule,
    non_differentiable,
    not_implemented,
    rrule,
    unthunk,
)

from . import _scipy_special_logsumexp  # noqa: F401  (imported for its registrations)
from ._numpy_binary import _as_output_tangent
from ._numpy_elementwise import conj_if_complex
from ._quiet import quietly
from ._scipy_special_series import boxcox_dlmbda, erfcx_d, trigamma, zeta_ds
from ._util import is_zero, unbroadcast

__all__ = ["SPECIAL"]

_2_SQRT_PI = 2.0 / math.sqrt(math.pi)  # erf' at 0
_SQRT_PI_2 = math.sqrt(math.pi) / 2.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


class _Order:
    """Marks a Bessel order: no tangent when integer-typed, not implemented otherwise."""


_ORDER = _Order()
_NONE = NoTangent()


def _nan_where(Ω: Any, d: Any) -> Any:
    """``d``, with NaN wherever the output is NaN (a NaN input must not get a number)."""
    return np.where(np.isnan(Ω), np.nan, d)


def _d_rgamma(x: Any, Ω: Any) -> Any:
    d = -Ω * sc.digamma(x)
    # 1/Γ has simple zeros at 0, -1, -2, ... where ψ is infinite: the slope is (-1)ⁿ n!.
    re = np.real(x)
    zero = (Ω == 0) & (np.imag(x) == 0) & (re <= 0) & (re == np.floor(re))
    if not np.any(zero):
        return d
    n = np.where(zero, -re, 0.0)
    return np.where(zero, np.where(n % 2 == 0, 1.0, -1.0) * sc.gamma(n + 1), d)


def _d_entr(x: Any, Ω: Any) -> Any:
    return _nan_where(Ω, np.where(x > 0, -(np.log(x) + 1), np.where(x == 0, np.inf, 0.0)))


def _d_xlogy_y(x: Any, y: Any, Ω: Any) -> Any:
    return np.where(x == 0, 0.0, x / y)  # xlogy(0, y) = 0 for every y


def _d_xlog1py_y(x: Any, y: Any, Ω: Any) -> Any:
    return np.where(x == 0, 0.0, x / (1 + y))


def _d_rel_entr_x(x: Any, y: Any, Ω: Any) -> Any:
    inside = (x > 0) & (y > 0)
    d = np.where(inside, np.log(x) - np.log(y) + 1, np.where((x == 0) & (y > 0), -np.inf, 0.0))
    return _nan_where(Ω, d)


def _d_rel_entr_y(x: Any, y: Any, Ω: Any) -> Any:
    return _nan_where(Ω, np.where((x > 0) & (y > 0), -x / y, 0.0))


def _d_kl_div_x(x: Any, y: Any, Ω: Any) -> Any:
    inside = (x > 0) & (y > 0)
    d = np.where(inside, np.log(x) - np.log(y), np.where((x == 0) & (y > 0), -np.inf, 0.0))
    return _nan_where(Ω, d)


def _d_kl_div_y(x: Any, y: Any, Ω: Any) -> Any:
    d = np.where((x > 0) & (y > 0), 1 - x / y, np.where((x == 0) & (y >= 0), 1.0, 0.0))
    return _nan_where(Ω, d)


def _d_gammainc_x(a: Any, x: Any, Ω: Any) -> Any:
    # x^(a-1) e^-x / Γ(a), in logs (xlogy: the a = 1, x = 0 corner is exactly 1).
    return np.exp(sc.xlogy(a - 1, x) - x - sc.gammaln(a))


def _d_gammaincc_x(a: Any, x: Any, Ω: Any) -> Any:
    return -_d_gammainc_x(a, x, Ω)


def _d_betainc_x(a: Any, b: Any, x: Any, Ω: Any) -> Any:
    return np.exp(sc.xlogy(a - 1, x) + sc.xlog1py(b - 1, -x) - sc.betaln(a, b))


def _d_ive(v: Any, z: Any, Ω: Any) -> Any:
    # ive = iv·exp(-|Re z|): d ive = p dz + c Re(dz), a pair (p, c) for complex z.
    p = 0.5 * (sc.ive(v - 1, z) + sc.ive(v + 1, z))
    c = -np.sign(np.real(z)) * Ω
    return (p, c) if np.iscomplexobj(z) else p + c


def _d_multigammaln_a(a: Any, d: Any, Ω: Any) -> Any:
    # multigammaln(a, d) = d(d-1)/4 log π + Σ_{j<d} gammaln(a - j/2)
    return sum(sc.digamma(a - 0.5 * j) for j in range(int(d)))


def _d_zeta_x(x: Any, q: Any, out: Any, Ω: Any) -> Any:
    return _nan_where(Ω, zeta_ds(x, q))


def _d_zeta_q(x: Any, q: Any, out: Any, Ω: Any) -> Any:
    return _NONE if q is None else -x * sc.zeta(x + 1, q)


def _d_boxcox_x(x: Any, lmbda: Any, Ω: Any) -> Any:
    return np.power(x, lmbda - 1)


def _d_boxcox_lmbda(x: Any, lmbda: Any, Ω: Any) -> Any:
    return boxcox_dlmbda(x, lmbda)


def _missing(what: str) -> str:
    return f"the derivative with respect to {what} is not implemented"


_A, _B = _missing("the parameter a"), _missing("the parameter b")

# function -> one entry per argument: a partial (args..., Ω) -> ∂f/∂xᵢ (or a pair
# (p, c) meaning p dz + c Re(dz)), NoTangent() (no derivative), _ORDER, or a string
# saying why the derivative is not implemented.
SPECIAL: dict[Any, tuple] = {
    # gamma and friends
    sc.gammaln: (lambda x, Ω: sc.digamma(x),),
    sc.loggamma: (lambda x, Ω: sc.digamma(x),),
    sc.gamma: (lambda x, Ω: Ω * sc.digamma(x),),
    sc.rgamma: (_d_rgamma,),
    sc.digamma: (lambda x, Ω: trigamma(x),),
    sc.polygamma: (_NONE, lambda n, x, Ω: sc.polygamma(n + 1, x)),
    sc.multigammaln: (_d_multigammaln_a, _NONE),
    sc.beta: (
        lambda a, b, Ω: Ω * (sc.digamma(a) - sc.digamma(a + b)),
        lambda a, b, Ω: Ω * (sc.digamma(b) - sc.digamma(a + b)),
    ),
    sc.betaln: (
        lambda a, b, Ω: sc.digamma(a) - sc.digamma(a + b),
        lambda a, b, Ω: sc.digamma(b) - sc.digamma(a + b),
    ),
    sc.gammainc: (_A, _d_gammainc_x),
    sc.gammaincc: (_A, _d_gammaincc_x),
    sc.betainc: (_A, _B, _d_betainc_x),
    sc.zeta: (_d_zeta_x, _d_zeta_q, _NONE),
    # error functions and the normal distribution
    sc.erf: (lambda x, Ω: _2_SQRT_PI * np.exp(-x * x),),
    sc.erfc: (lambda x, Ω: -_2_SQRT_PI * np.exp(-x * x),),
    sc.erfinv: (lambda x, Ω: _SQRT_PI_2 * np.exp(Ω * Ω),),
    sc.erfcinv: (lambda x, Ω: -_SQRT_PI_2 * np.exp(Ω * Ω),),
    sc.erfcx: (erfcx_d,),
    sc.ndtr: (lambda x, Ω: _INV_SQRT_2PI * np.exp(-0.5 * x * x),),
    sc.log_ndtr: (lambda x, Ω: _SQRT_2_PI / sc.erfcx(-_SQRT_HALF * x),),
    sc.ndtri: (lambda x, Ω: _SQRT_2PI * np.exp(0.5 * Ω * Ω),),
    # logistic
    sc.expit: (lambda x, Ω: Ω * sc.expit(-x),),
    sc.logit: (lambda x, Ω: 1 / (x * (1 - x)),),
    sc.log_expit: (lambda x, Ω: sc.expit(-x),),
    # logs and information
    sc.xlogy: (lambda x, y, Ω: np.log(y), _d_xlogy_y),
    sc.xlog1py: (lambda x, y, Ω: np.log1p(y), _d_xlog1py_y),
    sc.entr: (_d_entr,),
    sc.rel_entr: (_d_rel_entr_x, _d_rel_entr_y),
    sc.kl_div: (_d_kl_div_x, _d_kl_div_y),
    sc.expm1: (lambda x, Ω: Ω + 1,),
    sc.log1p: (lambda x, Ω: 1 / (1 + x),),
    sc.cbrt: (lambda x, Ω: 1 / (3 * Ω * Ω),),
    sc.boxcox: (_d_boxcox_x, _d_boxcox_lmbda),
    # Bessel functions: J'ᵥ = (Jᵥ₋₁ - Jᵥ₊₁)/2, I'ᵥ = (Iᵥ₋₁ + Iᵥ₊₁)/2, K'ᵥ = -(Kᵥ₋₁ + Kᵥ₊₁)/2
    sc.j0: (lambda x, Ω: -sc.j1(x),),
    sc.j1: (lambda x, Ω: 0.5 * (sc.j0(x) - sc.jv(2, x)),),
    sc.jv: (_ORDER, lambda v, z, Ω: 0.5 * (sc.jv(v - 1, z) - sc.jv(v + 1, z))),
    sc.y0: (lambda x, Ω: -sc.y1(x),),
    sc.y1: (lambda x, Ω: 0.5 * (sc.y0(x) - sc.yv(2, x)),),
    sc.yn: (_NONE, lambda n, x, Ω: 0.5 * (sc.yn(n - 1, x) - sc.yn(n + 1, x))),
    sc.yv: (_ORDER, lambda v, z, Ω: 0.5 * (sc.yv(v - 1, z) - sc.yv(v + 1, z))),
    sc.i0: (lambda x, Ω: sc.i1(x),),
    sc.i0e: (lambda x, Ω: sc.i1e(x) - np.sign(x) * Ω,),
    sc.i1: (lambda x, Ω: 0.5 * (sc.i0(x) + sc.iv(2, x)),),
    sc.i1e: (lambda x, Ω: 0.5 * (sc.i0e(x) + sc.ive(2, x)) - np.sign(x) * Ω,),
    sc.iv: (_ORDER, lambda v, z, Ω: 0.5 * (sc.iv(v - 1, z) + sc.iv(v + 1, z))),
    sc.ive: (_ORDER, _d_ive),
    sc.k0: (lambda x, Ω: -sc.k1(x),),
    sc.k0e: (lambda x, Ω: Ω - sc.k1e(x),),
    sc.k1: (lambda x, Ω: -0.5 * (sc.k0(x) + sc.kv(2, x)),),
    sc.k1e: (lambda x, Ω: Ω - 0.5 * (sc.k0e(x) + sc.kve(2, x)),),
    sc.kv: (_ORDER, lambda v, z, Ω: -0.5 * (sc.kv(v - 1, z) + sc.kv(v + 1, z))),
    sc.kve: (_ORDER, lambda v, z, Ω: Ω - 0.5 * (sc.kve(v - 1, z) + sc.kve(v + 1, z))),
}

# The Python functions among them: their parameters and defaults, to bind keywords.
_PARAMETERS: dict[Any, tuple[tuple[str, ...], dict]] = {
    sc.polygamma: (("n", "x"), {}),
    sc.multigammaln: (("a", "d"), {}),
    sc.zeta: (("x", "q", "out"), {"q": None, "out": None}),
}


def _arr(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, (list, tuple)) else x


def _integer(x: Any) -> bool:
    return np.asarray(x).dtype.kind in "iub"


def _no_derivative(name: str, entry: Any, x: Any) -> Any:
    """The tangent of an argument without a partial, or None when it has one."""
    if entry is _ORDER:
        if _integer(x):
            return _NONE
        entry = _missing("a non-integer order v")
    if isinstance(entry, str):
        return not_implemented(f"scipy.special.{name}: {entry}")
    if not callable(entry):
        return entry
    return None


def _pulled_back(x: Any, ȳ: Any, p: Any) -> Any:
    """``ȳ conj(p)`` reduced to ``x``'s shape (a pair ``(p, c)`` adds ``Re(conj(c) ȳ)``)."""
    if is_zero(p):
        return p
    if type(p) is tuple:
        return unbroadcast(x, ȳ * np.conj(p[0]) + np.real(np.conj(p[1]) * ȳ))
    return unbroadcast(x, ȳ * conj_if_complex(p))


def _pushed_forward(p: Any, ẋ: Any) -> Any:
    if type(p) is tuple:
        return p[0] * ẋ + p[1] * np.real(ẋ)
    return p * ẋ


def _check_call(name: str, signature: Any, args: tuple, kwargs: dict) -> None:
    """Refuse what the rules cannot follow, before the call: a ufunc's keywords, ``out``."""
    if signature is None:  # a ufunc: its inputs are positional
        if kwargs:
            raise TypeError(
                f"the rules for scipy.special.{name} support no keyword arguments; got "
                f"{', '.join(sorted(kwargs))}.\nTo fix: call scipy.special.{name} on the "
                "arguments alone (no out=, where=, dtype=) and convert the result afterwards."
            )
        return
    params, _ = signature
    if "out" in params:
        i = params.index("out")
        if (args[i] if len(args) > i else kwargs.get("out")) is not None:
            raise TypeError(
                f"the rule for scipy.special.{name} does not support out=: the AD cannot see "
                f"a write into an existing array.\nTo fix: write y = scipy.special.{name}(...) "
                "and use y."
            )


def _values(signature: Any, args: tuple, kwargs: dict) -> tuple:
    """Every parameter's value, positional ones first, once ``f(*args, **kwargs)`` has run
    (so Python has checked the call). Plain Python, so a nested AD follows the values."""
    if signature is None:
        return args
    params, defaults = signature
    rest = params[len(args) :]
    return (*args, *(kwargs[p] if p in kwargs else defaults[p] for p in rest))


def _register(f: Any, entries: tuple) -> None:
    name = f.__name__
    signature = _PARAMETERS.get(f)

    def special_rrule(*args: Any, **kwargs: Any) -> Any:
        """rrule of a scipy.special elementwise function: ȳ·conj(∂f/∂xᵢ), unbroadcast."""
        _check_call(name, signature, args, kwargs)
        Ω = f(*args, **kwargs)
        values = _values(signature, args, kwargs)
        lazy = sum(1 for e in entries[: len(args)] if callable(e)) > 1

        def special_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), *(ZeroTangent() for _ in args))
            xs = tuple(_arr(v) for v in values)

            def cotangent(entry: Any, x: Any) -> Any:
                fixed = _no_derivative(name, entry, x)
                if fixed is not None:
                    return fixed

                def special_cotangent() -> Any:
                    return _pulled_back(x, ȳ, quietly(entry, *xs, Ω))

                return Thunk(special_cotangent) if lazy else special_cotangent()

            return (NoTangent(), *(cotangent(e, x) for e, x in zip(entries, args)))

        special_pullback.__name__ = special_pullback.__qualname__ = f"{name}_pullback"
        return Ω, special_pullback

    def special_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        """frule of a scipy.special elementwise function: Σᵢ ∂f/∂xᵢ · ẋᵢ."""
        n = len(rest) // 2
        ẋs, args = rest[:n], rest[n:]
        _check_call(name, signature, args, kwargs)
        Ω = f(*args, **kwargs)
        values = _values(signature, args, kwargs)
        xs = tuple(_arr(v) for v in values)
        dΩ: Any = ZeroTangent()
        for entry, ẋ, x in zip(entries, ẋs, args):
            ẋ = unthunk(ẋ)
            if is_zero(ẋ):
                continue
            fixed = _no_derivative(name, entry, x)
            if isinstance(fixed, NotImplementedTangent):
                return Ω, fixed
            if fixed is not None:
                continue
            p = quietly(entry, *xs, Ω)
            if not is_zero(p):
                dΩ = dΩ + _pushed_forward(p, ẋ)
        return Ω, _as_output_tangent(Ω, dΩ)

    special_rrule.__name__ = special_rrule.__qualname__ = f"{name}_rrule"
    special_frule.__name__ = special_frule.__qualname__ = f"{name}_frule"
    rrule.register(f)(special_rrule)
    frule.register(f)(special_frule)


for _f, _entries in SPECIAL.items():
    _register(_f, _entries)

non_differentiable(sc.gammasgn)  # ±1 (0 at the poles): piecewise constant
