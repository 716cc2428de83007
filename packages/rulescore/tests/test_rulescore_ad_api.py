"""The names rulescore exports for ADs: ``RuleTable`` and ``Rule`` (the tables behind
``rrule.table`` / ``frule.table``) and ``conj`` (the conjugation of ``scalar_rule``'s
pullbacks). No numpy. (That no module imports another in a cycle is checked by
import-linter, ``tox -e lint``.)"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

import rulescore
from rulescore import (
    AmbiguousRuleError,
    HasReverseMode,
    NoTangent,
    Rule,
    RuleConfig,
    RuleTable,
    ZeroTangent,
    conj,
    frule,
    opt_out,
    rrule,
    scalar_rule,
)


class _Config(RuleConfig, HasReverseMode):
    pass


def _fresh(name: str) -> Any:
    def f(*args: Any) -> Any:
        return args[0]

    f.__name__ = f.__qualname__ = name
    return f


# RuleTable and Rule


@pytest.mark.parametrize("name", ["RuleTable", "Rule", "conj"])
def test_exported_with_a_docstring(name: str) -> None:
    assert name in rulescore.__all__
    obj = getattr(rulescore, name)
    assert obj.__doc__ and ">>>" in obj.__doc__


def test_the_old_private_names_are_the_same_objects() -> None:
    from rulescore._dispatch import Rule as PrivateRule
    from rulescore._dispatch import RuleTable as PrivateTable
    from rulescore._rule_tools import NotImplementedTangent, _conj

    assert PrivateTable is RuleTable and PrivateRule is Rule and _conj is conj
    assert NotImplementedTangent is rulescore.NotImplementedTangent


def test_rrule_and_frule_tables_are_rule_tables() -> None:
    assert type(rrule.table) is RuleTable and type(frule.table) is RuleTable
    assert (rrule.table.kind, frule.table.kind) == ("rrule", "frule")


def test_lookup_returns_the_winning_rule_with_its_attributes() -> None:
    f = _fresh("table_lookup_f")

    @rrule.register(f)
    def general(x: object) -> Any:
        return x, None

    @rrule.register(f)
    def for_int(x: int) -> Any:
        return x, None

    @rrule.register(f, config=HasReverseMode)
    def with_config(config: Any, x: int) -> Any:
        return x, None

    table = rrule.table
    r = table.lookup(f, (bool,))  # bool is an int: the int rule is more specific
    assert isinstance(r, Rule)
    assert (r.f, r.impl, r.config, r.takes_config, r.opt_out) == (f, for_int, None, False, False)
    assert table.lookup(f, (str,)).impl is general
    c = table.lookup(f, (int,), _Config)
    assert (c.impl, c.config, c.takes_config) == (with_config, HasReverseMode, True)
    assert table.lookup(f, (int, int)) is None  # no rule takes two arguments
    assert table.lookup(_fresh("table_lookup_none"), (int,)) is None
    assert table.lookup([], (int,)) is None  # unhashable: cannot have rules
    assert [r.impl for r in table.rules_for(f)] == [general, for_int, with_config]
    assert f in table.functions()


def test_an_opt_out_wins_as_none_and_is_listed() -> None:
    f = _fresh("table_opt_out_f")

    @rrule.register(f)
    def any_rule(x: object) -> Any:
        return x, None

    opt_out(f, float)
    assert rrule.table.lookup(f, (float,)) is None
    assert rrule.table.lookup(f, (int,)).impl is any_rule
    assert [r.opt_out for r in rrule.table.rules_for(f)] == [False, True]
    g = _fresh("table_opt_out_only")
    rrule.opt_out(g)
    assert g not in rrule.table.functions()  # only opt-outs: not a function with a rule


def test_version_and_listeners_follow_every_registration() -> None:
    table = RuleTable("rrule")  # a table of its own: the global ones stay untouched
    calls: list[int] = []
    table.listeners.append(lambda: calls.append(table.version))
    f = _fresh("own_table_f")
    v0 = table.version

    def impl(x: float) -> Any:
        return x, None

    table.add(Rule(f, impl, rulescore._dispatch.signature_of(impl, 0, "test"), None))
    assert table.version == v0 + 1 and calls == [v0 + 1]
    assert table.lookup(f, (float,)).impl is impl
    assert rrule.table.lookup(f, (float,)) is None


def test_lookup_reports_an_ambiguity() -> None:
    f = _fresh("table_ambiguous_f")

    @rrule.register(f)
    def first(x: int, y: object) -> Any:
        return x, None

    @rrule.register(f)
    def second(x: object, y: int) -> Any:
        return x, None

    with pytest.raises(AmbiguousRuleError, match="table_ambiguous_f"):
        rrule.table.lookup(f, (int, int))


def test_registering_drops_a_cached_lookup() -> None:
    f = _fresh("table_cache_f")

    @rrule.register(f)
    def general(x: object) -> Any:
        return x, None

    assert rrule.table.lookup(f, (float,)).impl is general  # now cached
    version = rrule.table.version

    @rrule.register(f)
    def for_float(x: float) -> Any:
        return x, None

    assert rrule.table.version > version
    assert rrule.table.lookup(f, (float,)).impl is for_float


# conj


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (2.5, 2.5),
        (3, 3),
        (1 + 2j, 1 - 2j),
        (-1j, 1j),
        (Fraction(1, 3), Fraction(1, 3)),
        (True, 1),
    ],
)
def test_conj_values(p: Any, expected: Any) -> None:
    out = conj(p)
    assert out == expected and type(out) is type(expected)


def test_conj_returns_a_float_itself_and_an_object_without_conjugate_unchanged() -> None:
    x = 1.5
    assert conj(x) is x
    marker = object()
    assert conj(marker) is marker
    assert conj(ZeroTangent()) == ZeroTangent()


def test_scalar_rule_pullbacks_conjugate_with_conj() -> None:
    def times_i(z: Any) -> Any:
        return 1j * z

    scalar_rule(times_i, lambda z, Ω: 1j)
    _, pb = rrule(times_i, 2.0 + 1.0j)
    assert pb(1.0 + 0j) == (NoTangent(), conj(1j) * (1.0 + 0j)) == (NoTangent(), -1j)

    def pair(a: Any, b: Any) -> Any:
        return (a * b, a + b)

    scalar_rule(pair, lambda a, b, Ω: ((b, a), (1.0, 1.0)))
    _, pb = rrule(pair, 1j, 2.0 + 0j)
    # ā = ȳ₁ conj(b) + ȳ₂, b̄ = ȳ₁ conj(a) + ȳ₂, at ȳ = (1, 1)
    assert pb((1.0, 1.0)) == (NoTangent(), 3.0 + 0j, 1.0 - 1j)


def test_scalar_rule_pullbacks_call_conj_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # what an AD relies on when it registers a rule for rulescore.conj: the pullbacks
    # written by scalar_rule call this function (looked up at call time), no other
    seen: list[Any] = []

    def recording_conj(p: Any) -> Any:
        seen.append(p)
        return conj(p)

    def cube(x: Any) -> Any:
        return x**3

    scalar_rule(cube, lambda x, Ω: 3 * x**2)
    _, pb = rrule(cube, 2.0)
    monkeypatch.setattr(rulescore._rule_tools, "conj", recording_conj)
    assert pb(1.0) == (NoTangent(), 12.0)
    assert seen == [12.0]
