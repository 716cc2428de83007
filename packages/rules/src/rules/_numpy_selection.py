"""Rules for selecting entries: ``select``, ``choose``, ``piecewise``; ``round``, ``ptp``.

``select(condlist, choicelist, default)`` and ``choose(a, choices)`` are linear
in the choices (and ``select``'s positional ``default``): each choice gets the
output cotangent where it was taken, summed over the axes it was broadcast
along; conditions and indices get ``NoTangent()``. ``choose`` honours
``mode='wrap'``/``'clip'``; ``ndarray.choose`` (the index array first) shares
the rule.

``piecewise(x, condlist, funclist, *args)`` follows numpy's loop, in which a
later condition overwrites an earlier one. With numbers in ``funclist`` the
output depends on ``x`` only through the conditions, so ``x`` gets zero and
each number the cotangents of the entries it filled. Functions in
``funclist`` make it a higher-order function: under an AD (a config with
``HasReverseMode`` / ``HasForwardsMode``, which ``ad`` passes) each is
differentiated by calling back into the AD on ``x[cond]`` (``rrule_via_ad``,
as ``map``'s rule does), and ``x``, the extra ``args`` and the functions'
captured variables get their cotangents; without one the rule raises.
Keyword arguments are passed to the functions and get no derivative.

``round``/``around``/``ndarray.round`` are piecewise constant: a zero
derivative. ``ptp`` is ``max - min`` with ``max``'s and ``min``'s tie
convention (the cotangent split equally among tied extrema; a constant slice
gets 0). ``ndarray`` methods that return positions or booleans (``argmax``,
``argmin``, ``argsort``, ``argpartition``, ``nonzero``, ``any``, ``all``,
``searchsorted``) and ``np.argpartition`` are non-differentiable.

>>> import numpy as np
>>> from rulescore import rrule
>>> x = np.array([1.0, 2.0, 3.0])
>>> y, pb = rrule(np.select, [x < 2, x < 3], [x, 10 * x], 0.0)
>>> y, pb(np.ones(3))[2:]  # the default, one number, filled one entry
(array([ 1., 20.,  0.]), ([array([1., 0., 0.]), array([0., 1., 0.])], 1.0))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    ZeroTangent,
    frule,
    frule_via_ad,
    non_differentiable,
    rrule,
    rrule_via_ad,
    unthunk,
)

from ._numpy_linear import dense, dense_each, project_nested, tangent_dtype
from ._numpy_reductions import _extremum_weights, _keepdims, bind_options
from ._sequences import seq_cotangent, seq_entries
from ._util import asarray, unbroadcast

__all__ = ["no_out"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def no_out(fname: str, out: Any) -> None:
    """Refuse ``out=``: a rule cannot see a write into an existing array."""
    if out is not None:
        raise TypeError(
            f"the rule for numpy.{fname} does not support out=: the AD cannot see a write "
            f"into an existing array.\nTo fix: write y = numpy.{fname}(...) and use y."
        )


# --- select, choose ------------------------------------------------------------------------


def _select_masks(condlist: Any, shape: tuple) -> tuple[list, np.ndarray]:
    """Where each choice is taken (the first true condition wins) and where none is."""
    taken, seen = [], np.zeros(shape, bool)
    for cond in condlist:
        c = np.broadcast_to(cond, shape)
        taken.append(c & ~seen)
        seen = seen | c
    return taken, ~seen


def _like_sequence(xs: Any, parts: list) -> Any:
    """Cotangents ``parts`` of the entries of ``xs``, in ``xs``'s own form."""
    if type(xs) is list or type(xs) is tuple:
        return project_nested(xs, parts)
    return project_nested(xs, np.stack([asarray(unthunk(p)) for p in parts]))


@rrule.register(np.select)
def select_rrule(condlist: Any, choicelist: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.select``: each choice gets the cotangent where it was taken."""
    y = np.select(condlist, choicelist, *rest, **kw)
    default = kw.get("default", rest[0] if rest else 0)

    def select_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, _ZERO, *(_ZERO for _ in rest))
        ȳ = np.broadcast_to(ȳ, np.shape(y))
        taken, none = _select_masks(condlist, np.shape(y))
        parts = [unbroadcast(c, np.where(m, ȳ, 0)) for c, m in zip(choicelist, taken)]
        out = [_NO, _NO, _like_sequence(choicelist, parts)]
        if rest:
            out.append(unbroadcast(default, np.where(none, ȳ, 0)))
        return tuple(out)

    return y, select_pullback


@frule.register(np.select)
def _(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    (_, ċhoices, *ṙest), (condlist, choicelist, *rest) = args[:n], args[n:]
    y = np.select(condlist, choicelist, *rest, **kw)
    ẋs = dense_each(ċhoices, list(choicelist))
    ḋ = dense(ṙest[0], rest[0]) if rest else 0  # a default given by keyword is a constant
    return y, project_nested(y, np.select(condlist, ẋs, ḋ))


def _choice_index(a: Any, n: int, mode: str) -> np.ndarray:
    a = asarray(a)
    if mode == "wrap":
        return a % n
    if mode == "clip":
        return np.clip(a, 0, n - 1)
    return a


def _choose_options(rest: tuple, kw: dict) -> str:
    out = kw.get("out", rest[0] if rest else None)
    no_out("choose", out)
    return kw.get("mode", rest[1] if len(rest) > 1 else "raise")


def choose_rrule(a: Any, choices: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.choose`` / ``ndarray.choose``: the index array ``a`` gets none."""
    mode = _choose_options(rest, kw)
    y = np.choose(a, choices, *rest, **kw)
    nots = (_NO,) * len(rest)

    def choose_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, _ZERO, *nots)
        ȳ = np.broadcast_to(ȳ, np.shape(y))
        idx = np.broadcast_to(_choice_index(a, len(choices), mode), np.shape(y))
        parts = [unbroadcast(c, np.where(idx == j, ȳ, 0)) for j, c in enumerate(choices)]
        return (_NO, _NO, _like_sequence(choices, parts), *nots)

    return y, choose_pullback


def choose_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    ċ, (a, choices, *rest) = args[1], args[n:]
    _choose_options(tuple(rest), kw)
    y = np.choose(a, choices, *rest, **kw)
    ċ = unthunk(ċ)
    if isinstance(ċ, AbstractZero):
        return y, _ZERO
    if type(choices) is list or type(choices) is tuple:
        ċ = dense_each(ċ, choices)
    else:
        ċ = dense(ċ, choices)
    return y, project_nested(y, np.choose(a, ċ, *rest, **kw))


for _f in (np.choose, np.ndarray.choose):
    rrule.register(_f)(choose_rrule)
    frule.register(_f)(choose_frule)


# --- piecewise -------------------------------------------------------------------------------


def _piecewise_conditions(x: np.ndarray, condlist: Any, n_funcs: int) -> np.ndarray:
    """numpy's reading of ``condlist``: one boolean array per entry of ``funclist``."""
    if np.isscalar(condlist) or (not isinstance(condlist[0], (list, np.ndarray)) and x.ndim != 0):
        condlist = [condlist]
    conds = asarray(condlist, dtype=bool)
    if len(conds) == n_funcs - 1:  # the last function applies where no condition holds
        conds = np.concatenate([conds, ~np.any(conds, axis=0, keepdims=True)], axis=0)
    if len(conds) != n_funcs:
        raise ValueError(
            f"with {len(conds)} condition(s), either {len(conds)} or {len(conds) + 1} "
            f"functions are expected"
        )  # numpy's error, raised here before the functions run
    return conds


def _no_callables(funclist: Any) -> None:
    if any(callable(f) for f in funclist):
        raise TypeError(
            "np.piecewise with functions in funclist is a higher-order function: this "
            "rule differentiates them only when called by an AD (a RuleConfig with "
            "HasReverseMode / HasForwardsMode, which ad.gradient and ad.jvp pass).\n"
            "To fix: differentiate through ad, or give funclist numbers only."
        )


def _kept(conds: np.ndarray) -> list:
    """For each condition, where its values survive (a later condition overwrites)."""
    later = np.zeros(conds.shape[1:], bool)
    out = []
    for cond in conds[::-1]:
        out.append(cond & ~later)
        later = later | cond
    return out[::-1]


def _piecewise_rrule(
    config: Any, x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any
) -> Any:
    """The rrule of ``piecewise``, calling the functions in ``funclist`` through ``config``."""
    xa = np.asanyarray(x)
    y = np.piecewise(xa, condlist, funclist, *args, **kw) if config is None else None
    conds = _piecewise_conditions(xa, condlist, len(funclist))
    pbs: dict[int, Any] = {}
    if config is not None:  # numpy's loop, with each function called through the AD
        y = np.zeros_like(xa)
        for i, (cond, func) in enumerate(zip(conds, funclist)):
            if not callable(func):
                y[cond] = func
            elif xa[cond].size > 0:
                y[cond], pbs[i] = rrule_via_ad(config, func, xa[cond], *args, **kw)
    truncating = y.dtype.kind in "biu"

    def piecewise_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero) or truncating:
            zero = _NO if truncating else _ZERO
            return (_NO, zero, _NO, zero, *(zero for _ in args))
        ȳ = np.broadcast_to(ȳ, y.shape)
        dx: Any = _ZERO
        dargs: list = [_ZERO] * len(args)
        dfuncs: list = []
        for i, (cond, keep, func) in enumerate(zip(conds, _kept(conds), funclist)):
            part = np.where(keep, ȳ, 0)[cond]
            if i not in pbs:
                dfuncs.append(_ZERO if callable(func) else unbroadcast(func, part))
                continue
            df, dvals, *da = pbs[i](part)
            dfuncs.append(df)
            dvals = unthunk(dvals)
            if not isinstance(dvals, AbstractZero):
                full = np.zeros(y.shape, np.result_type(tangent_dtype(xa), asarray(dvals)))
                full[cond] = dvals
                dx = full if isinstance(dx, AbstractZero) else dx + full
            dargs = [
                d if isinstance(e, AbstractZero) else d + unthunk(e) for d, e in zip(dargs, da)
            ]
        dx = dx if isinstance(dx, AbstractZero) else project_nested(x, dx)
        dargs = [
            d if isinstance(d, AbstractZero) else project_nested(a, d) for d, a in zip(dargs, args)
        ]
        dfs = (
            _ZERO
            if all(isinstance(d, AbstractZero) for d in dfuncs)
            else seq_cotangent(funclist, dfuncs)
        )
        return (_NO, dx, _NO, dfs, *dargs)

    return y, piecewise_pullback


@rrule.register(np.piecewise)
def piecewise_rrule(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """rrule of ``np.piecewise`` with numbers in ``funclist`` (see the module docstring)."""
    _no_callables(funclist)
    return _piecewise_rrule(None, x, condlist, funclist, *args, **kw)


@rrule.register(np.piecewise, config=HasReverseMode)
def piecewise_rrule_via_ad(
    config: Any, x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any
) -> Any:
    """rrule of ``np.piecewise`` whose ``funclist`` holds functions: each through the AD."""
    return _piecewise_rrule(config, x, condlist, funclist, *args, **kw)


def _piecewise_frule(
    config: Any, tangents: tuple, x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any
) -> Any:
    xa = np.asanyarray(x)
    conds = _piecewise_conditions(xa, condlist, len(funclist))
    ẋ, ḟs, ȧs = tangents[1], tangents[3], tangents[4:]
    ḟs = seq_entries(ḟs, len(funclist))
    y = np.zeros_like(xa)
    ẏ = np.zeros(y.shape, tangent_dtype(y))
    ẋa = dense(ẋ, xa) if config is not None else None
    for cond, func, ḟn in zip(conds, funclist, ḟs):
        if not callable(func):
            y[cond] = func
            ẏ[cond] = dense(ḟn, func)
        elif xa[cond].size > 0:
            inputs = (ḟn, ẋa[cond], *ȧs)
            y[cond], ẏc = frule_via_ad(config, inputs, func, xa[cond], *args, **kw)
            ẏ[cond] = dense(ẏc, y[cond])
    if y.dtype.kind in "biu":
        return y, _NO
    return y, project_nested(y, ẏ)


@frule.register(np.piecewise)
def _(ḟ: Any, *rest: Any, **kw: Any) -> Any:
    n = len(rest) // 2
    x, condlist, funclist, *args = rest[n:]
    _no_callables(funclist)
    return _piecewise_frule(None, (ḟ, *rest[:n]), x, condlist, funclist, *args, **kw)


@frule.register(np.piecewise, config=HasForwardsMode)
def _(config: Any, ḟ: Any, *rest: Any, **kw: Any) -> Any:
    n = len(rest) // 2
    x, condlist, funclist, *args = rest[n:]
    return _piecewise_frule(config, (ḟ, *rest[:n]), x, condlist, funclist, *args, **kw)


# --- round, ptp, and the non-differentiable queries ------------------------------------


def round_rrule(x: Any, *rest: Any, **kw: Any) -> Any:
    """rrule of ``np.round`` / ``np.around`` / ``ndarray.round``: zero derivative."""
    no_out("round", kw.get("out", rest[1] if len(rest) > 1 else None))
    y = np.round(x, *rest, **kw)
    nots = (_NO,) * len(rest)

    def round_pullback(ȳ: Any) -> tuple:
        return (_NO, _ZERO, *nots)

    return y, round_pullback


def round_frule(ḟ: Any, *args: Any, **kw: Any) -> Any:
    n = len(args) // 2
    x, rest = args[n], args[n + 1 :]
    no_out("round", kw.get("out", rest[1] if len(rest) > 1 else None))
    return np.round(x, *rest, **kw), _ZERO


for _f in (np.round, np.around, np.ndarray.round):
    rrule.register(_f)(round_rrule)
    frule.register(_f)(round_frule)

_PTP_ARGS = ("axis", "out", "keepdims")


def _ptp_weights(x: Any, opts: dict) -> tuple:
    """Weights of ``max - min`` (ties split equally, as in ``max``/``min``), and axes."""
    keep = {"axis": opts.get("axis"), "keepdims": _keepdims(opts)}
    hi = np.max(x, axis=keep["axis"], keepdims=keep["keepdims"])
    lo = np.min(x, axis=keep["axis"], keepdims=keep["keepdims"])
    w_hi, axes = _extremum_weights(x, hi, keep)
    return w_hi - _extremum_weights(x, lo, keep)[0], axes


@rrule.register(np.ptp)
def ptp_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.ptp`` (``max - min``); a constant slice gets zero."""
    opts = bind_options(np.ptp, _PTP_ARGS, args, kwargs)
    y = np.ptp(x, *args, **kwargs)
    nots = (_NO,) * len(args)

    def ptp_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, *nots)
        w, axes = _ptp_weights(x, opts)
        g = asarray(ȳ)
        if not _keepdims(opts) and axes:
            g = np.expand_dims(g, axes)
        return (_NO, project_nested(x, g * w), *nots)

    return y, ptp_pullback


@frule.register(np.ptp)
def _(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    n = len(args) // 2
    ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
    opts = bind_options(np.ptp, _PTP_ARGS, extra, kwargs)
    y = np.ptp(x, *extra, **kwargs)
    if isinstance(ẋ, AbstractZero):
        return y, _ZERO
    w, axes = _ptp_weights(x, opts)
    ẏ = np.sum(w * dense(ẋ, x), axis=axes, keepdims=_keepdims(opts))
    return y, project_nested(y, ẏ)


# Index queries: their outputs are positions or booleans (np.argmax etc. are declared
# with the other queries in _numpy_construction).
for _name in "argmax argmin argsort argpartition nonzero any all searchsorted tobytes".split():
    non_differentiable(getattr(np.ndarray, _name))
non_differentiable(np.argpartition)
