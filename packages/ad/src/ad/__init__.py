"""ad: reverse-mode automatic differentiation of Python and numpy code by source
transformation, consuming the rules of ``rulescore``/``rules``.

>>> import ad
>>> ad.gradient(lambda x: 3 * x**2 + 2 * x + 1, 5)
(32.0,)

The first call of a Python function parses its source, normalises it, and
generates a primal that records pullbacks and an adjoint that mirrors its
control flow in reverse; the result is cached per code object.
"""

import rules as _rules  # noqa: F401  (registers the rules the AD runs on)

from . import _helpers  # noqa: F401  (registers ad's structural rules)
from ._api import WithGradient, _pullback, code_adjoint, gradient, pullback, withgradient
from ._config import ADConfig
from .errors import (
    ADError,
    CotangentShapeError,
    MutationError,
    NonScalarOutputError,
    NoRuleError,
    NoSourceError,
    UnsupportedSyntaxError,
)

__version__ = "0.1.0"

__all__ = [
    "ADConfig",
    "ADError",
    "CotangentShapeError",
    "MutationError",
    "NoRuleError",
    "NoSourceError",
    "NonScalarOutputError",
    "UnsupportedSyntaxError",
    "WithGradient",
    "_pullback",
    "code_adjoint",
    "gradient",
    "pullback",
    "withgradient",
]
