"""Rules for ``scipy.integrate.solve_ivp``: the adjoint method (reverse) and the
sensitivity equations (forward), by the machinery ``odeint``'s rules use
(``_ode_adjoint``). Loaded when scipy.integrate is imported.

``solve_ivp(fun, t_span, y0, method, t_eval, dense_output, events, vectorized, args,
**options)`` solves ``y' = fun(t, y, *args)`` from ``y(t_span[0]) = y0`` and returns an
``OdeResult``: ``sol.y[:, i]`` is ``y`` at ``sol.t[i]`` (``t_eval`` when given, else the
solver's steps, from ``t_span[0]`` to ``t_span[1]``).

* Its tangent is a ``Tangent[OdeResult]`` with the field ``y`` (an array shaped like
  ``sol.y``) and ``t``; its other fields (``nfev``, ``status``, ``message``, ...)
  carry none. A cotangent may come as a ``Tangent`` of the result or of a ``dict``
  (``sol["y"]``), or a ``dict``.
* ``y0`` (real or complex), the floating-point ``args`` and the numbers and arrays
  ``fun`` reads from its closure are differentiable, as for ``odeint``; so are the
  times: ``sol.t`` is ``t_eval`` (its derivative goes to ``t_eval``) and ``y(τ_i)``
  moves by ``fun(τ_i, y_i)`` with ``τ_i``; the start ``t_span[0]`` moves the whole
  curve. Without ``t_eval`` the solver's own step times are constants but the first
  and last, ``t_span[0]`` and ``t_span[1]``.
* The adjoint and sensitivity systems are solved with the call's ``method`` and its
  ``rtol``, ``atol`` (an array ``atol`` is extended by its smallest entry),
  ``max_step`` and ``min_step``; ``jac``, ``jac_sparsity``, ``lband``, ``uband`` and
  ``first_step`` serve the primal solve only.
* ``dense_output=True`` (``sol.sol``, an interpolant) and ``events`` have no rule:
  the rules raise, naming the call's line.

>>> import numpy as np, scipy.integrate
>>> from rulescore import rrule
>>> rrule(scipy.integrate.solve_ivp, lambda t, y: -y, (0.0, 1.0), np.ones(1))
Traceback (most recent call last):
  ...
TypeError: scipy.integrate.solve_ivp: ...
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.integrate

from rulescore import (
    AbstractZero,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    rrule,
    unthunk,
)

from ._numpy_linear import dense
from ._ode_adjoint import (
    RightHandSide,
    adjoint_sweep,
    no_config,
    output_cotangent,
    time_cotangents,
    user_line,
)
from ._sequences import seq_cotangent, seq_entries
from ._util import project

__all__: list[str] = []

_NO = NoTangent()
_T: Any = Tangent  # Tangent[P]: a class made at runtime, which mypy cannot index
_ZERO = ZeroTangent()
_solve_ivp = scipy.integrate.solve_ivp
_NAMES = ("method", "t_eval", "dense_output", "events", "vectorized", "args")
_SOLVER = ("rtol", "atol", "max_step", "min_step")
_WHO = "scipy.integrate.solve_ivp"
_FIX = "solve_ivp(fun, t_span, y0, args=(k,)) with def fun(t, y, k)"


def _no_config(fun: Any, *_: Any, **__: Any) -> Any:
    return no_config(_WHO, fun)


rrule.register(_solve_ivp)(_no_config)


@frule.register(_solve_ivp)
def _(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    return _no_config(rest[len(rest) // 2])


class _Problem:
    """One ``solve_ivp`` call and its result: options, times and the right-hand side."""

    def __init__(self, fun: Any, t_span: Any, y0: Any, rest: tuple, kwargs: dict, Ω: Any):
        # (a display, not dict.update: at second order ad differentiates this body)
        opts = {**dict(zip(_NAMES, rest)), **{k: v for k, v in kwargs.items() if k in _NAMES}}
        options = {k: v for k, v in kwargs.items() if k not in _NAMES}
        for name, why in (
            ("dense_output", "sol.sol, an interpolant of the solution"),
            ("events", "event times and states, which move with y0 and args"),
        ):
            if opts.get(name) not in (None, False):
                raise NotImplementedError(
                    f"{_WHO}: no derivative rule for a call with {name}= ({why}), at "
                    f"{user_line()}.\nTo fix: drop {name}= and pass the times you need "
                    "as t_eval=[...]; the result's y at those times is differentiable."
                )
        self.method = opts.get("method", "RK45")
        self.has_t_eval = opts.get("t_eval") is not None
        args = opts.get("args")
        self.args_slot = len(rest) > _NAMES.index("args")  # moved to a position: active
        self.rhs = RightHandSide(_WHO, _FIX, fun, True, () if args is None else tuple(args))
        self.t0, self.tf = (float(t) for t in t_span)
        self.complex = np.iscomplexobj(Ω.y)
        self.y0 = np.asarray(y0, dtype=Ω.y.dtype)
        self.D = self.y0.shape[0]
        self.times = np.asarray(Ω.t, dtype=float)
        self.ys = Ω.y.T
        self.atol = options.get("atol", 1e-6)
        self.solver = {k: options[k] for k in _SOLVER if k in options and k != "atol"}

    def options(self, size: int) -> dict:
        """The solver options for a system of ``size`` unknowns whose first ``D`` are ``y``."""
        atol = self.atol
        if np.ndim(atol) > 0:
            atol = np.asarray(atol, dtype=float)
            atol = np.concatenate([atol, np.full(size - self.D, np.min(atol))])
        return {"method": self.method, "atol": atol, **self.solver}

    def solve(self, field: tuple, state: np.ndarray, span: tuple, t_eval: Any = None) -> Any:
        fn, fargs = field
        opts = self.options(state.shape[0])
        sol = _solve_ivp(_time_first, span, state, t_eval=t_eval, args=(fn, *fargs), **opts)
        if sol.status < 0:
            raise RuntimeError(
                f"{_WHO}: the {'adjoint' if t_eval is None else 'sensitivity'} system of "
                f"the call at {user_line()} could not be solved: {sol.message}\nTo fix: "
                "loosen rtol/atol or raise max_step."
            )
        return sol

    def segment(self, field: tuple, state: np.ndarray, t_from: float, t_to: float) -> np.ndarray:
        return self.solve(field, state, (t_from, t_to)).y[:, -1]

    def time_tangents(self, ṫspan: Any, ṫeval: Any) -> Any:
        """``(ṫ_0, ṫ at each output)``, or None when no time moves."""
        ṫ0, ṫf = (unthunk(x) for x in seq_entries(ṫspan, 2))
        ṫ0 = 0.0 if isinstance(ṫ0, AbstractZero) else float(np.real(ṫ0))
        ṫf = 0.0 if isinstance(ṫf, AbstractZero) else float(np.real(ṫf))
        T = self.times.shape[0]
        if self.has_t_eval:
            ṫe = unthunk(ṫeval)
            ṫs = np.zeros(T) if isinstance(ṫe, AbstractZero) else np.real(dense(ṫe, self.times))
        else:
            ṫs = np.zeros(T)
            if T:
                ṫs[0], ṫs[-1] = ṫ0, ṫf
        if ṫ0 == 0.0 and not ṫs.any():
            return None
        return ṫ0, np.reshape(ṫs, (T,))


def _time_first(t: Any, z: np.ndarray, fn: Any, *fargs: Any) -> np.ndarray:
    """A field ``fn(z, t, *fargs)`` as ``solve_ivp`` calls its function."""
    return fn(z, t, *fargs)


def _result_tangent(Ω: Any, ẏ: Any, ṫ: Any) -> Any:
    fields = {"y": ẏ}
    if ṫ is not None:
        fields["t"] = ṫ
    return _T[type(Ω)](**fields)


@rrule.register(_solve_ivp, config=HasReverseMode)
def solve_ivp_rrule(config: Any, fun: Any, t_span: Any, y0: Any, *rest: Any, **kwargs: Any) -> Any:
    """rrule of ``solve_ivp``: the adjoint ODE solved backwards (see the module)."""
    Ω = _solve_ivp(fun, t_span, y0, *rest, **kwargs)
    pr = _Problem(fun, t_span, y0, rest, kwargs, Ω)
    rhs = pr.rhs
    field = rhs.adjoint_field(config, pr.D, pr.complex)

    def solve_ivp_pullback(ȳ: Any) -> tuple:
        dy, dt = output_cotangent(ȳ, ("y", "t"))
        n_rest = [_NO] * len(rest)
        if isinstance(dy, AbstractZero) and isinstance(dt, AbstractZero):
            return (_NO, _ZERO, _ZERO, _ZERO, *n_rest)
        if isinstance(dy, AbstractZero):
            g = np.zeros_like(pr.ys)
        else:
            g = np.asarray(dense(dy, Ω.y)).T
            g = g if pr.complex else np.real(g)
        a, θ̄ = adjoint_sweep(pr.segment, field, pr.ys, pr.times, pr.t0, g, rhs.P)
        t̄ = time_cotangents(rhs.f, pr.ys, pr.times, g)
        if not isinstance(dt, AbstractZero):
            t̄ = t̄ + np.real(dense(dt, pr.times))
        t̄0 = -np.real(np.vdot(a, rhs.f(pr.y0, pr.t0)))
        if pr.has_t_eval:
            if len(rest) > 1:  # t_eval by position (ad moves an active one there)
                n_rest[1] = project(rest[1], np.reshape(t̄, np.shape(rest[1])))
            dspan = [t̄0, 0.0]
        else:  # the first and last output times are t_span's; the others, constants
            dspan = [t̄0 + t̄[0], t̄[-1]] if len(t̄) else [t̄0, 0.0]
        if pr.args_slot:
            args = rest[-1]
            dargs = rhs.args_cotangents(θ̄)
            n_rest[-1] = seq_cotangent(args, dargs) if args is not None else _NO
        dt_span = seq_cotangent(t_span, dspan)
        return (_NO, rhs.func_cotangent(θ̄), dt_span, project(y0, a), *n_rest)

    return Ω, solve_ivp_pullback


@frule.register(_solve_ivp, config=HasForwardsMode)
def solve_ivp_frule(config: Any, ḟ: Any, *rest_all: Any, **kwargs: Any) -> Any:
    """frule of ``solve_ivp``: the sensitivity equations integrated with the ODE."""
    n = len(rest_all) // 2
    tangents, (fun, t_span, y0, *rest) = rest_all[:n], rest_all[n:]
    Ω = _solve_ivp(fun, t_span, y0, *rest, **kwargs)
    pr = _Problem(fun, t_span, y0, tuple(rest), kwargs, Ω)
    rhs = pr.rhs
    ḟun, ṫspan, ẏ0 = (unthunk(x) for x in tangents[:3])
    ȧrgs: list = [_ZERO] * len(rhs.args)
    if pr.args_slot and rest[-1] is not None:
        ȧrgs = list(seq_entries(tangents[-1], len(rhs.args)))
    ṫeval = tangents[4] if pr.has_t_eval and len(rest) > 1 else _ZERO
    times = pr.time_tangents(ṫspan, ṫeval)
    if times is None and all(isinstance(x, AbstractZero) for x in (ḟun, ẏ0, *ȧrgs)):
        return Ω, _ZERO
    D = pr.D
    s0 = np.zeros(D, Ω.y.dtype) if isinstance(ẏ0, AbstractZero) else dense(ẏ0, pr.y0) + 0.0
    s0 = np.asarray(s0, dtype=Ω.y.dtype)
    if times is not None:
        s0 = s0 - rhs.f(pr.y0, pr.t0) * times[0]
    field = rhs.sensitivity_field(config, ḟun, ȧrgs, D, pr.complex)
    ẏ = np.zeros_like(Ω.y)
    if pr.times.shape[0]:
        start = np.concatenate([pr.y0, s0])
        Z = pr.solve(field, start, (pr.t0, pr.tf), t_eval=pr.times).y
        ẏ = Z[D:]
    ṫ = None
    if times is not None:
        ṫ = times[1]
        ẏ = ẏ + np.stack([rhs.f(pr.ys[i], pr.times[i]) for i in range(len(ṫ))], 1) * ṫ
    return Ω, _result_tangent(Ω, project(Ω.y, ẏ), ṫ)
