"""Calls of Python functions in reverse mode: run the transformed primal, map its pullback.

``call_function(f, args, kwargs, closure_active)`` asks the transform
(``ad.transform.transformed``, imported on first use) for ``f``'s generated
primal, runs it, and returns ``(y, pullback)`` in ``rcall``'s form: the
generated adjoint returns one cotangent per parameter (``*args`` a tuple,
``**kwargs`` a dict); the pullback returns one per argument of this call, then a
dict of keyword cotangents when called with keywords. A function that writes an
object's field returns a ``Stateful`` pullback (``state``); a rule's own Python
body differentiated under nested differentiation runs with tracking suspended.

``rcall``, the constructors of ``reverse_fallback`` and the entry points
(``ad.api``) call it.

>>> def f(x, *rest):
...     return x * sum(rest)
>>> y, pullback = call_function(f, (2.0, 3.0, 4.0), None, False)
>>> y, pullback(1.0)
(14.0, (NoTangent(), 7.0, 2.0, 2.0))
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ad.errors import NoSourceError
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import kw_ct
from ad.runtime.single_use import ONCE, handoff, new_token
from ad.runtime.state import WRITES as _WRITES
from ad.runtime.state import Stateful as _Stateful
from ad.runtime.state import internal as _internal
from ad.runtime.state import suspended as _suspended
from rulescore import AbstractZero, ZeroTangent

__all__ = ["call_function"]

_Z = ZeroTangent()


def call_function(
    f: types.FunctionType,
    args: tuple,
    kwargs: dict | None,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    novalue: bool = False,
) -> tuple[Any, Callable]:
    """Run the transformed primal of ``f``; map its pullback to the call's arguments.

    ``inactive``: a bit mask of positional arguments that carry no derivative
    (see ``rcall_masked``). ``novalue``: the caller (``ad.gradient``) needs no
    value; a primal that can skip it returns ``fused_regions.NOVALUE`` instead."""
    transform = _TRANSFORM[0] if _TRANSFORM else _import_transform()
    try:
        entry = transform.transformed(f, closure_active, as_init, inactive)
        if entry.starred and not kwargs and not as_init:  # ``g(*q)`` of a tuple q: for its length
            lengths = transform.star_lengths(entry, args)
            if lengths:
                entry = transform.transformed(f, closure_active, as_init, inactive, lengths)
    except NoSourceError:
        if as_init or not hasattr(f, "__wrapped__"):
            raise
        return _wrappers.reverse_wrapper(f, args, kwargs)  # a wrapper made by exec...
    fwd = entry.instantiate(f)
    n = _WRITES[0]
    if _internal(f.__code__):  # a rule differentiated (second order): see _state
        with _suspended():
            y, back = fwd(*args, **(kwargs or {}))
    elif novalue and entry.elides:
        y, back = fwd(*args, _ad_nv=True, **(kwargs or {}))  # transform._nodes.NO_VALUE
    elif kwargs:
        y, back = fwd(*args, **kwargs)
    else:
        y, back = fwd(*args)
    if entry.guards:  # helpers inlined: still the functions their names are?
        transform.check_guards_after(entry.guards, f)
    if kwargs is not None or not entry.simple or len(args) != entry.n_positional:
        back = _map_pullback(back, entry, len(args), kwargs)
    if _WRITES[0] != n:  # the function wrote an object's field: see _state
        return y, _Stateful(back)
    return y, back


_TRANSFORM: list = []  # the transform package, imported on first use


def _import_transform() -> Any:
    from ad import transform

    _TRANSFORM.append(transform)
    return transform


def _map_pullback(back: Callable, entry: Any, n_args: int, kwargs: dict | None) -> Callable:
    spec = entry.spec
    pos = spec.positional
    n_bound = min(n_args, len(pos))
    if (
        kwargs is None
        and spec.vararg
        and tuple(spec.all_names) == (*pos, spec.vararg)
        and n_args >= len(pos)  # fewer: defaults fill the rest (mapped below)
    ):
        return _varargs_pullback(back, len(pos), n_args)

    def mapped_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(back, _once)
        raw = back(ȳ)
        by_name = dict(zip(spec.all_names, raw[1:]))
        out = [raw[0]]
        out.extend(by_name[pos[i]] for i in range(n_bound))
        if n_args > n_bound:
            extra = by_name[spec.vararg]
            if isinstance(extra, AbstractZero):
                out.extend([_Z] * (n_args - n_bound))
            else:
                out.extend(extra[i] for i in range(n_args - n_bound))
        if kwargs is not None:
            kw = {}
            rest = by_name.get(spec.kwarg, _Z) if spec.kwarg else _Z
            for k in kwargs:
                if k in by_name and k != spec.vararg and k != spec.kwarg:
                    kw[k] = by_name[k]
                else:
                    kw[k] = kw_ct(rest, k)
            out.append(kw)
        return tuple(out)

    return mapped_pullback


def _varargs_pullback(back: Callable, n_pos: int, n_args: int) -> Callable:
    """``_map_pullback`` for ``def f(a, b, *rest)`` called with ``n_args`` positional
    arguments (at least ``n_pos``): the cotangent of ``rest`` spread out."""
    head = n_pos + 1

    def varargs_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(back, _once)
        raw = back(ȳ)
        extra = raw[head]
        if type(extra) is tuple and len(extra) == n_args - n_pos:
            return raw[:head] + extra
        if isinstance(extra, AbstractZero):
            return raw[:head] + (_Z,) * (n_args - n_pos)
        return raw[:head] + tuple(extra[i] for i in range(n_args - n_pos))

    return varargs_pullback
