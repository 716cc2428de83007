"""Tools that write rules for you: ``scalar_rule``, ``derivatives_given_output``,
``ignore_derivatives``; and ``conj``, the conjugation their pullbacks apply.

``not_implemented`` and ``NotImplementedTangent`` live in ``_not_implemented``
(``_projection`` needs the class too) and are re-exported here.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from ._not_implemented import NotImplementedTangent, not_implemented
from ._projection import ProjectTo
from ._rules import frule, non_differentiable, rrule
from ._tangent import Tangent
from ._thunks import unthunk
from ._zeros import AbstractZero, NoTangent, ZeroTangent
from .errors import CotangentError, RuleDefinitionError

__all__ = [
    "NotImplementedTangent",
    "conj",
    "derivatives_given_output",
    "ignore_derivatives",
    "not_implemented",
    "scalar_rule",
]

# f -> partials(*args, Ω), for derivatives_given_output.
_PARTIALS: dict[Any, Callable[..., Any]] = {}


def conj(p: Any) -> Any:
    """The complex conjugate of a partial derivative, as ``scalar_rule``'s pullbacks take it.

    The pullback of a holomorphic scalar function multiplies the output cotangent
    by the conjugate partial (``x̄ = ȳ · conj(∂Ω/∂x)``, ChainRules' convention);
    every pullback that :func:`scalar_rule` writes calls this function for it. A
    Python float is returned as it is (the hot case), anything with a
    ``conjugate()`` method (complex numbers, numpy scalars and arrays) is
    conjugated, anything else is returned unchanged.

    It is public for ADs: an AD that differentiates a pullback written by
    ``scalar_rule`` (second order, reverse over reverse) meets calls to this
    function and needs a rule for it, registered with
    ``rrule.register(rulescore.conj, ...)``. Conjugation is real-linear and its
    own adjoint under ``<a, b> = Re(conj(a)·b)``: the cotangent of ``p`` is
    ``conj(p̄)``.

    >>> from rulescore import conj
    >>> conj(2.0), conj(1 + 2j), conj(3)
    (2.0, (1-2j), 3)
    >>> import numpy as np
    >>> conj(np.array([1j, 2.0]))
    array([-0.-1.j,  2.-0.j])

    See also: :func:`scalar_rule`.
    """
    if type(p) is float:
        return p
    c = getattr(p, "conjugate", None)
    return p if c is None else c()


#: The name ``ad`` registers a rule for (kept until it imports :func:`conj`).
_conj = conj


def _as_rows(ps: Any, n_args: int, multi: bool, f: Any) -> tuple:
    """Normalise what ``partials`` returned to a tuple of rows, one per output."""
    if not multi:
        if n_args == 1 and not isinstance(ps, tuple):
            ps = (ps,)
        rows = (ps,)
    else:
        rows = tuple(r if isinstance(r, tuple) else (r,) for r in ps)
    for r in rows:
        if len(r) != n_args:
            raise CotangentError(
                f"scalar_rule for {getattr(f, '__name__', f)}: partials returned {len(r)} "
                f"entries for a call with {n_args} arguments"
            )
    return rows


def _output_cotangents(ȳ: Any, m: int, f: Any) -> tuple:
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return (ȳ,) * m
    if isinstance(ȳ, Tangent):
        ȳ = tuple(ȳ._backing)
    if not isinstance(ȳ, (tuple, list)) or len(ȳ) != m:
        raise CotangentError(
            f"pullback of {getattr(f, '__name__', f)}: the output is a tuple of {m}, so the "
            f"cotangent must be a tuple of {m} entries; got {ȳ!r}"
        )
    return tuple(unthunk(v) for v in ȳ)


def _row_times(row: Any, ẋs: tuple) -> Any:
    """``Σ ∂ᵢ · ẋᵢ`` over one row of partials, zeros skipped."""
    acc: Any = ZeroTangent()
    for p, ẋ in zip(row, ẋs):
        ẋ = unthunk(ẋ)
        if not isinstance(ẋ, AbstractZero):
            acc = acc + p * ẋ
    return acc


def _positional_counts(fn: Any) -> tuple[int, int | None] | None:
    """How many positional arguments ``fn`` takes: (least, most; None: any), or None
    where its signature is unknown (a builtin without one)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = sum(p.kind in positional and p.default is p.empty for p in params)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return required, None
    return required, sum(p.kind in positional for p in params)


def _argument_names(f: Any, n: int) -> str:
    """``f``'s first ``n`` positional parameter names, as a call would list them."""
    try:
        names = [p.name for p in inspect.signature(f).parameters.values()][:n]
    except (TypeError, ValueError):
        names = []
    return ", ".join(names if len(names) == n else [f"x{i + 1}" for i in range(n)])


def _check_partials_arity(f: Any, partials: Any, name: str) -> None:
    """Refuse, at registration, partials that cannot take ``(*args, Ω)`` for the
    calls ``f`` accepts (they would fail only when first used)."""
    takes, gets = _positional_counts(partials), _positional_counts(f)
    if takes is None or gets is None:
        return
    lo, hi = takes
    for n in {gets[0], gets[1]} - {None}:
        if n + 1 < lo or (hi is not None and n + 1 > hi):  # type: ignore[operator]
            raise RuleDefinitionError(
                f"scalar_rule({name}, ...): the partials take {lo if lo == hi else f'{lo} to {hi}'} "
                f"positional argument(s), but {name} is called with {n}, so they get {n + 1} "
                f"(the arguments, then the output Ω).\n"
                f"To fix: define them as ({_argument_names(f, n)}, Ω) returning one partial "
                "per argument."
            )


def scalar_rule(f: Any, partials: Callable | None = None, types: tuple | None = None) -> Any:
    """Define ``rrule`` and ``frule`` for a scalar function from its partials.

    ``partials(*args, Ω)`` gets the arguments and the output ``Ω`` and returns
    one partial derivative per argument (a bare value is fine for one
    argument), or, for a function returning a tuple, one tuple of partials per
    output. Complex functions are taken to be holomorphic: the pullback
    multiplies by the conjugate partial, as ChainRules does.

    Function form ``scalar_rule(f, partials)``, or decorator form:

    >>> import math
    >>> from rulescore import rrule, frule, scalar_rule
    >>> @scalar_rule(lambda x, Ω: Ω * (1 - Ω))
    ... def sigmoid(x):
    ...     return 1 / (1 + math.exp(-x))
    >>> y, pb = rrule(sigmoid, 0.0)
    >>> y, pb(1.0)
    (0.5, (NoTangent(), 0.25))
    >>> frule((None, 2.0), sigmoid, 0.0)
    (0.5, 0.5)
    """
    if partials is None:
        deriv = f

        def decorator(fn: Any) -> Any:
            scalar_rule(fn, deriv, types)
            return fn

        return decorator
    if not callable(partials):
        raise TypeError(f"scalar_rule: partials {partials!r} is not callable")
    name = getattr(f, "__name__", "f")
    _check_partials_arity(f, partials, name)

    def scalar_rrule(*args: Any) -> Any:
        Ω = f(*args)
        n = len(args)
        multi = type(Ω) is tuple
        rows = _as_rows(partials(*args, Ω), n, multi, f)

        if not multi:
            (row,) = rows

            def scalar_pullback(ȳ: Any) -> tuple:
                ȳ = unthunk(ȳ)
                if isinstance(ȳ, AbstractZero):
                    return (NoTangent(),) + (ZeroTangent(),) * n
                if isinstance(ȳ, (tuple, list, Tangent, dict)):
                    raise CotangentError(
                        f"pullback of {name}: the output is a scalar, so the cotangent must be "
                        f"a scalar; got {type(ȳ).__name__}"
                    )
                return (NoTangent(),) + tuple(ProjectTo(x)(ȳ * conj(p)) for x, p in zip(args, row))

        else:
            m = len(rows)

            def scalar_pullback(ȳ: Any) -> tuple:
                ȳs = _output_cotangents(ȳ, m, f)
                out: list[Any] = [ZeroTangent()] * n
                for ȳi, row in zip(ȳs, rows):
                    if isinstance(ȳi, AbstractZero):
                        continue
                    for j, p in enumerate(row):
                        out[j] = out[j] + ȳi * conj(p)
                return (NoTangent(),) + tuple(ProjectTo(x)(d) for x, d in zip(args, out))

        scalar_pullback.__name__ = scalar_pullback.__qualname__ = f"{name}_pullback"
        return Ω, scalar_pullback

    def scalar_frule(ḟ: Any, *rest: Any) -> Any:
        n = len(rest) // 2
        ẋs, args = rest[:n], rest[n:]
        Ω = f(*args)
        multi = type(Ω) is tuple
        rows = _as_rows(partials(*args, Ω), n, multi, f)
        # built without writes in place: an AD differentiates this body again at
        # third order (forward over forward over forward)
        outs = [_row_times(row, ẋs) for row in rows]
        if multi:
            return Ω, Tangent[tuple](*outs)
        return Ω, outs[0]

    scalar_rrule.__name__ = scalar_rrule.__qualname__ = f"{name}_rrule"
    # An AD may call the partials directly for plain floats (its fast path).
    scalar_rrule.scalar_partials = partials  # type: ignore[attr-defined]
    scalar_frule.__name__ = scalar_frule.__qualname__ = f"{name}_frule"
    scalar_frule.scalar_partials = partials  # type: ignore[attr-defined]
    rrule.register_signature(f, scalar_rrule, types)
    frule.register_signature(f, scalar_frule, types)
    _PARTIALS[f] = partials
    return None


def derivatives_given_output(Ω: Any, f: Any, *args: Any) -> tuple:
    """The partials of a ``scalar_rule`` function: a tuple of rows, one per output.

    >>> from rulescore import scalar_rule, derivatives_given_output
    >>> def cube(x):
    ...     return x**3
    >>> scalar_rule(cube, lambda x, Ω: 3 * x**2)
    >>> derivatives_given_output(8.0, cube, 2.0)
    ((12.0,),)
    """
    partials = _PARTIALS.get(f)
    if partials is None:
        raise LookupError(
            f"derivatives_given_output: {getattr(f, '__name__', f)!s} has no scalar_rule"
        )
    return _as_rows(partials(*args, Ω), len(args), type(Ω) is tuple, f)


_CALLABLE_FUNCTIONS = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    functools.partial,
)


def ignore_derivatives(x: Any) -> Any:
    """Return ``x`` (or ``x()`` when ``x`` is a function) with no derivative flowing.

    Functions (def, lambda, builtins, methods, ``functools.partial``) are
    called with no arguments; any other object, callable instances included,
    is returned unchanged.

    >>> ignore_derivatives(3.0), ignore_derivatives(lambda: 4.0)
    (3.0, 4.0)
    """
    if isinstance(x, _CALLABLE_FUNCTIONS):
        return x()
    return x


non_differentiable(ignore_derivatives)
