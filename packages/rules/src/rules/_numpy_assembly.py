"""Rules for joining, splitting and removing: the functions that copy entries.

``append``, ``insert``, ``delete``, ``column_stack``, ``row_stack``,
``dstack``, ``hsplit``, ``vsplit``, ``dsplit``, ``compress`` (and
``ndarray.compress``), and ``np.r_[...]`` / ``np.c_[...]``. Split functions
return lists: their cotangent is a list or tuple whose entries may be zeros.
Indices, axes, masks and section counts get ``NoTangent()``; an integer result
(``insert`` into an int array) truncates and has no derivative.

These functions only copy entries of their array arguments, so they are
differentiated through the positions the entries come from
(:func:`copy_sources`): the function is applied once to integer arrays
numbering the entries, which says for each output entry where it came from;
the pushforward gathers tangents through those positions and the pullback
scatter-adds cotangents back (``insert`` broadcasts its values, so a value
copied twice gets the sum).

``np.r_[a, b]`` is ``operator.getitem(np.r_, (a, b))``: the AD turns every
subscript into that call, so the rule is registered for ``operator.getitem``
on the classes of ``np.r_`` and ``np.c_`` (exactly: ``np.ma``'s concatenators
are not covered). Arrays, lists and numbers in the key are differentiable,
and so are a slice's float or complex bounds: ``np.r_[a:b:5j]`` is
``linspace(a, b, 5)`` and ``np.r_[a:b:0.5]`` is ``arange(a, b, 0.5)``, and the
slice's cotangent is a ``Tangent[slice]`` (see :mod:`rules._numpy_index_tricks`,
which also has ``np.mgrid``/``np.ogrid``). Integer slices (``0:3``) and string
directives (``'0,2'``, ``'c'``) are constants. ``np.r_['1 2; 3 4']`` (a matrix
built from the caller's variables by name) is refused.

Ranges and grids are in :mod:`rules._numpy_ranges`, selection (``select``,
``choose``, ``piecewise``, ``round``, ``ptp``) in :mod:`rules._numpy_selection`;
``apply_along_axis`` in :mod:`rules._numpy_along_axis`; ``put_along_axis``
writes in place, so it has no rule itself: its functional form
``rules.functional.put_along_axis`` (a new array; see :mod:`rules.functional`,
which covers ``fill_diagonal``, ``copyto``, ``place``, ``putmask``, ``put`` and
``ufunc.at`` too) has one, and ``take_along_axis`` has one. ``ndarray.clip`` shares
``np.clip``'s rule (in ``_numpy_binary``).

>>> import numpy as np
>>> from rulescore import rrule, unthunk
>>> y, pb = rrule(np.insert, np.array([1.0, 2.0]), 1, np.array([5.0, 6.0]))
>>> y
array([1., 5., 6., 2.])
>>> [unthunk(t) for t in pb(np.array([1.0, 2.0, 3.0, 4.0]))]
[NoTangent(), array([1., 4.]), NoTangent(), array([2., 3.])]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    Thunk,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)

from . import _numpy_ranges, _numpy_selection  # noqa: F401  (imported for their registrations)
from ._numpy_index_tricks import bound_cotangent, bound_tangent, differentiable_slice
from ._numpy_linear import dense, project_nested, register_linear, tangent_dtype
from ._numpy_ranges import truncated_pullback
from ._numpy_selection import no_out
from ._numpy_shape import _pieces, _split_adjoint, _vstack_adjoint, gather_adjoint
from ._sequences import seq_entries
from ._util import asarray

__all__ = ["copy_sources"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def _thunk(x: Any, compute: Callable[[], Any]) -> Thunk:
    """The cotangent of ``x``, computed (and projected) only if someone asks."""
    return Thunk(lambda: project_nested(x, compute()))


# --- copying functions: where each output entry comes from ---------------------------


def copy_sources(build: Callable[[list], Any], shapes: list) -> np.ndarray:
    """Where the output entries of a function that copies entries come from.

    ``build(arrays)`` computes the function from one integer array per
    array argument (of that argument's shape). The arguments' entries are
    numbered 1, 2, ... across all of them, end to end, in row-major order;
    the result holds each output entry's number (0 for a constant entry).

    >>> copy_sources(lambda a: np.insert(a[0], 1, a[1]), [(2,), ()])
    array([1, 3, 2])
    """
    arrays, start = [], 1
    for shape in shapes:
        n = math.prod(shape)
        arrays.append(np.arange(start, start + n, dtype=np.intp).reshape(shape))
        start += n
    return asarray(build(arrays))


def _gather(src: np.ndarray, ẋs: list, xs: list, like: Any) -> Any:
    """The pushforward of a copying function: each output entry's source tangent."""
    parts = [np.zeros(1, tangent_dtype(like))] + [np.ravel(dense(t, x)) for t, x in zip(ẋs, xs)]
    return np.concatenate(parts)[src]


def _scatter(src: np.ndarray, ȳ: Any, shapes: list) -> list:
    """The pullback of a copying function: one cotangent per argument, scatter-added."""
    ȳ = asarray(ȳ).ravel()
    where = src.ravel()
    total = 1 + sum(math.prod(s) for s in shapes)
    flat = np.bincount(where, ȳ.real, minlength=total)
    if np.iscomplexobj(ȳ):
        flat = flat + 1j * np.bincount(where, ȳ.imag, minlength=total)
    out, start = [], 1
    for shape in shapes:
        n = math.prod(shape)
        out.append(flat[start : start + n].reshape(shape))
        start += n
    return out


# --- append, insert ----------------------------------------------------------------------


def _append_split(ȳ: Any, arr: Any, values: Any, axis: Any) -> tuple:
    ȳ = asarray(ȳ)
    if axis is None:
        n = np.size(arr)
        return ȳ[:n].reshape(np.shape(arr)), ȳ[n:].reshape(np.shape(values))
    n = np.shape(arr)[axis]
    head, tail = np.split(ȳ, [n], axis=axis)
    return head, tail


@rrule.register(np.append)
def append_rrule(arr: Any, values: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.append``: the cotangent is split back into the two pieces."""
    y = np.append(arr, values, *rest, **kw)
    axis = kw.get("axis", rest[0] if rest else None)
    nots = (_NO,) * len(rest)

    def append_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, _ZERO, *nots)
        parts = Thunk(lambda: _append_split(ȳ, arr, values, axis))
        da = _thunk(arr, lambda: unthunk(parts)[0])
        dv = _thunk(values, lambda: unthunk(parts)[1])
        return (_NO, da, dv, *nots)

    return y, append_pullback


@frule.register(np.append)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    (ȧ, v̇), (arr, values, *rest) = args[:2], args[n:]
    y = np.append(arr, values, *rest, **kw)
    ȧ, v̇ = unthunk(ȧ), unthunk(v̇)
    if isinstance(ȧ, AbstractZero) and isinstance(v̇, AbstractZero):
        return y, _ZERO
    return y, project_nested(y, np.append(dense(ȧ, arr), dense(v̇, values), *rest, **kw))


def _insert_sources(arr: Any, obj: Any, values: Any, axis: Any) -> np.ndarray:
    shapes = [np.shape(arr), np.shape(values)]
    return copy_sources(lambda a: np.insert(a[0], obj, a[1], axis), shapes)


def _insert_axis(rest: tuple, kw: dict) -> Any:
    return kw.get("axis", rest[0] if rest else None)


@rrule.register(np.insert)
def insert_rrule(arr: Any, obj: Any, values: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.insert``: ``values`` broadcast into the gaps get summed cotangents."""
    y = np.insert(arr, obj, values, *rest, **kw)
    nots = (_NO,) * len(rest)
    if y.dtype.kind in "biu":  # an integer array truncates what is inserted
        return y, truncated_pullback(3 + len(rest))
    axis = _insert_axis(rest, kw)

    def insert_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, _NO, _ZERO, *nots)
        shapes = [np.shape(arr), np.shape(values)]
        parts = Thunk(lambda: _scatter(_insert_sources(arr, obj, values, axis), ȳ, shapes))
        da = _thunk(arr, lambda: unthunk(parts)[0])
        dv = _thunk(values, lambda: unthunk(parts)[1])
        return (_NO, da, _NO, dv, *nots)

    return y, insert_pullback


@frule.register(np.insert)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    (ȧ, _, v̇), (arr, obj, values, *rest) = args[:3], args[n:]
    y = np.insert(arr, obj, values, *rest, **kw)
    if y.dtype.kind in "biu":
        return y, _NO
    ȧ, v̇ = unthunk(ȧ), unthunk(v̇)
    if isinstance(ȧ, AbstractZero) and isinstance(v̇, AbstractZero):
        return y, _ZERO
    src = _insert_sources(arr, obj, values, _insert_axis(tuple(rest), kw))
    return y, project_nested(y, _gather(src, [ȧ, v̇], [arr, values], y))


# --- stacking and splitting ---------------------------------------------------------------


def _column_stack_adjoint(ȳ: Any, xs: Any) -> list:
    shapes = [(np.size(x), 1) if np.ndim(x) < 2 else np.shape(x) for x in xs]
    return _pieces(asarray(ȳ), xs, shapes, 1)


def _dstack_adjoint(ȳ: Any, xs: Any) -> list:
    return _pieces(asarray(ȳ), xs, [np.shape(np.atleast_3d(x)) for x in xs], 2)


def _split_along(axis_of: Callable[[int], int]) -> Callable[..., Any]:
    """The adjoint of ``hsplit``/``vsplit``/``dsplit``: ``split`` along their axis."""

    def adjoint(ȳ: Any, x: Any, indices_or_sections: Any) -> Any:
        return _split_adjoint(ȳ, x, indices_or_sections, axis_of(np.ndim(x)))

    return adjoint


register_linear(np.column_stack, _column_stack_adjoint, "column_stack", sequence=True)
register_linear(np.dstack, _dstack_adjoint, "dstack", sequence=True)
if hasattr(np, "row_stack"):  # deprecated in numpy 2.0: vstack under another name
    register_linear(np.row_stack, _vstack_adjoint, "row_stack", sequence=True)
register_linear(np.hsplit, _split_along(lambda ndim: 1 if ndim > 1 else 0), "hsplit")
register_linear(np.vsplit, _split_along(lambda ndim: 0), "vsplit")
register_linear(np.dsplit, _split_along(lambda ndim: 2), "dsplit")
register_linear(np.delete, gather_adjoint(np.delete), "delete")


def _check_compress(x: Any, condition: Any, axis: Any = None, out: Any = None) -> None:
    no_out("compress", out)


register_linear(
    np.ndarray.compress,
    gather_adjoint(np.ndarray.compress),
    "ndarray_compress",
    check=_check_compress,
)


@rrule.register(np.compress)
def compress_rrule(condition: Any, a: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.compress(condition, a, axis)``: the kept entries' cotangents."""
    _check_compress(a, condition, *rest, **kw)
    y = np.compress(condition, a, *rest, **kw)
    nots = (_NO,) * len(rest)

    def compress_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, _ZERO, *nots)
        kept = gather_adjoint(lambda x: np.compress(condition, x, *rest, **kw))
        return (_NO, _NO, project_nested(a, kept(ȳ, a)), *nots)

    return y, compress_pullback


@frule.register(np.compress)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    ȧ, (condition, a, *rest) = unthunk(args[1]), args[n:]
    _check_compress(a, condition, *rest, **kw)
    y = np.compress(condition, a, *rest, **kw)
    if isinstance(ȧ, AbstractZero):
        return y, _ZERO
    return y, np.compress(condition, dense(ȧ, a), *rest, **kw)


# --- np.r_ and np.c_ ------------------------------------------------------------------

_CONCATENATORS = type(np.r_) | type(np.c_)


def _concatenation_plan(key: Any) -> tuple[list, list, Callable[[list], Any]]:
    """The data items of an ``r_``/``c_`` key, and a builder replacing them by arrays.

    Data items are arrays, lists, numbers and slices with float or complex bounds
    (they stand for the 1-d array of their values); integer slices and strings are
    constants. ``build(arrays)`` is the key with each data item replaced by the
    matching integer array (a 0-d one for a number: numpy lays it out as it does the
    number; a 1-d one for a slice, laid out as numpy lays out its values) and each
    constant slice by zeros of the length it stands for (``arange`` or ``linspace``).
    """
    items = list(key) if type(key) is tuple else [key]
    data = [
        i
        for i, it in enumerate(items)
        if differentiable_slice(it) or not isinstance(it, (slice, str))
    ]
    constants = list(items)
    for i, it in enumerate(items):
        if isinstance(it, slice):
            constants[i] = np.zeros(_slice_length(it), np.intp)

    def build(arrays: list) -> Any:
        filled = list(constants)
        for i, a in zip(data, arrays):
            filled[i] = a
        return tuple(filled) if type(key) is tuple else filled[0]

    return items, data, build


def _slice_length(s: slice) -> int:
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, (complex, np.complexfloating)):
        return int(abs(step))  # numpy: linspace(start, stop, num=int(abs(step)))
    return len(np.arange(start, s.stop, step))


def _check_key(key: Any) -> None:
    if isinstance(key, str):
        raise NotImplementedError(
            "np.r_['...'] / np.c_['...'] with a string builds a matrix from the caller's "
            "variables by name (np.bmat), which a rule cannot see.\nTo fix: pass the arrays "
            "themselves, as in np.r_[a, b] or np.block([[a, b]])."
        )


def _concatenator_sources(obj: Any, key: Any) -> tuple[np.ndarray, list, list]:
    items, data, build = _concatenation_plan(key)
    shapes = [
        (_slice_length(items[i]),) if isinstance(items[i], slice) else np.shape(items[i])
        for i in data
    ]
    src = copy_sources(lambda arrays: obj[build(arrays)], shapes)
    return src, [items[i] for i in data], data


def _item_shape(x: Any) -> tuple:
    return (_slice_length(x),) if isinstance(x, slice) else np.shape(x)


def _item_cotangent(x: Any, part: np.ndarray) -> Any:
    return bound_cotangent(x, part) if isinstance(x, slice) else project_nested(x, part)


@rrule.register(operator.getitem)
def concatenator_getitem_rrule(obj: _CONCATENATORS, key: Any) -> Any:
    """rrule of ``np.r_[...]`` / ``np.c_[...]``: linear in the key's arrays and numbers."""
    _check_key(key)
    y = obj[key]

    def concatenator_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, _ZERO)
        src, xs, data = _concatenator_sources(obj, key)
        parts = _scatter(src, ȳ, [_item_shape(x) for x in xs])
        if type(key) is not tuple:
            return (_NO, _NO, _item_cotangent(key, parts[0]) if parts else _NO)
        entries: list = [_NO] * len(key)
        for i, x, part in zip(data, xs, parts):
            entries[i] = _item_cotangent(x, part)
        return (_NO, _NO, _NO if all(e is _NO for e in entries) else tuple(entries))

    return y, concatenator_pullback


@frule.register(operator.getitem)
def _(ḟ: Any, ȯ: Any, k̇: Any, obj: _CONCATENATORS, key: Any) -> Any:
    _check_key(key)
    y = obj[key]
    k̇ = unthunk(k̇)
    if isinstance(k̇, AbstractZero):
        return y, _ZERO
    src, xs, data = _concatenator_sources(obj, key)
    if type(key) is tuple:
        tangents = [seq_entries(k̇, len(key))[i] for i in data]
    else:
        tangents = [k̇] if data else []
    dtype = tangent_dtype(y)
    tangents = [
        bound_tangent(x, t, dtype) if isinstance(x, slice) else t for x, t in zip(xs, tangents)
    ]
    xs = [np.zeros(_item_shape(x)) if isinstance(x, slice) else x for x in xs]
    ẏ = _gather(src, tangents, xs, y)
    return y, project_nested(y, ẏ.reshape(np.shape(y)))
