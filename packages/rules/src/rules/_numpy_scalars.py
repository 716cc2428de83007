"""Rules for numpy's scalar types: the constructors users call on numbers
(``np.float64(x)``, ``np.float32(x)``, ``np.complex128(z)``, ...) and the scalar
method ``s.item()``.

A floating or complex constructor keeps the value, rounded to its dtype, so its
derivative is the identity: the tangent is converted as the value is
(``np.float32(ẋ)`` for ``np.float32(x)``), and the cotangent is projected back
onto the argument (``ProjectTo``: a Python float gets a float, a float32 scalar
a float32, a 0-d array a 0-d array, an int a float). A complex constructor of a
real argument embeds it (the cotangent keeps the real part); a complex numpy
scalar converted to a real type keeps its real part, as numpy does, so its
cotangent is real. ``np.complex128(re, im)`` is ``re + 1j * im``.

Integer and bool constructors truncate, and every constructor of a string
parses it: no derivative flows through them.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.float32, 1.5)
>>> type(y).__name__, pb(np.float32(2.0))
('float32', (NoTangent(), 2.0))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import AbstractZero, NoTangent, ProjectTo, ZeroTangent, frule, rrule, unthunk
from rulescore import non_differentiable as _non_differentiable

from ._arithmetic import Num

__all__ = ["COMPLEX_SCALARS", "REAL_SCALARS"]

_NO = NoTangent()
_ZERO = ZeroTangent()

#: The real and complex floating scalar types (their aliases are the same objects:
#: ``np.double is np.float64``).
REAL_SCALARS = (np.float16, np.float32, np.float64, np.longdouble)
COMPLEX_SCALARS = (np.complex64, np.complex128, np.clongdouble)
_INTEGER_SCALARS = (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.intp, np.uintp, np.bool_,
)  # fmt: skip


def _register_constructor(cls: type) -> None:
    """``cls(x)`` (and ``cls(re, im)`` for a complex ``cls``): the value, converted."""

    def scalar_rrule(x: Num, *im: Num) -> Any:
        y = cls(x, *im)  # np.float64(1.0, 2.0) fails here, as numpy says
        project = ProjectTo(x)
        project_im = ProjectTo(im[0]) if im else None

        def scalar_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (_NO, _ZERO, *(_ZERO for _ in im))
            if project_im is None:
                return _NO, project(ȳ)
            # y = x + i·im is holomorphic in each: ∂x = ȳ, ∂im = ȳ·conj(i)
            return _NO, project(ȳ), project_im(-1j * ȳ)

        return y, scalar_pullback

    def scalar_frule(ḟ: Any, *args: Any) -> Any:
        n = len(args) // 2
        tangents, primals = args[:n], args[n:]
        if n not in (1, 2) or not all(isinstance(p, Num) for p in primals):
            return None  # a list, a string: the other rules or numpy's own error
        y = cls(*primals)
        ṫ: Any = _ZERO
        for t, scale in zip(tangents, (1, 1j)):
            t = unthunk(t)
            if not isinstance(t, AbstractZero):
                ṫ = ṫ + scale * t
        if isinstance(ṫ, AbstractZero):
            return y, _ZERO
        return y, ProjectTo(y)(ṫ)

    name = f"{cls.__name__}_constructor"
    scalar_rrule.__name__ = scalar_rrule.__qualname__ = f"{name}_rrule"
    scalar_frule.__name__ = scalar_frule.__qualname__ = f"{name}_frule"
    rrule.register(cls)(scalar_rrule)
    frule.register(cls)(scalar_frule)
    _non_differentiable(cls, str)  # parsing a string
    _non_differentiable(cls, bytes)


for _cls in (*REAL_SCALARS, *COMPLEX_SCALARS):
    _register_constructor(_cls)
for _cls in _INTEGER_SCALARS:  # truncation (or a test against zero): no derivative
    _non_differentiable(_cls)


# --- s.item(): the Python number of a numpy scalar -----------------------------------


@rrule.register(np.generic.item)
def _(x: np.generic, *where: Any) -> Any:
    y = x.item(*where)
    project = ProjectTo(x)
    nots = (_NO,) * len(where)

    def scalar_item_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _ZERO, *nots)
        return (_NO, project(ȳ), *nots)

    return y, scalar_item_pullback


@frule.register(np.generic.item)
def _(ḟ: Any, *args: Any) -> Any:
    n = len(args) // 2
    ẋ, x, where = unthunk(args[0]), args[n], args[n + 1 :]
    if not isinstance(x, np.generic):
        return None
    y = x.item(*where)
    if isinstance(ẋ, AbstractZero) or isinstance(y, (bool, int)):
        return y, _NO if isinstance(y, (bool, int)) else _ZERO
    return y, ProjectTo(y)(ẋ)
