"""Nested differentiation: reverse mode over forward mode, and rules for ad's own API.

Second derivatives come from one composition, **reverse over forward**: the
reverse pass differentiates the pushforward that forward mode generates (and
the ``frule`` bodies it calls), so ``∇ₓ ⟨J(x), v⟩`` — the gradient of a
directional derivative — is an ordinary gradient. Everything nested is built
on it, and this module holds the rules that build it:

- ``gradient``/``withgradient`` called inside differentiated code get an
  ``rrule`` whose pullback maps ``ḡ`` to ``∇ ⟨∇f, ḡ⟩`` (a Hessian-vector
  product, including the derivative through ``f``'s captured variables), and
  an ``frule`` whose pushforward is the same product along ``ẋ``;
- ``jvp`` called inside differentiated code gets an ``rrule`` (its ``frule``,
  forward over forward, is in ``forward_over_jvp``);
- the kernels all of these run (``ad.runtime.nested_kernels``: ``directional``,
  ``tangent_of``, ``weighted``, and the vector-Jacobian-product kernel
  ``reverse_over_forward``) have rules of their own, so a second derivative
  can be differentiated again (third order, and deeper), and so have the
  scalar fast paths of forward mode (``ffast_mul``...);
- ``hessian`` is forward mode over ``gradient`` (one pushforward per column),
  ``hessian_reverse`` is reverse mode over it (one pullback per row).

The pieces, each a module: the ``rrule`` of ``fcall`` (forward mode's dispatch),
which differentiates whatever the dispatch runs (``reverse_over_fcall``): the
generated pushforward of a Python function (``reverse_over_generated``;
``transform.source`` keeps the trees of generated code for this), an
``frule``'s body or a linear map (``reverse_over_rules``), a write or read of
an object (``reverse_over_writes``); and linear ``rrule``s for the tangent
plumbing that ``frule`` bodies use (``reverse_over_tangent_plumbing``).
``cotangent_parts`` and ``unsupported`` hold what all of them share.

Each level keeps its own tangent variables in its own generated code, so one
level's perturbation cannot leak into another's (no "perturbation confusion").
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ad.api import gradient as _api
from ad.api import jvp as _forward_api
from ad.higher.cotangent_parts import _is_zero, _tangents_ct, as_called
from ad.higher.reverse_over_fcall import _fcall_rrule
from ad.runtime import forward as _forward
from ad.runtime import forward_arithmetic as _forward_fast
from ad.runtime import state as _state
from ad.runtime.accumulate import acc
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.nested_kernels import (
    directional,
    fcall_pair,
    reverse_over_forward,
    tangent_of,
    weighted,
)
from ad.runtime.reverse import field_ct, fn_tangent, rcall
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()
_TupleT = Tangent[tuple]


# --- the kernels' rules (ad.runtime.nested_kernels) ------------------------------
#
# The kernels ``reverse_over_forward`` runs have rules of their own, so that the
# pushforward runs in the kernel's reverse pass (a kernel's body, differentiated as
# ad's own code, would run with no pass: ``ad.runtime.state.suspended``).


def _first_entry(y: Any, ẏ: Any) -> tuple[Any, Any, Callable]:
    """``(y[0], ẏ[0], to_pair_ct)`` when ``f`` returned a tuple (the value and the
    tangent the kernels use), else ``(y, ẏ, to_pair_ct)``; ``to_pair_ct(ȳ, ẏ̄)``
    is the cotangent of ``(y, ẏ)`` from those of the entries used."""
    if type(y) is not tuple:
        return y, ẏ, lambda ȳ, ẏ̄: _tangents_ct((ȳ, ẏ̄))
    n = len(y)
    parts, split_pb = rcall(_forward.split, ẏ, n)

    def to_pair_ct(ȳ: Any, ẏ̄: Any) -> Any:
        y_ct = _tangents_ct((ȳ, *([_Z] * (n - 1))))
        ẏ_ct = _Z if _is_zero(ẏ̄) else split_pb(_tangents_ct((ẏ̄, *([_Z] * (n - 1)))))[1]
        return _tangents_ct((y_ct, ẏ_ct))

    return y[0], parts[0], to_pair_ct


@rrule.register(directional, config=ADConfig)
def _(config: Any, f: Any, ts: tuple, *args: Any) -> Any:
    (y, ẏ), pb = _fcall_rrule(config, f, ts, *args)
    _, ẏ, to_pair_ct = _first_entry(y, ẏ)

    def directional_pullback(c̄: Any) -> tuple:
        return pb(to_pair_ct(_Z, c̄))

    return ẏ, _state.keep_stateful(pb, directional_pullback)


@rrule.register(tangent_of, config=ADConfig)
def _(config: Any, f: Any, ts: tuple, *args: Any) -> Any:
    (_, ẏ), pb = _fcall_rrule(config, f, ts, *args)

    def tangent_of_pullback(c̄: Any) -> tuple:
        return pb(_tangents_ct((_Z, c̄)))

    return ẏ, _state.keep_stateful(pb, tangent_of_pullback)


@rrule.register(weighted, config=ADConfig)
def _(config: Any, f: Any, w: Any, ts: tuple, *args: Any) -> Any:
    (y, ẏ), pb = _fcall_rrule(config, f, ts, *args)
    y, ẏ, to_pair_ct = _first_entry(y, ẏ)
    wy, mul_pb = rcall(operator.mul, w, y)
    out, add_pb = rcall(operator.add, wy, ẏ)

    def weighted_pullback(c̄: Any) -> tuple:
        _, wy_ct, ẏ̄ = add_pb(c̄)
        _, w_ct, ȳ = mul_pb(wy_ct)
        raw = pb(to_pair_ct(ȳ, ẏ̄))  # (fcall, f, ts, *args)
        return (_NO, raw[1], w_ct, *raw[2:])

    return out, _state.keep_stateful(pb, weighted_pullback)


# --- forward mode's scalar fast paths (ffast_mul(a, b, ȧ, ḃ) is fcall(mul, ...)) ---


def _ffast_rrule(op: Callable) -> Callable:
    def ffast_rrule(config: Any, a: Any, b: Any, ȧ: Any, ḃ: Any) -> Any:
        out, pb = _fcall_rrule(config, op, (_Z, ȧ, ḃ), a, b)

        def ffast_pullback(ct: Any) -> tuple:
            raw = pb(ct)  # (fcall, op, ts, a, b)
            ts_ct = entries(raw[2], 3, "tangents")
            return (_NO, raw[3], raw[4], ts_ct[1], ts_ct[2])

        return out, _state.keep_stateful(pb, ffast_pullback)

    return ffast_rrule


for _name in ("add", "sub", "mul", "truediv", "pow"):
    rrule.register(getattr(_forward_fast, f"ffast_{_name}"), config=ADConfig)(
        _ffast_rrule(getattr(operator, _name))
    )


@rrule.register(_forward_fast.ffast_neg, config=ADConfig)
def _(config: Any, a: Any, ȧ: Any) -> Any:
    out, pb = _fcall_rrule(config, operator.neg, (_Z, ȧ), a)

    def ffast_neg_pullback(ct: Any) -> tuple:
        raw = pb(ct)
        ts_ct = entries(raw[2], 2, "tangents")
        return (_NO, raw[3], ts_ct[1])

    return out, _state.keep_stateful(pb, ffast_neg_pullback)


# --- ad's API inside differentiated code ------------------------------------------


def _as_tangent(ḡ: Any) -> Any:
    """A cotangent used as a tangent: the same vector, zeros kept symbolic."""
    ḡ = unthunk(ḡ)
    if ḡ is None:
        return _Z
    return ḡ


def _own_ct(bound_ct: Any, kwargs: dict) -> Any:
    """``f``'s cotangent from that of ``_api.bind_keywords(f, kwargs)`` (field
    ``f``); the keywords' own derivative is not followed: rcall_kw gives them a
    not-implemented cotangent, which raises only where it is used."""
    return field_ct(bound_ct, "f") if kwargs else bound_ct


@rrule.register(_api.gradient, config=ADConfig)
def _(config: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    g = _api.gradient(f, *args, **kwargs)
    n = len(args)
    bound = _api.bind_keywords(as_called(f), kwargs)  # as called: run again in the pullback

    def gradient_pullback(ḡ: Any) -> tuple:
        ḡs = tuple(_as_tangent(c) for c in entries(ḡ, n, "a gradient tuple"))
        if all(_is_zero(c) for c in ḡs):
            return (_NO, _Z, *([_Z] * n))
        raw = reverse_over_forward(directional, 1.0, bound, (_Z, *ḡs), *args)
        return (_NO, _own_ct(raw[1], kwargs), *raw[3:])  # raw: (directional, f, ts, *args)

    return g, gradient_pullback


def _gradient_frule(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    """Forward mode over ``gradient``: ``ġ = ∇ₓ ⟨Df(x), (ḟ, ẋ)⟩``, a Hessian-vector
    product (plus the derivative through ``f``'s captured variables along ``ḟ``)."""
    m = len(rest) // 2
    ts, (f, *args) = rest[:m], rest[m:]
    g = _api.gradient(f, *args, **kwargs)
    if all(_is_zero(unthunk(t)) for t in ts):
        return g, _Z
    if kwargs:  # the bound function's tangent: f's, in its field "f"
        f = _api.bind_keywords(f, kwargs)
        ts = (fn_tangent(("f",), (ts[0],)), *ts[1:])
    raw = reverse_over_forward(directional, 1.0, f, tuple(unthunk(t) for t in ts), *args)
    return g, _TupleT._from_backing(tuple(raw[3:]))  # raw: (directional, f, ts, *args)


frule.register(_api.gradient, config=ADConfig)(_gradient_frule)


def _withgradient_frule(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    """Forward mode over ``withgradient``: the value's tangent (a pushforward of ``f``)
    and the gradient's (a Hessian-vector product, as ``gradient``'s frule)."""
    m = len(rest) // 2
    ts, (f, *args) = rest[:m], rest[m:]
    out = _api.withgradient(f, *args, **kwargs)
    ts = tuple(unthunk(t) for t in ts)
    if all(_is_zero(t) for t in ts):
        return out, _Z
    if kwargs:  # the bound function's tangent: f's, in its field "f"
        f = _api.bind_keywords(f, kwargs)
        ts = (fn_tangent(("f",), (ts[0],)), *ts[1:])
    v̇ = fcall_pair(f, ts, *args)[1]
    raw = reverse_over_forward(directional, 1.0, f, ts, *args)
    ġ = _forward.tan_tuple(*raw[3:])  # raw: (directional, f, ts, *args)
    return out, Tangent[_api.WithGradient]._from_backing({"val": v̇, "grad": ġ})


frule.register(_api.withgradient, config=ADConfig)(_withgradient_frule)


@rrule.register(_api.withgradient, config=ADConfig)
def _(config: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    out = _api.withgradient(f, *args, **kwargs)
    n = len(args)
    bound = _api.bind_keywords(as_called(f), kwargs)  # as called: run again in the pullback

    def withgradient_pullback(ct: Any) -> tuple:
        v̄, ḡ = entries(ct, 2, "withgradient's (val, grad)")
        v̄ = unthunk(v̄)
        if type(out.val) is tuple:
            v̄ = entries(v̄, len(out.val), "the value tuple")[0]
        ḡs = tuple(_as_tangent(c) for c in entries(ḡ, n, "a gradient tuple"))
        if _is_zero(v̄) and all(_is_zero(c) for c in ḡs):
            return (_NO, _Z, *([_Z] * n))
        w = 0.0 if _is_zero(v̄) else v̄
        raw = reverse_over_forward(weighted, 1.0, bound, w, (_Z, *ḡs), *args)
        return (_NO, _own_ct(raw[1], kwargs), *raw[4:])  # raw: (weighted, f, w, ts, *args)

    return out, withgradient_pullback


@rrule.register(_forward_api.jvp, config=ADConfig)
def _(config: Any, f: Any, args: tuple, tangents: tuple, **kwargs: Any) -> Any:
    out = _forward_api.jvp(f, args, tangents, **kwargs)
    n = len(args)
    ts = tuple(_as_tangent(t) for t in tangents)
    bound = _api.bind_keywords(as_called(f), kwargs)  # as called: run again in the pullback

    def jvp_pullback(ct: Any) -> tuple:
        raw = reverse_over_forward(fcall_pair, ct, bound, (_Z, *ts), *args)
        # raw: (fcall_pair, f, ts, *args)
        ts_ct = entries(raw[2], n + 1, "tangents")
        f_ct = _own_ct(raw[1], kwargs)
        return (_NO, f_ct, _tangents_ct(raw[3 : 3 + n]), _tangents_ct(ts_ct[1:]))

    return out, jvp_pullback


# --- the vector-Jacobian-product kernel, differentiated again ----------------------


@rrule.register(reverse_over_forward, config=ADConfig)
def _(config: Any, kernel: Callable, seed: Any, *args: Any) -> Any:
    """Reverse mode over ``vjp = (∂kernel, ∂args) = J(args)ᵀ seed``, itself reverse mode
    over forward mode: ``vjp`` is linear in ``seed``, so ``∂seed = J c̄`` (a pushforward
    of ``kernel``), and ``∂args = ∇ ⟨seed, J(args) c̄⟩`` (reverse over the pushforward).
    Both run ``kernel`` (forward mode) one level up: a third derivative, or deeper."""
    out = reverse_over_forward(kernel, seed, *args)
    n = len(args)

    def reverse_over_forward_pullback(c̄: Any) -> tuple:
        ts = tuple(_as_tangent(c) for c in entries(c̄, n + 1, "the cotangents of a pullback"))
        if all(_is_zero(t) for t in ts):
            return (_NO, _Z, _Z, *([_Z] * n))
        seed_ct = fcall_pair(kernel, ts, *args)[1]
        raw = reverse_over_forward(tangent_of, seed, kernel, ts, *args)
        return (_NO, raw[1], seed_ct, *raw[3:])  # raw: (tangent_of, kernel, ts, *args)

    return out, reverse_over_forward_pullback


def _reverse_over_forward_frule(config: Any, ṡ: Any, *rest: Any) -> Any:
    """Forward mode over ``vjp = J(args)ᵀ seed``: ``J(args)ᵀ ṡeed`` plus the derivative
    along the arguments' tangents, ``∇ ⟨seed, J(args)·(k̇, ȧrgs)⟩`` (reverse over the
    pushforward of the kernel): a third derivative, or deeper."""
    m = len(rest) // 2
    k̇, ṡeed, *ȧ = rest[:m]
    kernel, seed, *args = rest[m:]
    out = reverse_over_forward(kernel, seed, *args)
    n = len(args)
    parts = []
    if not _is_zero(unthunk(ṡeed)):
        parts.append(reverse_over_forward(kernel, unthunk(ṡeed), *args))
    ts = (unthunk(k̇), *(unthunk(a) for a in ȧ))
    if not all(_is_zero(t) for t in ts):
        raw = reverse_over_forward(tangent_of, seed, kernel, ts, *args)
        parts.append((raw[1], *raw[3:]))  # raw: (tangent_of, kernel, ts, *args)
    if not parts:
        return out, _Z
    total = parts[0] if len(parts) == 1 else tuple(map(acc, *parts))
    return out, _forward.tan_tuple(*(total[i] for i in range(n + 1)))


frule.register(reverse_over_forward, config=ADConfig)(_reverse_over_forward_frule)
