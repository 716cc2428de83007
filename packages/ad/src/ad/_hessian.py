"""Second derivatives: ``hessian``, ``hessian_reverse`` and ``diaghessian``.

``hessian`` differentiates ``gradient`` in forward mode, one pushforward of
``x ↦ ∇f(x)`` per input element (a column of ``H``; each is reverse mode over
forward mode, see ``_nested``); ``hessian_reverse`` is reverse mode over
reverse mode, one pullback per output element (a row), differentiating the
generated adjoint and the rules' pullbacks (see ``_over_reverse``);
``diaghessian`` takes one Hessian-vector product ``∇ₓ ⟨∇f(x), v⟩`` per input
element and keeps its diagonal entry. All are exact to rounding.
Arrays are flattened in numpy's C order, as in ``jacobian``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import ZeroTangent

from ._api import _seed, bind_keywords, gradient, to_user
from ._forward_api import jvp
from ._jacobian import jacobian
from ._nested import directional, reverse_over_forward
from ._over_reverse import gradient_pure
from .errors import NonScalarOutputError

__all__ = ["diaghessian", "hessian", "hessian_reverse"]

_Z = ZeroTangent()


def _first_gradient(f: Callable, x: Any) -> Any:
    """``∇f(x)``: the function whose derivative is the Hessian."""
    return gradient(f, x)[0]


def _check_scalar(name: str, f: Callable, args: tuple) -> None:
    y = f(*args)
    try:
        _seed(y, f)
    except NonScalarOutputError as e:
        fname = getattr(f, "__name__", repr(f))
        raise NonScalarOutputError(
            f"{name}({fname}, ...) needs f to return a real number (the Hessian of a "
            f"vector-valued function is a 3-index array).\n{str(e).split(chr(10), 1)[-1]}"
        ) from None


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def _as_array(name: str, x: Any) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "fiuc":
        raise TypeError(
            f"{name} needs a number or an array of numbers, got {type(x).__name__}"
            + (f" of dtype {a.dtype}" if a.dtype.kind != "O" else "")
        )
    return a


def hessian(f: Callable, x: Any, /, **kwargs: Any) -> Any:
    """The Hessian of a real-valued ``f`` at ``x``: forward mode over ``gradient``.

    For an array (or nested list) ``x`` the result is the matrix
    ``H[k, l] = ∂²f/∂x[k]∂x[l]`` with ``x`` flattened in C order, so
    ``H.shape == (x.size, x.size)``; for a number, a number. Each column is
    one pushforward of ``∇f`` (a Hessian-vector product, computed as reverse
    mode over forward mode), so the cost is ``x.size`` times a few gradients.
    Keyword arguments are passed to ``f`` and not differentiated.

    >>> import numpy as np
    >>> hessian(lambda x: x[0] * x[1], np.array([1.0, 2.0]))
    array([[0., 1.],
           [1., 0.]])
    >>> import math
    >>> hessian(math.sin, math.pi / 2)
    -1.0
    >>> hessian(lambda x, c=1.0: c * x**3, 2.0, c=0.5)
    6.0

    See also: hessian_reverse, diaghessian, jacobian.
    """
    f = bind_keywords(f, kwargs)
    _check_scalar("hessian", f, (x,))
    if _is_number(x):
        ẏ = jvp(_first_gradient, (f, x), (None, 1.0))[1]
        return 0.0 if ẏ is None else ẏ
    _as_array("hessian", x)
    return jacobian(lambda x: _first_gradient(f, x), x, mode="forward")[0]


def hessian_reverse(f: Callable, x: Any) -> Any:
    """The Hessian of a real-valued ``f`` at ``x``: reverse mode over reverse mode.

    The same matrix as ``hessian``, one row per pullback. The first gradient is
    computed by ``f``'s generated primal and adjoint in their pure form, and the
    second reverse pass differentiates that adjoint and every rule's pullback it
    calls, as source (see ``ad._over_reverse``): a test of the whole design, and a
    cross-check of ``hessian``. A rule whose pullback cannot be differentiated
    again raises an error naming it; ``hessian`` does not need that. It takes
    no keyword arguments for ``f``: reverse over reverse follows positional
    calls only (``hessian`` does).

    >>> import numpy as np
    >>> hessian_reverse(lambda x: np.sum(x**3), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[ 6.,  0.,  0.,  0.],
           [ 0., 12.,  0.,  0.],
           [ 0.,  0., 18.,  0.],
           [ 0.,  0.,  0., 24.]])

    See also: hessian.
    """
    _check_scalar("hessian_reverse", f, (x,))
    if _is_number(x):
        ct = jacobian(lambda x: gradient_pure(f, x), float(x), mode="reverse")[0]
        return float(np.asarray(ct).reshape(-1)[0])
    _as_array("hessian_reverse", x)
    return jacobian(lambda x: gradient_pure(f, x), x, mode="reverse")[0]


def hvp(f: Callable, args: tuple, directions: tuple) -> tuple:
    """``∇ ⟨∇f(args), v⟩``: the Hessian of ``f`` times ``directions`` (one per argument,
    ``None`` for none), for every argument — reverse mode over forward mode."""
    ts = tuple(_Z if v is None else v for v in directions)
    raw = reverse_over_forward(directional, 1.0, f, (_Z, *ts), *args)  # (_, f, ts, *args)
    return tuple(to_user(c) for c in raw[3:])


def diaghessian(f: Callable, /, *args: Any, **kwargs: Any) -> tuple:
    """The diagonal of the Hessian of a real-valued ``f``, one entry per argument.

    For each array argument, an array of its shape holding ``∂²f/∂a[i]²``;
    for a number, a number; for anything else, ``None``. It takes one
    Hessian-vector product per element (reverse over forward mode), and
    never forms the whole matrix. Keyword arguments are passed to ``f`` and
    not differentiated.

    >>> import math
    >>> d = diaghessian(lambda x, y: math.sin(x * y), 1.0, 2.0)
    >>> [round(v, 12) for v in d] == [round(-4 * math.sin(2.0), 12), round(-math.sin(2.0), 12)]
    True

    See also: hessian.
    """
    f = bind_keywords(f, kwargs)
    _check_scalar("diaghessian", f, args)
    out: list[Any] = []
    for i, a in enumerate(args):
        none = [None] * len(args)
        if _is_number(a):
            none[i] = 1.0
            d = hvp(f, args, tuple(none))[i]
            out.append(0.0 if d is None else d)
            continue
        if not isinstance(a, (np.ndarray, list)):
            out.append(None)
            continue
        arr = _as_array("diaghessian", a)
        flat = np.zeros(arr.size)
        dtype = np.result_type(arr.dtype, np.float64)
        for k in range(arr.size):
            e = np.zeros(arr.shape, dtype=dtype)
            e.flat[k] = 1.0
            none[i] = e if isinstance(a, np.ndarray) else e.tolist()
            col = hvp(f, args, tuple(none))[i]
            flat[k] = 0.0 if col is None else np.asarray(col, dtype=float).reshape(-1)[k]
        out.append(flat.reshape(arr.shape))
    return tuple(out)
