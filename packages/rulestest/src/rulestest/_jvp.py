"""``jvp`` and ``j_vp``: Jacobian-vector and vector-Jacobian products by finite differences.

Both work on any structure :func:`rulestest.to_vec` understands. ``jvp`` costs
one (vector-valued) finite-difference estimate; ``j_vp`` costs one per input
coordinate, so use it on small inputs only (the testers use random directions
for large ones).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._finite_differences import FiniteDifferenceMethod
from ._to_vec import Layout, _Array, _Complex, _Real, layout

__all__ = ["j_vp", "jvp"]


def precision(*nodes: Layout) -> float:
    """The relative precision of the least precise floating leaf (float64 if none)."""
    eps = float(np.finfo(np.float64).eps)
    for node in nodes:
        for _, leaf, _ in node.leaves(""):
            if isinstance(leaf, _Array):
                dtype = leaf.dtype
            elif isinstance(leaf, (_Real, _Complex)):
                dtype = np.asarray(leaf.primal).dtype
            else:
                continue
            if dtype.kind in "fc":
                eps = max(eps, float(np.finfo(dtype).eps))
    return eps


def directional_derivative(
    fdm: FiniteDifferenceMethod,
    f: Callable[..., Any],
    x_node: Layout,
    y_node: Layout,
    x_vec: np.ndarray,
    direction: np.ndarray,
    eps: float,
) -> np.ndarray:
    """``J·d`` in ``y_node``'s coordinates, for ``f`` taking the primals of ``x_node``."""

    def along(t: float) -> np.ndarray:
        return y_node.to_vec(f(*x_node.from_vec(x_vec + t * direction)))

    return np.asarray(fdm(along, 0.0, eps=eps), dtype=np.float64).reshape(-1)


def jvp(fdm: FiniteDifferenceMethod, f: Callable[..., Any], *pairs: tuple[Any, Any]) -> Any:
    """The tangent of ``f(*xs)`` along the tangents ``ẋs``, from ``(x, ẋ)`` pairs.

    >>> from rulestest import central_fdm
    >>> ẏ = jvp(central_fdm(5, 1), np.multiply, (np.array([1.0, 2.0]), np.array([1.0, 0.0])),
    ...         (np.array([3.0, 4.0]), np.zeros(2)))
    >>> np.round(ẏ, 10)
    array([3., 0.])

    See also: :func:`j_vp`, :func:`rulestest.to_vec`.
    """
    xs = tuple(x for x, _ in pairs)
    x_node = layout(xs)
    x_vec = x_node.to_vec(xs)
    direction = x_node.tangent_to_vec(tuple(t for _, t in pairs), "args")
    y_node = layout(f(*xs))
    d = directional_derivative(fdm, f, x_node, y_node, x_vec, direction, precision(x_node, y_node))
    return y_node.from_vec(d)


def j_vp(fdm: FiniteDifferenceMethod, f: Callable[..., Any], ȳ: Any, *xs: Any) -> tuple:
    """The cotangents ``J'ȳ`` of ``f(*xs)``, one per argument, coordinate by coordinate.

    Complex numbers use ChainRules' convention (``∂L/∂re + i ∂L/∂im``).

    >>> from rulestest import central_fdm
    >>> [round(v, 10) for v in j_vp(central_fdm(5, 1), lambda a, b: a * b, 1.0, 2.0, 3.0)]
    [3.0, 2.0]

    See also: :func:`jvp`.
    """
    x_node = layout(xs)
    x_vec = x_node.to_vec(xs)
    y_node = layout(f(*xs))
    ȳ_vec = y_node.tangent_to_vec(ȳ, "ȳ")
    eps = precision(x_node, y_node)
    out = np.zeros(x_node.size)
    for i in range(x_node.size):
        e = np.zeros(x_node.size)
        e[i] = 1.0
        out[i] = ȳ_vec @ directional_derivative(fdm, f, x_node, y_node, x_vec, e, eps)
    return x_node.from_vec(out)
