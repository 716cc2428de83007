"""Pullbacks called once: the signal a caller gives the pullback it alone holds.

A generated adjoint (``_ad_back``) may be called many times (``ad.pullback``'s
pullback, ``jacobian``'s rows, a rule's ``rrule_via_ad``), so it keeps its tape
until it returns. When it is known to run once, it may drop each tape entry
after its last use and free the arrays it holds during the backward pass.

The signal is handed to one pullback *object*: the caller that holds the only
reference to a pullback and calls it once (``withgradient``; a generated adjoint
that itself runs once, for its tape entries; ``reverse``'s wrappers) sets
``ONCE.expect`` to it just before the call. A generated adjoint claims the
signal at entry (``claim``) only if ``expect`` is that very function, recognised
by a token only it holds (its last default argument, fresh for each closure), and
clears it either way. Nothing else can match a stale value, so no caller needs to
turn the signal off; a thread that overwrites another's ``expect`` only costs
that one the saving.

A pullback that is not a generated adjoint (a lean rule's tuple, see ``lean_rules``)
may test ``ONCE.expect is self`` itself: it is then called once and nothing else
holds it, so it may reuse the buffers it kept (and it clears the signal).
"""

from __future__ import annotations

import types
from typing import Any

__all__ = ["ONCE", "claim", "handoff", "new_token"]


class _Once:
    """``expect``: the pullback about to be called once by the sole holder of it."""

    __slots__ = ("expect",)

    def __init__(self) -> None:
        self.expect: Any = None


ONCE = _Once()


def _is_expected(e: Any, token: Any) -> bool:
    if type(e) is not types.FunctionType:
        return False
    defaults = e.__defaults__
    return defaults is not None and defaults[-1] is token


def claim(token: Any) -> bool:
    """Whether the generated adjoint holding ``token`` is the pullback expected to
    run once; clears the signal either way (called at the adjoint's entry)."""
    e = ONCE.expect
    ONCE.expect = None
    return _is_expected(e, token)


def handoff(inner: Any, token: Any) -> None:
    """In a wrapper pullback that calls ``inner`` once and alone holds it: pass the
    signal on to ``inner`` when the wrapper itself (holding ``token``) was expected."""
    e = ONCE.expect
    ONCE.expect = inner if _is_expected(e, token) else None


def new_token() -> list:
    """A fresh object identifying one pullback closure (see ``claim``)."""
    return []
