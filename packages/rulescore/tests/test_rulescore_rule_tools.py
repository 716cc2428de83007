"""scalar_rule, derivatives_given_output, non_differentiable, ignore_derivatives,
not_implemented and the config entry points."""

import cmath
import math

import pytest

from rulescore import (
    ConfigModeError,
    CotangentError,
    HasForwardsMode,
    HasReverseMode,
    NoTangent,
    NotImplementedTangentError,
    RuleConfig,
    RuleDefinitionError,
    Tangent,
    Thunk,
    ZeroTangent,
    derivatives_given_output,
    frule,
    frule_via_ad,
    ignore_derivatives,
    non_differentiable,
    not_implemented,
    rrule,
    rrule_via_ad,
    scalar_rule,
)


def fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_scalar_rule_one_argument_bare_partial():
    def cube(x):
        return x**3

    scalar_rule(cube, lambda x, Ω: 3 * x**2)
    y, pb = rrule(cube, 2.0)
    assert y == 8.0 and pb(1.0) == (NoTangent(), 12.0)
    assert frule((NoTangent(), 0.5), cube, 2.0) == (8.0, 6.0)
    assert pb(2.0)[1] == pytest.approx(2 * fd(cube, 2.0), rel=1e-6)


def test_scalar_rule_decorator_and_output_reuse():
    @scalar_rule(lambda x, Ω: (Ω,))
    def myexp(x):
        return math.exp(x)

    y, pb = rrule(myexp, 1.0)
    assert pb(1.0)[1] == pytest.approx(math.e)
    assert myexp(0.0) == 1.0  # the decorator returns the function


def test_scalar_rule_multi_argument():
    def mul3(x, y, z):
        return x * y * z

    scalar_rule(mul3, lambda x, y, z, Ω: (y * z, x * z, x * y))
    _, pb = rrule(mul3, 2.0, 3.0, 4.0)
    assert pb(1.0) == (NoTangent(), 12.0, 8.0, 6.0)
    assert frule((None, 1.0, ZeroTangent(), 1.0), mul3, 2.0, 3.0, 4.0) == (24.0, 12.0 + 6.0)
    assert (
        frule((None, ZeroTangent(), ZeroTangent(), ZeroTangent()), mul3, 1.0, 1.0, 1.0)[1]
        is ZeroTangent()
    )


def test_scalar_rule_tuple_output():
    def sincos(x):
        return (math.sin(x), math.cos(x))

    scalar_rule(sincos, lambda x, Ω: ((math.cos(x),), (-math.sin(x),)))
    y, pb = rrule(sincos, 0.5)
    assert y == sincos(0.5)
    (_, dx) = pb((1.0, 2.0))
    assert dx == pytest.approx(math.cos(0.5) - 2 * math.sin(0.5))
    assert pb(Tangent[tuple](ZeroTangent(), 1.0))[1] == pytest.approx(-math.sin(0.5))
    assert pb(ZeroTangent())[1] is ZeroTangent()
    _, ẏ = frule((None, 1.0), sincos, 0.5)
    assert ẏ == Tangent[tuple](math.cos(0.5), -math.sin(0.5))


def test_scalar_rule_complex_is_holomorphic_convention():
    def clog(z):
        return cmath.log(z)

    scalar_rule(clog, lambda z, Ω: 1 / z)
    z = 1 + 2j
    _, pb = rrule(clog, z)
    # gradient of real(log z) is conj(d/dz log z) = conj(1/z) = 0.2 + 0.4j
    assert pb(1.0)[1] == pytest.approx((1 / z).conjugate())
    assert pb(1.0)[1].conjugate() == pytest.approx(0.2 - 0.4j)


def test_scalar_rule_projects_to_real_arguments():
    def scale(x):
        return 2 * x

    scalar_rule(scale, lambda x, Ω: 2.0)
    _, pb = rrule(scale, 3)
    assert pb(1.0) == (NoTangent(), 2.0) and type(pb(1.0)[1]) is float


def test_scalar_pullback_rejects_wrong_structure():
    def sq(x):
        return x * x

    scalar_rule(sq, lambda x, Ω: 2 * x)
    _, pb = rrule(sq, 1.0)
    with pytest.raises(CotangentError, match="must be a scalar"):
        pb((1.0, 2.0))

    def two(x):
        return (x, x)

    scalar_rule(two, lambda x, Ω: ((1.0,), (1.0,)))
    _, pb2 = rrule(two, 1.0)
    with pytest.raises(CotangentError, match="tuple of 2 entries"):
        pb2(1.0)


def test_scalar_pullback_accepts_thunks_and_zeros():
    def sq(x):
        return x * x

    scalar_rule(sq, lambda x, Ω: 2 * x)
    _, pb = rrule(sq, 3.0)
    assert pb(Thunk(lambda: 1.0))[1] == 6.0
    assert pb(ZeroTangent())[1] is ZeroTangent()


def test_partials_with_wrong_count_is_an_error():
    def g(x, y):
        return x + y

    scalar_rule(g, lambda x, y, Ω: (1.0,))
    with pytest.raises(CotangentError, match="1 entries for a call with 2"):
        rrule(g, 1.0, 2.0)


def test_derivatives_given_output():
    def sq(x):
        return x * x

    scalar_rule(sq, lambda x, Ω: 2 * x)
    assert derivatives_given_output(9.0, sq, 3.0) == ((6.0,),)
    with pytest.raises(LookupError, match="no scalar_rule"):
        derivatives_given_output(1.0, len, [1])


def test_scalar_rule_with_types_restricts_dispatch():
    def h(x):
        return x

    scalar_rule(h, lambda x, Ω: 1.0, types=(float,))
    assert rrule(h, 1.0) is not None and rrule(h, 1) is None


def test_non_differentiable():
    def label(x, n):
        return f"{x}:{n}"

    non_differentiable(label)
    y, pb = rrule(label, 1.0, 2)
    assert y == "1.0:2" and pb(1.0) == (NoTangent(),) * 3
    assert frule((None, 1.0, 1.0), label, 1.0, 2) == ("1.0:2", NoTangent())


def test_non_differentiable_with_types():
    def ident(x):
        return x

    non_differentiable(ident, int)
    assert rrule(ident, 1) is not None and rrule(ident, 1.0) is None


@pytest.mark.parametrize(
    "value, expected",
    [(3.0, 3.0), (lambda: 4.0, 4.0), (len, None), ("s", "s")],
)
def test_ignore_derivatives(value, expected):
    if value is len:
        with pytest.raises(TypeError):  # builtins are called with no arguments
            ignore_derivatives(value)
        return
    assert ignore_derivatives(value) == expected


def test_ignore_derivatives_leaves_callable_instances_alone():
    class Model:
        def __call__(self):
            return 1.0

    m = Model()
    assert ignore_derivatives(m) is m
    _, pb = rrule(ignore_derivatives, 2.0)
    assert pb(1.0) == (NoTangent(), NoTangent())


def test_not_implemented_raises_only_when_used():
    t = not_implemented("no derivative w.r.t. order")
    assert t + ZeroTangent() is t and ZeroTangent() + t is t
    with pytest.raises(NotImplementedTangentError, match="w.r.t. order"):
        t + 1.0
    with pytest.raises(NotImplementedTangentError, match=r"test_rulescore_rule_tools.py:\d+"):
        2.0 * t


class Both(RuleConfig, HasReverseMode, HasForwardsMode):
    def rrule_via_ad(self, f, *args):
        return ("reverse", f(*args))

    def frule_via_ad(self, tangents, f, *args):
        return ("forward", f(*args), tangents)


class Neither(RuleConfig):
    pass


def test_via_ad_delegates_to_config():
    assert rrule_via_ad(Both(), abs, -1.0) == ("reverse", 1.0)
    assert frule_via_ad(Both(), (None, 1.0), abs, -1.0) == ("forward", 1.0, (None, 1.0))


def test_via_ad_without_mode_is_a_clear_error():
    with pytest.raises(ConfigModeError, match="Neither has no reverse mode"):
        rrule_via_ad(Neither(), abs, 1.0)
    with pytest.raises(ConfigModeError, match="Neither has no forward mode"):
        frule_via_ad(Neither(), (None, 1.0), abs, 1.0)


def test_scalar_rule_partials_of_the_wrong_arity_are_refused_at_registration():
    def two(x, y):
        return x * y

    def one(x):
        return x * x

    def optional(x, scale=1.0):
        return x * scale

    with pytest.raises(RuleDefinitionError, match=r"(?s)scalar_rule\(two, .*get 3.*\(x, y, Ω\)"):
        scalar_rule(two, lambda x, Ω: (1.0, 1.0))
    with pytest.raises(RuleDefinitionError, match=r"(?s)scalar_rule\(one, .*get 2.*\(x, Ω\)"):
        scalar_rule(one, lambda x, y, Ω: (2 * x,))
    with pytest.raises(RuleDefinitionError, match=r"scalar_rule\(optional, .*called with 2"):
        scalar_rule(optional, lambda x, Ω: (1.0,))  # optional(x, 2.0) would give it 3
    # partials that take what f passes, or anything, register
    scalar_rule(optional, lambda x, scale=1.0, Ω=None: (scale, x))
    scalar_rule(two, lambda *a: (a[1], a[0]))
