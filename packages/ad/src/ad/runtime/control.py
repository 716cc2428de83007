"""Runtime helpers of the control constructs: ``try``, ``with`` and ``match``.

The generated code reads them by name (``helpers.HELPERS``): the classes a
``match`` statement tests (``transform.patterns``), the attribute names of a
class pattern's positional sub-patterns, ``ADError`` (which a ``try`` or a
``with`` in differentiated code must never swallow: it says the derivative
cannot be computed, not that the user's code failed), the error of a loop an
exception left half-way, which the adjoint cannot replay, and the check that
an exception caught did not leave a differentiated function after it wrote
into an object its caller may hold (``transform.tracking``).
"""

from __future__ import annotations

import collections.abc
import sys
from typing import Any

from ad.errors import ADError, UnsupportedSyntaxError

__all__ = ["CONTROL_HELPERS", "WROTE", "caught", "escaping", "match_args", "unfinished_loop"]

#: The classes whose class pattern with one positional sub-pattern matches the
#: subject itself (``case float(x)``), subclasses included (CPython's
#: ``_Py_TPFLAGS_MATCH_SELF``, which types inherit).
_MATCH_SELF = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


def match_args(cls: Any, n: int, keywords: tuple[str, ...]) -> tuple[str | None, ...]:
    """The attribute names the ``n`` positional sub-patterns of ``case cls(...)``
    read, ``None`` for the subject itself; the ``TypeError`` CPython raises for a
    pattern the class does not accept."""
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a class")
    names = getattr(cls, "__match_args__", None)
    if names is None:
        allowed: tuple[str | None, ...] = (None,) if issubclass(cls, _MATCH_SELF) else ()
    elif type(names) is not tuple:
        raise TypeError(
            f"{cls.__name__}.__match_args__ must be a tuple (got {type(names).__name__})"
        )
    else:
        for name in names:
            if type(name) is not str:
                raise TypeError(
                    f"__match_args__ elements must be strings (got {type(name).__name__})"
                )
        allowed = names
    if n > len(allowed):
        plural = "" if len(allowed) == 1 else "s"
        raise TypeError(
            f"{cls.__name__}() accepts {len(allowed)} positional sub-pattern{plural} ({n} given)"
        )
    chosen = allowed[:n]
    seen = set(keywords)
    for name in chosen:
        if name is not None and name in seen:
            raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}")
        seen.add(name)  # type: ignore[arg-type]
    return chosen


def unfinished_loop(message: str, filename: str, line: int) -> UnsupportedSyntaxError:
    """The error an adjoint raises for a loop an exception left after part of it ran
    (a ``try`` or ``with`` around the loop caught or suppressed it)."""
    return UnsupportedSyntaxError(message, filename, line)


#: The local a generated function sets, to its name, once it has written into a
#: container or object it did not create (``transform.tracking.WriteMarks``);
#: the pure form's (``transform.PURE_PREFIX``) is renamed.
WROTE = ("_ad_wrote", "_ar_wrote")


def _partial_write(exc: BaseException | None) -> UnsupportedSyntaxError | None:
    """The error for ``exc``, caught in the frame its traceback starts at, when it
    left a differentiated function (a frame further down) that had written into
    an object or container it did not create: the caller sees that write, but the
    function's derivative is lost with its frame (it returned nothing)."""
    tb = exc.__traceback__ if exc is not None else None
    if tb is None:
        return None
    where = f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
    tb = tb.tb_next
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "_ad_fwd":
            local = frame.f_locals
            name = local.get(WROTE[0]) or local.get(WROTE[1])
            if name:
                site = f"{frame.f_code.co_filename}:{tb.tb_lineno}"
                return UnsupportedSyntaxError(
                    f"{site}: in {name}: {type(exc).__name__} left {name} after it had "
                    "written into an object or container its caller may hold, and the "
                    f"caller went on (the `try` or `with` at {where}): the derivative of "
                    f"that write is lost with {name}, which did not return. To fix: raise "
                    f"before writing into what {name} was given (or did not create), or "
                    f"catch the exception inside {name}",
                    frame.f_code.co_filename,
                    None,
                )
        tb = tb.tb_next
    return None


def caught() -> None:
    """First thing in a differentiated ``except`` block: refuse to go on after an
    exception that left a differentiated function part-way through its writes."""
    error = _partial_write(sys.exc_info()[1])
    if error is not None:
        raise error


def escaping() -> BaseException | None:
    """In a ``with`` body's handler (see ``transform.tracking.guard_with_body``): the
    error to raise after the ``with`` if its context manager suppresses the current
    exception: an ``ADError`` itself, or ``caught``'s; else None."""
    exc = sys.exc_info()[1]
    if isinstance(exc, ADError) and not exc.from_values:
        return exc
    return _partial_write(exc)


def guarded() -> Any:
    """The type of the first handler of a differentiated ``try``, which re-raises
    (``except _ad_guarded(): raise``; the expression is evaluated as the exception
    being handled is matched): ``ADError`` when that exception is one that says the
    derivative cannot be computed, else ``()``, which matches nothing, so the user's
    handlers see the exception as plain Python would (``ADError.from_values``)."""
    exc = sys.exc_info()[1]
    if isinstance(exc, ADError) and not exc.from_values:
        return ADError
    return ()


def stateful_in(*stacks: list) -> bool:
    """Whether a tape entry on ``stacks`` is a pullback the adjoint must run even
    without a cotangent (it carries an object's state, see ``state``)."""
    try:
        from ad.runtime.state import Stateful
    except ImportError:  # pragma: no cover - no object state: no such entries
        return False
    return any(type(entry) is Stateful for stack in stacks for entry in stack)


CONTROL_HELPERS: dict[str, Any] = {
    "_ad_stateful_in": stateful_in,
    "_ad_caught": caught,
    "_ad_escaping": escaping,
    "_ad_Sequence": collections.abc.Sequence,
    "_ad_Mapping": collections.abc.Mapping,
    # a Sequence a sequence pattern never matches
    "_ad_not_sequences": (str, bytes, bytearray),
    "_ad_match_args": match_args,
    "_ad_ADError": ADError,
    "_ad_guarded": guarded,
    "_ad_unfinished_loop": unfinished_loop,
}
