"""Rules for numpy's products: matmul (and ``@``), dot, vdot, inner, outer,
tensordot, kron and cross.

Each product is linear in each argument, so the pushforward is
``f(ȧ, b) + f(a, ḃ)`` and the pullback needs the two partial adjoints, which
are listed in a table (see :func:`rules._numpy_linear.register_bilinear`).
For complex arguments the adjoint conjugates the other factor: in
``C = A @ B``, ``Ā = C̄ @ conj(B)ᵀ`` and ``B̄ = conj(A)ᵀ @ C̄``. The cotangents
are thunks, computed only if used.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rulescore import AbstractZero, DuckArray, NoTangent, Thunk, unthunk

from ._numpy_linear import conj, register_bilinear, sum_to
from ._util import asarray

_NO = NoTangent()

__all__ = ["tensordot_adjoints"]


def _matmul_operands(ȳ: Any, a: Any, b: Any) -> tuple:
    """``a``, ``b`` and ``ȳ`` with matmul's 1-d promotions made explicit."""
    A, B, Y = asarray(a), asarray(b), asarray(ȳ)
    if B.ndim == 1:
        B, Y = B[:, None], Y[..., None]
    if A.ndim == 1:
        A, Y = A[None, :], Y[..., None, :]
    return A, B, Y


def matmul_fast_pullback(a: Any, b: Any, y: Any) -> Any:
    """The pullback of ``a @ b`` for real arrays of one dtype, 1-d or 2-d (MLP and
    RNN cases): matrix @ matrix, matrix @ vector, vector @ matrix, vector @ vector."""
    if not matmul_fast_case(a, b):
        return None

    def matmul_pullback(ȳ: Any) -> tuple:
        return matmul_fast_cotangents(a, b, ȳ)

    return matmul_pullback


def matmul_fast_case(a: Any, b: Any) -> bool:
    """Whether ``matmul_fast_cotangents`` handles ``a @ b``: real arrays of one dtype,
    each 1-d or 2-d.

    >>> matmul_fast_case(np.ones((2, 2)), np.ones(2)), matmul_fast_case(np.ones(2), 1j * np.ones(2))
    (True, False)
    """
    return (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.dtype == b.dtype
        and a.dtype.kind == "f"
        and 1 <= a.ndim <= 2
        and 1 <= b.ndim <= 2
    )


def product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x @ y`` for 1-d or 2-d arrays, through ``np.dot`` when both are float64 and C-
    or F-contiguous: numpy then makes the same BLAS call for the two (same bits,
    pinned by a test), and ``dot`` skips the generalised ufunc's setup (about 0.3 µs
    of a 1.4 µs product of small matrices).

    >>> product(np.eye(2), np.array([1.0, 2.0]))
    array([1., 2.])
    """
    if x.dtype is _F64 and y.dtype is _F64 and x.flags.forc and y.flags.forc:
        return _dot(x, y)
    return x @ y


_F64 = np.dtype(np.float64)
_dot = np.dot


def matmul_fast_cotangents(a: Any, b: Any, ȳ: Any, eager: bool = False) -> tuple:
    """``(NoTangent, ā, b̄)`` of ``a @ b`` (a ``matmul_fast_case``), the two as thunks,
    or computed now if ``eager`` (for small operands, where a thunk costs more than
    the product it may save). A complex ``ȳ`` loses its imaginary part (the operands
    are real); a zero ``ȳ`` gives zeros.

    >>> a, b = np.array([[1.0, 2.0]]), np.array([3.0, 4.0])     # (1, 2) @ (2,)
    >>> matmul_fast_cotangents(a, b, np.array([10.0]), eager=True)
    (NoTangent(), array([[30., 40.]]), array([10., 20.]))
    >>> _, ā, b̄ = matmul_fast_cotangents(a, b, np.array([10.0]))
    >>> unthunk(ā)
    array([[30., 40.]])
    """
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return (_NO, ȳ, ȳ)
    dtype = a.dtype
    if type(ȳ) is not np.ndarray or ȳ.dtype != dtype:
        ȳ = asarray(np.real(ȳ), dtype=dtype)
    if a.ndim == 2:
        if b.ndim == 2:
            if eager:
                return (_NO, product(ȳ, b.T), product(a.T, ȳ))
            return (_NO, Thunk(lambda: product(ȳ, b.T)), Thunk(lambda: product(a.T, ȳ)))
        if eager:
            return (_NO, np.outer(ȳ, b), product(a.T, ȳ))
        return (_NO, Thunk(lambda: np.outer(ȳ, b)), Thunk(lambda: product(a.T, ȳ)))
    if b.ndim == 2:
        if eager:
            return (_NO, product(b, ȳ), np.outer(a, ȳ))
        return (_NO, Thunk(lambda: product(b, ȳ)), Thunk(lambda: np.outer(a, ȳ)))
    if eager:
        return (_NO, ȳ * b, ȳ * a)
    return (_NO, Thunk(lambda: ȳ * b), Thunk(lambda: ȳ * a))  # vector · vector


def _matmul_grad_a(ȳ: Any, a: Any, b: Any, **kw: Any) -> np.ndarray:
    A, B, Y = _matmul_operands(ȳ, a, b)
    return sum_to(Y @ conj(B).swapaxes(-1, -2), A.shape).reshape(np.shape(a))


def _matmul_grad_b(ȳ: Any, a: Any, b: Any, **kw: Any) -> np.ndarray:
    A, B, Y = _matmul_operands(ȳ, a, b)
    return sum_to(conj(A).swapaxes(-1, -2) @ Y, B.shape).reshape(np.shape(b))


def tensordot_adjoints(ȳ: Any, A: np.ndarray, B: np.ndarray, ia: list, ib: list) -> tuple:
    """Cotangents of ``A`` and ``B`` in ``tensordot(A, B, (ia, ib))``, as two functions.

    The output's axes are ``A``'s free axes then ``B``'s; contracting the
    cotangent with the other factor over that factor's free axes leaves the
    summed axes, which are then put back in place.
    """
    ia = [i % A.ndim for i in ia]
    ib = [i % B.ndim for i in ib]
    free_a = [i for i in range(A.ndim) if i not in ia]
    free_b = [i for i in range(B.ndim) if i not in ib]
    Y = asarray(ȳ)
    na = len(free_a)

    def grad_a() -> np.ndarray:
        G = np.tensordot(Y, conj(B), (list(range(na, Y.ndim)), free_b))
        # G's axes: A's free axes, then B's summed axes in B's order.
        order = free_a + [ia[j] for j in np.argsort(ib)]
        return np.transpose(G, tuple(int(i) for i in np.argsort(order)))

    def grad_b() -> np.ndarray:
        G = np.tensordot(conj(A), Y, (free_a, list(range(na))))
        order = [ib[j] for j in np.argsort(ia)] + free_b
        return np.transpose(G, tuple(int(i) for i in np.argsort(order)))

    return grad_a, grad_b


def _tensordot_axes(A: np.ndarray, axes: Any) -> tuple:
    if np.ndim(axes) == 0:
        n = int(axes)
        return list(range(A.ndim - n, A.ndim)), list(range(n))
    ia, ib = axes
    return list(np.atleast_1d(ia)), list(np.atleast_1d(ib))


def _tensordot_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any, axes: Any = 2) -> np.ndarray:
        A, B = asarray(a), asarray(b)
        return tensordot_adjoints(ȳ, A, B, *_tensordot_axes(A, axes))[which]()

    return grad


def _scalar_product_grads(ȳ: Any, a: Any, b: Any, which: int) -> np.ndarray:
    """Products where one factor is a scalar (0-d): plain broadcasting multiplication."""
    if which == 0:
        return sum_to(asarray(ȳ * conj(asarray(b))), np.shape(a))
    return sum_to(asarray(conj(asarray(a)) * ȳ), np.shape(b))


def _dot_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any, **kw: Any) -> np.ndarray:
        A, B = asarray(a), asarray(b)
        if A.ndim == 0 or B.ndim == 0:
            return _scalar_product_grads(ȳ, A, B, which)
        if A.ndim <= 2 and B.ndim <= 2:
            return (_matmul_grad_a, _matmul_grad_b)[which](ȳ, A, B)
        return tensordot_adjoints(ȳ, A, B, [-1], [max(B.ndim - 2, 0)])[which]()

    return grad


def _inner_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any) -> np.ndarray:
        A, B = asarray(a), asarray(b)
        if A.ndim == 0 or B.ndim == 0:
            return _scalar_product_grads(ȳ, A, B, which)
        return tensordot_adjoints(ȳ, A, B, [-1], [-1])[which]()

    return grad


def _outer_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any, **kw: Any) -> np.ndarray:
        A, B = np.ravel(a), np.ravel(b)
        return tensordot_adjoints(ȳ, A, B, [], [])[which]().reshape(np.shape((a, b)[which]))

    return grad


def _vdot_grad_a(ȳ: Any, a: Any, b: Any) -> np.ndarray:
    # vdot(a, b) = Σ conj(a) b is antilinear in a: ā = b·conj(ȳ).
    return (asarray(b) * np.conj(ȳ)).reshape(np.shape(a))


def _vdot_grad_b(ȳ: Any, a: Any, b: Any) -> np.ndarray:
    return (asarray(a) * ȳ).reshape(np.shape(b))


def _kron_operands(a: Any, b: Any) -> tuple:
    A, B = asarray(a), asarray(b)
    d = max(A.ndim, B.ndim)
    return A.reshape((1,) * (d - A.ndim) + A.shape), B.reshape((1,) * (d - B.ndim) + B.shape)


def _kron_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any) -> np.ndarray:
        A, B = _kron_operands(a, b)
        # kron(A, B)[i*n + j] = A[i] B[j] axis by axis: split each output axis in two.
        Y = np.reshape(ȳ, [n for pair in zip(A.shape, B.shape) for n in pair])
        d = A.ndim
        ya, yb = list(range(0, 2 * d, 2)), list(range(1, 2 * d, 2))
        if which == 0:
            G = np.einsum(Y, list(range(2 * d)), conj(B), yb, ya)
        else:
            G = np.einsum(Y, list(range(2 * d)), conj(A), ya, yb)
        return G.reshape(np.shape((a, b)[which]))

    return grad


def _cross_axes(kw: dict) -> tuple:
    if "axis" in kw and kw["axis"] is not None:
        return (kw["axis"],) * 3
    return kw.get("axisa", -1), kw.get("axisb", -1), kw.get("axisc", -1)


def _cross_grad(which: int) -> Any:
    def grad(ȳ: Any, a: Any, b: Any, **kw: Any) -> np.ndarray:
        axa, axb, axc = _cross_axes(kw)
        A = np.moveaxis(asarray(a), axa, -1)
        B = np.moveaxis(asarray(b), axb, -1)
        Y = np.moveaxis(asarray(ȳ), axc, -1) if np.ndim(ȳ) else ȳ
        if which == 0:  # ā = conj(b) × ȳ: the adjoint of a ↦ a × b
            return np.moveaxis(sum_to(np.cross(conj(B), Y), A.shape), -1, axa)
        return np.moveaxis(sum_to(np.cross(Y, conj(A)), B.shape), -1, axb)

    return grad


def _check_cross(a: Any, b: Any, **kw: Any) -> None:
    axa, axb, _ = _cross_axes(kw)
    if np.shape(a)[axa] != 3 or np.shape(b)[axb] != 3:
        raise NotImplementedError(
            "np.cross has a derivative rule for 3-vectors only (numpy deprecates 2-vectors).\n"
            "To fix: pad 2-vectors with a zero third component."
        )


# ``a @ b`` where either side is an array (the third entry settles ties).
_OPERATOR_MATMUL = tuple(
    (operator.matmul, types)
    for types in ((DuckArray, object), (object, DuckArray), (DuckArray, DuckArray))
)
_BILINEAR = [
    (np.matmul, _matmul_grad_a, _matmul_grad_b, _OPERATOR_MATMUL, matmul_fast_pullback),
    (np.dot, _dot_grad(0), _dot_grad(1), (), matmul_fast_pullback),  # same for 2-d
    (np.vdot, _vdot_grad_a, _vdot_grad_b, (), None),
    (np.inner, _inner_grad(0), _inner_grad(1), (), None),
    (np.outer, _outer_grad(0), _outer_grad(1), (), None),
    (np.tensordot, _tensordot_grad(0), _tensordot_grad(1), (), None),
    (np.kron, _kron_grad(0), _kron_grad(1), (), None),
]
for _f, _grad_a, _grad_b, _also, _fast in _BILINEAR:
    register_bilinear(_f, _grad_a, _grad_b, _f.__name__, functions=_also, fast=_fast)
register_bilinear(np.cross, _cross_grad(0), _cross_grad(1), "cross", check=_check_cross)
