"""Second derivatives: ``hessian``, ``hessian_reverse`` and ``diaghessian``.

``hessian`` differentiates ``gradient`` in forward mode, one pushforward of
``x ↦ ∇f(x)`` per input element (a column of ``H``; each is reverse mode over
forward mode, see ``reverse_over_forward``); ``hessian_reverse`` is reverse mode over
reverse mode, one pullback per output element (a row), differentiating the
generated adjoint and the rules' pullbacks (see ``reverse_over_reverse``);
``diaghessian`` takes one Hessian-vector product ``∇ₓ ⟨∇f(x), v⟩`` per input
element and keeps its diagonal entry. All are exact to rounding.
Arrays are flattened in numpy's C order, as in ``jacobian``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.api.gradient import _seed, bind_keywords, gradient
from ad.api.jacobian import jacobian
from ad.api.jvp import _tangent_in, jvp
from ad.api.user_results import to_user
from ad.errors import NonScalarOutputError
from ad.higher.cotangent_parts import _is_zero, _tangents_ct, as_called
from ad.higher.reverse_over_reverse import gradient_pure
from ad.higher.unsupported import reverse_over_reverse_refusal
from ad.runtime import forward as _forward
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries
from ad.runtime.forward import split
from ad.runtime.nested_kernels import fcall_pair, reverse_over_forward
from ad.runtime.reverse import field_ct, fn_tangent, rcall
from ad.runtime.tracebacks import entry_point, hide_internals
from rulescore import NoTangent, ZeroTangent, frule, non_differentiable, rrule, unthunk

__all__ = ["diaghessian", "hessian", "hessian_reverse", "hvp"]

_Z = ZeroTangent()
_NO = NoTangent()


def fresh(x: Any) -> Any:
    """``x`` with its arrays and lists copied: what each evaluation of the user's
    function is given. ``f`` may update its argument in place where ``gradient``
    accepts it (``x *= 2.0``); the second derivatives evaluate ``f`` several times
    (the check of its output, one pass per column), and neither the user's array
    nor the next pass may see an earlier pass's write."""
    kind = type(x)
    if kind is np.ndarray:
        return x.copy()
    if kind is list or kind is tuple:
        return kind(fresh(e) for e in x)
    return x


@rrule.register(fresh, config=ADConfig)
def _(config: Any, x: Any) -> Any:
    def fresh_pullback(ȳ: Any) -> tuple:
        return (_NO, ȳ)

    return fresh(x), fresh_pullback


@frule.register(fresh, config=ADConfig)
def _(config: Any, ḟ: Any, ẋ: Any, x: Any) -> Any:
    return fresh(x), ẋ


def _first_gradient(f: Callable, x: Any) -> Any:
    """``∇f(x)``: the function whose derivative is the Hessian."""
    return gradient(f, fresh(x))[0]


def _check_scalar(name: str, f: Callable, args: tuple) -> bool:
    """Refuse a vector-valued ``f``; True when ``f`` returns a tuple whose first
    element is the real number differentiated (``(loss, aux)``, as ``hvp`` and
    ``withgradient`` read it)."""
    y = f(*fresh(args))
    first = type(y) is tuple and len(y) > 0
    _refuse_vector(y[0] if first else y, f, name, _VECTOR)
    return first


_VECTOR = "the Hessian of a vector-valued function is a 3-index array"


def _first_output(f: Callable) -> Callable:
    """``x ↦ f(x)[0]``: a ``(loss, aux)`` function's loss."""

    def first_output(x: Any) -> Any:
        return f(x)[0]

    return first_output


def _rebuilt(a: Any, like: Any) -> Any:
    """The array ``a``, made of the (nested) list ``like``, as that list: its
    entries ``a[i]``, so ``f`` reads what it was given, and every entry, one ``f``
    does not use included, has a derivative (zero), as an array's entries do."""
    if type(like) is list:
        return [_rebuilt(a[i], like[i]) for i in range(len(like))]
    return a


def _prepared(name: str, f: Callable, x: Any, more: tuple) -> tuple[Callable, Any]:
    """``hessian``'s and ``hessian_reverse``'s ``(f, x)``, checked: one argument;
    ``f``'s loss when it returns ``(loss, aux)``; a list ``x`` as an array that
    ``f`` reads back as the list (``_rebuilt``)."""
    if more:
        raise TypeError(
            f"{name}(f, x) differentiates one argument, got {1 + len(more)}.\n"
            f"To fix: fix the others in a closure ({name}(lambda x: f(x, y), x)); for the "
            "Hessian in all of them, pack them in one array (np.concatenate) and unpack "
            "it inside f; for a mixed block d2f/dx dy, "
            "ad.jacobian(lambda y: ad.gradient(f, x, y)[0], y); ad.hvp and ad.diaghessian "
            "take several arguments."
        )
    if _check_scalar(name, f, (x,)):
        f = _first_output(f)
    if _is_number(x):
        return f, x
    a = _as_array(name, x)
    if a.dtype.kind == "c":
        raise TypeError(
            f"{name}(f, z) of a complex array: the Hessian of a real function of complex "
            "entries is a real matrix in their real and imaginary parts, of twice the size, "
            f"which {name} does not form (a complex number alone gives H[re,re] + i*H[im,re]).\n"
            f"To fix: pass real coordinates, {name}(lambda v: f(v[:n] + 1j * v[n:]), "
            "np.concatenate([z.real, z.imag])) with n = z.size, or use ad.hvp(f, (z,), (v,)) "
            "for products with it."
        )
    if type(x) is list:
        like = x

        def of_list(a: Any) -> Any:
            return f(_rebuilt(a, like))

        return of_list, a
    return f, x


def _refuse_vector(y: Any, f: Callable, name: str, why: str) -> None:
    """Raise NonScalarOutputError naming ``name(f, ...)`` unless ``y`` is a real number."""
    try:
        _seed(y, f)
    except NonScalarOutputError as e:
        fname = getattr(f, "__name__", repr(f))
        raise NonScalarOutputError(
            f"{name}({fname}, ...) needs f to return a real number ({why})."
            f"\n{str(e).split(chr(10), 1)[-1]}"
        ) from None


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def _as_array(name: str, x: Any) -> np.ndarray:
    if isinstance(x, tuple):  # jacobian's tuple is no array: it would give None
        raise TypeError(
            f"{name} needs a number, an array or a (nested) list of numbers, got a "
            f"tuple.\nTo fix: pass np.array(x) or list(x) (read by index as the tuple "
            f"is), or use ad.hvp, which takes tuples."
        )
    a = np.asarray(x)
    if a.dtype.kind not in "fiuc":
        raise TypeError(
            f"{name} needs a number or an array of numbers, got {type(x).__name__}"
            + (f" of dtype {a.dtype}" if a.dtype.kind != "O" else "")
        )
    return a


@entry_point
def hessian(f: Callable, x: Any, /, *more: Any, **kwargs: Any) -> Any:
    """The Hessian of a real-valued ``f`` at ``x``: forward mode over ``gradient``.

    For an array (or nested list) ``x`` the result is the matrix
    ``H[k, l] = ∂²f/∂x[k]∂x[l]`` with ``x`` flattened in C order, so
    ``H.shape == (x.size, x.size)``; for a number, a number. Each column is
    one pushforward of ``∇f`` (a Hessian-vector product, computed as reverse
    mode over forward mode), so the cost is ``x.size`` times a few gradients.
    Keyword arguments are passed to ``f`` and not differentiated. When ``f``
    returns a tuple, its first element is differentiated (as in ``hvp``).

    >>> import numpy as np
    >>> hessian(lambda x: x[0] * x[1], np.array([1.0, 2.0]))
    array([[0., 1.],
           [1., 0.]])
    >>> import math
    >>> hessian(math.sin, math.pi / 2)
    -1.0
    >>> hessian(lambda x, c=1.0: c * x**3, 2.0, c=0.5)
    6.0

    See also: hessian_reverse, diaghessian, jacobian.
    """
    try:
        f = bind_keywords(f, kwargs)
        f, x = _prepared("hessian", f, x, more)
        if _is_number(x):
            ẏ = jvp(_first_gradient, (f, x), (None, 1.0))[1]
            return 0.0 if ẏ is None else ẏ
        return jacobian(lambda x: _first_gradient(f, x), x, mode="forward")[0]
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


@entry_point
def hessian_reverse(f: Callable, x: Any, /, *more: Any) -> Any:
    """The Hessian of a real-valued ``f`` at ``x``: reverse mode over reverse mode.

    The same matrix as ``hessian``, one row per pullback. The first gradient is
    computed by ``f``'s generated primal and adjoint in their pure form, and the
    second reverse pass differentiates that adjoint and every rule's pullback it
    calls, as source (see ``ad.higher.reverse_over_reverse``): a test of the whole design, and a
    cross-check of ``hessian``. A rule whose pullback cannot be differentiated
    again raises an error naming it; ``hessian`` does not need that. It takes
    no keyword arguments for ``f``: reverse over reverse follows positional
    calls only (``hessian`` does).

    >>> import numpy as np
    >>> hessian_reverse(lambda x: np.sum(x**3), np.array([[1.0, 2.0], [3.0, 4.0]]))
    array([[ 6.,  0.,  0.,  0.],
           [ 0., 12.,  0.,  0.],
           [ 0.,  0., 18.,  0.],
           [ 0.,  0.,  0., 24.]])

    See also: hessian.
    """
    try:
        f, x = _prepared("hessian_reverse", f, x, more)
        if _is_number(x):
            # a numpy float scalar stays one (f may call its methods: x.clip(0, 1))
            kind = type(x) if isinstance(x, np.floating) else float
            ct = jacobian(lambda x: gradient_pure(f, fresh(x)), kind(x), mode="reverse")[0]
            return kind(np.asarray(ct).reshape(-1)[0])
        return jacobian(lambda x: gradient_pure(f, fresh(x)), x, mode="reverse")[0]
    except Exception as e:
        refusal = reverse_over_reverse_refusal("hessian_reverse", e)
        if refusal is not None:  # the original stays as its (hidden) __context__
            raise refusal from None
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


def _scalar_output(y: Any, f: Callable) -> None:
    """Refuse a vector-valued ``f`` (``hvp`` of a tuple output: its first element)."""
    why = "a Hessian-vector product of a vector-valued function is a matrix"
    _refuse_vector(y[0] if type(y) is tuple and y else y, f, "hvp", why)


non_differentiable(_scalar_output)


def _hvp_kernel(f: Callable, ts: tuple, args: tuple) -> Any:
    """``⟨∇f(args), ts⟩``, the directional derivative whose gradient is ``H·v``.

    Its parameters are fixed (``args`` is one tuple): differentiating it again,
    reverse over forward over forward mode at fourth order, follows only functions
    of plain positional parameters."""
    y, ẏ = fcall_pair(f, ts, *fresh(args))
    _scalar_output(y, f)
    if type(y) is tuple:
        ẏ = split(ẏ, len(y))[0]
    return ẏ


@entry_point
def hvp(f: Callable, args: tuple, tangents: tuple, /, **kwargs: Any) -> tuple:
    """The Hessian of a real-valued ``f`` at ``args`` times ``tangents``: one entry per
    argument, ``∂/∂xᵢ ⟨∇f(args), tangents⟩``.

    This is forward mode over reverse mode, ``jvp(x ↦ ∇f(x), args, tangents)``
    without forming ``H``: ad evaluates it as the gradient of the directional
    derivative (reverse mode over the pushforward of ``f``), a small multiple
    of one gradient's cost. ``tangents`` has one entry per argument, shaped like
    it (``None`` for an argument that is not perturbed), as in ``jvp``; results
    have ``gradient``'s forms (``None`` where nothing flows). When ``f`` returns
    a tuple, its first element is differentiated. Keyword arguments are passed
    to ``f`` and not differentiated.

    >>> import numpy as np
    >>> hvp(lambda x: np.sum(x**3), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    (array([6., 0.]),)
    >>> hvp(lambda x, y: x**2 * y, (3.0, 2.0), (1.0, 0.0))    # H = [[2y, 2x], [2x, 0]]
    (4.0, 6.0)

    See also: hessian, jvp, gradient.
    """
    try:
        if not isinstance(args, (tuple, list)) or not isinstance(tangents, (tuple, list)):
            raise TypeError(
                "hvp(f, args, tangents) takes the arguments and their tangents as tuples, "
                f"got {type(args).__name__} and {type(tangents).__name__}.\n"
                "To fix: write hvp(f, (x,), (v,)) for a function of one argument."
            )
        if len(args) != len(tangents):
            raise TypeError(
                f"hvp: {len(args)} argument(s) but {len(tangents)} tangent(s); give one tangent "
                "per argument (None for an argument that is not perturbed)"
            )
        f = bind_keywords(f, kwargs)
        ts = _hvp_tangents(args, tangents)
        return tuple(to_user(c) for c in hvp_core(f, ts, tuple(args)))
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


def _hvp_tangents(args: tuple, tangents: Any) -> tuple:
    """``hvp``'s tangents, checked, as rulescore tangents (``jvp``'s conversion)."""
    return tuple(
        _tangent_in(x, t, f"argument {i + 1}") for i, (x, t) in enumerate(zip(args, tangents))
    )


def hvp_core(f: Callable, ts: tuple, args: tuple) -> tuple:
    """``H·ts``, one cotangent per argument: the gradient of ``⟨∇f, ts⟩`` by the
    vector-Jacobian-product kernel, whose rules carry it to any order (its
    parameters are fixed, as reverse over reverse mode follows only such calls)."""
    raw = reverse_over_forward(_hvp_kernel, 1.0, f, (_Z, *ts), args)
    return tuple(entries(raw[3], len(args), "arguments"))  # raw: (kernel, f, ts, args)


# ``hvp`` inside differentiated code is a primitive: its rules differentiate
# ``hvp_core`` (reverse mode over the vector-Jacobian-product kernel, or forward
# mode over it), never the argument checks above.


@rrule.register(hvp, config=ADConfig)
def _(config: Any, f: Callable, args: tuple, tangents: tuple, **kwargs: Any) -> Any:
    n = len(args)
    bound = bind_keywords(f, kwargs)
    ts = _hvp_tangents(args, tangents)
    out, pb = rcall(hvp_core, bound, ts, tuple(args))

    def hvp_pullback(ct: Any) -> tuple:
        raw = pb(_tangents_ct(tuple(entries(ct, n, "hvp's results"))))
        # raw: (hvp_core, f, ts, args); the tangents' cotangents are those of ts
        f_ct = field_ct(raw[1], "f") if kwargs else raw[1]
        ts_ct = entries(raw[2], n, "tangents")
        args_ct = entries(raw[3], n, "arguments")
        return (_NO, f_ct, _tangents_ct(tuple(args_ct)), _tangents_ct(tuple(ts_ct)))

    return tuple(to_user(c) for c in out), hvp_pullback


@frule.register(hvp, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ȧrgs: Any, ṫangents: Any, f, args, tangents, **kwargs):
    n = len(args)
    if kwargs:
        f = bind_keywords(f, kwargs)
        ḟ = fn_tangent(("f",), (ḟ,))
    ts = _hvp_tangents(args, tangents)
    ṫs = tuple(_Z if _is_zero(t) else t for t in _forward.entries(ṫangents, n, tangents))
    ȧ = _forward.entries(ȧrgs, n, args)
    ṫ_all = (_Z, ḟ, _forward.tan_tuple(*ṫs), _forward.tan_tuple(*ȧ))
    out, ṫ = _forward.fcall(hvp_core, ṫ_all, f, ts, tuple(args))
    return tuple(to_user(c) for c in out), ṫ


@entry_point
def diaghessian(f: Callable, /, *args: Any, **kwargs: Any) -> tuple:
    """The diagonal of the Hessian of a real-valued ``f``, one entry per argument.

    For each array argument, an array of its shape holding ``∂²f/∂a[i]²``;
    for a number, a number; for anything else, ``None``. It takes one
    Hessian-vector product per element (reverse over forward mode), and
    never forms the whole matrix. Keyword arguments are passed to ``f`` and
    not differentiated.

    A complex argument follows ``hessian``'s convention for a complex number: an
    entry is the derivative along the real direction of the gradient's entry
    ``∂f/∂re + i·∂f/∂im``, that is ``∂²f/∂re² + i·∂²f/∂re∂im`` (a complex array
    of the argument's shape; ``∂²f/∂im²`` is ``hvp`` along ``1j`` directions).

    >>> import math
    >>> d = diaghessian(lambda x, y: math.sin(x * y), 1.0, 2.0)
    >>> [round(v, 12) for v in d] == [round(-4 * math.sin(2.0), 12), round(-math.sin(2.0), 12)]
    True

    See also: hessian.
    """
    try:
        f = bind_keywords(f, kwargs)
        _check_scalar("diaghessian", f, args)
        out: list[Any] = []
        for i, a in enumerate(args):
            none: list[Any] = [None] * len(args)
            if _is_number(a):
                none[i] = 1.0
                d = hvp(f, args, tuple(none))[i]
                out.append(0.0 if d is None else d)
                continue
            if not isinstance(a, (np.ndarray, list)):
                out.append(None)
                continue
            arr = _as_array("diaghessian", a)
            # complex: each entry keeps its imaginary part, as for a complex number
            dtype = np.result_type(arr.dtype, np.float64)
            flat = np.zeros(arr.size, dtype=dtype)
            for k in range(arr.size):
                e = np.zeros(arr.shape, dtype=dtype)
                e.flat[k] = 1.0
                none[i] = e if isinstance(a, np.ndarray) else e.tolist()
                col = hvp(f, args, tuple(none))[i]
                flat[k] = _entry(col, arr.shape, k)
            out.append(flat.reshape(arr.shape))
        return tuple(out)
    except Exception as e:
        if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
            raise e
        raise


def _entry(col: Any, shape: tuple, k: int) -> Any:
    """Entry ``k`` (C order) of ``hvp``'s result ``col`` for an argument of ``shape``:
    an array, or a nested list where ``None`` (no derivative flows) is zero; a
    complex entry stays complex."""
    for i in np.unravel_index(k, shape):
        if col is None:
            return 0.0
        col = col[i]
    return 0.0 if col is None else np.asarray(col).item()


# --- hessian inside differentiated code ------------------------------------------------
#
# A primitive too: column l of H(x) is ``hvp(f, (x,), (e_l,))``, whose rules carry
# every order, so the rules below differentiate small kernels written with ``hvp``.


def _unit(x: Any, k: int) -> Any:
    """The k-th basis direction shaped like ``x`` (flattened in C order)."""
    e = np.zeros(np.shape(x), dtype=np.result_type(np.asarray(x).dtype, np.float64))
    e.flat[k] = 1.0
    return e


non_differentiable(_unit)


def hessian_columns(f: Callable, x: Any) -> Any:
    """``H(x)`` as ``hessian`` gives it, one ``hvp`` per column."""
    if _is_number(x):
        return hvp(f, (x,), (1.0,))[0]
    cols = [np.ravel(hvp(f, (x,), (_unit(x, k),))[0]) for k in range(np.size(x))]
    return np.stack(cols, axis=1)


def hessian_dot(f: Callable, x: Any, w: Any) -> Any:
    """``⟨H(x), w⟩``: the function whose gradient is ``hessian``'s pullback of ``w``."""
    if _is_number(x):
        return hvp(f, (x,), (1.0,))[0] * w
    total = 0.0
    for k in range(np.size(x)):
        total = total + np.sum(np.ravel(hvp(f, (x,), (_unit(x, k),))[0]) * w[:, k])
    return total


@rrule.register(hessian, config=ADConfig)
def _(config: Any, f: Callable, x: Any, **kwargs: Any) -> Any:
    return _hessian_rrule(hessian(f, x, **kwargs), f, x, kwargs)


@rrule.register(hessian_reverse, config=ADConfig)
def _(config: Any, f: Callable, x: Any) -> Any:
    # the same matrix as hessian's: its derivative is computed as hessian's is
    # (reverse over reverse over reverse would differentiate hessian_reverse's own
    # machinery, which it does not follow)
    return _hessian_rrule(hessian_reverse(f, x), f, x, {})


@frule.register(hessian_reverse, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ẋ: Any, f: Callable, x: Any) -> Any:
    return _forward.fcall(hessian_columns, (_Z, ḟ, ẋ), f, x)


def _hessian_rrule(H: Any, f: Callable, x: Any, kwargs: dict) -> Any:
    """``hessian``'s (and ``hessian_reverse``'s) ``(H, pullback)``."""
    bound = bind_keywords(as_called(f), kwargs)  # as called: run again in the pullback

    def hessian_pullback(H̄: Any) -> tuple:
        H̄ = unthunk(H̄)
        if _is_zero(H̄):
            return (_NO, _Z, _Z)
        _, pb = rcall(hessian_dot, bound, x, H̄)
        raw = pb(1.0)  # (hessian_dot, f, x, w)
        return (_NO, field_ct(raw[1], "f") if kwargs else raw[1], raw[2])

    return H, hessian_pullback


@frule.register(hessian, config=ADConfig)
def _(config: Any, ṡ: Any, ḟ: Any, ẋ: Any, f: Callable, x: Any, **kwargs: Any) -> Any:
    if kwargs:
        f = bind_keywords(f, kwargs)
        ḟ = fn_tangent(("f",), (ḟ,))
    return _forward.fcall(hessian_columns, (_Z, ḟ, ẋ), f, x)
