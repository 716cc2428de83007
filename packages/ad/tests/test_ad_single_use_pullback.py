"""A generated adjoint run once frees its tape as it goes (``_runtime.claim``).

``gradient``/``withgradient`` call the pullback once and hand it the signal; it
passes down to the pullbacks of the user functions it calls (through loops,
methods, keyword calls, constructors). Every other caller (``ad.pullback``'s
pullback, ``jacobian``, ``rrule_via_ad``, code inside a hook) keeps a pullback
that may be called again: the double-call tests fail if the signal leaked there.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import weakref

import numpy as np
import pytest

import ad
from ad.runtime import reverse as _runtime
from rulescore import HasReverseMode, NoTangent, rrule, rrule_via_ad

# --- probes: a tape entry holding a marker, and a hook reporting whether it died ---


class _Marker:
    pass


_REFS: list = []


def hold(x):
    """``x``; its pullback holds a fresh marker (watched through ``_REFS``)."""
    return x


@rrule.register(hold)
def _(x):
    marker = _Marker()
    _REFS.append(weakref.ref(marker))

    def hold_pullback(ȳ):
        assert marker is not None
        return NoTangent(), ȳ

    return x, hold_pullback


def probe(seen: list):
    """A hook recording, when the gradient reaches it, whether every marker died."""

    def look(g):
        seen.append(all(r() is None for r in _REFS))
        return g

    return look


@pytest.fixture(autouse=True)
def _fresh_refs():
    _REFS.clear()
    yield
    assert _runtime.ONCE.expect is None  # never left set after a gradient
    _REFS.clear()


# --- functions whose tape has depth-0 entries, stacks, and calls of user functions ---


def inner(x, n=2):
    s = x * 1.0
    for _ in range(n):
        s = s * x + np.sin(s)
    return hold(s)


def loss_straight(x, seen):
    y = ad.hook(probe(seen), x * 2.0)  # reached last in the backward pass
    z = hold(np.exp(y) * y)
    return np.sum(z**2)


def loss_loop(x, seen):
    y = ad.hook(probe(seen), x + 0.0)
    for _ in range(3):
        y = hold(np.tanh(y) * y)
    return np.sum(y)


def loss_nested(x, seen):
    y = ad.hook(probe(seen), x * 1.0)
    return np.sum(inner(y))


def loss_keyword(x, seen):
    y = ad.hook(probe(seen), x * 1.0)
    return np.sum(inner(y, n=3))


class Model:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return hold(self.w * x)

    def apply(self, x):
        return inner(self.w * x)


def loss_method(x, seen):
    y = ad.hook(probe(seen), x * 1.0)
    m = Model(1.5)
    return np.sum(m.apply(y) + m(y))


def loss_partial(x, seen):
    y = ad.hook(probe(seen), x * 1.0)
    return np.sum(functools.partial(inner, n=1)(y))


@dataclasses.dataclass
class Pair:
    a: object
    b: object


class Scaled:
    def __init__(self, x):
        self.v = inner(x) * 2.0


def loss_constructor(x, seen):
    y = ad.hook(probe(seen), x * 1.0)
    return np.sum(Scaled(y).v + Pair(hold(y), 1.0).a)


LOSSES = [loss_straight, loss_loop, loss_nested, loss_keyword, loss_method, loss_partial]
LOSSES.append(loss_constructor)
X = np.array([0.3, -0.7, 1.1])


def _reference(loss, x):
    """The gradient by central differences."""
    eps = 1e-6
    out = np.zeros_like(x)
    for i in range(x.size):
        d = np.zeros_like(x)
        d[i] = eps
        out[i] = (loss(x + d, []) - loss(x - d, [])) / (2 * eps)
    return out


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_gradient_frees_the_tape_as_it_goes(loss):
    seen: list = []
    (g,) = ad.gradient(lambda x: loss(x, seen), X)
    np.testing.assert_allclose(g, _reference(loss, X), rtol=1e-6, atol=1e-8)
    assert _REFS and seen == [True]  # every marker was freed before the hook ran


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_pullback_called_twice_keeps_its_tape(loss):
    seen: list = []
    y, back = ad.pullback(lambda x: loss(x, seen), X)
    (g1,) = back(1.0)
    (g2,) = back(2.0)
    np.testing.assert_allclose(g1, _reference(loss, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g2, 2 * g1)
    assert seen == [False, False]


def vector_fn(x):
    out = x * 1.0
    for _ in range(2):
        out = inner(out) * x
    return hold(out)


def test_jacobian_runs_the_pullback_once_per_row():
    (J,) = ad.jacobian(vector_fn, X, mode="reverse")
    eps = 1e-6
    want = np.stack(
        [(vector_fn(X + eps * e) - vector_fn(X - eps * e)) / (2 * eps) for e in np.eye(3)], 1
    )
    np.testing.assert_allclose(J, want, rtol=1e-6, atol=1e-8)


def test_pullback_inside_a_backward_pass_is_not_single_use():
    # A hook runs inside gradient's single-use backward pass; a pullback it takes
    # and calls twice must keep its tape (the signal must not leak into it).
    results = []

    def look(g):
        y, back = ad.pullback(lambda x: np.sum(inner(x) * x), X)
        results.append((back(1.0)[0], back(3.0)[0]))
        results.append(ad.jacobian(vector_fn, X, mode="reverse")[0])
        return g

    (g,) = ad.gradient(lambda x: np.sum(ad.hook(look, inner(x))), X)
    (a, b), J = results
    np.testing.assert_allclose(b, 3 * a)
    np.testing.assert_allclose(J, ad.jacobian(vector_fn, X, mode="reverse")[0])
    np.testing.assert_allclose(g, ad.pullback(lambda x: np.sum(inner(x)), X)[1](1.0)[0])


def test_gradient_inside_a_backward_pass():
    def look(g):
        return g * ad.gradient(lambda x: np.sum(inner(x)), X)[0]

    (g,) = ad.gradient(lambda x: np.sum(ad.hook(look, x * 1.0)), X)
    np.testing.assert_allclose(g, ad.gradient(lambda x: np.sum(inner(x)), X)[0])


# --- a rule that keeps rrule_via_ad's pullback and calls it again ---------------------


def scalar_inner(x):
    s = x * 1.0
    for _ in range(2):
        s = s * x + 0.5
    return s * x


def cached(x):
    return scalar_inner(x)


_CACHE: dict = {}


@rrule.register(cached, config=HasReverseMode)
def _(config, x: float):
    if x not in _CACHE:
        _CACHE[x] = rrule_via_ad(config, scalar_inner, x)
    return _CACHE[x]  # the same pullback for every call at x: it must stay callable


def test_rule_reusing_an_rrule_via_ad_pullback():
    _CACHE.clear()
    g1 = ad.gradient(lambda x: cached(x) * 2.0, 0.7)[0]
    g2 = ad.gradient(lambda x: cached(x) * 2.0, 0.7)[0]  # the cached pullback again
    assert g1 == g2 == pytest.approx(ad.gradient(lambda x: scalar_inner(x) * 2.0, 0.7)[0])
    _CACHE.clear()


def test_checkpoint_and_nested_gradient():
    def f(x):
        return np.sum(ad.checkpoint(inner, x) * x)

    (g,) = ad.gradient(f, X)
    y, back = ad.pullback(f, X)
    np.testing.assert_allclose(back(1.0)[0], g)
    np.testing.assert_allclose(back(1.0)[0], g)

    def scalar(x):
        s = x
        for _ in range(3):
            s = s * x + 0.5
        return s

    # reverse over forward: the derivative of a gradient (its own rrule)
    d2 = ad.gradient(lambda x: ad.gradient(scalar, x)[0], 0.7)[0]
    h = 1e-5
    fd = (ad.gradient(scalar, 0.7 + h)[0] - ad.gradient(scalar, 0.7 - h)[0]) / (2 * h)
    assert d2 == pytest.approx(fd, rel=1e-6)


def test_params_gradient_and_pullback():
    w = np.array([1.0, 2.0, -1.0])

    def model():
        return np.sum(inner(w * X) * w)

    ps = ad.Params([w])
    g = ad.gradient(model, ps)[w]
    y, back = ad.pullback(model, ps)
    np.testing.assert_allclose(back(1.0)[w], g)
    np.testing.assert_allclose(back(2.0)[w], 2 * g)


def test_buffer_pullback_twice():
    def f(x):
        buf = ad.Buffer(x)
        for i in range(3):
            buf[i] = hold(x[i] * x[(i + 1) % 3])
        return np.sum(buf.copy() ** 2)

    (g,) = ad.gradient(f, X)
    y, back = ad.pullback(f, X)
    np.testing.assert_allclose(back(1.0)[0], g)
    np.testing.assert_allclose(back(1.0)[0], g)


def test_threads_get_their_own_gradients():
    errors = []

    def work(k):
        try:
            for _ in range(30):
                y, back = ad.pullback(lambda x: np.sum(inner(x) * k), X)
                g = ad.gradient(lambda x: np.sum(inner(x) * k), X)[0]
                np.testing.assert_allclose(back(1.0)[0], g)
                np.testing.assert_allclose(back(1.0)[0], g)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1.0, 2.0, 3.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
