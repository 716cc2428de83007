"""Exceptions raised by rulescore.

Each also inherits the builtin exception a user would already catch, so
``except TypeError`` keeps working around a badly defined rule.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousRuleError",
    "ConfigModeError",
    "CotangentError",
    "NotImplementedTangentError",
    "RuleDefinitionError",
]


class RuleDefinitionError(TypeError):
    """A rule was registered wrongly: non-callable function, bad annotations, ..."""


class AmbiguousRuleError(TypeError):
    """Two or more rules match a call and neither is more specific."""


class ConfigModeError(TypeError):
    """``rrule_via_ad``/``frule_via_ad`` called with a config lacking that mode."""


class CotangentError(ValueError):
    """A tangent or cotangent of the wrong structure, shape or type reached a rule."""


class NotImplementedTangentError(NotImplementedError):
    """A ``not_implemented(...)`` tangent was used in arithmetic."""
