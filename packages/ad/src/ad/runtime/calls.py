"""The two dispatchers, reachable from the code they dispatch to.

``reverse.rcall`` and ``forward.fcall`` hand a call to a rule, a specialised
path (``scalar_paths``, ``array_arithmetic``, ``item_reads``), Python's calling
conventions (``reverse_fallback``), a wrapper's function (``wrappers``) or
``ADConfig``'s ``rrule_via_ad``/``frule_via_ad`` (a rule differentiating the
function it was given); those call back into the dispatch for the calls they
make. So that they import nothing above them, they call the dispatchers
through this module, whose names ``reverse`` and ``forward`` bind when they are
imported (``import ad`` imports both).

>>> import ad
>>> from ad.runtime import calls
>>> y, pullback = calls.rcall(abs, -3.0)
>>> y, pullback(1.0)
(3.0, (NoTangent(), -1.0))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["bind", "dispatch", "fcall", "fcall_gen", "rcall", "rcall_kw"]

#: ``rcall(f, *args) -> (y, pullback)``: reverse mode's dispatch (``reverse``).
rcall: Callable[..., tuple[Any, Callable]]
#: ``rcall_kw(f, args, kwargs) -> (y, pullback)``: the same, with keywords.
rcall_kw: Callable[[Any, tuple, dict], tuple[Any, Callable]]
#: ``fcall(f, (ḟ, ẋ1, ...), x1, ...) -> (y, ẏ)``: forward mode's dispatch (``forward``).
fcall: Callable[..., tuple[Any, Any]]
#: ``dispatch(f, tangents, args, kwargs, kw_tangents) -> (y, ẏ)``: with keywords.
dispatch: Callable[..., tuple[Any, Any]]
#: ``fcall_gen(f, ḟ, args, arg_ts, stars, kwnames, kwvalues, kw_ts) -> (y, ẏ)``: the
#: call with keywords that generated code makes, which nested differentiation
#: follows at every level (``dispatch`` is the runtime's own: it has no rules).
fcall_gen: Callable[..., tuple[Any, Any]]


def bind(**dispatchers: Callable) -> None:
    """Bind dispatchers by name (``reverse`` and ``forward`` call this once)."""
    unknown = set(dispatchers) - set(__all__)
    if unknown:
        raise TypeError(f"calls.bind: no dispatcher named {sorted(unknown)}")
    globals().update(dispatchers)
