"""``ad.jvp`` inside code that forward mode differentiates (forward over forward).

``jvp(f, xs, ẋs)`` is a primitive: its ``frule`` pushes the outer tangents
through ``f``'s pushforward (``forward_over_forward.forward_over_fcall``), and deeper
levels unfold it as the call ``fcall(f, (0, *ẋs), *xs)`` it makes.
"""

from __future__ import annotations

from typing import Any

from ad.api import gradient as _api
from ad.api import jvp as _forward_api
from ad.higher.forward_over_forward import forward_over_fcall
from ad.higher.unfold import SELF, split_ts, unfold_fcall, zero
from ad.higher.unsupported import _unsupported
from ad.runtime import forward as _forward
from ad.runtime.config import ADConfig
from ad.runtime.reverse import fn_tangent
from ad.runtime.state import scope as state_scope
from rulescore import ZeroTangent, frule

__all__ = ["user_tangents"]

_Z = ZeroTangent()
_zero = zero
_split_ts = split_ts
_unfold_fcall = unfold_fcall
_SELF = SELF


def user_tangents(args: tuple, tangents: Any) -> tuple:
    """The tangents of ``args`` that the user passed to ``jvp`` (an outer tangent of
    ``tangents`` included), as rulescore tangents."""
    n = len(args)
    return tuple(
        _Z if _zero(t) else _forward_api._tangent_in(x, t, f"argument {i + 1}")
        for i, (x, t) in enumerate(zip(args, _split_ts(tangents, n)))
    )


@frule.register(_forward_api.jvp, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ȧrgs: Any, ṫangents: Any, f, args, tangents, **kwargs):
    """Forward mode over ``jvp``: the pushforward of ``f``'s pushforward, along the
    outer tangents of ``f`` (its captured variables), ``args`` and ``tangents``."""
    if kwargs:
        f = _api.bind_keywords(f, kwargs)
        ḟ = fn_tangent(("f",), (ḟ,))
    n = len(args)
    ts = user_tangents(args, tuple(tangents))
    ṫs = user_tangents(args, ṫangents)
    ȧ = _split_ts(ȧrgs, n)
    with state_scope(forward=True):
        (y, ẏ), ṫ = forward_over_fcall(f, (_Z, *ts), tuple(args), ḟ, (_Z, *ṫs), ȧ)
    y_o, ẏ_o = _split_ts(ṫ, 2)
    return (_forward_api.value_out(y), _forward_api.tangent_out(y, ẏ)), _forward.tan_tuple(y_o, ẏ_o)


def _unfold_jvp(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``jvp(f, xs, ẋs)`` pushed forward: as ``fcall(f, (0, *ẋs), *xs)`` (whose output
    is the same pair, its tangent kept in rulescore's form)."""
    if kwargs:
        raise _unsupported(
            "ad.jvp with keyword arguments for f, differentiated twice",
            "bind them in a lambda or functools.partial",
        )
    f, xs, ẋs = args
    n = len(xs)

    def as_fcall(t: tuple) -> tuple:  # tangents of (jvp, f, xs, ẋs) -> of (fcall, f, ts, *xs)
        return (_Z, t[1], _forward.tan_tuple(_Z, *user_tangents(xs, t[3])), *_split_ts(t[2], n))

    new_args = (f, (_Z, *user_tangents(xs, tuple(ẋs))), *xs)
    op2, args2, kwargs2, tmap = _unfold_fcall(as_fcall(ts), new_args, {}, {})

    def jvp_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        return tmap(_Z, as_fcall(ṫs), as_fcall((_Z, *ȧ))[1:], {}, {})

    return op2, args2, kwargs2, jvp_tmap


_SELF[_forward_api.jvp] = _unfold_jvp
