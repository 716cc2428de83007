"""ad: reverse-mode automatic differentiation of Python and numpy code by source
transformation, consuming the rules of ``rulescore``/``rules``.

>>> import ad
>>> ad.gradient(lambda x: 3 * x**2 + 2 * x + 1, 5)
(32.0,)

The first call of a Python function parses its source, normalises it, and
generates a primal that records pullbacks and an adjoint that mirrors its
control flow in reverse; the result is cached per code object.
"""

from rulescore import frule_via_ad, rrule_via_ad

from . import (
    _check_rules,  # noqa: F401  (first, by name: imports rules, checks that it is ours)
    _forward_over,  # noqa: F401  (registers the rules of forward over forward)
    _forward_over_jvp,  # noqa: F401  (registers jvp's frule)
    _forward_over_plumbing,  # noqa: F401  (registers the frules of forward mode's helpers)
    _forward_rules,  # noqa: F401  (registers the frules of ad's helpers)
    _helpers,  # noqa: F401  (registers ad's structural rules)
    _nested,  # noqa: F401  (registers the rules of nested differentiation)
    _nested_api,  # noqa: F401  (registers jacobian's and diaghessian's, nested)
    _nested_pullback,  # noqa: F401  (registers the rules of pullback, nested)
    _over_pushforward,  # noqa: F401  (registers reverse over forward over forward)
    _over_reverse,  # noqa: F401  (registers the rules of reverse over reverse)
    _tracebacks,
)
from ._api import (  # noqa: F401  (_pullback: internal, importable as ad._pullback)
    WithGradient,
    _pullback,
    code_adjoint,
    gradient,
    pullback,
    withgradient,
)
from ._buffer import Buffer
from ._config import ADConfig
from ._forward_api import jvp, pushforward
from ._forwarddiff import forwarddiff
from ._functional import grad, value_and_grad
from ._hessian import diaghessian, hessian, hessian_reverse, hvp
from ._jacobian import WithJacobian, jacobian, withjacobian
from ._params import Grads, Params
from ._utilities import (
    checkpoint,
    dropgrad,
    hook,
    ignore_derivatives,
    isderiving,
    nestlevel,
    showgrad,
)
from .errors import (
    ADError,
    CotangentShapeError,
    CotangentWriteError,
    MutationError,
    NonScalarOutputError,
    NoRuleError,
    NoSourceError,
    OutputTypeError,
    ParamsError,
    UnsupportedSyntaxError,
)

# Warnings raised in rules point at the user's line (see ad._tracebacks).
_tracebacks.install_warning_hook()

__version__ = "0.1.0"

__all__ = [
    "ADConfig",
    "ADError",
    "CotangentShapeError",
    "CotangentWriteError",
    "MutationError",
    "NoRuleError",
    "NoSourceError",
    "NonScalarOutputError",
    "UnsupportedSyntaxError",
    "WithGradient",
    "code_adjoint",
    "diaghessian",
    "forwarddiff",
    "frule_via_ad",
    "grad",
    "gradient",
    "hessian",
    "hessian_reverse",
    "hvp",
    "jvp",
    "pullback",
    "pushforward",
    "rrule_via_ad",
    "value_and_grad",
    "withgradient",
    "Buffer",
    "Grads",
    "OutputTypeError",
    "Params",
    "ParamsError",
    "WithJacobian",
    "checkpoint",
    "dropgrad",
    "hook",
    "ignore_derivatives",
    "isderiving",
    "jacobian",
    "nestlevel",
    "showgrad",
    "withjacobian",
]
