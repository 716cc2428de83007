"""Define derivative rules for your own function with rulescore, and use them.

Run: python examples/define_a_rule.py
"""

import math

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


# A scalar function: give the partials, get both rules.
def logistic(x):
    return 1 / (1 + math.exp(-x))


scalar_rule(logistic, lambda x, Ω: Ω * (1 - Ω))


def main():
    x = 0.3
    y, pullback = rrule(softplus, x)
    (_, dx) = pullback(1.0)
    h = 1e-6
    fd = (softplus(x + h) - softplus(x - h)) / (2 * h)
    print(f"softplus({x}) = {y:.6f}")
    print(f"rrule gradient {dx:.9f}  finite difference {fd:.9f}")
    _, ẏ = frule((NoTangent(), 1.0), softplus, x)
    print(f"frule tangent  {ẏ:.9f}")
    _, pb = rrule(logistic, x)
    print(f"logistic'({x}) = {pb(1.0)[1]:.6f}")
    assert abs(dx - fd) < 1e-8 and abs(ẏ - fd) < 1e-8


if __name__ == "__main__":
    main()
