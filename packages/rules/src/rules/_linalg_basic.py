"""numpy.linalg rules built on solves: inv, det, slogdet, solve, tensorinv,
tensorsolve, matrix_power, multi_dot, linalg.trace; matrix_rank is non-differentiable.

Every rule accepts ``(..., n, n)`` stacks where numpy does and complex input.
Pullbacks use ``np.linalg.solve`` with the (conjugate-)transposed matrix rather
than forming an inverse, except where the inverse is the answer (``inv``,
``det``, ``slogdet``). Conventions: LINALG.md.
"""

from __future__ import annotations

import math

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

from ._linalg_util import (
    bind,
    dense,
    entries,
    flipped,
    is_zero,
    mH,
    nondiff_rest,
    solve_as,
    triangle,
    unsupported,
)
from ._util import asarray, project, unbroadcast

non_differentiable(np.linalg.matrix_rank)


def _trace_last(x: np.ndarray) -> np.ndarray:
    return np.trace(x, axis1=-2, axis2=-1)


@rrule.register(np.linalg.inv)
def _(a):
    a = asarray(a)
    y = np.linalg.inv(a)

    def inv_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ȳ
        yh = mH(y)
        return NoTangent(), project(a, -(yh @ ȳ @ yh))

    return y, inv_pullback


@frule.register(np.linalg.inv)
def _(ḟ, ȧ, a):
    y = np.linalg.inv(asarray(a))
    if is_zero(ȧ):
        return y, ZeroTangent()
    return y, project(y, -(y @ asarray(unthunk(ȧ)) @ y))


def _adjugate(a: np.ndarray) -> np.ndarray:
    """adj(a) through the SVD: exact for singular matrices, where ``det(a) inv(a)`` fails."""
    u, s, vh = np.linalg.svd(a)
    ones = np.ones_like(s[..., :1])
    left = np.cumprod(np.concatenate([ones, s[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, s[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = left * right  # product of every singular value but the i-th
    phase = np.linalg.det(u) * np.linalg.det(vh)
    adj = mH(vh) @ (others[..., :, None] * mH(u))
    return phase[..., None, None] * adj


def _det_adjugate(a: np.ndarray, d: np.ndarray) -> np.ndarray:
    try:
        return d[..., None, None] * np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return _adjugate(a)


@rrule.register(np.linalg.det)
def _(a):
    a = asarray(a)
    d = np.linalg.det(a)

    def det_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ȳ
        # ∂det/∂a = adj(a)ᵀ; the conjugate convention gives ā = ȳ adj(a)ᴴ.
        ȳ = asarray(ȳ)
        return NoTangent(), project(a, ȳ[..., None, None] * mH(_det_adjugate(a, d)))

    return d, det_pullback


@frule.register(np.linalg.det)
def _(ḟ, ȧ, a):
    a = asarray(a)
    d = np.linalg.det(a)
    if is_zero(ȧ):
        return d, ZeroTangent()
    return d, project(d, det_tangent(a, d, asarray(unthunk(ȧ))))


def det_tangent(a: np.ndarray, d: np.ndarray, ȧ: np.ndarray) -> np.ndarray:
    """``tr(adj(a) ȧ)``, the pushforward of ``det`` (``d = det(a)``); singular ``a`` too."""
    try:
        return d * _trace_last(np.linalg.solve(a, ȧ))
    except np.linalg.LinAlgError:
        return _trace_last(_adjugate(a) @ ȧ)


def det_tangent_regular(a: np.ndarray, d: np.ndarray, ȧ: np.ndarray) -> np.ndarray:
    """``det_tangent`` for an invertible ``a``: the form nested differentiation follows."""
    return d * _trace_last(np.linalg.solve(a, ȧ))


def _solve_or_explain(fname: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError as e:
        raise np.linalg.LinAlgError(
            f"{fname}: the derivative needs inv(a), but a is singular ({e}); "
            "log|det a| is -inf there and has no gradient."
        ) from e


@rrule.register(np.linalg.slogdet)
def _(a):
    a = asarray(a)
    res = np.linalg.slogdet(a)
    cplx = np.iscomplexobj(res.sign)

    def slogdet_pullback(ȳ):
        s̄, l̄ = entries(ȳ, 2)
        if is_zero(l̄) and (is_zero(s̄) or not cplx):
            return NoTangent(), ZeroTangent()
        # d log det a = tr(a⁻¹ da) = c; dlogabsdet = Re c, dsign = sign·i·Im c, so
        # ā = z a⁻ᴴ with z = l̄ - i Im(conj(s̄) sign) (the sign is constant when real).
        z = np.real(dense(l̄, res.logabsdet)).astype(res.sign.dtype)
        if cplx and not is_zero(s̄):
            z = z - 1j * np.imag(np.conj(asarray(s̄)) * res.sign)
        ainvh = _solve_or_explain("numpy.linalg.slogdet", mH(a), np.eye(a.shape[-1]))
        return NoTangent(), project(a, z[..., None, None] * ainvh)

    return res, slogdet_pullback


@frule.register(np.linalg.slogdet)
def _(ḟ, ȧ, a):
    a = asarray(a)
    res = np.linalg.slogdet(a)
    T = Tangent[type(res)]
    if is_zero(ȧ):
        return res, ZeroTangent()
    ċ = _trace_last(_solve_or_explain("numpy.linalg.slogdet", a, asarray(unthunk(ȧ))))
    l̇ = project(res.logabsdet, np.real(ċ))
    if np.iscomplexobj(res.sign):
        return res, T(sign=project(res.sign, res.sign * 1j * np.imag(ċ)), logabsdet=l̇)
    return res, T(sign=ZeroTangent(), logabsdet=l̇)


@rrule.register(np.linalg.solve)
def _(a, b):
    a_, b_ = asarray(a), asarray(b)
    lower = triangle(a_, b_)  # a triangular a: O(n²) solves instead of an LU
    x = solve_as(a_, b_, lower)
    vec = b_.ndim == 1  # numpy >= 2: b is a vector only when 1-D
    xm = x[..., None] if vec else x

    def solve_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), x̄, x̄
        x̄m = asarray(x̄)[..., None] if vec else asarray(x̄)
        b̄m = solve_as(mH(a_), x̄m, flipped(lower))  # a⁻ᴴ x̄
        # Dense even for a triangular a: solve differentiates every entry of a.
        # For a vector b the product is an outer one, exact as a broadcast.
        ā = (-b̄m) * mH(xm) if vec else (-b̄m) @ mH(xm)
        b̄ = b̄m[..., 0] if vec else b̄m
        # Batch axes of a and b broadcast against each other: sum them back.
        return NoTangent(), unbroadcast(a, ā), unbroadcast(b, b̄)

    return x, solve_pullback


@frule.register(np.linalg.solve)
def _(ḟ, ȧ, ḃ, a, b):
    a, b = asarray(a), asarray(b)
    lower = triangle(a, b)
    x = solve_as(a, b, lower)
    if is_zero(ȧ) and is_zero(ḃ):
        return x, ZeroTangent()
    vec = b.ndim == 1
    xm = x[..., None] if vec else x
    rhs = np.zeros_like(xm) if is_zero(ḃ) else asarray(unthunk(ḃ))
    if vec and not is_zero(ḃ):
        rhs = rhs[..., None]
    if not is_zero(ȧ):
        rhs = rhs - asarray(unthunk(ȧ)) @ xm
    ẋ = solve_as(a, rhs, lower)
    return x, project(x, ẋ[..., 0] if vec else ẋ)


def _tensorinv_matrix(a: np.ndarray, y: np.ndarray, ind: int) -> np.ndarray:
    """tensorinv(a) as the inverse matrix of ``a.reshape(prod(a.shape[:ind]), -1)``."""
    return y.reshape(math.prod(a.shape[ind:]), -1)


@rrule.register(np.linalg.tensorinv)
def _(a, *rest, **kw):
    a_ = asarray(a)
    ind = bind(np.linalg.tensorinv, (a_, *rest), kw)["ind"]
    y = np.linalg.tensorinv(a_, ind)
    ym = _tensorinv_matrix(a_, y, ind)

    def tensorinv_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ȳ, *nondiff_rest(rest)
        ā = -(mH(ym) @ asarray(ȳ).reshape(ym.shape) @ mH(ym))
        return NoTangent(), project(a, ā.reshape(a_.shape)), *nondiff_rest(rest)

    return y, tensorinv_pullback


@frule.register(np.linalg.tensorinv)
def _(ḟ, *args, **kw):
    ȧ, a, rest = args[0], asarray(args[len(args) // 2]), args[len(args) // 2 + 1 :]
    ind = bind(np.linalg.tensorinv, (a, *rest), kw)["ind"]
    y = np.linalg.tensorinv(a, ind)
    if is_zero(ȧ):
        return y, ZeroTangent()
    ym = _tensorinv_matrix(a, y, ind)
    ẏ = -(ym @ asarray(unthunk(ȧ)).reshape(mH(ym).shape) @ ym)
    return y, project(y, ẏ.reshape(y.shape))


def _tensorsolve_matrix(a: np.ndarray, b: np.ndarray, axes) -> tuple[np.ndarray, list[int]]:
    """The matrix numpy.linalg.tensorsolve solves with, and the transpose it applied."""
    perm = list(range(a.ndim))
    if axes is not None:
        for k in axes:
            perm.remove(k)
            perm.insert(a.ndim, k)
    return a.transpose(perm).reshape(b.size, -1), perm


@rrule.register(np.linalg.tensorsolve)
def _(a, b, *rest, **kw):
    a_, b_ = asarray(a), asarray(b)
    axes = bind(np.linalg.tensorsolve, (a_, b_, *rest), kw)["axes"]
    x = np.linalg.tensorsolve(a_, b_, axes)
    am, perm = _tensorsolve_matrix(a_, b_, axes)

    def tensorsolve_pullback(x̄):
        x̄ = unthunk(x̄)
        if is_zero(x̄):
            return NoTangent(), x̄, x̄, *nondiff_rest(rest)
        b̄ = np.linalg.solve(mH(am), asarray(x̄).reshape(-1))
        ām = -np.outer(b̄, x.reshape(-1).conj())
        shape_t = tuple(a_.shape[p] for p in perm)
        ā = ām.reshape(shape_t).transpose(np.argsort(perm))
        return NoTangent(), project(a, ā), project(b, b̄.reshape(b_.shape)), *nondiff_rest(rest)

    return x, tensorsolve_pullback


@frule.register(np.linalg.tensorsolve)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, ḃ = args[0], args[1]
    a, b, rest = asarray(args[h]), asarray(args[h + 1]), args[h + 2 :]
    axes = bind(np.linalg.tensorsolve, (a, b, *rest), kw)["axes"]
    x = np.linalg.tensorsolve(a, b, axes)
    if is_zero(ȧ) and is_zero(ḃ):
        return x, ZeroTangent()
    am, perm = _tensorsolve_matrix(a, b, axes)
    rhs = dense(ḃ, b).reshape(-1)
    if not is_zero(ȧ):
        ȧm = asarray(unthunk(ȧ)).transpose(perm).reshape(am.shape)
        rhs = rhs - ȧm @ x.reshape(-1)
    return x, project(x, np.linalg.solve(am, rhs).reshape(x.shape))


def _powers(a: np.ndarray, n: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The base (``inv(a)`` for ``n < 0``) and its powers ``0 .. |n|-1``."""
    base = np.linalg.inv(a) if n < 0 else a
    pw = [np.broadcast_to(np.eye(a.shape[-1], dtype=base.dtype), base.shape)]
    for _ in range(abs(n) - 1):
        pw.append(pw[-1] @ base)
    return base, pw


@rrule.register(np.linalg.matrix_power)
def _(a, *rest, **kw):
    a_ = asarray(a)
    n = int(bind(np.linalg.matrix_power, (a_, *rest), kw)["n"])
    y = np.linalg.matrix_power(a_, n)
    k = abs(n)

    def matrix_power_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ) or k == 0:
            return NoTangent(), ZeroTangent(), *nondiff_rest(rest)
        base, pw = _powers(a_, n)
        ȳ = asarray(ȳ)
        # d(Bᵏ) = Σⱼ Bʲ dB Bᵏ⁻¹⁻ʲ, so B̄ = Σⱼ (Bʲ)ᴴ ȳ (Bᵏ⁻¹⁻ʲ)ᴴ; for n < 0, B = a⁻¹.
        b̄ = sum(mH(pw[j]) @ ȳ @ mH(pw[k - 1 - j]) for j in range(k))
        if n < 0:
            b̄ = -(mH(base) @ b̄ @ mH(base))
        return NoTangent(), project(a, b̄), *nondiff_rest(rest)

    return y, matrix_power_pullback


@frule.register(np.linalg.matrix_power)
def _(ḟ, *args, **kw):
    h = len(args) // 2
    ȧ, a, rest = args[0], asarray(args[h]), args[h + 1 :]
    n = int(bind(np.linalg.matrix_power, (a, *rest), kw)["n"])
    y = np.linalg.matrix_power(a, n)
    k = abs(n)
    if is_zero(ȧ) or k == 0:
        return y, ZeroTangent()
    base, pw = _powers(a, n)
    ḃ = asarray(unthunk(ȧ))
    if n < 0:
        ḃ = -(base @ ḃ @ base)
    return y, project(y, sum(pw[j] @ ḃ @ pw[k - 1 - j] for j in range(k)))


def _as_matrices(arrays: list[np.ndarray]) -> list[np.ndarray]:
    """multi_dot's 1-D ends as a row (first) and a column (last) matrix."""
    ms = list(arrays)
    if ms[0].ndim == 1:
        ms[0] = ms[0][None, :]
    if ms[-1].ndim == 1:
        ms[-1] = ms[-1][:, None]
    return ms


def _no_out(fname: str, out) -> None:
    if out is not None:
        raise unsupported(
            fname,
            "out",
            "<array>",
            "writing into out= is a mutation the AD cannot see",
            "drop out= and use the returned array",
        )


@rrule.register(np.linalg.multi_dot)
def _(arrays, *, out=None):
    _no_out("numpy.linalg.multi_dot", out)
    xs = [asarray(x) for x in arrays]
    y = np.linalg.multi_dot(xs)
    ms = _as_matrices(xs)

    def multi_dot_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ȳ
        n = len(ms)
        left = [None] * n  # left[i] = ms[0] @ ... @ ms[i-1]
        for i in range(1, n):
            left[i] = ms[0] if i == 1 else left[i - 1] @ ms[i - 1]
        g = asarray(ȳ).reshape(ms[0].shape[0], ms[-1].shape[1])
        grads = [None] * n
        for i in range(n - 1, -1, -1):  # g = ȳ (ms[i+1] ... ms[n-1])ᴴ
            grads[i] = g if left[i] is None else mH(left[i]) @ g
            g = g @ mH(ms[i])
        cts = [project(x, gi.reshape(np.shape(x))) for x, gi in zip(arrays, grads)]
        return NoTangent(), (tuple(cts) if isinstance(arrays, tuple) else cts)

    return y, multi_dot_pullback


@frule.register(np.linalg.multi_dot)
def _(ḟ, ẋs, arrays, *, out=None):
    _no_out("numpy.linalg.multi_dot", out)
    xs = [asarray(x) for x in arrays]
    y = np.linalg.multi_dot(xs)
    ẋs = unthunk(ẋs)
    if is_zero(ẋs):
        return y, ZeroTangent()
    ẏ = None
    for i, ẋ in enumerate(ẋs):
        if is_zero(ẋ):
            continue
        term = np.linalg.multi_dot([*xs[:i], asarray(unthunk(ẋ)), *xs[i + 1 :]])
        ẏ = term if ẏ is None else ẏ + term
    return y, (ZeroTangent() if ẏ is None else project(y, ẏ))


def _trace_cotangent(a: np.ndarray, ȳ, offset: int) -> np.ndarray:
    """ȳ placed on the ``offset`` diagonal of the last two axes."""
    eye = np.eye(a.shape[-2], a.shape[-1], k=offset)
    return asarray(ȳ)[..., None, None] * eye


# numpy.trace itself is ruled in _numpy_indexing; numpy 2's
# numpy.linalg.trace(x, /, *, offset=0, dtype=None) works on the last two axes.
@rrule.register(np.linalg.trace)
def _(x, *, offset=0, dtype=None):
    x_ = asarray(x)
    y = np.linalg.trace(x_, offset=offset, dtype=dtype)

    def linalg_trace_pullback(ȳ):
        ȳ = unthunk(ȳ)
        if is_zero(ȳ):
            return NoTangent(), ȳ
        return NoTangent(), project(x, _trace_cotangent(x_, ȳ, offset))

    return y, linalg_trace_pullback


@frule.register(np.linalg.trace)
def _(ḟ, ẋ, x, *, offset=0, dtype=None):
    y = np.linalg.trace(asarray(x), offset=offset, dtype=dtype)
    if is_zero(ẋ):
        return y, ZeroTangent()
    return y, project(y, np.linalg.trace(asarray(unthunk(ẋ)), offset=offset, dtype=dtype))
