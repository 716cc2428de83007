"""Small helpers shared by ad's structural rules: container cotangents."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from ad.errors import CotangentShapeError
from ad.transform.holders import stateful
from rules.extension import getrefcount as _getrefcount  # sys.getrefcount where calibrated
from rulescore import AbstractZero, NoTangent, NotImplementedTangent, Tangent, ZeroTangent, unthunk

_Z = ZeroTangent()
_NO = NoTangent()
_LIST_TANGENT = Tangent[list]  # type: ignore[type-arg]
_DICT_TANGENT = Tangent[dict]  # type: ignore[type-arg]

__all__ = [
    "entries",
    "from_list_ct",
    "from_user",
    "instance_fields",
    "np_module",
    "take_entry",
    "take_key",
    "take_tail",
    "zero_like",
]


def np_module() -> Any:
    return sys.modules.get("numpy")


def entries(ȳ: Any, n: int, what: str) -> tuple:
    """The entry cotangents of a tuple/list cotangent (zeros expand to n zeros)."""
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return (_Z,) * n
    if isinstance(ȳ, NotImplementedTangent):  # each entry's derivative is missing too
        return (ȳ,) * n
    if isinstance(ȳ, Tangent):
        ȳ = ȳ._backing if isinstance(ȳ._backing, tuple) else tuple(ȳ)
    elif _is_array(ȳ):
        ȳ = tuple(ȳ)  # a rule's cotangent of an array-like list (np.sum([a, b])): its rows
    if not isinstance(ȳ, (tuple, list)) or len(ȳ) != n:
        raise CotangentShapeError(
            f"the cotangent of {what} must have {n} entries, got {type(ȳ).__name__}"
            f"{f' of length {len(ȳ)}' if hasattr(ȳ, '__len__') else ''}"
        )
    return tuple(ȳ)


def take_entry(ȳ: Any, n: int, key: int, mine: bool = True) -> tuple[Any, Any]:
    """``xs[key] = v`` undone on cotangents: from ``ȳ``, the cotangent of the list
    (``n`` entries) after the write, the list's before it (entry ``key`` zero)
    and ``v``'s.

    Copying ``ȳ`` would make a loop of ``n`` writes cost ``n**2``: ``ȳ`` is written
    in place when ``mine`` and the adjoint's variable and the pullback calling
    this alone hold it (CPython's reference count, as ``acc`` reads it for
    arrays); otherwise its entries are copied into a list-backed
    ``Tangent[list]``, which the caller then owns and into which later reads add
    in place (``acc``). Differentiated again (second order), this is a linear map
    with rules of its own (``ad.higher``) that never write in place.

    >>> take_entry(Tangent[tuple](1.0, 2.0), 2, 0)
    (Tangent[list](ZeroTangent(), 2.0), 1.0)
    """
    if isinstance(ȳ, AbstractZero):
        return ȳ, _Z
    # refs to ȳ: the adjoint's variable, the pullback's parameter, this parameter,
    # _list_entries' and getrefcount's argument
    ct, es = _list_entries(ȳ, n, 5 if mine else 0)
    v = es[key]
    es[key] = _Z
    return ct, v


def take_tail(ȳ: Any, n: int, m: int, mine: bool = True) -> tuple[Any, list]:
    """``xs.append(v)`` (``m`` = 1) or ``xs += ys`` (``m`` entries) undone on
    cotangents: from ``ȳ``, the cotangent of the list after (``n + m`` entries), the
    list's before (zero if it was empty) and the list of the ``m`` entries added;
    in place as ``take_entry``.

    >>> take_tail([1.0, 2.0, 3.0], 2, 1)
    ([1.0, 2.0], [3.0])
    """
    if isinstance(ȳ, AbstractZero):
        return ȳ, [_Z] * m
    ct, es = _list_entries(ȳ, n + m, 5 if mine else 0)  # refs: as in take_entry
    tail = es[n:]
    del es[n:]
    return (ct if n else _Z), tail


def take_key(ȳ: Any, key: Any, mine: bool = True) -> tuple[Any, Any]:
    """``d[key] = v`` undone on cotangents: from ``ȳ``, the cotangent of the dict
    after the write, the dict's before it (no entry ``key``; zero if none is
    left) and ``v``'s; in place as ``take_entry``.

    >>> take_key({"a": 1.0, "b": 2.0}, "a")
    ({'b': 2.0}, 1.0)
    """
    if isinstance(ȳ, AbstractZero):
        return ȳ, _Z
    ct, b = _mapping_entries(ȳ, 5 if mine else 0)  # refs: as in take_entry
    if key not in b:
        return (ct if b else _Z), _Z
    v = b[key]
    del b[key]
    return (ct if b else _Z), v


def _list_entries(ȳ: Any, n: int, limit: int) -> tuple[Any, list]:
    """A list's cotangent ``ȳ`` of ``n`` entries and its list of entries: ``ȳ``'s own
    when at most ``limit`` references hold ``ȳ`` and ``ȳ`` alone holds its list
    (a thunk's value never: the thunk's cache may hold it), else a copy."""
    t = type(ȳ)
    if t is list:
        if len(ȳ) == n and _getrefcount(ȳ) <= limit:
            return ȳ, ȳ
    elif t is _LIST_TANGENT:
        b = ȳ._backing
        # refs to b: ȳ's slot, ``b``, getrefcount's argument
        if type(b) is list and len(b) == n and _getrefcount(ȳ) <= limit and _getrefcount(b) <= 3:
            return ȳ, b
    b = list(entries(ȳ, n, "a list"))
    return _LIST_TANGENT._from_backing(b), b


def _mapping_entries(ȳ: Any, limit: int) -> tuple[Any, dict]:
    """A dict's cotangent ``ȳ`` and its dict of entries: ``ȳ``'s own when at most
    ``limit`` references hold it (as ``_list_entries``), else a copy."""
    t = type(ȳ)
    if t is dict:
        if _getrefcount(ȳ) <= limit:
            return ȳ, ȳ
    elif isinstance(ȳ, Tangent):
        b = ȳ._backing
        if type(b) is dict and _getrefcount(ȳ) <= limit and _getrefcount(b) <= 3:
            return ȳ, b
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, Tangent):
        b = dict(ȳ._backing)
        return type(ȳ)._from_backing(b), b
    b = dict(ȳ)
    return b, b


def _is_array(ȳ: Any) -> bool:
    np = np_module()
    return np is not None and isinstance(ȳ, np.ndarray) and ȳ.ndim > 0


def zero_like(x: Any) -> Any:
    np = np_module()
    if np is not None and isinstance(x, np.ndarray):
        return np.zeros_like(
            x, dtype=np.result_type(x.dtype, np.float64) if x.dtype.kind in "iub" else x.dtype
        )
    return 0.0


def from_list_ct(src: Any, cts: list) -> Any:
    """Cotangent of ``src`` from the cotangents of ``list(src)``'s entries."""
    if all(isinstance(c, AbstractZero) for c in cts):
        return _Z
    if type(src) is list:
        return list(cts)
    if isinstance(src, tuple):
        fields = getattr(type(src), "_fields", None)
        if fields is not None and len(fields) == len(cts):  # a namedtuple: Tangent[P]
            b = {k: c for k, c in zip(fields, cts) if not isinstance(c, AbstractZero)}
            return Tangent[type(src)]._from_backing(b)
        return tuple(cts)
    np = np_module()
    if np is not None and isinstance(src, np.ndarray):
        rows = [
            zero_like(src[i]) if isinstance(c, AbstractZero) else unthunk(c)
            for i, c in enumerate(cts)
        ]
        return np.stack([np.asarray(r) for r in rows]).astype(
            np.result_type(src.dtype, np.float64) if src.dtype.kind in "iub" else src.dtype,
            copy=False,
        )
    if isinstance(src, dict):
        return _NO  # iterating a dict yields its keys
    if isinstance(src, range):
        return _NO
    return list(cts)


def from_user(ȳ: Any) -> Any:
    """A cotangent the user passes to a pullback, with ``None`` (no cotangent, as
    ``nothing`` in Zygote) turned into ``ZeroTangent()``, in containers too.

    >>> from_user([1.0, None, {"a": None}])
    [1.0, ZeroTangent(), {'a': ZeroTangent()}]
    """
    if ȳ is None:
        return _Z
    t = type(ȳ)
    if t is list:
        return [from_user(v) for v in ȳ]
    if t is dict:
        return {k: from_user(v) for k, v in ȳ.items()}
    if isinstance(ȳ, tuple):
        vals = [from_user(v) for v in ȳ]
        if t is tuple:
            return tuple(vals)
        if hasattr(t, "_fields"):  # a namedtuple: its Tangent, zero fields left out
            b = {k: v for k, v in zip(t._fields, vals) if not isinstance(v, AbstractZero)}
            return Tangent[t]._from_backing(b) if b else _Z
    elif dataclasses.is_dataclass(t) or stateful(ȳ):
        # an instance of the user's class as its own cotangent: its fields' (a
        # class attribute is the class's, not the instance's)
        b = {n: from_user(getattr(ȳ, n)) for n in instance_fields(ȳ)}
        b = {k: v for k, v in b.items() if not isinstance(v, AbstractZero)}
        return Tangent[t]._from_backing(b) if b else _Z
    return ȳ


def instance_fields(obj: Any) -> list[str]:
    """The fields ``obj`` holds itself: a dataclass's fields, else its
    ``__dict__``'s and its set slots (not its class's attributes).

    >>> class P:
    ...     scale = 3.0
    ...     def __init__(self, w):
    ...         self.w = w
    >>> instance_fields(P(1.0))
    ['w']
    """
    if dataclasses.is_dataclass(obj):
        return [f.name for f in dataclasses.fields(obj)]
    names = list(getattr(obj, "__dict__", ()))
    for cls in type(obj).__mro__:
        for n in getattr(cls, "__slots__", ()):
            if n not in ("__dict__", "__weakref__") and n not in names and hasattr(obj, n):
                names.append(n)
    return names
