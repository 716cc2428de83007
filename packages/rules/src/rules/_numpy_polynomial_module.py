"""Rules for ``numpy.polynomial.polynomial``, the new-style power series (coefficients
lowest degree first): ``polyval``, ``polyval2d``, ``polyval3d``, ``polygrid2d``,
``polygrid3d``, ``polyadd``, ``polysub``, ``polymul``, ``polypow``, ``polydiv``,
``polyfit``, ``polyfromroots``, ``polyroots``, ``polycompanion``. The
``numpy.polynomial.Polynomial`` class calls these (``p(x)``, ``p + q``, ``p * q``,
``p ** 3``, ``divmod(p, q)``, ``Polynomial.fit``, ``p.roots()``), so it is
differentiable through them. Loaded when ``numpy.polynomial`` is imported.

The math is that of the rules for numpy's old ``poly*`` functions
(:mod:`rules._numpy_polynomials`, :mod:`rules._numpy_polyfit`), in the reversed
coefficient order; the differences are numpy's:

* The series arguments of ``polyadd``, ``polysub``, ``polymul``, ``polypow``,
  ``polydiv``, ``polyroots`` and ``polycompanion`` lose their trailing (highest)
  zero coefficients first (``polyutils.as_series``), and ``polyadd``/``polysub``/
  ``polymul``/``polydiv``'s remainder drop trailing exact zeros from the result: a
  trimmed entry gets a zero cotangent (a nonzero value there would lengthen the
  output, which has no derivative).
* ``polyval(x, c, tensor=True)``: ``∂y/∂c_k = x^k``, ``∂y/∂x = polyval(x, polyder(c))``,
  for a multidimensional ``c`` too (``tensor`` decides how ``c``'s trailing axes meet
  ``x``'s, as in numpy). ``polyval2d``/``polyval3d``/``polygrid2d``/``polygrid3d`` are
  chains of ``polyval`` (numpy's own definition), differentiated along the chain.
* ``polypow(c, n)``: ``d(cⁿ) = n·cⁿ⁻¹·dc`` (a convolution); ``polymul`` is bilinear.
* ``polydiv(c1, c2) = (q, r)`` with ``c1 = q·c2 + r``: ``q̇·c2 + ṙ = ċ1 - q·ċ2``, a
  triangular Toeplitz solve for ``q̇`` (see :mod:`rules._numpy_polynomials`).
* ``polyfit(x, y, deg, rcond, full, w)``: the least-squares derivative of
  :mod:`rules._numpy_polyfit`, on the powers ``deg`` selects (an int or a list of
  degrees; unfitted coefficients are 0, with a zero derivative). With
  ``full=True`` the residual sums of squares are differentiable, the rank and
  ``rcond`` are constants and the singular values get ``not_implemented``.
* ``polyfromroots(r)``: ``∂c/∂r_i = -c / (x - r_i)`` (synthetic division); complex
  roots give complex coefficients (numpy does not take the real part here).
* ``polyroots(c)``: a simple root moves by ``-ċ(r)/c'(r)``; a repeated root has no
  derivative (inf/nan). A real ``c`` gets the real part of its cotangent.
* ``polycompanion(c)``: only the last column depends on ``c``: ``-c[:-1]/c[-1]``.

The other functions of the module (``polyder``, ``polyint``, ``polymulx``,
``polyvander``, ``polyvander2d``/``3d``, ``polyline``, ``polyvalfromroots``,
``polytrim``) have no rule: their numpy source is plain array code that ``ad``
differentiates as it is. Integer counts and flags get ``NoTangent()``.

>>> import numpy as np
>>> import numpy.polynomial.polynomial as P
>>> from rulescore import rrule
>>> y, pb = rrule(P.polyval, 2.0, np.array([1.0, 3.0, 1.0]))   # 1 + 3x + x²
>>> y, pb(1.0)[1:]   # ∂/∂x = 3 + 2x; ∂/∂c = (1, x, x²)
(np.float64(11.0), (7.0, array([1., 2., 4.])))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.polynomial import polynomial as P  # (no attribute lookup on numpy: it is

# being imported when these rules load)
from rulescore import (
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    non_differentiable,
    not_implemented,
    rrule,
    unthunk,
)

from ._linalg_util import entries, mH
from ._numpy_elementwise import conj_if_complex
from ._numpy_linear import dense
from ._numpy_polyfit import _Fit, _options
from ._numpy_polynomials import _poly_partials, _root_weights, _toeplitz
from ._numpy_statistics import split_tangents
from ._util import is_zero, project, unbroadcast

__all__: list[str] = []

_NO = NoTangent()
_T: Any = Tangent  # Tangent[P]: a class made at runtime, which mypy cannot index
_ZERO = ZeroTangent()


def _kept(c: Any) -> int:
    """How many coefficients ``polyutils.as_series`` keeps (trailing zeros trimmed, >= 1)."""
    nz = np.flatnonzero(np.atleast_1d(c))
    return int(nz[-1]) + 1 if nz.size else 1


non_differentiable(_kept)


def _fit_to(v: Any, m: int) -> Any:
    """``v`` cut or zero-padded to length ``m``."""
    v = np.asarray(v)
    if v.shape[0] >= m:
        return v[:m]
    return np.concatenate([v, np.zeros(m - v.shape[0], v.dtype)])


def _series(c: Any) -> np.ndarray:
    """``c`` as numpy's series functions read it: 1-d, integers as floats."""
    C = np.atleast_1d(c)
    return C + 0.0 if C.dtype.kind in "biu" else C


def _onto(c: Any, d: Any) -> Any:
    """A cotangent ``d`` of the kept coefficients of ``c``, padded and shaped like ``c``."""
    return project(c, np.reshape(_fit_to(d, np.atleast_1d(c).shape[0]), np.shape(c)))


def _tangent(ċ: Any, c: Any) -> np.ndarray:
    """The tangent of a series argument as a 1-d array (zeros for a zero tangent)."""
    return np.reshape(dense(ċ, c), np.atleast_1d(c).shape)


# --- polyval and its chains ---------------------------------------------------------


def _tensor(args: tuple, kwargs: dict) -> bool:
    return bool(args[0] if args else kwargs.get("tensor", True))


non_differentiable(_tensor)


def _val_setup(x: Any, c: Any, tensor: bool) -> tuple:
    """``(X, C, Ce)``: ``x`` and ``c`` as polyval reads them; ``Ce``, ``C`` with the
    axes that meet ``x`` (numpy reshapes ``c`` for ``tensor=True``)."""
    C = np.asarray(c)
    C = np.atleast_1d(C + 0.0 if C.dtype.kind in "biu" else C)
    X = np.asarray(x) if isinstance(x, (tuple, list)) else x
    if isinstance(X, np.ndarray) and tensor:
        return X, C, np.reshape(C, C.shape + (1,) * X.ndim)
    return X, C, C


def _val_pullback(x: Any, c: Any, tensor: bool, ȳ: Any) -> tuple:
    """``(x̄, c̄)`` of ``polyval(x, c, tensor)`` for the cotangent ``ȳ``."""
    X, C, Ce = _val_setup(x, c, tensor)
    ȳ = np.asarray(ȳ)
    dx = unbroadcast(x, ȳ * conj_if_complex(P.polyval(X, P.polyder(C), tensor)))
    parts = []
    power: Any = 1.0
    for k in range(C.shape[0]):
        parts.append(unbroadcast(Ce[k], ȳ * conj_if_complex(power)))
        power = power * X
    return dx, project(c, np.reshape(np.stack(parts), np.shape(c)))


def _val_push(x: Any, c: Any, tensor: bool, ẋ: Any, ċ: Any) -> Any:
    """The tangent of ``polyval(x, c, tensor)`` along ``(ẋ, ċ)`` (not both zero)."""
    X, C, _ = _val_setup(x, c, tensor)
    out: Any = 0
    if not is_zero(ċ):
        out = P.polyval(X, np.reshape(dense(ċ, c), C.shape), tensor)
    if not is_zero(ẋ):
        out = out + P.polyval(X, P.polyder(C), tensor) * dense(ẋ, x)
    return out


@rrule.register(P.polyval)
def polyval_rrule(x: Any, c: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``polyval``: ``∂/∂c_k = x^k``, ``∂/∂x = polyval(x, polyder(c))``."""
    Ω = P.polyval(x, c, *args, **kwargs)
    tensor = _tensor(args, kwargs)
    rest = (_NO,) * len(args)

    def polyval_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO, *rest)
        return (_NO, *_val_pullback(x, c, tensor, ȳ), *rest)

    return Ω, polyval_pullback


@frule.register(P.polyval)
def polyval_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``polyval``: ``polyval(x, ċ) + polyval(x, polyder(c))·ẋ``."""
    (ẋ, ċ, *_), (x, c, *extra) = split_tangents(args)
    Ω = P.polyval(x, c, *extra, **kwargs)
    ẋ, ċ = unthunk(ẋ), unthunk(ċ)
    if is_zero(ẋ) and is_zero(ċ):
        return Ω, _ZERO
    ẏ = _val_push(x, c, _tensor(tuple(extra), kwargs), ẋ, ċ)
    return Ω, project(Ω, np.broadcast_to(ẏ, np.shape(Ω)))


def _register_chain(f: Any, nx: int, grid: bool) -> None:
    """``f(x1, ..., xn, c)``: ``polyval`` on ``x1`` (``tensor=True``), then on each other
    point with ``tensor=grid`` (numpy's ``_valnd``/``_gridnd``)."""
    name = f.__name__

    def points(xs: tuple) -> list:
        return [np.asanyarray(x) for x in xs]

    def chain_rrule(*args: Any) -> Any:
        Ω = f(*args)  # numpy's own checks (points of one shape for the val functions)
        xs, c = points(args[:nx]), args[nx]
        stages = [c]
        for i, x in enumerate(xs):
            stages.append(P.polyval(x, stages[-1], grid or i == 0))

        def chain_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, *(_ZERO,) * (nx + 1))
            dxs: list = [_ZERO] * nx
            for i in range(nx - 1, -1, -1):
                dx, ȳ = _val_pullback(xs[i], stages[i], grid or i == 0, ȳ)
                dxs[i] = project(args[i], dx)
            return (_NO, *dxs, project(c, ȳ))

        return Ω, chain_pullback

    def chain_frule(ḟ: Any, *rest: Any) -> Any:
        ts, primals = rest[: nx + 1], rest[nx + 1 :]
        Ω = f(*primals)
        ts = tuple(unthunk(t) for t in ts)
        if all(is_zero(t) for t in ts):
            return Ω, _ZERO
        xs = points(primals[:nx])
        c, ċ = primals[nx], ts[nx]
        for i, x in enumerate(xs):
            tensor = grid or i == 0
            ẋ = ts[i]
            ċ = _ZERO if is_zero(ẋ) and is_zero(ċ) else _val_push(x, c, tensor, ẋ, ċ)
            c = P.polyval(x, c, tensor)
        return Ω, _ZERO if is_zero(ċ) else project(Ω, np.broadcast_to(ċ, np.shape(Ω)))

    chain_rrule.__name__ = chain_rrule.__qualname__ = f"{name}_rrule"
    chain_frule.__name__ = chain_frule.__qualname__ = f"{name}_frule"
    chain_rrule.__doc__ = f"rrule of ``{name}``: back along its chain of ``polyval``."
    chain_frule.__doc__ = f"frule of ``{name}``: forward along its chain of ``polyval``."
    rrule.register(f)(chain_rrule)
    frule.register(f)(chain_frule)


_register_chain(P.polyval2d, 2, False)
_register_chain(P.polyval3d, 3, False)
_register_chain(P.polygrid2d, 2, True)
_register_chain(P.polygrid3d, 3, True)


# --- polyadd, polysub, polymul, polypow -----------------------------------------------


def _register_addsub(f: Any, sign: float) -> None:
    name = f.__name__

    def addsub_rrule(c1: Any, c2: Any) -> Any:
        Ω = f(c1, c2)
        n1, n2 = _kept(c1), _kept(c2)

        def addsub_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, _ZERO)
            Y = _fit_to(ȳ, max(n1, n2))
            return (_NO, _onto(c1, Y[:n1]), _onto(c2, sign * Y[:n2]))

        addsub_pullback.__name__ = addsub_pullback.__qualname__ = f"{name}_pullback"
        return Ω, addsub_pullback

    def addsub_frule(ḟ: Any, ċ1: Any, ċ2: Any, c1: Any, c2: Any) -> Any:
        Ω = f(c1, c2)
        ċ1, ċ2 = unthunk(ċ1), unthunk(ċ2)
        if is_zero(ċ1) and is_zero(ċ2):
            return Ω, _ZERO
        n1, n2 = _kept(c1), _kept(c2)
        m = max(n1, n2)
        ẏ = _fit_to(_tangent(ċ1, c1)[:n1], m) + sign * _fit_to(_tangent(ċ2, c2)[:n2], m)
        return Ω, project(Ω, ẏ[: Ω.shape[0]])

    addsub_rrule.__name__ = addsub_rrule.__qualname__ = f"{name}_rrule"
    addsub_frule.__name__ = addsub_frule.__qualname__ = f"{name}_frule"
    addsub_rrule.__doc__ = f"rrule of ``{name}``: each argument gets the head of ȳ."
    addsub_frule.__doc__ = f"frule of ``{name}``: the sum (difference) of the tangents."
    rrule.register(f)(addsub_rrule)
    frule.register(f)(addsub_frule)


_register_addsub(P.polyadd, 1.0)
_register_addsub(P.polysub, -1.0)


@rrule.register(P.polymul)
def polymul_rrule(c1: Any, c2: Any) -> Any:
    """rrule of ``polymul``: the adjoint of the convolution of the kept coefficients."""
    Ω = P.polymul(c1, c2)
    n1, n2 = _kept(c1), _kept(c2)

    def polymul_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO)
        k1, k2 = _series(c1)[:n1], _series(c2)[:n2]
        Y = _fit_to(ȳ, n1 + n2 - 1)
        return (
            _NO,
            _onto(c1, np.correlate(Y, k2, "valid")),
            _onto(c2, np.correlate(Y, k1, "valid")),
        )

    return Ω, polymul_pullback


@frule.register(P.polymul)
def polymul_frule(ḟ: Any, ċ1: Any, ċ2: Any, c1: Any, c2: Any) -> Any:
    """frule of ``polymul``: ``ċ1·c2 + c1·ċ2``."""
    Ω = P.polymul(c1, c2)
    ċ1, ċ2 = unthunk(ċ1), unthunk(ċ2)
    if is_zero(ċ1) and is_zero(ċ2):
        return Ω, _ZERO
    n1, n2 = _kept(c1), _kept(c2)
    k1, k2 = _series(c1)[:n1], _series(c2)[:n2]
    ẏ = np.convolve(_tangent(ċ1, c1)[:n1], k2) + np.convolve(k1, _tangent(ċ2, c2)[:n2])
    return Ω, project(Ω, ẏ[: Ω.shape[0]])


def _pow_factor(c: Any, power: int) -> np.ndarray:
    """``n·cⁿ⁻¹`` of the kept coefficients: ``d(cⁿ) = n·cⁿ⁻¹·dc``."""
    k = _series(c)[: _kept(c)]
    return power * P.polypow(k, power - 1, None)


@rrule.register(P.polypow)
def polypow_rrule(c: Any, pow: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``polypow``: ``c̄ = correlate(ȳ, n·cⁿ⁻¹)``."""
    Ω = P.polypow(c, pow, *args, **kwargs)
    power = int(pow)
    rest = (_NO,) * len(args)

    def polypow_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or power == 0:
            return (_NO, _ZERO, _NO, *rest)
        a = _pow_factor(c, power)
        d = np.correlate(np.asarray(ȳ), a, "valid")
        return (_NO, _onto(c, d), _NO, *rest)

    return Ω, polypow_pullback


@frule.register(P.polypow)
def polypow_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``polypow``: ``n·cⁿ⁻¹·ċ``."""
    (ċ, *_), (c, pow, *extra) = split_tangents(args)
    Ω = P.polypow(c, pow, *extra, **kwargs)
    ċ = unthunk(ċ)
    power = int(pow)
    if is_zero(ċ) or power == 0:
        return Ω, _ZERO
    a = _pow_factor(c, power)
    return Ω, project(Ω, np.convolve(a, _tangent(ċ, c)[: _kept(c)]))


# --- polydiv --------------------------------------------------------------------------


def _div_parts(c1: Any, c2: Any) -> tuple:
    """``(u, v, k)``: the kept dividend and divisor, highest degree first (the order of
    :mod:`rules._numpy_polynomials`' ``polydiv`` math), and the quotient's length."""
    n1, n2 = _kept(c1), _kept(c2)
    u, v = _series(c1)[:n1][::-1], _series(c2)[:n2][::-1]
    return u, v, n1 - n2 + 1


@rrule.register(P.polydiv)
def polydiv_rrule(c1: Any, c2: Any) -> Any:
    """rrule of ``polydiv``: the adjoint of dividing ``ċ1 - q·ċ2`` by ``c2``."""
    Ω = P.polydiv(c1, c2)
    quo, rem = Ω

    def polydiv_pullback(ȳ: Any) -> tuple:
        q̄, r̄ = entries(ȳ, 2)
        if is_zero(q̄) and is_zero(r̄):
            return (_NO, _ZERO, _ZERO)
        u, v, k = _div_parts(c1, c2)
        n1, n2 = u.shape[0], v.shape[0]
        dtype = np.result_type(quo, rem, u, v)
        if k <= 0:  # deg c1 < deg c2: q = 0, r = c1
            du = np.zeros(n1, dtype) if is_zero(r̄) else _fit_to(r̄, n1)
            return (_NO, _onto(c1, du), _ZERO)
        m = min(rem.shape[0], n2 - 1)
        # ē (highest first): the remainder's cotangent sits at the low end
        ē = np.zeros(n1, dtype) if is_zero(r̄) else _fit_to(np.asarray(r̄)[:m], n1)[::-1]
        t = -np.correlate(ē, v, "valid")
        if not is_zero(q̄):
            t = t + np.asarray(q̄)[::-1]
        w = np.linalg.solve(mH(_toeplitz(v, k)), t)
        ē = ē + np.concatenate([w, np.zeros(n2 - 1, w.dtype)])
        dv = -np.correlate(ē, quo[::-1], "valid")
        return (_NO, _onto(c1, ē[::-1]), _onto(c2, dv[::-1]))

    return Ω, polydiv_pullback


@frule.register(P.polydiv)
def polydiv_frule(ḟ: Any, ċ1: Any, ċ2: Any, c1: Any, c2: Any) -> Any:
    """frule of ``polydiv``: ``(q̇, ṙ)`` divide ``ċ1 - q·ċ2`` by ``c2``."""
    Ω = P.polydiv(c1, c2)
    quo, rem = Ω
    ċ1, ċ2 = unthunk(ċ1), unthunk(ċ2)
    if is_zero(ċ1) and is_zero(ċ2):
        return Ω, _ZERO
    u, v, k = _div_parts(c1, c2)
    n1, n2 = u.shape[0], v.shape[0]
    e = _tangent(ċ1, c1)[:n1][::-1]
    if k <= 0:
        zq = project(quo, np.zeros(quo.shape))
        return Ω, _T[tuple](zq, project(rem, _fit_to(e[::-1], rem.shape[0])))
    if not is_zero(ċ2):
        e = e - np.convolve(quo[::-1], _tangent(ċ2, c2)[:n2][::-1])
    q̇ = np.linalg.solve(_toeplitz(v, k), e[:k])
    ṙ = (e - np.convolve(q̇, v))[::-1][: n2 - 1]
    return Ω, _T[tuple](project(quo, q̇[::-1]), project(rem, _fit_to(ṙ, rem.shape[0])))


# --- polyfit ---------------------------------------------------------------------------

_FIT_ARGS = ("deg", "rcond", "full", "w")
_SV = "polyfit: the singular values of numpy's column-scaled Vandermonde matrix"


def _degrees(deg: Any) -> np.ndarray:
    """The fitted powers, ascending."""
    d = np.asarray(deg)
    return np.arange(int(d) + 1) if d.ndim == 0 else np.sort(d)


non_differentiable(_degrees)


def _problem(x: Any, y: Any, w: Any, c: Any, deg: Any) -> _Fit:
    """The least squares of the fit on the columns ``deg`` selects, as
    :mod:`rules._numpy_polyfit`'s ``_Fit`` (its columns highest power first)."""
    powers = _degrees(deg)[::-1]
    sel = np.asarray(c)[powers]
    fit = _Fit(x, y, w, sel, {"deg": powers.shape[0] - 1})
    if not np.array_equal(powers, np.arange(powers.shape[0])[::-1]):
        fit.V = np.asarray(fit.x)[:, None] ** powers
        fit.dV = np.where(powers > 0, powers * fit.x[:, None] ** np.maximum(powers - 1, 0), 0)
        wcol = 1.0 if fit.w is None else fit.w[:, None]
        fit.A = fit.V * wcol
        fit.R = fit.b - fit.A @ fit.C
        scale = np.sqrt(np.sum(np.abs(fit.A) ** 2, axis=0))
        fit.scale = np.where(scale == 0, 1.0, scale)
        fit.Rf = np.linalg.qr(fit.A / fit.scale, mode="r")
    return fit


def _spread(c: Any, Ċ: np.ndarray, deg: Any, vec: bool) -> Any:
    """A tangent of the selected columns (highest power first) as one of ``c``."""
    powers = _degrees(deg)[::-1]
    out = np.zeros((np.shape(c)[0], Ċ.shape[1]), Ċ.dtype)
    onehot = (np.arange(np.shape(c)[0])[:, None] == powers[None, :]).astype(Ċ.dtype)
    out = out + onehot @ Ċ
    return project(c, out[:, 0] if vec else out)


@rrule.register(P.polyfit)
def polyfit_rrule(x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``polyfit`` (see the module for the outputs that carry derivatives)."""
    opts = _options(args, kwargs, _FIT_ARGS)
    Ω = P.polyfit(x, y, *args, **kwargs)
    # w read from the arguments, not from opts (a constant): an AD differentiating this
    # rule (second order) follows it
    w = args[3] if len(args) > 3 else kwargs.get("w")
    w_slot = len(args) > 3 and args[3] is not None
    rest = (_NO,) * len(args)
    full = bool(opts.get("full"))

    def polyfit_pullback(ȳ: Any) -> tuple:
        c = Ω[0] if full else Ω
        res̄: Any = _ZERO
        if full:
            c̄, info = entries(ȳ, 2)
            res̄, _, s̄, _ = entries(info, 4)
            if not is_zero(s̄):
                raise NotImplementedError(f"{_SV} have no derivative rule")
        else:
            c̄ = unthunk(ȳ)
        if is_zero(c̄) and is_zero(res̄):
            return (_NO, _ZERO, _ZERO, *rest)
        fit = _problem(x, y, w, c, opts["deg"])
        powers = _degrees(opts["deg"])[::-1]
        C̄ = np.zeros(fit.C.shape) if is_zero(c̄) else np.reshape(c̄, np.shape(c))[powers]
        C̄ = np.reshape(C̄, fit.C.shape)
        r̄2 = np.zeros(fit.C.shape[1]) if is_zero(res̄) else np.reshape(np.real(res̄), -1)
        Z = fit.gram_solve(C̄)
        Ā = fit.R @ mH(Z) - fit.A @ Z @ mH(fit.C) - 2 * (fit.R * r̄2) @ mH(fit.C)
        b̄ = fit.A @ Z + 2 * fit.R * r̄2
        dx, dy, dw = fit.inputs_bar(Ā, b̄)
        out = [project(x, dx), project(y, dy), *rest]
        if w_slot:
            out[5] = project(w, dw)
        return (_NO, *out)

    return Ω, polyfit_pullback


@frule.register(P.polyfit)
def polyfit_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``polyfit``: ``ċ = (AᴴA)⁻¹ (Ȧᴴ r + Aᴴ (ḃ - Ȧ c))`` on the fitted powers."""
    tangents, (x, y, *extra) = split_tangents(args)
    opts = _options(tuple(extra), kwargs, _FIT_ARGS)
    Ω = P.polyfit(x, y, *extra, **kwargs)
    w = extra[3] if len(extra) > 3 else kwargs.get("w")
    ẋ, ẏ = unthunk(tangents[0]), unthunk(tangents[1])
    ẇ = unthunk(tangents[5]) if len(extra) > 3 and w is not None else _ZERO
    if is_zero(ẋ) and is_zero(ẏ) and is_zero(ẇ):
        return Ω, _ZERO
    full = bool(opts.get("full"))
    c = Ω[0] if full else Ω
    fit = _problem(x, y, w, c, opts["deg"])
    Ȧ, ḃ = fit.inputs_dot(ẋ, ẏ, ẇ)
    Ċ = fit.gram_solve(mH(Ȧ) @ fit.R + mH(fit.A) @ (ḃ - Ȧ @ fit.C))
    ċ = _spread(c, Ċ, opts["deg"], fit.vec)
    if not full:
        return Ω, ċ
    ṙ2 = 2 * np.real(np.sum(conj_if_complex(fit.R) * (ḃ - Ȧ @ fit.C), axis=0))
    res = Ω[1][0]
    ṙes = project(res, ṙ2) if res.size else project(res, np.zeros(0))
    info = _T[list](ṙes, _NO, not_implemented(_SV), _NO)
    return Ω, _T[tuple](ċ, info)


# --- polyfromroots, polyroots, polycompanion --------------------------------------------


@rrule.register(P.polyfromroots)
def polyfromroots_rrule(roots: Any) -> Any:
    """rrule of ``polyfromroots``: ``r̄_i = -Σ_k c̄_k conj(b_{k,i})`` (synthetic division)."""
    Ω = P.polyfromroots(roots)

    def polyfromroots_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        z = np.atleast_1d(roots)
        if is_zero(ȳ) or z.shape[0] == 0:
            return (_NO, _ZERO)
        B = conj_if_complex(_poly_partials(z, np.asarray(Ω)[::-1]))
        ā = np.asarray(ȳ)[::-1][1:]
        return (_NO, project(roots, np.reshape(-np.tensordot(ā, B, axes=1), np.shape(roots))))

    return Ω, polyfromroots_pullback


@frule.register(P.polyfromroots)
def polyfromroots_frule(ḟ: Any, ż: Any, roots: Any) -> Any:
    """frule of ``polyfromroots``: ``ċ = -Σ_i b_i ż_i`` (``b_i = c / (x - r_i)``)."""
    Ω = P.polyfromroots(roots)
    z = np.atleast_1d(roots)
    ż = unthunk(ż)
    if is_zero(ż) or z.shape[0] == 0:
        return Ω, _ZERO
    B = _poly_partials(z, np.asarray(Ω)[::-1])
    ȧ = -(B @ np.reshape(dense(ż, roots), z.shape))
    return Ω, project(Ω, np.concatenate([np.zeros(1, ȧ.dtype), ȧ])[::-1])


@rrule.register(P.polyroots)
def polyroots_rrule(c: Any) -> Any:
    """rrule of ``polyroots``: ``c̄_k = Σ_i r̄_i conj(-r_i^k / c'(r_i))``."""
    Ω = P.polyroots(c)

    def polyroots_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or Ω.shape[0] == 0:
            return (_NO, _ZERO)
        n = _kept(c)
        g = np.asarray(ȳ) * conj_if_complex(_root_weights(_series(c)[:n][::-1], Ω))
        V = conj_if_complex(np.vander(Ω, n, increasing=True))
        return (_NO, _onto(c, g @ V))

    return Ω, polyroots_pullback


@frule.register(P.polyroots)
def polyroots_frule(ḟ: Any, ċ: Any, c: Any) -> Any:
    """frule of ``polyroots``: ``ṙ = -ċ(r)/c'(r)``."""
    Ω = P.polyroots(c)
    ċ = unthunk(ċ)
    if is_zero(ċ) or Ω.shape[0] == 0:
        return Ω, _ZERO
    n = _kept(c)
    weights = _root_weights(_series(c)[:n][::-1], Ω)
    return Ω, project(Ω, P.polyval(Ω, _tangent(ċ, c)[:n]) * weights)


def _companion_column(k: np.ndarray, k̇: np.ndarray) -> np.ndarray:
    """The tangent of the last column ``-k[:-1]/k[-1]``."""
    return -k̇[:-1] / k[-1] + k[:-1] * k̇[-1] / k[-1] ** 2


@rrule.register(P.polycompanion)
def polycompanion_rrule(c: Any) -> Any:
    """rrule of ``polycompanion``: the last column ``-c[:-1]/c[-1]`` carries it all."""
    Ω = P.polycompanion(c)

    def polycompanion_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO)
        k = conj_if_complex(_series(c)[: _kept(c)])
        m̄ = np.asarray(ȳ)[:, -1]
        head = -m̄ / k[-1]
        last = np.sum(m̄ * k[:-1]) / k[-1] ** 2
        return (_NO, _onto(c, np.concatenate([head, np.reshape(last, (1,))])))

    return Ω, polycompanion_pullback


@frule.register(P.polycompanion)
def polycompanion_frule(ḟ: Any, ċ: Any, c: Any) -> Any:
    """frule of ``polycompanion``: only the last column moves."""
    Ω = P.polycompanion(c)
    ċ = unthunk(ċ)
    if is_zero(ċ):
        return Ω, _ZERO
    n = _kept(c)
    col = _companion_column(_series(c)[:n], _tangent(ċ, c)[:n])
    Ṁ = np.concatenate([np.zeros((n - 1, n - 2), col.dtype), col[:, None]], axis=1)
    return Ω, project(Ω, Ṁ)
