"""Interrupts (issue 25, item 7): a ``KeyboardInterrupt`` at any point of a
differentiation (its transform, forward pass or backward pass) leaves ad's state
clean: the next differentiation is right, no pass is left open, no recursion
limit left raised, no transform left half-built. The interrupt is raised by a
trace function at the k-th call event, for many k."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import ad
from ad.runtime import state as _state
from ad.runtime.single_use import ONCE

SOURCE = """
import numpy as np

def helper(v, w):
    return np.tanh(v * w) + v

def f(x, ws):
    s = 0.0
    for w in ws:
        s = s + np.sum(helper(x, w) ** 2)
    return s
"""


def _fresh_module(tmp_path, k):
    path = tmp_path / f"interrupted_{k}.py"
    path.write_text(textwrap.dedent(SOURCE))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _interrupt_at(k):
    count = [0]

    def tracer(frame, event, arg):
        if event == "call":
            count[0] += 1
            if count[0] == k:
                raise KeyboardInterrupt
        return None

    return tracer, count


def _clean():
    assert not getattr(_state._LOCAL, "stack", None)
    assert ONCE.expect is None
    assert _state._DEEP[0] == 0


X = np.array([0.3, -0.2, 0.5])
WS = [0.5, 1.5, -1.0]


def _want(module):
    return ad.gradient(module.f, X, WS)[0]


def _run(module, mode):
    if mode == "gradient":
        return ad.gradient(module.f, X, WS)
    return ad.jvp(module.f, (X, WS), (np.ones(3), None))


def _events(module, mode) -> int:
    tracer, count = _interrupt_at(0)
    sys.settrace(tracer)
    try:
        _run(module, mode)
    finally:
        sys.settrace(None)
    return count[0]


# An interrupt that lands in a generator's finalisation (the collector closing it while
# the tracer is on) is one Python itself ignores: not ad's state.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("first", [True, False], ids=["first call", "warm call"])
@pytest.mark.parametrize("mode", ["gradient", "jvp"])
def test_an_interrupt_anywhere_leaves_the_state_clean(tmp_path, mode, first):
    """The k-th call event of a first call (transform, forward, backward) or of a
    warm one (forward, backward), for k spread over all of them."""
    limit = sys.getrecursionlimit()
    reference = _want(_fresh_module(tmp_path, "reference"))
    warm = _fresh_module(tmp_path, f"{mode}_warm")
    _run(warm, mode)  # transformed: its calls from now on are warm
    total = (
        _events(_fresh_module(tmp_path, f"{mode}_count"), mode) if first else _events(warm, mode)
    )
    ks = sorted(set(np.linspace(1, total - 1, 40).astype(int)))
    interrupted = 0
    for k in ks:
        module = _fresh_module(tmp_path, f"{mode}{k}") if first else warm
        tracer, _ = _interrupt_at(k)
        sys.settrace(tracer)
        try:
            _run(module, mode)
        except KeyboardInterrupt:
            interrupted += 1
        finally:
            sys.settrace(None)
        _clean()
        assert sys.getrecursionlimit() == limit
        np.testing.assert_allclose(ad.gradient(module.f, X, WS)[0], reference)
        _run(module, mode)
        _clean()
    # (a first call's count moves a little as caches of rules fill)
    assert interrupted >= 0.8 * len(ks)
