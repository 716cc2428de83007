"""Functional (out-of-place) forms of numpy's in-place array functions, with rules.

numpy writes into its first argument in ``np.put_along_axis``, ``np.fill_diagonal``,
``np.copyto``, ``np.place``, ``np.putmask``, ``np.put`` and ``ufunc.at``, and returns
None; an AD cannot follow a write into an existing array. The functions here are
their functional forms, as JAX's ``jnp.put_along_axis(..., inplace=False)`` and
``x.at[i].add(v)`` are. The convention, for every one of them:

* the **first argument** is the array numpy would write (``arr``, ``a``, ``dst``);
  the other arguments and keywords are numpy's own (same names, defaults,
  broadcasting, casting and errors: numpy itself does the work, on a copy);
* the **result is a new array**, equal to what the first argument holds after
  numpy's call;
* the **input is never changed**.

``functional_form(f)`` maps an in-place numpy callable to its functional form (the
AD rewrites ``np.put_along_axis(a, i, v, axis=1)`` on a local array into
``a = functional_form(np.put_along_axis)(a, i, v, axis=1)``).

Each has an ``rrule`` and an ``frule``, differentiable in the written array and in
the values written (``values``, ``val``, ``src``, ``vals``, ``v``, ``b``); indices,
masks, axes and modes get ``NoTangent()``. An entry that numpy overwrites takes the
derivative of the value written there (where an index repeats, of the value numpy
wrote last: numpy's own call on an array of value numbers decides which), the
other entries keep the input's; a value that broadcasts, or that numpy repeats to
fill the entries (``np.place``, ``np.put``), gets the sum of the cotangents of the
entries it went to. ``ufunc_at`` has rules for ``np.add`` and ``np.subtract``
(repeated indices accumulate), ``np.multiply`` (each factor's derivative is the
product of the others at its entry, computed without division, so zeros are
exact) and ``np.negative`` (an entry negated twice is unchanged). A result of
integer dtype has no derivative (``NoTangent()``). The pullbacks are sums of
numpy calls with rules (``np.where``, indexing, ``ufunc_at``), so an AD can
differentiate them again.

>>> import numpy as np
>>> from rules import functional
>>> a = np.zeros((2, 3))
>>> functional.put_along_axis(a, np.array([[2], [0]]), 5.0, axis=1)
array([[0., 0., 5.],
       [5., 0., 0.]])
>>> a  # unchanged
array([[0., 0., 0.],
       [0., 0., 0.]])
>>> functional.ufunc_at(np.zeros(3), [0, 0, 2], 1.0, ufunc=np.add)
array([2., 0., 1.])

See also: ``rules.inventory()``, which lists these under ``rules.functional``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._numpy_linear import dense, project_nested, tangent_dtype
from ._util import asarray, is_zero, project, unbroadcast

__all__ = [
    "copyto",
    "fill_diagonal",
    "functional_form",
    "place",
    "put",
    "put_along_axis",
    "putmask",
    "ufunc_at",
]

_NO = NoTangent()
_ZERO = ZeroTangent()

_Casting = Literal["no", "equiv", "safe", "same_kind", "same_value", "unsafe"]
_Mode = Literal["raise", "wrap", "clip"]


def _copy(a: Any) -> np.ndarray:
    """A new array holding ``a`` (an array or array-like), for numpy to write into."""
    return np.array(a, copy=True)


def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> np.ndarray:
    """``np.put_along_axis(arr, indices, values, axis)`` on a copy of ``arr``, returned.

    ``values`` broadcasts against ``indices`` as in numpy; where an index repeats,
    the value written last wins (numpy's own call decides).

    >>> import numpy as np
    >>> put_along_axis(np.zeros((2, 2)), np.array([[1], [0]]), np.array([[3.0], [4.0]]), 1)
    array([[0., 3.],
           [4., 0.]])

    See also: ``numpy.put_along_axis``, ``numpy.take_along_axis``.
    """
    out = _copy(arr)
    np.put_along_axis(out, indices, values, axis)
    return out


def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> np.ndarray:
    """``np.fill_diagonal(a, val, wrap)`` on a copy of ``a``, returned.

    >>> import numpy as np
    >>> fill_diagonal(np.zeros((2, 2)), [1.0, 2.0])
    array([[1., 0.],
           [0., 2.]])

    See also: ``numpy.fill_diagonal``, ``numpy.diagonal``.
    """
    out = _copy(a)
    np.fill_diagonal(out, val, wrap)
    return out


def copyto(dst: Any, src: Any, casting: _Casting = "same_kind", where: Any = True) -> np.ndarray:
    """``np.copyto(dst, src, casting, where)`` on a copy of ``dst``, returned.

    >>> import numpy as np
    >>> copyto(np.zeros(3), 2.0, where=np.array([True, False, True]))
    array([2., 0., 2.])

    See also: ``numpy.copyto``, ``numpy.where``.
    """
    out = _copy(dst)
    np.copyto(out, src, casting=casting, where=where)
    return out


def place(arr: Any, mask: Any, vals: Any) -> np.ndarray:
    """``np.place(arr, mask, vals)`` on a copy of ``arr``, returned (``vals`` repeats
    to fill the entries where ``mask`` is true).

    >>> import numpy as np
    >>> place(np.zeros(4), np.array([True, True, False, True]), [1.0, 2.0])
    array([1., 2., 0., 1.])

    See also: ``numpy.place``, ``numpy.extract``.
    """
    out = _copy(arr)
    np.place(out, mask, vals)
    return out


def putmask(a: Any, mask: Any, values: Any) -> np.ndarray:
    """``np.putmask(a, mask, values)`` on a copy of ``a``, returned (entry ``n`` where
    ``mask`` is true gets ``values.flat[n % values.size]``).

    >>> import numpy as np
    >>> putmask(np.zeros(4), np.array([True, False, False, True]), [1.0, 2.0])
    array([1., 0., 0., 2.])

    See also: ``numpy.putmask``, ``copyto``.
    """
    out = _copy(a)
    np.putmask(out, mask, values)
    return out


def put(a: Any, ind: Any, v: Any, mode: _Mode = "raise") -> np.ndarray:
    """``np.put(a, ind, v, mode)`` on a copy of ``a``, returned (flat indices; ``v``
    repeats; ``mode="wrap"`` or ``"clip"`` as in numpy).

    >>> import numpy as np
    >>> put(np.zeros(3), [0, 4], [1.0, 2.0], mode="wrap")
    array([1., 2., 0.])

    See also: ``numpy.put``, ``numpy.take``.
    """
    out = _copy(a)
    np.put(out, ind, v, mode=mode)
    return out


def ufunc_at(a: Any, indices: Any, b: Any = None, *, ufunc: np.ufunc) -> np.ndarray:
    """``ufunc.at(a, indices, b)`` on a copy of ``a``, returned: unbuffered, so a
    repeated index applies the ufunc once per occurrence (``np.add`` accumulates).

    Any ufunc computes; the rules cover ``np.add``, ``np.subtract``,
    ``np.multiply`` and ``np.negative``.

    >>> import numpy as np
    >>> ufunc_at(np.ones(3), [0, 0], 3.0, ufunc=np.multiply)
    array([9., 1., 1.])
    >>> ufunc_at(np.ones(3), [1, 1, 2], ufunc=np.negative)
    array([ 1.,  1., -1.])

    See also: ``numpy.ufunc.at``, ``functional_form``.
    """
    if not isinstance(ufunc, np.ufunc):
        raise TypeError(
            f"rules.functional.ufunc_at: ufunc={ufunc!r} is not a numpy ufunc.\n"
            "To fix: pass the ufunc whose .at you mean, e.g. ufunc_at(a, i, b, ufunc=np.add)."
        )
    out = _copy(a)
    if b is None:
        ufunc.at(out, indices)
    else:
        ufunc.at(out, indices, b)
    return out


# --- functional_form ----------------------------------------------------------------------

_FORMS: dict[Any, Callable[..., Any]] = {
    np.put_along_axis: put_along_axis,
    np.fill_diagonal: fill_diagonal,
    np.copyto: copyto,
    np.place: place,
    np.putmask: putmask,
    np.put: put,
}

#: The ufuncs whose ``.at`` has rules (``functional_form`` gives None for the others).
AT_UFUNCS = (np.add, np.subtract, np.multiply, np.negative)


@functools.cache
def _ufunc_at_form(ufunc: np.ufunc) -> Callable[..., Any]:
    """One ``partial(ufunc_at, ufunc=ufunc)`` per ufunc (so the AD's caches hit)."""
    return functools.partial(ufunc_at, ufunc=ufunc)


def functional_form(f: Any) -> Callable[..., Any] | None:
    """The functional form of the in-place numpy callable ``f``, or None.

    ``np.put_along_axis``, ``np.fill_diagonal``, ``np.copyto``, ``np.place``,
    ``np.putmask`` and ``np.put`` map to the functions of the same names here; a
    bound ``ufunc.at`` (``np.add.at``, a new object on each attribute access) maps
    to ``functools.partial(ufunc_at, ufunc=...)``, one per ufunc, for the ufuncs
    with rules (``AT_UFUNCS``). Anything else gives None. The functional form takes
    the same arguments and returns the new array instead of writing.

    >>> import numpy as np
    >>> functional_form(np.put_along_axis) is put_along_axis
    True
    >>> add_at = functional_form(np.add.at)
    >>> add_at is functional_form(np.add.at), add_at(np.zeros(2), [1, 1], 1.0)
    (True, array([0., 2.]))
    >>> functional_form(np.sum) is None, functional_form(np.maximum.at) is None
    (True, True)

    See also: ``ufunc_at``; the module docstring for the convention.
    """
    try:
        form = _FORMS.get(f)
    except TypeError:  # unhashable
        return None
    if form is not None:
        return form
    owner = getattr(f, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(f, "__name__", None) == "at":
        if any(owner is u for u in AT_UFUNCS):
            return _ufunc_at_form(owner)
    return None


# --- rules of the overwriting functions ------------------------------------------------------

#: function -> (numpy's function, the values parameter's name, its position after
#: the first argument).
_OVERWRITES: dict[Any, tuple[Any, str, int]] = {
    put_along_axis: (np.put_along_axis, "values", 1),
    fill_diagonal: (np.fill_diagonal, "val", 0),
    copyto: (np.copyto, "src", 0),
    place: (np.place, "vals", 1),
    putmask: (np.putmask, "values", 1),
    put: (np.put, "v", 1),
}


def _written(f: Any, shape: tuple, args: tuple, kw: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(written, source)`` for the call ``f(arr, *args, **kw)`` on an ``arr`` of
    ``shape``: where numpy writes, and the flat index into the values of the value
    it leaves there (0 where it writes nothing).

    numpy's own function runs on an integer array, with the values replaced by
    their flat indices: broadcasting, repetition, ``where=``, ``mode=`` and which
    of several writes to one entry wins are numpy's.
    """
    numpy_f, name, pos = _OVERWRITES[f]
    values = args[pos] if len(args) > pos else kw[name]
    ids = np.arange(np.size(values)).reshape(np.shape(values))
    source = np.full(shape, -1, dtype=np.intp)
    if len(args) > pos:
        numpy_f(source, *args[:pos], ids, *args[pos + 1 :], **kw)
    else:
        numpy_f(source, *args, **{**kw, name: ids})
    written = source >= 0
    return written, np.where(written, source, 0)


non_differentiable(_written)


def _differentiable(y: Any) -> bool:
    """Whether the result ``y`` carries a derivative (float or complex dtype)."""
    return np.asarray(y).dtype.kind in "fc"


non_differentiable(_differentiable)


def _values_zeros(v: Any, ȳ: Any) -> np.ndarray:
    """Flat zeros to gather ``ȳ`` into: one per value, complex if either is."""
    dtype = np.result_type(tangent_dtype(asarray(v)), asarray(ȳ).dtype)
    return np.zeros(np.size(v), dtype)


non_differentiable(_values_zeros)


def _no_values(v: Any) -> bool:
    """Whether ``v`` holds no values (so numpy wrote nothing)."""
    return np.size(v) == 0


non_differentiable(_no_values)


def values_cotangent(ȳ: Any, written: Any, source: Any, v: Any) -> Any:
    """The cotangent of the values ``v``: each entry of ``ȳ`` where numpy wrote, added
    into the value written there (a value written to several entries gets their sum).
    Linear in ``ȳ``; made of calls with rules, so it can be differentiated again."""
    flat = ufunc_at(_values_zeros(v, ȳ), source[written], asarray(ȳ)[written], ufunc=np.add)
    return project_nested(v, np.reshape(flat, np.shape(v)))


def values_tangent(v̇: Any, written: Any, source: Any, v: Any) -> Any:
    """The tangent of the entries numpy writes: the tangent of the value written to
    each (zero where nothing is written)."""
    if _no_values(v):
        return np.zeros(np.shape(written))
    return np.where(written, np.ravel(dense(v̇, v))[source], 0.0)


def _register_overwrite(f: Any) -> None:
    """``rrule`` and ``frule`` of an overwriting function (see ``_OVERWRITES``)."""
    name = f.__name__
    pos = _OVERWRITES[f][2]

    def overwrite_rrule(arr: Any, *args: Any, **kw: Any) -> Any:
        y = f(arr, *args, **kw)
        n = len(args)
        has_values = n > pos
        if not _differentiable(y):
            return y, _nondifferentiable_pullback(n)
        written, source = _written(f, np.shape(y), args, kw)

        def overwrite_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, *[_ZERO if i == pos else _NO for i in range(n)])
            ā = project_nested(arr, np.where(written, 0.0, ȳ))
            if not has_values:
                return (_NO, ā, *[_NO for _ in range(n)])
            v̄ = values_cotangent(ȳ, written, source, args[pos])
            return (_NO, ā, *[v̄ if i == pos else _NO for i in range(n)])

        overwrite_pullback.__name__ = overwrite_pullback.__qualname__ = f"{name}_pullback"
        return y, overwrite_pullback

    def overwrite_frule(ḟ: Any, *targs: Any, **kw: Any) -> Any:
        n = len(targs) // 2
        arr, args = targs[n], targs[n + 1 :]
        y = f(arr, *args, **kw)
        if not _differentiable(y):
            return y, _NO
        ȧ = unthunk(targs[0])
        v̇ = unthunk(targs[1 + pos]) if n - 1 > pos else _ZERO
        if is_zero(ȧ) and is_zero(v̇):
            return y, _ZERO
        written, source = _written(f, np.shape(y), args, kw)
        kept = 0.0 if is_zero(ȧ) else np.where(written, 0.0, dense(ȧ, arr))
        if is_zero(v̇):
            return y, project(y, kept)
        return y, project(y, values_tangent(v̇, written, source, args[pos]) + kept)

    overwrite_rrule.__name__ = overwrite_rrule.__qualname__ = f"{name}_rrule"
    overwrite_frule.__name__ = overwrite_frule.__qualname__ = f"{name}_frule"
    rrule.register_signature(f, overwrite_rrule, None)
    frule.register_signature(f, overwrite_frule, None)


def _nondifferentiable_pullback(n: int) -> Callable[..., tuple]:
    """The pullback of a call with an integer result: no derivative anywhere."""

    def integer_result_pullback(ȳ: Any) -> tuple:
        return (_NO, _NO, *[_NO for _ in range(n)])

    return integer_result_pullback


for _f in _OVERWRITES:
    _register_overwrite(_f)


# --- rules of ufunc_at -------------------------------------------------------------------------


def _check_at(ufunc: Any) -> None:
    """Refuse a ufunc whose ``.at`` has no rule, naming the ones that do."""
    if not any(ufunc is u for u in AT_UFUNCS):
        raise TypeError(
            f"rules.functional.ufunc_at: no derivative rule for ufunc={ufunc!r} "
            "(rules exist for np.add, np.subtract, np.multiply and np.negative).\n"
            "To fix: write the update with those (np.maximum.at(a, i, b) as "
            "a = np.maximum(a, <b scattered>) on distinct indices), or keep it out of "
            "the differentiated code."
        )


non_differentiable(_check_at)


def _positions(shape: tuple, indices: Any) -> np.ndarray:
    """The flat index into an array of ``shape`` of each entry of ``a[indices]``."""
    return np.arange(int(np.prod(shape))).reshape(shape)[indices]


non_differentiable(_positions)


def _scan_steps(groups: np.ndarray) -> list:
    """``[(shift, same), ...]`` for a segmented scan of sorted ``groups`` by doubling:
    step ``d`` (1, 2, 4, ...) combines entry ``i`` with ``i - d`` (index ``shift``)
    where both are in one group (``same``)."""
    m = groups.shape[0]
    i = np.arange(m)
    steps = []
    d = 1
    while True:
        shift = np.maximum(i - d, 0)
        steps.append((shift, (i >= d) & (groups[shift] == groups)))
        if d >= m:
            return steps
        d *= 2


def _product_plan(pos: np.ndarray) -> tuple:
    """For the flat positions ``pos`` of the factors, the plan of ``_others_product``:
    ``(order, forward steps, backward steps, inverse order)``."""
    flat = pos.reshape(-1)
    order = np.argsort(flat, kind="stable")
    groups = flat[order]
    return order, _scan_steps(groups), _scan_steps(groups[::-1]), np.argsort(order)


non_differentiable(_product_plan)


def _exclusive_products(s: Any, steps: list) -> Any:
    """Per entry of ``s``, the product of the entries before it in its group (1 for
    the first): an inclusive scan by doubling, shifted by one."""
    p = s
    for shift, same in steps[:-1]:
        p = np.where(same, p * p[shift], p)
    first_shift, first_same = steps[0]
    return np.where(first_same, p[first_shift], 1.0)


def others_product(bb: Any, pos: Any) -> Any:
    """``O[k] = Π_{j ≠ k, pos[j] = pos[k]} bb[j]`` (flat ``bb`` and ``pos``): the
    product of the other factors written to the same entry, without division (exact
    with zeros), from prefix and suffix products within each group."""
    order, forward, backward, inverse = _product_plan(pos)
    s = bb[order]
    before = _exclusive_products(s, forward)
    after = _exclusive_products(s[::-1], backward)[::-1]
    return (before * after)[inverse]


def _at_factor(y: Any, indices: Any, b: Any) -> Any:
    """``P``: per entry, the product of the factors ``np.multiply.at`` applies to it."""
    return ufunc_at(np.ones_like(y), indices, b, ufunc=np.multiply)


def _flat_factors(b: Any, pos: Any) -> Any:
    """The factors ``b``, broadcast to the positions ``pos`` and flattened."""
    return np.ravel(np.broadcast_to(b, np.shape(pos)))


def _factors(rest: tuple, kw: dict) -> Any:
    """The ``b`` of a ``ufunc_at`` call, passed by position or keyword (None if absent)."""
    return rest[0] if rest else kw.get("b")


@rrule.register(ufunc_at)
def ufunc_at_rrule(a: Any, indices: Any, *rest: Any, ufunc: Any, **kw: Any) -> Any:
    """rrule of ``ufunc_at``: add/subtract pass ``ȳ`` to ``a`` and ``±ȳ[indices]``
    (summed over broadcasting) to ``b``; negative is its own adjoint; multiply
    scales by the conjugate products of the factors. (A ``b`` passed by keyword
    gets no cotangent, as every keyword argument of a rule.)"""
    return at_rrule(a, indices, rest, ufunc, kw)


def at_rrule(a: Any, indices: Any, rest: tuple, ufunc: Any, kw: dict) -> Any:
    """The rrule of ``ufunc_at(a, indices, *rest, ufunc=ufunc, **kw)`` (every parameter
    positional, so that an AD differentiating a rule's body can follow the call)."""
    _check_at(ufunc)
    y = ufunc_at(a, indices, *rest, ufunc=ufunc, **kw)
    n = len(rest)
    if not _differentiable(y):
        return y, _nondifferentiable_pullback(1 + n)
    b = _factors(rest, kw)
    if ufunc is np.negative:

        def negative_at_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, _NO)
            return (_NO, project(a, ufunc_at(ȳ, indices, ufunc=np.negative)), _NO)

        return y, negative_at_pullback
    if ufunc is np.multiply:
        pos = _positions(np.shape(y), indices)
        factor = _at_factor(y, indices, b)
        others = others_product(_flat_factors(b, pos), pos)

        def multiply_at_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, _NO, *[_ZERO for _ in rest])
            ȳ = asarray(ȳ)
            ā = project(a, ȳ * np.conj(factor))
            if not rest:
                return (_NO, ā, _NO)
            flat_a = np.ravel(asarray(a))[pos]
            b̄ = np.conj(flat_a * np.reshape(others, np.shape(pos))) * np.ravel(ȳ)[pos]
            return (_NO, ā, _NO, unbroadcast(b, b̄))

        return y, multiply_at_pullback
    sign = -1.0 if ufunc is np.subtract else 1.0

    def add_at_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _NO, *[_ZERO for _ in rest])
        ā = project(a, ȳ)
        if not rest:
            return (_NO, ā, _NO)
        return (_NO, ā, _NO, unbroadcast(b, asarray(ȳ)[indices] * sign))

    return y, add_at_pullback


@frule.register(ufunc_at)
def ufunc_at_frule(ḟ: Any, *args: Any, ufunc: Any, **kw: Any) -> Any:
    """frule of ``ufunc_at``: add/subtract/negative are linear (``ufunc_at`` of the
    tangents); multiply is ``ȧ·P + a·Σ O·ḃ`` (``P``, ``O`` as in the rrule)."""
    return at_frule(args, ufunc, kw)


def at_frule(args: tuple, ufunc: Any, kw: dict) -> Any:
    """The frule of ``ufunc_at`` given its ``(tangents..., primals...)`` (as ``at_rrule``)."""
    _check_at(ufunc)
    m = len(args) // 2
    a, indices, rest = args[m], args[m + 1], args[m + 2 :]
    y = ufunc_at(a, indices, *rest, ufunc=ufunc, **kw)
    if not _differentiable(y):
        return y, _NO
    b = _factors(rest, kw)
    ȧ = unthunk(args[0])
    ḃ = unthunk(args[2]) if rest else _ZERO
    if is_zero(ȧ) and is_zero(ḃ):
        return y, _ZERO
    if ufunc is np.negative:
        return y, project(y, ufunc_at(dense(ȧ, a), indices, ufunc=np.negative))
    if ufunc is np.multiply:
        ẏ = 0.0 if is_zero(ȧ) else dense(ȧ, a) * _at_factor(y, indices, b)
        if not is_zero(ḃ):
            pos = _positions(np.shape(y), indices)
            others = others_product(_flat_factors(b, pos), pos)
            terms = np.reshape(others * _flat_factors(dense(ḃ, b), pos), np.shape(pos))
            summed = ufunc_at(_tangent_like(y, terms), indices, terms, ufunc=np.add)
            ẏ = ẏ + asarray(a) * summed
        return y, project(y, ẏ)
    if is_zero(ḃ):
        return y, project(y, dense(ȧ, a))
    start = _tangent_like(y, ḃ) if is_zero(ȧ) else dense(ȧ, a)
    return y, project(y, ufunc_at(start, indices, dense(ḃ, b), ufunc=ufunc))


def _tangent_like(y: Any, ḃ: Any) -> np.ndarray:
    """Zeros of ``y``'s shape and the dtype its tangent takes with ``ḃ``."""
    dtype = np.result_type(tangent_dtype(y), asarray(ḃ).dtype)
    return np.zeros(np.shape(y), dtype)


non_differentiable(_tangent_like)


def _register_at_form(ufunc: np.ufunc) -> None:
    """Rules on ``functional_form(ufunc.at)`` itself (the cached partial), so that an AD
    dispatches a call of it, in every mode and order, as it does any function's."""
    form = _ufunc_at_form(ufunc)
    name = f"{ufunc.__name__}_at"

    def at_form_rrule(a: Any, indices: Any, *rest: Any, **kw: Any) -> Any:
        return at_rrule(a, indices, rest, ufunc, kw)

    def at_form_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
        return at_frule(args, ufunc, kw)

    at_form_rrule.__name__ = at_form_rrule.__qualname__ = f"{name}_rrule"
    at_form_frule.__name__ = at_form_frule.__qualname__ = f"{name}_frule"
    rrule.register_signature(form, at_form_rrule, None)
    frule.register_signature(form, at_form_frule, None)


for _u in AT_UFUNCS:
    _register_at_form(_u)
