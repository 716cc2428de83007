"""Objects with state: the derivatives of a mutable object's fields, kept by the
object's identity, as Zygote keeps a mutable struct's.

The AD passes an object's cotangent along the variables that hold it. That is
exact until a field is written while another name (an alias, a container, the
caller of a method that writes ``self``) holds the object: reads through that
other name would send their cotangents along a path the write never sees. So
from its first write in a differentiation, an object of a user class is kept
by identity instead:

* a read of ``obj.name`` after that write adds its cotangent to the object's
  entry in the pass's store, whoever reads it;
* a write ``obj.name = v`` takes the field's cotangent from the store as
  ``v``'s (the reads after it, through any name, saw ``v``);
* the first write hands what is left (fields read but written by nobody since)
  back to the variable it wrote through, as the cotangent of the object's state
  before: from there it flows to where the object came from.

The pullbacks of writes, and of calls that wrote, must run even when no
cotangent reaches them along variables: they are ``Stateful``, and the
generated adjoint runs a ``Stateful`` pullback whatever its input.

In forward mode the same identity keeps the tangents of the fields written,
which reads through any name find first.

Dicts and lists are followed the same way, keyed by item, from the point the
transform asks for it (``follow``): where a function writes into a captured or
global container, or hands a container or user object it built to code that
may write into it (``a = Acc(); a.add(x)``, ``fill(d, x)``). Until then a
container's cotangent flows along variables, as a value's does.

Each differentiation (``ad.gradient``, ``ad.jvp``, ...) is one pass (``scope``);
outside any, objects are followed along variables as before.

>>> import ad
>>> class Counter:
...     def __init__(self, w):
...         self.w = w
...     def __call__(self, x):
...         self.last = self.w * x      # a method writing self
...         return self.last
>>> def f(w, x):
...     m = Counter(w)
...     y = m(x)
...     return y + m.last ** 2          # read through the caller's name
>>> ad.gradient(f, 2.0, 3.0)            # y = wx: (x + 2wx^2, w + 2w^2x)
(39.0, 26.0)
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

from ad.runtime.accumulate import acc
from ad.runtime.single_use import ONCE
from ad.runtime.tracebacks import internal_file
from ad.transform.holders import CAPTURED_WRITTEN, holder, stateful
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

__all__ = [
    "Pass",
    "Stateful",
    "current",
    "follow",
    "follow_pullback",
    "followed",
    "item_key",
    "item_write_pullback",
    "keep_stateful",
    "nested",
    "scope",
    "tracked",
]

_Z = ZeroTangent()
_NO = NoTangent()
_LOCAL = threading.local()
#: store-mode writes so far (any thread): a call during which it changed wrote
WRITES = [0]
#: passes (any thread) holding field tangents by identity: while there are any,
#: forward mode runs no call as plain Python (it could write such a field)
TANGENT_PASSES = [0]


class Pass:
    """One differentiation: the objects written in it (by id, held so the ids
    stay theirs), the cotangents of their fields, and their fields' tangents."""

    __slots__ = (
        "captured",
        "carried",
        "forward",
        "held",
        "held_store",
        "over_forward",
        "store",
        "tangents",
        "written",
    )

    def __init__(self, forward: bool, over_forward: bool = False) -> None:
        self.forward = forward  # a forward-mode pass (jvp): it keeps tangents
        # a reverse pass over forward mode's code (``ad.runtime.nested_kernels.reverse_over_forward``):
        # it keeps the pushforward's tangents by identity (``held``) as well
        self.over_forward = over_forward
        self.captured = False  # it follows a captured or global holder (CAPTURED_WRITTEN)
        self.written: dict[int, Any] = {}
        # the ids of ``written`` objects that a differentiated write changed (not only
        # followed): what code run as plain Python must not read as a constant
        self.carried: set[int] = set()
        self.store: dict[int, dict[str, Any]] = {}
        self.tangents: dict[int, dict[str, Any]] = {}
        # Reverse over forward (``ad.higher.reverse_over_forward``): the tangents a pushforward wrote into
        # fields by identity, which this reverse pass differentiates, and the
        # cotangents that reads of them deposit for the writes to take.
        self.held: dict[int, dict[str, Any]] = {}
        self.held_store: dict[int, dict[str, Any]] = {}

    def mark(self, obj: Any, write: bool = True) -> bool:
        """Note a write to ``obj`` (``write=False``: only its following); whether it
        is the object's first."""
        WRITES[0] += 1
        if write:
            self.carried.add(id(obj))
        if id(obj) in self.written:
            return False
        self.written[id(obj)] = obj
        return True

    def follow(self, obj: Any) -> bool:
        """Follow ``obj`` by identity from now on; whether it is its first time."""
        if self.over_forward and not stateful(obj):
            # Reverse over forward keeps user objects' field tangents by identity
            # (``hold_tangent``), not yet containers' items: those follow variables.
            return False
        if id(obj) in CAPTURED_WRITTEN:
            self.captured = True
        if self.forward:
            self.written.setdefault(id(obj), obj)
            return False
        return self.mark(obj, write=False)

    def deposit(self, obj: Any, name: str, ct: Any) -> None:
        fields = self.store.setdefault(id(obj), {})
        fields[name] = acc(fields[name], ct) if name in fields else ct

    def take(self, obj: Any, name: str) -> Any:
        fields = self.store.get(id(obj))
        return _Z if fields is None else fields.pop(name, _Z)

    def take_all(self, obj: Any) -> dict[str, Any]:
        return self.store.pop(id(obj), None) or {}


def nested() -> bool:
    """Whether a differentiation runs inside another on this thread (second or
    higher order): objects followed by identity in the inner one are not seen
    by the outer one, which differentiates along variables."""
    stack = getattr(_LOCAL, "stack", None)
    return bool(stack) and sum(p is not _SUSPENDED for p in stack) > 1


def current(forward: bool = False) -> Pass | None:
    """The innermost differentiation running on this thread, if it is of this
    mode. Under second order (reverse over forward) the forward pass runs inside
    a reverse one: its tangents then follow variables, which the outer reverse
    pass differentiates."""
    stack = getattr(_LOCAL, "stack", None)
    if not stack or stack[-1].forward is not forward:
        return None
    return stack[-1]


#: Python frames a differentiated call level takes, at most (the transformed function,
#: the dispatch, a rule or the adjoint): the factor ``deep`` raises the limit by.
FRAMES_PER_LEVEL = 4
_DEEP_LOCK = threading.Lock()
_DEEP = [0, 0]  # differentiations in progress (all threads), the limit they raised from


class _Deep:
    """Python's recursion limit raised for the time a differentiation runs, so that
    recursive code differentiates as deep as Python runs it plainly: each level of
    the user's recursion costs up to ``FRAMES_PER_LEVEL`` frames under ad. The
    first differentiation to start (in any thread) raises it, the last to end puts
    it back, unless the program changed it meanwhile. A plain class (``with deep:``),
    not a generator: it runs twice a ``gradient``."""

    __slots__ = ()

    def __enter__(self) -> None:
        _DEEP_LOCK.acquire()  # not ``with``: nothing here raises, and it runs often
        if _DEEP[0] == 0:
            _DEEP[1] = limit = sys.getrecursionlimit()
            sys.setrecursionlimit(limit * FRAMES_PER_LEVEL)
        _DEEP[0] += 1
        _DEEP_LOCK.release()

    def __exit__(self, *exc: object) -> None:
        _DEEP_LOCK.acquire()
        try:  # lowering the limit raises when this runs deeper than the old one
            _DEEP[0] -= 1
            if _DEEP[0] == 0 and sys.getrecursionlimit() == _DEEP[1] * FRAMES_PER_LEVEL:
                sys.setrecursionlimit(_DEEP[1])
        finally:
            _DEEP_LOCK.release()


deep = _Deep()


class scope:
    """One differentiation's pass (nested ones get their own; ``over_forward``:
    see ``Pass``): ``with scope() as p``. A plain class, not a generator: every
    ``gradient`` enters one."""

    __slots__ = ("_pass",)

    def __init__(self, forward: bool = False, over_forward: bool = False) -> None:
        self._pass = Pass(forward, over_forward)

    def __enter__(self) -> Pass:
        stack = getattr(_LOCAL, "stack", None)
        if stack is None:
            stack = _LOCAL.stack = []
        stack.append(self._pass)
        return self._pass

    def __exit__(self, *exc: object) -> None:
        _LOCAL.stack.pop()
        if self._pass.tangents:
            TANGENT_PASSES[0] -= 1


def innermost() -> Pass | None:
    """The innermost differentiation on this thread, of either mode."""
    stack = getattr(_LOCAL, "stack", None)
    return stack[-1] if stack and stack[-1] is not _SUSPENDED else None


def follow(obj: Any) -> Any:
    """From now on in this differentiation, follow ``obj`` by identity (see the
    module): the transform calls it where a captured container is written, or a
    container or object is handed to code that may write it. Returns ``obj``."""
    p = innermost()
    if p is not None and holder(obj):
        p.follow(obj)
    return obj


def tracked(obj: Any) -> Pass | None:
    """The pass that keeps ``obj`` by identity (it was written in it), if any."""
    p = current()
    if p is not None and p.written.get(id(obj)) is obj:
        return p
    return None


def followed(obj: Any, forward: bool = False) -> bool:
    """Whether the pass of this mode already follows ``obj`` by identity: a user
    object written in it before, so its holders read it as differentiated. One
    built without a derivative (``a = Acc()``) is read by its holders as a
    constant until then: a first write that another holder would see (an alias,
    the caller of a method) stays ownership's to refuse."""
    if not holder(obj):
        return False
    p = current(forward)
    if p is None and forward:
        # Forward-mode code differentiated in reverse: the reverse pass holds the
        # tangents of user objects' fields by identity (``ad.higher.reverse_over_forward``), not yet
        # those of containers' items.
        p = current()
        if p is None or not p.over_forward or not stateful(obj):
            return False
    return p is not None and p.written.get(id(obj)) is obj


class Stateful:
    """A pullback that must run even when its input cotangent is zero: it hands
    on the cotangents of writes that reads through other names left in the store.
    ``must_run``: the convention by which ``rules``' ``map`` and ``reduce`` see it
    (``rules._higher_order``)."""

    __slots__ = ("pb",)
    must_run = True

    def __init__(self, pb: Any) -> None:
        self.pb = pb

    def __call__(self, ȳ: Any) -> Any:
        if ONCE.expect is self:  # run once: so is the pullback it wraps
            ONCE.expect = self.pb
        return self.pb(ȳ)


def keep_stateful(inner: Any, outer: Any) -> Any:
    """``outer``, a pullback wrapping ``inner``: ``Stateful`` when ``inner`` is."""
    return Stateful(outer) if type(inner) is Stateful else outer


def read_pullback(p: Pass, obj: Any, name: str) -> Any:
    """``obj.name``'s pullback when ``obj`` is kept by identity."""
    held = _followed_value(p, obj.__dict__.get(name) if hasattr(obj, "__dict__") else None)

    def stateful_getattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if not isinstance(ȳ, AbstractZero):
            _deposit_read(p, obj, name, held, ȳ)
        return (_NO, _Z, _NO)

    return stateful_getattr_pullback


def _followed_value(p: Pass, value: Any) -> Any:
    """``value`` when the pass follows it by identity (a container or object read
    out of another one after it was followed), else None."""
    return value if value is not None and p.written.get(id(value)) is value else None


def _deposit_read(p: Pass, obj: Any, key: Any, held: Any, ȳ: Any) -> None:
    """The cotangent of a read ``obj[key]`` (or ``obj.key``) into the store. A value
    followed by identity when it was read (``held``) takes it entry by entry: its
    item writes take theirs, and the rest goes back at its first following."""
    if held is None:
        p.deposit(obj, key, ȳ)
        return
    for k, ct in _parts(held, ȳ).items():
        p.deposit(held, k, ct)


def write_pullback(p: Pass, obj: Any, name: str, first: bool) -> Stateful:
    """``obj.name = v``'s pullback (``first``: the object's first write in ``p``)."""
    cls = type(obj)

    def stateful_setattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        v = p.take(obj, name)
        rest: Any = _Z
        if isinstance(ȳ, Tangent):
            b = dict(ȳ._backing)
            if name in b:
                v = acc(v, b.pop(name))
            rest = type(ȳ)._from_backing(b) if b else _Z
        if first:
            fields = p.take_all(obj)
            if fields:
                rest = acc(rest, Tangent[cls]._from_backing(fields))
        return (_NO, rest, _NO, v)

    return Stateful(stateful_setattr_pullback)


def item_key(obj: Any, key: Any) -> Any:
    """The store's key for ``obj[key]``: a list's index counted from the start."""
    if type(key) is int and key < 0 and isinstance(obj, list):
        return key + len(obj)
    return key


def _parts(obj: Any, ȳ: Any) -> dict:
    """The entries of a cotangent ``ȳ`` of ``obj`` (a list, a dict, a user
    object), by the key the store uses; zeros left out."""
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return {}
    if isinstance(obj, list):
        from ad.runtime.cotangents import entries

        # A rule that read the whole list (sum, np.array) saw it at its length then.
        m = len(ȳ._backing) if isinstance(ȳ, Tangent) else len(ȳ)
        return {i: e for i, e in enumerate(entries(ȳ, m, "a list")) if not _zero(e)}
    b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
    return {k: e for k, e in b.items() if not _zero(e)}


def _whole(obj: Any, fields: dict, n: int) -> Any:
    """The cotangent of ``obj`` (as it was with ``n`` items) made of ``fields``."""
    if not fields:
        return _Z
    if isinstance(obj, list):
        n = max(n, max(fields) + 1)  # entries a later reader saw, for the writes before
        return [fields.get(i, _Z) for i in range(n)]
    if isinstance(obj, dict):
        return fields
    return Tangent[type(obj)]._from_backing(fields)


def _zero(ct: Any) -> bool:
    return isinstance(ct, AbstractZero) or ct is None


def _along_variable_pullback(ȳ: Any) -> tuple:
    return (_NO, ȳ)


def follow_pullback(p: Pass, obj: Any, first: bool) -> Any:
    """``follow(obj)``'s pullback. The cotangent along the variable is that of
    reads which saw entries written before: each goes to the store, where those
    writes take it. At the object's first following, what the store holds then
    goes back along the variable, to where the object came from."""
    if p.written.get(id(obj)) is not obj:  # not followed (see ``Pass.follow``)
        return _along_variable_pullback
    n = len(obj) if isinstance(obj, list) else 0
    # entries followed themselves (a row of a grid written through another name):
    # what reads along this variable saw of them goes to their own entries
    held = _followed_entries(p, obj)

    def follow_pullback(ȳ: Any) -> tuple:
        for key, ct in _parts(obj, ȳ).items():
            _deposit_read(p, obj, key, held.get(key), ct)
        return (_NO, _whole(obj, p.take_all(obj), n) if first else _Z)

    return Stateful(follow_pullback) if first else follow_pullback


def _followed_entries(p: Pass, obj: Any) -> dict:
    """The entries of ``obj`` (a list's items, a dict's values, an object's fields)
    that ``p`` follows by identity, by the store's key."""
    if isinstance(obj, list):
        items: Any = enumerate(obj)
    elif isinstance(obj, dict):
        items = obj.items()
    else:
        items = getattr(obj, "__dict__", {}).items()
    written = p.written
    return {k: v for k, v in items if written.get(id(v)) is v}


def read_item_pullback(p: Pass, obj: Any, key: Any) -> Any:
    """``obj[key]``'s pullback when the container is followed by identity."""
    if type(key) is slice:
        keys = range(*key.indices(len(obj)))

        def stateful_slice_pullback(ȳ: Any) -> tuple:
            for k, ct in _parts([], ȳ).items():
                p.deposit(obj, keys[k], ct)
            return (_NO, _Z, _NO)

        return stateful_slice_pullback
    key = item_key(obj, key)
    held = _followed_value(p, obj[key])

    def stateful_getitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if not isinstance(ȳ, AbstractZero):
            _deposit_read(p, obj, key, held, ȳ)
        return (_NO, _Z, _NO)

    return stateful_getitem_pullback


def item_write_pullback(p: Pass, obj: Any, key: Any, before: int, append: bool = False) -> Stateful:
    """The pullback of ``obj[key] = v`` (``append``: ``obj.append(v)``) into a
    followed container (a list's length ``before`` the write):
    ``v`` gets what reads after the write deposited, and its entry of the
    cotangent along the variable."""

    def stateful_setitem_pullback(ȳ: Any) -> tuple:
        parts = _parts(obj, ȳ)
        v = p.take(obj, key)
        if key in parts:
            v = acc(v, parts.pop(key))
        rest = _whole(obj, parts, before)
        return (_NO, rest, v) if append else (_NO, rest, _NO, v)

    return Stateful(stateful_setitem_pullback)


def write_tangent(p: Pass, obj: Any, name: str, v̇: Any) -> None:
    """Forward mode: the tangent of ``obj.name`` after a write, for every reader."""
    if not p.tangents:
        TANGENT_PASSES[0] += 1
    p.written.setdefault(id(obj), obj)
    if not _zero(v̇):
        p.carried.add(id(obj))
    p.tangents.setdefault(id(obj), {})[name] = v̇


def merged_tangent(obj: Any, ȯ: Any, depth: int = 2) -> Any:
    """Forward mode: ``obj``'s tangent along a variable, with the tangents of the
    items or fields written by identity in this pass (through any name) over it,
    for a list as long as it is now; and so for the entries it holds that were
    written by identity (``depth`` levels: a grid's row written through ``row``)."""
    p = current(forward=True)
    if p is None:  # no pass follows anything (second order: see ``suspended``)
        return ȯ
    written = p.tangents.get(id(obj)) if p.tangents else None
    inner = _followed_entries(p, obj) if depth and p.tangents and holder(obj) else {}
    inner = {k: v for k, v in inner.items() if id(v) in p.tangents}
    if written and p.written.get(id(obj)) is obj:
        fields = _parts(obj, ȯ)
        fields.update(written)
    elif isinstance(obj, list) or inner:
        fields = _parts(obj, ȯ)
    else:
        return ȯ
    for k, v in inner.items():
        fields[k] = merged_tangent(v, fields.get(k, _Z), depth - 1)
    fields = {k: v for k, v in fields.items() if not _zero(v) and _present(obj, k)}
    if not fields:
        return _Z
    if isinstance(obj, list):
        return Tangent[list]._from_backing(tuple(_whole(obj, fields, len(obj))))
    if isinstance(obj, dict):
        return Tangent[dict]._from_backing(fields)
    return _whole(obj, fields, 0)


def _present(obj: Any, key: Any) -> bool:
    """Whether the entry ``key`` of a tangent is one ``obj`` has now (a ``del``
    may have taken it out of a list or dict since the tangent was made)."""
    if isinstance(obj, list):
        return key < len(obj)
    if isinstance(obj, dict):
        return key in obj
    return True


def hold_tangent(p: Pass, obj: Any, name: str, v̇: Any) -> None:
    """Reverse over forward: a pushforward wrote ``obj.name`` with tangent ``v̇``
    (``obj`` followed by identity in the reverse pass ``p``): reads through any
    name find it, as forward mode's ``write_tangent`` keeps it at first order."""
    p.held.setdefault(id(obj), {})[name] = v̇


def held_tangents(p: Pass, obj: Any) -> dict[str, Any] | None:
    """The field tangents held for ``obj`` in ``p`` (see ``hold_tangent``)."""
    if not p.held or p.written.get(id(obj)) is not obj:
        return None
    return p.held.get(id(obj))


def deposit_held(p: Pass, obj: Any, name: str, ct: Any) -> None:
    """The cotangent of a read of ``obj.name``'s held tangent, for its write."""
    if _zero(ct):
        return
    fields = p.held_store.setdefault(id(obj), {})
    fields[name] = acc(fields[name], ct) if name in fields else ct


def take_held(p: Pass, obj: Any, name: str) -> Any:
    """What reads of the held tangent written to ``obj.name`` deposited."""
    fields = p.held_store.get(id(obj))
    return _Z if fields is None else fields.pop(name, _Z)


def read_tangent(obj: Any, name: str) -> Any:
    """Forward mode: the tangent written to ``obj.name`` in this pass, or None."""
    p = current(forward=True)
    if p is None or not p.tangents:
        return None
    fields = p.tangents.get(id(obj))
    if fields is None or p.written.get(id(obj)) is not obj:
        return None
    return fields.get(name)


# Differentiating the AD's own rules (second order: reverse over reverse, forward
# over reverse), the inner pass follows objects along variables: while a rule's
# code runs transformed, no pass keeps them by identity (ownership refuses what
# variables cannot follow).
_SUSPENDED = Pass(None)  # type: ignore[arg-type]
_INTERNAL: dict[str, bool] = {}  # by file name: no code object kept alive


def internal(code: types.CodeType) -> bool:
    """Whether ``code`` is the AD's own (a rule, a helper): see ``suspended``."""
    try:
        return _INTERNAL[code.co_filename]
    except KeyError:
        if len(_INTERNAL) >= 1024:  # bounded: files made per call (exec) leave
            _INTERNAL.clear()
        out = _INTERNAL[code.co_filename] = internal_file(code.co_filename)
        return out


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """No pass while the AD's own code runs transformed (differentiated)."""
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    stack.append(_SUSPENDED)
    try:
        yield
    finally:
        stack.pop()
