"""``with``: the value a user class's ``__enter__`` returns, differentiated.

``with M(a) as t: ...`` gives ``t = type(m).__enter__(m)``; when ``__enter__`` is
Python code of the user's (returning ``self``, or a value computed from the
object's fields), ``t`` carries the derivative of what built the manager. The
ANF pass (``transform.anf_control``) therefore calls ``enter(m)`` as a
differentiated call (a user ``__enter__`` is differentiated from its source;
a library's, such as ``np.errstate``'s or a file's, runs as plain Python, as
the whole statement did), assigns ``t`` from it, and runs the ``with``
statement on ``Entered(m, t)``, whose ``__enter__`` hands that value over and
whose ``__exit__`` is the manager's: Python's own statement, so ``__exit__``
runs on every way out of the body, once.

>>> import ad
>>> class Scaled:
...     def __init__(self, v):
...         self.v = v
...     def __enter__(self):
...         return 2.0 * self.v
...     def __exit__(self, *exc):
...         return False
>>> def f(a):
...     with Scaled(a * a) as t:
...         return t * a
>>> ad.gradient(f, 1.5)     # 2a³
(13.5,)
"""

from __future__ import annotations

from typing import Any

from ad.errors import MutationError
from ad.runtime import calls
from ad.runtime.config import ADConfig
from ad.runtime.dunders import method
from ad.runtime.library_code import users_method
from ad.runtime.rules_callbacks import may_write
from ad.runtime.state import nested
from ad.runtime.tracebacks import call_site
from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule

__all__ = ["CONTEXT_HELPERS", "Entered", "enter"]

_NO = NoTangent()
_Z = ZeroTangent()


def enter(mgr: Any) -> Any:
    """``mgr.__enter__()``, looked up on the type as ``with`` looks it up."""
    return type(mgr).__enter__(mgr)


class Entered:
    """The manager a ``with`` statement runs once ``enter`` gave its value."""

    __slots__ = ("mgr", "value")

    def __init__(self, mgr: Any, value: Any) -> None:
        self.mgr, self.value = mgr, value

    def __enter__(self) -> Any:
        return self.value

    def __exit__(self, *exc: Any) -> Any:
        return type(self.mgr).__exit__(self.mgr, *exc)


def _users_enter(mgr: Any) -> Any:
    """``type(mgr).__enter__`` when it is Python code of the user's (``users_method``),
    else None."""
    fn = method(type(mgr), "__enter__")
    return fn if users_method(fn) else None


def _nested_write_refused(fn: Any) -> None:
    """Under nested differentiation an ``__enter__`` that writes its object is refused:
    objects are followed along variables there, and the write would be lost."""
    if nested() and may_write(fn):
        raise MutationError(
            f"{call_site()}: {fn.__qualname__} writes its object, which nested "
            "(higher-order) differentiation does not follow.\n"
            "To fix: set the object up in __init__ and let __enter__ only return a value, "
            "or take this derivative at first order."
        )


@rrule.register(enter, config=ADConfig)
def _(config: Any, mgr: Any) -> Any:
    fn = _users_enter(mgr)
    if fn is not None:
        _nested_write_refused(fn)
        return calls.rcall(fn, mgr)  # (∂__enter__, ∂mgr): the helper's own shape

    def plain_enter_pullback(ȳ: Any) -> tuple:
        return (_NO, _Z)

    return enter(mgr), plain_enter_pullback


@frule.register(enter, config=ADConfig)
def _(config: Any, ḟ: Any, ṁ: Any, mgr: Any) -> Any:
    fn = _users_enter(mgr)
    if fn is not None:
        _nested_write_refused(fn)
        return calls.fcall(fn, (_Z, ṁ), mgr)
    return enter(mgr), _Z


# The statement's manager: its value reaches the target through ``enter``'s.
non_differentiable(Entered)

#: the names the generated code calls them by (``transform.anf_control``)
CONTEXT_HELPERS: dict[str, Any] = {"_ad_enter": enter, "_ad_entered": Entered}
