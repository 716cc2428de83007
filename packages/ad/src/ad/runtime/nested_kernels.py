"""The kernels nested differentiation differentiates: forward mode's dispatch as
functions reverse mode can call, and ``reverse_over_forward``, one reverse pass
over one of them.

- ``fcall_pair(f, ts, *args)`` is ``(f(*args), ẏ)``, forward mode's ``fcall``;
  ``directional`` keeps the tangent of the first entry where ``f`` returns a
  tuple (as ``gradient`` differentiates), ``tangent_of`` the tangent,
  ``weighted`` gives ``w * y + ẏ`` (``withgradient``'s value and gradient);
- ``reverse_over_forward(kernel, seed, *args)`` is the cotangents of
  ``kernel(*args)`` for ``seed``: a second derivative, since ``kernel`` runs
  forward mode.

They are plain functions: their rules (so that they can be differentiated
again, at any depth) are in ``ad.higher.reverse_over_forward``, and the entry
points of ``ad.higher`` (``hessian``, nested ``gradient`` and ``pullback``) call
them. ``ad.api.utilities.nestlevel`` counts a frame of ``reverse_over_forward``
as two levels of differentiation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ad.runtime import forward as _forward
from ad.runtime import state as _state
from ad.runtime.reverse import rcall

__all__ = ["directional", "fcall_pair", "reverse_over_forward", "tangent_of", "weighted"]


def fcall_pair(f: Any, ts: tuple, *args: Any) -> tuple[Any, Any]:
    """``(f(*args), ẏ)``: forward mode's dispatch, as a function reverse mode can call."""
    return _forward.fcall(f, ts, *args)


def directional(f: Any, ts: tuple, *args: Any) -> Any:
    """The directional derivative of ``f`` at ``args`` along ``ts = (ḟ, ẋ1, ...)``.

    When ``f`` returns a tuple, its first entry's (as ``gradient`` differentiates).
    """
    y, ẏ = fcall_pair(f, ts, *args)
    if type(y) is tuple:
        ẏ = _forward.split(ẏ, len(y))[0]
    return ẏ


def tangent_of(f: Any, ts: tuple, *args: Any) -> Any:
    """The tangent of ``f(*args)`` along ``ts``: the kernel whose gradient is a
    second derivative along ``ts`` (the ``rrule`` of ``reverse_over_forward``)."""
    return fcall_pair(f, ts, *args)[1]


def weighted(f: Any, w: Any, ts: tuple, *args: Any) -> Any:
    """``w * y + ẏ``: ``withgradient``'s pullback differentiates it (value and gradient)."""
    y, ẏ = fcall_pair(f, ts, *args)
    if type(y) is tuple:
        ẏ = _forward.split(ẏ, len(y))[0]
        y = y[0]
    return w * y + ẏ


def reverse_over_forward(kernel: Callable, seed: Any, *args: Any) -> tuple:
    """The cotangents ``(∂kernel, ∂args...)`` of ``kernel(*args)`` for the output
    cotangent ``seed``, where ``kernel`` runs forward mode: a second derivative.
    (``nestlevel`` counts this frame as two levels of differentiation.)

    One reverse pass of its own (``ad.runtime.state``): a user object the pushforward
    writes is followed by identity, its fields' tangents too (``_through_setattr``),
    so a read through another name (the caller of a method that wrote ``self``)
    differentiates the write."""
    with _state.scope(over_forward=True):
        _, pb = rcall(kernel, *args)
        return pb(seed)
