"""Rules for numpy reductions: sum, prod, mean, var, std, max/min (amax/amin).

Each rule is registered on the numpy function and on the ``ndarray`` method of
the same name (``x.sum(0)`` arrives as ``np.ndarray.sum(x, 0)``); both take the
array first and the same optional arguments in the same order, so one
implementation serves both. ``axis`` may be ``None``, an int (negative too) or
a tuple; ``keepdims``, ``dtype`` and ``where=`` work as in numpy. Optional
arguments passed positionally (``x.sum(0)``) get ``NoTangent()``; ``out=`` is
refused with an error (a rule cannot see an in-place write).

Decisions:

* ``prod`` is exact with zeros: with one zero in a slice only that entry gets
  a gradient (the product of the others), with two or more none does; there
  is no division by zero.
* ``max``/``min`` split the gradient equally among tied extrema (as
  ChainRules does); a NaN extremum gets the gradient.
* ``std`` at zero spread (all entries equal) has no derivative; the rule
  returns 0 there, the smallest subgradient, rather than NaN.

Cumulative sums and products are in :mod:`rules._numpy_cumulative`.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.ndarray.max, np.array([[1.0, 3.0, 3.0]]), 1)   # x.max(1)
>>> pb(np.array([1.0]))
(NoTangent(), array([[0. , 0.5, 0.5]]), NoTangent())
>>> rrule(np.prod, np.array([2.0, 0.0, 3.0]))[1](1.0)[1]
array([0., 6., 0.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from rulescore import (
    CotangentError,
    NoTangent,
    ZeroTangent,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

from ._numpy_elementwise import conj_if_complex
from ._quiet import quietly
from ._util import asarray, is_zero, project

__all__ = ["bind_options", "reduced_axes"]

# Optional arguments of each family, in numpy's positional order.
_SUM_ARGS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_MEAN_ARGS = ("axis", "dtype", "out", "keepdims", "where")
_VAR_ARGS = ("axis", "dtype", "out", "ddof", "keepdims", "where", "mean", "correction")
_MAX_ARGS = ("axis", "out", "keepdims", "initial", "where")


def bind_options(f: Any, names: tuple, args: tuple, kwargs: dict) -> dict:
    """The optional arguments of ``f(x, *args, **kwargs)`` by name; refuses ``out=``."""
    fname = getattr(f, "__qualname__", repr(f))
    if len(args) > len(names):
        raise TypeError(f"numpy.{fname} takes at most {len(names)} optional arguments")
    opts = dict(zip(names, args))
    for k, v in kwargs.items():
        if k in opts:
            raise TypeError(f"numpy.{fname} got multiple values for argument {k!r}")
        opts[k] = v
    if opts.get("out") is not None:
        raise TypeError(
            f"the rule for numpy.{fname} does not support out=: the AD cannot see a write "
            "into an existing array.\nTo fix: write y = numpy."
            f"{fname}(x, ...) and use y (or ad.Buffer for in-place accumulation)."
        )
    return opts


def reduced_axes(axis: Any, ndim: int) -> tuple:
    """``axis`` as a sorted tuple of non-negative axes (``None``: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def _expand(ȳ: Any, axes: tuple, keepdims: bool) -> Any:
    """``ȳ`` with the reduced axes put back as length-1 axes, ready to broadcast."""
    ȳ = asarray(ȳ)
    return ȳ if keepdims or not axes else np.expand_dims(ȳ, axes)


def _where_mask(opts: dict, shape: tuple) -> Any:
    where = opts.get("where", True)
    return None if where is True or where is np._NoValue else np.broadcast_to(where, shape)


def _keepdims(opts: dict) -> bool:
    k = opts.get("keepdims", False)
    return False if k is np._NoValue else bool(k)


def _ddof(opts: dict) -> Any:
    c = opts.get("correction", np._NoValue)
    return opts.get("ddof", 0) if c is np._NoValue else c


def _count(shape: tuple, axes: tuple, mask: Any) -> Any:
    """Number of entries reduced into each output (``where=`` respected), keepdims shape."""
    if mask is None:
        return int(np.prod([shape[a] for a in axes], dtype=np.int64))
    return np.sum(mask, axis=axes, keepdims=True)


def _register(fs: tuple, rule: Callable, rule_frule: Callable) -> None:
    for f in fs:
        rrule.register(f)(rule)
        frule.register(f)(rule_frule)


def _linear_frule(primal: Any) -> Callable:
    """The frule of a linear reduction: apply it to the tangent."""

    def linear_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        n = len(args) // 2
        ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
        Ω = primal(x, *extra, **kwargs)
        if is_zero(ẋ):
            return Ω, ZeroTangent()
        kw = {k: v for k, v in kwargs.items() if k != "initial"}  # initial is a constant
        return Ω, project(Ω, primal(ẋ, *extra, **kw))

    linear_frule.__name__ = linear_frule.__qualname__ = f"{primal.__name__}_frule"
    return linear_frule


def whole_array_pullback(x: Any, scale: float, name: str) -> Callable:
    """The pullback of a whole-array sum (``scale`` 1) or mean (``scale`` 1/n) of ``x``.

    It returns ``(NoTangent(), ȳ·scale everywhere)``, an array of ``x``'s shape
    and dtype (a complex ``ȳ`` loses its imaginary part for a real ``x``), and
    reads only ``x.shape`` and ``x.dtype``: ``x`` may be a stand-in that has those
    two alone, so that the pullback keeps no large array alive. ``name`` (``"sum"``
    or ``"mean"``) names the pullback and its errors: a cotangent that is not one
    number raises ``CotangentError``.

    >>> pb = whole_array_pullback(np.zeros((2, 2)), 0.25, "mean")
    >>> pb.__name__, pb(2.0)
    ('mean_pullback', (NoTangent(), array([[0.5, 0.5],
           [0.5, 0.5]])))
    """
    shape, dtype = x.shape, x.dtype

    def full_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent())
        if np.ndim(ȳ) != 0:
            raise CotangentError(
                f"np.{name}: the cotangent of a whole-array {name} (one number) must be "
                f"one number, got an array of shape {np.shape(ȳ)}. To fix: pass the "
                "pullback one number (a float or a 0-d array)"
            )
        if np.iscomplexobj(ȳ) and dtype.kind != "c":
            ȳ = np.real(ȳ)
        return (NoTangent(), np.full(shape, ȳ * scale, dtype=dtype))

    full_pullback.__name__ = full_pullback.__qualname__ = f"{name}_pullback"
    return full_pullback


#: The old name, which ``ad`` imports until it switches to
#: ``rules.extension.whole_array_pullback``.
_full_pullback = whole_array_pullback


def sum_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.sum`` / ``ndarray.sum``: ȳ spread back over the summed axes."""
    if not args and not kwargs and type(x) is np.ndarray and x.dtype.kind in "fc":
        return np.sum(x), whole_array_pullback(x, 1.0, "sum")  # the common case, kept lean
    opts = bind_options(np.sum, _SUM_ARGS, args, kwargs)
    rest = (NoTangent(),) * len(args)  # for axis, dtype, ... passed positionally
    Ω = np.sum(x, *args, **kwargs)
    shape = np.shape(x)

    def sum_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        axes = reduced_axes(opts.get("axis"), len(shape))
        g = _expand(ȳ, axes, _keepdims(opts))
        mask = _where_mask(opts, shape)
        dx = np.broadcast_to(g, shape).copy() if mask is None else np.where(mask, g, 0)
        return (NoTangent(), project(x, dx), *rest)

    return Ω, sum_pullback


def mean_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.mean`` / ``ndarray.mean``: ȳ / n spread back."""
    if not args and not kwargs and type(x) is np.ndarray and x.dtype.kind in "fc" and x.size:
        return np.mean(x), whole_array_pullback(x, 1.0 / x.size, "mean")
    opts = bind_options(np.mean, _MEAN_ARGS, args, kwargs)
    rest = (NoTangent(),) * len(args)  # for axis, dtype, ... passed positionally
    Ω = np.mean(x, *args, **kwargs)
    shape = np.shape(x)

    def mean_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        axes = reduced_axes(opts.get("axis"), len(shape))
        mask = _where_mask(opts, shape)
        g = _expand(ȳ, axes, _keepdims(opts)) / _count(shape, axes, mask)
        dx = np.broadcast_to(g, shape).copy() if mask is None else np.where(mask, g, 0)
        return (NoTangent(), project(x, dx), *rest)

    return Ω, mean_pullback


_register((np.sum, np.ndarray.sum), sum_rrule, _linear_frule(np.sum))
_register((np.mean, np.ndarray.mean), mean_rrule, _linear_frule(np.mean))


def _others_product(x: Any, axes: tuple, mask: Any) -> Any:
    """For each entry, the product of the other entries of its slice, with no division by 0.

    Slices without zeros use prod / x; in a slice with one zero, the zero's
    entry is the product of the non-zero entries and the rest are 0; with two or
    more zeros everything is 0.
    """
    x = asarray(x)
    if mask is not None:
        x = np.where(mask, x, 1)
    zero = x == 0
    safe = np.where(zero, 1, x)
    nonzero_prod = np.prod(safe, axis=axes, keepdims=True)
    n_zero = np.sum(zero, axis=axes, keepdims=True)
    return np.where(
        n_zero == 0, nonzero_prod / safe, np.where((n_zero == 1) & zero, nonzero_prod, 0)
    )


def _initial(opts: dict) -> Any:
    init = opts.get("initial", np._NoValue)
    return 1 if init is np._NoValue else init


def prod_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.prod`` / ``ndarray.prod``, exact when the input has zeros."""
    opts = bind_options(np.prod, _SUM_ARGS, args, kwargs)
    rest = (NoTangent(),) * len(args)  # for axis, dtype, ... passed positionally
    Ω = np.prod(x, *args, **kwargs)
    shape = np.shape(x)

    def prod_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (NoTangent(), ZeroTangent(), *rest)
        axes = reduced_axes(opts.get("axis"), len(shape))
        mask = _where_mask(opts, shape)
        others = _others_product(x, axes, mask) * _initial(opts)
        dx = _expand(ȳ, axes, _keepdims(opts)) * conj_if_complex(others)
        if mask is not None:
            dx = np.where(mask, dx, 0)
        return (NoTangent(), project(x, dx), *rest)

    return Ω, prod_pullback


def prod_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.prod``: Σ ẋ_i · (product of the others)."""
    n = len(args) // 2
    ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
    opts = bind_options(np.prod, _SUM_ARGS, extra, kwargs)
    Ω = np.prod(x, *extra, **kwargs)
    if is_zero(ẋ):
        return Ω, ZeroTangent()
    shape = np.shape(x)
    axes = reduced_axes(opts.get("axis"), len(shape))
    mask = _where_mask(opts, shape)
    terms = _others_product(x, axes, mask) * _initial(opts) * ẋ
    if mask is not None:
        terms = np.where(mask, terms, 0)
    dΩ = np.sum(terms, axis=axes, keepdims=_keepdims(opts))
    return Ω, project(Ω, dΩ)


_register((np.prod, np.ndarray.prod), prod_rrule, prod_frule)


def _centered(x: Any, axes: tuple, mask: Any, n: Any) -> Any:
    """x - mean(x) over ``axes`` (0 outside ``where=``)."""
    x = asarray(x)
    xm = x if mask is None else np.where(mask, x, 0)
    d = x - np.sum(xm, axis=axes, keepdims=True) / n
    return d if mask is None else np.where(mask, d, 0)


def _var_parts(x: Any, opts: dict) -> tuple:
    shape = np.shape(x)
    axes = reduced_axes(opts.get("axis"), len(shape))
    mask = _where_mask(opts, shape)
    n = _count(shape, axes, mask)
    return axes, _centered(x, axes, mask, n), n - _ddof(opts)


def _make_var(primal: Any, is_std: bool) -> tuple[Callable, Callable]:
    name = primal.__name__

    def var_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        opts = bind_options(primal, _VAR_ARGS, args, kwargs)
        rest = (NoTangent(),) * len(args)  # for axis, dtype, ... passed positionally
        Ω = primal(x, *args, **kwargs)

        def var_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), ZeroTangent(), *rest)
            axes, d, dof = _var_parts(x, opts)
            # var = Σ|d|²/dof; the mean's own variation cancels because Σ d = 0.
            g = np.real(_expand(ȳ, axes, _keepdims(opts))) * (2 / dof)
            if is_std:
                g = g * _half_inverse(_expand(Ω, axes, _keepdims(opts)))
            return (NoTangent(), project(x, g * d), *rest)

        var_pullback.__name__ = var_pullback.__qualname__ = f"{name}_pullback"
        return Ω, var_pullback

    def var_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        n = len(args) // 2
        ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
        opts = bind_options(primal, _VAR_ARGS, extra, kwargs)
        Ω = primal(x, *extra, **kwargs)
        if is_zero(ẋ):
            return Ω, ZeroTangent()
        axes, d, dof = _var_parts(x, opts)
        keep = _keepdims(opts)
        dΩ = np.sum(np.real(np.conj(d) * ẋ), axis=axes, keepdims=True) * (2 / dof)
        if is_std:
            dΩ = dΩ * _half_inverse(_expand(Ω, axes, keep))
        if not keep:
            dΩ = np.squeeze(dΩ, axis=axes)
        return Ω, project(Ω, dΩ)

    var_rrule.__name__ = var_rrule.__qualname__ = f"{name}_rrule"
    var_frule.__name__ = var_frule.__qualname__ = f"{name}_frule"
    return var_rrule, var_frule


def _masked_half_inverse(s: Any) -> Any:
    return np.where(s == 0, 0, 1 / (2 * s))


def _half_inverse(s: Any) -> Any:
    """1 / (2s), the derivative of sqrt at s², taken as 0 where s = 0 (see module doc)."""
    return quietly(_masked_half_inverse, s)


# Its own rules, so that std's rules differentiate again (second order) without the
# masked branch's 0 * inf = NaN at zero spread: d(1/(2s)) = -2 (1/(2s))² ds, also
# taken as 0 where s = 0 (std of one element: its second derivative is 0 too).
@rrule.register(_half_inverse)
def _(s: Any) -> Any:
    h = _half_inverse(s)

    def half_inverse_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ZeroTangent()
        return NoTangent(), project(s, -2 * _half_inverse(s) ** 2 * np.real(ȳ))

    return h, half_inverse_pullback


@frule.register(_half_inverse)
def _(ḟ: Any, ṡ: Any, s: Any) -> Any:
    h = _half_inverse(s)
    ṡ = unthunk(ṡ)
    if is_zero(ṡ):
        return h, ZeroTangent()
    return h, project(h, -2 * h**2 * ṡ)


_register((np.var, np.ndarray.var), *_make_var(np.var, is_std=False))
_register((np.std, np.ndarray.std), *_make_var(np.std, is_std=True))


def _extremum_weights(x: Any, Ω: Any, opts: dict) -> tuple:
    """Weights 1/k on the k entries equal to their slice's extremum, and the axes."""
    x = asarray(x)
    shape = x.shape
    axes = reduced_axes(opts.get("axis"), len(shape))
    e = _expand(Ω, axes, _keepdims(opts))
    hit = (x == e) | (np.isnan(x) & np.isnan(e))
    mask = _where_mask(opts, shape)
    if mask is not None:
        hit &= mask
    k = np.sum(hit, axis=axes, keepdims=True)
    # k == 0 only where initial= won; those outputs do not depend on x.
    return hit / np.maximum(k, 1), axes


def _make_extremum(primal: Any) -> tuple[Callable, Callable]:
    name = primal.__name__

    def extremum_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        opts = bind_options(primal, _MAX_ARGS, args, kwargs)
        rest = (NoTangent(),) * len(args)  # for axis, dtype, ... passed positionally
        Ω = primal(x, *args, **kwargs)

        def extremum_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), ZeroTangent(), *rest)
            w, axes = _extremum_weights(x, Ω, opts)
            dx = _expand(ȳ, axes, _keepdims(opts)) * w
            return (NoTangent(), project(x, dx), *rest)

        extremum_pullback.__name__ = extremum_pullback.__qualname__ = f"{name}_pullback"
        return Ω, extremum_pullback

    def extremum_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        n = len(args) // 2
        ẋ, x, extra = unthunk(args[0]), args[n], args[n + 1 :]
        opts = bind_options(primal, _MAX_ARGS, extra, kwargs)
        Ω = primal(x, *extra, **kwargs)
        if is_zero(ẋ):
            return Ω, ZeroTangent()
        w, axes = _extremum_weights(x, Ω, opts)
        return Ω, project(Ω, np.sum(w * ẋ, axis=axes, keepdims=_keepdims(opts)))

    extremum_rrule.__name__ = extremum_rrule.__qualname__ = f"{name}_rrule"
    extremum_frule.__name__ = extremum_frule.__qualname__ = f"{name}_frule"
    return extremum_rrule, extremum_frule


_register((np.max, np.amax, np.ndarray.max), *_make_extremum(np.max))
_register((np.min, np.amin, np.ndarray.min), *_make_extremum(np.min))


# Option parsing is bookkeeping: nothing flows through it (nested differentiation
# reads reduction frules' bodies, which call it).
non_differentiable(bind_options)
