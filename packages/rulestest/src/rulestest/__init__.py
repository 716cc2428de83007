"""rulestest: check ``rrule``/``frule`` rules against finite differences.

The testers (``test_rrule``, ``test_frule``, ``test_scalar``) raise
:class:`RuleTestFailure` (an ``AssertionError``) with a report naming the
check, the argument path, expected and actual values and the largest errors.
The finite-difference engine underneath is public: ``central_fdm``, ``jvp``,
``j_vp``, ``to_vec``. Installing the package registers a pytest plugin that
renders failures as short reports at the caller's line.

>>> import numpy as np
>>> from rulescore import rrule, NoTangent, ProjectTo
>>> def scale(x, a):
...     return a * x
>>> @rrule.register(scale)
... def _(x: np.ndarray, a: float):
...     def scale_pullback(ȳ):
...         return NoTangent(), ProjectTo(x)(a * ȳ), float(x @ ȳ)
...     return scale(x, a), scale_pullback
>>> test_rrule(scale, np.array([1.0, 2.0]), 3.0)
"""

from ._approx import test_approx
from ._finite_differences import FiniteDifferenceMethod, backward_fdm, central_fdm, forward_fdm
from ._jvp import j_vp, jvp
from ._rand_tangent import DEFAULT_SEED, rand_tangent
from ._testers import PrimalAndTangent, primal_and_tangent, test_frule, test_rrule, test_scalar
from ._to_vec import to_vec
from .errors import RuleTestFailure

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SEED",
    "FiniteDifferenceMethod",
    "PrimalAndTangent",
    "RuleTestFailure",
    "backward_fdm",
    "central_fdm",
    "forward_fdm",
    "j_vp",
    "jvp",
    "primal_and_tangent",
    "rand_tangent",
    "test_approx",
    "test_frule",
    "test_rrule",
    "test_scalar",
    "to_vec",
]
