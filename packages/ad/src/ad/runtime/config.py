"""``ADConfig``: the RuleConfig that ad passes to config-aware rules."""

from __future__ import annotations

from typing import Any

from ad.runtime import calls
from ad.runtime.state import keep_stateful
from rulescore import HasForwardsMode, HasReverseMode, RuleConfig, ZeroTangent

__all__ = ["ADConfig"]


class ADConfig(RuleConfig, HasReverseMode, HasForwardsMode):
    """The configuration of this AD: it differentiates in reverse and forward mode.

    Rules registered with ``config=HasReverseMode`` receive it and may call
    ``rulescore.rrule_via_ad(config, f, *args)`` to differentiate a function
    they were given (a ``map`` or ``reduce`` rule, an ODE solver); rules
    registered with ``config=HasForwardsMode`` may call
    ``rulescore.frule_via_ad(config, (ḟ, *ẋs), f, *args)``.

    >>> from rulescore import rrule_via_ad
    >>> y, pb = rrule_via_ad(ADConfig(), lambda x: x * x, 3.0)
    >>> y, pb(1.0)[1]
    (9.0, 6.0)
    >>> from rulescore import frule_via_ad, ZeroTangent
    >>> frule_via_ad(ADConfig(), (ZeroTangent(), 1.0), lambda x: x * x, 3.0)
    (9.0, 6.0)
    """

    __slots__ = ()

    def rrule_via_ad(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return _rrule_via_ad_kw(f, args, kwargs)
        y, pb = calls.rcall(f, *args)

        def rrule_via_ad_pullback(ȳ: Any) -> tuple:
            # The rule may keep and call it many times: never the pullback itself,
            # which a caller running once could tell to free its tape (_runtime.claim).
            return pb(ȳ)

        # A call that wrote must run whatever its cotangent: the rule sees it (``must_run``).
        return y, keep_stateful(pb, rrule_via_ad_pullback)

    def frule_via_ad(self, tangents: tuple, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``(y, ẏ)`` of ``f(*args)`` pushed along ``tangents = (ḟ, ẋ1, ...)``.

        Keyword arguments get no tangent (they are constants), as in rules.
        """
        if not isinstance(tangents, tuple) or len(tangents) != len(args) + 1:
            raise TypeError(
                f"frule_via_ad: expected a tuple of {len(args) + 1} tangents "
                f"(ḟ and one per argument), got {tangents!r}"
            )
        tangents = tuple(ZeroTangent() if ṫ is None else ṫ for ṫ in tangents)
        if kwargs:
            # as generated code calls with keywords: a rule's body that calls this is
            # differentiated again at higher order, where fcall_gen has rules
            names = tuple(kwargs)
            zeros = (ZeroTangent(),) * len(names)
            ḟ = tangents[0]
            values = tuple(kwargs.values())
            return calls.fcall_gen(f, ḟ, args, tangents[1:], None, names, values, zeros)
        return calls.fcall(f, tangents, *args)


def _rrule_via_ad_kw(f: Any, args: tuple, kwargs: dict) -> Any:
    """``rrule_via_ad`` of a call with keyword arguments (which get no cotangent).

    A function of its own, so that ``rrule_via_ad``'s pullback closure captures a
    ``pb`` assigned once: at second order ad differentiates that method's source,
    and refuses a closure over a name assigned in two places."""
    y, pb = calls.rcall_kw(f, args, kwargs)
    n = len(args)

    def via_ad_pullback(ȳ: Any) -> tuple:
        return pb(ȳ)[: n + 1]

    return y, keep_stateful(pb, via_ad_pullback)
