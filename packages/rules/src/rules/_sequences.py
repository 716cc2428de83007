"""Structural rules for tuples, lists and dicts: indexing, ``+`` and ``*``.

``operator.getitem`` on a tuple, list or dict, tuple/list concatenation
(``operator.add``) and repetition by an integer (``operator.mul``). The
cotangent of a container is a ``Tangent[type(x)]`` (positional for tuples and
lists, a mapping for dicts), never a bare tuple: ``+`` on tuples concatenates,
while tangents must add entrywise. The helpers ``seq_entries`` and
``seq_cotangent`` are shared with the builtins rules (``sum``, ``max``, ``zip``).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import KeysView, Mapping
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    InplaceableThunk,
    NoTangent,
    NotImplementedTangent,
    ProjectTo,
    Tangent,
    Thunk,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)

__all__ = [
    "dict_getitem_frule",
    "dict_getitem_rrule",
    "entry_cotangent",
    "item_tangents",
    "items_cotangent",
    "seq_cotangent",
    "seq_entries",
    "sequence_getitem_frule",
    "sequence_getitem_rrule",
    "yields_no_tangents",
]

_NO = NoTangent()
_ZERO = ZeroTangent()
_Seq = tuple | list


def seq_entries(t: Any, n: int) -> list:
    """The ``n`` entries of a sequence (co)tangent: a zero, ``Tangent``, tuple, list or array.

    A zero gives ``n`` zeros and a ``NotImplementedTangent`` ``n`` copies of itself; a
    tangent of another length is a ``ValueError``.

    >>> seq_entries(Tangent[tuple](1.0, 2.0), 2), seq_entries(ZeroTangent(), 2)
    ([1.0, 2.0], [ZeroTangent(), ZeroTangent()])
    """
    t = unthunk(t)
    if isinstance(t, AbstractZero):
        return [_ZERO] * n
    if isinstance(t, NotImplementedTangent):  # each entry's derivative is missing too
        return [t] * n
    entries = list(t)
    if len(entries) != n:
        raise ValueError(f"a tangent of a sequence of {n} entries has {len(entries)} entries")
    return entries


def seq_cotangent(x: Any, entries: list) -> Any:
    """The projected cotangent of the sequence ``x`` with the given entries.

    A tuple or list gets ``Tangent[type(x)]``; a namedtuple a ``Tangent`` of its
    fields; an array an array (zeros filled in).

    >>> seq_cotangent((1.0, "a"), [2.0, ZeroTangent()])
    Tangent[tuple](2.0, NoTangent())
    >>> seq_cotangent(np.zeros(3), [ZeroTangent(), 5.0, ZeroTangent()])
    array([0., 5., 0.])
    """
    if isinstance(x, np.ndarray):
        nonzero = [(k, e) for k, e in enumerate(entries) if not isinstance(e, AbstractZero)]
        if not nonzero:
            return _ZERO
        dtype = np.result_type(x.dtype, np.float32, *(np.asarray(e).dtype for _, e in nonzero))
        out = np.zeros(x.shape, dtype=dtype)
        for k, e in nonzero:
            out[k] = e
        return ProjectTo(x)(out)
    fields = getattr(type(x), "_fields", None)
    if fields is not None:
        t = Tangent[type(x)](**dict(zip(fields, entries)))
    else:
        t = Tangent[type(x)](*entries)
    return ProjectTo(x)(t)


def yields_no_tangents(xs: Any) -> bool:
    """Whether the items that iterating ``xs`` yields carry no derivative of ``xs``.

    A ``range``'s integers, a string's characters, and the keys that a mapping (a
    dict, ``d.keys()``) yields: a dict's tangent holds its *values'* tangents, by
    key, which iterating the dict never yields.

    >>> yields_no_tangents({"a": 1.0}), yields_no_tangents({"a": 1.0}.keys())
    (True, True)
    >>> yields_no_tangents([1.0]), yields_no_tangents({"a": 1.0}.values())
    (False, False)
    """
    return isinstance(xs, (range, str, bytes, Mapping, KeysView))


def item_tangents(xs: Any, ẋ: Any, n: int) -> list:
    """The tangents of the ``n`` items that iterating ``xs`` yields, from ``xs``'s
    tangent ``ẋ``: ``seq_entries`` for a sequence; ``NoTangent()`` each for what
    ``yields_no_tangents`` (whatever ``ẋ`` holds: a dict's tangent is by key).

    >>> item_tangents({"a": 1.0, "b": 2.0}, Tangent[dict](b=0.5), 2)
    [NoTangent(), NoTangent()]
    >>> item_tangents([1.0, 2.0], ZeroTangent(), 2)
    [ZeroTangent(), ZeroTangent()]
    """
    if yields_no_tangents(xs):
        return [_NO] * n
    return seq_entries(ẋ, n)


def items_cotangent(xs: Any, entries: list) -> Any:
    """The cotangent of ``xs`` from those of the items that iterating it yielded
    (``entries``, in iteration order): ``NoTangent()`` for what
    ``yields_no_tangents``, a zero when all are zeros, ``seq_cotangent`` for a
    sequence or array, and the list of the entries for any other iterable.

    >>> items_cotangent({1.5: "a"}, [2.0]), items_cotangent((1.0, 2.0), [3.0, ZeroTangent()])
    (NoTangent(), Tangent[tuple](3.0, ZeroTangent()))
    """
    if yields_no_tangents(xs):
        return _NO
    if all(isinstance(unthunk(e), AbstractZero) for e in entries):
        return _ZERO
    if isinstance(xs, (list, tuple)) or hasattr(xs, "shape"):
        return seq_cotangent(xs, entries)
    return list(entries)


def _index_entries(n: int, i: Any, ȳ: Any) -> list:
    entries: list = [_ZERO] * n
    if isinstance(i, slice):
        idx = range(n)[i]
        for k, v in zip(idx, seq_entries(ȳ, len(idx))):
            entries[k] = v
    else:
        entries[i] = ȳ
    return entries


@rrule.register(operator.getitem)
def sequence_getitem_rrule(x: _Seq, i: numbers.Integral | slice):
    """rrule of ``x[i]`` for a tuple or list ``x`` and an integer or slice ``i``.

    The cotangent of ``x`` is a ``Tangent[type(x)]`` with ``ȳ`` at the entries read
    and zeros elsewhere; the index gets ``NoTangent()``. For a list the pullback
    keeps what it needs of the list as it was read (the list may change later), and
    the cotangent of one entry is an ``entry_cotangent`` (an ``InplaceableThunk``).

    >>> _, pb = sequence_getitem_rrule([1.0, 2.0, 3.0], 1)
    >>> unthunk(pb(10.0)[1])
    Tangent[list](ZeroTangent(), 10.0, ZeroTangent())
    >>> sequence_getitem_rrule((1.0, 2.0, 3.0), slice(1, None))[1]((1.0, 2.0))[1]
    Tangent[tuple](ZeroTangent(), 1.0, 2.0)
    """
    Ω = x[i]
    if type(x) is list:
        return Ω, _list_getitem_pullback(len(x), i, Ω)

    def getitem_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _NO
        return _NO, seq_cotangent(x, _index_entries(len(x), i, ȳ)), _NO

    return Ω, getitem_pullback


def _list_getitem_pullback(n: int, i: Any, Ω: Any) -> Any:
    """The pullback of reading ``Ω = x[i]`` from a list of ``n`` entries.

    A list may change after the read (``out.append(v); out[-1] * 2`` in a loop):
    the cotangent is that of the list as it was read, so its length, the entries
    the (possibly negative) index picked, and their projections are fixed now.
    The pullback holds no reference to the list or its entries (the in-place
    checks of ``ad`` count who holds an array).
    """
    if isinstance(i, slice):
        picked = range(n)[i]
        projections = tuple(ProjectTo(v) for v in Ω)
    else:
        k = range(n)[i]  # normalises a negative index (x[i] checked its range)
        project = ProjectTo(Ω)

    def getitem_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _NO
        if not isinstance(i, slice):
            return _NO, entry_cotangent(n, k, project(ȳ)), _NO
        entries: list = [_ZERO] * n
        for j, v, p in zip(picked, seq_entries(ȳ, len(picked)), projections):
            entries[j] = p(v)
        if all(isinstance(e, AbstractZero) for e in entries):
            return _NO, _NO if any(e is _NO for e in entries) else _ZERO, _NO
        return _NO, Tangent[list](*entries), _NO

    return getitem_pullback


def entry_cotangent(n: int, k: int, v: Any, kind: type = list) -> Any:
    """The cotangent of a list (or a tuple: ``kind``) of ``n`` entries whose entry
    ``k`` alone has cotangent ``v``.

    An ``InplaceableThunk``: added to an accumulator (a ``Tangent[list]`` the
    adding code owns, see ``add_``), it writes entry ``k`` alone, so reading
    ``xs[i]`` for every ``i`` of a long list costs each read, not the list's
    length; on its own it is the dense ``Tangent[list]``.

    >>> t = entry_cotangent(3, 1, 2.0)
    >>> unthunk(t)
    Tangent[list](ZeroTangent(), 2.0, ZeroTangent())
    >>> acc = Tangent[list]._from_backing([1.0, 1.0, 1.0])
    >>> t.add_fn(acc)
    Tangent[list](1.0, 3.0, 1.0)
    >>> unthunk(entry_cotangent(2, 0, 5.0, tuple))
    Tangent[tuple](5.0, ZeroTangent())
    """
    if isinstance(v, AbstractZero):
        return v
    T = Tangent[kind]  # type: ignore[valid-type]

    def add_entry(a: Any) -> Any:
        b = a._backing
        if type(b) is not list or len(b) != n or type(a) is not T:
            return a + dense()  # not an accumulator of this sequence: add densely
        e = b[k]
        b[k] = v if isinstance(e, AbstractZero) else unthunk(e) + v
        return a

    def dense() -> Any:
        entries: list = [_ZERO] * n
        entries[k] = v
        return T(*entries)

    return InplaceableThunk(add_entry, Thunk(dense))


@frule.register(operator.getitem)
def sequence_getitem_frule(ḟ, ẋ, i̇, x: _Seq, i: numbers.Integral | slice):
    """frule of ``x[i]`` for a tuple or list ``x``: the entries of ``ẋ`` read at ``i``.

    >>> sequence_getitem_frule(None, Tangent[tuple](1.0, 2.0), None, (3.0, 4.0), 1)
    (4.0, 2.0)
    >>> sequence_getitem_frule(None, ZeroTangent(), None, [3.0, 4.0], 0)
    (3.0, ZeroTangent())
    """
    Ω = x[i]
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return Ω, _ZERO
    entries = seq_entries(ẋ, len(x))[i]
    if isinstance(i, slice):
        return Ω, Tangent[type(Ω)](*entries)
    return Ω, entries


@rrule.register(operator.getitem)
def dict_getitem_rrule(x: dict, k):
    """rrule of ``x[k]`` for a dict ``x``: the cotangent ``Tangent[dict]`` with ``ȳ`` at ``k``.

    ``ȳ`` is projected onto ``x[k]`` (a float entry gets a float).

    >>> _, pb = dict_getitem_rrule({"a": 1.0, "b": 2.0}, "b")
    >>> pb(3.0)
    (NoTangent(), Tangent[dict]({'b': 3.0}), NoTangent())
    """
    Ω = x[k]

    def getitem_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _NO
        if not _fits(ȳ, Ω):
            ȳ = ProjectTo(Ω)(ȳ)
        return _NO, _DICT_TANGENT._from_backing({k: ȳ}), _NO

    return Ω, getitem_pullback


_DICT_TANGENT = Tangent[dict]


def _fits(ȳ: Any, x: Any) -> bool:
    """Whether ``ȳ`` is already a valid cotangent of ``x`` as ``ProjectTo`` makes
    it: a float for a float, an array of the same shape and dtype for an array."""
    t = type(ȳ)
    if t is not type(x):
        return False
    return t is float or (t is np.ndarray and ȳ.shape == x.shape and ȳ.dtype == x.dtype)


@frule.register(operator.getitem)
def dict_getitem_frule(ḟ, ẋ, k̇, x: dict, k):
    """frule of ``x[k]`` for a dict ``x``: the entry ``k`` of ``ẋ`` (zero where it has none).

    >>> dict_getitem_frule(None, Tangent[dict](a=1.5), None, {"a": 1.0, "b": 2.0}, "a")
    (1.0, 1.5)
    >>> dict_getitem_frule(None, {"a": 1.5}, None, {"a": 1.0, "b": 2.0}, "b")
    (2.0, ZeroTangent())
    """
    Ω = x[k]
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return Ω, _ZERO
    return Ω, ẋ[k] if isinstance(ẋ, Tangent) else ẋ.get(k, _ZERO)


def _concat_rrule(x, y):
    Ω = x + y

    def concat_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _ZERO
        entries = seq_entries(ȳ, len(x) + len(y))
        n = len(x)
        return _NO, seq_cotangent(x, entries[:n]), seq_cotangent(y, entries[n:])

    return Ω, concat_pullback


def _concat_frule(ḟ, ẋ, ẏ, x, y):
    Ω = x + y
    if isinstance(unthunk(ẋ), AbstractZero) and isinstance(unthunk(ẏ), AbstractZero):
        return Ω, _ZERO
    return Ω, Tangent[type(Ω)](*seq_entries(ẋ, len(x)), *seq_entries(ẏ, len(y)))


def _repeat_rrule(x, k):
    Ω = x * k

    def repeat_pullback(ȳ):
        ȳ = unthunk(ȳ)
        n = len(x)
        if isinstance(ȳ, AbstractZero) or n == 0:
            return _NO, _ZERO, _NO
        entries = seq_entries(ȳ, len(Ω))
        # each entry of x appears max(k, 0) times: its cotangent sums the copies
        summed = [sum(entries[j::n], _ZERO) for j in range(n)]
        return _NO, seq_cotangent(x, summed), _NO

    return Ω, repeat_pullback


def _repeat_frule(ḟ, ẋ, k̇, x, k):
    Ω = x * k
    if isinstance(unthunk(ẋ), AbstractZero):
        return Ω, _ZERO
    return Ω, Tangent[type(Ω)](*(seq_entries(ẋ, len(x)) * k))


def _rrepeat_rrule(k, x):
    Ω, pb = _repeat_rrule(x, k)

    def rrepeat_pullback(ȳ):
        f̄, x̄, k̄ = pb(ȳ)
        return f̄, k̄, x̄

    return Ω, rrepeat_pullback


def _rrepeat_frule(ḟ, k̇, ẋ, k, x):
    return _repeat_frule(ḟ, ẋ, k̇, x, k)


# ``t += u`` on tuples makes a new tuple (on lists it mutates: no rule).
rrule.register_signature(operator.iadd, _concat_rrule, (tuple, tuple))
frule.register_signature(operator.iadd, _concat_frule, (tuple, tuple))
for _T in (tuple, list):
    rrule.register_signature(operator.add, _concat_rrule, (_T, _T))
    frule.register_signature(operator.add, _concat_frule, (_T, _T))
    rrule.register_signature(operator.mul, _repeat_rrule, (_T, numbers.Integral))
    frule.register_signature(operator.mul, _repeat_frule, (_T, numbers.Integral))
    rrule.register_signature(operator.mul, _rrepeat_rrule, (numbers.Integral, _T))
    frule.register_signature(operator.mul, _rrepeat_frule, (numbers.Integral, _T))
