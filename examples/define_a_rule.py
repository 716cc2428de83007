"""The whole story of a derivative rule: define it, test it, use it.

1. A library defines `softplus` and its rules with `rulescore` alone (its only
   dependency: no AD, no numpy needed).
2. Its test suite checks the rules against finite differences with `rulestest`,
   under pytest, whose `rulestest` plugin turns a failing check into a short report.
3. Any AD that speaks `rulescore` uses the rules: here `ad.gradient` and `ad.jvp`.

Run: python examples/define_a_rule.py           (the tour, which also runs step 2's tests)
     python -m pytest examples/define_a_rule.py (step 2 alone, as a library's CI runs it)
"""

import math
import subprocess
import sys

import pytest

# --- 1. The library: rulescore only -----------------------------------------------
# --8<-- [start:library]
from rulescore import NoTangent, frule, rrule, scalar_rule


def softplus(x):
    """log(1 + exp(x)), computed stably."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


@rrule.register(softplus)
def _(x: float):
    y = softplus(x)

    def softplus_pullback(ȳ):
        return NoTangent(), ȳ * sigmoid(x)

    return y, softplus_pullback


@frule.register(softplus)
def _(ḟ, ẋ, x: float):
    return softplus(x), sigmoid(x) * ẋ


# A function of scalars: give its partial derivatives, get both rules.
def logistic(x):
    return 1 / (1 + math.exp(-x))


scalar_rule(logistic, lambda x, Ω: Ω * (1 - Ω))
# --8<-- [end:library]


# --- 2. The library's tests: rulestest, collected by pytest ---------------------------
# --8<-- [start:tests]
from rulestest import RuleTestFailure, test_frule, test_rrule, test_scalar  # noqa: E402


@pytest.mark.parametrize("x", [-30.0, -1.5, 0.0, 0.3, 2.0, 30.0])
def test_softplus_rules(x):
    test_rrule(softplus, x)
    test_frule(softplus, x)


@pytest.mark.parametrize("x", [-2.0, 0.0, 0.7])
def test_logistic_rules(x):
    test_scalar(logistic, x)


def triple(x):
    return 3.0 * x


@rrule.register(triple)
def _(x: float):
    def triple_pullback(ȳ):
        return NoTangent(), 2.0 * ȳ  # wrong on purpose: the derivative is 3

    return triple(x), triple_pullback


def test_a_wrong_rule_is_caught():
    with pytest.raises(RuleTestFailure, match="disagrees with finite differences"):
        test_rrule(triple, 0.5)


# --8<-- [end:tests]


# --- 3. A user: ad finds the rules --------------------------------------------------
# --8<-- [start:user]
import ad  # noqa: E402


def total_softplus(w, xs):
    return sum(softplus(w * x) for x in xs)


def softplus_without_rule(x):
    """The same source as softplus, with no rule: ad differentiates this code."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


# --8<-- [end:user]


def main():
    print("1. the rules, called directly")
    x = 0.3
    y, pullback = rrule(softplus, x)
    print(f"   softplus({x}) = {y:.6f}, rrule gradient {pullback(1.0)[1]:.9f}")
    print(f"   frule tangent along 1.0: {frule((NoTangent(), 1.0), softplus, x)[1]:.9f}")
    print(f"   logistic'({x}) = {rrule(logistic, x)[1](1.0)[1]:.6f} (from scalar_rule)")

    print("\n2. the library's tests: pytest with the rulestest plugin")
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__]
    print("   $ python -m pytest -q " + __file__, flush=True)
    subprocess.run(run, check=True)
    try:
        test_rrule(triple, 0.5, output_tangent=1.0)
    except RuleTestFailure as failure:
        print("   what a wrong rule's test reports (the plugin shows this, and your line):")
        print("   " + str(failure).replace("\n", "\n   "))

    print("\n3. ad.gradient and ad.jvp use the rules")
    xs = [-1.0, 0.5, 2.0]
    (g, _) = ad.gradient(total_softplus, 0.8, xs)
    want = sum(x * sigmoid(0.8 * x) for x in xs)
    print(f"   d/dw sum(softplus(w x)) at w = 0.8: {g:.9f} (exact {want:.9f})")
    print(f"   ad.jvp(softplus, (0.3,), (1.0,)) = {ad.jvp(softplus, (0.3,), (1.0,))}")
    # At 0, max and abs have kinks: differentiating the source picks a subgradient of
    # each and gets 1.0; the rule knows the function and gives sigmoid(0) = 0.5.
    print(f"   at 0 with the rule: {ad.gradient(softplus, 0.0)[0]}")
    print(f"   at 0 from the source, no rule: {ad.gradient(softplus_without_rule, 0.0)[0]}")
    assert abs(g - want) < 1e-12 and ad.gradient(softplus, 0.0) == (0.5,)


if __name__ == "__main__":
    main()
