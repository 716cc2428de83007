"""``ProjectTo(x)``: map a cotangent into the tangent space of the primal ``x``.

Decisions (see DESIGN.md, "Projection"):

* a real primal gets a real cotangent (the imaginary part is dropped);
* integers are real numbers: an int or int array gets a float cotangent;
* bools, bool arrays, strings, ``None``, types and functions get ``NoTangent()``;
* arrays keep their dtype (float32 stays float32) and shape (a 0-d array stays
  0-d); a cotangent of another shape is an error, never silently broadcast;
* tuples, lists, dicts, namedtuples and dataclasses project entry by entry;
  a container none of whose entries is differentiable projects to ``NoTangent()``;
* zeros pass through, and a thunk is projected lazily (it stays a thunk);
* a ``NotImplementedTangent`` (a rule's missing derivative) passes through: it is
  as missing once projected, and raises wherever it is used.

numpy is never imported here: arrays are recognised through ``sys.modules``.
"""

from __future__ import annotations

import dataclasses
import numbers
import sys
import types
from collections.abc import Callable
from typing import Any

from ._arrays import DuckArray
from ._not_implemented import NotImplementedTangent
from ._tangent import Tangent
from ._thunks import AbstractThunk, InplaceableThunk, Thunk, unthunk
from ._zeros import AbstractZero, NoTangent
from .errors import CotangentError, NotImplementedTangentError

__all__ = ["NON_DIFFERENTIABLE_TYPES", "ProjectTo", "Projector"]


class Projector:
    """Base class of the callables returned by :func:`ProjectTo`."""

    __slots__ = ()

    def __call__(self, dx: Any) -> Any:
        if isinstance(dx, AbstractZero):
            return dx
        if isinstance(dx, AbstractThunk):
            return self._lazy(dx)
        try:
            return self.project(dx)
        except (CotangentError, NotImplementedTangentError):
            if type(dx) is NotImplementedTangent:  # missing before, missing after
                return dx
            raise

    def project(self, dx: Any) -> Any:
        raise NotImplementedError

    def _lazy(self, dx: AbstractThunk) -> Any:
        # Through __call__, not project: the thunk may evaluate to a zero.
        if isinstance(dx, InplaceableThunk):
            return InplaceableThunk(dx.add_fn, Thunk(lambda: self(unthunk(dx.thunk))))
        return Thunk(lambda: self(unthunk(dx)))

    def _wrong(self, dx: Any, what: str) -> CotangentError:
        return CotangentError(
            f"ProjectTo({what}): cannot project a cotangent of type {type(dx).__name__}"
            f"{_shape_note(dx)} onto {what}.\n"
            "To fix: the rule must return a cotangent shaped like its input "
            "(sum over broadcast dimensions, drop extra structure)."
        )


def _shape_note(dx: Any) -> str:
    shape = getattr(dx, "shape", None)
    return f" with shape {shape}" if shape is not None else ""


def _numpy() -> Any:
    return sys.modules.get("numpy")


class _ToNoTangent(Projector):
    __slots__ = ()

    def __call__(self, dx: Any) -> Any:
        return NoTangent()

    def __repr__(self) -> str:
        return "ProjectTo(NoTangent)"


class _Identity(Projector):
    __slots__ = ()

    def __call__(self, dx: Any) -> Any:
        return dx

    def __repr__(self) -> str:
        return "ProjectTo(any)"


class _ToReal(Projector):
    """Python ``float`` and ``int`` primals."""

    __slots__ = ()

    def project(self, dx: Any) -> Any:
        t = type(dx)
        if t is float:
            return dx
        if t is int:
            return float(dx)
        if t is complex:
            return dx.real
        np = _numpy()
        if np is not None:
            if isinstance(dx, np.ndarray):
                if dx.shape == ():
                    return self.project(dx[()])
                raise self._wrong(dx, "a real number")
            if isinstance(dx, np.generic):
                # A Python float primal gets a Python float, whatever numpy computed in.
                if isinstance(dx, np.complexfloating):
                    return float(dx.real)
                if isinstance(dx, np.number):
                    return float(dx)
            if isinstance(dx, DuckArray) and dx.shape == ():
                # A 0-d dask or CuPy array stays one: reading it as a float would
                # compute it (dask) or copy it to the host (CuPy).
                return dx.real if dx.dtype.kind == "c" else dx
        if isinstance(dx, bool):
            raise self._wrong(dx, "a real number")
        if isinstance(dx, numbers.Real):
            return dx
        if isinstance(dx, numbers.Complex):
            return dx.real
        raise self._wrong(dx, "a real number")

    def __repr__(self) -> str:
        return "ProjectTo(Real)"


class _ToComplex(Projector):
    """Python ``complex`` primals."""

    __slots__ = ()

    def project(self, dx: Any) -> Any:
        t = type(dx)
        if t is complex:
            return dx
        np = _numpy()
        if np is not None and isinstance(dx, np.ndarray):
            if dx.shape == ():
                return self.project(dx[()])
            raise self._wrong(dx, "a complex number")
        if isinstance(dx, numbers.Complex) and not isinstance(dx, bool):
            return complex(dx)
        if np is not None and isinstance(dx, np.number):
            return complex(dx)
        if np is not None and isinstance(dx, DuckArray) and dx.shape == ():
            return dx  # stays in its library, uncomputed
        raise self._wrong(dx, "a complex number")

    def __repr__(self) -> str:
        return "ProjectTo(Complex)"


class _ToArray(Projector):
    """numpy arrays and numpy scalars: keep shape and (floating) dtype."""

    __slots__ = ("dtype", "scalar", "shape")

    def __init__(self, shape: tuple, dtype: Any, scalar: bool) -> None:
        self.shape = shape
        self.dtype = dtype
        self.scalar = scalar  # a numpy scalar primal gets a numpy scalar back

    def project(self, dx: Any) -> Any:
        np = _numpy()
        if type(dx) is np.ndarray and dx.dtype == self.dtype and dx.shape == self.shape:
            return dx[()] if self.scalar else dx
        if isinstance(dx, (Tangent, tuple, dict)) or not _is_numeric(dx, np):
            if isinstance(dx, DuckArray) and tuple(dx.shape) == self.shape:
                # A numpy primal whose derivative a dask or CuPy computation made:
                # it stays in that library (uncomputed) for the caller to compute.
                if self.dtype.kind != "c" and dx.dtype.kind == "c":
                    dx = dx.real
                return dx if dx.dtype == self.dtype else dx.astype(self.dtype)
            raise self._wrong(dx, f"an array of shape {self.shape} and dtype {self.dtype}")
        arr = np.asarray(dx)
        if arr.shape != self.shape:
            raise self._wrong(dx, f"an array of shape {self.shape} and dtype {self.dtype}")
        if self.dtype.kind != "c" and arr.dtype.kind == "c":
            arr = arr.real
        arr = arr.astype(self.dtype, copy=False)
        return arr[()] if self.scalar else arr

    def __repr__(self) -> str:
        return f"ProjectTo(ndarray, shape={self.shape}, dtype={self.dtype})"


class _ToDuckArray(Projector):
    """Arrays of another library that follows numpy's protocols (dask, CuPy): keep
    shape, floating dtype and library, without computing anything (a dask
    cotangent stays lazy)."""

    __slots__ = ("dtype", "like", "shape")

    def __init__(self, like: Any, dtype: Any) -> None:
        self.like = like  # the primal: numpy arrays are moved into its library
        self.shape = like.shape
        self.dtype = dtype

    def project(self, dx: Any) -> Any:
        np = _numpy()
        if isinstance(dx, (Tangent, tuple, dict)) or not (
            isinstance(dx, DuckArray) or _is_numeric(dx, np)
        ):
            raise self._wrong(dx, f"an array of shape {self.shape} and dtype {self.dtype}")
        if not isinstance(dx, type(self.like)):
            dx = np.asarray(dx, like=self.like)
        if tuple(dx.shape) != tuple(self.shape):
            raise self._wrong(dx, f"an array of shape {self.shape} and dtype {self.dtype}")
        if self.dtype.kind != "c" and dx.dtype.kind == "c":
            dx = dx.real
        return dx if dx.dtype == self.dtype else dx.astype(self.dtype)

    def __repr__(self) -> str:
        return f"ProjectTo({type(self.like).__name__}, shape={self.shape}, dtype={self.dtype})"


def _is_numeric(dx: Any, np: Any) -> bool:
    if isinstance(dx, (np.ndarray, np.generic)):
        return dx.dtype.kind in "fciub"
    return isinstance(dx, numbers.Number) or isinstance(dx, list)


def _is_array(dx: Any) -> bool:
    """A numpy array with at least one axis (whose rows can be iterated)."""
    np = _numpy()
    return np is not None and isinstance(dx, np.ndarray) and dx.ndim > 0


class _ToSequence(Projector):
    __slots__ = ("elements", "kind")

    def __init__(self, elements: tuple, kind: type) -> None:
        self.elements = elements
        self.kind = kind

    def project(self, dx: Any) -> Any:
        if isinstance(dx, Tangent) and dx._kind == "positional":
            vals = dx._backing
        elif isinstance(dx, (tuple, list)):
            vals = dx
        elif _is_array(dx):
            # numpy reads a list or tuple of numbers and arrays as an array (np.sum([a, b])),
            # so a rule may give its cotangent as that array: its rows are the entries'.
            vals = list(dx)
        else:
            raise self._wrong(dx, f"a {self.kind.__name__} of length {len(self.elements)}")
        if len(vals) != len(self.elements):
            raise CotangentError(
                f"ProjectTo({self.kind.__name__}): cotangent has {len(vals)} entries, "
                f"the primal has {len(self.elements)}"
            )
        out = [p(v) for p, v in zip(self.elements, vals)]
        if isinstance(dx, Tangent):
            return type(dx)._from_backing(tuple(out))
        return out if self.kind is list else tuple(out)

    def __repr__(self) -> str:
        return f"ProjectTo({self.kind.__name__}, {self.elements!r})"


class _ToDict(Projector):
    __slots__ = ("entries",)

    def __init__(self, entries: dict) -> None:
        self.entries = entries

    def project(self, dx: Any) -> Any:
        if isinstance(dx, Tangent) and dx._kind == "mapping":
            vals, wrap = dx._backing, type(dx)._from_backing
        elif isinstance(dx, dict):
            vals, wrap = dx, dict
        else:
            raise self._wrong(dx, "a dict")
        out = {}
        for k, v in vals.items():
            p = self.entries.get(k)
            if p is None:
                raise CotangentError(
                    f"ProjectTo(dict): cotangent has key {k!r}, the primal has not"
                )
            out[k] = p(v)
        return wrap(out)

    def __repr__(self) -> str:
        return f"ProjectTo(dict, {self.entries!r})"


class _ToFields(Projector):
    """Dataclasses and namedtuples: a ``Tangent[P]`` with each field projected."""

    __slots__ = ("fields", "primal_type")

    def __init__(self, primal_type: type, fields: dict) -> None:
        self.primal_type = primal_type
        self.fields = fields

    def project(self, dx: Any) -> Any:
        P = self.primal_type
        if isinstance(dx, Tangent):
            if type(dx).primal_type is not P:
                raise self._wrong(dx, f"Tangent[{P.__name__}]")
            vals = dx._backing
        elif isinstance(dx, P):
            vals = {k: getattr(dx, k) for k in self.fields}
        elif isinstance(dx, tuple) and hasattr(P, "_fields") and len(dx) == len(self.fields):
            vals = dict(zip(self.fields, dx))
        else:
            raise self._wrong(dx, f"Tangent[{P.__name__}]")
        out = {}
        for k, v in vals.items():
            p = self.fields.get(k)
            if p is None:
                raise CotangentError(f"ProjectTo({P.__name__}): no field {k!r}")
            out[k] = p(v)
        return Tangent[P]._from_backing(out)

    def __repr__(self) -> str:
        return f"ProjectTo({self.primal_type.__name__})"


_NO = _ToNoTangent()
_ANY = _Identity()
_REAL = _ToReal()
_COMPLEX = _ToComplex()
#: Types whose values have no tangent: ``ProjectTo`` maps their cotangents to ``NoTangent()``.
NON_DIFFERENTIABLE_TYPES: tuple[type, ...] = (
    bool,
    str,
    bytes,
    type(None),
    type,
    range,
    slice,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    type(Ellipsis),
)


def _collapse(projectors: Any) -> bool:
    return all(p is _NO for p in projectors)


def ProjectTo(x: Any) -> Callable[[Any], Any]:
    """The projector onto the tangent space of ``x``: ``ProjectTo(x)(dx)``.

    >>> ProjectTo(1.0)(2.0 + 3.0j)
    2.0
    >>> ProjectTo(3)(2)
    2.0
    >>> ProjectTo(True)(1.0)
    NoTangent()
    >>> import numpy as np
    >>> ProjectTo(np.zeros(2, dtype=np.float32))(np.array([1.0, 2.0])).dtype
    dtype('float32')
    >>> ProjectTo((1.0, "a"))((2.0, 3.0))
    (2.0, NoTangent())
    """
    t = type(x)
    if t is float or t is int:
        return _REAL
    if t is complex:
        return _COMPLEX
    if t is types.FunctionType and x.__closure__:
        # A closure carries its captured variables, which may be differentiable:
        # its tangent is a ``Tangent`` over them (kept as is).
        return _ANY
    if isinstance(x, NON_DIFFERENTIABLE_TYPES):
        return _NO
    np = _numpy()
    if np is not None and isinstance(x, (np.ndarray, np.generic)):
        kind = x.dtype.kind
        if kind == "b":
            return _NO
        if kind in "iu":
            dtype = np.dtype(np.float64)
        elif kind in "fc":
            dtype = x.dtype
        else:
            return _ANY
        return _ToArray(x.shape, dtype, isinstance(x, np.generic))
    if np is not None and isinstance(x, DuckArray):
        kind = x.dtype.kind
        if kind == "b":
            return _NO
        if kind in "fc":
            return _ToDuckArray(x, x.dtype)
        return _ToDuckArray(x, np.dtype(np.float64)) if kind in "iu" else _ANY
    if isinstance(x, numbers.Real):
        return _REAL
    if isinstance(x, numbers.Complex):
        return _COMPLEX
    if isinstance(x, (AbstractZero, Tangent)):
        return _ANY
    if t is tuple or t is list:
        elements = tuple(ProjectTo(v) for v in x)
        return _NO if elements and _collapse(elements) else _ToSequence(elements, t)
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        fields = {k: ProjectTo(getattr(x, k)) for k in t._fields}
        return _NO if fields and _collapse(fields.values()) else _ToFields(t, fields)
    if isinstance(x, dict):
        entries = {k: ProjectTo(v) for k, v in x.items()}
        return _NO if entries and _collapse(entries.values()) else _ToDict(entries)
    if dataclasses.is_dataclass(x):
        fields = {f.name: ProjectTo(getattr(x, f.name)) for f in dataclasses.fields(x)}
        return _NO if fields and _collapse(fields.values()) else _ToFields(t, fields)
    return _ANY
