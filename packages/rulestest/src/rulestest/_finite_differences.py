"""Finite-difference methods with adaptive step size, after FiniteDifferences.jl.

A method is a stencil (``grid``, integer or half-integer offsets) and the
coefficients that turn ``f(x + g·h)`` into the ``q``-th derivative. The step
``h`` balances two errors:

* round-off, about ``ε·Σ|cᵢ| / hᵠ`` where ``ε`` is the machine epsilon times the
  magnitude of ``f`` near ``x``;
* truncation, about ``M·Σ|cᵢ gᵢᵖ| / p! · hᵖ⁻ᵠ`` where ``M`` bounds the ``p``-th
  derivative of ``f`` near ``x``.

An adaptive method (``adapt >= 1``) estimates ``M`` with a ``(p+2)``-point
method for the ``p``-th derivative (itself adaptive to level ``adapt - 1``),
taking the largest of its estimates at ``x - h``, ``x`` and ``x + h`` from one
set of evaluations. ``f`` may return a float or a 1-d array (every component is
differentiated at once; the bounds are the largest over the components).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["FiniteDifferenceMethod", "backward_fdm", "central_fdm", "forward_fdm"]

_EPS64 = float(np.finfo(np.float64).eps)


def _coefficients(grid: tuple[Fraction, ...], q: int) -> tuple[float, ...]:
    """Solve the Vandermonde system ``Σⱼ cⱼ gⱼⁱ = q!·[i == q]`` exactly (rationals)."""
    p = len(grid)
    rows = [[g**i for g in grid] + [Fraction(math.factorial(q) if i == q else 0)] for i in range(p)]
    for col in range(p):
        pivot = next(r for r in range(col, p) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        lead = rows[col][col]
        rows[col] = [v / lead for v in rows[col]]
        for r in range(p):
            if r != col and rows[r][col] != 0:
                k = rows[r][col]
                rows[r] = [a - k * b for a, b in zip(rows[r], rows[col])]
    return tuple(float(r[-1]) for r in rows)


class FiniteDifferenceMethod:
    """A ``p``-point finite-difference method for the ``q``-th derivative.

    Call it as ``fdm(f, x)``. Build one with :func:`central_fdm`,
    :func:`forward_fdm` or :func:`backward_fdm`.

    >>> fdm = central_fdm(5, 1)
    >>> round(fdm(np.sin, 0.0), 12)
    1.0
    >>> fdm.coefs
    (0.08333333333333333, -0.6666666666666666, 0.0, 0.6666666666666666, -0.08333333333333333)
    """

    def __init__(
        self,
        grid: tuple[Fraction, ...],
        q: int,
        *,
        adapt: int,
        condition: float,
        factor: float,
        max_range: float,
        bound_estimator: FiniteDifferenceMethod | None,
    ) -> None:
        self.grid = tuple(float(g) for g in grid)
        self.q = q
        self.coefs = _coefficients(grid, q)
        self.adapt = adapt
        self.condition = condition
        self.factor = factor
        self.max_range = max_range
        self.bound_estimator = bound_estimator
        # The same evaluations, read as stencils centred at x - h and x + h: used
        # when this method bounds a derivative near x for an adaptive method.
        self._neighbour_coefs = tuple(_coefficients(tuple(g - s for g in grid), q) for s in (-1, 1))

    def __repr__(self) -> str:
        return (
            f"FiniteDifferenceMethod(p={len(self.grid)}, q={self.q}, grid={self.grid}, "
            f"adapt={self.adapt})"
        )

    def __call__(
        self,
        f: Callable[[float], Any],
        x: float = 0.0,
        *,
        step: float | None = None,
        eps: float = _EPS64,
    ) -> Any:
        """Estimate the ``q``-th derivative of ``f`` at ``x``.

        ``eps`` is the relative precision ``f`` computes in (float64 by
        default; pass ``np.finfo(np.float32).eps`` for float32 code).
        """
        x = float(x)
        h = self.estimate_step(f, x, eps=eps)[0] if step is None else float(step)
        fs = self._evaluate(f, x, h)
        return self._combine(fs, self.coefs, h)

    def estimate_step(
        self, f: Callable[[float], Any], x: float = 0.0, *, eps: float = _EPS64
    ) -> tuple[float, float]:
        """The step ``h`` for ``f`` at ``x`` and the estimated accuracy of the result."""
        if self.bound_estimator is None:
            return self._limit(*self._step_and_accuracy(self.condition, eps * max(1.0, abs(x))))
        bound_mag, f_mag = self.bound_estimator._magnitudes(f, x, eps)
        if bound_mag == 0.0 or f_mag == 0.0 or not math.isfinite(bound_mag * f_mag):
            return self._limit(*self._step_and_accuracy(self.condition, eps * max(1.0, abs(x))))
        return self._limit(*self._step_and_accuracy(bound_mag, eps * f_mag))

    def _step_and_accuracy(self, bound: float, f_error: float) -> tuple[float, float]:
        p, q = len(self.grid), self.q
        c1 = f_error * self.factor * sum(abs(c) for c in self.coefs)
        c2 = bound * sum(abs(c * g**p) for c, g in zip(self.coefs, self.grid)) / math.factorial(p)
        h = (q / (p - q) * (c1 / c2)) ** (1 / p)
        return h, h**-q * c1 + h ** (p - q) * c2

    def _limit(self, h: float, accuracy: float) -> tuple[float, float]:
        # No stencil point may leave [x - max_range, x + max_range].
        reach = max(abs(g) for g in self.grid)
        if h * reach > self.max_range:
            h = self.max_range / reach
        return h, accuracy

    def _evaluate(self, f: Callable[[float], Any], x: float, h: float) -> list[Any]:
        return [
            None if c == 0.0 else np.asarray(f(x + g * h), dtype=np.float64)
            for g, c in zip(self.grid, self.coefs)
        ]

    def _combine(self, fs: list[Any], coefs: tuple[float, ...], h: float) -> Any:
        total: Any = 0.0
        for c, v in zip(coefs, fs):
            if c != 0.0:
                total = total + c * v
        total = total / h**self.q
        return float(total) if np.ndim(total) == 0 else total

    def _magnitudes(self, f: Callable[[float], Any], x: float, eps: float) -> tuple[float, float]:
        """Bounds on ``|f⁽ᵠ⁾|`` and ``|f|`` in a neighbourhood of ``x``."""
        h = self.estimate_step(f, x, eps=eps)[0]
        fs = [np.asarray(f(x + g * h), dtype=np.float64) for g in self.grid]
        estimates = [self._combine(fs, c, h) for c in (self.coefs, *self._neighbour_coefs)]
        bound = max(float(np.max(np.abs(e), initial=0.0)) for e in estimates)
        f_mag = max(float(np.max(np.abs(v), initial=0.0)) for v in fs)
        return bound, f_mag


def _method(
    grid: tuple[Fraction, ...],
    q: int,
    adapt: int,
    condition: float,
    factor: float,
    max_range: float,
    make_grid: Callable[[int], tuple[Fraction, ...]],
) -> FiniteDifferenceMethod:
    p = len(grid)
    bound = None
    if adapt >= 1:
        bound = _method(make_grid(p + 2), p, adapt - 1, condition, factor, max_range, make_grid)
    return FiniteDifferenceMethod(
        grid,
        q,
        adapt=adapt,
        condition=condition,
        factor=factor,
        max_range=max_range,
        bound_estimator=bound,
    )


def _check_order(p: int, q: int) -> None:
    if not 1 <= q < p:
        raise ValueError(
            f"a finite-difference method for derivative {q} needs q >= 1 and more than q "
            f"points; got p={p} points"
        )


def _central_grid(p: int) -> tuple[Fraction, ...]:
    # Odd p: -k..k; even p: half-integers, symmetric about 0.
    return tuple(Fraction(2 * i - (p - 1), 2) for i in range(p))


def _forward_grid(p: int) -> tuple[Fraction, ...]:
    return tuple(Fraction(i) for i in range(p))


def _backward_grid(p: int) -> tuple[Fraction, ...]:
    return tuple(Fraction(i - (p - 1)) for i in range(p))


def central_fdm(
    p: int = 5,
    q: int = 1,
    *,
    adapt: int = 1,
    condition: float = 10.0,
    factor: float = 1.0,
    max_range: float = math.inf,
) -> FiniteDifferenceMethod:
    """A ``p``-point central method for the ``q``-th derivative, with adaptive step.

    ``adapt`` is the number of levels of step-size adaptation (0: a default
    step from ``condition``, an assumed bound on the derivatives); ``factor``
    scales the assumed round-off error of ``f``; ``max_range`` bounds how far
    from ``x`` the method may evaluate ``f`` (use it near a domain boundary).

    >>> import math
    >>> fdm = central_fdm(5, 1)
    >>> abs(fdm(math.exp, 1.0) - math.e) < 1e-12
    True
    >>> abs(central_fdm(7, 2)(math.sin, 0.5) + math.sin(0.5)) < 1e-8
    True

    See also: :func:`forward_fdm`, :func:`rulestest.jvp`.
    """
    _check_order(p, q)
    return _method(_central_grid(p), q, adapt, condition, factor, max_range, _central_grid)


def forward_fdm(
    p: int = 5,
    q: int = 1,
    *,
    adapt: int = 1,
    condition: float = 10.0,
    factor: float = 1.0,
    max_range: float = math.inf,
) -> FiniteDifferenceMethod:
    """A ``p``-point one-sided method evaluating ``f`` at ``x, x+h, ...`` only.

    >>> abs(forward_fdm(5, 1)(math.sqrt, 0.25) - 1.0) < 1e-6
    True
    """
    _check_order(p, q)
    return _method(_forward_grid(p), q, adapt, condition, factor, max_range, _forward_grid)


def backward_fdm(
    p: int = 5,
    q: int = 1,
    *,
    adapt: int = 1,
    condition: float = 10.0,
    factor: float = 1.0,
    max_range: float = math.inf,
) -> FiniteDifferenceMethod:
    """A ``p``-point one-sided method evaluating ``f`` at ``x, x-h, ...`` only.

    >>> abs(backward_fdm(5, 1)(math.log, 1.0) - 1.0) < 1e-6
    True
    """
    _check_order(p, q)
    return _method(_backward_grid(p), q, adapt, condition, factor, max_range, _backward_grid)
