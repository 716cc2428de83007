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
  closure) raises in reverse mode: pass such values through ``args``. ``args``
  entries that are not floating-point numbers or arrays (counts, flags,
  functions) get no derivative.
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
    backing,
    frule,
    frule_via_ad,
    non_differentiable,
    rrule,
    rrule_via_ad,
    unthunk,
)

from ._numpy_linear import dense
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


def _where(func: Any) -> str:
    code = getattr(func, "__code__", None)
    if code is None:
        return repr(func)
    return f"{getattr(func, '__qualname__', func)} ({code.co_filename}:{code.co_firstlineno})"


def _no_config(func: Any, *_: Any, **__: Any) -> Any:
    raise TypeError(
        f"scipy.integrate.odeint: differentiating the solution of y' = func(y, t) needs "
        f"the derivatives of func = {_where(func)}, which only an AD supplies (a RuleConfig "
        "with HasReverseMode / HasForwardsMode, which ad.gradient and ad.jvp pass); "
        "this call has none.\nTo fix: differentiate through ad (ad.gradient, ad.jvp), "
        "or call rulescore.rrule/frule with such a config first."
    )


rrule.register(_odeint)(_no_config)


@frule.register(_odeint)
def _(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
    return _no_config(rest[len(rest) // 2])


class _Problem:
    """One ``odeint`` call: its options, ``args`` and the right-hand side."""

    def __init__(self, func: Any, y0: Any, t: Any, rest: tuple, kwargs: dict) -> None:
        opts = dict(zip(_NAMES, rest))
        opts.update(kwargs)
        self.func = func
        self.tfirst = bool(opts.get("tfirst", False))
        self.args = tuple(opts.get("args", ()))  # odeint itself insists on a tuple
        self.args_slot = len(rest) > 0  # args passed by position get a derivative
        self.full = bool(opts.get("full_output", False))
        self.solver = {k: opts[k] for k in _SOLVER if opts.get(k) is not None}
        self.y0 = np.ravel(np.asarray(y0, dtype=float))
        self.t = np.asarray(t, dtype=float)
        self.D = self.y0.shape[0]
        # which args carry a derivative, and their sizes in the flat adjoint state
        self.active = [_floating(a) for a in self.args]
        self.sizes = [int(np.size(a)) if on else 0 for a, on in zip(self.args, self.active)]
        # the floating-point variables func reads from its closure, integrated likewise
        self.captured = _captured(func)

    def f(self, y: Any, t: Any) -> np.ndarray:
        return _rhs(self.func, self.tfirst, y, t, *self.args)


def _floating(a: Any) -> bool:
    if isinstance(a, (float, complex)):
        return True
    return isinstance(a, (np.ndarray, np.inexact)) and a.dtype.kind in "fc"


non_differentiable(_floating)


def _rhs(func: Any, tfirst: bool, y: Any, t: Any, *args: Any) -> Any:
    """``func``'s value as a flat array (it may return a list)."""
    out = func(t, y, *args) if tfirst else func(y, t, *args)
    return np.ravel(np.asarray(out))


def _captured(func: Any) -> list:
    """``(name, value)`` of the floating-point numbers and arrays in ``func``'s closure."""
    out = []
    names = getattr(getattr(func, "__code__", None), "co_freevars", ())
    for name, cell in zip(names, getattr(func, "__closure__", None) or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _floating(value):
            out.append((name, value))
    return out


non_differentiable(_captured)


def _closure_parts(df: Any, pr: _Problem) -> list:
    """The cotangents of ``func``'s captured variables, flat, in ``pr.captured`` order."""
    df = unthunk(df)
    if isinstance(df, AbstractZero) or df is None:
        return [np.zeros(np.size(v)) for _, v in pr.captured]
    fields = backing(df) if isinstance(df, Tangent) else None
    known = {name for name, _ in pr.captured}
    other = [
        k
        for k, v in (fields.items() if isinstance(fields, dict) else [("?", df)])
        if k not in known and not isinstance(unthunk(v), AbstractZero)
    ]
    if other:
        raise NotImplementedError(
            f"scipy.integrate.odeint: func = {_where(pr.func)} reads {', '.join(other)} "
            "from outside its arguments, and its derivative there is not a number or "
            "array that the reverse (adjoint) rule can integrate.\nTo fix: pass the numbers "
            "and arrays it depends on through args, e.g. odeint(func, y0, t, args=(k,)) "
            "with def func(y, t, k), or use forward mode (ad.jvp)."
        )
    return [np.real(np.ravel(dense(getattr(df, name), v))) for name, v in pr.captured]


@rrule.register(_odeint, config=HasReverseMode)
def odeint_rrule(config: Any, func: Any, y0: Any, t: Any, *rest: Any, **kwargs: Any) -> Any:
    """rrule of ``odeint``: the adjoint ODE solved backwards (see the module)."""
    Ω = _odeint(func, y0, t, *rest, **kwargs)
    pr = _Problem(func, y0, t, rest, kwargs)
    yt = Ω[0] if pr.full else Ω
    D = pr.D
    P = sum(pr.sizes) + sum(int(np.size(v)) for _, v in pr.captured)

    def augmented(state: np.ndarray, s: float) -> np.ndarray:
        y, a = state[:D], state[D : 2 * D]
        fy, pb = rrule_via_ad(config, _rhs, func, pr.tfirst, y, s, *pr.args)
        cot = pb(-a)
        parts = [np.ravel(fy), np.ravel(dense(cot[3], y))]
        for d, arg, on in zip(cot[5:], pr.args, pr.active):
            if on:
                parts.append(np.real(np.ravel(dense(d, arg))))
        return np.concatenate([*parts, *_closure_parts(cot[1], pr)])

    def odeint_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if pr.full and not isinstance(ȳ, AbstractZero):
            ȳ = unthunk(seq_entries(ȳ, 2)[0])
        n_rest = (_NO,) * len(rest)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, _ZERO, _ZERO, *n_rest)
        g = np.reshape(np.real(np.asarray(ȳ, dtype=complex)), yt.shape)
        T = pr.t.shape[0]
        a = g[T - 1]
        θ̄ = np.zeros(P)
        t̄ = np.zeros(T)
        before = np.zeros(D)
        for i in range(T - 1, 0, -1):
            t̄[i] = g[i] @ pr.f(yt[i], pr.t[i])
            state = np.concatenate([yt[i], a, θ̄])
            out = _odeint(augmented, state, pr.t[[i, i - 1]], **pr.solver)[1]
            before = out[D : 2 * D]
            a, θ̄ = before + g[i - 1], out[2 * D :]
        if T > 1:
            t̄[0] = -(before @ pr.f(yt[0], pr.t[0]))
        dy0 = project(y0, np.reshape(a, np.shape(y0)))
        out_rest = list(n_rest)
        k = sum(pr.sizes)
        dfunc: Any = _ZERO
        if pr.captured:
            fields = {}
            for name, v in pr.captured:
                size = int(np.size(v))
                fields[name] = project(v, np.reshape(θ̄[k : k + size], np.shape(v)))
                k += size
            dfunc = _T[type(func)](**fields)
        if pr.args_slot:
            dargs, k = [], 0
            for arg, on, size in zip(pr.args, pr.active, pr.sizes):
                if on:
                    dargs.append(project(arg, np.reshape(θ̄[k : k + size], np.shape(arg))))
                else:
                    dargs.append(_NO)
                k += size
            out_rest[0] = seq_cotangent(rest[0], dargs) if isinstance(rest[0], tuple) else dargs[0]
        return (_NO, dfunc, dy0, project(t, t̄), *out_rest)

    return Ω, odeint_pullback


@frule.register(_odeint, config=HasForwardsMode)
def odeint_frule(config: Any, ḟ: Any, *rest_all: Any, **kwargs: Any) -> Any:
    """frule of ``odeint``: the sensitivity equations integrated with the ODE."""
    n = len(rest_all) // 2
    tangents, (func, y0, t, *rest) = rest_all[:n], rest_all[n:]
    Ω = _odeint(func, y0, t, *rest, **kwargs)
    pr = _Problem(func, y0, t, tuple(rest), kwargs)
    ḟunc, ẏ0, ṫ = (unthunk(x) for x in tangents[:3])
    ȧrgs: list = [_ZERO] * len(pr.args)
    if rest:
        ȧ = unthunk(tangents[3])
        ȧrgs = list(seq_entries(ȧ, len(pr.args))) if isinstance(rest[0], tuple) else [ȧ]
    if all(isinstance(x, AbstractZero) for x in (ḟunc, ẏ0, ṫ, *ȧrgs)):
        return Ω, _ZERO
    D = pr.D
    T = pr.t.shape[0]
    ṫs = None if isinstance(ṫ, AbstractZero) else np.reshape(dense(ṫ, t), (T,))
    s0 = np.zeros(D) if isinstance(ẏ0, AbstractZero) else np.ravel(dense(ẏ0, y0)) + 0.0
    if ṫs is not None:
        s0 = s0 - pr.f(pr.y0, pr.t[0]) * ṫs[0]
    arg_ts = tuple(_ZERO if isinstance(d, AbstractZero) else d for d in ȧrgs)

    def sensitivity(state: np.ndarray, s: float) -> np.ndarray:
        y, v = state[:D], state[D:]
        ins = (_ZERO, ḟunc, _NO, v, _ZERO, *arg_ts)
        fy, ḟy = frule_via_ad(config, ins, _rhs, func, pr.tfirst, y, s, *pr.args)
        ḟy = unthunk(ḟy)
        dv = np.zeros(D) if isinstance(ḟy, AbstractZero) else np.real(np.ravel(dense(ḟy, fy)))
        return np.concatenate([np.ravel(fy), dv])

    Z = _odeint(sensitivity, np.concatenate([pr.y0, s0]), pr.t, **pr.solver)
    yt = Ω[0] if pr.full else Ω
    ẏ = Z[:, D:]
    if ṫs is not None:
        ẏ = ẏ + np.stack([pr.f(yt[i], pr.t[i]) for i in range(T)]) * ṫs[:, None]
    ẏt = project(yt, np.reshape(ẏ, yt.shape))
    if pr.full:
        return Ω, _T[tuple](ẏt, _NO)
    return Ω, ẏt
