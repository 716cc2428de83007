"""The generic functions ``rrule`` and ``frule``, and rule registration.

``rrule(f, *args, **kwargs)`` returns ``(y, pullback)`` or ``None``;
``frule((ḟ, *ẋs), f, *args, **kwargs)`` returns ``(y, ẏ)`` or ``None``. Either
may be called config-first: ``rrule(config, f, *args)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._config import RuleConfig
from ._dispatch import ANY, Rule, RuleTable, Signature, fname, signature_of
from ._zeros import NoTangent
from .errors import CotangentError, RuleDefinitionError

__all__ = ["FRule", "RRule", "frule", "non_differentiable", "opt_out", "rrule"]


def _check_registration(kind: str, f: Any, config: Any) -> None:
    if not callable(f):
        raise RuleDefinitionError(
            f"{kind}.register: {f!r} is not callable.\n"
            "To fix: pass the function object the rule is for, e.g. "
            f"@{kind}.register(math.sin)."
        )
    if config is not None and not isinstance(config, type):
        raise RuleDefinitionError(
            f"{kind}.register: config={config!r} must be a class such as HasReverseMode"
        )


class _GenericRule:
    """Shared registration machinery of ``rrule`` and ``frule``."""

    kind = ""

    def __init__(self) -> None:
        self.table = RuleTable(self.kind)

    def register(self, f: Any, config: type | None = None) -> Callable[[Callable], Callable]:
        """Decorator: register the decorated function as a rule for ``f``.

        Positional annotations of the decorated function drive dispatch;
        ``config=`` a trait class makes a config-aware rule that receives the
        config first and applies only when the calling config has that trait.
        """
        _check_registration(self.kind, f, config)

        def decorator(impl: Callable) -> Callable:
            if not callable(impl):
                raise RuleDefinitionError(
                    f"{self.kind}.register({fname(f)}): {impl!r} is not callable"
                )
            where = f"{self.kind}.register({fname(f)})"
            sig = self._signature(impl, 1 if config is not None else 0, where)
            self.table.add(Rule(f, impl, sig, config))
            return impl

        return decorator

    def _signature(self, impl: Callable, skip: int, where: str) -> Signature:
        return signature_of(impl, skip, where)

    def register_signature(
        self, f: Any, impl: Callable, types: tuple | None, config: type | None = None
    ) -> None:
        """Register ``impl`` for ``f`` with an explicit signature (``None``: every call)."""
        _check_registration(self.kind, f, config)
        self.table.add(Rule(f, impl, _explicit_signature(types, self.kind, f), config))

    def opt_out(self, f: Any, *types: Any) -> None:
        """Make this generic function return ``None`` for ``f`` at these types.

        With no types, every signature of ``f`` is opted out.
        """
        _check_registration(self.kind, f, None)
        self.table.add(Rule(f, None, _explicit_signature(types or None, self.kind, f), None, True))

    def lookup(self, f: Any, arg_types: tuple, config_type: type | None = None) -> Rule | None:
        """The rule that a call with these argument types would run, or ``None``.

        The AD calls this on its hot path; the result is cached.
        """
        return self.table.lookup(f, arg_types, config_type)

    def has_rule(self, f: Any, *args: Any, config: RuleConfig | None = None) -> bool:
        """Whether a rule (not opted out) applies to ``f(*args)``."""
        ct = type(config) if config is not None else None
        return self.table.lookup(f, tuple(map(type, args)), ct) is not None

    def functions(self) -> list[Any]:
        """Every function with at least one rule."""
        return self.table.functions()

    def has_rule_for(self, f: Any) -> bool:
        """Whether any rule (not an opt-out) is registered for ``f``."""
        return any(not r.opt_out for r in self.table.rules_for(f))


def _explicit_signature(types: tuple | None, kind: str, f: Any) -> Signature:
    if types is None:
        return Signature((), 0, ANY)
    return Signature.from_types(tuple(types), f"{kind} for {fname(f)}")


class RRule(_GenericRule):
    """``rrule(f, *args, **kwargs) -> (y, pullback) | None``.

    ``pullback(ȳ)`` returns one cotangent for ``f`` itself and one per
    positional argument.

    >>> import math
    >>> from rulescore import rrule, NoTangent
    >>> def myexp(x):
    ...     return math.exp(x)
    >>> @rrule.register(myexp)
    ... def _(x: float):
    ...     y = myexp(x)
    ...     def myexp_pullback(ȳ):
    ...         return NoTangent(), ȳ * y
    ...     return y, myexp_pullback
    >>> y, pb = rrule(myexp, 0.0)
    >>> pb(2.0)
    (NoTangent(), 2.0)
    >>> rrule(myexp, 1) is None      # dispatch is isinstance: an int is not a float
    True
    """

    kind = "rrule"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not args:
            raise TypeError("rrule(f, *args) needs the function to differentiate")
        a0 = args[0]
        if isinstance(a0, RuleConfig):
            if len(args) < 2:
                raise TypeError("rrule(config, f, *args) needs the function after the config")
            xs = args[2:]
            rule = self.table.lookup(args[1], tuple(map(type, xs)), type(a0))
            if rule is None:
                return None
            if rule.takes_config:
                return rule.impl(a0, *xs, **kwargs)
            return rule.impl(*xs, **kwargs)
        xs = args[1:]
        rule = self.table.lookup(a0, tuple(map(type, xs)), None)
        if rule is None:
            return None
        return rule.impl(*xs, **kwargs)


class FRule(_GenericRule):
    """``frule((ḟ, *ẋs), f, *args, **kwargs) -> (y, ẏ) | None``.

    Implementations take the tangents first, flat: ``(ḟ, ẋ1, ..., ẋn, x1, ..., xn)``;
    the annotations of the primal parameters drive dispatch.

    >>> import math
    >>> from rulescore import frule
    >>> def mysin(x):
    ...     return math.sin(x)
    >>> @frule.register(mysin)
    ... def _(ḟ, ẋ, x: float):
    ...     return mysin(x), math.cos(x) * ẋ
    >>> frule((None, 1.0), mysin, 0.0)
    (0.0, 1.0)
    """

    kind = "frule"

    def _signature(self, impl: Callable, skip: int, where: str) -> Signature:
        full = signature_of(impl, skip, where)
        if full.varargs is not None:
            if len(full.specs) != 1:
                raise RuleDefinitionError(
                    f"{where}: a variadic frule takes (ḟ, *args) with args = tangents then primals"
                )
            return Signature((), 0, full.varargs)
        k = len(full.specs)
        if k % 2 != 1 or full.min_args != k:
            raise RuleDefinitionError(
                f"{where}: an frule takes (ḟ, ẋ1, ..., ẋn, x1, ..., xn), an odd number of "
                f"required positional parameters; got {k}.\n"
                "To fix: list one tangent per primal argument, after ḟ, before the primals."
            )
        n = (k - 1) // 2
        return Signature(full.specs[k - n :], n)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) < 2:
            raise TypeError("frule((ḟ, *ẋs), f, *args) needs the tangents and the function")
        a0 = args[0]
        if isinstance(a0, RuleConfig):
            config, tangents, f, xs = a0, args[1], args[2], args[3:]
            rule = self.table.lookup(f, tuple(map(type, xs)), type(a0))
        else:
            config, tangents, f, xs = None, a0, args[1], args[2:]
            rule = self.table.lookup(f, tuple(map(type, xs)), None)
        if rule is None:
            return None
        if not isinstance(tangents, tuple) or len(tangents) != len(xs) + 1:
            raise CotangentError(
                f"frule({fname(f)}): expected a tuple of {len(xs) + 1} tangents "
                f"(ḟ and one per argument), got {tangents!r}"
            )
        if rule.takes_config:
            return rule.impl(config, *tangents, *xs, **kwargs)
        return rule.impl(*tangents, *xs, **kwargs)


rrule = RRule()
frule = FRule()


class _OptOut:
    """``opt_out(f, *types)``: no ``rrule`` or ``frule`` for ``f`` at these types.

    The AD then differentiates ``f``'s own source instead of using a more
    general rule. With no types, every signature is opted out.
    ``rrule.opt_out(...)`` / ``frule.opt_out(...)`` opt out of one only.
    The decorator form ``@opt_out.signature(f)`` reads the types from the
    annotations of the decorated (otherwise unused) function.

    >>> from rulescore import rrule, opt_out, scalar_rule
    >>> def double(x):
    ...     return 2 * x
    >>> scalar_rule(double, lambda x, Ω: 2.0)
    >>> opt_out(double, int)
    >>> rrule(double, 3) is None, rrule(double, 3.0) is None
    (True, False)
    """

    def __call__(self, f: Any, *types: Any) -> None:
        rrule.opt_out(f, *types)
        frule.opt_out(f, *types)

    def signature(self, f: Any) -> Callable[[Callable], Callable]:
        """Decorator form: opt out at the annotated signature of the decorated function."""

        def decorator(sig_fn: Callable) -> Callable:
            sig = signature_of(sig_fn, 0, f"opt_out.signature({fname(f)})")
            for table in (rrule, frule):
                _check_registration(table.kind, f, None)
                table.table.add(Rule(f, None, sig, None, True))
            return sig_fn

        return decorator

    def __repr__(self) -> str:
        return "opt_out"


opt_out = _OptOut()


def non_differentiable(f: Any, *types: Any) -> None:
    """Declare that ``f`` has no derivative: every tangent is ``NoTangent()``.

    With no types, every signature of ``f`` is covered.

    >>> from rulescore import rrule, non_differentiable
    >>> def count(xs):
    ...     return len(xs)
    >>> non_differentiable(count)
    >>> y, pb = rrule(count, [1.0, 2.0])
    >>> y, pb(1.0)
    (2, (NoTangent(), NoTangent()))
    """
    sig_types = types or None
    name = getattr(f, "__name__", "f")

    def nondiff_rrule(*args: Any, **kwargs: Any) -> Any:
        n = len(args)

        def nondiff_pullback(ȳ: Any) -> tuple:
            return (NoTangent(),) * (n + 1)

        return f(*args, **kwargs), nondiff_pullback

    def nondiff_frule(*args: Any, **kwargs: Any) -> Any:
        n = (len(args) - 1) // 2
        return f(*args[len(args) - n :], **kwargs), NoTangent()

    nondiff_rrule.__qualname__ = nondiff_rrule.__name__ = f"nondiff_rrule_{name}"
    nondiff_frule.__qualname__ = nondiff_frule.__name__ = f"nondiff_frule_{name}"
    rrule.register_signature(f, nondiff_rrule, sig_types)
    frule.register_signature(f, nondiff_frule, sig_types)
