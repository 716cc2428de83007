"""The adjoint and sensitivity machinery shared by the rules of scipy's ODE solvers
(``odeint`` in ``_scipy_integrate``, ``solve_ivp`` in ``_scipy_integrate_ivp``).

For ``y' = f(y, t, θ)`` solved from ``y(t_0) = y0`` and read at output times
``τ_0 … τ_{T-1}`` (``θ``: the floating-point ``args``, and the numbers and arrays
that ``f`` and the functions among ``args`` read from their closures):

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

The fields of both systems (``adjoint_rhs``, ``sensitivity_rhs``) are functions of
this module that receive ``f``, the ``args`` and the tangents as arguments (the
solver's ``args``), with a ``Layout`` of what carries no derivative: a second
derivative differentiates the rules' bodies, and with them those solves, by these
same rules (a closure hiding ``f`` and ``args`` would have no derivative to give).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FunctionType
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
non_differentiable(where)


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
    which values carry a derivative (its parameters ``θ``), and the fields of the
    adjoint and sensitivity systems. ``who`` names the solver and ``fix`` shows how to
    pass values through ``args`` in its errors.

    The parameters, in ``θ``'s order (``slots``: ``(i, None)``, ``(i, name)`` or
    ``(None, name)``): the floating-point ``args``; the floating-point values that a
    function among ``args`` reads from its closure; those ``func`` reads from its own.
    """

    def __init__(self, who: str, fix: str, func: Any, tfirst: bool, args: tuple) -> None:
        self.who, self.fix = who, fix
        self.func, self.tfirst, self.args = func, tfirst, args
        slots: list = []
        values: list = []
        for i, a in enumerate(args):
            if floating(a):
                slots.append((i, None))
                values.append(a)
            elif isinstance(a, FunctionType):
                for name, v in captured(a):
                    slots.append((i, name))
                    values.append(v)
        for name, v in captured(func):
            slots.append((None, name))
            values.append(v)
        self.slots, self.values = slots, values
        self.sizes = [int(np.size(v)) for v in values]
        self.P = sum(self.sizes)

    def f(self, y: Any, t: Any) -> np.ndarray:
        return rhs(self.func, self.tfirst, y, t, *self.args)

    def adjoint_field(self, config: Any, D: int, complex_state: bool) -> tuple:
        """``(adjoint_rhs, its args)``: ``(y, a, θ̄)'`` of the flat state and the time."""
        return adjoint_rhs, (Layout(self, config, D, complex_state), self.func, *self.args)

    def sensitivity_field(
        self, config: Any, ḟunc: Any, ȧrgs: list, D: int, complex_state: bool
    ) -> tuple:
        """``(sensitivity_rhs, its args)``: ``(y, s)'`` of the flat state and the time."""
        lay = Layout(self, config, D, complex_state, ḟunc, ȧrgs)
        return sensitivity_rhs, (lay, self.func, *self.args, *lay.leaf_tangents(ḟunc, ȧrgs))

    def func_cotangent(self, θ̄: np.ndarray) -> Any:
        """``func``'s cotangent (a ``Tangent`` of its captured values) from the flat ``θ̄``."""
        return self._closure_cotangent(self.func, None, θ̄)

    def args_cotangents(self, θ̄: np.ndarray) -> list:
        """One cotangent per ``args`` entry: a number or array for a floating-point one,
        a ``Tangent`` of its captured values for a function, else ``NoTangent()``."""
        out: list = [_NO] * len(self.args)
        k = 0
        for (i, name), v, size in zip(self.slots, self.values, self.sizes):
            if i is not None and name is None:
                out[i] = project(v, np.reshape(θ̄[k : k + size], np.shape(v)))
            k += size
        for i, a in enumerate(self.args):
            if isinstance(a, FunctionType):
                out[i] = self._closure_cotangent(a, i, θ̄)
        return out

    def _closure_cotangent(self, fn: Any, owner: Any, θ̄: np.ndarray) -> Any:
        fields, k = {}, 0
        for (i, name), v, size in zip(self.slots, self.values, self.sizes):
            if i == owner and name is not None:
                fields[name] = project(v, np.reshape(θ̄[k : k + size], np.shape(v)))
            k += size
        if not fields:
            return _ZERO if owner is None else _NO
        return _T[type(fn)](**fields)


class Layout:
    """What a field of a ``RightHandSide`` needs that carries no derivative: the
    config, the sizes and the parameters' slots and shapes. The fields are functions
    of the module, given ``func``, ``args`` and the tangents through the solver's own
    ``args``: an AD that differentiates a rule's body again (second order) then
    differentiates the solve of the field like any other, ``func`` and ``args`` being
    its arguments rather than values a closure hides."""

    def __init__(
        self, rhs_: RightHandSide, config: Any, D: int, complex_state: bool, *given: Any
    ) -> None:
        self.config, self.tfirst, self.D = config, rhs_.tfirst, D
        self.part = np.asarray if complex_state else np.real
        self.n, self.slots = len(rhs_.args), rhs_.slots
        self.templates = [np.zeros(np.shape(v), np.result_type(v, float)) for v in rhs_.values]
        self.who, self.fix, self.where = rhs_.who, rhs_.fix, where(rhs_.func)
        self.types = [type(rhs_.func), *(type(a) for a in rhs_.args)]
        # the tangents given (sensitivity) of what is no parameter: kept as they are
        self.given = given

    def leaf_tangents(self, ḟunc: Any, ȧrgs: list) -> list:
        """The tangent of each parameter, in ``θ``'s order (zeros stay zeros)."""
        return [unthunk(_part(ḟunc if i is None else ȧrgs[i], name)) for i, name in self.slots]

    def tangents(self, leaves: tuple) -> tuple:
        """``(ḟunc, ȧrgs)``: the tangents given, with the parameters' from ``leaves``."""
        ḟunc, ȧrgs = self.given
        return self._tangent_of(None, ḟunc, leaves), [
            self._tangent_of(i, t, leaves) for i, t in enumerate(ȧrgs)
        ]

    def _tangent_of(self, owner: Any, old: Any, leaves: tuple) -> Any:
        """The tangent of ``func`` (``owner`` None) or of ``args[owner]``: ``old`` with its
        parameters' tangents from ``leaves`` (zeros too: ``old`` holds their values)."""
        pairs = [(name, t) for (i, name), t in zip(self.slots, leaves) if i == owner]
        if not pairs:
            return old
        if pairs[0][0] is None:  # a floating-point argument: its tangent is a leaf
            return pairs[0][1]
        old = unthunk(old)
        if isinstance(old, AbstractZero) and all(isinstance(t, AbstractZero) for _, t in pairs):
            return old
        merged = {**(backing(old) if isinstance(old, Tangent) else {}), **dict(pairs)}
        return _T[self.types[0 if owner is None else owner + 1]](**merged)

    def theta_parts(self, dfunc: Any, dargs: tuple) -> list:
        """The cotangents of the parameters, flat, in ``θ``'s order, from those of
        ``func`` and of each ``args`` entry."""
        owners = sorted({i for i, name in self.slots if i is not None and name is not None})
        for owner in [None, *owners]:
            d = dfunc if owner is None else dargs[owner]
            known = {name for i, name in self.slots if i == owner and name is not None}
            self._check_closure(unthunk(d), known)
        return [
            np.ravel(dense(_part(dfunc if i is None else dargs[i], name), template))
            for (i, name), template in zip(self.slots, self.templates)
        ]

    def _check_closure(self, df: Any, known: set) -> None:
        """Raise when a function's cotangent has a part that is no parameter."""
        if isinstance(df, AbstractZero) or df is None:
            return
        fields = backing(df) if isinstance(df, Tangent) else None
        other = [
            k
            for k, v in (fields.items() if isinstance(fields, dict) else [("?", df)])
            if k not in known and not isinstance(unthunk(v), AbstractZero)
        ]
        if other:
            raise NotImplementedError(
                f"{self.who}: func = {self.where} reads {', '.join(other)} from "
                "outside its arguments, and its derivative there is not a number or "
                "array that the reverse (adjoint) rule can integrate.\nTo fix: pass the "
                f"numbers and arrays it depends on through args, e.g. {self.fix}, or use "
                "forward mode (ad.jvp)."
            )


def _part(d: Any, name: Any) -> Any:
    """The entry ``name`` of a function's tangent ``d`` (``d`` itself for None)."""
    d = unthunk(d)
    if name is None or isinstance(d, AbstractZero):
        return d
    return getattr(d, name)


def adjoint_rhs(state: np.ndarray, s: float, lay: Layout, func: Any, *args: Any) -> np.ndarray:
    """``(y, a, θ̄)'`` at time ``s``: ``y' = f``, ``a' = -(∂f/∂y)ᴴ a``, ``θ̄' = -(∂f/∂θ)ᴴ a``."""
    D = lay.D
    y, a = state[:D], state[D : 2 * D]
    fy, pb = rrule_via_ad(lay.config, rhs, func, lay.tfirst, y, s, *args)
    cot = pb(-a)
    parts = [np.ravel(fy), lay.part(np.ravel(dense(cot[3], y)))]
    parts.extend(lay.part(p) for p in lay.theta_parts(cot[1], cot[5:]))
    return np.concatenate(parts)


def sensitivity_rhs(state: np.ndarray, s: float, lay: Layout, func: Any, *rest: Any) -> np.ndarray:
    """``(y, s)'`` at time ``s``: ``y' = f``, ``s' = (∂f/∂y) s + (∂f/∂θ) θ̇``; ``rest``:
    the ``args`` and then the parameters' tangents."""
    D = lay.D
    y, v = state[:D], state[D:]
    ḟunc, ȧrgs = lay.tangents(rest[lay.n :])
    ins = (_ZERO, ḟunc, _NO, v, _ZERO, *ȧrgs)
    fy, ḟy = frule_via_ad(lay.config, ins, rhs, func, lay.tfirst, y, s, *rest[: lay.n])
    ḟy = unthunk(ḟy)
    if isinstance(ḟy, AbstractZero):
        return np.concatenate([np.ravel(fy), np.zeros(D, state.dtype)])
    return np.concatenate([np.ravel(fy), lay.part(np.ravel(dense(ḟy, fy)))])


def adjoint_sweep(
    segment: Callable,
    field: tuple,
    ys: np.ndarray,
    times: np.ndarray,
    t0: float,
    g: np.ndarray,
    P: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``(a(t_0), θ̄)``: the adjoint integrated from the last output time back to
    ``t0``, jumping by ``g[i]`` at ``times[i]``. ``segment(field, state, t_from, t_to)``
    is the state at ``t_to`` (a solver call; ``field``: a function of the state and
    the time, and the further arguments it takes); ``ys[i]`` is ``y(times[i])``."""
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
