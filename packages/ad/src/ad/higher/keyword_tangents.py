"""A tangent built with keywords in a rule's body, as a positional linear call.

Rules build the tangent of a namedtuple or dataclass output with keywords
(``Tangent[type(out)](Q=q̇, R=ṙ)`` in ``qr``'s, ``eigh``'s, ``slogdet``'s
``frule``). First order calls the class as it is. Nested differentiation
follows such a call when it is positional and linear (``unfold.LINEAR``,
``reverse_over_rules._STRUCTURAL``), not through keyword arguments, which it
leaves to the rule of the callee; so its handlers rewrite the call
(``positional``) as ``tangent_of(cls, names, *values)``: the same value,
linear in ``values``, with an ``frule`` and an ``rrule`` of its own, the
same at every level.

>>> from typing import NamedTuple
>>> class P(NamedTuple):
...     a: float
...     b: float
>>> tangent_of(Tangent[P], ("b",), 2.0).b
2.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.state import keep_stateful
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, canonicalize, frule, rrule
from rulescore import unthunk as _unthunk

__all__ = ["keyword_tangent", "positional", "tangent_of"]

_Z = ZeroTangent()
_NO = NoTangent()


def keyword_tangent(op: Any, args: tuple, kwargs: Any) -> bool:
    """Whether ``op(*args, **kwargs)`` builds a ``Tangent`` from keywords only
    (``kwargs``: the keywords, or their names)."""
    return bool(kwargs) and not args and isinstance(op, type) and issubclass(op, Tangent)


def tangent_of(cls: type, names: tuple, *values: Any) -> Any:
    """``cls(**dict(zip(names, values)))``: a tangent built from its fields by position."""
    return cls(**dict(zip(names, values)))


def positional(op: Any, kwargs: dict, kw_ts: dict) -> tuple[Any, tuple, tuple, Callable]:
    """``(tangent_of, args, ts_tail, split)`` for ``op(**kwargs)`` (``keyword_tangent``):
    the positional call's arguments, the tangents of its arguments after the
    function's (``(0, 0, *kw_ts)``), and ``split(kw)``, the same for another level's
    keyword tangents ``kw``."""
    names = tuple(kwargs)

    def split(kw: dict) -> tuple:
        return (_Z, _Z, *(kw.get(k, _Z) for k in names))

    return tangent_of, (op, names, *kwargs.values()), split(kw_ts), split


def reverse_over(
    fcall: tuple, config: Any, cls: type, kwnames: tuple, kwvalues: tuple, kw_ts: tuple
) -> tuple[Any, Callable]:
    """The ``rrule`` of ``fcall_gen(cls, ḟ, (), (), None, kwnames, kwvalues, kw_ts)``
    (reverse over forward) as that of the positional ``fcall`` of ``tangent_of``,
    its cotangents laid out as ``fcall_gen``'s. ``fcall``: ``reverse_over_fcall``'s
    ``(fcall's rrule, fcall_gen's cotangent layout)``, which imports this module."""
    fcall_rrule, gen_cts = fcall

    m = len(kwnames)
    args = (cls, kwnames, *kwvalues)
    out, pb = fcall_rrule(config, tangent_of, (_Z, _Z, _Z, *kw_ts), *args)

    def keyword_tangent_pullback(ct: Any) -> tuple:
        raw = pb(ct)  # (fcall, tangent_of, ts, cls, names, *values)
        ts_ct = entries(raw[2], m + 3, "tangents")
        kw = dict(zip(kwnames, raw[5:]))
        return gen_cts(_NO, (_Z,), (), kw, kwnames, tuple(ts_ct[3:]))

    return out, keep_stateful(pb, keyword_tangent_pullback)


def _fields_ct(cls: type, names: tuple, ȳ: Any) -> tuple:
    """The cotangents of the fields ``names`` in a cotangent ``ȳ`` of a ``cls`` tangent."""
    ȳ = _unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return (_Z,) * len(names)
    b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
    if isinstance(b, (tuple, list)):  # read by position (a namedtuple's entries)
        fields = tuple(canonicalize(cls._from_backing({}))._backing)  # type: ignore[attr-defined]
        b = dict(zip(fields, b))
    if not isinstance(b, dict):
        raise TypeError(f"a cotangent of a {cls.__name__} must hold its fields, got {ȳ!r}")
    return tuple(b.get(k, _Z) for k in names)


@rrule.register(tangent_of, config=ADConfig)
def _(config: Any, cls: type, names: tuple, *values: Any) -> Any:
    def tangent_of_pullback(ȳ: Any) -> tuple:
        return (_NO, _NO, _NO, *_fields_ct(cls, names, ȳ))

    return tangent_of(cls, names, *values), tangent_of_pullback


@frule.register(tangent_of, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any) -> Any:
    n = len(rest) // 2
    v̇s, (cls, names, *values) = rest[2:n], rest[n:]
    y = tangent_of(cls, names, *values)
    if all(isinstance(_unthunk(v̇), AbstractZero) for v̇ in v̇s):
        return y, _Z
    return y, tangent_of(cls, names, *v̇s)
