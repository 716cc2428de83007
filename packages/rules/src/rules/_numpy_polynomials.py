"""Rules for numpy's polynomial functions (coefficients highest power first):
``polyadd``, ``polysub``, ``polymul``, ``polydiv``, ``polyder``, ``polyint``,
``poly``, ``roots``, ``vander``. (``polyval`` is in :mod:`rules._numpy_signal`,
``polyfit`` in :mod:`rules._numpy_polyfit`.)

Decisions and derivations:

* ``polyadd``/``polysub`` align the shorter argument at the end (low powers), so
  each argument's cotangent is the matching tail of ȳ. ``polymul`` strips
  leading zeros first (numpy converts to ``poly1d``): a stripped entry gets a
  zero cotangent (a nonzero value there would lengthen the output); the rest is
  ``convolve``, holomorphic in both arguments.
* ``polydiv(u, v) = (q, r)`` with ``u = q·v + r``: differentiating,
  ``q̇·v + ṙ = u̇ - q·v̇``, so ``(q̇, ṙ)`` is the division of ``e = u̇ - q·v̇`` by
  ``v``, a lower-triangular Toeplitz solve for ``q̇`` and ``ṙ = e - q̇·v`` (its
  leading entries vanish; numpy trims them from ``r``). The pullback is the
  adjoint of those two linear maps.
* ``polyder``/``polyint`` are linear: each coefficient is scaled by a falling
  factorial (or its inverse); ``polyint``'s integration constants ``k`` passed
  positionally get cotangents too (keyword arguments get no derivative).
* ``poly(z)``: ``∂a_k/∂z_i = -b_{k-1,i}`` where ``b_j = z·b_{j-1} + a_j``,
  ``b_0 = 1`` (synthetic division of ``a`` by ``x - z_i``); for a square matrix
  ``A``, ``da_k = -tr(B_{k-1} dA)`` with ``B_j = A B_{j-1} + a_j I`` (the adjugate
  of ``xI - A`` by Faddeev–LeVerrier), exact also at repeated eigenvalues.
  Where numpy returns real coefficients for complex roots (conjugate pairs),
  the derivative is that of the real part.
* ``roots(p)``: a simple root moves by ``ṙ = -ṗ(r)/p'(r)`` (from ``p(r) = 0``),
  computed with the full ``p`` (numpy strips leading and trailing zeros; a
  stripped trailing zero's root at 0 moves like any other). A repeated root
  has no derivative: ``p'(r) = 0`` gives inf/nan. The output is complex unless
  all roots are real; a real ``p`` gets the real part of its cotangent.
* ``vander``: ``∂V_ij/∂x_i = p_j x_i^(p_j - 1)`` (0 for the power 0).

Integer counts (``m``, ``N``) and flags get ``NoTangent()``.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.polymul, np.array([1.0, 2.0]), np.array([1.0, -1.0, 3.0]))
>>> y, pb(np.array([1.0, 0.0, 0.0, 0.0]))[1:]   # ȳ on the x³ coefficient
(array([1., 1., 1., 6.]), (array([1., 0.]), array([1., 0., 0.])))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._linalg_util import entries, mH
from ._numpy_elementwise import conj_if_complex
from ._numpy_statistics import split_tangents
from ._util import asarray, is_zero, project

__all__ = ["vander_derivative"]

_NO = NoTangent()
_ZERO = ZeroTangent()


def _dense(t: Any, x: Any) -> np.ndarray:
    """The tangent ``t`` of ``x`` as a 1-d array (zeros for a zero tangent)."""
    t = unthunk(t)
    shape = np.shape(np.atleast_1d(x))
    return np.zeros(shape) if is_zero(t) else np.broadcast_to(asarray(t), shape)


def _tail(ȳ: Any, x: Any) -> np.ndarray:
    """The last ``len(x)`` entries of ``ȳ``, shaped like ``x``."""
    n = np.atleast_1d(x).shape[0]
    return np.reshape(asarray(ȳ)[np.shape(ȳ)[0] - n :], np.shape(x))


# --- polyadd, polysub -------------------------------------------------------------------


def _register_addsub(f: Any, sign: float) -> None:
    name = f.__name__

    def addsub_rrule(a1: Any, a2: Any) -> Any:
        Ω = f(a1, a2)

        def addsub_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (_NO, _ZERO, _ZERO)
            return (_NO, project(a1, _tail(ȳ, a1)), project(a2, sign * _tail(ȳ, a2)))

        addsub_pullback.__name__ = addsub_pullback.__qualname__ = f"{name}_pullback"
        return Ω, addsub_pullback

    def addsub_frule(ḟ: Any, ȧ1: Any, ȧ2: Any, a1: Any, a2: Any) -> Any:
        Ω = f(a1, a2)
        if is_zero(unthunk(ȧ1)) and is_zero(unthunk(ȧ2)):
            return Ω, _ZERO
        return Ω, project(Ω, f(_dense(ȧ1, a1), _dense(ȧ2, a2)))

    addsub_rrule.__doc__ = f"rrule of ``np.{name}``: each argument gets the tail of ȳ."
    addsub_frule.__doc__ = f"frule of ``np.{name}``: ``np.{name}`` of the tangents."
    rrule.register(f)(addsub_rrule)
    frule.register(f)(addsub_frule)


_register_addsub(np.polyadd, 1.0)
_register_addsub(np.polysub, -1.0)


# --- polymul ----------------------------------------------------------------------------


def _lead(a: Any) -> int:
    """How many leading entries ``poly1d`` strips (all but the last of a zero polynomial)."""
    a = np.atleast_1d(a)
    nz = np.flatnonzero(a)
    return int(nz[0]) if nz.size else a.shape[0] - 1


non_differentiable(_lead)


@rrule.register(np.polymul)
def polymul_rrule(a1: Any, a2: Any) -> Any:
    """rrule of ``np.polymul``: ``convolve`` of the arguments without leading zeros."""
    Ω = np.polymul(a1, a2)
    s1, s2 = _lead(a1), _lead(a2)

    def polymul_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, _ZERO)
        ȳ = asarray(ȳ)
        k1, k2 = np.atleast_1d(a1)[s1:], np.atleast_1d(a2)[s2:]
        d1 = np.concatenate([np.zeros(s1, ȳ.dtype), np.correlate(ȳ, k2, "valid")])
        d2 = np.concatenate([np.zeros(s2, ȳ.dtype), np.correlate(ȳ, k1, "valid")])
        return (_NO, project(a1, d1.reshape(np.shape(a1))), project(a2, d2.reshape(np.shape(a2))))

    return Ω, polymul_pullback


@frule.register(np.polymul)
def polymul_frule(ḟ: Any, ȧ1: Any, ȧ2: Any, a1: Any, a2: Any) -> Any:
    """frule of ``np.polymul``: ``ȧ1·a2 + a1·ȧ2`` (leading zeros stripped)."""
    Ω = np.polymul(a1, a2)
    if is_zero(unthunk(ȧ1)) and is_zero(unthunk(ȧ2)):
        return Ω, _ZERO
    s1, s2 = _lead(a1), _lead(a2)
    k1, k2 = np.atleast_1d(a1)[s1:], np.atleast_1d(a2)[s2:]
    dΩ = np.convolve(_dense(ȧ1, a1)[s1:], k2) + np.convolve(k1, _dense(ȧ2, a2)[s2:])
    return Ω, project(Ω, dΩ)


# --- polydiv ----------------------------------------------------------------------------


def _toeplitz(v: np.ndarray, k: int) -> np.ndarray:
    """The k×k lower-triangular Toeplitz matrix of the first k entries of ``q ↦ q·v``."""
    lag = np.arange(k)[:, None] - np.arange(k)[None, :]
    vpad = np.concatenate([v, np.zeros(max(k - v.size, 0), v.dtype)])
    return np.where(lag >= 0, vpad[np.clip(lag, 0, None)], 0)


@rrule.register(np.polydiv)
def polydiv_rrule(u: Any, v: Any) -> Any:
    """rrule of ``np.polydiv``: the adjoint of dividing ``u̇ - q·v̇`` by ``v``."""
    Ω = np.polydiv(u, v)
    q, r = Ω

    def polydiv_pullback(ȳ: Any) -> tuple:
        q̄, r̄ = entries(ȳ, 2)
        if is_zero(q̄) and is_zero(r̄):
            return (_NO, _ZERO, _ZERO)
        U, V = np.atleast_1d(u) + 0.0, np.atleast_1d(v) + 0.0
        m, n = U.size - 1, V.size - 1
        ē = np.zeros(m + 1, np.result_type(q, r))
        if not is_zero(r̄):
            ē = ē + np.concatenate([np.zeros(m + 1 - r.size), asarray(r̄)])
        if m < n:
            return (_NO, project(u, ē.reshape(np.shape(u))), _ZERO)
        k = m - n + 1
        t = -np.correlate(ē, V, "valid")  # -C_vᴴ r̄
        if not is_zero(q̄):
            t = t + asarray(q̄)
        w = np.linalg.solve(mH(_toeplitz(V, k)), t)
        ē = ē + np.concatenate([w, np.zeros(n, w.dtype)])
        dv = -np.correlate(ē, q, "valid")
        return (_NO, project(u, ē.reshape(np.shape(u))), project(v, dv.reshape(np.shape(v))))

    return Ω, polydiv_pullback


@frule.register(np.polydiv)
def polydiv_frule(ḟ: Any, u̇: Any, v̇: Any, u: Any, v: Any) -> Any:
    """frule of ``np.polydiv``: ``(q̇, ṙ)`` divide ``u̇ - q·v̇`` by ``v``."""
    Ω = np.polydiv(u, v)
    q, r = Ω
    u̇, v̇ = unthunk(u̇), unthunk(v̇)
    if is_zero(u̇) and is_zero(v̇):
        return Ω, _ZERO
    U, V = np.atleast_1d(u) + 0.0, np.atleast_1d(v) + 0.0
    m, n = U.size - 1, V.size - 1
    e = _dense(u̇, u)
    if m < n:
        return Ω, Tangent[tuple](project(q, np.zeros(q.shape)), project(r, e[e.size - r.size :]))
    if not is_zero(v̇):
        e = e - np.convolve(q, _dense(v̇, v))
    q̇ = np.linalg.solve(_toeplitz(V, m - n + 1), e[: m - n + 1])
    ṙ = e - np.convolve(q̇, V)
    return Ω, Tangent[tuple](project(q, q̇), project(r, ṙ[ṙ.size - r.size :]))


# --- polyder, polyint -------------------------------------------------------------------


def _int_arg(args: tuple, kwargs: dict, i: int, name: str, default: Any) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


@rrule.register(np.polyder)
def polyder_rrule(p: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.polyder``: ȳ scaled by the falling factorials, zeros at the end."""
    Ω = np.polyder(p, *args, **kwargs)
    rest = (_NO,) * len(args)

    def polyder_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        P = asarray(p)
        c = np.polyder(np.ones(P.shape[0]), *args, **kwargs)
        dp = np.concatenate([asarray(ȳ) * c, np.zeros(P.shape[0] - c.size)])
        return (_NO, project(p, dp), *rest)

    return Ω, polyder_pullback


@frule.register(np.polyder)
def polyder_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.polyder``: the derivative of the tangent polynomial."""
    (ṗ, *_), (p, *extra) = split_tangents(args)
    Ω = np.polyder(p, *extra, **kwargs)
    ṗ = unthunk(ṗ)
    if is_zero(ṗ):
        return Ω, _ZERO
    return Ω, project(Ω, np.polyder(_dense(ṗ, p), *extra, **kwargs))


@rrule.register(np.polyint)
def polyint_rrule(p: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.polyint``: ȳ scaled by inverse falling factorials; a positional
    ``k`` gets the cotangents of the constants it became."""
    Ω = np.polyint(p, *args, **kwargs)
    m = int(_int_arg(args, kwargs, 0, "m", 1))
    k_slot = len(args) > 1 and args[1] is not None

    def polyint_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        rest = [_NO] * len(args)
        if is_zero(ȳ):
            if k_slot:
                rest[1] = _ZERO
            return (_NO, _ZERO, *rest)
        ȳ = asarray(ȳ)
        N = asarray(p).shape[0]
        c = np.polyint(np.ones(N), m)[:N]
        if k_slot:
            K = np.atleast_1d(args[1])
            scale = np.polyint(np.zeros(N), m, np.ones(m))[N:]
            dk = ȳ[N:] * scale
            if K.size == 1:
                dk = np.sum(dk, keepdims=True)
            else:
                dk = np.concatenate([dk, np.zeros(K.size - m, dk.dtype)])
            rest[1] = project(args[1], dk.reshape(np.shape(args[1])))
        return (_NO, project(p, ȳ[:N] * c), *rest)

    return Ω, polyint_pullback


@frule.register(np.polyint)
def polyint_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.polyint``: the integral of the tangents (``k̇`` as constants)."""
    tangents, (p, *extra) = split_tangents(args)
    Ω = np.polyint(p, *extra, **kwargs)
    m = int(_int_arg(extra, kwargs, 0, "m", 1))
    ṗ = unthunk(tangents[0])
    k̇ = unthunk(tangents[2]) if len(extra) > 1 and extra[1] is not None else _ZERO
    if is_zero(ṗ) and is_zero(k̇):
        return Ω, _ZERO
    k = None if is_zero(k̇) else asarray(k̇)
    return Ω, project(Ω, np.polyint(_dense(ṗ, p), m, k))


# --- poly, roots ------------------------------------------------------------------------


def _poly_partials(z: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``B`` with ``∂a_k/∂z = -B[k-1]``: rows of vectors (1-d ``z``) or matrices
    (``da_k = -tr(B[k-1] dA)`` for a square matrix)."""
    n = z.shape[0]
    eye = np.ones(n) if z.ndim == 1 else np.eye(n)
    B = [eye + 0 * z]
    for j in range(1, n):
        prev = B[j - 1]
        B.append((z * prev if z.ndim == 1 else z @ prev) + a[j] * eye)
    return np.stack(B)


@rrule.register(np.poly)
def poly_rrule(seq_of_zeros: Any) -> Any:
    """rrule of ``np.poly``: ``z̄ = -Σ_k ā_k conj(b_{k-1})`` (see the module)."""
    Ω = np.poly(seq_of_zeros)

    def poly_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        z = np.atleast_1d(seq_of_zeros)
        if is_zero(ȳ) or z.shape[0] == 0:
            return (_NO, _ZERO)
        B = conj_if_complex(_poly_partials(z, asarray(Ω)))
        ā = asarray(ȳ)[1:]
        dz = -np.tensordot(ā, B if z.ndim == 1 else np.swapaxes(B, -1, -2), axes=1)
        return (_NO, project(seq_of_zeros, dz))

    return Ω, poly_pullback


@frule.register(np.poly)
def poly_frule(ḟ: Any, ż: Any, seq_of_zeros: Any) -> Any:
    """frule of ``np.poly``: ``ȧ_k = -b_{k-1}·ż`` (``-tr(B_{k-1} Ȧ)`` for a matrix)."""
    Ω = np.poly(seq_of_zeros)
    z = np.atleast_1d(seq_of_zeros)
    ż = unthunk(ż)
    if is_zero(ż) or z.shape[0] == 0:
        return Ω, _ZERO
    B = _poly_partials(z, asarray(Ω))
    Ż = np.broadcast_to(ż, z.shape)
    if z.ndim == 1:
        ȧ = -(B @ Ż)
    else:
        ȧ = -np.einsum("kij,ji->k", B, Ż)
    return Ω, project(Ω, np.concatenate([np.zeros(1, ȧ.dtype), ȧ]))


def _root_weights(p: Any, r: np.ndarray) -> np.ndarray:
    """``-1/p'(r)``: how far each root moves per unit of ``ṗ(r)``."""
    P = np.atleast_1d(p)
    return -1.0 / np.polyval(np.polyder(P), r)


@rrule.register(np.roots)
def roots_rrule(p: Any) -> Any:
    """rrule of ``np.roots``: ``p̄_k = Σ_i r̄_i conj(-r_i^(N-1-k) / p'(r_i))``."""
    Ω = np.roots(p)

    def roots_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or Ω.size == 0:
            return (_NO, _ZERO)
        g = asarray(ȳ) * conj_if_complex(_root_weights(p, Ω))
        V = conj_if_complex(np.vander(Ω, np.atleast_1d(p).shape[0]))
        return (_NO, project(p, np.reshape(g @ V, np.shape(p))))

    return Ω, roots_pullback


@frule.register(np.roots)
def roots_frule(ḟ: Any, ṗ: Any, p: Any) -> Any:
    """frule of ``np.roots``: ``ṙ = -ṗ(r)/p'(r)``."""
    Ω = np.roots(p)
    ṗ = unthunk(ṗ)
    if is_zero(ṗ) or Ω.size == 0:
        return Ω, _ZERO
    return Ω, project(Ω, np.polyval(_dense(ṗ, p), Ω) * _root_weights(p, Ω))


# --- vander -----------------------------------------------------------------------------


def vander_derivative(x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
    """``∂V_ij/∂x_i`` for ``V = np.vander(x, *args, **kwargs)``.

    >>> vander_derivative(np.array([2.0, 3.0]), 3)
    array([[4., 1., 0.],
           [6., 1., 0.]])
    """
    x = asarray(x)
    N = _int_arg(args, kwargs, 0, "N", None)
    N = x.shape[0] if N is None else N
    increasing = _int_arg(args, kwargs, 1, "increasing", False)
    powers = np.arange(N) if increasing else np.arange(N - 1, -1, -1)
    x = x.astype(np.result_type(x, 1.0))
    return np.where(powers > 0, powers * x[:, None] ** np.maximum(powers - 1, 0), 0)


@rrule.register(np.vander)
def vander_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """rrule of ``np.vander``: ``x̄_i = Σ_j V̄_ij conj(p_j x_i^(p_j-1))``."""
    Ω = np.vander(x, *args, **kwargs)
    rest = (_NO,) * len(args)

    def vander_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return (_NO, _ZERO, *rest)
        D = conj_if_complex(vander_derivative(x, *args, **kwargs))
        return (_NO, project(x, np.sum(asarray(ȳ) * D, axis=1)), *rest)

    return Ω, vander_pullback


@frule.register(np.vander)
def vander_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """frule of ``np.vander``: ``V̇_ij = p_j x_i^(p_j-1) ẋ_i``."""
    (ẋ, *_), (x, *extra) = split_tangents(args)
    Ω = np.vander(x, *extra, **kwargs)
    ẋ = unthunk(ẋ)
    if is_zero(ẋ):
        return Ω, _ZERO
    D = vander_derivative(x, *extra, **kwargs)
    return Ω, project(Ω, D * asarray(ẋ)[:, None])
