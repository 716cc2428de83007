"""JAX/autograd-style function transforms: ``grad`` and ``value_and_grad``.

``gradient(f, *args)`` differentiates at a point; ``grad(f)`` returns the
gradient as a function, for the positional arguments ``argnums`` picks. The
other arguments are captured as constants, so nothing is computed for them
(as ``gradient`` never computes what flows only into captured data).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ad.api.gradient import gradient, withgradient
from ad.runtime.tracebacks import entry_point, hide_internals
from rulescore import non_differentiable

__all__ = ["grad", "value_and_grad"]


def _check_argnums(fname: str, f: Callable, argnums: Any) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(nums, tuple) or not nums or not all(isinstance(i, int) for i in nums):
        raise TypeError(
            f"{fname}(f, argnums=...) takes an int or a non-empty tuple of ints, got "
            f"{argnums!r}.\nTo fix: {fname}(f, argnums=0) or {fname}(f, argnums=(0, 1))."
        )
    if not callable(f):
        raise TypeError(f"{fname}(f, ...) needs a function, got {type(f).__name__}")
    return nums


def _plan(n: int, nums: tuple, keywords: bool, fname: str) -> tuple:
    """``(plan, picks)`` for a call with ``n`` positional arguments: ``picks`` the
    indices ``argnums`` names, ``plan[i] = (chosen, j)``: argument ``i`` is the
    differentiated ``sel[j]``, or the captured ``args[j]``. ``plan`` is None when
    every argument is differentiated, in order, and no keyword is passed."""
    for i in nums:
        if not -n <= i < n:
            raise IndexError(
                f"{fname}: argnums={i} but the function was called with {n} positional argument(s)"
            )
    picks = tuple(i % n for i in nums)
    if len(set(picks)) != len(picks):
        raise ValueError(f"{fname}: argnums {nums} names an argument twice")
    if picks == tuple(range(n)) and not keywords:
        return None, picks
    slot = {i: k for k, i in enumerate(picks)}
    return tuple((i in slot, slot.get(i, i)) for i in range(n)), picks


non_differentiable(_plan)


def grad(f: Callable, argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The gradient of a real-valued ``f`` as a function (JAX and autograd's ``grad``).

    ``grad(f)(*args, **kwargs)`` is the gradient with respect to the positional
    argument ``argnums``: one gradient for an int, a tuple of them for a tuple
    of ints. The other arguments and the keyword arguments are constants: no
    derivative is computed for them. Gradients have ``gradient``'s forms (a
    float, an array, a tuple for a tuple), except that where none flows a
    number's or an array's gradient is zero, as in JAX, not ``None``: so
    ``grad`` nests to any order, a linear function's second derivative being 0.

    >>> grad(grad(lambda x: 3.0 * x))(2.0)
    0.0

    >>> import numpy as np
    >>> df = grad(lambda x, y: x**2 * y)
    >>> df(3.0, 2.0)
    12.0
    >>> grad(lambda x, y: x**2 * y, argnums=(0, 1))(3.0, 2.0)
    (12.0, 9.0)
    >>> grad(lambda w, X: np.sum((X @ w) ** 2))(np.ones(2), np.eye(2))
    array([2., 2.])

    It nests, in any combination with ``jvp`` and ``gradient``:

    >>> grad(grad(lambda x: x**4))(2.0)
    48.0

    See also: value_and_grad, gradient, hvp.
    """
    nums = _check_argnums("grad", f, argnums)
    single = isinstance(argnums, int)

    @entry_point
    def grad_of(*args: Any, **kwargs: Any) -> Any:
        try:
            plan, picks = _plan(len(args), nums, bool(kwargs), "grad")
            if plan is None:
                out = gradient(f, *args)
            else:  # the other arguments are captured: nothing is computed for them

                def at_argnums(*sel: Any) -> Any:
                    return f(*(sel[j] if chosen else args[j] for chosen, j in plan), **kwargs)

                out = gradient(at_argnums, *(args[i] for i in picks))
            out = tuple(_zero_where_none(g, args[i]) for g, i in zip(out, picks))
            return out[0] if single else out
        except Exception as e:
            if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
                raise e
            raise

    grad_of.__name__ = f"grad_of_{getattr(f, '__name__', 'f')}"
    grad_of.__doc__ = f"The gradient of {getattr(f, '__name__', 'f')} (argnums={argnums!r})."
    return grad_of


def _zero_where_none(g: Any, x: Any) -> Any:
    """``g``, or the zero of a float, complex number or array ``x`` when ``g`` is None."""
    if g is not None:
        return g
    if type(x) is float or type(x) is complex:
        return type(x)(0)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.inexact):
        return type(x)(0)  # a numpy scalar's zero, of its type
    if np is not None and isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        return np.zeros_like(x)
    return None


def value_and_grad(f: Callable, argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """``f``'s value and its gradient, as a function: ``(f(*args), grad(f, argnums)(*args))``.

    One call runs ``f`` once. When ``f`` returns a tuple, its first element is
    differentiated and the value is the whole tuple (as ``withgradient``).

    >>> vg = value_and_grad(lambda x, y: x * y, argnums=1)
    >>> vg(3.0, 2.0)
    (6.0, 3.0)
    >>> value_and_grad(lambda x: (x**2, "aux"))(3.0)
    ((9.0, 'aux'), 6.0)

    See also: grad, withgradient.
    """
    nums = _check_argnums("value_and_grad", f, argnums)
    single = isinstance(argnums, int)

    @entry_point
    def value_and_grad_of(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        try:
            plan, picks = _plan(len(args), nums, bool(kwargs), "value_and_grad")
            if plan is None:
                val, grads = withgradient(f, *args)
            else:

                def at_argnums(*sel: Any) -> Any:
                    return f(*(sel[j] if chosen else args[j] for chosen, j in plan), **kwargs)

                val, grads = withgradient(at_argnums, *(args[i] for i in picks))
            grads = tuple(_zero_where_none(g, args[i]) for g, i in zip(grads, picks))
            return val, (grads[0] if single else grads)
        except Exception as e:
            if hide_internals(e):  # Python 3.10: see ad.runtime.tracebacks
                raise e
            raise

    value_and_grad_of.__name__ = f"value_and_grad_of_{getattr(f, '__name__', 'f')}"
    return value_and_grad_of
