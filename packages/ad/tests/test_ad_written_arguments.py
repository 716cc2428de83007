"""The function an entry point differentiates writes into a user object it was
given: a method recording ``self.last``, an optimizer step updating its state, a
callable model filling a cache. These were refused ("writes into its argument
'self' and does not return it", with a fix that cannot apply to a method); the
entry points now follow such objects by identity from the start
(``ad.api.written_arguments``), as the transform does for an object it hands to
code that may write it. Checked against hand-derived values and central
differences in reverse and forward mode; the objects end as Python leaves them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ad_testing import fd_gradient

import ad
from ad.api.written_arguments import RECEIVER, written_arguments


class Model:
    def __init__(self, w):
        self.w = w
        self.last = None

    def loss(self, a):
        out = self.w * a * a
        self.last = out  # recorded for the user
        return out + 0.0 * self.last


class Opt:
    def __init__(self, lr):
        self.lr = lr
        self.steps = 0
        self.hist = []

    def step(self, w):
        w = w - self.lr * 2.0 * w
        self.steps += 1
        self.hist.append(w)
        return w


def train(opt, w):  # f = (w(1-2lr))² + lr·w(1-2lr)
    w = opt.step(w)
    opt.last = w * w
    return opt.last + opt.lr * w


def train_hand(lr, w):
    c = 1 - 2 * lr
    return (-4 * w * w * c + w * c - 2 * lr * w, 2 * w * c * c + lr * c)


class Cached:
    def __init__(self):
        self.cache = {}

    def __call__(self, x):
        self.cache["y"] = math.sin(x)
        return self.cache["y"] * x


def test_a_bound_method_writing_self():
    m = Model(2.0)
    a = 1.3
    assert ad.gradient(m.loss, a) == (pytest.approx(4 * a),)
    assert m.last == pytest.approx(2.0 * a * a)  # the write happened, as in Python
    assert ad.jvp(m.loss, (a,), (1.0,))[1] == pytest.approx(4 * a)
    assert fd_gradient(m.loss, a)[0] == pytest.approx(4 * a, rel=1e-6)
    g_m, g_a = ad.gradient(Model.loss, m, a)  # unbound: the object is differentiated too
    assert g_m.w == pytest.approx(a * a) and g_a == pytest.approx(4 * a)


def test_an_optimizer_step_updating_its_state():
    lr, w = 0.1, 1.5
    opt = Opt(lr)
    g_opt, g_w = ad.gradient(train, opt, w)
    want_lr, want_w = train_hand(lr, w)
    assert g_opt.lr == pytest.approx(want_lr) and g_w == pytest.approx(want_w)
    assert (opt.steps, len(opt.hist)) == (1, 1)
    assert fd_gradient(lambda w: train(Opt(lr), w), w)[0] == pytest.approx(want_w, rel=1e-6)
    assert fd_gradient(lambda lr: train(Opt(lr), w), lr)[0] == pytest.approx(want_lr, rel=1e-6)
    assert ad.jvp(train, (Opt(lr), w), (None, 1.0))[1] == pytest.approx(want_w)


def test_a_callable_object_filling_a_cache():
    m = Cached()
    x = 0.5
    want = math.cos(x) * x + math.sin(x)
    assert ad.gradient(m, x)[0] == pytest.approx(want)
    assert m.cache == {"y": pytest.approx(math.sin(x))}
    assert ad.jvp(Cached(), (x,), (1.0,))[1] == pytest.approx(want)


def test_only_objects_the_function_may_write_are_followed():
    class P:
        def __init__(self, a):
            self.a = a

    def reads(p, x):
        return np.sum(p.a * x)

    p, x = P(np.ones(2)), np.ones(2)
    assert written_arguments(reads, (p, x)) == []  # read-only: the fast reads stay
    assert written_arguments(train, (Opt(0.1), 1.0)) == [0]
    assert written_arguments(Model(1.0).loss, (1.0,)) == [RECEIVER]


class Layer:
    """A layer that records its output when called."""

    def __init__(self, s):
        self.s = s
        self.out = None

    def __call__(self, x):
        self.out = math.tanh(self.s * x)
        return self.out


def built_and_called(x):
    return Layer(2.0)(x)


def called_then_read(x):
    layer = Layer(2.0)
    y = layer(x)
    return y + layer.out * x  # tanh(2x)(1 + x)


@pytest.mark.parametrize(
    ("f", "hand"),
    [
        (Layer(2.0), lambda x: 2 / math.cosh(2 * x) ** 2),
        (built_and_called, lambda x: 2 / math.cosh(2 * x) ** 2),
        (called_then_read, lambda x: 2 / math.cosh(2 * x) ** 2 * (1 + x) + math.tanh(2 * x)),
    ],
    ids=["top level", "built and called", "called, then its field read"],
)
def test_a_callable_object_writing_its_field(f, hand):
    # each was refused ("writes into its argument 'self'"), a fix that cannot apply
    x = 0.3
    assert ad.gradient(f, x)[0] == pytest.approx(hand(x))
    assert ad.jvp(f, (x,), (1.0,))[1] == pytest.approx(hand(x))
    assert fd_gradient(f, x)[0] == pytest.approx(hand(x), rel=1e-6)


def test_a_read_only_callable_object_is_not_followed():
    class Model:
        def __init__(self):
            self.w = np.ones(2)

        def __call__(self, x):
            return self.w @ x

    assert written_arguments(Model(), (np.ones(2),)) == []
    assert written_arguments(Layer(1.0), (1.0,)) == [RECEIVER]
