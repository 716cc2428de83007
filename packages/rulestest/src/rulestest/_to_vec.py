"""``to_vec``: any primal or tangent as a flat float64 vector, and the way back.

The layout of a value is described by a tree of nodes built once from a primal
(:func:`layout`). Each node can flatten the primal, rebuild it from a vector,
flatten a *tangent* of it into the same coordinates (zeros, thunks and
``Tangent``\\ s included) and list its leaves with a readable path such as
``args[1].x`` or ``args[0][2]``. Conventions:

* floats, ints and real arrays are one coordinate per number; integers are
  perturbed as real numbers and rebuilt as floats (``ProjectTo`` makes int
  cotangents floats too);
* complex numbers are two coordinates, ``(re, im)``, element by element;
* bools, strings, ``None``, functions and other opaque objects have no
  coordinates and are rebuilt unchanged;
* tuples, lists, dicts, namedtuples, dataclasses, plain objects (their
  ``vars``) and ``Tangent``\\ s are the concatenation of their entries.
"""

from __future__ import annotations

import copy
import dataclasses
import numbers
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from rulescore import NON_DIFFERENTIABLE_TYPES, AbstractZero, Tangent, ZeroTangent, unthunk

__all__ = ["Layout", "StructureMismatch", "layout", "to_vec"]

_OPAQUE = NON_DIFFERENTIABLE_TYPES


class StructureMismatch(ValueError):
    """A tangent whose structure does not match its primal's; ``path`` says where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class Layout:
    """Base of the layout nodes; ``size`` is the number of coordinates."""

    size = 0
    primal: Any = None

    def flatten(self, x: Any) -> list[np.ndarray]:
        return []

    def rebuild(self, v: np.ndarray, i: int) -> tuple[Any, int]:
        return self.primal, i

    def flatten_tangent(self, dx: Any, path: str) -> list[np.ndarray]:
        return []

    def leaves(self, path: str, start: int = 0) -> Iterator[tuple[str, Layout, int]]:
        return iter(())

    # Conveniences over the whole tree.
    def to_vec(self, x: Any) -> np.ndarray:
        parts = self.flatten(x)
        return np.concatenate(parts) if parts else np.zeros(0)

    def from_vec(self, v: np.ndarray) -> Any:
        return self.rebuild(np.asarray(v, dtype=np.float64), 0)[0]

    def tangent_to_vec(self, dx: Any, path: str = "x") -> np.ndarray:
        dx = unthunk(dx)
        if isinstance(dx, AbstractZero):
            return np.zeros(self.size)
        parts = self.flatten_tangent(dx, path)
        return np.concatenate(parts) if parts else np.zeros(0)


class _Opaque(Layout):
    def __init__(self, x: Any) -> None:
        self.primal = x


class _Real(Layout):
    """A Python or numpy real (or integer) scalar."""

    size = 1

    def __init__(self, x: Any) -> None:
        self.primal = x
        kind = np.asarray(x).dtype
        # numpy's float64 subclasses Python's float: test for numpy first
        numpy_float = isinstance(x, np.generic) and kind.kind == "f"
        plain = isinstance(x, (int, float)) and not numpy_float
        self.rebuild_type = float if plain or kind.kind in "iu" else kind.type

    def flatten(self, x: Any) -> list[np.ndarray]:
        return [np.array([float(x)])]

    def rebuild(self, v: np.ndarray, i: int) -> tuple[Any, int]:
        return self.rebuild_type(v[i]), i + 1

    def flatten_tangent(self, dx: Any, path: str) -> list[np.ndarray]:
        a = _scalar_tangent(dx, path)
        return [np.array([a.real], dtype=np.float64)]

    def leaves(self, path: str, start: int = 0) -> Iterator[tuple[str, Layout, int]]:
        yield path, self, start


class _Complex(Layout):
    """A Python or numpy complex scalar: two coordinates."""

    size = 2

    def __init__(self, x: Any) -> None:
        self.primal = x
        # numpy's complex128 subclasses Python's complex: test for numpy first
        self.rebuild_type = type(x) if isinstance(x, np.generic) else complex

    def flatten(self, x: Any) -> list[np.ndarray]:
        return [np.array([x.real, x.imag], dtype=np.float64)]

    def rebuild(self, v: np.ndarray, i: int) -> tuple[Any, int]:
        return self.rebuild_type(complex(v[i], v[i + 1])), i + 2

    def flatten_tangent(self, dx: Any, path: str) -> list[np.ndarray]:
        a = _scalar_tangent(dx, path)
        return [np.array([a.real, a.imag], dtype=np.float64)]

    def leaves(self, path: str, start: int = 0) -> Iterator[tuple[str, Layout, int]]:
        yield path, self, start


def _scalar_tangent(dx: Any, path: str) -> complex:
    if isinstance(dx, (numbers.Number, np.generic)) and not isinstance(dx, bool):
        return complex(dx)
    if isinstance(dx, np.ndarray) and dx.shape == ():
        return complex(dx[()])
    raise StructureMismatch(path, f"expected a number, got {_describe(dx)}")


class _Array(Layout):
    """A numeric numpy array; complex arrays use (re, im) pairs element by element."""

    def __init__(self, x: np.ndarray) -> None:
        self.primal = x
        self.shape = x.shape
        self.dtype = x.dtype
        self.complex = x.dtype.kind == "c"
        self.size = x.size * (2 if self.complex else 1)
        # Integer arrays are perturbed as reals, so they come back as float64.
        self.rebuild_dtype = np.dtype(np.float64) if x.dtype.kind in "iu" else x.dtype

    def flatten(self, x: Any) -> list[np.ndarray]:
        x = np.asarray(x)
        if x.shape != self.shape:
            raise StructureMismatch("", f"shape {x.shape} where the layout has {self.shape}")
        if self.complex:
            return [np.ascontiguousarray(x, dtype=np.complex128).reshape(-1).view(np.float64)]
        return [np.asarray(x, dtype=np.float64).reshape(-1)]

    def rebuild(self, v: np.ndarray, i: int) -> tuple[Any, int]:
        chunk = v[i : i + self.size]
        if self.complex:
            chunk = np.ascontiguousarray(chunk).view(np.complex128)
        return chunk.reshape(self.shape).astype(self.rebuild_dtype), i + self.size

    def flatten_tangent(self, dx: Any, path: str) -> list[np.ndarray]:
        if not isinstance(dx, (np.ndarray, np.generic, numbers.Number)) or isinstance(dx, bool):
            raise StructureMismatch(
                path, f"expected an array of shape {self.shape}, got {_describe(dx)}"
            )
        a = np.asarray(dx)
        if a.shape != self.shape:
            raise StructureMismatch(
                path, f"shape {a.shape} where the primal has shape {self.shape}"
            )
        if self.complex:
            return self.flatten(a)
        return [np.asarray(a.real, dtype=np.float64).reshape(-1)]

    def leaves(self, path: str, start: int = 0) -> Iterator[tuple[str, Layout, int]]:
        yield path, self, start


class _Entries(Layout):
    """Containers: positional (tuple/list), mapping (dict) or fields (objects)."""

    def __init__(self, x: Any, kind: str, keys: list[Any], children: list[Layout]) -> None:
        self.primal = x
        self.kind = kind
        self.keys = keys
        self.children = children
        self.size = sum(c.size for c in children)

    def flatten(self, x: Any) -> list[np.ndarray]:
        if isinstance(x, Tangent):
            x = x._backing
        by_key = isinstance(x, dict) or self.kind == "positional"
        out: list[np.ndarray] = []
        for k, c in zip(self.keys, self.children):
            if c.size:
                out.extend(c.flatten(x[k] if by_key else getattr(x, k)))
        return out

    def rebuild(self, v: np.ndarray, i: int) -> tuple[Any, int]:
        if self.size == 0:
            return self.primal, i
        vals = []
        for c in self.children:
            val, i = c.rebuild(v, i)
            vals.append(val)
        return self._assemble(vals), i

    def _assemble(self, vals: list[Any]) -> Any:
        x = self.primal
        if isinstance(x, Tangent):
            b = dict(zip(self.keys, vals)) if isinstance(x._backing, dict) else tuple(vals)
            return type(x)._from_backing(b)
        if self.kind == "positional":
            return type(x)(vals) if isinstance(x, list) else tuple(vals)
        if self.kind == "mapping":
            out = copy.copy(x)
            out.update(zip(self.keys, vals))
            return out
        if isinstance(x, tuple):  # namedtuple
            return type(x)(*vals)
        new = copy.copy(x)
        for k, val in zip(self.keys, vals):
            object.__setattr__(new, k, val)
        return new

    def _tangent_entries(self, dx: Any, path: str) -> Callable[[Any], Any]:
        """A getter of ``dx``'s entry for a key (zero when absent)."""
        zero = ZeroTangent()
        if isinstance(dx, Tangent):
            b = dx._backing
            if self.kind == "positional" or not isinstance(b, dict):
                if isinstance(b, dict) or len(b) != len(self.keys):
                    raise StructureMismatch(path, f"{_describe(dx)} for {_describe(self.primal)}")
                return lambda k: b[k]
            if self.kind == "fields" and type(dx).primal_type is not type(self.primal):
                raise StructureMismatch(path, f"{_describe(dx)} for {_describe(self.primal)}")
            extra = [k for k in b if k not in self.keys]
            if extra:
                raise StructureMismatch(path, f"tangent has entries {extra} the primal has not")
            return lambda k: b.get(k, zero)
        if self.kind == "positional" and isinstance(dx, (tuple, list)):
            if len(dx) != len(self.keys):
                raise StructureMismatch(
                    path, f"{len(dx)} entries where the primal has {len(self.keys)}"
                )
            return lambda k: dx[k]
        if self.kind == "mapping" and isinstance(dx, dict):
            extra = [k for k in dx if k not in self.keys]
            if extra:
                raise StructureMismatch(path, f"tangent has keys {extra} the primal has not")
            return lambda k: dx.get(k, zero)
        if self.kind == "fields" and type(dx) is type(self.primal):
            return lambda k: getattr(dx, k)
        raise StructureMismatch(path, f"{_describe(dx)} for {_describe(self.primal)}")

    def flatten_tangent(self, dx: Any, path: str) -> list[np.ndarray]:
        get = self._tangent_entries(dx, path)
        out: list[np.ndarray] = []
        for k, c in zip(self.keys, self.children):
            if c.size:
                sub = unthunk(get(k))
                if isinstance(sub, AbstractZero):
                    out.append(np.zeros(c.size))
                else:
                    out.extend(c.flatten_tangent(sub, self.subpath(path, k)))
        return out

    def subpath(self, path: str, k: Any) -> str:
        if self.kind == "fields":
            return f"{path}.{k}"
        return f"{path}[{k!r}]"

    def leaves(self, path: str, start: int = 0) -> Iterator[tuple[str, Layout, int]]:
        for k, c in zip(self.keys, self.children):
            yield from c.leaves(self.subpath(path, k), start)
            start += c.size


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"ndarray of shape {x.shape} and dtype {x.dtype}"
    if isinstance(x, Tangent):
        return type(x).__name__
    return type(x).__name__


def layout(x: Any) -> Layout:
    """The layout tree of the primal ``x`` (see the module docstring)."""
    x = unthunk(x)
    if isinstance(x, _OPAQUE) or isinstance(x, AbstractZero):
        return _Opaque(x)
    if isinstance(x, np.ndarray):
        return _Array(x) if x.dtype.kind in "fciu" else _Opaque(x)
    if isinstance(x, np.generic):
        if x.dtype.kind == "c":
            return _Complex(x)
        return _Real(x) if x.dtype.kind in "fiu" else _Opaque(x)
    if isinstance(x, complex):
        return _Complex(x)
    if isinstance(x, numbers.Real):
        return _Real(x)
    if isinstance(x, numbers.Complex):
        return _Complex(x)
    if isinstance(x, Tangent):
        b = x._backing
        keys = list(b) if isinstance(b, dict) else list(range(len(b)))
        kind = "mapping" if isinstance(b, dict) else "positional"
        return _Entries(x, kind, keys, [layout(b[k]) for k in keys])
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        keys = list(type(x)._fields)
        return _Entries(x, "fields", keys, [layout(getattr(x, k)) for k in keys])
    if isinstance(x, (tuple, list)):
        return _Entries(x, "positional", list(range(len(x))), [layout(v) for v in x])
    if isinstance(x, dict):
        keys = list(x)
        return _Entries(x, "mapping", keys, [layout(x[k]) for k in keys])
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        keys = [f.name for f in dataclasses.fields(x)]
        return _Entries(x, "fields", keys, [layout(getattr(x, k)) for k in keys])
    if hasattr(x, "__dict__") and not callable(x):
        keys = list(vars(x))
        return _Entries(x, "fields", keys, [layout(getattr(x, k)) for k in keys])
    return _Opaque(x)


def to_vec(x: Any) -> tuple[np.ndarray, Callable[[np.ndarray], Any]]:
    """A flat float64 vector of ``x``'s coordinates, and the function back.

    >>> v, from_vec = to_vec((1.0, np.array([[2, 3]]), {"z": 1 + 2j, "s": "label"}))
    >>> v
    array([1., 2., 3., 1., 2.])
    >>> from_vec(2 * v)
    (2.0, array([[4., 6.]]), {'z': (2+4j), 's': 'label'})

    See also: :func:`rulestest.jvp`, :func:`rulestest.j_vp`.
    """
    node = layout(x)
    return node.to_vec(x), node.from_vec
