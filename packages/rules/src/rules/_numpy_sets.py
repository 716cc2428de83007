"""Rules for numpy's set operations: ``union1d``, ``intersect1d``, ``setdiff1d``,
``setxor1d`` and the array-API ``unique_values``, ``unique_counts``,
``unique_inverse``, ``unique_all``.

Each output value is a copy of input entries of equal value, so the rules are
gathers. Where several entries hold the value (duplicates within an array,
or the same value in both arrays, as every value of ``intersect1d`` is) they
share its cotangent equally, ``∂x_i = ū_k / count_k``, and the value moves
with the mean of their tangents: the convention of ``np.unique``'s rule (and
of ``np.max`` at ties), symmetric in the arguments, and the derivative along
every direction that keeps the ties. (JAX sends it to one chosen entry
instead; any convex combination is a valid one-sided choice.) Which entries
count, per function:

* ``union1d``, ``intersect1d``, ``setxor1d``: the entries of both arrays equal
  to the value (for ``setxor1d`` they lie in one array only);
* ``setdiff1d``: the entries of ``ar1`` only: ``ar2`` decides which values
  stay, so it gets a zero cotangent.

Indices, inverse indices and counts are integers: ``NoTangent()``; so are the
flags (``assume_unique``, ``return_indices``) when passed positionally. NaNs
never compare equal, so a NaN value is matched to the NaN entries by position
in the sorted order (its derivative has no meaning anyway).

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.intersect1d, np.array([3.0, 1.0, 2.0]), np.array([2.0, 3.0, 3.0]))
>>> y, pb(np.array([6.0, 30.0]))[1:]   # 3.0 appears thrice, 2.0 twice
(array([2., 3.]), (array([10.,  0.,  3.]), array([ 3., 10., 10.])))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._linalg_util import entries
from ._numpy_order_statistics import scatter_add
from ._numpy_statistics import split_tangents
from ._util import asarray, is_zero, project

__all__ = []

_NO = NoTangent()
_ZERO = ZeroTangent()


def _owners(values: Any, sources: list) -> tuple:
    """For each entry of the flattened, concatenated ``sources``, the position in
    ``values`` that holds its value (``-1``: none) and each value's number of entries."""
    values = np.ravel(values)
    flat = np.concatenate([np.ravel(s) for s in sources]) if sources else np.zeros(0)
    if values.size == 0 or flat.size == 0:
        return np.full(flat.size, -1), np.zeros(values.size, np.intp)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    at = np.minimum(np.searchsorted(ordered, flat), values.size - 1)
    hit = (ordered[at] == flat) | (np.isnan(ordered[at]) & np.isnan(flat))
    owner = np.where(hit, order[at], -1)
    return owner, np.bincount(owner[hit], minlength=values.size)


def _integer_fields(Ω: Any) -> dict:
    """``NoTangent()`` for each field of a ``unique_*`` result but its values."""
    return {name: _NO for name in Ω._fields if name != "values"}


non_differentiable(_owners)
non_differentiable(_integer_fields)


def _split(flat: Any, sources: list) -> list:
    """``flat`` cut into pieces shaped like ``sources``."""
    sizes = np.cumsum([np.size(s) for s in sources])[:-1]
    return [p.reshape(np.shape(s)) for p, s in zip(np.split(flat, sizes), sources)]


def _gather_pullback(ū: Any, values: Any, sources: list) -> list:
    """The cotangent of each source from that of the values: shared among equal entries."""
    owner, counts = _owners(values, sources)
    hit = owner >= 0
    at = np.where(hit, owner, 0)
    ū = np.ravel(asarray(ū))
    share = ū[at] / np.maximum(counts, 1)[at] if ū.size else np.zeros(owner.size)
    flat = np.where(hit, share, 0)
    return [project(s, d) for s, d in zip(sources, _split(flat, sources))]


def _gather_pushforward(ẋs: list, values: Any, sources: list) -> Any:
    """The tangent of the values: the mean of the tangents of their entries."""
    owner, counts = _owners(values, sources)
    hit = owner >= 0
    dense = [
        np.zeros(np.shape(s)) if is_zero(t) else np.broadcast_to(t, np.shape(s))
        for t, s in zip(ẋs, sources)
    ]
    flat = np.concatenate([np.ravel(d) for d in dense]) if dense else np.zeros(0)
    sums = scatter_add(owner[hit], flat[hit], np.size(values))
    return project(values, np.reshape(sums / np.maximum(counts, 1), np.shape(values)))


def _register_set(f: Any, n_arrays: int, n_sources: int) -> None:
    """Rules for ``f(ar1[, ar2], *flags, **kw)``: the first ``n_sources`` arrays carry
    the values; a tuple output (``return_indices``) has integers after the values."""
    name = f.__name__

    def set_rrule(*args: Any, **kwargs: Any) -> Any:
        arrays, flags = list(args[:n_arrays]), args[n_arrays:]
        sources = arrays[:n_sources]
        Ω = f(*args, **kwargs)

        def set_pullback(ȳ: Any) -> tuple:
            ū = entries(ȳ, len(Ω))[0] if isinstance(Ω, tuple) else unthunk(ȳ)
            if is_zero(ū):
                return (_NO, *(_ZERO,) * n_arrays, *(_NO,) * len(flags))
            values = Ω[0] if isinstance(Ω, tuple) else Ω
            dxs = _gather_pullback(ū, values, sources)
            return (_NO, *dxs, *(_ZERO,) * (n_arrays - n_sources), *(_NO,) * len(flags))

        set_pullback.__name__ = set_pullback.__qualname__ = f"{name}_pullback"
        return Ω, set_pullback

    def set_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        tangents, primals = split_tangents(args)
        sources = list(primals[:n_sources])
        Ω = f(*primals, **kwargs)
        ẋs = [unthunk(t) for t in tangents[:n_sources]]
        values = Ω[0] if isinstance(Ω, tuple) else Ω
        if all(is_zero(t) for t in ẋs):
            return Ω, _ZERO
        u̇ = _gather_pushforward(ẋs, values, sources)
        if hasattr(Ω, "_fields"):  # unique_*'s namedtuples
            return Ω, Tangent[type(Ω)](values=u̇, **_integer_fields(Ω))
        if isinstance(Ω, tuple):
            return Ω, Tangent[tuple](u̇, *(_NO,) * (len(Ω) - 1))
        return Ω, u̇

    set_rrule.__name__ = set_rrule.__qualname__ = f"{name}_rrule"
    set_frule.__name__ = set_frule.__qualname__ = f"{name}_frule"
    set_rrule.__doc__ = f"rrule of ``np.{name}``: equal entries share a value's cotangent."
    set_frule.__doc__ = f"frule of ``np.{name}``: a value moves with the mean of its entries."
    rrule.register(f)(set_rrule)
    frule.register(f)(set_frule)


for _f, _n_arrays, _n_sources in (
    (np.union1d, 2, 2),
    (np.intersect1d, 2, 2),
    (np.setxor1d, 2, 2),
    (np.setdiff1d, 2, 1),
    (np.unique_values, 1, 1),
    (np.unique_counts, 1, 1),
    (np.unique_inverse, 1, 1),
    (np.unique_all, 1, 1),
):
    _register_set(_f, _n_arrays, _n_sources)
