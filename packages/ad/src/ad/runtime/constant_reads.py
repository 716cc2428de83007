"""Reads, as constants, of what a differentiation wrote a derivative into.

Code run as plain Python (a call with no differentiated input) and reads of a
captured or global holder that a function does not follow see values, not
derivatives. Where a differentiated write in this pass put a value that carries a
derivative into such a holder (``ad.runtime.state``), such a read would lose the
derivative: these checks refuse it, naming the line and a fix. Here too: the
helpers of a name declared ``global`` and written (``transform.global_names``).
"""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Iterator
from typing import Any

from ad.runtime.state import Pass, _followed_entries, innermost
from ad.runtime.tracebacks import internal_file
from ad.transform.holders import CAPTURED_WRITTEN
from rulescore import non_differentiable

__all__ = [
    "global_get",
    "global_set",
    "unfollowed",
    "unfollowed_call",
]


def unfollowed(obj: Any, name: str, site: str, fname: str) -> None:
    """Refuse a read, as a constant, of a captured or global holder this pass
    follows: a write elsewhere put a value that carries a derivative into it (one
    only followed, or written by plain Python, holds constants)."""
    p = innermost()
    if p is not None and obj is not None and _carries(p, obj, 3):
        from ad.errors import MutationError

        raise MutationError(
            f"{site}: {fname} reads {name!r} (shared with a function that writes it) as a "
            "constant, but a "
            "value carrying a derivative was written into it during this differentiation, "
            "so the derivative would be lost.\n"
            + (
                f"To fix: read it through the object whose method writes it (o.{name.split('.')[-1]} "
                f"rather than {name}), or pass it as an argument to the functions that write "
                "and read it."
                if "." in name
                else f"To fix: pass {name!r} as an argument to the functions that write and "
                "read it, from the function that calls both, so that it is read as "
                "differentiated."
            )
        )


def unfollowed_call(fn: Any, site: str, fname: str) -> None:
    """Refuse a call run as plain Python (no argument carries a derivative) of a
    function that reads a captured or global holder this pass follows: it would
    read the written derivative-carrying value as a constant."""
    p = innermost()
    if p is None or not p.captured:
        return
    for name, obj in _holders_read(fn, 3, set()):
        who = getattr(fn, "__qualname__", None) or type(fn).__name__
        who = f"{who} (called by {fname} with no differentiated input)"
        if _carries(p, obj, 3):
            unfollowed(obj, name, site, who)


def _carries(p: Pass, obj: Any, depth: int) -> bool:
    """Whether a differentiated write in ``p`` changed ``obj``, or an entry of it
    that ``p`` follows (``depth`` levels down)."""
    if p.written.get(id(obj)) is not obj:
        return False
    if id(obj) in p.carried:
        return True
    return depth > 0 and any(_carries(p, v, depth - 1) for v in _followed_entries(p, obj).values())


def _holders_read(fn: Any, depth: int, seen: set) -> Iterator[tuple[str, Any]]:
    """The captured-written holders ``fn`` (and the functions it names) can read."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is None or depth == 0 or code in seen:
        return
    seen.add(code)
    names = {n: fn.__globals__.get(n) for n in code.co_names}
    for n, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            names[n] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    for n, value in names.items():
        if value is None:  # a builtin or a missing name (``get`` gives None: no holder)
            continue
        if CAPTURED_WRITTEN.get(id(value)) is value:
            yield n, value
        elif type(value) is types.FunctionType:
            yield from _holders_read(value, depth - 1, seen)


def _module() -> dict:
    """The globals of the innermost frame of the user's code (generated from it)
    that called here: the AD's own frames (a rule's dispatch, at higher order) skipped."""
    frame = sys._getframe(2)
    while frame.f_back is not None and internal_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame.f_globals


def global_get(name: str) -> Any:
    """The module's binding of ``name`` for the calling (generated) function: the
    start value of a name it declares ``global`` and writes (``transform.global_names``)."""
    found = _module()
    if name in found:
        return found[name]
    return getattr(builtins, name, None)


def global_set(name: str, value: Any) -> None:
    """Rebind the module's ``name`` for the calling (generated) function, as its
    ``global`` statement would have (``transform.global_names``)."""
    _module()[name] = value


# they run as plain Python at every order: what they are given carries no derivative out
for _f in (global_get, global_set):
    non_differentiable(_f)
