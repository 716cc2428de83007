"""The rules of the rules' own helpers (``quietly``, tanh's in-place derivative,
bookkeeping declared non-differentiable), checked with rulestest. An AD that
differentiates rule bodies (nested differentiation) relies on them; the
delegates to try-free reference forms need a real AD and are checked in ad's
tests (test_ad_helper_rule_delegates.py)."""

from __future__ import annotations

import numpy as np
import pytest
from rules_testing import N, RulesOnly

import rules  # noqa: F401  (registers the rules)
from rules import _helper_rules, _linalg_util
from rules._numpy_elementwise import _one_minus_square
from rules._quiet import quietly
from rulescore import rrule
from rulestest import test_frule, test_rrule

CONFIG = RulesOnly()
RNG = np.random.default_rng(0)


def test_quietly_computes_without_warnings():
    with np.errstate(all="raise"):
        out = quietly(lambda x: np.where(x == 0, 0.0, 1 / x), np.array([0.0, 2.0]))
    np.testing.assert_array_equal(out, [0.0, 0.5])


@pytest.mark.parametrize("f", [np.sin, np.log, np.sqrt])
def test_quietly_has_the_rules_of_its_function(f):
    x = RNG.uniform(0.5, 2.0, 4)
    test_rrule(CONFIG, quietly, f, x)
    test_frule(CONFIG, quietly, f, x)


def test_one_minus_square():
    x = RNG.uniform(-0.9, 0.9, 5)
    test_rrule(_one_minus_square, x)
    test_frule(_one_minus_square, x)
    test_rrule(_one_minus_square, 0.3)


def test_bookkeeping_is_non_differentiable():
    for f in (_linalg_util.bind, _linalg_util.is_zero, _helper_rules._util.is_zero):
        y, pb = rrule(f, *(_args_for(f)))
        assert all(type(c).__name__ == "NoTangent" for c in pb(1.0))


def _args_for(f):
    if f is _linalg_util.bind:
        return (np.linalg.norm, (np.ones(2),), {})
    return (np.ones(2),)


def _reshape_adjoint(ȳ, x, shape):
    return ȳ.reshape(x.shape)


def _trace_adjoint(ȳ, x):
    return ȳ * np.eye(*x.shape)


@pytest.mark.parametrize("case", ["getitem", "getitem_repeats", "reshape", "trace"])
def test_apply_adjoint_is_linear_with_the_forward_map_as_transpose(case):
    """A linear rule's pullback goes through ``apply_adjoint``, whose own rules let
    an AD differentiate the pullback again (reverse over reverse)."""
    import operator

    from rules._numpy_indexing import scatter
    from rules._numpy_linear import apply_adjoint

    x = RNG.standard_normal((3, 4))
    if case == "getitem":
        fns, ȳ, rest = (scatter, operator.getitem), RNG.standard_normal(2), ((1, slice(1, 3)),)
    elif case == "getitem_repeats":
        fns, ȳ, rest = (scatter, operator.getitem), RNG.standard_normal((3, 4)), ([0, 0, 2],)
    elif case == "reshape":
        fns, ȳ, rest = (_reshape_adjoint, np.reshape), RNG.standard_normal((2, 6)), ((2, 6),)
    else:
        fns, ȳ, rest = (_trace_adjoint, np.trace), 1.5, ()
    args = (N(fns[0]), N(fns[1]), N(False), ȳ, N(x), N(rest), N({}))
    test_rrule(apply_adjoint, *args)
    test_frule(apply_adjoint, *args)
