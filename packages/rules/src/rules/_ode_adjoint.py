"""The adjoint and sensitivity machinery shared by the rules of scipy's ODE solvers
(``odeint`` in ``_scipy_integrate``, ``solve_ivp`` in ``_scipy_integrate_ivp``).

For ``y' = f(y, t, θ)`` solved from ``y(t_0) = y0`` and read at output times
``τ_0 … τ_{T-1}`` (``θ``: the floating-point ``args`` and the numbers and arrays
``f`` reads from its closure):

* Reverse (the adjoint ODE): from ``τ_{T-1}`` back to ``t_0``, ``a' = -(∂f/∂y)ᴴ a``
  and ``θ̄' = -(∂f/∂θ)ᴴ a``, integrated with ``y`` itself (restarted from the stored
  ``y(τ_i)`` on each segment), ``a`` jumping by ``ȳ(τ_i)`` at each output time.
  ``y0`` gets ``a(t_0)``, each output time ``τ_i`` gets ``Re⟨ȳ_i, f(y_i, τ_i)⟩`` and
  the start ``t_0`` gets ``-Re⟨a(t_0), f(y0, t_0)⟩`` (the whole curve moves with it).
* Forward (the sensitivity equations): ``s' = (∂f/∂y) s + (∂f/∂θ) θ̇`` from
  ``s(t_0) = ẏ0 - f(y0, t_0) ṫ_0``, integrated with ``y``; the output tangent is
  ``s(τ_i) + f(y_i, τ_i) ṫ_i``.

``∂f`` comes from the AD that calls the rule (``rrule_via_ad`` / ``frule_via_ad``
on ``f``): the rules need a ``RuleConfig`` with the AD's modes and raise without one.
Complex states (``solve_ivp`` with a complex ``y0``) follow the same equations, the
AD's pullbacks being the adjoints ``(∂f/∂y)ᴴ``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    backing,
    frule_via_ad,
    non_differentiable,
    rrule_via_ad,
    unthunk,
)

from ._numpy_linear import dense
from ._util import project

__all__: list[str] = []

_NO = NoTangent()
_T: Any = Tangent  # Tangent[P]: a class made at runtime, which mypy cannot index
_ZERO = ZeroTangent()


def where(func: Any) -> str:
    """``func``'s name and the file and line of its definition."""
    code = getattr(func, "__code__", None)
    if code is None:
        return repr(func)
    return f"{getattr(func, '__qualname__', func)} ({code.co_filename}:{code.co_firstlineno})"


def user_line() -> str:
    """file:line of the innermost caller outside this project's packages, numpy, scipy
    and the standard library: the user's call of the solver (under ad, the line of the
    differentiated code, which keeps the user's file and line numbers)."""
    skip = [os.path.dirname(os.__file__)]
    for name in ("rules", "rulescore", "rulestest", "ad", "numpy", "scipy"):
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            skip.append(os.path.dirname(path))
    prefixes = tuple(skip)
    frame: Any = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(prefixes) and not name.startswith("<frozen"):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


non_differentiable(user_line)


def no_config(who: str, func: Any) -> Any:
    """The error of a solver's rule called without an AD (no ``rrule_via_ad``)."""
    raise TypeError(
        f"{who}: differentiating the solution of y' = func(...) needs the derivatives of "
        f"func = {where(func)}, which only an AD supplies (a RuleConfig with "
        "HasReverseMode / HasForwardsMode, which ad.gradient and ad.jvp pass); this call "
        f"(at {user_line()}) has none.\nTo fix: differentiate through ad (ad.gradient, "
        "ad.jvp), or call rulescore.rrule/frule with such a config first."
    )


def floating(a: Any) -> bool:
    """Whether ``a`` (an ``args`` entry, a closure value) is a floating-point number or array."""
    if isinstance(a, (float, complex)):
        return True
    return isinstance(a, (np.ndarray, np.inexact)) and a.dtype.kind in "fc"


non_differentiable(floating)


def rhs(func: Any, tfirst: bool, y: Any, t: Any, *args: Any) -> Any:
    """``func``'s value as a flat array (it may return a list)."""
    out = func(t, y, *args) if tfirst else func(y, t, *args)
    return np.ravel(np.asarray(out))


def captured(func: Any) -> list:
    """``(name, value)`` of the floating-point numbers and arrays in ``func``'s closure."""
    out = []
    names = getattr(getattr(func, "__code__", None), "co_freevars", ())
    for name, cell in zip(names, getattr(func, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if floating(value):
            out.append((name, value))
    return out


non_differentiable(captured)


class RightHandSide:
    """``y' = func(y, t, *args)`` (``tfirst``: ``func(t, y, *args)``) of one solver call:
    which ``args`` and closure values carry a derivative, and the fields of the
    adjoint and sensitivity systems. ``who`` names the solver and ``fix`` shows how to
    pass values through ``args`` in its errors."""

    def __init__(self, who: str, fix: str, func: Any, tfirst: bool, args: tuple) -> None:
        self.who, self.fix = who, fix
        self.func, self.tfirst, self.args = func, tfirst, args
        self.active = [floating(a) for a in args]
        self.sizes = [int(np.size(a)) if on else 0 for a, on in zip(args, self.active)]
        self.captured = captured(func)
        self.P = sum(self.sizes) + sum(int(np.size(v)) for _, v in self.captured)

    def f(self, y: Any, t: Any) -> np.ndarray:
        return rhs(self.func, self.tfirst, y, t, *self.args)

    def adjoint_field(self, config: Any, D: int, complex_state: bool) -> Callable:
        """``(y, a, θ̄)' `` as a function of the flat state and the time."""
        part = np.asarray if complex_state else np.real

        def adjoint(state: np.ndarray, s: float) -> np.ndarray:
            y, a = state[:D], state[D : 2 * D]
            fy, pb = rrule_via_ad(config, rhs, self.func, self.tfirst, y, s, *self.args)
            cot = pb(-a)
            parts = [np.ravel(fy), part(np.ravel(dense(cot[3], y)))]
            for d, arg, on in zip(cot[5:], self.args, self.active):
                if on:
                    parts.append(part(np.ravel(dense(d, arg))))
            return np.concatenate([*parts, *(part(c) for c in self._closure_parts(cot[1]))])

        return adjoint

    def _closure_parts(self, df: Any) -> list:
        """The cotangents of ``func``'s captured variables, flat, in ``captured`` order."""
        df = unthunk(df)
        if isinstance(df, AbstractZero) or df is None:
            return [np.zeros(np.size(v)) for _, v in self.captured]
        fields = backing(df) if isinstance(df, Tangent) else None
        known = {name for name, _ in self.captured}
        other = [
            k
            for k, v in (fields.items() if isinstance(fields, dict) else [("?", df)])
            if k not in known and not isinstance(unthunk(v), AbstractZero)
        ]
        if other:
            raise NotImplementedError(
                f"{self.who}: func = {where(self.func)} reads {', '.join(other)} from "
                "outside its arguments, and its derivative there is not a number or "
                "array that the reverse (adjoint) rule can integrate.\nTo fix: pass the "
                f"numbers and arrays it depends on through args, e.g. {self.fix}, or use "
                "forward mode (ad.jvp)."
            )
        return [np.ravel(dense(getattr(df, name), v)) for name, v in self.captured]

    def sensitivity_field(
        self, config: Any, ḟunc: Any, ȧrgs: list, D: int, complex_state: bool
    ) -> Callable:
        """``(y, s)'`` as a function of the flat state and the time."""
        arg_ts = tuple(_ZERO if isinstance(d, AbstractZero) else d for d in ȧrgs)
        part = np.asarray if complex_state else np.real

        def sensitivity(state: np.ndarray, s: float) -> np.ndarray:
            y, v = state[:D], state[D:]
            ins = (_ZERO, ḟunc, _NO, v, _ZERO, *arg_ts)
            fy, ḟy = frule_via_ad(config, ins, rhs, self.func, self.tfirst, y, s, *self.args)
            ḟy = unthunk(ḟy)
            if isinstance(ḟy, AbstractZero):
                return np.concatenate([np.ravel(fy), np.zeros(D, state.dtype)])
            return np.concatenate([np.ravel(fy), part(np.ravel(dense(ḟy, fy)))])

        return sensitivity

    def func_cotangent(self, θ̄: np.ndarray) -> Any:
        """``func``'s cotangent (a ``Tangent`` of its captured values) from the flat ``θ̄``."""
        if not self.captured:
            return _ZERO
        k, fields = sum(self.sizes), {}
        for name, v in self.captured:
            size = int(np.size(v))
            fields[name] = project(v, np.reshape(θ̄[k : k + size], np.shape(v)))
            k += size
        return _T[type(self.func)](**fields)

    def args_cotangents(self, θ̄: np.ndarray) -> list:
        """One cotangent per ``args`` entry (``NoTangent()`` for counts, flags, functions)."""
        out, k = [], 0
        for arg, on, size in zip(self.args, self.active, self.sizes):
            out.append(project(arg, np.reshape(θ̄[k : k + size], np.shape(arg))) if on else _NO)
            k += size
        return out


def adjoint_sweep(
    segment: Callable,
    field: Callable,
    ys: np.ndarray,
    times: np.ndarray,
    t0: float,
    g: np.ndarray,
    P: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``(a(t_0), θ̄)``: the adjoint integrated from the last output time back to
    ``t0``, jumping by ``g[i]`` at ``times[i]``. ``segment(field, state, t_from, t_to)``
    is the state at ``t_to`` (a solver call); ``ys[i]`` is ``y(times[i])``."""
    D = ys.shape[1]
    a, θ̄ = g[-1], np.zeros(P, dtype=g.dtype)
    stops = [*times[::-1][1:], t0]
    starts = times[::-1]
    for i, (t_from, t_to) in enumerate(zip(starts, stops)):
        k = len(times) - 1 - i
        if t_to != t_from:
            out = segment(field, np.concatenate([ys[k], a, θ̄]), t_from, t_to)
            a, θ̄ = out[D : 2 * D], out[2 * D :]
        if k > 0:
            a = a + g[k - 1]
    return a, θ̄


def time_cotangents(f: Callable, ys: np.ndarray, times: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``Re⟨g_i, f(y_i, τ_i)⟩``: each output time's cotangent (``y(τ)`` moves by ``f``)."""
    return np.array([np.real(np.vdot(g[i], f(ys[i], times[i]))) for i in range(len(times))])


def output_cotangent(ȳ: Any, names: tuple) -> list:
    """The entries ``names`` of the cotangent of a result object (a ``Tangent`` of it, of
    a dict, or a dict): zeros for those missing."""
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return [_ZERO] * len(names)
    fields = backing(ȳ) if isinstance(ȳ, Tangent) else ȳ
    if not isinstance(fields, dict):
        raise TypeError(f"a cotangent of a solver's result object: got {type(ȳ).__name__}")
    return [unthunk(fields.get(n, _ZERO)) for n in names]
