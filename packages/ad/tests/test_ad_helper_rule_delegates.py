"""The rules that ``rules`` gives its helpers with a ``try`` or a library call an
AD cannot follow (det's pushforward, slogdet's solve, the triangular solve):
each delegates to a try-free reference form through the AD. Checked with
rulestest under ad's own config, against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import ad
from rules import _linalg_basic, _linalg_util
from rulescore import rrule
from rulestest import test_frule, test_rrule

CONFIG = ad.ADConfig()
RNG = np.random.default_rng(0)
A = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]])


def test_det_tangent_delegate():
    ȧ = RNG.standard_normal((3, 3))
    d = np.linalg.det(A)
    np.testing.assert_allclose(
        _linalg_basic.det_tangent(A, d, ȧ), _linalg_basic.det_tangent_regular(A, d, ȧ)
    )
    test_rrule(CONFIG, _linalg_basic.det_tangent, A, d, ȧ)
    test_frule(CONFIG, _linalg_basic.det_tangent, A, d, ȧ)


def test_solve_with_a_name_delegate():
    b = RNG.standard_normal(3)
    test_rrule(CONFIG, _linalg_basic._solve_or_explain, "slogdet", A, b)
    test_frule(CONFIG, _linalg_basic._solve_or_explain, "slogdet", A, b)


@pytest.mark.parametrize("lower", [True, False])
def test_triangular_solve_delegate_differentiates_the_triangle_only(lower):
    L = np.tril(A) if lower else np.triu(A)
    b = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(
        _linalg_util.tri_solve(L, b, lower=lower),
        _linalg_util.tri_solve_reference(L, b, lower),
    )
    test_rrule(CONFIG, _linalg_util.tri_solve, L, b, fkwargs={"lower": lower})
    y, pb = rrule(CONFIG, _linalg_util.tri_solve, L, b, lower=lower)
    ā = pb(np.ones_like(y))[1]
    other = np.triu(ā, 1) if lower else np.tril(ā, -1)
    assert not other.any()


def test_times_delegate_is_the_product():
    from rules.extension import times_reusing as _times

    rng = np.random.default_rng(3)
    test_rrule(CONFIG, _times, rng.standard_normal(4), rng.standard_normal(4))
    test_frule(CONFIG, _times, rng.standard_normal(4), rng.standard_normal(4))


def test_det_adjugate_delegate_is_det_times_inverse():
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]])
    d = np.asarray(np.linalg.det(a))  # a 0-d array, as det of a batch of one matrix
    test_rrule(CONFIG, _linalg_basic._det_adjugate, a, d)
    test_frule(CONFIG, _linalg_basic._det_adjugate, a, d)
