"""Rules for numpy's shape functions: reshape, transpose, concatenate, tile, pad, ...

Every function here is linear in its array argument(s), so each is one entry
of a table pairing the function with its adjoint (see
:func:`rules._numpy_linear.register_linear`): the pushforward applies the
function to the tangent, the pullback applies the adjoint to the cotangent.
Shapes, axes, counts and modes get ``NoTangent()``.

Functions that only move entries around (``pad`` in its ``edge``/``reflect``/
``symmetric``/``wrap`` modes, ``ravel(order="K")``) use :func:`gather_adjoint`:
apply the function to an array of flat positions, then scatter-add the
cotangent back through those positions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import AbstractZero, Tangent, backing, unthunk

from ._numpy_linear import register_linear, sum_to
from ._util import asarray

__all__ = ["gather_adjoint", "transpose_axes"]


def gather_adjoint(f: Callable[..., Any]) -> Callable[..., Any]:
    """The adjoint of ``f`` when ``f`` only copies entries of its argument.

    ``f`` applied to the positions ``0 .. x.size - 1`` (laid out like ``x`` in
    memory) says where each output entry came from; the cotangent of an entry
    of ``x`` is the sum of the output cotangents that came from it.

    >>> adj = gather_adjoint(lambda x: x[[0, 0, 1]])
    >>> adj(np.array([1.0, 2.0, 3.0]), np.zeros(2))
    array([3., 3.])
    """

    def adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> np.ndarray:
        x = asarray(x)
        where = np.empty_like(x, dtype=np.intp)
        where[...] = np.arange(x.size).reshape(x.shape)
        src = asarray(f(where, *rest, **kw))
        ȳ = asarray(ȳ)
        out = np.bincount(src.ravel(), ȳ.real.ravel(), minlength=x.size)
        if np.iscomplexobj(ȳ):
            out = out + 1j * np.bincount(src.ravel(), ȳ.imag.ravel(), minlength=x.size)
        return out.reshape(x.shape)

    return adjoint


def _order(x: Any, order: str) -> str:
    if order == "A":
        return "F" if np.isfortran(asarray(x)) else "C"
    return order


def _reshape_to(ȳ: Any, x: Any, order: str) -> Any:
    order = _order(x, order)
    if order == "C":  # numpy's default, and all that dask's reshape accepts
        return np.reshape(ȳ, np.shape(x))
    return np.reshape(ȳ, np.shape(x), order=order)


def _reshape_adjoint(ȳ: Any, x: Any, *shape: Any, order: str = "C", **kw: Any) -> Any:
    return _reshape_to(ȳ, x, order)


def _ravel_adjoint(ȳ: Any, x: Any, order: str = "C") -> Any:
    if order == "K":
        return gather_adjoint(np.ravel)(ȳ, x, order="K")
    return _reshape_to(ȳ, x, order)


def _to_shape_adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> Any:
    return np.reshape(ȳ, np.shape(x))


def transpose_axes(rest: tuple, kw: dict) -> Any:
    """The ``axes`` of ``transpose(x, *rest, **kw)`` in every form numpy accepts.

    ``x.transpose()``, ``x.transpose(1, 0)``, ``x.transpose((1, 0))`` and
    ``np.transpose(x, axes=(1, 0))``; ``None`` means reversed.

    >>> transpose_axes((1, 0), {}), transpose_axes(((1, 0),), {}), transpose_axes((), {})
    ((1, 0), (1, 0), None)
    """
    if "axes" in kw:
        return kw["axes"]
    if len(rest) == 1 and (rest[0] is None or np.ndim(rest[0]) == 1):
        return None if rest[0] is None else tuple(rest[0])
    return tuple(rest) or None


def _transpose_adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> Any:
    axes = transpose_axes(rest, kw)
    if axes is None:
        return np.transpose(ȳ)
    n = np.ndim(x)
    return np.transpose(ȳ, np.argsort([a % n for a in axes]))


def _moveaxis_adjoint(ȳ: Any, x: Any, source: Any, destination: Any) -> Any:
    return np.moveaxis(ȳ, destination, source)


def _broadcast_to_adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> Any:
    return sum_to(asarray(ȳ), np.shape(x))


def _involution(f: Callable[..., Any]) -> Callable[..., Any]:
    """The adjoint of a permutation that is its own inverse (flips, swapaxes)."""

    def adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> Any:
        return f(ȳ, *rest, **kw)

    return adjoint


def _roll_adjoint(ȳ: Any, x: Any, shift: Any, axis: Any = None) -> Any:
    return np.roll(ȳ, np.negative(shift), axis)


def _tile_adjoint(ȳ: Any, x: Any, reps: Any) -> Any:
    shape = np.shape(x)
    reps = tuple(np.atleast_1d(reps))
    d = max(len(shape), len(reps))
    full = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    split = [n for pair in zip(reps, full) for n in pair]
    return np.reshape(ȳ, split).sum(axis=tuple(range(0, 2 * d, 2))).reshape(shape)


def _repeat_adjoint(ȳ: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
    shape = np.shape(x)
    ȳ = asarray(ȳ)
    if axis is None:
        ȳ, axis, target = ȳ.ravel(), 0, (int(np.prod(shape)),)
    else:
        axis %= len(shape)
        target = shape
    n = target[axis]
    if np.ndim(repeats) == 0 or np.size(repeats) == 1:
        r = int(np.ravel(repeats)[0])
        split = (*ȳ.shape[:axis], n, r, *ȳ.shape[axis + 1 :])
        return ȳ.reshape(split).sum(axis=axis + 1).reshape(shape)
    owner = np.repeat(np.arange(n), repeats)
    out = np.zeros(np.moveaxis(np.empty(target, np.int8), axis, 0).shape, ȳ.dtype)
    np.add.at(out, owner, np.moveaxis(ȳ, axis, 0))
    return np.moveaxis(out, 0, axis).reshape(shape)


_GATHER_PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad_adjoint(ȳ: Any, x: Any, pad_width: Any, mode: str = "constant", **kw: Any) -> Any:
    if mode == "constant" or mode == "empty":
        n = np.ndim(x)
        widths = np.broadcast_to(asarray(pad_width, dtype=np.intp), (n, 2))
        core = tuple(slice(lo, ȳ.shape[i] - hi) for i, (lo, hi) in enumerate(widths))
        return asarray(ȳ)[core]
    if mode in _GATHER_PAD_MODES:
        return gather_adjoint(np.pad)(ȳ, x, pad_width, mode, **kw)
    raise NotImplementedError(
        f"np.pad(mode={mode!r}) has no derivative rule: only modes that copy entries are "
        f"linear in the input.\nTo fix: use mode='constant' or one of "
        f"{', '.join(map(repr, _GATHER_PAD_MODES))}."
    )


def _check_pad(x: Any, pad_width: Any, mode: Any = "constant", **kw: Any) -> None:
    """Refuse, before any work, the modes the rule cannot differentiate."""
    if not isinstance(mode, str) or mode not in ("constant", "empty", *_GATHER_PAD_MODES):
        _pad_adjoint(None, x, pad_width, mode)
    if kw.get("reflect_type", "even") != "even":
        raise NotImplementedError(
            f"np.pad(mode={mode!r}, reflect_type={kw['reflect_type']!r}) has no derivative "
            "rule.\nTo fix: use the default reflect_type='even'."
        )


def _pad_pushforward(ẋ: Any, pad_width: Any, mode: Any = "constant", **kw: Any) -> Any:
    if mode in ("constant", "empty"):
        return np.pad(ẋ, pad_width)  # the padding is a constant: zero tangent
    return np.pad(ẋ, pad_width, mode, **kw)


def _split_sizes(n: int, sections: Any) -> list:
    return [len(p) for p in np.array_split(np.arange(n), sections)]


def _split_adjoint(ȳ: Any, x: Any, indices_or_sections: Any, axis: int = 0) -> Any:
    # the parameter is named as numpy's, which may be passed by keyword
    sections = indices_or_sections
    shape = np.shape(x)
    axis %= len(shape)
    if isinstance(ȳ, Tangent):
        ȳ = backing(ȳ)
    sizes = _split_sizes(shape[axis], sections)
    pieces = []
    for size, piece in zip(sizes, ȳ):
        piece = unthunk(piece)
        if isinstance(piece, AbstractZero):
            piece = np.zeros((*shape[:axis], size, *shape[axis + 1 :]))
        pieces.append(piece)
    return np.concatenate(pieces, axis=axis)


def _pieces(ȳ: Any, xs: Any, shapes: list, axis: int) -> list:
    """Split ``ȳ`` along ``axis`` into pieces of ``shapes``, each reshaped to its ``x``."""
    # By slicing, not np.split: the same views, and lazy for every array library.
    pieces, start, lead = [], 0, (slice(None),) * axis
    for s, x in zip(shapes, xs):
        stop = start + s[axis]
        pieces.append(np.reshape(ȳ[(*lead, slice(start, stop))], np.shape(x)))
        start = stop
    return pieces


def _concatenate_adjoint(ȳ: Any, xs: Any, axis: Any = 0, **kw: Any) -> list:
    ȳ = asarray(ȳ)
    if axis is None:
        return _pieces(ȳ, xs, [(np.size(x),) for x in xs], 0)
    return _pieces(ȳ, xs, [np.shape(x) for x in xs], axis % ȳ.ndim)


def _hstack_adjoint(ȳ: Any, xs: Any, **kw: Any) -> list:
    shapes = [np.shape(np.atleast_1d(x)) for x in xs]
    return _pieces(asarray(ȳ), xs, shapes, 0 if len(shapes[0]) == 1 else 1)


def _vstack_adjoint(ȳ: Any, xs: Any, **kw: Any) -> list:
    return _pieces(asarray(ȳ), xs, [np.shape(np.atleast_2d(x)) for x in xs], 0)


def _stack_adjoint(ȳ: Any, xs: Any, axis: int = 0, **kw: Any) -> list:
    return list(np.moveaxis(asarray(ȳ), axis, 0))


_LINEAR = [
    (np.reshape, _reshape_adjoint),
    (np.ravel, _ravel_adjoint),
    (np.transpose, _transpose_adjoint),
    (np.swapaxes, _involution(np.swapaxes)),
    (np.moveaxis, _moveaxis_adjoint),
    (np.expand_dims, _to_shape_adjoint),
    (np.squeeze, _to_shape_adjoint),
    (np.atleast_1d, _to_shape_adjoint),
    (np.atleast_2d, _to_shape_adjoint),
    (np.atleast_3d, _to_shape_adjoint),
    (np.broadcast_to, _broadcast_to_adjoint),
    (np.flip, _involution(np.flip)),
    (np.fliplr, _involution(np.fliplr)),
    (np.flipud, _involution(np.flipud)),
    (np.roll, _roll_adjoint),
    (np.tile, _tile_adjoint),
    (np.repeat, _repeat_adjoint),
    (np.split, _split_adjoint),
    (np.array_split, _split_adjoint),
]
_LINEAR_IN_A_SEQUENCE = [
    (np.concatenate, _concatenate_adjoint),
    (np.stack, _stack_adjoint),
    (np.hstack, _hstack_adjoint),
    (np.vstack, _vstack_adjoint),
]

for _f, _adjoint in _LINEAR:
    register_linear(_f, _adjoint, _f.__name__)
for _f, _adjoint in _LINEAR_IN_A_SEQUENCE:
    register_linear(_f, _adjoint, _f.__name__, sequence=True)
register_linear(np.pad, _pad_adjoint, "pad", check=_check_pad, pushforward=_pad_pushforward)
