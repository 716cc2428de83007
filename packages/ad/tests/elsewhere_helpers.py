"""Helpers of another module than their callers', for
``test_ad_helpers_of_other_modules.py`` (inlined across modules)."""

import math

import numpy as np

RATE = 2.0


def mse(W, b, X, y):
    out = np.tanh(X @ W + b)
    return np.mean((out - y) ** 2)


def smooth(x):
    return math.sqrt(x * x + 1.0) + abs(x)


def uses_rate(x):
    return RATE * x  # a global that is no module: the helper stays a call


def calls_its_own(x):
    return smooth(x) * 2.0  # a helper of its own module: stays a call


def checked(x):
    if x < 0:
        raise ValueError("negative")  # the line a traceback must show
    return 4.0 * x
