"""``jacobian`` and ``withjacobian``: full Jacobians, by reverse or forward mode.

Reverse mode runs the function forward once (``ad.pullback``) and its
pullback once per output element with a one-hot seed, each call filling one
row of every argument's Jacobian. When the output has more elements than the
arguments together, forward mode is cheaper: one ``ad.jvp`` per input
element, each filling one column. Arrays (and nested lists of numbers) are
flattened in numpy's row-major (C) order on both sides.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from ad.api.gradient import pullback
from ad.errors import CotangentShapeError, OutputTypeError
from ad.runtime.tracebacks import entry_point, hide_internals

__all__ = ["WithJacobian", "jacobian", "withjacobian"]


class WithJacobian(NamedTuple):
    """``withjacobian``'s result: the function's value and the Jacobian tuple."""

    val: Any
    grad: tuple


@entry_point
def jacobian(f: Callable, /, *args: Any, mode: str = "auto", **kwargs: Any) -> tuple:
    """The Jacobian of ``y = f(*args)`` with respect to each argument.

    For an array argument ``a`` (a numpy array or a nested list of numbers)
    the entry is a matrix ``J`` with ``J[k, i] = ∂y[k]/∂a[i]``, both ``y`` and
    ``a`` flattened in C order, so ``J.shape == (y.size, a.size)``; a number
    output gives one row. A number argument gives a vector of shape
    ``(y.size,)``. Any other argument (tuple, string, bool, object) gives
    ``None``, even where ``gradient`` would understand it. Integer inputs
    count as real numbers: their Jacobians are floats.

    The mode is chosen by shape: reverse mode (``f`` runs once, then its
    pullback once per element of ``y``) when ``y`` has no more elements than
    the differentiable arguments together; otherwise forward mode (one
    ``jvp`` per input element). ``mode="reverse"`` or ``mode="forward"``
    (keyword-only) forces one.

    Other keyword arguments are passed to ``f`` and not differentiated. A
    keyword named ``mode`` is always ``jacobian``'s own: to give ``f`` one,
    bind it first (``functools.partial(f, mode=...)`` or a lambda).

    >>> import numpy as np
    >>> jacobian(lambda a: 100 * a[:3] ** 2, np.arange(1, 8))[0]
    array([[200.,   0.,   0.,   0.,   0.,   0.,   0.],
           [  0., 400.,   0.,   0.,   0.,   0.,   0.],
           [  0.,   0., 600.,   0.,   0.,   0.,   0.]])
    >>> jacobian(lambda a, x: a**2 * x, np.array([1, 2, 3]), 1)
    (array([[2., 0., 0.],
           [0., 4., 0.],
           [0., 0., 6.]]), array([1., 4., 9.]))
    >>> jacobian(lambda a, power: a**power, np.array([1.0, 2.0]), power=3)
    (array([[ 3.,  0.],
           [ 0., 12.]]),)

    See also: withjacobian, gradient, pullback.
    """
    try:
        return withjacobian(f, *args, mode=mode, **kwargs).grad
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


@entry_point
def withjacobian(f: Callable, /, *args: Any, mode: str = "auto", **kwargs: Any) -> WithJacobian:
    """``(val=f(*args, **kwargs), grad=jacobian(f, *args, **kwargs))``, running ``f``
    forward once. Keyword arguments other than ``mode`` go to ``f`` (see ``jacobian``).

    >>> withjacobian(np.cumsum, [1, 2, 3])
    WithJacobian(val=array([1, 3, 6]), grad=(array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]]),))
    >>> withjacobian(np.cumsum, [1.0, 2.0], dtype=np.float32).val
    array([1., 3.], dtype=float32)

    See also: jacobian.
    """
    try:
        return _withjacobian(f, args, mode, kwargs)
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


def _withjacobian(f: Callable, args: tuple, mode: str, kwargs: dict) -> WithJacobian:
    if mode not in ("auto", "reverse", "forward"):
        raise ValueError(f"jacobian: mode must be 'auto', 'reverse' or 'forward', got {mode!r}")
    kinds = [_arg_kind(a) for a in args]
    n_in = sum(k.size for k in kinds if k is not None)
    if mode == "forward":
        return _forward_jacobian(f, args, kinds, kwargs)
    y, back = pullback(f, *args, **kwargs)
    m, seeds = _output_seeds(y, f)
    if mode == "auto" and m > n_in:
        return _forward_jacobian(f, args, kinds, kwargs)
    rows: list[list[Any]] = [[] for _ in args]
    for seed in seeds:
        cts = back(seed)
        for i, (kind, ct) in enumerate(zip(kinds, cts)):
            if kind is not None:
                rows[i].append(_flat(ct, kind, i, f))
    grads = tuple(None if kind is None else _assemble(r, m, kind) for kind, r in zip(kinds, rows))
    return WithJacobian(y, grads)


def _forward_jacobian(f: Callable, args: tuple, kinds: list, kwargs: dict) -> WithJacobian:
    """One ``jvp`` per input element; each fills one column of its argument's Jacobian."""
    from ad.api.jvp import jvp

    y = None
    grads: list[Any] = []
    for i, (a, kind) in enumerate(zip(args, kinds)):
        if kind is None:
            grads.append(None)
            continue
        cols = []
        for k in range(kind.size):
            tangents: list[Any] = [None] * len(args)
            tangents[i] = _one_hot(a, k)
            y, ẏ = jvp(f, args, tuple(tangents), **kwargs)
            cols.append(_flat_output(ẏ, y, f))
        m = _output_size(y, f)
        J = np.stack(cols, axis=1) if cols else np.zeros((m, 0))
        if J.dtype.kind not in "fc":
            J = J.astype(np.float64)
        grads.append(J[:, 0] if kind.scalar else J)
    if y is None:  # no differentiable argument: still evaluate and check the output
        y = f(*args, **kwargs)
        _output_size(y, f)
    return WithJacobian(y, tuple(grads))


def _one_hot(a: Any, k: int) -> Any:
    if isinstance(a, numbers.Number):
        return 1.0
    arr = np.asarray(a)
    e = np.zeros(arr.size, dtype=arr.dtype if arr.dtype.kind in "fc" else np.float64)
    e[k] = 1
    if isinstance(a, list):
        return _refill(a, iter(e.tolist()))
    return e.reshape(arr.shape)


def _output_size(y: Any, f: Callable) -> int:
    m, _seeds = _output_seeds(y, f)
    return m


def _flat_output(ẏ: Any, y: Any, f: Callable) -> np.ndarray:
    m = _output_size(y, f)
    if ẏ is None:
        return np.zeros(m)
    if isinstance(ẏ, (list, tuple)):
        ẏ = _zeros_for_none(ẏ)
    col = np.asarray(ẏ, dtype=float if np.isrealobj(ẏ) else complex).ravel()
    return col if col.size == m else np.broadcast_to(col, (m,)).copy()


# --- outputs ------------------------------------------------------------------


def _output_seeds(y: Any, f: Callable) -> tuple[int, Iterator[Any]]:
    """The number of output elements and a generator of one-hot cotangents."""
    if _is_real_number(y):
        one = type(y)(1) if isinstance(y, np.floating) else 1.0
        return 1, iter([one])
    if isinstance(y, np.ndarray) and y.dtype.kind in "fiu":
        dtype = y.dtype if y.dtype.kind == "f" else np.dtype(np.float64)
        return y.size, _array_seeds(y.shape, dtype)
    if isinstance(y, (list, tuple)) and not hasattr(y, "_fields"):
        flat = _numeric_leaves(y)
        if flat is not None:
            return len(flat), _nested_seeds(y, len(flat))
    raise OutputTypeError(_output_message(y, f))


def _array_seeds(shape: tuple, dtype: np.dtype) -> Iterator[np.ndarray]:
    size = int(np.prod(shape))
    for k in range(size):
        e = np.zeros(size, dtype=dtype)
        e[k] = 1
        yield e.reshape(shape)


def _nested_seeds(y: Any, n: int) -> Iterator[Any]:
    for k in range(n):
        it = iter([1.0 if j == k else 0.0 for j in range(n)])
        yield _refill(y, it)


def _refill(template: Any, values: Iterator[float]) -> Any:
    """``template``'s list/tuple structure with its leaves taken from ``values``."""
    if isinstance(template, (list, tuple)):
        return type(template)(_refill(t, values) for t in template)
    return next(values)


def _numeric_leaves(y: Any) -> list | None:
    """The leaves of nested lists/tuples of real numbers, or None if any is not one."""
    out: list = []
    stack = [y]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            stack.extend(reversed(v))
        elif _is_real_number(v):
            out.append(v)
        else:
            return None
    return out


def _is_real_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _output_message(y: Any, f: Callable) -> str:
    what = type(y).__name__
    if isinstance(y, np.ndarray):
        what = f"an array of dtype {y.dtype}"
    elif isinstance(y, numbers.Complex) and not isinstance(y, numbers.Real):
        what = f"a complex number ({what})"
    name = getattr(f, "__name__", repr(f))
    hint = (
        "split the output into real and imaginary parts (np.real, np.imag)"
        if "complex" in what
        else "return a number or an array (np.array of the values)"
    )
    return (
        f"jacobian({name}, ...) needs the function to return a real number or an array of real "
        f"numbers (a numpy array, or a list/tuple of numbers), got {what}.\n"
        f"To fix: {hint}, or use ad.pullback(f, *args) and call its pullback with a "
        "cotangent shaped like the output."
    )


# --- arguments ------------------------------------------------------------------


class _Kind(NamedTuple):
    """How an argument's Jacobian is laid out: its flat size, and whether it is a number."""

    size: int
    scalar: bool


def _arg_kind(a: Any) -> _Kind | None:
    if isinstance(a, (bool, np.bool_)):
        return None
    if isinstance(a, numbers.Number):
        return _Kind(1, True)
    if isinstance(a, np.ndarray):
        return _Kind(a.size, False) if a.dtype.kind in "fiuc" else None
    if isinstance(a, list):
        try:
            arr = np.asarray(a)
        except ValueError:  # ragged
            return None
        return _Kind(arr.size, False) if arr.dtype.kind in "fiuc" else None
    return None


def _flat(ct: Any, kind: _Kind, i: int, f: Callable) -> np.ndarray | None:
    """One row of a Jacobian from the cotangent of argument ``i`` (None: a zero row)."""
    if ct is None:
        return None
    if isinstance(ct, (list, tuple)):
        ct = _zeros_for_none(ct)
    row = np.asarray(ct).ravel()
    if row.size != kind.size:
        raise CotangentShapeError(
            f"jacobian({getattr(f, '__name__', f)}, ...): the cotangent of argument {i + 1} has "
            f"{row.size} elements, the argument has {kind.size}"
        )
    return row


def _zeros_for_none(ct: Any) -> Any:
    if isinstance(ct, (list, tuple)):
        return [_zeros_for_none(c) for c in ct]
    return 0.0 if ct is None else ct


def _assemble(rows: list[np.ndarray | None], m: int, kind: _Kind) -> np.ndarray:
    dtypes = [r.dtype for r in rows if r is not None]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    if dtype.kind not in "fc":
        dtype = np.dtype(np.float64)
    J = np.zeros((m, kind.size), dtype=dtype)
    for k, r in enumerate(rows):
        if r is not None:
            J[k] = r
    return J[:, 0] if kind.scalar else J
