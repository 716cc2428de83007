"""Rules for ``scipy.integrate.odeint``: the adjoint method (reverse) and the
sensitivity equations (forward). Loaded when scipy.integrate is imported.

``odeint(func, y0, t, args=())`` solves ``y' = f(y, t, *args)`` (``f(t, y, *args)``
with ``tfirst=True``) and returns ``y`` at the times ``t``. Its derivative needs the
derivatives of the user's ``func``, which only an AD can supply: the rules take the
AD's ``RuleConfig`` and call back into it (``rrule_via_ad`` / ``frule_via_ad``, as
``ad.gradient`` and ``ad.jvp`` pass one). Without one they raise.

* Reverse (the adjoint ODE, as autograd's ``odeint``): from the last time backwards,
  ``a' = -(∂f/∂y)ᵀ a`` and ``θ̄' = -(∂f/∂θ)ᵀ a`` for the ``args`` ``θ``, integrated
  by ``odeint`` together with ``y`` itself, with ``a`` jumping by ``ȳ(t_i)`` at each
  output time. ``y0`` gets ``a(t_0)``; an output time ``t_i`` (``i ≥ 1``) gets
  ``ȳ_i · f(y_i, t_i)``, the start ``t_0`` gets ``-a⁻(t_0) · f(y0, t_0)`` (``a⁻``:
  ``a`` before the jump of ``ȳ_0``, since ``y(t_0) = y0`` does not move with ``t_0``).
* Forward (the sensitivity equations): ``s' = (∂f/∂y) s + (∂f/∂θ) θ̇ + ∂f/∂func·ḟunc``
  with ``s(t_0) = ẏ0 - f(y0, t_0) ṫ_0``, integrated with ``y``; the output tangent is
  ``s(t_i) + f(y_i, t_i) ṫ_i``.
* Floating-point numbers and arrays that ``func`` reads from its closure are
  integrated like ``args`` (``func`` gets a ``Tangent`` of them); a derivative
  through anything else it reads from outside (an object, a nested function's
  closure) raises in reverse mode: pass such values through ``args``. A function
  among ``args`` gets a ``Tangent`` of the floating-point values its closure holds
  (integrated the same way); other ``args`` entries that are not floating-point
  numbers or arrays (counts, flags) get no derivative.
* Derivatives of any order: the adjoint and sensitivity systems are functions of
  the module (``_ode_adjoint.adjoint_rhs``, ``sensitivity_rhs``) that get ``func``,
  ``args`` and the tangents through the solver's own ``args``, so an AD that
  differentiates these rules' bodies again (second derivatives in any pair of
  modes) differentiates those solves by these same rules.
* The adjoint and sensitivity solves use the call's ``rtol``, ``atol``, ``mxstep``,
  ``hmin``, ``hmax``, ``mxordn``, ``mxords``; ``Dfun`` serves the primal solve only.
  With ``full_output=True`` the information dictionary gets no derivative. ``y``
  must be real (as ``odeint`` requires).

>>> import numpy as np, scipy.integrate
>>> from rulescore import rrule
>>> rrule(scipy.integrate.odeint, lambda y, t: -y, 1.0, np.array([0.0, 1.0]))
Traceback (most recent call last):
  ...
TypeError: scipy.integrate.odeint: ...
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
from ._ode_adjoint import RightHandSide, adjoint_sweep, no_config, time_cotangents
from ._sequences import seq_cotangent, seq_entries
from ._util import project

__all__: list[str] = []

_NO = NoTangent()
_T: Any = Tangent  # Tangent[P]: a class made at runtime, which mypy cannot index
_ZERO = ZeroTangent()
_odeint = scipy.integrate.odeint
_NAMES = (
    "args",
    "Dfun",
    "col_deriv",
    "full_output",
    "ml",
    "mu",
    "rtol",
    "atol",
    "tcrit",
    "h0",
    "hmax",
    "hmin",
    "ixpr",
    "mxstep",
    "mxhnil",
    "mxordn",
    "mxords",
    "printmessg",
    "tfirst",
)
_SOLVER = ("rtol", "atol", "mxstep", "hmin", "hmax", "mxordn", "mxords")
_WHO = "scipy.integrate.odeint"
_FIX = "odeint(func, y0, t, args=(k,)) with def func(y, t, k)"


def _no_config(func: Any, *_: Any, **__: Any) -> Any:
    return no_config(_WHO, func)


rrule.register(_odeint)(_no_config)


@frule.register(_odeint)
def _(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    return _no_config(rest[len(rest) // 2])


class _Problem:
    """One ``odeint`` call: its options, ``args`` and the right-hand side."""

    def __init__(self, func: Any, y0: Any, t: Any, rest: tuple, kwargs: dict) -> None:
        opts = {**dict(zip(_NAMES, rest)), **kwargs}  # (no update: ad differentiates this)
        args = tuple(opts.get("args", ()))  # odeint itself insists on a tuple
        self.rhs = RightHandSide(_WHO, _FIX, func, bool(opts.get("tfirst", False)), args)
        self.args_slot = len(rest) > 0  # args passed by position get a derivative
        self.full = bool(opts.get("full_output", False))
        self.solver = {k: opts[k] for k in _SOLVER if opts.get(k) is not None}
        self.y0 = np.ravel(np.asarray(y0, dtype=float))
        self.t = np.asarray(t, dtype=float)
        self.D = self.y0.shape[0]

    def segment(self, field: tuple, state: np.ndarray, t_from: float, t_to: float) -> np.ndarray:
        fn, fargs = field
        return _odeint(fn, state, np.array([t_from, t_to]), fargs, **self.solver)[1]


@rrule.register(_odeint, config=HasReverseMode)
def odeint_rrule(config: Any, func: Any, y0: Any, t: Any, *rest: Any, **kwargs: Any) -> Any:
    """rrule of ``odeint``: the adjoint ODE solved backwards (see the module)."""
    Ω = _odeint(func, y0, t, *rest, **kwargs)
    pr = _Problem(func, y0, t, rest, kwargs)
    rhs = pr.rhs
    yt = Ω[0] if pr.full else Ω
    field = rhs.adjoint_field(config, pr.D, False)

    def odeint_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if pr.full and not isinstance(ȳ, AbstractZero):
            ȳ = unthunk(seq_entries(ȳ, 2)[0])
        n_rest = (_NO,) * len(rest)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, _ZERO, _ZERO, *n_rest)
        g = np.reshape(np.real(np.asarray(ȳ, dtype=complex)), yt.shape)
        a, θ̄ = adjoint_sweep(pr.segment, field, yt, pr.t, pr.t[0], g, rhs.P)
        t̄ = time_cotangents(rhs.f, yt, pr.t, g)
        if len(t̄):  # y(t_0) = y0 does not move with t_0: the rest of the curve does
            t̄[0] -= a @ rhs.f(pr.y0, pr.t[0])
        dy0 = project(y0, np.reshape(a, np.shape(y0)))
        out_rest = list(n_rest)
        if pr.args_slot:
            dargs = rhs.args_cotangents(θ̄)
            out_rest[0] = seq_cotangent(rest[0], dargs) if isinstance(rest[0], tuple) else dargs[0]
        return (_NO, rhs.func_cotangent(θ̄), dy0, project(t, t̄), *out_rest)

    return Ω, odeint_pullback


@frule.register(_odeint, config=HasForwardsMode)
def odeint_frule(config: Any, ḟ: Any, *rest_all: Any, **kwargs: Any) -> Any:
    """frule of ``odeint``: the sensitivity equations integrated with the ODE."""
    n = len(rest_all) // 2
    tangents, (func, y0, t, *rest) = rest_all[:n], rest_all[n:]
    Ω = _odeint(func, y0, t, *rest, **kwargs)
    pr = _Problem(func, y0, t, tuple(rest), kwargs)
    rhs = pr.rhs
    ḟunc, ẏ0, ṫ = (unthunk(x) for x in tangents[:3])
    ȧrgs: list = [_ZERO] * len(rhs.args)
    if rest:
        ȧ = unthunk(tangents[3])
        ȧrgs = list(seq_entries(ȧ, len(rhs.args))) if isinstance(rest[0], tuple) else [ȧ]
    if all(isinstance(x, AbstractZero) for x in (ḟunc, ẏ0, ṫ, *ȧrgs)):
        return Ω, _ZERO
    D = pr.D
    T = pr.t.shape[0]
    ṫs = None if isinstance(ṫ, AbstractZero) else np.reshape(dense(ṫ, t), (T,))
    s0 = np.zeros(D) if isinstance(ẏ0, AbstractZero) else np.ravel(dense(ẏ0, y0)) + 0.0
    if ṫs is not None:
        s0 = s0 - rhs.f(pr.y0, pr.t[0]) * ṫs[0]
    fn, fargs = rhs.sensitivity_field(config, ḟunc, ȧrgs, D, False)
    Z = _odeint(fn, np.concatenate([pr.y0, s0]), pr.t, fargs, **pr.solver)
    yt = Ω[0] if pr.full else Ω
    ẏ = Z[:, D:]
    if ṫs is not None:
        ẏ = ẏ + np.stack([rhs.f(yt[i], pr.t[i]) for i in range(T)]) * ṫs[:, None]
    ẏt = project(yt, np.reshape(ẏ, yt.shape))
    if pr.full:
        return Ω, _T[tuple](ẏt, _NO)
    return Ω, ẏt
