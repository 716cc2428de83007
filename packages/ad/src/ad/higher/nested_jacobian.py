"""``jacobian``, ``withjacobian`` and ``diaghessian`` inside differentiated code.

As ``hessian`` (see ``hessian``), each is a primitive whose rules differentiate
small kernels written with ``jvp`` and ``hvp``, whose own rules carry every
mode to any order: a column of a Jacobian is ``jvp(f, args, e_k)``, an entry
of the Hessian's diagonal is ``hvp(f, args, e_k)[i][k]``. The reverse rules
keep the value ``jacobian`` (or ``diaghessian``) computes and differentiate
``⟨kernel, w⟩`` when the cotangent ``w`` is known; the forward rules push the
tangents through the kernel that forms the columns.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.api.gradient import bind_keywords
from ad.api.jacobian import WithJacobian, jacobian, withjacobian
from ad.api.jvp import jvp
from ad.api.user_results import to_user
from ad.higher.cotangent_parts import _is_zero, as_called
from ad.higher.hessian import diaghessian, hvp
from ad.runtime import forward as _forward
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.reverse import field_ct, fn_tangent, rcall
from rulescore import NoTangent, Tangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()


# --- constants of the kernels (no derivative flows through them) -----------------------


def _kind(a: Any) -> str:
    """``"number"``, ``"array"`` (an array or nested list of numbers) or ``""`` (no
    Jacobian: ``jacobian`` gives None)."""
    if isinstance(a, numbers.Number) and not isinstance(a, (bool, complex)):
        return "number"
    if isinstance(a, (np.ndarray, list)):
        try:
            kind = np.asarray(a).dtype.kind
        except ValueError:  # ragged
            return ""
        return "array" if kind in "fiu" else ""
    return ""


def _one_hot(args: tuple, i: int, k: int) -> tuple:
    """The tangents of ``args`` along the ``k``-th entry of argument ``i`` (flattened in
    C order), ``None`` for the others; a list argument gets a list."""
    a = args[i]
    ts: list[Any] = [None] * len(args)
    if _kind(a) == "number":
        ts[i] = 1.0
        return tuple(ts)
    arr = np.asarray(a)
    e = np.zeros(arr.shape, dtype=np.result_type(arr.dtype, np.float64))
    e.flat[k] = 1.0
    ts[i] = e if isinstance(a, np.ndarray) else e.tolist()
    return tuple(ts)


def _has_weights(w: Any) -> bool:
    """Whether the cotangent ``w`` of one Jacobian (or diagonal) is not zero."""
    w = unthunk(w)
    return not (w is None or _is_zero(w))


def _rows(y: Any) -> int:
    return int(np.size(y))


non_differentiable(_kind)
non_differentiable(_one_hot)
non_differentiable(_has_weights)
non_differentiable(_rows)


def _weights(w: Any, rows: int) -> Any:
    """A cotangent of one Jacobian (``(m, n)``, or ``(m,)`` for a number argument) as
    an ``(m, n)`` matrix. Differentiated, not a constant: the kernels' value is linear
    in it, and reverse mode over their pullback (``hessian_reverse`` of a function
    calling ``jacobian``) follows the cotangent, which depends on the point, through it."""
    return np.reshape(unthunk(w), (rows, -1))


# --- the kernels (differentiated as source) ---------------------------------------------


def jacobian_columns(f: Callable, args: tuple) -> tuple:
    """``jacobian(f, *args)``, one ``jvp`` per input element (a column)."""
    out = []
    for i in range(len(args)):
        kind = _kind(args[i])
        if kind == "":
            out.append(None)
        else:
            cols = [
                np.ravel(jvp(f, args, _one_hot(args, i, k))[1]) for k in range(np.size(args[i]))
            ]
            J = np.stack(cols, axis=1)
            if kind == "number":
                J = J[:, 0]
            out.append(J)
    return tuple(out)


def jacobian_dot(f: Callable, args: tuple, w: tuple, rows: int) -> Any:
    """``Σᵢ ⟨Jᵢ, wᵢ⟩``: the function whose gradient is ``jacobian``'s pullback of ``w``."""
    total = 0.0
    for i in range(len(args)):
        if _kind(args[i]) != "" and _has_weights(w[i]):
            wi = _weights(w[i], rows)
            for k in range(np.size(args[i])):
                col = np.ravel(jvp(f, args, _one_hot(args, i, k))[1])
                total = total + np.sum(col * wi[:, k])
    return total


def withjacobian_dot(f: Callable, args: tuple, v̄: Any, w: tuple, rows: int) -> Any:
    """``⟨f(args), v̄⟩ + Σᵢ ⟨Jᵢ, wᵢ⟩``: ``withjacobian``'s pullback as a gradient."""
    total = jacobian_dot(f, args, w, rows)
    if v̄ is not None:
        total = total + np.sum(f(*args) * v̄)
    return total


def withjacobian_columns(f: Callable, args: tuple) -> tuple:
    """``withjacobian(f, *args)`` as a pair: the value and one ``jvp`` per column."""
    return f(*args), jacobian_columns(f, args)


def _diagonal(f: Callable, args: tuple, i: int) -> Any:
    """``∂²f/∂aᵢ[k]²`` for every ``k``, shaped like argument ``i``."""
    a = args[i]
    if _kind(a) == "number":
        d = hvp(f, args, _one_hot(args, i, 0))[i]
        if d is None:
            d = 0.0
        return d
    vals = [_entry(hvp(f, args, _one_hot(args, i, k))[i], k) for k in range(np.size(a))]
    return np.reshape(np.array(vals), np.shape(a))


def _entry(col: Any, k: int) -> Any:
    if col is None:
        return 0.0
    return np.ravel(col)[k]


def diaghessian_entries(f: Callable, args: tuple) -> tuple:
    """``diaghessian(f, *args)``, one ``hvp`` per input element."""
    out = []
    for i in range(len(args)):
        if _kind(args[i]) == "":
            out.append(None)
        else:
            out.append(_diagonal(f, args, i))
    return tuple(out)


def diaghessian_dot(f: Callable, args: tuple, w: tuple) -> Any:
    """``Σᵢ ⟨diag Hᵢ, wᵢ⟩``: the function whose gradient is ``diaghessian``'s pullback."""
    total = 0.0
    for i in range(len(args)):
        if _kind(args[i]) != "" and _has_weights(w[i]):
            wi = _weights(w[i], 1)
            total = total + np.sum(np.ravel(_diagonal(f, args, i)) * np.ravel(wi))
    return total


# --- the rules -----------------------------------------------------------------------------


def _bound(f: Callable, kwargs: dict) -> Callable:
    """``f`` with its keywords, as called now: the pullbacks below run it again."""
    return bind_keywords(as_called(f), kwargs)


def _f_ct(raw_f: Any, kwargs: dict) -> Any:
    return field_ct(raw_f, "f") if kwargs else raw_f


def _f_tangent(ḟ: Any, kwargs: dict) -> Any:
    return fn_tangent(("f",), (ḟ,)) if kwargs else ḟ


@rrule.register(jacobian, config=ADConfig)
def _(config: Any, f: Callable, *args: Any, mode: str = "auto", **kwargs: Any) -> Any:
    out = withjacobian(f, *args, mode=mode, **kwargs)
    n = len(args)
    bound = _bound(f, kwargs)
    rows = _rows(out.val)

    def jacobian_pullback(J̄: Any) -> tuple:
        J̄ = unthunk(J̄)
        if _is_zero(J̄):
            return (_NO, _Z, *([_Z] * n))
        w = entries(J̄, n, "a Jacobian tuple")
        _, pb = rcall(jacobian_dot, bound, tuple(args), w, rows)
        raw = pb(1.0)  # (jacobian_dot, f, args, w, rows)
        return (_NO, _f_ct(raw[1], kwargs), *entries(raw[2], n, "the arguments"))

    return out.grad, jacobian_pullback


@frule.register(jacobian, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any, mode: str = "auto", **kwargs: Any) -> Any:
    m = len(rest) // 2
    (ḟ, *ȧ), (f, *args) = rest[:m], rest[m:]
    return _forward.fcall(
        jacobian_columns,
        (_Z, _f_tangent(ḟ, kwargs), _forward.tan_tuple(*ȧ)),
        _bound(f, kwargs),
        tuple(args),
    )


@rrule.register(withjacobian, config=ADConfig)
def _(config: Any, f: Callable, *args: Any, mode: str = "auto", **kwargs: Any) -> Any:
    out = withjacobian(f, *args, mode=mode, **kwargs)
    n = len(args)
    bound = _bound(f, kwargs)
    rows = _rows(out.val)

    def withjacobian_pullback(ct: Any) -> tuple:
        ct = unthunk(ct)
        if _is_zero(ct):
            return (_NO, _Z, *([_Z] * n))
        b = ct._backing if isinstance(ct, Tangent) else ct
        v̄, J̄ = (b.get("val", _Z), b.get("grad", _Z)) if isinstance(b, dict) else tuple(b)
        v̄, J̄ = unthunk(v̄), unthunk(J̄)
        w = entries(J̄, n, "a Jacobian tuple")
        v = None if _is_zero(v̄) else v̄
        _, pb = rcall(withjacobian_dot, bound, tuple(args), v, w, rows)
        raw = pb(1.0)  # (withjacobian_dot, f, args, v̄, w, rows)
        return (_NO, _f_ct(raw[1], kwargs), *entries(raw[2], n, "the arguments"))

    return out, withjacobian_pullback


@frule.register(withjacobian, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any, mode: str = "auto", **kwargs: Any) -> Any:
    m = len(rest) // 2
    (ḟ, *ȧ), (f, *args) = rest[:m], rest[m:]
    (y, J), ṫ = _forward.fcall(
        withjacobian_columns,
        (_Z, _f_tangent(ḟ, kwargs), _forward.tan_tuple(*ȧ)),
        _bound(f, kwargs),
        tuple(args),
    )
    out = WithJacobian(y, J)
    if _is_zero(unthunk(ṫ)):
        return out, _Z
    ẏ, J̇ = _forward.entries(ṫ, 2, (y, J))
    return out, Tangent[WithJacobian]._from_backing({"val": ẏ, "grad": J̇})


@rrule.register(diaghessian, config=ADConfig)
def _(config: Any, f: Callable, *args: Any, **kwargs: Any) -> Any:
    d = diaghessian(f, *args, **kwargs)
    n = len(args)
    bound = _bound(f, kwargs)

    def diaghessian_pullback(d̄: Any) -> tuple:
        d̄ = unthunk(d̄)
        if _is_zero(d̄):
            return (_NO, _Z, *([_Z] * n))
        w = entries(d̄, n, "a diaghessian tuple")
        _, pb = rcall(diaghessian_dot, bound, tuple(args), w)
        raw = pb(1.0)  # (diaghessian_dot, f, args, w)
        return (_NO, _f_ct(raw[1], kwargs), *entries(raw[2], n, "the arguments"))

    return d, diaghessian_pullback


@frule.register(diaghessian, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    m = len(rest) // 2
    (ḟ, *ȧ), (f, *args) = rest[:m], rest[m:]
    return _forward.fcall(
        diaghessian_entries,
        (_Z, _f_tangent(ḟ, kwargs), _forward.tan_tuple(*ȧ)),
        _bound(f, kwargs),
        tuple(args),
    )


# --- plumbing of the API's results, differentiated at higher orders ----------------------


@rrule.register(to_user, config=ADConfig)
def _(config: Any, ct: Any) -> Any:
    """``to_user`` (a derivative as the API reports it: zeros become None, a tangent
    its plain container) is the identity on the vector: its rules pass the
    cotangent or tangent through (hvp's and hessian's rules call it on their results,
    which a fourth derivative differentiates again)."""
    y = to_user(ct)

    def to_user_pullback(ȳ: Any) -> tuple:
        return (_NO, _Z if y is None else ȳ)

    return y, to_user_pullback


@frule.register(to_user, config=ADConfig)
def _(config: Any, ṡ: Any, ċt: Any, ct: Any) -> Any:
    y = to_user(ct)
    return y, (_Z if y is None else ċt)
