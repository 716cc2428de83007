"""``Tangent[P]``: the structural tangent of a composite primal of type ``P``.

Three shapes of backing, chosen from ``P``:

* fields (a ``dict`` of name to tangent) for dataclasses, namedtuples and plain
  objects; missing fields read as ``ZeroTangent()``;
* positional (a ``tuple``) for ``tuple`` and ``list``;
* mapping (a ``dict`` of key to tangent) for ``dict``.

``Tangent[P]`` is a cached subclass of :class:`Tangent`, so
``isinstance(t, Tangent)`` and ``type(t).primal_type is P`` both hold.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, get_args, get_origin

from ._thunks import unthunk
from ._zeros import AbstractZero, ZeroTangent

__all__ = ["Tangent", "backing", "canonicalize"]

_FIELDS, _POSITIONAL, _MAPPING = "fields", "positional", "mapping"


def _declared_fields(P: type) -> tuple[str, ...] | None:
    """The fields a tangent of ``P`` may have, or None when ``P`` does not say."""
    if dataclasses.is_dataclass(P):
        return tuple(f.name for f in dataclasses.fields(P))
    if isinstance(getattr(P, "_fields", None), tuple):  # namedtuple
        return P._fields
    if "__dict__" in dir(P):
        return None  # a plain object may gain any attribute in __init__
    names: list[str] = []
    for klass in reversed(P.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names = [n for n in dict.fromkeys(names) if n != "__weakref__"]
    return tuple(names) or None


class Tangent:
    """Structural tangent of a composite value; build one as ``Tangent[P](...)``.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Point:
    ...     x: float
    ...     y: float
    >>> t = Tangent[Point](x=1.0)
    >>> t.x, t.y
    (1.0, ZeroTangent())
    >>> t + Tangent[Point](y=2.0)
    Tangent[Point](x=1.0, y=2.0)
    >>> 3 * t
    Tangent[Point](x=3.0)
    >>> Point(1.0, 1.0) + t
    Point(x=2.0, y=1.0)
    >>> Tangent[tuple](1.0, 2.0)[1]
    2.0
    """

    __slots__ = ("_backing",)
    __array_ufunc__ = None  # numpy defers to our reflected operators

    primal_type: ClassVar[Any] = None
    _kind: ClassVar[str] = _FIELDS
    _allowed: ClassVar[tuple[str, ...] | None] = None
    _length: ClassVar[int | None] = None
    _cache: ClassVar[dict[Any, type[Tangent]]] = {}

    def __class_getitem__(cls, P: Any) -> type[Tangent]:
        try:
            return Tangent._cache[P]
        except (KeyError, TypeError):
            pass
        with _LOCK:
            return _tangent_class(P)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        if cls.primal_type is None:
            raise TypeError(
                "use Tangent[P](...) with the primal type P, e.g. Tangent[Point](x=1.0)"
            )
        kind = cls._kind
        if kind == _POSITIONAL:
            if kwargs:
                raise TypeError(f"{cls.__name__} takes positional entries, not {sorted(kwargs)}")
            if cls._length is not None and len(args) != cls._length:
                raise ValueError(f"{cls.__name__} needs {cls._length} entries, got {len(args)}")
            self._backing = tuple(args)
        elif kind == _MAPPING:
            if len(args) > 1 or (args and not isinstance(args[0], Mapping)):
                raise TypeError(f"{cls.__name__} takes one mapping and/or keywords")
            self._backing = dict(args[0]) if args else {}
            self._backing.update(kwargs)
        else:
            if args:
                raise TypeError(
                    f"{cls.__name__} takes fields as keywords, e.g. {cls.__name__}(x=1.0); "
                    f"got {len(args)} positional"
                )
            allowed = cls._allowed
            if allowed is not None:
                bad = [k for k in kwargs if k not in allowed]
                if bad:
                    raise AttributeError(
                        f"{cls.__name__}: {_type_name(cls.primal_type)} has no field "
                        f"{', '.join(map(repr, bad))} (its fields: {', '.join(allowed)})"
                    )
            self._backing = kwargs

    @classmethod
    def _from_backing(cls, b: Any) -> Tangent:
        t = object.__new__(cls)
        t._backing = b
        return t

    # --- access -----------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or type(self)._kind != _FIELDS:
            raise AttributeError(name)
        b = object.__getattribute__(self, "_backing")
        if name in b:
            return unthunk(b[name])
        allowed = type(self)._allowed
        if allowed is None or name in allowed:
            return ZeroTangent()
        raise AttributeError(
            f"{type(self).__name__}: {_type_name(type(self).primal_type)} has no field {name!r}"
        )

    def __getitem__(self, key: Any) -> Any:
        b = self._backing
        kind = type(self)._kind
        if kind == _POSITIONAL:
            return unthunk(b[key])
        if kind == _FIELDS and isinstance(key, int):  # namedtuple-style index
            allowed = type(self)._allowed
            if allowed is None:
                raise TypeError(f"{type(self).__name__} has no positional fields")
            key = allowed[key]
        if key in b:
            return unthunk(b[key])
        if kind == _FIELDS:
            return getattr(self, key)
        return ZeroTangent()

    def __iter__(self) -> Iterator[Any]:
        if type(self)._kind == _POSITIONAL:
            return (unthunk(v) for v in self._backing)
        if type(self)._kind == _MAPPING:
            return iter(self._backing)
        return (getattr(self, k) for k in canonicalize(self)._backing)

    def __len__(self) -> int:
        return len(self._backing)

    def __repr__(self) -> str:
        b = self._backing
        kind = type(self)._kind
        if kind == _POSITIONAL:
            inner = ", ".join(map(repr, b))
        elif kind == _MAPPING:
            inner = repr(b) if b else ""
        else:
            inner = ", ".join(f"{k}={v!r}" for k, v in b.items())
        return f"{type(self).__name__}({inner})"

    # --- algebra ----------------------------------------------------------

    def _elementwise(self, other: Tangent, op: Any) -> Tangent:
        a, b = self._backing, other._backing
        if type(self)._kind == _POSITIONAL:
            if len(a) != len(b):
                raise ValueError(
                    f"cannot combine {type(self).__name__} of length {len(a)} and {len(b)}"
                )
            return self._from_backing(tuple(op(x, y) for x, y in zip(a, b)))
        out = dict(a)
        for k, v in b.items():
            out[k] = op(out[k], v) if k in out else op(ZeroTangent(), v)
        return self._from_backing(out)

    def _map(self, fn: Any) -> Tangent:
        b = self._backing
        if type(self)._kind == _POSITIONAL:
            return self._from_backing(tuple(fn(v) for v in b))
        return self._from_backing({k: fn(v) for k, v in b.items()})

    def __add__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return self
        if type(other) is type(self):
            return self._elementwise(other, _add)
        if isinstance(other, Tangent):
            raise TypeError(f"cannot add {type(self).__name__} and {type(other).__name__}")
        if type(self)._kind == _POSITIONAL and isinstance(other, (tuple, list)):
            return self._elementwise(self._from_backing(tuple(other)), _add)
        if type(self)._kind == _MAPPING and isinstance(other, dict) and not self._is_primal(other):
            return self._elementwise(self._from_backing(other), _add)
        if self._is_primal(other):
            return _apply_to_primal(other, self)
        return NotImplemented

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return self
        if self._is_primal(other):
            return _apply_to_primal(other, self)
        if type(self)._kind == _POSITIONAL and isinstance(other, (tuple, list)):
            return self._from_backing(tuple(other))._elementwise(self, _add)
        return NotImplemented

    def _is_primal(self, x: Any) -> bool:
        origin = get_origin(type(self).primal_type) or type(self).primal_type
        return isinstance(x, origin)

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return self
        if type(other) is type(self):
            return self._elementwise(other, _sub)
        return NotImplemented

    def __neg__(self) -> Tangent:
        return self._map(lambda v: -unthunk(v))

    def __mul__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return other
        if isinstance(other, Tangent):
            return NotImplemented
        return self._map(lambda v: unthunk(v) * other)

    def __rmul__(self, other: Any) -> Any:
        if isinstance(other, AbstractZero):
            return other
        return self._map(lambda v: other * unthunk(v))

    def __truediv__(self, other: Any) -> Any:
        return self._map(lambda v: unthunk(v) / other)

    def conj(self) -> Tangent:
        return self._map(lambda v: _conj(unthunk(v)))

    conjugate = conj

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AbstractZero):
            return all(_is_zero_value(unthunk(v)) for v in _values(self._backing))
        if type(other) is not type(self):
            return NotImplemented
        a, b = self._backing, other._backing  # type: ignore[attr-defined]
        if type(self)._kind == _POSITIONAL:
            return len(a) == len(b) and all(_values_equal(x, y) for x, y in zip(a, b))
        keys = set(a) | set(b)
        z = ZeroTangent()
        return all(_values_equal(a.get(k, z), b.get(k, z)) for k in keys)

    __hash__ = None  # type: ignore[assignment]


def _add(x: Any, y: Any) -> Any:
    """Add two field tangents; plain list/tuple/dict tangents add entry by entry
    (``+`` on them would concatenate)."""
    x, y = unthunk(x), unthunk(y)
    if isinstance(x, AbstractZero):
        return y
    if isinstance(y, AbstractZero):
        return x
    tx = type(x)
    if (tx is list or tx is tuple) and type(y) is tx:
        if len(x) != len(y):
            raise ValueError(f"cannot add {tx.__name__} tangents of lengths {len(x)} and {len(y)}")
        return tx(_add(a, b) for a, b in zip(x, y))
    if tx is dict and type(y) is dict:
        out = dict(x)
        for k, v in y.items():
            out[k] = _add(out[k], v) if k in out else v
        return out
    return x + y


def _sub(x: Any, y: Any) -> Any:
    return unthunk(x) - unthunk(y)


def _conj(x: Any) -> Any:
    f = getattr(x, "conjugate", None)
    return x if f is None else f()


def _values(b: Any) -> Any:
    return b.values() if isinstance(b, dict) else b


def _is_zero_value(x: Any) -> bool:
    if isinstance(x, AbstractZero):
        return True
    if isinstance(x, Tangent):
        return x == ZeroTangent()
    try:
        return bool(_all(x == 0))
    except Exception:
        return False


def _all(x: Any) -> Any:
    np = sys.modules.get("numpy")
    return np.all(x) if np is not None else x


def _values_equal(x: Any, y: Any) -> bool:
    x, y = unthunk(x), unthunk(y)
    if isinstance(x, AbstractZero):
        return _is_zero_value(y)
    if isinstance(y, AbstractZero):
        return _is_zero_value(x)
    np = sys.modules.get("numpy")
    if np is not None and (isinstance(x, np.ndarray) or isinstance(y, np.ndarray)):
        return bool(np.shape(x) == np.shape(y) and np.array_equal(x, y))
    return bool(x == y)


def _type_name(P: Any) -> str:
    return getattr(P, "__name__", repr(P))


def _apply_to_primal(p: Any, t: Tangent) -> Any:
    """``primal + tangent``: a new primal moved along the tangent (for optimisers)."""
    kind = type(t)._kind
    b = t._backing
    if kind == _POSITIONAL:
        if len(b) != len(p):
            raise ValueError(f"cannot add {type(t).__name__} of length {len(b)} to {len(p)} items")
        return type(p)(x + unthunk(v) for x, v in zip(p, b))
    if kind == _MAPPING:
        out = dict(p)
        for k, v in b.items():
            out[k] = out[k] + unthunk(v)
        return type(p)(out) if type(p) is not dict else out
    if hasattr(p, "_replace") and isinstance(p, tuple):
        return p._replace(**{k: getattr(p, k) + unthunk(v) for k, v in b.items()})
    new = copy.copy(p)
    for k, v in b.items():
        object.__setattr__(new, k, getattr(p, k) + unthunk(v))
    return new


def backing(t: Any) -> Any:
    """The plain container inside a ``Tangent``: a tuple or a dict (a copy the
    caller may keep).

    >>> backing(Tangent[tuple](1.0, 2.0))
    (1.0, 2.0)
    """
    if not isinstance(t, Tangent):
        raise TypeError(f"backing needs a Tangent, got {type(t).__name__}")
    b = t._backing
    # a positional tangent's entries: a tuple, or a list while ad accumulates into it
    return dict(b) if isinstance(b, dict) else tuple(b)


def canonicalize(t: Tangent) -> Tangent:
    """A ``Tangent`` with every declared field present, in declaration order.

    Missing fields become ``ZeroTangent()``. Types whose fields are not
    declared (plain objects without ``__slots__`` or annotations, dicts,
    tuples) come back unchanged.

    >>> from collections import namedtuple
    >>> P = namedtuple("P", "a b")
    >>> canonicalize(Tangent[P](b=1.0))
    Tangent[P](a=ZeroTangent(), b=1.0)
    """
    if not isinstance(t, Tangent):
        raise TypeError(f"canonicalize needs a Tangent, got {type(t).__name__}")
    allowed = type(t)._allowed
    if type(t)._kind != _FIELDS or allowed is None:
        return t
    b = t._backing
    z = ZeroTangent()
    return t._from_backing({k: b.get(k, z) for k in allowed})


# --- the cache of ``Tangent[P]`` ---------------------------------------------------
#
# ``Tangent._cache`` maps ``P`` to ``Tangent[P]`` (the hit path: one dict lookup).
# It holds at most ``_CACHE_BOUND`` classes ``P`` (a class made per call, such as
# ``dataclasses.make_dataclass``'s, must not stay alive in it): beyond, the oldest
# classes leave it. ``Tangent[P]`` stays one class while anything holds it (a
# tangent, a module global): ``_ALIVE`` finds it again by ``id(P)``, weakly (it
# holds ``P``, so ``P`` is alive, and that id is its own, while it is). Other
# keys (builtins, generic aliases) are never evicted. Misses take ``_LOCK``.

_CACHE_BOUND = 512
_ALIVE: dict[int, weakref.ref] = {}
_LOCK = threading.RLock()


def _tangent_class(P: Any) -> type[Tangent]:
    cache = Tangent._cache
    try:
        return cache[P]
    except KeyError:
        hashable = True
    except TypeError:
        hashable = False
    is_class = isinstance(P, type)
    sub = None
    if is_class:
        ref = _ALIVE.get(id(P))
        sub = ref() if ref is not None else None
        if sub is not None and sub.primal_type is not P:  # pragma: no cover - defensive
            sub = None
    if sub is None:
        sub = _make(P)
        if is_class:
            _ALIVE[id(P)] = weakref.ref(sub, _forget(id(P)))
    if hashable:
        if is_class and len(cache) >= _CACHE_BOUND:
            classes = [k for k in cache if isinstance(k, type)]
            for k in classes[: len(classes) // 2 + 1]:
                cache.pop(k, None)
        cache[P] = sub
    return sub


def _forget(i: int, alive: dict = _ALIVE) -> Any:
    def forget(ref: weakref.ref) -> None:
        if alive.get(i) is ref:
            alive.pop(i, None)

    return forget


def _make(P: Any) -> type[Tangent]:
    origin = get_origin(P) or P
    if not isinstance(origin, type):
        raise TypeError(f"Tangent[P] needs a type P, got {P!r}")
    length = None
    if issubclass(origin, (tuple, list)) and not hasattr(origin, "_fields"):
        kind, allowed = _POSITIONAL, None
        args = get_args(P)
        if origin is tuple and args and args[-1] is not Ellipsis:
            length = len(args)
    elif issubclass(origin, dict):
        kind, allowed = _MAPPING, None
    else:
        kind, allowed = _FIELDS, _declared_fields(origin)
    name = f"Tangent[{getattr(P, '__name__', repr(P))}]"
    sub = type(
        name,
        (Tangent,),
        {
            "__slots__": (),
            "primal_type": P,
            "_kind": kind,
            "_allowed": allowed,
            "_length": length,
            "__module__": __name__,
            "__qualname__": name,
        },
    )
    return sub
