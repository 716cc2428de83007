"""Containers a function obtained from a call, written by a later call reaching them by itself.

``add, store = make()`` binds ``store`` to a dict that ``add``, a closure made by
the same factory, writes into (``store["acc"] = v``). At first order the write is
followed by identity (``ad.runtime.state``), so ``store["acc"]`` read afterwards is
differentiated. Nested (higher-order) differentiation follows containers along
variables only: the outer pass sees no variable carry the write from ``add`` to
``store``, and the read would give a silent zero. The transform
(``transform.obtained_holders``) brackets such calls with ``entries`` before and
``unchanged`` after; under nested differentiation a write that put a value which
may carry a derivative into one of those containers is refused, naming the line.
At first order ``entries`` returns None and nothing is compared.
"""

from __future__ import annotations

from typing import Any

from ad.errors import MutationError
from ad.runtime import state as _state
from ad.runtime.keywords import maybe_differentiable
from rulescore import non_differentiable

__all__ = ["entries", "unchanged"]

#: how deep into containers held by containers the entries are compared
_DEPTH = 3


def entries(*objs: Any) -> dict | None:
    """Under nested differentiation, every entry of the lists and dicts ``objs`` hold
    (by path, ``_DEPTH`` levels deep), as the objects themselves; else None."""
    if not _under_higher_order():
        return None
    out: dict = {}
    for i, obj in enumerate(objs):
        _walk(obj, (i,), _DEPTH, out)
    return out


def _under_higher_order() -> bool:
    """Whether this code runs differentiated by a pass other than the one it belongs
    to: a pass inside another (``state.nested``), or one differentiating the AD's own
    code (reverse over reverse, reverse over forward: a ``state.suspended`` region,
    where the first-order pass is source the outer one transforms)."""
    stack = getattr(_state._LOCAL, "stack", None) or ()
    return _state.nested() or any(p is _state._SUSPENDED for p in stack)


def _walk(v: Any, path: tuple, depth: int, out: dict) -> None:
    kind = type(v)
    if depth == 0 or not (kind is list or kind is dict):
        return
    items = v.items() if kind is dict else enumerate(v)
    for k, e in items:
        at = path + (k,)
        out[at] = e
        _walk(e, at, depth - 1, out)


def unchanged(before: dict | None, site: str, *objs: Any) -> None:
    """Refuse a call that wrote, into a list or dict of ``objs``, a value that may carry
    a derivative (``entries`` gave ``before``, the same containers before the call)."""
    if before is None:
        return
    after = entries(*objs)
    for path, e in (after or {}).items():
        if path in before and before[path] is e:
            continue
        if maybe_differentiable(e):
            raise MutationError(
                f"{site}: the call here wrote a value that may carry a derivative into a "
                f"{type(_container(objs, path)).__name__} that this function obtained from "
                "another call (a factory's result, captured by the function that writes it); "
                "nested (higher-order) differentiation does not follow such a write, and the "
                "reads after the call would lose its derivative.\n"
                "To fix: have the function return what it writes (or pass the container to "
                "it as an argument), or build the container in this function and pass it "
                "to the function that writes it."
            )


def _container(objs: tuple, path: tuple) -> Any:
    """The container holding the entry at ``path``."""
    v = objs[path[0]]
    for k in path[1:-1]:
        v = v[k]
    return v


non_differentiable(entries)
non_differentiable(unchanged)
