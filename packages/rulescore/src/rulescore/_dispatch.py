"""Type dispatch for the rule tables behind ``rrule`` and ``frule``.

A rule is an implementation registered for a function object plus a
signature read from the implementation's annotations. A call is matched by
``issubclass(type(arg), annotation)`` per positional argument; among the
matching rules the most specific wins (an ambiguity is an error), and an
opt-out that wins makes the lookup return ``None``.

The lookup result is cached per ``(f, config type, argument types)``: this is
the AD's per-operation hot path. Registering anything clears the cache, so a
rule defined after a call is seen by the next call.
"""

from __future__ import annotations

import inspect
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

from .errors import AmbiguousRuleError, RuleDefinitionError

__all__ = ["ANY", "Rule", "RuleTable", "Signature", "normalize_annotation"]


class _AnyType:
    __slots__ = ()

    def __repr__(self) -> str:
        return "Any"


ANY: Any = _AnyType()
"""The annotation spec that matches every argument."""


def normalize_annotation(ann: Any, where: str) -> Any:
    """Map an annotation to ``ANY`` or a tuple of classes (a union)."""
    if ann is inspect.Parameter.empty or ann is Any or ann is object:
        return ANY
    if ann is None or ann is type(None):
        return (type(None),)
    origin = get_origin(ann)
    if origin is Union or (hasattr(types, "UnionType") and isinstance(ann, types.UnionType)):
        members: list[type] = []
        for a in get_args(ann):
            spec = normalize_annotation(a, where)
            if spec is ANY:
                return ANY
            members.extend(spec)
        return tuple(dict.fromkeys(members))
    if origin is not None and isinstance(origin, type):
        return (origin,)  # list[int] dispatches as list
    if isinstance(ann, type):
        return (ann,)
    raise RuleDefinitionError(
        f"{where}: annotation {ann!r} is not a type.\n"
        "To fix: annotate with classes (float, numbers.Real, numpy.ndarray), unions of "
        "classes, or typing.Any; leave a parameter unannotated to accept anything."
    )


def _spec_le(a: Any, b: Any) -> bool:
    """Is spec ``a`` at least as specific as spec ``b``?"""
    if b is ANY:
        return True
    if a is ANY:
        return False
    return all(any(issubclass(x, y) for y in b) for x in a)


def _spec_matches(spec: Any, t: type) -> bool:
    return spec is ANY or issubclass(t, spec)


class Signature:
    """Positional parameter specs of a rule, with an optional varargs spec."""

    __slots__ = ("max_args", "min_args", "specs", "varargs")

    def __init__(self, specs: tuple, min_args: int, varargs: Any = None) -> None:
        self.specs = specs
        self.min_args = min_args
        self.max_args = None if varargs is not None else len(specs)
        self.varargs = varargs

    @classmethod
    def from_types(cls, types_: tuple, where: str) -> Signature:
        specs = tuple(normalize_annotation(t, where) for t in types_)
        return cls(specs, len(specs))

    def accepts_count(self, n: int) -> bool:
        return n >= self.min_args and (self.max_args is None or n <= self.max_args)

    def spec_at(self, i: int) -> Any:
        return self.specs[i] if i < len(self.specs) else self.varargs

    def matches(self, arg_types: tuple) -> bool:
        if not self.accepts_count(len(arg_types)):
            return False
        return all(_spec_matches(self.spec_at(i), t) for i, t in enumerate(arg_types))

    def le(self, other: Signature, n: int) -> bool:
        """At least as specific as ``other`` on calls with ``n`` arguments."""
        return all(_spec_le(self.spec_at(i), other.spec_at(i)) for i in range(n))

    def same_as(self, other: Signature) -> bool:
        return (
            self.specs == other.specs
            and self.min_args == other.min_args
            and self.varargs == other.varargs
        )

    def __repr__(self) -> str:
        parts = [repr(s) if s is ANY else " | ".join(c.__name__ for c in s) for s in self.specs]
        if self.varargs is not None:
            v = self.varargs
            parts.append("*" + (repr(v) if v is ANY else " | ".join(c.__name__ for c in v)))
        return f"({', '.join(parts)})"


class Rule:
    """One registered implementation (or opt-out) of a rule for a function.

    What :meth:`RuleTable.lookup` returns. Its attributes are read-only by
    convention: ``f`` (the function the rule is for), ``impl`` (the
    implementation; ``None`` for an opt-out), ``signature`` (the positional
    argument types it matches), ``config`` (the ``RuleConfig`` trait it requires,
    or ``None``), ``takes_config`` (whether ``impl`` receives the config first)
    and ``opt_out``.

    >>> from rulescore import rrule, scalar_rule
    >>> def cube(x):
    ...     return x**3
    >>> scalar_rule(cube, lambda x, Ω: 3 * x**2)
    >>> rule = rrule.table.lookup(cube, (float,))
    >>> rule.f is cube, rule.impl.__name__, rule.takes_config, rule.opt_out
    (True, 'cube_rrule', False, False)
    """

    __slots__ = ("config", "f", "impl", "opt_out", "signature", "takes_config")

    def __init__(
        self,
        f: Any,
        impl: Callable | None,
        signature: Signature,
        config: type | None,
        opt_out: bool = False,
    ) -> None:
        self.f = f
        self.impl = impl
        self.signature = signature
        self.config = config
        self.takes_config = config is not None
        self.opt_out = opt_out

    def applies(self, arg_types: tuple, config_type: type | None) -> bool:
        if self.config is not None and (
            config_type is None or not issubclass(config_type, self.config)
        ):
            return False
        return self.signature.matches(arg_types)

    def le(self, other: Rule, n: int) -> bool:
        if not self.signature.le(other.signature, n):
            return False
        if other.signature.le(self.signature, n):
            # Equal on these arguments: fixed arity beats varargs (as in Julia),
            # then a config-specific rule beats a generic one.
            mine, theirs = self.signature.varargs is None, other.signature.varargs is None
            if mine != theirs:
                return mine
            if other.config is None:
                return True
            return self.config is not None and issubclass(self.config, other.config)
        return True

    def describe(self) -> str:
        what = "opt-out" if self.opt_out else _where(self.impl)
        cfg = f" config={self.config.__name__}" if self.config is not None else ""
        return f"{self.signature}{cfg} [{what}]"


def _where(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", repr(fn))
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def fname(f: Any) -> str:
    """A readable name for a function object, with its module."""
    mod = getattr(f, "__module__", None)
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if name is None:
        return repr(f)
    if mod in (None, "builtins"):
        return name
    return f"{mod}.{name}"


#: How many lookups a ``RuleTable`` caches before it starts again.
_CACHE_BOUND = 1024


class RuleTable:
    """The rules registered for each function object, with a lookup cache.

    ``rrule.table`` and ``frule.table`` are the two instances; register rules
    through ``rrule.register`` / ``frule.register`` (or ``scalar_rule``,
    ``non_differentiable``, ``opt_out``), not through :meth:`add`. An AD reads a
    table directly on its hot path: :meth:`lookup` is the dispatch of
    ``rrule(f, *args)`` without the call, cached per ``(f, config type,
    argument types)``; ``version`` grows by one at every registration and each
    function in ``listeners`` is called after it, so an AD can cache facts it
    derived from the table (which rule won, whether it is a package's own) and
    drop them when a user registers a rule.

    >>> from rulescore import NoTangent, RuleTable, frule, rrule
    >>> isinstance(rrule.table, RuleTable), rrule.table.kind, frule.table.kind
    (True, 'rrule', 'frule')
    >>> def halve(x):
    ...     return x / 2
    >>> rrule.table.lookup(halve, (float,)) is None            # no rule yet
    True
    >>> @rrule.register(halve)
    ... def halve_rrule(x: float):
    ...     def halve_pullback(ȳ):
    ...         return NoTangent(), ȳ / 2
    ...     return halve(x), halve_pullback
    >>> rrule.table.lookup(halve, (float,)).impl is halve_rrule
    True
    >>> rrule.table.lookup(halve, (str,)) is None              # no rule for str
    True
    >>> halve in rrule.table.functions()
    True

    See also: :class:`Rule`, ``rrule``, ``frule``.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        #: f -> its rules: each list is published whole (replaced, never changed
        #: in place), so a lookup in another thread sees the old or the new one.
        self._rules: dict[Any, list[Rule]] = {}
        #: A fresh dict per registration (never cleared in place): a lookup that
        #: resolved against the old rules stores into the old dict, unseen.
        self._cache: dict[tuple, Rule | None] = {}
        self._lock = threading.Lock()  # registrations only: lookups take none
        #: Bumped by every registration, so callers can cache derived facts.
        self.version = 0
        #: Called with no arguments after every registration (an AD's caches).
        self.listeners: list[Any] = []

    def add(self, rule: Rule) -> None:
        """Register ``rule`` (replacing one of the same signature and config), clear the
        cache, bump ``version`` and call the ``listeners``."""
        f = rule.f
        try:
            hash(f)
        except TypeError:
            raise RuleDefinitionError(
                f"{self.kind}: cannot register a rule for the unhashable object {f!r}"
            ) from None
        with self._lock:
            entries = self._rules.get(f, [])
            kept = [
                e
                for e in entries
                if not (e.signature.same_as(rule.signature) and e.config is rule.config)
            ]
            self._rules[f] = [*kept, rule]
            self._cache = {}
            self.version += 1
            listeners = list(self.listeners)
        for listener in listeners:
            listener()

    def functions(self) -> list[Any]:
        """Every function with at least one rule that is not an opt-out."""
        return [f for f, rs in self._rules.copy().items() if any(not r.opt_out for r in rs)]

    def rules_for(self, f: Any) -> list[Rule]:
        """Every rule registered for ``f`` (opt-outs included), in registration order."""
        try:
            return list(self._rules.get(f, ()))
        except TypeError:
            return []

    def lookup(self, f: Any, arg_types: tuple, config_type: type | None = None) -> Rule | None:
        """The winning rule for a call, or None (no rule, or an opt-out won).

        ``arg_types`` are the types of the positional arguments; ``config_type``
        the class of the ``RuleConfig`` the call is made with (``None``: no
        config, so config-aware rules do not apply). Raises
        ``AmbiguousRuleError`` when two rules match equally well.
        """
        try:
            if f not in self._rules:
                # Most callables an AD meets have no rule: answer without
                # caching, so fresh closures do not grow the cache.
                return None
        except TypeError:  # unhashable callable: it cannot have rules
            return None
        key = (f, config_type, arg_types)
        cache = self._cache
        try:
            return cache[key]
        except KeyError:
            pass
        rule = self._resolve(f, arg_types, config_type)
        if len(cache) >= _CACHE_BOUND:  # bounded: argument types made per call leave
            cache.clear()
        cache[key] = rule
        return rule

    def _resolve(self, f: Any, arg_types: tuple, config_type: type | None) -> Rule | None:
        entries = self._rules.get(f)
        if not entries:
            return None
        applicable = [e for e in entries if e.applies(arg_types, config_type)]
        if not applicable:
            return None
        n = len(arg_types)
        best = [e for e in applicable if all(e.le(o, n) for o in applicable)]
        if len(best) != 1:
            minimal = [
                e
                for e in applicable
                if not any(o is not e and o.le(e, n) and not e.le(o, n) for o in applicable)
            ]
            raise AmbiguousRuleError(
                f"{self.kind}({fname(f)}, ...) is ambiguous for argument types "
                f"({', '.join(t.__name__ for t in arg_types)}): candidates\n  "
                + "\n  ".join(e.describe() for e in minimal)
                + "\nTo fix: register a rule for exactly these types, or narrow one candidate."
            )
        winner = best[0]
        return None if winner.opt_out else winner


def signature_of(impl: Callable, skip: int, where: str) -> Signature:
    """The dispatch signature read from ``impl``'s positional parameters after ``skip``."""
    try:
        sig = inspect.signature(impl)
    except (TypeError, ValueError) as e:
        raise RuleDefinitionError(f"{where}: cannot read the signature of {impl!r}: {e}") from e
    try:
        hints = typing.get_type_hints(impl)
    except Exception as e:
        raise RuleDefinitionError(
            f"{where}: cannot resolve the annotations of {_where(impl)}: {e}\n"
            "To fix: import the annotated types where the rule is defined."
        ) from e
    specs: list[Any] = []
    required = 0
    varargs = None
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if len([p for p in params if p.kind != p.VAR_POSITIONAL]) < skip and not any(
        p.kind == p.VAR_POSITIONAL for p in params
    ):
        raise RuleDefinitionError(f"{where}: {_where(impl)} takes too few positional parameters")
    for i, p in enumerate(params):
        ann = hints.get(p.name, inspect.Parameter.empty)
        spec = normalize_annotation(ann, f"{where}, parameter {p.name!r}")
        if p.kind == p.VAR_POSITIONAL:
            varargs = spec
            break
        if i < skip:
            continue
        specs.append(spec)
        if p.default is p.empty:
            required += 1
    return Signature(tuple(specs), required, varargs)
