"""A first tour of ad: gradients of plain Python and numpy code.

Run: python examples/quickstart.py
"""

import math
from dataclasses import dataclass

import numpy as np

import ad


def poly(x):
    return 3 * x**2 + 2 * x + 1


@dataclass
class Point:
    x: float
    y: float


def dist(p):
    return math.sqrt(p.x**2 + p.y**2)


def pow_loop(x, n):
    r = 1.0
    for _ in range(n):
        r = r * x
    return r


def wave(x):
    return math.sin(x)


def loss(W, b, X, y):
    """Mean squared error of a linear model; written as ordinary numpy."""
    pred = X @ W + b
    return np.mean((pred - y) ** 2)


def main():
    print("d/dx (3x^2 + 2x + 1) at 5:", ad.gradient(poly, 5))
    print("gradient of dist at (3, 4):", ad.gradient(dist, Point(3.0, 4.0)))
    print("d/dx x^n by a loop at (5, 3):", ad.gradient(pow_loop, 5.0, 3))

    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3
    W, b = np.zeros(3), 0.0
    first = loss(W, b, X, y)
    for _ in range(200):
        gW, gb, _, _ = ad.gradient(loss, W, b, X, y)
        W, b = W - 0.1 * gW, b - 0.1 * gb
    last = loss(W, b, X, y)
    print(f"linear regression by gradient descent: loss {first:.3f} -> {last:.2e}")
    print("fitted weights:", np.round(W, 3), "bias:", round(b, 3))
    assert last < 1e-6 * first

    # ad differentiates by writing Python: code_adjoint shows what it wrote for a
    # function. The forward pass (at the end) calls the rule for math.sin through
    # _ad_rcall and keeps its pullback; _ad_back calls it with the output's cotangent.
    # (Try pow_loop: its adjoint runs the loop backwards.)
    print("\nThe code ad generates for wave(x) = math.sin(x):")
    print(ad.code_adjoint(wave, 1.0))


if __name__ == "__main__":
    main()
