"""The transforms of each code object, built on first use and cached with it.

``transformed`` (reverse), ``pure_transformed`` (the differentiable reverse
form) and ``forward_transformed`` (the pushforward) return the transform of a
function's code, building it on a miss (``build``, ``forward``). A code object's
transforms live in its ``_Slot``, which leaves with the code. Building is
serialized by ``_BUILD_LOCK``; a finished transform is published with one dict
assignment, so the hit path takes no lock. A rule registered for a helper that
a transform inlined makes that transform stale (``_forget_inlined``).
``_CACHE``, ``_PURE_CACHE`` and ``_FWD_CACHE`` view the caches, for tests and
debugging.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import types
import weakref
from collections.abc import Iterator
from typing import Any

from ad.transform.bindings import library_entry
from ad.transform.build import Transformed, build_pure, build_reverse
from ad.transform.captured_stars import MAX_ENTRIES
from ad.transform.inline_guards import guards_hold
from ad.transform.inlining import has_rules
from ad.transform.source_registry import mark_derived
from rulescore import frule, rrule

__all__ = ["forward_transformed", "pure_transformed", "transformed"]


class _Slot:
    """The transforms of one code object: reverse, pure and forward, by the key
    of the variant (closure active, ``as_init``, inactive parameters; ``(key,
    False)`` for the general form of an inlined one). A slot is found by the
    code's ``id`` and holds the code only weakly: when the code object goes (a
    function built by ``exec``, a notebook cell run again, a module reloaded),
    its slot and every transform in it go too. Each entry is published whole,
    with one dict assignment, once built."""

    __slots__ = ("forward", "pure", "ref", "reverse")

    def __init__(self, ref: weakref.ref) -> None:
        self.ref = ref
        self.reverse: dict[Any, Any] = {}
        self.pure: dict[Any, Any] = {}
        self.forward: dict[Any, Any] = {}


#: ``id(code)`` -> its ``_Slot``. The hit path is two dict lookups and a call of
#: the slot's weak reference (the code at that id is the one the slot is for);
#: the slot leaves with its code (``_dropper``), before the id can be reused.
_SLOTS: dict[int, _Slot] = {}

#: Held while a transform is built (the miss path only). Building is serialized:
#: a pass that kept state between calls could not mix two functions' trees, and
#: nothing here relies on the GIL to make a compound update atomic (ready for
#: free-threaded CPython, where dict reads and single assignments stay safe).
#: Re-entrant: building one transform may need another's (a pure transform).
_BUILD_LOCK = threading.RLock()


def _dropper(i: int, slots: dict = _SLOTS) -> Any:
    def drop(ref: weakref.ref) -> None:
        slot = slots.get(i)
        if slot is not None and slot.ref is ref:
            slots.pop(i, None)

    return drop


def _slot(code: types.CodeType) -> _Slot:
    """The slot of ``code``, made on first use (call with ``_BUILD_LOCK`` held)."""
    i = id(code)
    slot = _SLOTS.get(i)
    if slot is None or slot.ref() is not code:
        slot = _Slot(weakref.ref(code, _dropper(i)))
        _SLOTS[i] = slot
    return slot


def _cached(code: types.CodeType, kind: str, key: Any) -> Any:
    """The published transform of ``code`` for ``kind`` and ``key``, or None."""
    slot = _SLOTS.get(id(code))
    if slot is not None and slot.ref() is code:
        return getattr(slot, kind).get(key)
    return None


def _publish(code: types.CodeType, kind: str, key: Any, build: Any) -> Any:
    """Build the transform of ``code`` for ``kind``/``key`` unless another thread
    just did, and publish it; a build that raises publishes nothing (the next
    call tries again). An inlined helper that gained a rule while the transform
    was being built (``_forget_inlined`` ran before the entry was published)
    makes it stale: it is built again."""
    with _BUILD_LOCK:
        table = getattr(_slot(code), kind)
        entry = table.get(key)
        while entry is None:
            with _no_gc():
                entry = build()
            generated = getattr(entry, "code", None)
            if generated is not None:
                mark_derived(generated)  # the user's nested functions, compiled by ad
            table[key] = entry
            if getattr(entry, "guards", ()) and _stale(entry):
                table.pop(key, None)
                entry = None
        return entry


def _stale(entry: Any) -> bool:
    return any(has_rules(fn) for _, fn in entry.guards)


def transformed(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    lengths: tuple = (),
) -> Transformed:
    """The cached transform of ``f``'s code (built on first use).

    ``as_init``: ``f`` is an ``__init__`` differentiated as a constructor: its
    output is ``self`` as the body leaves it (see ``pipeline.returning_self``); an int
    ``n`` names the ``n``-th positional parameter instead (a setter updating
    its object in place: ``__setattr__``, a property's or descriptor's setter).
    ``inactive``: a bit mask of positional parameters whose arguments carry no
    derivative at this call (``_ad_rcall_masked``): they start inactive.
    ``lengths``: ``((parameter, n), ...)``, the lengths of the tuples that the
    parameters ``f`` unpacks by ``*`` hold at this call (see ``star_lengths``).
    """
    code = f.__code__
    if inactive:
        inactive &= (1 << code.co_argcount) - 1
    key = closure_active if not (as_init or inactive) else (closure_active, as_init, inactive)
    if lengths:
        key = (key, lengths)
    slot = _SLOTS.get(id(code))
    entry = slot.reverse.get(key) if slot is not None and slot.ref() is code else None
    if entry is None:
        entry = _publish(
            code,
            "reverse",
            key,
            # the standard library runs as plain Python
            lambda: (
                library_entry(f, "reverse", as_init)
                or build_reverse(f, closure_active, as_init, inactive, lengths=lengths)
            ),
        )
    if entry.guards and not guards_hold(entry.guards, f):
        # A helper's name no longer resolves to the function inlined: the general form.
        entry = _general(
            code, "reverse", key, lambda: build_reverse(f, closure_active, as_init, inactive, False)
        )
    return entry


def star_lengths(entry: Transformed, args: tuple) -> tuple:
    """``((parameter, n), ...)`` for ``transformed``: the lengths of the tuples that
    the parameters ``entry``'s function unpacks by ``*`` (``entry.starred``) hold
    in ``args`` (positional arguments alone); empty when none does."""
    out = []
    n_pos = entry.n_positional
    for i in entry.starred:
        if i < n_pos:
            a = args[i] if i < len(args) else None
            if type(a) is tuple and len(a) <= MAX_ENTRIES:
                out.append((i, len(a)))
        elif len(args) - n_pos <= MAX_ENTRIES:  # ``*args``
            out.append((i, max(len(args) - n_pos, 0)))
    return tuple(out)


def _general(code: types.CodeType, kind: str, key: Any, build: Any) -> Any:
    """The transform built without inlining, cached beside the inlined one."""
    entry = _cached(code, kind, (key, False))
    if entry is None:
        entry = _publish(code, kind, (key, False), build)
    return entry


def _forget_inlined() -> None:
    """A rule registered for a helper inlined somewhere: that transform is stale
    (the rule wins), so it is built again at its next use. Called by the rule
    tables after each registration, without the build lock: it reads snapshots
    (``dict.copy`` is atomic) and removes an entry only if it is still there."""
    for slot in _SLOTS.copy().values():
        for table in (slot.reverse, slot.forward):
            for key, entry in table.copy().items():
                if entry.guards and _stale(entry) and table.get(key) is entry:
                    table.pop(key, None)


class _View:
    """One kind of transform across every live code object, keyed as
    ``(code, closure_active)`` or ``(code, closure_active, as_init, inactive)``
    (``(key, False)``: the general form): for tests and debugging. ``clear``
    forgets them (they are built again at their next use)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _items(self) -> list[tuple[Any, Any]]:
        out = []
        for slot in _SLOTS.copy().values():
            code = slot.ref()
            if code is None:
                continue
            for key, entry in getattr(slot, self.kind).copy().items():
                general = (
                    self.kind != "pure" and type(key) is tuple and len(key) == 2 and key[1] is False
                )
                inner = key[0] if general else key
                full = (code, *inner) if type(inner) is tuple else (code, inner)
                out.append(((full, False) if general else full, entry))
        return out

    def __iter__(self) -> Iterator[Any]:
        return iter([k for k, _ in self._items()])

    def __len__(self) -> int:
        return len(self._items())

    def items(self) -> list[tuple[Any, Any]]:
        return self._items()

    def __getitem__(self, full: tuple) -> Any:
        general = len(full) == 2 and full[1] is False and type(full[0]) is tuple
        inner = full[0] if general else full
        code, rest = inner[0], inner[1:]
        key = rest[0] if len(rest) == 1 else rest
        entry = _cached(code, self.kind, (key, False) if general else key)
        if entry is None:
            raise KeyError(full)
        return entry

    def clear(self) -> None:
        for slot in _SLOTS.copy().values():
            getattr(slot, self.kind).clear()


_CACHE = _View("reverse")
_PURE_CACHE = _View("pure")
_FWD_CACHE = _View("forward")


rrule.table.listeners.append(_forget_inlined)
frule.table.listeners.append(_forget_inlined)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a transform builds its trees: the
    passes allocate thousands of short-lived nodes (none in cycles) and collections
    triggered by them cost ~10% of the transform."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def pure_transformed(
    f: types.FunctionType, closure_active: bool, as_init: bool | int = False
) -> Transformed:
    """The cached *pure* reverse transform of ``f``'s code (``reverse.generate``'s
    ``pure`` form), whose primal and adjoint are themselves differentiable: their
    trees are registered with ``source_registry`` (reverse over reverse)."""
    code = f.__code__
    key = (closure_active, as_init)
    entry = _cached(code, "pure", key)
    if entry is None:
        entry = _publish(
            code,
            "pure",
            key,
            lambda: library_entry(f, "pure", as_init) or build_pure(f, closure_active, as_init),
        )
    return entry


def forward_transformed(
    f: types.FunctionType, closure_active: bool, as_init: bool | int = False
) -> Any:
    """The cached forward-mode (pushforward) transform of ``f``'s code
    (``as_init``: as in ``transformed``)."""
    from ad.transform.forward import build_forward

    code = f.__code__
    key = closure_active if not as_init else (closure_active, as_init)
    slot = _SLOTS.get(id(code))
    entry = slot.forward.get(key) if slot is not None and slot.ref() is code else None
    if entry is None:
        entry = _publish(
            code,
            "forward",
            key,
            lambda: (
                library_entry(f, "forward", as_init) or build_forward(f, closure_active, as_init)
            ),
        )
    if entry.guards and not guards_hold(entry.guards, f):
        entry = _general(
            code, "forward", key, lambda: build_forward(f, closure_active, as_init, False)
        )
    return entry
