"""Dispatch of rrule/frule: specificity, ambiguity, caching, config, opt-out."""

import numbers
from typing import Any

import pytest

from rulescore import (
    AmbiguousRuleError,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    RuleConfig,
    RuleDefinitionError,
    frule,
    opt_out,
    rrule,
)


def make_rule(tag):
    def impl(*args, **kwargs):
        def pullback(ȳ):
            return (NoTangent(),) * (1 + len(args))

        return (tag, args, kwargs), pullback

    return impl


@pytest.fixture
def f():
    def fresh(*args, **kwargs):
        return args

    return fresh


def tag_of(result):
    return None if result is None else result[0][0]


def test_no_rule_returns_none(f):
    assert rrule(f, 1.0) is None
    assert frule((None, 1.0), f, 1.0) is None


def test_isinstance_dispatch_and_most_specific_wins(f):
    @rrule.register(f)
    def _(x: numbers.Real):
        return make_rule("real")(x)

    @rrule.register(f)
    def _(x: float):
        return make_rule("float")(x)

    @rrule.register(f)
    def _(x):
        return make_rule("any")(x)

    assert tag_of(rrule(f, 1.0)) == "float"
    assert tag_of(rrule(f, 1)) == "real"  # int is a Real but not a float
    assert tag_of(rrule(f, "s")) == "any"


def test_arity_and_defaults(f):
    @rrule.register(f)
    def _(x: float, y: float = 2.0):
        return make_rule("one-or-two")(x, y)

    @rrule.register(f)
    def _(*xs: float):
        return make_rule("variadic")(*xs)

    assert tag_of(rrule(f, 1.0)) == "one-or-two"
    assert tag_of(rrule(f, 1.0, 2.0)) == "one-or-two"
    assert tag_of(rrule(f, 1.0, 2.0, 3.0)) == "variadic"
    assert tag_of(rrule(f)) == "variadic"
    assert rrule(f, 1.0, "x", 3.0) is None


def test_union_optional_and_any_annotations(f):
    @rrule.register(f)
    def _(x: int | str, y: float | None = None, z: Any = 0):
        return make_rule("union")(x)

    assert tag_of(rrule(f, 1)) == "union"
    assert tag_of(rrule(f, "a", None)) == "union"
    assert tag_of(rrule(f, "a", 1.0, object())) == "union"
    assert rrule(f, 1.0) is None


def test_pep604_union(f):
    @rrule.register(f)
    def _(x: int | float):
        return make_rule("pep604")(x)

    assert tag_of(rrule(f, 1)) == "pep604"
    assert tag_of(rrule(f, 1.0)) == "pep604"


def test_ambiguity_is_a_clear_error(f):
    @rrule.register(f)
    def _(x: float, y):
        return make_rule("a")(x, y)

    @rrule.register(f)
    def _(x, y: float):
        return make_rule("b")(x, y)

    assert tag_of(rrule(f, 1.0, "s")) == "a"
    with pytest.raises(AmbiguousRuleError, match=r"ambiguous.*\(float, float\)"):
        rrule(f, 1.0, 2.0)

    @rrule.register(f)
    def _(x: float, y: float):
        return make_rule("both")(x, y)

    assert tag_of(rrule(f, 1.0, 2.0)) == "both"


def test_cache_sees_rules_registered_later(f):
    assert rrule(f, 1.0) is None  # cached miss

    @rrule.register(f)
    def _(x):
        return make_rule("any")(x)

    assert tag_of(rrule(f, 1.0)) == "any"

    @rrule.register(f)
    def _(x: float):
        return make_rule("float")(x)

    assert tag_of(rrule(f, 1.0)) == "float"


def test_reregistering_same_signature_replaces(f):
    @rrule.register(f)
    def _(x: float):
        return make_rule("old")(x)

    @rrule.register(f)
    def _(x: float):
        return make_rule("new")(x)

    assert tag_of(rrule(f, 1.0)) == "new"
    assert len(rrule.table.rules_for(f)) == 1


def test_keyword_arguments_pass_through(f):
    @rrule.register(f)
    def _(x, *, scale=1.0):
        return make_rule("kw")(x, scale=scale)

    (tag, args, kwargs), _pb = rrule(f, 1.0, scale=3.0)
    assert kwargs == {"scale": 3.0}


class ReverseAD(RuleConfig, HasReverseMode):
    def rrule_via_ad(self, g, *args):
        return g(*args), None


class ForwardAD(RuleConfig, HasForwardsMode):
    pass


def test_config_first_form_and_config_rules(f):
    @rrule.register(f)
    def _(x):
        return make_rule("plain")(x)

    @rrule.register(f, config=HasReverseMode)
    def _(config, x):
        assert isinstance(config, ReverseAD)
        return make_rule("config")(x)

    assert tag_of(rrule(f, 1.0)) == "plain"
    assert tag_of(rrule(ReverseAD(), f, 1.0)) == "config"
    assert tag_of(rrule(ForwardAD(), f, 1.0)) == "plain"  # trait does not match


def test_config_rule_only_applies_with_config(f):
    @rrule.register(f, config=HasReverseMode)
    def _(config, x: float):
        return make_rule("config")(x)

    assert rrule(f, 1.0) is None
    assert tag_of(rrule(ReverseAD(), f, 1.0)) == "config"


def test_opt_out_beats_general_rule(f):
    @rrule.register(f)
    def _(x: numbers.Real):
        return make_rule("real")(x)

    @frule.register(f)
    def _(ḟ, ẋ, x: numbers.Real):
        return f(x), ẋ

    opt_out(f, int)
    assert rrule(f, 1) is None
    assert frule((None, 1.0), f, 1) is None
    assert tag_of(rrule(f, 1.0)) == "real"
    assert frule((None, 1.0), f, 1.0) == ((1.0,), 1.0)


def test_one_sided_opt_out(f):
    @rrule.register(f)
    def _(x):
        return make_rule("any")(x)

    @frule.register(f)
    def _(ḟ, ẋ, x):
        return f(x), ẋ

    rrule.opt_out(f, float)
    assert rrule(f, 1.0) is None
    assert frule((None, 2.0), f, 1.0) == ((1.0,), 2.0)


def test_opt_out_decorator_form(f):
    @rrule.register(f)
    def _(x):
        return make_rule("any")(x)

    @opt_out.signature(f)
    def _(x: str): ...

    assert rrule(f, "s") is None
    assert tag_of(rrule(f, 1.0)) == "any"


def test_frule_dispatches_on_primals_and_checks_tangent_count(f):
    @frule.register(f)
    def _(ḟ, ẋ, ẏ, x: float, y: float):
        return x * y, ẋ * y + x * ẏ

    assert frule((None, 1.0, 0.0), f, 2.0, 3.0) == (6.0, 3.0)
    assert frule((None, 1.0, 0.0), f, 2, 3.0) is None
    with pytest.raises(ValueError, match="expected a tuple of 3 tangents"):
        frule((None, 1.0), f, 2.0, 3.0)


def test_variadic_frule(f):
    @frule.register(f)
    def _(ḟ, *args):
        n = len(args) // 2
        return sum(args[n:]), sum(args[:n])

    assert frule((None, 1.0, 2.0, 3.0), f, 1.0, 1.0, 1.0) == (3.0, 6.0)


def test_lookup_api_is_cached(f):
    @rrule.register(f)
    def _(x: float):
        return make_rule("float")(x)

    r1 = rrule.lookup(f, (float,))
    r2 = rrule.lookup(f, (float,))
    assert r1 is r2 and r1.impl is not None
    assert rrule.lookup(f, (str,)) is None
    assert rrule.has_rule(f, 1.0) and not rrule.has_rule(f, "s")


def test_unhashable_callable_has_no_rule():
    class Unhashable:
        __hash__ = None

        def __call__(self, x):
            return x

    assert rrule(Unhashable(), 1.0) is None


@pytest.mark.parametrize("bad", [3, "sin", None])
def test_registering_non_callable_is_an_error(bad):
    with pytest.raises(RuleDefinitionError, match="not callable"):
        rrule.register(bad)


def test_bad_annotation_is_an_error(f):
    with pytest.raises(RuleDefinitionError, match="not a type"):

        @rrule.register(f)
        def _(x: 3):  # type: ignore[valid-type]
            return None


def test_unresolvable_annotation_is_an_error(f):
    with pytest.raises(RuleDefinitionError, match="cannot resolve"):

        @rrule.register(f)
        def _(x: "NoSuchType"):  # type: ignore[name-defined]  # noqa: F821
            return None


def test_bad_frule_arity_is_an_error(f):
    with pytest.raises(RuleDefinitionError, match="odd number"):

        @frule.register(f)
        def _(ḟ, x):
            return None


def test_config_must_be_a_class(f):
    with pytest.raises(RuleDefinitionError, match="must be a class"):
        rrule.register(f, config=ReverseAD())
