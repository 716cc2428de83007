"""The forward-mode entry points: ``jvp`` and ``pushforward``.

They check and normalise the tangents the user gives (``None`` for no
perturbation; tuples, lists, dicts and dataclass instances for structures),
run the pushforward, and turn the output tangent back into plain values:
numbers and arrays, tuples/lists/dicts for containers, ``Tangent[P]`` for
dataclasses and objects, zeros shaped like the output where nothing flows,
``None`` where no derivative exists (strings, bools, integers from ``len``).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.api.written_arguments import held, written_arguments
from ad.runtime.cotangents import instance_fields
from ad.runtime.forward import call_with
from ad.runtime.state import deep, follow
from ad.runtime.state import scope as state_scope
from ad.runtime.tracebacks import entry_point, hide_internals
from ad.transform.holders import stateful
from rulescore import (
    AbstractZero,
    NoTangent,
    NotImplementedTangent,
    Tangent,
    ZeroTangent,
    unthunk,
)

__all__ = ["jvp", "pushforward"]

_Z = ZeroTangent()


@entry_point
def jvp(f: Callable, args: tuple, tangents: tuple, /, **kwargs: Any) -> tuple[Any, Any]:
    """``(f(*args, **kwargs), J·ẋ)``: the value and its directional derivative along
    ``tangents``.

    ``tangents`` has one entry per argument, shaped like it: a number or array
    for numbers and arrays, a tuple/list/dict of tangents for containers, a
    ``Tangent[P]`` (or an instance of ``P``) for a dataclass; ``None`` or
    ``ZeroTangent()`` where the argument is not perturbed. Forward mode runs
    the ``frule`` of each operation alongside the primal (no tape): its cost
    is a small multiple of one call of ``f``, whatever the output's size.

    >>> import numpy as np
    >>> jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (6.0, 3.0)
    >>> jvp(np.sin, (np.zeros(2),), (np.array([1.0, 2.0]),))
    (array([0., 0.]), array([1., 2.]))
    >>> jvp(lambda p: p[0] * p[1], ((2.0, 5.0),), ((1.0, None),))
    (10.0, 5.0)

    Keyword arguments are passed to ``f`` and not differentiated (their tangent
    is zero); ``f``, ``args`` and ``tangents`` are positional-only, so any name
    can be a keyword of ``f``:

    >>> jvp(lambda x, scale=1.0: scale * x**2, (3.0,), (1.0,), scale=2.0)
    (18.0, 12.0)

    See also: pushforward, pullback.
    """
    try:
        if not isinstance(args, (tuple, list)) or not isinstance(tangents, (tuple, list)):
            raise TypeError(
                "jvp(f, args, tangents) takes the arguments and their tangents as tuples, "
                f"got {type(args).__name__} and {type(tangents).__name__}.\n"
                "To fix: write jvp(f, (x,), (ẋ,)) for a function of one argument."
            )
        if len(args) != len(tangents):
            raise TypeError(
                f"jvp: {len(args)} argument(s) but {len(tangents)} tangent(s); give one tangent "
                "per argument (None for an argument that is not perturbed)"
            )
        ts = tuple(
            _tangent_in(x, ṫ, f"argument {i + 1}") for i, (x, ṫ) in enumerate(zip(args, tangents))
        )
        # The arguments in a tuple of the AD's own, as ``gradient(f, *args)`` holds them,
        # and no reference left to the caller's: an argument ``f`` updates in place
        # (``x *= 2``) is then accepted exactly when nothing the caller keeps (``args``
        # itself included) would see the change (``ad.runtime.ownership``), as in reverse mode.
        # Passed as one tuple, not unpacked into a call: no reference out of sight.
        args = (*args,)
        with state_scope(forward=True), deep:  # one differentiation (see ad.runtime.state)
            for i in written_arguments(f, args):  # see ad.api.written_arguments
                follow(held(f, args, i))
            y, ẏ = call_with(f, (_Z, *ts), args, kwargs, {k: _Z for k in kwargs})
        return y, tangent_out(y, ẏ)
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


def pushforward(f: Callable, /, *args: Any, **kwargs: Any) -> Callable[..., Any]:
    """The function mapping tangents of ``args`` (one per argument) to ``J·ẋ``.

    Each call runs the pushforward of ``f`` again (forward mode keeps no tape).
    Keyword arguments are passed to ``f`` and not differentiated.

    >>> pf = pushforward(lambda x, y: x**2 * y, 3.0, 2.0)
    >>> pf(1.0, 0.0), pf(0.0, 1.0)
    (12.0, 9.0)
    >>> pushforward(lambda x, power=2: x**power, 2.0, power=3)(1.0)
    12.0

    See also: jvp.
    """

    @entry_point
    def pushforward_at(*tangents: Any) -> Any:
        try:
            return jvp(f, args, tangents, **kwargs)[1]
        except Exception as e:
            if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
                raise e
            raise

    return pushforward_at


# --- tangents in ------------------------------------------------------------------


def _tangent_in(x: Any, ṫ: Any, where: str) -> Any:
    """The user's tangent ``ṫ`` for primal ``x`` as a rulescore tangent (checked)."""
    if ṫ is None:
        return _Z
    if isinstance(ṫ, (AbstractZero, Tangent)):
        return ṫ
    if isinstance(x, np.ndarray) or (isinstance(x, np.generic) and isinstance(ṫ, np.ndarray)):
        ṫ = np.asarray(ṫ)
        if ṫ.shape != np.shape(x):
            raise ValueError(
                f"jvp: the tangent of {where} has shape {ṫ.shape}, the argument has shape "
                f"{np.shape(x)}.\nTo fix: give a tangent of the same shape as the argument."
            )
        return ṫ
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        if not isinstance(ṫ, numbers.Number) and not (isinstance(ṫ, np.ndarray) and ṫ.shape == ()):
            raise TypeError(
                f"jvp: the tangent of {where} (a {type(x).__name__}) must be a number, "
                f"got {type(ṫ).__name__}"
            )
        return ṫ
    fields = getattr(type(x), "_fields", None)
    if isinstance(x, (tuple, list)) and fields is None:
        if not isinstance(ṫ, (tuple, list)) or len(ṫ) != len(x):
            raise TypeError(
                f"jvp: the tangent of {where} (a {type(x).__name__} of {len(x)} entries) must "
                f"be a tuple or list of {len(x)} tangents, got {_describe(ṫ)}"
            )
        inner = [_tangent_in(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(x, ṫ))]
        # Tangent[P] is a class made at runtime (mypy sees a type application)
        return Tangent[type(x)]._from_backing(tuple(inner))  # type: ignore[misc]
    if isinstance(x, dict):
        if not isinstance(ṫ, dict) or not set(ṫ) <= set(x):
            raise TypeError(
                f"jvp: the tangent of {where} (a dict) must be a dict with some of its keys, "
                f"got {_describe(ṫ)}"
            )
        b = {k: _tangent_in(x[k], v, f"{where}[{k!r}]") for k, v in ṫ.items()}
        return Tangent[dict]._from_backing(b)  # type: ignore[misc]
    if fields is not None or dataclasses.is_dataclass(x):
        names = fields if fields is not None else [f.name for f in dataclasses.fields(x)]
        if type(ṫ) is not type(x):
            raise TypeError(
                f"jvp: the tangent of {where} (a {type(x).__name__}) must be a "
                f"Tangent[{type(x).__name__}] or a {type(x).__name__}, got {_describe(ṫ)}"
            )
        b = {n: _tangent_in(getattr(x, n), getattr(ṫ, n), f"{where}.{n}") for n in names}
        return Tangent[type(x)]._from_backing(b)  # type: ignore[misc]
    if type(ṫ) is type(x) and stateful(x):
        # An instance of the user's class as its own tangent: its fields are the
        # tangent's fields; what the class holds (a class attribute, a method) is
        # not the instance's and has no tangent.
        names = instance_fields(ṫ)
        extra = [n for n in names if n not in instance_fields(x)]
        if extra:
            raise TypeError(
                f"jvp: the tangent of {where} (a {type(x).__name__}) has fields the "
                f"argument does not have: {', '.join(extra)}.\nTo fix: give a "
                f"Tangent[{type(x).__name__}] of some of the argument's fields."
            )
        b = {n: _tangent_in(getattr(x, n), getattr(ṫ, n), f"{where}.{n}") for n in names}
        return Tangent[type(x)]._from_backing(b)  # type: ignore[misc]
    return ṫ


def _describe(v: Any) -> str:
    if hasattr(v, "__len__") and not isinstance(v, str):
        return f"a {type(v).__name__} of {len(v)} entries"
    return f"a {type(v).__name__}"


# --- tangents out -------------------------------------------------------------------


def tangent_out(y: Any, ẏ: Any) -> Any:
    """``ẏ`` as plain values shaped like ``y`` (zeros filled in; None: no derivative)."""
    ẏ = unthunk(ẏ)
    if isinstance(ẏ, NotImplementedTangent):
        ẏ._fail()
    if isinstance(ẏ, NoTangent):
        return None
    if isinstance(ẏ, AbstractZero):
        return _zero_like(y)
    if isinstance(ẏ, Tangent):
        kind = type(ẏ)._kind
        if kind == "positional" and isinstance(y, (tuple, list)):
            vals = [tangent_out(a, b) for a, b in zip(y, ẏ)]
            return list(vals) if isinstance(y, list) else tuple(vals)
        if kind == "mapping" and isinstance(y, dict):
            return {k: tangent_out(y[k], ẏ[k]) for k in y}
        if kind == "fields":
            fields: Any = ẏ._backing  # a dict for this kind
            b = {
                k: tangent_out(getattr(y, k), v) if hasattr(y, k) else v for k, v in fields.items()
            }
            return type(ẏ)._from_backing(b)
        return ẏ
    if isinstance(ẏ, (tuple, list)) and isinstance(y, (tuple, list)) and len(y) == len(ẏ):
        vals = [tangent_out(a, b) for a, b in zip(y, ẏ)]
        return list(vals) if isinstance(y, list) else tuple(vals)
    return ẏ


def value_out(y: Any) -> Any:
    """A value nested forward mode kept in rulescore's form (the tangent of an inner
    ``jvp``, returned by the function an outer one differentiates) as the user gets
    it: a structural zero is ``0.0`` (a scalar, which broadcasts), no derivative None."""
    if isinstance(y, NoTangent):
        return None
    if isinstance(y, AbstractZero):
        return 0.0
    return y


def _zero_like(y: Any) -> Any:
    if isinstance(y, bool) or y is None or isinstance(y, str):
        return None
    if isinstance(y, AbstractZero):  # a value kept in rulescore's form (see value_out)
        return 0.0
    if isinstance(y, np.ndarray):
        if y.dtype.kind in "fc":
            return np.zeros_like(y)
        if y.dtype.kind in "iu":
            return np.zeros(y.shape)
        return None
    if isinstance(y, np.generic):
        return np.zeros((), dtype=y.dtype)[()] if y.dtype.kind in "fc" else 0.0
    if isinstance(y, complex):
        return 0j
    if isinstance(y, numbers.Real):
        return 0.0
    if isinstance(y, (tuple, list)) and getattr(type(y), "_fields", None) is None:
        vals = [_zero_like(v) for v in y]
        return list(vals) if isinstance(y, list) else tuple(vals)
    if isinstance(y, dict):
        return {k: _zero_like(v) for k, v in y.items()}
    return ZeroTangent()
