"""Call-site activity: a Python function called with arguments that carry no
derivative is transformed with those parameters inactive.

The caller's transform knows which of a call's positional arguments are
constants or inactive names; for a name that resolves to a plain Python function
it emits ``_ad_rcall_masked(mask, f, ...)``, and ``f``'s transform (cached per
mask) starts its activity analysis without those parameters. Gradients are the
same bits as with every parameter active; what only the inactive cotangents
needed is neither computed nor kept.
"""

import math
import tracemalloc

import numpy as np
import pytest
from ad_testing import same_bits

import ad
from ad.transform import adjoint_source, cache
from ad.transform.reverse import _Gen
from rulescore import NoTangent, rrule

# What is checked is how calls pass the activity of their arguments: the helpers
# here must stay calls (``ad.transform.inlining`` would inline them).
pytestmark = pytest.mark.usefixtures("no_inlining")


def scale(x, c):
    return c * math.sin(x)


def rebind(x, c):
    c = c * x  # an inactive parameter made active by the body
    return c * c


def with_default(x, c, k=2.0):
    return k * x * c


def star(x, *rest):
    return x * sum(rest)


def countdown(x, n):
    if n == 0:
        return x
    return countdown(x * 1.5, n - 1)


def rows(W, xs):
    h = np.zeros(W.shape[0])
    for x in xs:
        h = np.tanh(W @ x + h)
    return np.sum(h)


def caller_constant(x):
    return scale(x, 3.0)


def caller_rebind(x):
    return rebind(x, 0.5) + rebind(0.25, x)


def caller_default(x):
    return with_default(x, 4.0) + with_default(x, x, 0.5)


def caller_star(x):
    return star(x, 1.0, 2.0) + star(2.0, x)


def caller_recursive(x):
    return countdown(x, 3)


def fill(lst, x):
    lst.append(x * 2.0)
    return lst


def setk(d, x):
    d["k"] = x * x
    return d


def caller_fills_an_inactive_list(x):
    empty = []
    lst = fill(empty, x)  # the callee makes its inactive parameter carry x
    return lst[0] * x


def caller_sets_an_inactive_dict(x):
    d0 = {}
    d = setk(d0, x)
    return d["k"] + x


PROGRAMS = [
    (caller_fills_an_inactive_list, 3.0),
    (caller_sets_an_inactive_dict, 3.0),
    (caller_constant, 0.7),
    (caller_rebind, 1.3),
    (caller_default, -0.4),
    (caller_star, 0.9),
    (caller_recursive, 1.1),
]


def _without_masks(f, *args):
    """The gradient with every call's arguments treated as active."""
    saved = _Gen.inactive_mask
    _Gen.inactive_mask = lambda self, func, args: 0
    cache._CACHE.clear()
    try:
        return ad.gradient(f, *args)
    finally:
        _Gen.inactive_mask = saved
        cache._CACHE.clear()


@pytest.mark.parametrize("f, x", PROGRAMS, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_are_the_same_bits_as_with_every_argument_active(f, x):
    same_bits(ad.gradient(f, x), _without_masks(f, x))


def test_hand_derived_values():
    x = 0.7
    assert ad.gradient(caller_constant, x) == (3.0 * math.cos(x),)
    # rebind(x, .5) = (x/2)^2 -> x/2 ; rebind(.25, x) = (x/4)^2 -> x/8
    np.testing.assert_allclose(ad.gradient(caller_rebind, x), (x / 2 + x / 8,), rtol=1e-15)
    # 2*x*4 + 0.5*x*x -> 8 + x
    np.testing.assert_allclose(ad.gradient(caller_default, x), (8.0 + x,), rtol=1e-15)
    np.testing.assert_allclose(ad.gradient(caller_recursive, x), (1.5**3,), rtol=1e-15)
    assert ad.gradient(caller_fills_an_inactive_list, 3.0) == (12.0,)  # 2x^2
    assert ad.gradient(caller_sets_an_inactive_dict, 3.0) == (7.0,)  # x^2 + x
    # A container built here and handed to code that may write it is followed by
    # identity from then on (ad.transform.holders), so it is no constant of the call.
    assert "_ad_rcall(_ad_follow, empty)" in adjoint_source(caller_fills_an_inactive_list)


def test_the_caller_passes_the_mask_of_constants_and_inactive_names():
    src = adjoint_source(caller_constant)  # its value is returned: a tail call
    assert "_ad_rcall_tail(_ad_nv, 2, scale, x, 3.0)" in src
    src = adjoint_source(caller_rebind)
    assert "_ad_rcall_masked(2, rebind, x, 0.5)" in src
    assert "_ad_rcall_masked(1, rebind, 0.25, x)" in src


def _numpy_caller(x):
    return np.sum(np.multiply(x, 2.0)) + math.pow(x[0], 2.0)


def test_calls_of_rules_and_builtins_are_not_masked():
    src = adjoint_source(_numpy_caller)
    assert "_ad_rcall_masked" not in src
    assert "_ad_rcall_masked" not in adjoint_source(caller_constant, pure=True)


def test_each_mask_gets_its_own_transform():
    cache._CACHE.clear()
    ad.gradient(caller_rebind, 1.3)
    masks = sorted(k[3] for k in cache._CACHE if k[0] is rebind.__code__ and len(k) > 2)
    assert masks == [1, 2]


def test_a_function_that_gains_a_rule_later_is_dispatched_to_it():
    def inner(x, c):
        return c * x

    def outer(x):
        return inner(x, 2.0)

    assert ad.gradient(outer, 3.0) == (2.0,)

    @rrule.register(inner)
    def _(x, c):
        return inner(x, c), lambda ȳ: (NoTangent(), 10.0 * ȳ, 0.0)

    assert ad.gradient(outer, 3.0) == (10.0,)


def test_a_loop_over_data_rows_keeps_no_cotangent_for_them():
    """``rows(W, xs)`` called with ``xs`` captured: ``xs`` is inactive, so the loop
    over it is plain Python (no list of rows and of their cotangents for the
    adjoint), and the backward pass holds less; the gradient is the same."""
    rng = np.random.default_rng(3)
    W, xs = rng.normal(size=(16, 16)) / 4, rng.normal(size=(60, 16))

    def loss(W):
        return rows(W, xs)

    def peak():
        ad.gradient(loss, W)
        tracemalloc.start()
        try:
            g = ad.gradient(loss, W)
            return tracemalloc.get_traced_memory()[1], g
        finally:
            tracemalloc.stop()

    masked, g = peak()
    saved = _Gen.inactive_mask
    _Gen.inactive_mask = lambda self, func, args: 0
    cache._CACHE.clear()
    try:
        unmasked, g0 = peak()
    finally:
        _Gen.inactive_mask = saved
        cache._CACHE.clear()
    same_bits(g, g0)
    assert unmasked - masked > 40 * len(xs), (masked, unmasked)  # ~67 bytes a row


@pytest.mark.parametrize("f, x", PROGRAMS, ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_match_central_differences(f, x):
    h = 1e-6
    want = (f(x + h) - f(x - h)) / (2 * h)
    np.testing.assert_allclose(ad.gradient(f, x)[0], want, rtol=1e-7, atol=1e-9)


def test_the_data_loop_matches_central_differences():
    rng = np.random.default_rng(4)
    W, xs = rng.normal(size=(5, 5)) / 3, rng.normal(size=(7, 5))
    (g,) = ad.gradient(lambda W: rows(W, xs), W)
    fd = np.zeros_like(W)
    for i in range(5):
        for j in range(5):
            e = np.zeros_like(W)
            e[i, j] = 1e-6
            fd[i, j] = (rows(W + e, xs) - rows(W - e, xs)) / 2e-6
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
