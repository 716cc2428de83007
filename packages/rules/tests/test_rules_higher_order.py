"""map, functools.reduce, sorted and filter, checked with rulestest."""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
import pytest
from rules_testing import RulesOnly

import rules  # noqa: F401  (registers the rules)
from rulescore import frule, rrule
from rulestest import test_frule, test_rrule

CONFIG = RulesOnly()


def check_list_rule(config_args, f, args, seq_index):
    """Check a rule whose primal is a list where Python gives an iterator.

    rulestest compares primals with ``f(*args)`` (a lazy map/filter object), so
    here the list is compared with ``list(f(*args))`` and the pullback of the
    sequence argument with central differences of ``<ȳ, list(f(*args))>``.
    """
    y, pb = rrule(*config_args, f, *args)
    assert y == list(f(*args))
    rng = np.random.default_rng(0)
    ȳ = list(rng.normal(size=len(y)))
    xs = np.asarray(args[seq_index], dtype=float)
    got = np.asarray(pb(ȳ)[1 + seq_index], dtype=float)
    h = 1e-6
    for i in range(xs.size):
        plus, minus = xs.copy(), xs.copy()
        plus[i] += h
        minus[i] -= h

        def at(v):
            a = list(args)
            a[seq_index] = list(v)
            return np.dot(ȳ, list(f(*a)))

        assert got[i] == pytest.approx((at(plus) - at(minus)) / (2 * h), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("xs", [[0.1, 0.7, -0.3], (0.5, 1.5), np.array([0.2, 0.4])])
def test_map_one_sequence(xs):
    check_list_rule((CONFIG,), map, (math.sin, xs), 1)


def test_map_two_sequences():
    check_list_rule((CONFIG,), map, (operator.mul, [1.0, 2.0, 3.0], [0.5, -1.0, 2.0]), 1)
    check_list_rule((CONFIG,), map, (operator.mul, [1.0, 2.0, 3.0], [0.5, -1.0, 2.0]), 2)


@pytest.mark.parametrize("init", [(), (2.0,)])
def test_reduce(init):
    test_rrule(CONFIG, functools.reduce, operator.mul, [1.5, -2.0, 0.5], *init)


@pytest.mark.parametrize("kw", [{}, {"reverse": True}, {"key": abs}])
def test_sorted(kw):
    test_rrule(sorted, [0.3, -2.0, 1.0, 0.5], fkwargs=kw)


def test_filter():
    check_list_rule((), filter, (lambda v: v > 0, [0.3, -2.0, 1.0, 0.7]), 1)


def test_map_without_reverse_mode_config_has_no_rule():
    assert rrule(map, math.sin, [1.0]) is None


@pytest.mark.parametrize("init", [(), (2.0,)])
def test_reduce_frule(init):
    test_frule(CONFIG, functools.reduce, operator.mul, [1.5, -2.0, 0.5], *init)


@pytest.mark.parametrize("kw", [{}, {"reverse": True}, {"key": abs}])
def test_sorted_frule(kw):
    test_frule(sorted, [0.3, -2.0, 1.0, 0.5], fkwargs=kw)


def test_map_and_filter_frules_push_tangents_elementwise():
    ys, ẏs = frule(CONFIG, (None, None, [1.0, 2.0]), map, math.sin, [0.0, 0.5])
    assert ys == [0.0, math.sin(0.5)] and ẏs == [1.0, 2.0 * math.cos(0.5)]
    ys, ẏs = frule((None, None, [1.0, 2.0, 3.0]), filter, lambda v: v > 0, [0.3, -2.0, 1.0])
    assert ys == [0.3, 1.0] and ẏs == [1.0, 3.0]
