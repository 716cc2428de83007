"""``RuleConfig`` and its traits: how a rule learns what the calling AD can do.

An AD subclasses ``RuleConfig`` together with the trait mixins it supports and
implements ``rrule_via_ad``/``frule_via_ad`` as methods. Rules registered with
``config=HasReverseMode`` receive that config first and may call back into the
AD through the generic functions below.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigModeError

__all__ = [
    "HasForwardsMode",
    "HasReverseMode",
    "NoForwardsMode",
    "NoReverseMode",
    "RuleConfig",
    "frule_via_ad",
    "rrule_via_ad",
]


class RuleConfig:
    """Base class of the configuration an AD passes to config-aware rules.

    >>> class MyAD(RuleConfig, HasReverseMode):
    ...     def rrule_via_ad(self, f, *args, **kwargs):
    ...         return f(*args), lambda ȳ: (None,) * (1 + len(args))
    >>> rrule_via_ad(MyAD(), abs, -2.0)[0]
    2.0
    """

    __slots__ = ()


class HasReverseMode:
    """Trait: the AD can differentiate a function in reverse mode (``rrule_via_ad``)."""

    __slots__ = ()


class NoReverseMode:
    """Trait: the AD has no reverse mode."""

    __slots__ = ()


class HasForwardsMode:
    """Trait: the AD can push tangents forward (``frule_via_ad``)."""

    __slots__ = ()


class NoForwardsMode:
    """Trait: the AD has no forward mode."""

    __slots__ = ()


def rrule_via_ad(config: RuleConfig, f: Any, *args: Any, **kwargs: Any) -> Any:
    """Ask the AD behind ``config`` for ``(y, pullback)`` of ``f(*args)``.

    Raises :class:`ConfigModeError` when the config has no reverse mode.
    """
    if not isinstance(config, HasReverseMode) or not hasattr(config, "rrule_via_ad"):
        raise ConfigModeError(
            f"rrule_via_ad: {type(config).__name__} has no reverse mode.\n"
            "To fix: use a config that subclasses HasReverseMode and defines "
            "rrule_via_ad, or register the rule without config=HasReverseMode."
        )
    return config.rrule_via_ad(f, *args, **kwargs)


def frule_via_ad(config: RuleConfig, tangents: tuple, f: Any, *args: Any, **kwargs: Any) -> Any:
    """Ask the AD behind ``config`` for ``(y, ẏ)`` of ``f(*args)`` pushed along ``tangents``.

    Raises :class:`ConfigModeError` when the config has no forward mode.
    """
    if not isinstance(config, HasForwardsMode) or not hasattr(config, "frule_via_ad"):
        raise ConfigModeError(
            f"frule_via_ad: {type(config).__name__} has no forward mode.\n"
            "To fix: use a config that subclasses HasForwardsMode and defines "
            "frule_via_ad, or register the rule without config=HasForwardsMode."
        )
    return config.frule_via_ad(tangents, f, *args, **kwargs)
