"""``ad.pullback`` inside differentiated code.

A call of ``pullback(f, *args)`` in a function that ``jvp`` or ``gradient``
differentiates is a primitive: its ``rrule`` and ``frule`` return the value and
a ``NestedPullback``, a callable object holding ``f`` and ``args`` (its
tangent or cotangent: those of its fields). Calling it runs the vector-Jacobian
product kernel ``ad.runtime.nested_kernels.reverse_over_forward(f, ȳ, *args)``, which has rules of
its own at every order, so derivatives flow through ``f``, ``args`` and ``ȳ``
however deep the nesting.
"""

from __future__ import annotations

from typing import Any

from ad.api import gradient as _api
from ad.api.user_results import to_user
from ad.higher.cotangent_parts import _is_zero, _tangents_ct, as_called
from ad.higher.reverse_over_forward import _own_ct
from ad.higher.unfold import LINEAR
from ad.runtime import forward as _forward
from ad.runtime.accumulate import acc
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.nested_kernels import fcall_pair, reverse_over_forward
from ad.runtime.reverse import field_ct, fn_tangent, rcall
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

__all__ = ["NestedPullback"]

_Z = ZeroTangent()
_NO = NoTangent()


class NestedPullback:
    """``ȳ ↦`` the cotangents of ``args`` (``pullback``'s second result, in
    differentiated code): ``J(args)ᵀ ȳ``, a function of ``f``, ``args`` and ``ȳ``."""

    def __init__(self, f: Any, args: tuple) -> None:
        self.f = f
        self.args = args

    def __call__(self, ȳ: Any) -> tuple:
        return plain_cotangents(reverse_over_forward(self.f, ȳ, *self.args))

    def __repr__(self) -> str:
        return f"<pullback of {getattr(self.f, '__name__', self.f)!r}>"


def pullback_object(f: Any, args: tuple) -> NestedPullback:
    """A ``NestedPullback``: its tangent and cotangent are those of its fields."""
    return NestedPullback(f, tuple(args))


@rrule.register(pullback_object, config=ADConfig)
def _(config: Any, f: Any, args: tuple) -> Any:
    n = len(args)

    def pullback_object_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if _is_zero(ȳ):
            return (_NO, _Z, _Z)
        held = entries(field_ct(ȳ, "args"), n, "the arguments of a pullback")
        return (_NO, field_ct(ȳ, "f"), _tangents_ct(tuple(held)))

    return pullback_object(f, args), pullback_object_pullback


@frule.register(pullback_object, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ȧ: Any, f: Any, args: tuple) -> Any:
    back = pullback_object(f, args)
    if _is_zero(unthunk(ḟ)) and _is_zero(unthunk(ȧ)):
        return back, _Z
    return back, Tangent[NestedPullback]._from_backing({"f": ḟ, "args": ȧ})


LINEAR.add(pullback_object)


def plain_cotangents(cts: tuple) -> tuple:
    """The arguments' cotangents (``cts[1:]``) as ``pullback`` gives them."""
    return tuple(to_user(c) for c in cts[1:])


@rrule.register(plain_cotangents, config=ADConfig)
def _(config: Any, cts: tuple) -> Any:
    n = len(cts)

    def plain_cotangents_pullback(ȳ: Any) -> tuple:
        return (_NO, _tangents_ct((_Z, *entries(ȳ, n - 1, "a pullback's cotangents"))))

    return plain_cotangents(cts), plain_cotangents_pullback


@frule.register(plain_cotangents, config=ADConfig)
def _(config: Any, ṡ: Any, ċts: Any, cts: tuple) -> Any:
    ċ = _forward.entries(ċts, len(cts), cts)[1:]
    return plain_cotangents(cts), _forward.tan_tuple(*(unthunk(c) for c in ċ))


@rrule.register(_api.pullback, config=ADConfig)
def _(config: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    n = len(args)
    bound = _api.bind_keywords(as_called(f), kwargs)  # as called: the pullback object runs it again
    y, pb = rcall(bound, *args)
    back = pullback_object(bound, args)

    def pullback_pullback(ct: Any) -> tuple:
        ȳ, b̄ = (unthunk(c) for c in entries(ct, 2, "pullback's (value, back)"))
        f_ct, args_ct = _Z, [_Z] * n
        if not _is_zero(ȳ):
            raw = pb(ȳ)
            f_ct, args_ct = raw[0], list(raw[1:])
        if not _is_zero(b̄):  # what flowed into the NestedPullback's fields
            f_ct = acc(f_ct, field_ct(b̄, "f"))
            held = entries(field_ct(b̄, "args"), n, "the arguments of a pullback")
            args_ct = [acc(a, b) for a, b in zip(args_ct, held)]
        return (_NO, _own_ct(f_ct, kwargs), *args_ct)

    return (y, back), pullback_pullback


@frule.register(_api.pullback, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    m = len(rest) // 2
    (ḟ, *ȧ), (f, *args) = rest[:m], rest[m:]
    if kwargs:  # the bound function's tangent: f's, in its field "f"
        f = _api.bind_keywords(f, kwargs)
        ḟ = fn_tangent(("f",), (ḟ,))
    y, ẏ = fcall_pair(f, (ḟ, *ȧ), *args)
    back, ḃ = _forward.fcall(pullback_object, (_Z, ḟ, _forward.tan_tuple(*ȧ)), f, tuple(args))
    return (y, back), _forward.tan_tuple(ẏ, ḃ)
