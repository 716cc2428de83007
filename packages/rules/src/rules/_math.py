"""Rules for the ``math`` module.

Scalar functions are registered with ``scalar_rule`` from a table of partial
derivatives ``partials(*args, Ω)``. The primal runs first, so a domain error
(``math.log(0)``, ``math.sqrt(-1)``) raises ``ValueError`` exactly as ``math``
does. Where the function is finite but its derivative is not (``sqrt`` at 0,
``asin`` at ±1) the partial is ``inf`` rather than a ``ZeroDivisionError``;
``hypot`` and ``atan2`` at the origin get the subgradient 0.

Integer arguments that are counts (``ldexp``'s exponent, an integer exponent of
``math.pow``) get ``NoTangent()``. ``fmod`` and ``remainder`` are ``x - n·y``
with ``n`` an integer constant between jumps (``trunc`` resp. round-half-even
of ``x/y``): partials ``1`` and ``-n``. ``frexp`` (``x = m·2**e``: ``dm = dx/2**e``,
the integer ``e`` has ``NoTangent()``) and ``modf`` (the fractional part moves
with ``x``, the integral part does not) return pairs and are written by hand,
as are ``fsum``, ``prod`` and ``dist``, which take iterables. Piecewise-constant and integer functions
(``floor``, ``ceil``, ``trunc``, ``isnan``, ``factorial``, ``gcd``, ...) are
non-differentiable.
"""

from __future__ import annotations

import math as _math_module
import numbers
import types
from typing import Any

from rulescore import (
    AbstractZero,
    NoTangent,
    ProjectTo,
    Tangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    scalar_rule,
    unthunk,
)

from ._arithmetic import Num, is_integer, pow_dx, pow_dy
from ._sequences import seq_cotangent, seq_entries

#: ``math`` as it was at import: the rules below call its functions (partials,
#: values), and a user's temporary ``math.sin = ...`` must change the user's code,
#: never these derivatives.
math = types.SimpleNamespace(**vars(_math_module))

__all__ = ["digamma"]

_NO = NoTangent()
_ZERO = ZeroTangent()
_SQRT_PI_2 = 2 / math.sqrt(math.pi)


def _div(a: float, b: float) -> float:
    """``a / b`` with IEEE semantics: ±inf (or nan) instead of ``ZeroDivisionError``."""
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _div0(a: float, b: float) -> float:
    """``a / b``, and 0 when ``b == 0`` (a subgradient at a kink such as the origin)."""
    return 0.0 if b == 0 else a / b


def digamma(x: float) -> float:
    """The digamma function ψ(x) = Γ'(x)/Γ(x) (``math`` has none), to about 1e-14.

    >>> round(digamma(1.0), 12)   # -γ, the Euler-Mascheroni constant
    -0.577215664902
    """
    x = float(x)
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0.5:  # reflection: ψ(1 - x) - ψ(x) = π cot(πx)
        return digamma(1 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 10:  # recurrence ψ(x + 1) = ψ(x) + 1/x, then the asymptotic series
        acc -= 1 / x
        x += 1
    f = 1 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
    return acc + math.log(x) - 0.5 / x - series


def _log_partials(x: float, *rest: float) -> Any:
    if len(rest) == 1:  # log(x)
        return _div(1.0, x)
    base, Ω = rest  # log(x, base) = log(x) / log(base)
    lb = math.log(base)
    return _div(1.0, x * lb), _div(-Ω, base * lb)


def _hypot_partials(*args: float) -> tuple:
    *xs, Ω = args
    return tuple(_div0(x, Ω) for x in xs)


def _pow_partials(x: float, y: float, Ω: float) -> tuple:
    return pow_dx(x, y, Ω), pow_dy(x, y, Ω)


def _fmod_partials(x: float, y: float, Ω: float) -> tuple:
    # fmod(x, y) = x - y * trunc(x / y), and (x - Ω) / y is that integer exactly; the
    # same holds for remainder (round-half-even in place of trunc)
    return 1.0, _NO if is_integer(y) else -round((x - Ω) / y)


def _copysign_partials(x: float, y: float, Ω: float) -> tuple:
    return math.copysign(1.0, x) * math.copysign(1.0, y), 0.0


def _ldexp_partials(x: float, i: int, Ω: float) -> tuple:
    return math.ldexp(1.0, i), _NO


def _atan2_partials(y: float, x: float, Ω: float) -> tuple:
    r2 = x * x + y * y
    return _div0(x, r2), _div0(-y, r2)


def _sqrt_1mx2(x: float) -> float:
    return math.sqrt((1 - x) * (1 + x))


_PARTIALS: dict[str, Any] = {
    "sin": lambda x, Ω: math.cos(x),
    "cos": lambda x, Ω: -math.sin(x),
    "tan": lambda x, Ω: 1 + Ω * Ω,
    "asin": lambda x, Ω: _div(1.0, _sqrt_1mx2(x)),
    "acos": lambda x, Ω: _div(-1.0, _sqrt_1mx2(x)),
    "atan": lambda x, Ω: 1 / (1 + x * x),
    "sinh": lambda x, Ω: math.cosh(x),
    "cosh": lambda x, Ω: math.sinh(x),
    "tanh": lambda x, Ω: 1 - Ω * Ω,
    "asinh": lambda x, Ω: 1 / math.sqrt(x * x + 1),
    "acosh": lambda x, Ω: _div(1.0, math.sqrt((x - 1) * (x + 1))),
    "atanh": lambda x, Ω: 1 / ((1 - x) * (1 + x)),
    "exp": lambda x, Ω: Ω,
    "expm1": lambda x, Ω: Ω + 1,
    "exp2": lambda x, Ω: Ω * math.log(2),
    "log": _log_partials,
    "log1p": lambda x, Ω: 1 / (1 + x),
    "log2": lambda x, Ω: 1 / (x * math.log(2)),
    "log10": lambda x, Ω: 1 / (x * math.log(10)),
    "sqrt": lambda x, Ω: _div(0.5, Ω),
    "cbrt": lambda x, Ω: _div(1.0, 3 * Ω * Ω),
    "erf": lambda x, Ω: _SQRT_PI_2 * math.exp(-x * x),
    "erfc": lambda x, Ω: -_SQRT_PI_2 * math.exp(-x * x),
    "gamma": lambda x, Ω: Ω * digamma(x),
    "lgamma": lambda x, Ω: digamma(x),
    "fabs": lambda x, Ω: math.copysign(1.0, x) if x != 0 else 0.0,
    "degrees": lambda x, Ω: 180 / math.pi,
    "radians": lambda x, Ω: math.pi / 180,
    "hypot": _hypot_partials,
    "atan2": _atan2_partials,
    "copysign": _copysign_partials,
    "pow": _pow_partials,
    "fmod": _fmod_partials,
    "remainder": _fmod_partials,
    "ldexp": _ldexp_partials,
}

for _name, _partials in _PARTIALS.items():
    _f = getattr(math, _name, None)  # cbrt and exp2 are new in Python 3.11
    if _f is not None:
        scalar_rule(_f, _partials)

# floor, ceil and trunc of a number (a user class's __floor__ ... is its own code)
for _name in ("floor", "ceil", "trunc"):
    non_differentiable(getattr(math, _name), Num)

for _name in (
    "isnan",
    "isinf",
    "isfinite",
    "isclose",
    "factorial",
    "gcd",
    "lcm",
    "comb",
    "perm",
    "isqrt",
    "ulp",
    "nextafter",
):
    _f = getattr(math, _name, None)
    if _f is not None:
        non_differentiable(_f)


_Seq = tuple | list


@rrule.register(math.fsum)
def _(xs: _Seq):
    def fsum_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO
        return _NO, seq_cotangent(xs, [ȳ] * len(xs))

    return math.fsum(xs), fsum_pullback


@frule.register(math.fsum)
def _(ḟ, ẋs, xs: _Seq):
    entries = [unthunk(e) for e in seq_entries(ẋs, len(xs))]
    t = math.fsum(0.0 if isinstance(e, AbstractZero) else float(e) for e in entries)
    return math.fsum(xs), t


def _prod_partials(xs: list, start: Any) -> list:
    """∂prod/∂x_k = start * prod of the others, by prefix and suffix products (zeros work)."""
    n = len(xs)
    prefix = [start] * (n + 1)
    for k, x in enumerate(xs):
        prefix[k + 1] = prefix[k] * x
    suffix = 1
    out = [None] * n
    for k in range(n - 1, -1, -1):
        out[k] = prefix[k] * suffix
        suffix = suffix * xs[k]
    return out


@rrule.register(math.prod)
def _(xs: _Seq, **kwargs: Any):
    Ω = math.prod(xs, **kwargs)
    items = list(xs)

    def prod_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO
        ps = _prod_partials(items, kwargs.get("start", 1))
        return _NO, seq_cotangent(xs, [ȳ * p.conjugate() for p in ps])

    return Ω, prod_pullback


@frule.register(math.prod)
def _(ḟ, ẋs, xs: _Seq, **kwargs: Any):
    Ω = math.prod(xs, **kwargs)
    t: Any = _ZERO
    ps = _prod_partials(list(xs), kwargs.get("start", 1))
    for p, ẋ in zip(ps, seq_entries(ẋs, len(xs))):
        ẋ = unthunk(ẋ)
        if not isinstance(ẋ, AbstractZero):
            t = t + p * ẋ
    return Ω, ProjectTo(Ω)(t)


@rrule.register(math.dist)
def _(p: _Seq, q: _Seq):
    Ω = math.dist(p, q)
    # ∂/∂p_k = (p_k - q_k) / Ω, and 0 when p == q (a subgradient)
    g = [_div0(a - b, Ω) for a, b in zip(p, q)]

    def dist_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _ZERO
        return (
            _NO,
            seq_cotangent(p, [ȳ * gk for gk in g]),
            seq_cotangent(q, [-ȳ * gk for gk in g]),
        )

    return Ω, dist_pullback


@frule.register(math.dist)
def _(ḟ, ṗ, q̇, p: _Seq, q: _Seq):
    Ω = math.dist(p, q)
    t = 0.0
    for a, b, ȧ, ḃ in zip(p, q, seq_entries(ṗ, len(p)), seq_entries(q̇, len(q))):
        t += _div0(a - b, Ω) * (float(unthunk(ȧ)) - float(unthunk(ḃ)))
    return Ω, t


@rrule.register(math.frexp)
def _(x: numbers.Real):
    _, e = Ω = math.frexp(x)

    def frexp_pullback(ȳ):
        m̄ = unthunk(ȳ)
        m̄ = m̄ if isinstance(m̄, AbstractZero) else unthunk(m̄[0])
        if isinstance(m̄, AbstractZero):
            return _NO, _ZERO
        return _NO, ProjectTo(x)(math.ldexp(float(m̄), -e))

    return Ω, frexp_pullback


@frule.register(math.frexp)
def _(ḟ, ẋ, x: numbers.Real):
    _, e = Ω = math.frexp(x)
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return Ω, _ZERO
    return Ω, Tangent[tuple](math.ldexp(float(ẋ), -e), _NO)


@rrule.register(math.modf)
def _(x: numbers.Real):
    def modf_pullback(ȳ):
        f̄ = unthunk(ȳ)
        f̄ = f̄ if isinstance(f̄, AbstractZero) else unthunk(f̄[0])
        if isinstance(f̄, AbstractZero):
            return _NO, _ZERO
        return _NO, ProjectTo(x)(f̄)

    return math.modf(x), modf_pullback


@frule.register(math.modf)
def _(ḟ, ẋ, x: numbers.Real):
    Ω = math.modf(x)
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return Ω, _ZERO
    return Ω, Tangent[tuple](float(ẋ), _ZERO)
