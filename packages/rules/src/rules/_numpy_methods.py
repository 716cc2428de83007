"""Rules for ``ndarray`` methods and attributes, as users write them.

The AD rewrites ``x.reshape(2, 3)`` into ``np.ndarray.reshape(x, 2, 3)``, so
method rules are registered on the unbound methods, ``self`` first, sharing
the adjoints of the function forms (``np.reshape``, ``np.dot``, ...). The
method spellings numpy allows are all covered: ``x.transpose()``,
``x.transpose(1, 0)``, ``x.transpose((1, 0))``, ``x.reshape(2, 3)``,
``x.reshape((2, 3))``.

Attribute reads arrive as ``getattr(x, name)``: ``T``, ``mT``, ``real`` and
``imag`` are differentiable; every other data attribute (``shape``, ``ndim``,
``dtype``, ``size``, ``flags``, ...) is not and gets ``NoTangent()``. Reading a
method (``getattr(x, "sum")``) is an error: the AD resolves method calls
itself, so a bound method reaching here means something went wrong upstream.

``astype`` to a floating or complex dtype converts the cotangent back to the
input's dtype; to an integer or bool dtype it truncates and has no derivative.
``tolist`` is linear (its cotangent: nested lists, zeros allowed); ``view`` has
a rule only as the identity (the same dtype, an ``ndarray``). ``clip``,
``round``, ``compress``, ``choose`` and the index queries (``argmax``, ...) are
ruled beside their functions (``_numpy_binary``, ``_numpy_selection``,
``_numpy_assembly``). The same methods of numpy scalars (``np.generic.clip``) run
these rules on a 0-d array (``_numpy_scalar_methods``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    DuckArray,
    NoTangent,
    ProjectTo,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)

from ._numpy_indexing import _diagonal_adjoint, _take_adjoint, _trace_adjoint
from ._numpy_linear import (
    dense,
    match_output,
    register_bilinear,
    register_linear,
    scatter_zeros,
)
from ._numpy_products import _dot_grad
from ._numpy_shape import (
    _involution,
    _ravel_adjoint,
    _repeat_adjoint,
    _reshape_adjoint,
    _to_shape_adjoint,
    _transpose_adjoint,
)

_NO = NoTangent()
_ZERO = ZeroTangent()


def _conj_adjoint(ȳ: Any, x: Any) -> Any:
    return np.conj(ȳ)  # conj is antilinear: its adjoint conjugates too


def _identity_adjoint(ȳ: Any, x: Any, *rest: Any, **kw: Any) -> Any:
    return ȳ


def _astype_adjoint(ȳ: Any, x: Any, dtype: Any, *rest: Any, **kw: Any) -> Any:
    if np.dtype(dtype).kind in "biu":
        return _NO
    return ȳ  # projection converts back to x's dtype


def _item_adjoint(ȳ: Any, x: Any, *where: Any) -> Any:
    dx = scatter_zeros(x, ȳ)
    if len(where) == 1 and np.ndim(where[0]) == 0:
        dx.flat[where[0]] = ȳ
    else:
        dx[where[0] if len(where) == 1 else where] = ȳ
    return dx


def _tolist_adjoint(ȳ: Any, x: Any) -> Any:
    return np.reshape(dense(ȳ, x.tolist()), np.shape(x))  # ȳ: nested lists, zeros allowed


def _check_view(x: Any, *args: Any, **kw: Any) -> None:
    """``x.view()`` is the identity; a view as another dtype reinterprets bytes."""
    dtype, cls = kw.get("dtype"), kw.get("type")
    for a in args:  # x.view(dtype), x.view(cls), x.view(dtype, cls)
        if isinstance(a, type) and issubclass(a, np.ndarray):
            cls = a
        else:
            dtype = a
    if cls not in (None, np.ndarray) or (dtype is not None and np.dtype(dtype) != x.dtype):
        raise NotImplementedError(
            f"x.view({', '.join(map(repr, args))}) reinterprets the array's memory, which has "
            "no derivative rule.\nTo fix: use x.view() or x.astype(dtype)."
        )


_METHODS = [
    (np.ndarray.tolist, _tolist_adjoint),
    (np.ndarray.reshape, _reshape_adjoint),
    (np.ndarray.ravel, _ravel_adjoint),
    (np.ndarray.flatten, _ravel_adjoint),
    (np.ndarray.transpose, _transpose_adjoint),
    (np.ndarray.squeeze, _to_shape_adjoint),
    (np.ndarray.swapaxes, _involution(np.swapaxes)),
    (np.ndarray.conj, _conj_adjoint),
    (np.ndarray.conjugate, _conj_adjoint),
    (np.ndarray.astype, _astype_adjoint),
    (np.ndarray.copy, _identity_adjoint),
    (np.ndarray.take, _take_adjoint),
    (np.ndarray.repeat, _repeat_adjoint),
    (np.ndarray.diagonal, _diagonal_adjoint),
    (np.ndarray.trace, _trace_adjoint),
    (np.ndarray.item, _item_adjoint),
]
for _method, _adjoint in _METHODS:
    register_linear(_method, _adjoint, f"ndarray_{_method.__name__}")
register_bilinear(np.ndarray.dot, _dot_grad(0), _dot_grad(1), "ndarray_dot")


def _scalar_astype(ẋ: Any, dtype: Any, *rest: Any, **kw: Any) -> Any:
    """``s.astype(dtype)`` on a numpy scalar's tangent, which may be a Python number."""
    return np.asarray(ẋ).astype(dtype, *rest, **kw)[()]


# a numpy scalar's cast (``np.sum(a).astype(np.float64)``): the array method's rule
register_linear(np.generic.astype, _astype_adjoint, "generic_astype", pushforward=_scalar_astype)
register_linear(np.ndarray.view, _identity_adjoint, "ndarray_view", check=_check_view)


def _real_adjoint(ȳ: Any, x: Any) -> Any:
    return np.real(ȳ)


def _imag_adjoint(ȳ: Any, x: Any) -> Any:
    if not np.iscomplexobj(x):
        return _ZERO  # a real array's imaginary part is the constant 0
    return 1j * np.real(ȳ)


def _mT(x: Any) -> Any:
    return np.swapaxes(x, -1, -2)


# name -> (the attribute as a linear function, its adjoint)
_DIFFERENTIABLE_ATTRIBUTES = {
    "T": (np.transpose, _transpose_adjoint),
    "mT": (_mT, _involution(_mT)),
    "real": (np.real, _real_adjoint),
    "imag": (np.imag, _imag_adjoint),
}


def _attribute(x: Any, name: str) -> Any:
    y = getattr(x, name)
    if callable(y) and name not in _DIFFERENTIABLE_ATTRIBUTES:
        raise TypeError(
            f"getattr({type(x).__name__}, {name!r}) read a method for differentiation; "
            "method calls are resolved by the AD, never through getattr.\n"
            f"To fix: call the method directly (x.{name}(...)) or use np.{name}(x, ...)."
        )
    return y


@rrule.register(getattr)
def _(x: DuckArray | np.generic, name: str) -> Any:
    y = _attribute(x, name)
    entry = _DIFFERENTIABLE_ATTRIBUTES.get(name)

    def getattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if entry is None:
            return _NO, _NO, _NO
        if isinstance(ȳ, AbstractZero):
            return _NO, _ZERO, _NO
        return _NO, ProjectTo(x)(entry[1](ȳ, x)), _NO

    getattr_pullback.__name__ = getattr_pullback.__qualname__ = f"getattr_{name}_pullback"
    return y, getattr_pullback


@frule.register(getattr)
def _(ḟ: Any, ẋ: Any, ṅ: Any, x: DuckArray | np.generic, name: str) -> Any:
    y = _attribute(x, name)
    entry = _DIFFERENTIABLE_ATTRIBUTES.get(name)
    if entry is None:
        return y, _NO
    ẋ = unthunk(ẋ)
    if isinstance(ẋ, AbstractZero):
        return y, _ZERO
    return y, match_output(y, entry[0](dense(ẋ, x)))
