"""``ADConfig``: the RuleConfig that ad passes to config-aware rules."""

from __future__ import annotations

from typing import Any

from rulescore import HasReverseMode, RuleConfig

__all__ = ["ADConfig"]


class ADConfig(RuleConfig, HasReverseMode):
    """The configuration of this AD: it can differentiate in reverse mode.

    Rules registered with ``config=HasReverseMode`` receive it and may call
    ``rulescore.rrule_via_ad(config, f, *args)`` to differentiate a function
    they were given (a ``map`` or ``reduce`` rule, an ODE solver).

    >>> from rulescore import rrule_via_ad
    >>> y, pb = rrule_via_ad(ADConfig(), lambda x: x * x, 3.0)
    >>> y, pb(1.0)[1]
    (9.0, 6.0)
    """

    __slots__ = ()

    def rrule_via_ad(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        from ._runtime import rcall, rcall_kw

        if kwargs:
            y, pb = rcall_kw(f, args, kwargs)
            n = len(args)

            def via_ad_pullback(ȳ: Any) -> tuple:
                return pb(ȳ)[: n + 1]

            return y, via_ad_pullback
        return rcall(f, *args)
