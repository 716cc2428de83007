"""Rules for the ``operator`` module and numpy's arithmetic ufuncs.

The AD turns ``a * b`` into ``operator.mul(a, b)`` whatever ``a`` and ``b``
are, so one table registers the arithmetic of :mod:`rules._arithmetic` for
numbers and numpy arrays, for the in-place forms on numbers (``x += y`` on a
float makes a new float), and for the matching numpy ufuncs. Sequence ``+``
(concatenation) and ``*`` by an int (repetition) dispatch by type to the
structural rules of :mod:`rules._sequences`. Comparisons, logic and identity
tests are non-differentiable.

Not here: ``operator.matmul`` and ``getitem`` on arrays (see ``_numpy_shape``).
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from rulescore import non_differentiable

from ._arithmetic import BINARY, UNARY, Num, NumOrList, register_binary, register_unary

__all__: list[str] = []

_Scalar = numbers.Number | np.generic

# (function, name in BINARY, argument types). ``operator`` functions take numbers
# and arrays (and an array with a list, which numpy broadcasts); the in-place
# forms only numbers, since ``a += b`` on an array mutates ``a`` (the AD reports
# that instead); numpy's ufuncs also take nested lists.
_BINARY_REGISTRATIONS = [
    *(
        (getattr(operator, op), op, types)
        for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
        for types in ((Num, Num), (np.ndarray, list), (list, np.ndarray))
    ),
    *(
        (getattr(operator, "i" + op), op, (_Scalar, Num))
        for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
    ),
    (np.add, "add", (NumOrList, NumOrList)),
    (np.subtract, "sub", (NumOrList, NumOrList)),
    (np.multiply, "mul", (NumOrList, NumOrList)),
    (np.true_divide, "truediv", (NumOrList, NumOrList)),  # np.divide is the same ufunc
    (np.floor_divide, "floordiv", (NumOrList, NumOrList)),
    (np.remainder, "mod", (NumOrList, NumOrList)),  # np.mod is the same ufunc
    (np.power, "pow", (NumOrList, NumOrList)),
    (np.float_power, "pow", (NumOrList, NumOrList)),
]

_UNARY_REGISTRATIONS = [
    (operator.neg, "neg", (Num,)),
    (operator.pos, "pos", (Num,)),
    (operator.abs, "abs", (Num,)),
    (np.negative, "neg", (NumOrList,)),
    (np.positive, "pos", (NumOrList,)),
    (np.absolute, "abs", (NumOrList,)),  # np.abs is the same ufunc
    (np.fabs, "abs", (NumOrList,)),
]

for _f, _name, _types in _BINARY_REGISTRATIONS:
    register_binary(_f, _types, *BINARY[_name], _name)
for _f, _name, _types in _UNARY_REGISTRATIONS:
    register_unary(_f, _types, UNARY[_name], _name)

# Comparisons, logic, identity, membership and integer bit operations have no
# derivative (their outputs are bools or integers).
for _f in (
    operator.lt,
    operator.le,
    operator.eq,
    operator.ne,
    operator.ge,
    operator.gt,
    operator.not_,
    operator.truth,
    operator.is_,
    operator.is_not,
    operator.contains,
    operator.countOf,
    operator.indexOf,
    operator.index,
    operator.length_hint,
):
    non_differentiable(_f)
# Bit operations on numbers (a user class's __and__, __invert__ ... is its own code,
# which an AD differentiates: no rule here for it).
for _f in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
    non_differentiable(_f, Num, Num)
non_differentiable(operator.invert, Num)

# String concatenation and repetition.
non_differentiable(operator.add, str, str)
non_differentiable(operator.iadd, str, str)
non_differentiable(operator.mul, str, numbers.Integral)
non_differentiable(operator.mul, numbers.Integral, str)
