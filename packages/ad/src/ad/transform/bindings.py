"""The names generated code reads, bound by the runtime.

The passes write code that calls ``_ad_rcall``, ``_ad_fcall``, ``_ad_acc``...
by name; the functions behind the names belong to the layer above,
``ad.runtime``, which binds them here when it is imported
(``ad.runtime.helpers``). So the transform imports nothing of the runtime:
it reads the tables below when it compiles a function.

``library_entry`` is the runtime's answer for a function that is not to be
transformed (library code, run as plain Python): the cached transform of such
a function is that entry instead.

>>> import ad
>>> from ad.transform import bindings
>>> "_ad_rcall" in bindings.REVERSE and "_ad_fcall" in bindings.FORWARD
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ad.transform._nodes import NO_VALUE  # the primal's keyword: its caller needs no value

__all__ = ["FORWARD", "NO_VALUE", "REVERSE", "bind", "library_entry"]

#: The names reverse-mode code reads (``_ad_rcall``...), and their functions.
REVERSE: dict[str, Any] = {}
#: The names forward-mode code reads: the reverse ones and forward mode's own.
FORWARD: dict[str, Any] = {}
_LIBRARY_ENTRY: list[Callable[[Any, str, Any], Any]] = []


def bind(
    reverse: dict[str, Any],
    forward: dict[str, Any],
    entry: Callable[[Any, str, Any], Any],
) -> None:
    """Bind the tables and the library-code entry (the runtime calls this once)."""
    REVERSE.clear()
    REVERSE.update(reverse)
    FORWARD.clear()
    FORWARD.update(forward)
    _LIBRARY_ENTRY[:] = [entry]


def library_entry(f: Any, mode: str, as_init: bool | int = False) -> Any:
    """The runtime's entry for ``f`` when it is library code run as plain Python,
    else None (transform it). ``mode``: "reverse", "pure" or "forward"."""
    if not _LIBRARY_ENTRY:
        raise RuntimeError("ad.transform needs ad's runtime: import ad first")
    return _LIBRARY_ENTRY[0](f, mode, as_init)
