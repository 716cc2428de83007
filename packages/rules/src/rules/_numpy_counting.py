"""Rules for numpy's counting functions: ``unique``, ``bincount``, ``histogram``,
``histogram_bin_edges``.

Counts are integers and have no derivative; what does have one:

* ``unique``'s values. Each unique value stands for a group of equal entries,
  and the group shares its cotangent equally (``∂x_i = ū_k / count_k``), as
  ``np.max`` splits its cotangent among tied maxima; the pushforward is the
  mean of the group's tangents. The extra outputs (``return_index``,
  ``return_inverse``, ``return_counts``) are integers.
* ``bincount``'s ``weights`` (``out[k] = Σ_{x_i = k} w_i``, linear), when
  passed positionally (``np.bincount(x, w)``: keyword arguments get no
  derivative).
* ``histogram``'s weights (positional), and its bin edges: with an integer or
  string ``bins`` the edges are ``linspace(lo, hi, B + 1)`` with ``lo, hi`` the
  data's minimum and maximum (their cotangent goes to those entries, ties
  sharing it) or a positional ``range``; an array ``bins`` is passed through.
  With ``density=True`` the heights ``c_k / (Σc · Δ_k)`` also depend on the bin
  widths. The counts themselves are piecewise constant in the data: zero.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.unique, np.array([2.0, 1.0, 2.0]))
>>> y, pb(np.array([1.0, 10.0]))[1]   # the two 2s share their value's cotangent
(array([1., 2.]), array([5., 1., 5.]))
>>> rrule(np.bincount, np.array([0, 1, 1]), np.array([0.5, 1.0, 2.0]))[1](np.array([1.0, 3.0]))[2]
array([1., 3., 3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from rulescore import NoTangent, Tangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._linalg_util import entries
from ._numpy_order_statistics import scatter_add
from ._numpy_reductions import bind_options
from ._numpy_statistics import argument, split_tangents
from ._util import asarray, is_zero, project

__all__ = []

_NO = NoTangent()
_ZERO = ZeroTangent()

# --- unique -----------------------------------------------------------------------------

_UNIQUE_ARGS = ("return_index", "return_inverse", "return_counts", "axis")


def _unique_groups(x: Any, opts: dict) -> tuple:
    """numpy.unique of ``x`` with the group of every entry (``inverse``) and the
    group sizes; and the axis the groups run along (None: flattened)."""
    kw = {k: v for k, v in opts.items() if k in ("axis", "equal_nan", "sorted")}
    u, inverse, counts = np.unique(x, return_inverse=True, return_counts=True, **kw)
    return u, np.ravel(inverse), counts, opts.get("axis")


def _as_rows(t: Any, axis: Any) -> np.ndarray:
    """``t`` with the grouped axis first and the rest merged: (n, r)."""
    t = asarray(t)
    if axis is None:
        return t.reshape(-1, 1)
    t = np.moveaxis(t, normalize_axis_index(axis, t.ndim), 0)
    return t.reshape(t.shape[0], -1)


def _from_rows(t: np.ndarray, like_shape: tuple, axis: Any) -> np.ndarray:
    if axis is None:
        return t.reshape(like_shape)
    ax = normalize_axis_index(axis, len(like_shape))
    moved = (like_shape[ax], *like_shape[:ax], *like_shape[ax + 1 :])
    return np.moveaxis(t.reshape(moved), 0, ax)


def _unique_outputs(ȳ: Any, Ω: Any) -> Any:
    """The cotangent of the unique values from that of ``unique``'s output."""
    if isinstance(Ω, tuple):
        return entries(ȳ, len(Ω))[0]
    return unthunk(ȳ)


def unique_rrule(ar: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.unique``: each group of equal entries shares its value's cotangent."""
    opts = bind_options(np.unique, _UNIQUE_ARGS, args, kwargs)
    rest = (_NO,) * len(args)
    Ω = np.unique(ar, *args, **kwargs)

    def unique_pullback(ȳ: Any) -> tuple:
        ū = _unique_outputs(ȳ, Ω)
        if is_zero(ū):
            return (_NO, _ZERO, *rest)
        u, inverse, counts, axis = _unique_groups(ar, opts)
        share = _as_rows(np.reshape(ū, u.shape), axis) / counts[:, None]
        dx = _from_rows(share[inverse], np.shape(ar), axis)
        return (_NO, project(ar, dx), *rest)

    return Ω, unique_pullback


def unique_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.unique``: each unique value moves with the mean of its group."""
    (ẋ, *_), (ar, *extra) = split_tangents(args)
    opts = bind_options(np.unique, _UNIQUE_ARGS, tuple(extra), kwargs)
    Ω = np.unique(ar, *extra, **kwargs)
    ẋ = unthunk(ẋ)
    if is_zero(ẋ):
        return Ω, _ZERO
    u, inverse, counts, axis = _unique_groups(ar, opts)
    rows = _as_rows(np.broadcast_to(ẋ, np.shape(ar)), axis)
    n_groups, r = counts.size, rows.shape[1]
    idx = (inverse[:, None] * r + np.arange(r)).ravel()
    means = scatter_add(idx, rows.ravel(), n_groups * r).reshape(n_groups, r) / counts[:, None]
    u̇ = project(u, _from_rows(means, u.shape, axis))
    if isinstance(Ω, tuple):
        return Ω, Tangent[tuple](u̇, *([_NO] * (len(Ω) - 1)))
    return Ω, u̇


rrule.register(np.unique)(unique_rrule)
frule.register(np.unique)(unique_frule)


# --- bincount ---------------------------------------------------------------------------


@rrule.register(np.bincount)
def bincount_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.bincount``: a positional ``weights`` gets ``w̄_i = ȳ[x_i]``."""
    Ω = np.bincount(x, *args, **kwargs)
    w_slot = bool(args) and args[0] is not None

    def bincount_pullback(ȳ: Any) -> tuple:
        rest = [_NO] * len(args)
        if w_slot:
            ȳ = unthunk(ȳ)
            rest[0] = _ZERO if is_zero(ȳ) else project(args[0], asarray(ȳ)[asarray(x)])
        return (_NO, _NO, *rest)

    return Ω, bincount_pullback


@frule.register(np.bincount)
def bincount_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.bincount``: ``bincount(x, ẇ)``, linear in the weights."""
    tangents, (x, *extra) = split_tangents(args)
    Ω = np.bincount(x, *extra, **kwargs)
    if len(extra) == 0 or extra[0] is None or is_zero(unthunk(tangents[1])):
        return Ω, _NO if Ω.dtype.kind in "iu" else _ZERO
    minlength = extra[1] if len(extra) > 1 else kwargs.get("minlength", 0)
    return Ω, np.bincount(x, asarray(unthunk(tangents[1])), minlength=minlength)


# --- histogram --------------------------------------------------------------------------

_HISTOGRAM_ARGS = ("bins", "range", "density", "weights")
_EDGES_ARGS = ("bins", "range", "weights")


def _edge_source(a: Any, opts: dict, edges: np.ndarray) -> tuple:
    """How the edges depend on the arguments: ``("bins", None)`` (an array passed
    through), ``("range", None)`` or ``("data", (argmin mask, argmax mask))``."""
    if np.ndim(opts.get("bins", 10)) == 1:
        return "bins", None
    if opts.get("range") is not None:
        return "range", None
    a = np.ravel(a)
    return "data", (a == a.min(), a == a.max())


def _endpoint_weights(edges: np.ndarray) -> tuple:
    """∂e_k/∂lo and ∂e_k/∂hi for ``e = linspace(lo, hi, B + 1)``."""
    t = np.arange(edges.size) / (edges.size - 1)
    return 1 - t, t


def _bin_of(a: Any, edges: np.ndarray) -> tuple:
    """The bin of every entry of ``a`` (flattened) and whether it falls in one."""
    a = np.ravel(a)
    b = np.searchsorted(edges, a, side="right") - 1
    b = np.where(a == edges[-1], edges.size - 2, b)
    inside = (a >= edges[0]) & (a <= edges[-1])
    return np.clip(b, 0, edges.size - 2), inside


def _histogram_edges_pullback(ē: Any, a: Any, opts: dict, edges: np.ndarray) -> tuple:
    """Cotangents ``(ā, bins̄, range̅)`` from the edges' cotangent ``ē``."""
    if is_zero(ē):
        return _ZERO, _ZERO, _ZERO
    source, masks = _edge_source(a, opts, edges)
    if source == "bins":
        return _ZERO, ē, _ZERO
    wlo, whi = _endpoint_weights(edges)
    lō, hī = np.sum(ē * wlo), np.sum(ē * whi)
    if source == "range":
        return _ZERO, _ZERO, (lō, hī)
    at_min, at_max = masks
    da = at_min * (lō / np.sum(at_min)) + at_max * (hī / np.sum(at_max))
    return np.reshape(da, np.shape(a)), _ZERO, _ZERO


def _histogram_edges_pushforward(ȧ: Any, ḃ: Any, ṙ: Any, a: Any, opts: dict, edges: np.ndarray):
    source, masks = _edge_source(a, opts, edges)
    if source == "bins":
        return _ZERO if is_zero(ḃ) else asarray(ḃ, dtype=edges.dtype)
    if source == "range":
        if is_zero(ṙ):
            return _ZERO
        l̇o, ḣi = (0.0 if is_zero(t) else t for t in entries(ṙ, 2))
    else:
        if is_zero(ȧ):
            return _ZERO
        ȧ = np.ravel(np.broadcast_to(ȧ, np.shape(a)))
        at_min, at_max = masks
        l̇o, ḣi = np.mean(ȧ[at_min]), np.mean(ȧ[at_max])
    wlo, whi = _endpoint_weights(edges)
    return wlo * l̇o + whi * ḣi


def _slots(args: tuple, names: tuple) -> dict:
    """The positions of the differentiable arguments passed positionally: weights,
    a range, and bins given as an array of edges (not a count or a rule's name)."""
    slots = {n: i for i, n in enumerate(names[: len(args)]) if args[i] is not None}
    slots.pop("density", None)
    if "bins" in slots and np.ndim(args[slots["bins"]]) != 1:
        del slots["bins"]
    return slots


def _rest(args: tuple, slots: dict, values: dict) -> list:
    """One cotangent per optional positional argument: ``values[name]`` (projected; zero
    if missing) at each differentiable slot, ``NoTangent()`` elsewhere."""
    names = {i: n for n, i in slots.items()}
    return [
        _NO if i not in names else _projected(args[i], values.get(names[i], _ZERO))
        for i in range(len(args))
    ]


def _projected(primal: Any, value: Any) -> Any:
    return value if is_zero(value) else project(primal, value)


def histogram_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.histogram``: weights, bins, range and the data's extremes (see module)."""
    opts = bind_options(np.histogram, _HISTOGRAM_ARGS, args, kwargs)
    weights = argument(args, kwargs, 3, "weights")
    slots = _slots(args, _HISTOGRAM_ARGS)
    Ω = np.histogram(a, *args, **kwargs)
    hist, edges = Ω

    def histogram_pullback(ȳ: Any) -> tuple:
        h̄, ē = entries(ȳ, 2)
        if is_zero(h̄) and is_zero(ē):
            return (_NO, _ZERO, *_rest(args, slots, {}))
        ē = _ZERO if is_zero(ē) else asarray(ē, dtype=np.float64)
        c̄: Any = _ZERO
        if not is_zero(h̄):
            h̄ = np.real(asarray(h̄, dtype=np.result_type(h̄, 1.0)))
            c̄ = h̄
            if opts.get("density"):
                width, total = np.diff(edges), _bin_totals(a, weights, edges).sum()
                c̄ = h̄ / (width * total) - np.sum(h̄ * hist) / total
                de = -h̄ * hist / width  # ∂/∂Δ_k, Δ_k = e_{k+1} - e_k
                ē = (
                    (0 if is_zero(ē) else ē)
                    + np.concatenate([[0.0], de])
                    - np.concatenate([de, [0.0]])
                )
        da, db, dr = _histogram_edges_pullback(ē, a, opts, edges)
        dw: Any = _ZERO
        if not is_zero(c̄) and "weights" in slots:
            b, inside = _bin_of(a, edges)
            dw = np.where(inside, c̄[b], 0).reshape(np.shape(weights))
        rest = _rest(args, slots, {"weights": dw, "bins": db, "range": dr})
        return (_NO, _projected(a, da), *rest)

    return Ω, histogram_pullback


def _bin_totals(a: Any, weights: Any, edges: np.ndarray) -> np.ndarray:
    """The (weighted) count per bin, before any density normalisation."""
    return np.histogram(a, edges, None, None, weights)[0]  # positional: weights carry derivatives


def histogram_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.histogram``."""
    tangents, (a, *extra) = split_tangents(args)
    opts = bind_options(np.histogram, _HISTOGRAM_ARGS, tuple(extra), kwargs)
    slots = _slots(tuple(extra), _HISTOGRAM_ARGS)
    Ω = np.histogram(a, *extra, **kwargs)
    hist, edges = Ω

    def tangent(name: str) -> Any:
        return unthunk(tangents[1 + slots[name]]) if name in slots else _ZERO

    ė = _histogram_edges_pushforward(
        unthunk(tangents[0]), tangent("bins"), tangent("range"), a, opts, edges
    )
    ẇ = tangent("weights")
    ċ: Any = _ZERO
    if not is_zero(ẇ):
        b, inside = _bin_of(a, edges)
        ċ = np.bincount(b[inside], np.ravel(ẇ)[inside], minlength=edges.size - 1)
    ḣ: Any = ċ
    if opts.get("density") and not (is_zero(ċ) and is_zero(ė)):
        width = np.diff(edges)
        total = _bin_totals(a, argument(extra, kwargs, 3, "weights"), edges).sum()
        ḣ = 0.0
        if not is_zero(ċ):
            ḣ = ċ / (width * total) - hist * (np.sum(ċ) / total)
        if not is_zero(ė):
            ḣ = ḣ - hist * np.diff(ė) / width
    if is_zero(ḣ) and is_zero(ė):
        return Ω, _ZERO
    ḣ = ḣ if is_zero(ḣ) else project(hist, ḣ) if hist.dtype.kind == "f" else _ZERO
    return Ω, Tangent[tuple](ḣ, ė)


rrule.register(np.histogram)(histogram_rrule)
frule.register(np.histogram)(histogram_frule)


@rrule.register(np.histogram_bin_edges)
def histogram_bin_edges_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.histogram_bin_edges``: see :func:`histogram_rrule`."""
    opts = bind_options(np.histogram_bin_edges, _EDGES_ARGS, args, kwargs)
    slots = _slots(args, _EDGES_ARGS)
    edges = np.histogram_bin_edges(a, *args, **kwargs)

    def histogram_bin_edges_pullback(ē: Any) -> tuple:
        ē = unthunk(ē)
        da, db, dr = _histogram_edges_pullback(
            _ZERO if is_zero(ē) else asarray(ē, dtype=np.float64), a, opts, edges
        )
        # the edges never depend on the weights: their slot stays zero
        return (_NO, _projected(a, da), *_rest(args, slots, {"bins": db, "range": dr}))

    return edges, histogram_bin_edges_pullback


@frule.register(np.histogram_bin_edges)
def histogram_bin_edges_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.histogram_bin_edges``."""
    tangents, (a, *extra) = split_tangents(args)
    opts = bind_options(np.histogram_bin_edges, _EDGES_ARGS, tuple(extra), kwargs)
    slots = _slots(tuple(extra), _EDGES_ARGS)
    edges = np.histogram_bin_edges(a, *extra, **kwargs)

    def tangent(name: str) -> Any:
        return unthunk(tangents[1 + slots[name]]) if name in slots else _ZERO

    ė = _histogram_edges_pushforward(
        unthunk(tangents[0]), tangent("bins"), tangent("range"), a, opts, edges
    )
    return edges, ė if is_zero(ė) else project(edges, ė)


# Bookkeeping: argument positions, bin indices, extreme-entry masks. Nothing flows
# through them (an AD that differentiates the rules' bodies reads these as constants).
for _helper in (_slots, _bin_of, _edge_source):
    non_differentiable(_helper)
