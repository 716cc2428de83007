"""Writes into captured or global containers and objects, and into containers
and objects a function builds and hands to code that writes them (issue 18,
item 7; ad.transform.holders, ad.runtime.state): the write happens, and its derivative
flows to the reads that follow, in reverse and forward mode."""

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad

D = {}
HISTORY = []


class State:
    pass


STATE = State()


def zygote_manual(x):  # the Zygote manual's example
    D["x"] = x
    return D["x"] * D["x"]


def appends_to_a_global_list(x):
    HISTORY.append(x * 2.0)
    HISTORY.append(np.sin(x))
    return sum(HISTORY) + HISTORY[-1] * HISTORY[0]


def writes_a_global_object(x):
    STATE.scale = x * 2.0
    return STATE.scale * x + STATE.scale


def make_cached():
    cache = {}

    def f(W, x):
        cache["h"] = np.tanh(W @ x)
        cache["n"] = float(np.sum(cache["h"] ** 2))
        return cache["n"] + cache.get("h")[0]

    return f, cache


def fill(d, k, v):
    d[k] = v


def push(lst, v):
    lst.append(v)


class Acc:
    def __init__(self):
        self.total = 0.0
        self.last = 0.0

    def add(self, v):
        self.total = self.total + v
        self.last = v


def local_dict_filled_by_a_helper(x):
    d = {}
    fill(d, "a", x * x)
    fill(d, "b", np.cos(x))
    return d["a"] * d["b"] + d["a"]


def local_list_pushed_in_a_loop(x):
    acc = []
    for i in range(4):
        push(acc, x**i)
    return sum(acc) * acc[2]


def object_built_without_a_derivative(x):
    a = Acc()
    for k in range(1, 4):
        a.add(x * k)
    return a.total * a.last


def write_then_read_elsewhere(x):
    fill(D, "y", x * 3.0)  # D is handed to fill and read_d: followed in all three
    return read_d(D, "y") * x


def read_d(d, k):
    return d[k]


CASES = [
    (zygote_manual, 5.0),
    (appends_to_a_global_list, 0.7),
    (writes_a_global_object, 1.3),
    (local_dict_filled_by_a_helper, 0.4),
    (local_list_pushed_in_a_loop, 1.1),
    (object_built_without_a_derivative, -0.6),
]


def _reset():
    D.clear()
    HISTORY.clear()


@pytest.mark.parametrize("f, x", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_reverse_and_forward_match_differences(f, x):
    _reset()
    (want,) = fd_gradient(lambda v: (_reset(), f(v))[1], x)
    _reset()
    (g,) = ad.gradient(f, x)
    _reset()
    y, ẏ = ad.jvp(f, (x,), (1.0,))
    _reset()
    assert y == pytest.approx(f(x))
    assert g == pytest.approx(want, rel=1e-6)
    assert ẏ == pytest.approx(want, rel=1e-6)


def test_hand_derived_values_and_the_writes_happen():
    _reset()
    assert ad.gradient(zygote_manual, 5.0) == (10.0,)
    assert D == {"x": 5.0}  # the write happened, as in Python
    _reset()
    assert ad.jvp(zygote_manual, (5.0,), (1.0,)) == (25.0, 10.0)
    # 2x + sin x + sin x * 2x: d/dx = 2 + cos x + 2 sin x + 2x cos x
    _reset()
    x = 0.7
    (g,) = ad.gradient(appends_to_a_global_list, x)
    assert g == pytest.approx(2 + np.cos(x) + 2 * np.sin(x) + 2 * x * np.cos(x))
    assert HISTORY == [2 * x, np.sin(x)]
    # 2x^2 + 2x: 4x + 2
    assert ad.gradient(writes_a_global_object, 1.3) == (pytest.approx(7.2),)
    assert STATE.scale == 2.6
    # (x + 2x + 3x) * 3x = 18 x^2
    assert ad.gradient(object_built_without_a_derivative, 2.0) == (pytest.approx(72.0),)


def test_a_closure_cache_of_arrays():
    f, cache = make_cached()
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((3, 4)), rng.standard_normal(4)
    gW, gx = ad.gradient(f, W, x)
    np.testing.assert_allclose(cache["h"], np.tanh(W @ x))  # the writes happened
    np.testing.assert_allclose(gW, fd_gradient(lambda w: f(w, x), W)[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, fd_gradient(lambda v: f(W, v), x)[0], rtol=1e-6, atol=1e-8)
    dW = rng.standard_normal((3, 4))
    _, ẏ = ad.jvp(f, (W, x), (dW, np.zeros(4)))
    assert ẏ == pytest.approx(np.sum(gW * dW), rel=1e-6)


def test_a_global_written_by_one_function_and_read_by_another():
    _reset()
    # D is written with a derivative in fill, then read through read_d: 3x^2
    assert ad.gradient(write_then_read_elsewhere, 2.0) == (12.0,)
    assert ad.jvp(write_then_read_elsewhere, (2.0,), (1.0,)) == (12.0, 12.0)


def test_a_plain_call_reading_a_followed_global_is_refused():
    box = {}

    def put(x):
        box["v"] = x

    def get():
        return box["v"]

    def f(x):
        put(x)
        return get() * 2.0  # get() has no differentiated input: it runs as plain Python

    for run in (lambda: ad.gradient(f, 1.0), lambda: ad.jvp(f, (1.0,), (1.0,))):
        with pytest.raises(ad.MutationError, match=r"get \(called by f.*'box'.*\n.*To fix: pass"):
            run()

    def g(x):
        put(x)
        return box["v"] * 2.0  # read here: differentiated (box is followed here too)

    assert ad.gradient(g, 1.0) == (2.0,)
    assert ad.jvp(g, (1.0,), (1.0,)) == (2.0, 2.0)


def test_reads_before_the_write_see_the_old_value():
    log = {"x": 3.0}

    def f(x):
        old = log["x"]  # a constant: written before this differentiation
        log["x"] = x * old
        return log["x"] + old * x

    assert ad.gradient(f, 2.0) == (6.0,)
    log["x"] = 3.0
    assert ad.jvp(f, (2.0,), (1.0,)) == (12.0, 6.0)
