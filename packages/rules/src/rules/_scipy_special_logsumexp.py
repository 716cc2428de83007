"""Rules for ``scipy.special.logsumexp``, ``softmax`` and ``log_softmax``.

``logsumexp(a, axis, b, keepdims, return_sign)`` is log S with
S = Σ b·exp(a) over ``axis``; with ``return_sign`` it returns (log|S|, sign S).
Writing g = dS/S = Σ (w·da + e·db) with e = exp(a - Ω)/sign and w = b·e (the
softmax weights when b is absent), the derivative of log S is g, that of
log|S| is Re g and that of the sign is i·sign·Im g (zero for real input: the
sign is piecewise constant). ``exp(a - Ω)`` never overflows, and an entry
a = -inf gets weight 0; the factors are renormalised so that Σ b·e = 1 holds
in floating point too (Ω's rounding error is not small next to 1 for large
entries). Where the result is ±inf (every entry -inf, or some
+inf) the weights are those the softmax tends to as a uniform shift takes
every entry to the edge: shared equally (b-weighted) among the entries equal to
the result, as ``max`` splits ties. ``b`` is differentiable when passed
positionally (ChainRules' convention: keyword arguments get no cotangent).

``softmax(x, axis)``: with s the output, ṡ = s⊙(ẋ - Σ s ẋ) and the pullback
s̄⊙(ȳ - Σ s̄ ȳ) (s̄ = conj(s)); ``log_softmax``: ẏ = ẋ - Σ s ẋ and x̄ = ȳ - s̄ Σ ȳ,
with s = exp(output), so neither subtracts large numbers. All three accept
``axis=None`` (everything), an int or a tuple, and complex input.

>>> import numpy as np, scipy.special as sc
>>> from rulescore import rrule
>>> y, pb = rrule(sc.logsumexp, np.array([-np.inf, 0.0, np.log(3.0)]))
>>> pb(1.0)[1]     # the softmax weights; -inf gets 0
array([0.  , 0.25, 0.75])
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import scipy.special as sc

from rulescore import (
    NoTangent,
    Tangent,
    Thunk,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

from ._linalg_util import entries
from ._numpy_elementwise import conj_if_complex
from ._numpy_reductions import reduced_axes
from ._quiet import quietly
from ._util import is_zero, project, unbroadcast

__all__ = []

_LOGSUMEXP = inspect.signature(sc.logsumexp)
_SOFTMAX = inspect.signature(sc.softmax)
_LOG_SOFTMAX = inspect.signature(sc.log_softmax)
_B_POSITION = 1  # logsumexp(a, axis, b, ...): b is the second optional argument


class _Options:
    """logsumexp's options as scipy binds them, except ``b`` (the rules read it themselves,
    so that a nested AD sees its derivative)."""

    __slots__ = ("axes", "b_positional", "keepdims", "return_sign")

    def __init__(self, a: Any, args: tuple, kwargs: dict) -> None:
        opts = _LOGSUMEXP.bind(a, *args, **kwargs).arguments
        b = opts.get("b")
        self.keepdims = bool(opts.get("keepdims", False))
        self.return_sign = bool(opts.get("return_sign", False))
        self.b_positional = len(args) > _B_POSITION and b is not None
        shape = np.shape(a) if b is None else np.broadcast_shapes(np.shape(a), np.shape(b))
        self.axes = reduced_axes(opts.get("axis"), len(shape))

    def kept(self, t: Any) -> Any:
        """A reduced value with its reduced axes back (length 1), ready to broadcast."""
        return t if self.keepdims else np.expand_dims(t, self.axes)


def _b(args: tuple, kwargs: dict) -> Any:
    b = args[_B_POSITION] if len(args) > _B_POSITION else kwargs.get("b")
    return None if b is None else np.asarray(b)


def _factors(a: Any, b: Any, o: _Options, Ω: Any, sign: Any) -> Any:
    """e = exp(a - Ω)/sign, so that dS/S = Σ (b·e·da + e·db); see the module docstring."""
    a = np.asarray(a)
    if b is not None:  # e has the shape of the broadcast terms b·exp(a)
        a = np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape))
    Ωk = o.kept(Ω)
    e = np.exp(a - Ωk)
    if sign is not None:
        e = e / o.kept(sign)
    # Σ b·e = 1 exactly; dividing by the computed sum undoes Ω's rounding, which
    # is not small next to 1 when the entries are large (log 2 is lost from 1e300).
    e = e / np.sum(_weights(e, b), axis=o.axes, keepdims=True)
    if np.iscomplexobj(Ωk) or np.all(np.isfinite(Ωk)):
        return e
    edge = np.isinf(Ωk)
    hit = (a == Ωk).astype(e.dtype)
    total = np.sum(hit if b is None else hit * b, axis=o.axes, keepdims=True)
    tie = np.where(total == 0, 0.0, hit / np.where(total == 0, 1.0, total))
    return np.where(edge, tie, e)


def _weights(e: Any, b: Any) -> Any:
    return e if b is None else b * e


def _split(out: Any, o: _Options) -> tuple[Any, Any]:
    return (out[0], out[1]) if o.return_sign else (out, None)


def logsumexp_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``scipy.special.logsumexp``: ā = ḡ·conj(b·exp(a - Ω)/sign)."""
    o = _Options(a, args, kwargs)
    b = _b(args, kwargs)
    out = sc.logsumexp(a, *args, **kwargs)
    Ω, sign = _split(out, o)
    complex_sign = sign is not None and np.iscomplexobj(sign)
    rest = [NoTangent()] * len(args)  # axis, b, keepdims, return_sign passed positionally

    def logsumexp_pullback(ȳ: Any) -> tuple:
        if o.return_sign:
            Ω̄, s̄ = entries(ȳ, 2)
            if not complex_sign:
                s̄ = ZeroTangent()  # a real sign is piecewise constant
        else:
            Ω̄, s̄ = unthunk(ȳ), ZeroTangent()
        if is_zero(Ω̄) and is_zero(s̄):
            return (NoTangent(), ZeroTangent(), *rest)
        # The cotangent of g = dS/S: Ω̄ from log S (or log|S|), -i Im(conj(s̄) sign) from the sign.
        ḡ = 0.0 if is_zero(Ω̄) else Ω̄
        if not is_zero(s̄):
            ḡ = ḡ - 1j * np.imag(np.conj(s̄) * sign)
        ḡ = o.kept(np.asarray(ḡ))
        e = quietly(_factors, a, b, o, Ω, sign)
        cts = list(rest)
        if o.b_positional:

            def logsumexp_b_cotangent() -> Any:
                return unbroadcast(b, ḡ * conj_if_complex(e))

            cts[_B_POSITION] = Thunk(logsumexp_b_cotangent)
        return (NoTangent(), unbroadcast(a, ḡ * conj_if_complex(_weights(e, b))), *cts)

    return out, logsumexp_pullback


def logsumexp_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    """frule of ``scipy.special.logsumexp``: g = Σ (b·e·ȧ + e·ḃ), e = exp(a - Ω)/sign."""
    n = len(rest) // 2
    tangents, (a, *args) = rest[:n], rest[n:]
    o = _Options(a, tuple(args), kwargs)
    b = _b(tuple(args), kwargs)
    out = sc.logsumexp(a, *args, **kwargs)
    Ω, sign = _split(out, o)
    ȧ = unthunk(tangents[0])
    ḃ = unthunk(tangents[1 + _B_POSITION]) if o.b_positional else ZeroTangent()
    if is_zero(ȧ) and is_zero(ḃ):
        return out, ZeroTangent()
    e = quietly(_factors, a, b, o, Ω, sign)
    term: Any = ZeroTangent()
    if not is_zero(ȧ):
        term = term + _weights(e, b) * ȧ
    if not is_zero(ḃ):
        term = term + e * ḃ
    g = np.sum(term, axis=o.axes, keepdims=o.keepdims)
    if not o.return_sign:
        return out, project(Ω, g)
    ṡ = project(sign, sign * 1j * np.imag(g)) if np.iscomplexobj(sign) else ZeroTangent()
    return out, Tangent[tuple](project(Ω, np.real(g)), ṡ)


def _axis(signature: inspect.Signature, x: Any, args: tuple, kwargs: dict) -> Any:
    return signature.bind(x, *args, **kwargs).arguments.get("axis")


def softmax_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``scipy.special.softmax``: x̄ = s̄⊙(ȳ - Σ s̄ ȳ)."""
    axis = _axis(_SOFTMAX, x, args, kwargs)
    s = sc.softmax(x, *args, **kwargs)
    rest = (NoTangent(),) * len(args)

    def softmax_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        s̄ = conj_if_complex(s)
        u = ȳ * s̄
        return (NoTangent(), project(x, u - s̄ * np.sum(u, axis=axis, keepdims=True)), *rest)

    return s, softmax_pullback


def softmax_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    """frule of ``scipy.special.softmax``: ṡ = s⊙ẋ - s Σ s⊙ẋ."""
    n = len(rest) // 2
    ẋ, (x, *args) = unthunk(rest[0]), rest[n:]
    axis = _axis(_SOFTMAX, x, tuple(args), kwargs)
    s = sc.softmax(x, *args, **kwargs)
    if is_zero(ẋ):
        return s, ZeroTangent()
    u = s * ẋ
    return s, project(s, u - s * np.sum(u, axis=axis, keepdims=True))


def log_softmax_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``scipy.special.log_softmax``: x̄ = ȳ - s̄ Σ ȳ with s = exp(output)."""
    axis = _axis(_LOG_SOFTMAX, x, args, kwargs)
    Ω = sc.log_softmax(x, *args, **kwargs)
    rest = (NoTangent(),) * len(args)

    def log_softmax_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        s̄ = conj_if_complex(np.exp(Ω))
        dx = ȳ - s̄ * np.sum(ȳ, axis=axis, keepdims=True)
        return (NoTangent(), project(x, dx), *rest)

    return Ω, log_softmax_pullback


def log_softmax_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    """frule of ``scipy.special.log_softmax``: ẏ = ẋ - Σ s ẋ."""
    n = len(rest) // 2
    ẋ, (x, *args) = unthunk(rest[0]), rest[n:]
    axis = _axis(_LOG_SOFTMAX, x, tuple(args), kwargs)
    Ω = sc.log_softmax(x, *args, **kwargs)
    if is_zero(ẋ):
        return Ω, ZeroTangent()
    return Ω, project(Ω, ẋ - np.sum(np.exp(Ω) * ẋ, axis=axis, keepdims=True))


# Option parsing carries no derivative (for ADs that differentiate rule bodies).
non_differentiable(_Options)
non_differentiable(_axis)

for _f, _r, _fr in (
    (sc.logsumexp, logsumexp_rrule, logsumexp_frule),
    (sc.softmax, softmax_rrule, softmax_frule),
    (sc.log_softmax, log_softmax_rrule, log_softmax_frule),
):
    rrule.register(_f)(_r)
    frule.register(_f)(_fr)
