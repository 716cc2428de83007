"""numpy.linalg norm rules: norm, vector_norm, matrix_norm.

Each norm is differentiated through its gradient ``W = ∂‖x‖`` (shaped like
``x``, conjugate convention for complex ``x``): the pullback is ``ȳ · W`` and
the frule ``Re Σ conj(W) ẋ`` over the reduced axes. Where a norm is not
differentiable a subgradient is used: 0 for the zero vector, ties of a max/min
(``inf``, ``1``, ``2`` ...) share the gradient equally, ``nuc`` uses
``U @ Vh`` over all singular vectors, ``ord=0`` (a count) has zero gradient.
"""

from __future__ import annotations

import numbers

import numpy as np

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_util import bind, is_zero, nondiff_rest, warn_gradient
from ._quiet import quietly
from ._util import asarray, project


def _sign(x: np.ndarray) -> np.ndarray:
    if not np.iscomplexobj(x):
        return np.sign(x)
    ax = np.abs(x)
    return np.where(ax == 0, 0, x / np.where(ax == 0, 1, ax))


def _share(mask: np.ndarray, axis) -> np.ndarray:
    """A tie-sharing weight: mask / (number of True along ``axis``)."""
    return mask / np.sum(mask, axis=axis, keepdims=True)


def _power_weights(x, ax, y, ord):
    return _sign(x) * (ax / np.where(y == 0, 1, y)) ** (ord - 1)


def _vector_grad(x, y, ord, axes, fname):
    """∂‖x‖ for a vector norm over ``axes``; ``y`` has those axes kept (size 1)."""
    if ord is None or ord == 2:
        return np.where(y == 0, 0, x / np.where(y == 0, 1, y))
    ax = np.abs(x)
    if ord == 1:
        return _sign(x)
    if ord in (np.inf, -np.inf):
        return _sign(x) * _share(ax == y, axes)
    if ord == 0:
        return None
    if not isinstance(ord, numbers.Number) or isinstance(ord, str):
        raise ValueError(f"{fname}: invalid ord {ord!r} for a vector norm")
    w = quietly(_power_weights, x, ax, y, ord)
    w = np.where(y == 0, 0, w)
    if not np.all(np.isfinite(w)):
        warn_gradient(
            fname,
            f"ord={ord} < 1 is not differentiable at zero entries; the gradient there is inf/nan.",
        )
    return w


def _matrix_grad(x, y, ord, axes, fname):
    """∂‖x‖ for a matrix norm over the two ``axes``; ``y`` has them kept."""
    r, c = axes
    if ord in (None, "fro"):
        return np.where(y == 0, 0, x / np.where(y == 0, 1, y))
    if ord in (1, -1, np.inf, -np.inf):
        # ord ±1: extreme column of absolute column sums; ord ±inf: rows.
        sum_axis, pick_axis = (r, c) if ord in (1, -1) else (c, r)
        sums = np.sum(np.abs(x), axis=sum_axis, keepdims=True)
        return _sign(x) * _share(sums == y, pick_axis)
    if ord in ("nuc", 2, -2):
        xm = np.moveaxis(x, (r, c), (-2, -1))
        u, s, vh = np.linalg.svd(xm, full_matrices=False)
        if ord == "nuc":
            wm = u @ vh
        else:
            ext = s[..., :1] if ord == 2 else s[..., -1:]
            wm = (u * _share(s == ext, -1)[..., None, :]) @ vh
        return np.moveaxis(wm, (-2, -1), (r, c))
    raise ValueError(f"{fname}: invalid ord {ord!r} for a matrix norm")


def _plan(fname, x, ord, axis):
    """('vector' | 'matrix', normalized axes) following numpy.linalg.norm."""
    nd = x.ndim
    if fname == "numpy.linalg.matrix_norm":
        return "matrix", (nd - 2, nd - 1)
    if axis is None:
        if fname == "numpy.linalg.vector_norm" or ord is None or nd == 1:
            return "vector", tuple(range(nd))
        return "matrix", (0, 1)
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    axes = tuple(int(a) % nd for a in axes)
    if fname == "numpy.linalg.norm" and len(axes) == 2:
        return "matrix", axes
    return "vector", axes


def _norm_grad(fname, x, y, ord, axis, keepdims):
    """(W, y with the reduced axes kept, reduced axes); W is None for a zero gradient."""
    kind, axes = _plan(fname, x, ord, axis)
    yk = y if keepdims else np.expand_dims(y, axes)
    if kind == "vector":
        return _vector_grad(x, yk, ord, axes, fname), yk, axes
    return _matrix_grad(x, yk, ord, axes, fname), yk, axes


_NORMS = {
    np.linalg.norm: "numpy.linalg.norm",
    np.linalg.vector_norm: "numpy.linalg.vector_norm",
    np.linalg.matrix_norm: "numpy.linalg.matrix_norm",
}


def _options(f, x, rest, kw):
    o = bind(f, (x, *rest), kw)
    return o.get("ord"), o.get("axis"), o.get("keepdims", False)


def _float(x):
    x = asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(float)


def _register_norm(f, fname):
    @rrule.register(f)
    def norm_rrule(x, *rest, **kw):
        x_ = _float(x)
        y = f(x_, *rest, **kw)
        ord, axis, keepdims = _options(f, x_, rest, kw)

        def norm_pullback(ȳ):
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return NoTangent(), ZeroTangent(), *nondiff_rest(rest)
            w, yk, _ = _norm_grad(fname, x_, y, ord, axis, keepdims)
            if w is None:
                return NoTangent(), ZeroTangent(), *nondiff_rest(rest)
            ȳk = np.reshape(np.real(ȳ), yk.shape)
            return NoTangent(), project(x, w * ȳk), *nondiff_rest(rest)

        return y, norm_pullback

    @frule.register(f)
    def norm_frule(ḟ, *args, **kw):
        h = len(args) // 2
        ẋ, x, rest = args[0], _float(args[h]), args[h + 1 :]
        y = f(x, *rest, **kw)
        ord, axis, keepdims = _options(f, x, rest, kw)
        w, _, axes = _norm_grad(fname, x, y, ord, axis, keepdims)
        if is_zero(ẋ) or w is None:
            return y, ZeroTangent()
        ẏ = np.sum(np.real(np.conj(w) * asarray(unthunk(ẋ))), axis=axes, keepdims=keepdims)
        return y, project(y, ẏ)

    norm_rrule.__name__ = norm_rrule.__qualname__ = f"{f.__name__}_rrule"
    norm_frule.__name__ = norm_frule.__qualname__ = f"{f.__name__}_frule"


for _f, _name in _NORMS.items():
    _register_norm(_f, _name)
