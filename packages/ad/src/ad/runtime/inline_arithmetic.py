"""Runtime support for the compact inline arithmetic of the generated code.

``mul_adjoint``/``pow_adjoint`` are the general path of the adjoint of an
inlined ``a * b`` or ``a ** n``. For these operators the reverse pass writes
the float partials into the generated adjoint (see ``transform/inline.py``): a
tape entry that is a ``tuple`` is read there. Any other entry takes one call
of a helper below:
a ``list`` from ``array_arithmetic.fasti_mul``/``fasti_pow`` (two float arrays of one
shape or an array to a constant power: the same partials, elementwise), or a
pullback, which is called as is and its cotangents returned unchanged.

Keeping the array branch here rather than in the generated code saves some
fifteen AST nodes per operation, which the transform would build and
``compile`` convert on every first call.

The last product of a ``list`` entry may reuse a dead buffer: the cotangent ``s`` when
the caller's variable, which the adjoint resets right after the call, holds the
only other reference to it; or a fresh factor (``2 * a`` of ``a ** 2``). The
values are those of ``s * f`` either way.

A power whose cotangent is ``uniform`` (a whole-array sum's, ``v`` everywhere)
takes one product, ``(n v) * a ** (n - 1)``, instead of a factor and a product.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ad.runtime.lean_rules import is_uniform as _uniform
from rules.extension import getrefcount as _getrefcount  # sys.getrefcount where calibrated

__all__ = ["mul_adjoint", "pow_adjoint"]

_list = list
_ndarray = np.ndarray
_multiply = np.multiply
_f64 = np.dtype(np.float64)


def mul_adjoint(p: Any, s: Any, used: int) -> tuple:
    """The cotangents ``(_, ∂a, ∂b)`` of ``a * b`` for the cotangent ``s``.

    ``p`` is the tape entry: ``[b, a]`` for two float arrays of one shape, else a
    pullback. ``used`` tells which cotangents the adjoint reads (bit 1: ``∂a``,
    bit 2: ``∂b``); the others are None, not computed.

    >>> mul_adjoint([3.0, 2.0], 10.0, 3)
    (None, 30.0, 20.0)
    """
    if type(p) is not _list:
        return p(s)
    if type(s) is _ndarray and not s.flags.writeable and _uniform_value(s, p[0]) == 1.0:
        # a whole-array sum's cotangent of ones: each partial is the cotangent
        return (
            None,
            _read_only(p[0]) if used & 1 else None,
            _read_only(p[1]) if used & 2 else None,
        )
    if used == 3:
        return None, s * p[0], _last_product(s, p[1])
    if used == 1:
        return None, _last_product(s, p[0]), None
    return None, None, _last_product(s, p[1])


def _uniform_value(s: Any, f: Any) -> Any:
    """The value of ``s``, read-only, if it is a float64 ``uniform`` array (a whole-array
    sum's cotangent) shaped as the float64 ``f``, so that ``v * f`` has the values,
    shape and dtype of ``s * f``; else None."""
    if _uniform(s) and s.dtype is _f64 is f.dtype and s.shape == f.shape:
        return s.flat[0]
    return None


def _read_only(a: Any) -> Any:
    """A read-only view of ``a``: the product ``1 * a`` without a pass over ``a``. The
    in-place paths leave it alone (they test ``flags.writeable``), a view keeps ``a``
    itself from being reused in place (its reference count), and ``to_user`` hands
    the caller a copy."""
    v = a.view()
    v.flags.writeable = False
    return v


def pow_adjoint(p: Any, s: Any, n: int) -> tuple:
    """The cotangents ``(_, ∂a, _)`` of ``a ** n`` for a constant integer ``n >= 1``.

    ``p`` is the tape entry: ``[a]`` for a float array, else a pullback.

    >>> pow_adjoint([3.0], 1.0, 2)
    (None, 6.0, None)
    """
    if type(p) is not _list:
        return p(s)
    if n == 1:
        return None, s * 1, None
    a = p[0]
    if type(s) is _ndarray and not s.flags.writeable:
        v = _uniform_value(s, a)
        if v is not None:  # v in every entry: one product, (n v) a^(n-1)
            if n == 2:
                return None, (v * 2) * a, None
            f = a ** (n - 1)
            return None, _multiply(f, v * n, out=f), None
    if n == 2:
        return None, _last_product(s, 2 * a), None
    return None, _last_product(s, n * a ** (n - 1)), None


def _last_product(s: Any, f: Any) -> Any:
    """``s * f``, written into ``f`` or ``s`` when nobody else can see it.

    References to ``f``: this parameter and getrefcount's argument (a factor passed
    straight from its expression), plus the tape's list for a tape value. To ``s``:
    the generated code's cotangent variable, the helper's parameter, this parameter
    and getrefcount's argument."""
    if type(s) is _ndarray and type(f) is _ndarray and s.shape == f.shape and s.dtype == f.dtype:
        if _getrefcount(f) <= 2 and f.base is None and f.flags.writeable:
            return _multiply(s, f, out=f)
        if _getrefcount(s) <= 4 and s.base is None and s.flags.writeable:
            return _multiply(s, f, out=s)
    return s * f
