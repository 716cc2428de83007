"""Recursion depth (issue 25, item 5): a recursive function differentiates as deep
as Python runs it plainly, in each mode; the recursion limit ad raises for the
time of a differentiation (``ad.runtime.state.deep``) is put back afterwards, after an
error too, and while several threads differentiate it stays raised until the
last one ends."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import ad


def countdown(x, n):
    if n == 0:
        return x
    return countdown(x * 1.0001 + 0.0, n - 1)


def _deepest(run) -> int:
    lo, hi = 1, 4 * sys.getrecursionlimit()
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            run(mid)
            lo = mid
        except RecursionError:
            hi = mid - 1
    return lo


@pytest.mark.parametrize(
    "mode",
    [
        lambda n: ad.gradient(countdown, 1.0, n),
        lambda n: ad.jvp(countdown, (1.0, n), (1.0, None)),
        lambda n: ad.pullback(countdown, 1.0, n)[1](1.0),
    ],
    ids=["gradient", "jvp", "pullback"],
)
def test_differentiated_recursion_reaches_the_depth_python_reaches(mode):
    limit = sys.getrecursionlimit()
    plain = _deepest(lambda n: countdown(1.0, n))
    assert _deepest(mode) >= plain - 5  # a few frames of the test's own
    assert sys.getrecursionlimit() == limit


def test_a_deep_derivative_is_right():
    g = ad.gradient(countdown, 2.0, 800)[0]
    assert g == pytest.approx(1.0001**800)
    h = ad.hessian(lambda v: countdown(v[0] * v[1], 300), np.array([1.0, 2.0]))
    np.testing.assert_allclose(h, [[0.0, 1.0001**300], [1.0001**300, 0.0]])


def test_the_limit_is_put_back_after_an_error_and_kept_if_the_program_changed_it():
    limit = sys.getrecursionlimit()
    with pytest.raises(ZeroDivisionError):
        ad.gradient(lambda x: x / 0.0, 1.0)
    assert sys.getrecursionlimit() == limit

    def changes_it(x):
        sys.setrecursionlimit(limit + 123)
        return x * 2.0

    try:
        assert ad.gradient(changes_it, 1.0) == (2.0,)
        assert sys.getrecursionlimit() == limit + 123  # the program's choice stands
    finally:
        sys.setrecursionlimit(limit)


def test_threads_keep_the_limit_raised_until_the_last_one_ends():
    limit = sys.getrecursionlimit()
    errors: list = []
    start = threading.Barrier(4)

    def work():
        try:
            start.wait()
            for _ in range(5):
                assert ad.gradient(countdown, 1.0, 700)[0] == pytest.approx(1.0001**700)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sys.getrecursionlimit() == limit
