"""Tracebacks and warnings that show the user's code, not ad's machinery.

**Errors.** An error raised while differentiating travels through 8 to 12 of
ad's own frames (the entry point, the runtime, the rule) before its message.
Each public entry point (``gradient``, ``jvp``, ``hessian``...) catches it and,
as JAX does, drops from its traceback every frame whose code lives in the
``ad``, ``rules`` or ``rulescore`` packages except the innermost (where it was
raised), then re-raises the same exception object: type, message, cause and
context are unchanged. What is left is the user's own lines: the call of the
entry point, the lines of the differentiated functions (generated code carries
the user's file and line numbers), and the innermost frame. Exceptions chained
to it (``raise ... from e`` inside ad) are filtered the same way.

Only the outermost entry point filters: one called inside a differentiated
function (``gradient`` of ``gradient``) sees an outer one on the stack and
re-raises untouched, so the work is done once (filtering is idempotent anyway).
Nothing is done unless an error is raised (a ``try`` costs nothing in 3.11+).
Set ``AD_TRACEBACK=full`` in the environment to keep every frame (read when the
error happens, so it can be set in a running session). On Python 3.10 a bare
``raise`` restores the unfiltered traceback; the entry point re-raises the
exception itself there, so its own frame is shown as well.

**Warnings.** numpy warns from the frame that runs the operation: for a rule
(``sqrt``'s derivative at 0 divides by zero) that is a line of
``rules/_numpy_elementwise.py``. ``import ad`` wraps ``warnings._showwarnmsg``,
the function that displays (or records, under ``catch_warnings(record=True)``
and pytest) a warning after the filters let it through: a warning whose file is
one of ad's, rulescore's or rules' is re-pointed at the innermost frame outside
them, the user's line (a generated frame, which carries it), and names the
internal line in its text, when one of ad's entry points is running further out
(a rule called directly keeps its warning as it is). Every other warning passes
through untouched. It
costs nothing until a warning is shown, keeps no state, and walks only the
stack of the thread that warns, so it is thread-safe. Its limits: the filters
and the once-per-location registry ran before it, on the internal location (a
``module=`` filter sees ``rules._numpy_elementwise``, and the ``default`` action
shows a rule's warning once, whichever user line triggered it); a program that
replaces ``warnings._showwarnmsg`` itself bypasses it.
"""

from __future__ import annotations

import os
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "call_site",
    "entry_point",
    "function_name",
    "hide_internals",
    "install_warning_hook",
    "internal_file",
]

_F = TypeVar("_F", bound=Callable[..., Any])

#: The code objects of the entry points: an exception met by one of them while
#: another is further up the stack is left to that one.
_ENTRY_CODES: set[types.CodeType] = set()

#: The directories of ad, rules and rulescore (each ending in a separator).
_DIRS: list[tuple[str, ...]] = []

_RERAISE_ITSELF = sys.version_info < (3, 11)


def entry_point(fn: _F) -> _F:
    """Mark ``fn`` as a public entry point (its body ends in ``hide_internals``)."""
    _ENTRY_CODES.add(fn.__code__)
    return fn


def _internal_dirs() -> tuple[str, ...]:
    if not _DIRS:
        found = []
        for name in ("ad", "rules", "rulescore"):
            path = getattr(sys.modules.get(name), "__file__", None)
            if path:
                found.append(os.path.dirname(os.path.abspath(path)) + os.sep)
        _DIRS.append(tuple(found))
    return _DIRS[0]


def internal_file(filename: str) -> bool:
    """Whether ``filename`` is a source file of ad, rules or rulescore."""
    return filename.startswith(_internal_dirs())


# --- naming the user's code in messages ----------------------------------------


def call_site() -> str:
    """file:line of the innermost differentiated (generated) frame."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ("_ad_fwd", "_ad_back"):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def function_name(f: Any) -> str:
    """``f``'s name in messages: ``module.qualname`` (a builtin's bare), or its repr."""
    mod = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if name is None:  # an object (a partial, a callable instance): its repr says it all
        return repr(f)
    if mod in (None, "builtins"):
        return name
    return f"{mod}.{name}"


def _keep_all() -> bool:
    return os.environ.get("AD_TRACEBACK", "").strip().lower() in ("full", "all", "off", "0")


def _filtered(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the internal frames, the innermost one excepted."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    dirs = _internal_dirs()
    last = len(entries) - 1
    kept = [
        t
        for i, t in enumerate(entries)
        if i == last or not t.tb_frame.f_code.co_filename.startswith(dirs)
    ]
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def hide_internals(e: BaseException) -> bool:
    """Drop ad's frames from ``e``'s traceback, in the ``except`` clause of an entry
    point, which then re-raises with a bare ``raise``; returns True where it must
    ``raise e`` instead (Python 3.10, whose bare ``raise`` would restore the
    traceback it caught). Does nothing under an outer entry point, or with
    ``AD_TRACEBACK=full``."""
    if _keep_all():
        return False
    frame: types.FrameType | None = sys._getframe(2)  # the entry point's caller
    while frame is not None:
        if frame.f_code in _ENTRY_CODES:
            return False  # the outer entry point filters, once
        frame = frame.f_back
    seen: set[int] = set()
    err: BaseException | None = e
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        err.__traceback__ = _filtered(err.__traceback__)
        err = err.__cause__ if err.__cause__ is not None else err.__context__
    return _RERAISE_ITSELF


# --- warnings ------------------------------------------------------------------------


def _user_frame() -> types.FrameType | None:
    """The innermost frame outside ad, rules and rulescore that called into them,
    when an entry point of ad is further out (a rule called directly, not by ad,
    keeps its warnings as they are); else None."""
    frame: types.FrameType | None = sys._getframe(3)  # the hook's caller
    dirs = _internal_dirs()
    while frame is not None and not frame.f_code.co_filename.startswith(dirs):
        frame = frame.f_back  # the warnings machinery, numpy's Python frames
    while frame is not None and frame.f_code.co_filename.startswith(dirs):
        frame = frame.f_back
    outer = frame
    while outer is not None:
        if outer.f_code in _ENTRY_CODES:
            return frame
        outer = outer.f_back
    return None


def _repointed(msg: Any) -> Any:
    """``msg`` (a ``warnings.WarningMessage``) at the user's line, when it was raised in
    ad's, rules' or rulescore's code; otherwise ``msg`` itself."""
    filename = getattr(msg, "filename", None)
    if not isinstance(filename, str) or not internal_file(filename):
        return msg
    user = _user_frame()
    if user is None:
        return msg
    where = f"{_short(filename)}:{msg.lineno}"
    text = f"{msg.message} (raised in {where} while differentiating this line)"
    try:
        message: Any = msg.category(text)
    except Exception:  # a warning class with its own constructor: keep its text
        message = msg.message
    return warnings.WarningMessage(
        message,
        msg.category,
        user.f_code.co_filename,
        user.f_lineno,
        msg.file,
        None,
        msg.source,
    )


def _short(filename: str) -> str:
    """``rules/_numpy_elementwise.py`` for a file of the three packages."""
    for d in _internal_dirs():
        if filename.startswith(d):
            return os.path.basename(d.rstrip(os.sep)) + "/" + filename[len(d) :]
    return filename


def install_warning_hook() -> None:
    """Wrap ``warnings._showwarnmsg`` once (see the module's docstring)."""
    show = getattr(warnings, "_showwarnmsg", None)
    if show is None or getattr(show, "_ad_hook", False):
        return

    def _showwarnmsg(msg: Any) -> None:
        show(_repointed(msg))

    _showwarnmsg._ad_hook = True  # type: ignore[attr-defined]
    warnings._showwarnmsg = _showwarnmsg  # type: ignore[attr-defined]
