"""map, functools.reduce, sorted and filter, checked with rulestest."""

from __future__ import annotations

import functools
import math
import operator

import numpy as np
import pytest
from rules_testing import RulesOnly

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule
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


# --- pullbacks that must run (the ``must_run`` convention) ----------------------------


class MustRun:
    """A pullback that must run even on a zero cotangent (as ad's ``Stateful``)."""

    must_run = True

    def __init__(self, pb):
        self.pb = pb

    def __call__(self, ȳ):
        return self.pb(ȳ)


class Recording(RulesOnly):
    """``rrule_via_ad`` by rules whose pullbacks record the cotangents they run
    with; a pullback is a ``MustRun`` when ``must`` says so of the call's last argument."""

    def __init__(self, must):
        self.must = must
        self.ran = []

    def rrule_via_ad(self, f, *args):
        y, pb = super().rrule_via_ad(f, *args)

        def recording_pullback(ȳ):
            self.ran.append((args[-1], ȳ))
            return pb(ȳ)

        return y, (MustRun(recording_pullback) if self.must(args[-1]) else recording_pullback)


def test_map_runs_an_item_pullback_that_must_run_on_a_zero_cotangent():
    config = Recording(lambda x: x == 2.0)
    ys, pb = rrule(config, map, math.sin, [1.0, 2.0, 3.0])
    assert ys == [math.sin(1.0), math.sin(2.0), math.sin(3.0)]
    assert type(pb) is MustRun  # its caller must run it too
    assert pb(ZeroTangent())[2] == ZeroTangent()
    assert config.ran == [(2.0, ZeroTangent())]  # only the one that must run
    config.ran.clear()
    out = pb([ZeroTangent(), ZeroTangent(), 2.0])
    assert config.ran == [(3.0, 2.0), (2.0, ZeroTangent())]
    assert out[2] == Tangent[list](ZeroTangent(), ZeroTangent(), 2.0 * math.cos(3.0))


def test_map_and_reduce_skip_pullbacks_that_may_be_skipped():
    config = Recording(lambda x: False)
    _, pb = rrule(config, map, math.sin, [1.0, 2.0])
    assert type(pb) is not MustRun
    pb([ZeroTangent(), 1.0])
    assert config.ran == [(2.0, 1.0)]
    _, pb = rrule(config, functools.reduce, operator.mul, [1.0, 2.0, 3.0])
    assert type(pb) is not MustRun


def test_reduce_returns_a_pullback_that_must_run():
    config = Recording(lambda x: x == 3.0)
    y, pb = rrule(config, functools.reduce, operator.mul, [1.0, 2.0, 3.0])
    assert y == 6.0 and type(pb) is MustRun
    assert pb(1.0)[2] == Tangent[list](6.0, 3.0, 2.0)  # d(x0 x1 x2)/dxi
    assert [x for x, _ in config.ran] == [3.0, 2.0]


# --- a dict argument: iterating it yields its keys, which carry no derivative --------

DICT = {2.0: 0.7, 0.5: -1.3, 1.5: 0.4}  # float keys: a key given a value's tangent shows
DICT_TANGENT = Tangent[dict]({2.0: 0.1, 0.5: 0.2})  # fewer keys than the dict


FORWARD = [(sorted, DICT), (sorted, DICT.keys()), (max, DICT), (min, DICT), (sum, DICT)]


@pytest.mark.parametrize("call", FORWARD, ids=lambda c: f"{c[0].__name__}-{type(c[1]).__name__}")
def test_iterating_a_dict_gives_its_keys_no_tangent(call):
    """Not the dict's value tangents, entry by entry (a float key got one)."""
    f, xs = call
    y, ẏ = frule((None, DICT_TANGENT), f, xs)
    assert y == f(xs)
    assert all(isinstance(t, NoTangent) for t in (ẏ if isinstance(ẏ, list) else [ẏ]))
    y, ẏ = frule((None, None, DICT_TANGENT), filter, None, DICT)
    assert ẏ == [NoTangent()] * 3


REVERSE = [
    (sorted, DICT),
    (sorted, DICT.keys()),
    (max, DICT),
    (sum, DICT),
    (filter, None, DICT),
    (map, abs, DICT),
    (functools.reduce, operator.add, DICT),
]


@pytest.mark.parametrize("call", REVERSE, ids=lambda c: f"{c[0].__name__}-{type(c[-1]).__name__}")
def test_iterating_a_dict_gives_it_no_cotangent(call):
    """Not a list of its keys' cotangents (which a ``Tangent[dict]`` cannot take)."""
    f, *args = call
    y, pb = rrule(CONFIG, f, *args) if f in (map, functools.reduce) else rrule(f, *args)
    ȳ = [1.0] * len(y) if isinstance(y, list) else 1.0
    assert isinstance(pb(ȳ)[-1], NoTangent)
