"""Machinery shared by the numpy array-structure rules (shape, indexing, products).

Most shape and indexing functions are linear in their array argument: the
pushforward is the function itself applied to the tangent, and the pullback is
its adjoint. :func:`register_linear` turns a function plus its adjoint into an
``rrule`` and an ``frule``. :func:`register_bilinear` does the same for
products, from the two partial adjoints, with the cotangents thunked (the AD
never evaluates the cotangent of an argument nobody asked about).

The helpers here also convert between the nested lists users pass to numpy
and arrays: a list argument gets a list cotangent of the same nesting
(:func:`project_nested`), and a list tangent is stacked into an array
(:func:`dense`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import (
    AbstractThunk,
    AbstractZero,
    DuckArray,
    NoTangent,
    ProjectTo,
    Tangent,
    Thunk,
    ZeroTangent,
    backing,
    frule,
    is_duck_array,
    rrule,
    unthunk,
)

from ._util import asarray

__all__ = [
    "conj",
    "dense",
    "dense_each",
    "match_output",
    "project_nested",
    "register_bilinear",
    "register_linear",
    "scatter_zeros",
    "sum_to",
    "tangent_dtype",
    "zero_cotangents",
]

_NO = NoTangent()
_ZERO = ZeroTangent()


def tangent_dtype(x: Any) -> np.dtype:
    """The dtype of a tangent of ``x``: floats keep theirs, ints and bools get float64."""
    dt = x.dtype if isinstance(x, (np.ndarray, np.generic, DuckArray)) else np.result_type(x)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def scatter_zeros(x: Any, ȳ: Any) -> np.ndarray:
    """Zeros shaped like ``x`` to scatter ``ȳ`` into (complex if either is complex).

    Accumulating a complex ``ȳ`` into a real buffer would warn and drop the
    imaginary part half-way; projection drops it properly at the end instead.
    """
    return zeros_like(x, np.result_type(tangent_dtype(x), asarray(ȳ).dtype))


def zeros_like(x: Any, dtype: Any) -> Any:
    """Zeros of ``x``'s shape and the given dtype, in ``x``'s library (a dask or CuPy
    array gets one of its own kind, uncomputed)."""
    if is_duck_array(x):
        return np.zeros_like(x, dtype=dtype)
    return np.zeros(np.shape(x), dtype)


def conj(x: Any) -> Any:
    """``x.conj()``, without the copy numpy makes for real arrays."""
    return np.conj(x) if np.iscomplexobj(x) else x


def sum_to(dx: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``dx`` over the axes that broadcasting added to an array of ``shape``."""
    if dx.shape == shape:
        return dx
    extra = dx.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, n in enumerate(shape) if n == 1 and dx.shape[i + extra] != 1
    )
    if axes:
        dx = dx.sum(axis=axes, keepdims=True)
    return dx.reshape(shape)


def project_nested(x: Any, dx: Any) -> Any:
    """``ProjectTo(x)(dx)``, where a list or tuple ``x`` gets a list or tuple back.

    ``x`` is an array-like numpy argument: a nested list of scalars or arrays
    gets a cotangent of the same nesting, an array or scalar is projected.

    >>> project_nested([1.0, [2, 3]][1:], np.array([[4.0, 5.0]]))
    [[4.0, 5.0]]
    >>> project_nested(np.zeros(2, np.float32), np.ones(2)).dtype
    dtype('float32')
    """
    if isinstance(dx, AbstractZero):
        return dx
    t = type(x)
    if t is list or t is tuple:
        if isinstance(dx, AbstractThunk):
            return Thunk(lambda: project_nested(x, unthunk(dx)))
        rows = dx if type(dx) is list or type(dx) is tuple else asarray(dx)
        out = [project_nested(xi, rows[i]) for i, xi in enumerate(x)]
        if out and all(o is _NO for o in out):
            return _NO
        return out if t is list else tuple(out)
    return ProjectTo(x)(dx)


def dense(ẋ: Any, x: Any) -> np.ndarray:
    """The tangent ``ẋ`` of the array-like ``x`` as an array (zeros filled in).

    >>> dense([1.0, ZeroTangent()], [3.0, 4.0])
    array([1., 0.])
    """
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return zeros_like(x, tangent_dtype(asarray(x)))
    if isinstance(ẋ, Tangent):
        ẋ = backing(ẋ)
    if type(ẋ) is list or type(ẋ) is tuple:
        if type(x) is list or type(x) is tuple:
            rows = [dense(t, xi) for t, xi in zip(ẋ, x)]
        else:
            rows = [dense(t, 0.0) for t in ẋ]
        # np.stack keeps dask or CuPy rows in their library (np.array would compute them)
        return np.stack(rows) if any(map(is_duck_array, rows)) else np.array(rows)
    return asarray(ẋ)


def dense_each(ẋ: Any, xs: Any) -> list:
    """The tangent of a sequence of array-likes as a list of arrays, one per entry."""
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return [dense(ẋ, x) for x in xs]
    if isinstance(ẋ, Tangent):
        ẋ = backing(ẋ)
    return [dense(t, x) for t, x in zip(ẋ, xs)]


def match_output(y: Any, ẏ: Any) -> Any:
    """``ẏ`` as a 0-d array when ``y`` is one and as a numpy scalar when ``y`` is one.

    numpy turns 0-d results into scalars in arithmetic (``a0 + b0``) and keeps
    them 0-d elsewhere (``np.real`` of a 0-d array); the tangent must match.
    """
    if type(y) is np.ndarray:
        if type(ẏ) is not np.ndarray and not isinstance(ẏ, AbstractZero):
            return asarray(ẏ)
    elif isinstance(y, np.generic) and type(ẏ) is np.ndarray and ẏ.ndim == 0:
        return ẏ[()]
    return ẏ


def zero_cotangents(n: int) -> tuple:
    """The pullback result for a zero output cotangent and ``n`` positional arguments."""
    return (_NO,) + (_ZERO,) * n


def register_linear(
    f: Any,
    adjoint: Callable[..., Any],
    name: str,
    functions: tuple = (),
    sequence: bool = False,
    check: Callable[..., Any] | None = None,
    pushforward: Callable[..., Any] | None = None,
) -> None:
    """Register rules for ``f(x, *rest, **kw)``, linear in the array-like ``x``.

    ``adjoint(ȳ, x, *rest, **kw)`` returns the cotangent of ``x`` as an array
    of ``x``'s shape, before projection; ``ȳ`` is never a zero or a thunk. The
    other positional arguments (shapes, axes, indices) get ``NoTangent()``.
    The pushforward is ``f`` applied to the tangent. ``functions`` lists more
    function objects sharing the rule (an ``ndarray`` method, say). With
    ``sequence=True``, ``x`` is a sequence of array-likes (``concatenate``)
    and the adjoint returns a list of cotangents. ``check(x, *rest, **kw)``, if
    given, runs first and raises for calls the rule cannot differentiate.
    ``pushforward(ẋ, *rest, **kw)`` replaces ``f`` on the tangent when ``f`` is
    affine rather than linear (``pad``'s ``constant_values``).

    A pushforward of integer or bool dtype (an explicit cast such as
    ``astype(int)``) is ``NoTangent()``: truncation has no derivative.
    """
    densify = dense_each if sequence else dense
    push = f if pushforward is None else pushforward

    def linear_rrule(x: Any, *rest: Any, **kw: Any) -> Any:
        if check is not None:
            check(x, *rest, **kw)
        y = f(x, *rest, **kw)
        nots = (_NO,) * len(rest)

        def linear_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (_NO, _ZERO, *nots)
            dx = apply_adjoint(adjoint, push, sequence, ȳ, x, rest, kw)
            return (_NO, project_nested(x, dx), *nots)

        linear_pullback.__name__ = linear_pullback.__qualname__ = f"{name}_pullback"
        return y, linear_pullback

    def linear_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
        n = len(args) // 2
        x, rest = args[n], args[n + 1 :]
        if check is not None:
            check(x, *rest, **kw)
        y = f(x, *rest, **kw)
        ẋ = unthunk(args[0])
        if isinstance(ẋ, AbstractZero):
            return y, _ZERO
        ẏ = push(densify(ẋ, x), *rest, **kw)
        if isinstance(ẏ, (np.ndarray, np.generic)) and ẏ.dtype.kind in "biu":
            return y, _NO
        return y, match_output(y, ẏ)

    linear_rrule.__name__ = linear_rrule.__qualname__ = f"{name}_rrule"
    linear_frule.__name__ = linear_frule.__qualname__ = f"{name}_frule"
    for g in (f, *functions):
        rrule.register_signature(g, linear_rrule, None)
        frule.register_signature(g, linear_frule, None)


def apply_adjoint(
    adjoint: Callable[..., Any],
    forward: Callable[..., Any],
    sequence: bool,
    ȳ: Any,
    x: Any,
    rest: tuple,
    kw: dict,
) -> Any:
    """``adjoint(ȳ, x, *rest, **kw)``, the transpose of the linear map
    ``forward(·, *rest, **kw)``: a linear rule's pullback calls it through here so
    that the pullback can itself be differentiated (reverse mode over reverse
    mode). It is linear in ``ȳ`` with transpose ``forward``, and depends on ``x``
    only through its shape and dtype (see the rrule below).

    >>> import numpy as np
    >>> apply_adjoint(lambda ȳ, x: ȳ.reshape(x.shape), np.ravel, False,
    ...               np.arange(4.0), np.zeros((2, 2)), (), {})
    array([[0., 1.],
           [2., 3.]])
    """
    return adjoint(ȳ, x, *rest, **kw)


@rrule.register(apply_adjoint)
def _(adjoint, forward, sequence, ȳ, x, rest, kw):
    densify = dense_each if sequence else dense

    def apply_adjoint_pullback(ct: Any) -> tuple:
        ct = unthunk(ct)
        if isinstance(ct, AbstractZero):
            return (_NO, _NO, _NO, _NO, _ZERO, _ZERO, _NO, _NO)
        return (_NO, _NO, _NO, _NO, forward(densify(ct, x), *rest, **kw), _ZERO, _NO, _NO)

    return adjoint(ȳ, x, *rest, **kw), apply_adjoint_pullback


@frule.register(apply_adjoint)
def _(ḟ, ȧ, ḟw, ṡ, ẏ̄, ẋ, ṙ, k̇, adjoint, forward, sequence, ȳ, x, rest, kw):
    y = adjoint(ȳ, x, *rest, **kw)
    ẏ̄ = unthunk(ẏ̄)
    if isinstance(ẏ̄, AbstractZero):
        return y, _ZERO
    return y, adjoint(ẏ̄, x, *rest, **kw)


def register_bilinear(
    f: Any,
    grad_a: Callable[..., Any],
    grad_b: Callable[..., Any],
    name: str,
    functions: tuple = (),
    check: Callable[..., Any] | None = None,
    fast: Callable[..., Any] | None = None,
) -> None:
    """Register rules for ``f(a, b, *rest, **kw)``, linear in each array-like argument.

    ``grad_a(ȳ, a, b, *rest, **kw)`` and ``grad_b(...)`` return the cotangents
    of ``a`` and ``b`` (arrays of their shapes, before projection); they run
    only when their thunk is unthunked. For complex arguments they use
    ``conj(b)`` and ``conj(a)``: the pullback of a holomorphic map multiplies
    by the adjoint. ``rest`` (axes) gets ``NoTangent()``. ``functions`` holds
    ``(g, types)`` pairs: more functions sharing the rule at those argument
    types (``operator.matmul`` on arrays). ``check`` as in
    :func:`register_linear`. ``fast(a, b, y)`` may return a leaner pullback
    for common cases (or None to use the general one).
    """

    def bilinear_rrule(a: Any, b: Any, *rest: Any, **kw: Any) -> Any:
        if check is not None:
            check(a, b, *rest, **kw)
        y = f(a, b, *rest, **kw)
        if fast is not None and not rest and not kw:
            pb = fast(a, b, y)
            if pb is not None:
                return y, pb
        nots = (_NO,) * len(rest)

        def bilinear_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return zero_cotangents(2) + nots
            da = Thunk(lambda: grad_a(ȳ, a, b, *rest, **kw))
            db = Thunk(lambda: grad_b(ȳ, a, b, *rest, **kw))
            return (_NO, project_nested(a, da), project_nested(b, db), *nots)

        bilinear_pullback.__name__ = bilinear_pullback.__qualname__ = f"{name}_pullback"
        return y, bilinear_pullback

    def bilinear_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
        n = len(args) // 2
        a, b, rest = args[n], args[n + 1], args[n + 2 :]
        if check is not None:
            check(a, b, *rest, **kw)
        y = f(a, b, *rest, **kw)
        ȧ, ḃ = unthunk(args[0]), unthunk(args[1])
        ẏ: Any = _ZERO
        if not isinstance(ȧ, AbstractZero):
            ẏ = f(dense(ȧ, a), b, *rest, **kw)
        if not isinstance(ḃ, AbstractZero):
            ẏ = ẏ + f(a, dense(ḃ, b), *rest, **kw)
        return y, match_output(y, ẏ)

    bilinear_rrule.__name__ = bilinear_rrule.__qualname__ = f"{name}_rrule"
    bilinear_frule.__name__ = bilinear_frule.__qualname__ = f"{name}_frule"
    for g, types in ((f, None), *functions):
        rrule.register_signature(g, bilinear_rrule, types)
        frule.register_signature(g, bilinear_frule, types)
