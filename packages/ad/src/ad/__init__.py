"""ad: reverse-mode automatic differentiation of Python and numpy code by source
transformation, consuming the rules of ``rulescore``/``rules``.

>>> import ad
>>> ad.gradient(lambda x: 3 * x**2 + 2 * x + 1, 5)
(32.0,)

The first call of a Python function parses its source, normalises it, and
generates a primal that records pullbacks and an adjoint that mirrors its
control flow in reverse; the result is cached per code object.
"""

# First: imports rules and checks that it is this project's (a clear error if not).
from ad.runtime import rules_check as _rules_check  # noqa: F401

# isort: split
# Importing these registers ad's rules: the structural ones (runtime) and those
# of nested differentiation (higher).
from ad.api.forwarddiff import forwarddiff
from ad.api.functional import grad, value_and_grad
from ad.api.gradient import (  # noqa: F401  (_pullback: internal, importable as ad._pullback)
    WithGradient,
    _pullback,
    code_adjoint,
    gradient,
    pullback,
    withgradient,
)
from ad.api.jacobian import WithJacobian, jacobian, withjacobian
from ad.api.jvp import jvp, pushforward
from ad.api.params import Grads, Params
from ad.api.utilities import (
    checkpoint,
    dropgrad,
    hook,
    ignore_derivatives,
    isderiving,
    nestlevel,
    showgrad,
)
from ad.errors import (
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
from ad.higher import forward_over_forward as _forward_over_forward  # noqa: F401
from ad.higher import forward_over_jvp as _forward_over_jvp  # noqa: F401
from ad.higher import forward_over_plumbing as _forward_over_plumbing  # noqa: F401
from ad.higher import nested_jacobian as _nested_jacobian  # noqa: F401
from ad.higher import nested_pullback as _nested_pullback  # noqa: F401
from ad.higher import over_pushforward as _over_pushforward  # noqa: F401
from ad.higher import reverse_over_adjoint_plumbing as _reverse_over_adjoint_plumbing  # noqa: F401
from ad.higher import reverse_over_fcall as _reverse_over_fcall  # noqa: F401
from ad.higher import reverse_over_forward as _reverse_over_forward  # noqa: F401
from ad.higher import reverse_over_reverse as _reverse_over_reverse  # noqa: F401
from ad.higher import reverse_over_tangent_plumbing as _reverse_over_tangent_plumbing  # noqa: F401
from ad.higher.hessian import diaghessian, hessian, hessian_reverse, hvp
from ad.runtime import forward_rules as _forward_rules  # noqa: F401
from ad.runtime import helpers as _helpers  # noqa: F401
from ad.runtime import rules_callbacks as _rules_callbacks  # noqa: F401
from ad.runtime import tracebacks as _tracebacks
from ad.runtime.buffer import Buffer
from ad.runtime.config import ADConfig
from rulescore import frule_via_ad, rrule_via_ad

# Warnings raised in rules point at the user's line (see ad.runtime.tracebacks).
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
