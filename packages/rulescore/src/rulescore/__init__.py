"""rulescore: derivative rules that any Python library can define once.

The vocabulary shared by rule authors and ADs, after ChainRulesCore.jl:

* ``rrule`` / ``frule``: generic functions returning ``(y, pullback)`` and
  ``(y, ẏ)``, with type dispatch on the arguments;
* tangents: ``ZeroTangent``, ``NoTangent``, ``Tangent[P]``, ``Thunk``,
  ``InplaceableThunk``, ``NotImplementedTangent``;
* ``ProjectTo``: keep what leaves a rule a valid tangent of its input;
* ``RuleConfig`` and its traits, ``rrule_via_ad`` / ``frule_via_ad``;
* helpers: ``scalar_rule``, ``non_differentiable``, ``opt_out``,
  ``derivatives_given_output``, ``ignore_derivatives``, ``not_implemented``;
* ``register_lazy_rules`` / ``load_lazy_rules``: rules for a costly-to-import
  module, registered when that module is imported;
* for ADs: ``RuleTable`` and ``Rule`` (the tables behind ``rrule.table`` and
  ``frule.table``, read on an AD's hot path) and ``conj`` (the conjugation the
  pullbacks of ``scalar_rule`` apply, which an AD differentiating them needs a
  rule for).

>>> from rulescore import rrule, scalar_rule
>>> def square(x):
...     return x * x
>>> scalar_rule(square, lambda x, Ω: 2 * x)
>>> y, pb = rrule(square, 3.0)
>>> y, pb(1.0)[1]
(9.0, 6.0)
"""

from ._arrays import DuckArray, is_duck_array
from ._config import (
    HasForwardsMode,
    HasReverseMode,
    NoForwardsMode,
    NoReverseMode,
    RuleConfig,
    frule_via_ad,
    rrule_via_ad,
)
from ._dispatch import Rule, RuleTable
from ._lazy import load_lazy_rules, register_lazy_rules
from ._not_implemented import NotImplementedTangent, not_implemented
from ._projection import NON_DIFFERENTIABLE_TYPES, Projector, ProjectTo
from ._rule_tools import conj, derivatives_given_output, ignore_derivatives, scalar_rule
from ._rules import FRule, RRule, frule, non_differentiable, opt_out, rrule
from ._tangent import Tangent, backing, canonicalize
from ._thunks import AbstractThunk, InplaceableThunk, Thunk, add_, thunk, unthunk
from ._zeros import AbstractZero, NoTangent, ZeroTangent, iszero
from .errors import (
    AmbiguousRuleError,
    ConfigModeError,
    CotangentError,
    NotImplementedTangentError,
    RuleDefinitionError,
)

__version__ = "0.1.0"

__all__ = [
    "AbstractThunk",
    "AbstractZero",
    "AmbiguousRuleError",
    "ConfigModeError",
    "CotangentError",
    "DuckArray",
    "FRule",
    "HasForwardsMode",
    "HasReverseMode",
    "InplaceableThunk",
    "NON_DIFFERENTIABLE_TYPES",
    "NoForwardsMode",
    "NoReverseMode",
    "NoTangent",
    "NotImplementedTangent",
    "NotImplementedTangentError",
    "ProjectTo",
    "Projector",
    "RRule",
    "Rule",
    "RuleConfig",
    "RuleDefinitionError",
    "RuleTable",
    "Tangent",
    "Thunk",
    "ZeroTangent",
    "add_",
    "backing",
    "canonicalize",
    "conj",
    "derivatives_given_output",
    "frule",
    "frule_via_ad",
    "is_duck_array",
    "ignore_derivatives",
    "iszero",
    "load_lazy_rules",
    "non_differentiable",
    "not_implemented",
    "opt_out",
    "register_lazy_rules",
    "rrule",
    "rrule_via_ad",
    "scalar_rule",
    "thunk",
    "unthunk",
]
