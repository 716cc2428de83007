"""``rand_tangent(x)``: a random tangent of the right type for any primal."""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, unthunk

from ._to_vec import _OPAQUE

__all__ = ["DEFAULT_SEED", "rand_tangent"]

DEFAULT_SEED = 20240917


def rand_tangent(x: Any, rng: np.random.Generator | None = None) -> Any:
    """A random tangent of ``x``: same structure, shape and dtype (ints get floats).

    Numbers are drawn from a standard normal and rounded to 2 decimals, so
    failure reports stay readable. Bools, strings, ``None`` and other
    non-differentiable values get ``NoTangent()``; tuples, lists and dicts get
    the same container; dataclasses, namedtuples and plain objects get a
    ``Tangent[P]``. Without ``rng``, a generator seeded with ``DEFAULT_SEED``
    is used, so results are reproducible.

    >>> rand_tangent(1.5)
    0.16
    >>> rand_tangent(np.zeros(2, dtype=np.float32)).dtype
    dtype('float32')
    >>> rand_tangent((3, "label"))[1]
    NoTangent()

    See also: :func:`rulestest.test_rrule`.
    """
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else rng
    return _rand(unthunk(x), rng)


def _normal(rng: np.random.Generator, shape: tuple = ()) -> Any:
    return np.round(rng.standard_normal(shape), 2) + 0.0


def _rand(x: Any, rng: np.random.Generator) -> Any:
    if isinstance(x, _OPAQUE):
        return NoTangent()
    if isinstance(x, (ZeroTangent, NoTangent)):
        return x
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        kind = x.dtype.kind
        if kind == "c":
            t = (_normal(rng, x.shape) + 1j * _normal(rng, x.shape)).astype(x.dtype)
        elif kind == "f":
            t = _normal(rng, x.shape).astype(x.dtype)
        elif kind in "iu":
            t = _normal(rng, x.shape).astype(np.float64)
        else:
            return NoTangent()
        return t[()] if isinstance(x, np.generic) else t
    if isinstance(x, complex):
        return complex(_normal(rng), _normal(rng))
    if isinstance(x, numbers.Real):
        return float(_normal(rng))
    if isinstance(x, numbers.Complex):
        return complex(_normal(rng), _normal(rng))
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return _fields(type(x), {k: _rand(getattr(x, k), rng) for k in type(x)._fields})
    if isinstance(x, (tuple, list)):
        ts = [_rand(v, rng) for v in x]
        if ts and all(isinstance(t, NoTangent) for t in ts):
            return NoTangent()
        return type(x)(ts) if isinstance(x, list) else tuple(ts)
    if isinstance(x, dict):
        ts = {k: _rand(v, rng) for k, v in x.items()}
        if ts and all(isinstance(t, NoTangent) for t in ts.values()):
            return NoTangent()
        return ts
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _fields(
            type(x), {f.name: _rand(getattr(x, f.name), rng) for f in dataclasses.fields(x)}
        )
    if hasattr(x, "__dict__") and not callable(x):
        return _fields(type(x), {k: _rand(v, rng) for k, v in vars(x).items()})
    return NoTangent()


def _fields(P: type, ts: dict) -> Any:
    if ts and all(isinstance(t, NoTangent) for t in ts.values()):
        return NoTangent()
    return Tangent[P](**{k: t for k, t in ts.items() if not isinstance(t, NoTangent)})
