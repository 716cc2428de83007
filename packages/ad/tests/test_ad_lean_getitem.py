"""The lean path for ``x[key]`` (a float64 array, a basic key) gives exactly what
the rule gives.

``rcall`` caches, for ``operator.getitem`` on an ndarray with a slice, int or
tuple key, a leaner callable than the ``rules`` package's getitem rule
(``ad.runtime.lean_rules._lean_getitem``): the same view, and a pullback returning the same
``InplaceableThunk`` (add into ``acc[key]``, or scatter into zeros) without the
rule's key analysis, promotion and projection. Each test compares, bit for bit,
the lean result with the rule's own, for the cotangents and keys the lean path
handles and for those it hands back to the rule.
"""

import operator

import numpy as np
import pytest
from ad_testing import rules_path, same_bits

import ad
from ad.runtime.reverse import _RULE_CACHE, rcall
from rulescore import InplaceableThunk, NoTangent, Thunk, ZeroTangent, rrule, unthunk


def _is_lean(x, key):
    hit = _RULE_CACHE[(operator.getitem, type(x), type(key))]
    return hit[0].__module__ == "ad.runtime.lean_rules"


KEYS = [
    slice(1, None),
    slice(None, -1),
    slice(None, None, 2),
    slice(3, 1, -1),
    slice(5, 5),
    1,
    -1,
    (slice(None), 1),
    (1, slice(None, 2)),
    (slice(1, None), slice(None, -1)),
    (0, 1),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
@pytest.mark.parametrize("shape", [(6,), (4, 5)])
def test_getitem_matches_the_rule(key, shape):
    rng = np.random.default_rng(3)
    x = rng.normal(size=shape)
    try:
        want_y, pb0 = rrule(ad.ADConfig(), operator.getitem, x, key)
    except IndexError:
        with pytest.raises(IndexError):
            rcall(operator.getitem, x, key)
        return
    y, pb = rcall(operator.getitem, x, key)
    assert _is_lean(x, key)
    same_bits(y, want_y)
    seeds = [rng.normal(size=np.shape(y)), ZeroTangent()]
    seeds.append(Thunk(lambda: np.full(np.shape(y), 0.5)))
    seeds.append(rng.normal(size=np.shape(y)).astype(np.float32))
    seeds.append(rng.normal(size=np.shape(y)) + 1j)
    if np.ndim(y):
        seeds.append(rng.normal(size=(1,) * np.ndim(y)))
    seeds.append(-np.zeros(np.shape(y)))  # signed zeros keep their sign
    for s in seeds:
        got, want = pb(s), pb0(s)
        assert type(got[1]) is type(want[1])
        same_bits(got, want)
        if type(want[1]) is InplaceableThunk:
            # adding into an accumulator: in place, the same values
            acc0 = rng.normal(size=shape)
            acc0[0] = -0.0
            a, b = acc0.copy(), acc0.copy()
            out_a = got[1].add_fn(a)
            assert out_a is a
            same_bits(out_a, want[1].add_fn(b))


@pytest.mark.parametrize(
    "x, key",
    [
        (np.arange(6.0).astype(np.float32), slice(1, None)),
        (np.arange(6), slice(1, None)),
        (np.arange(6.0) + 0j, slice(1, None)),
        (np.arange(6.0).astype(">f8"), slice(1, None)),
        (np.arange(6.0), (slice(1, None), None)),
        (np.arange(6.0), (Ellipsis, 1)),
        (np.arange(6.0).reshape(2, 3), (np.array([0, 0]), slice(None))),
        (np.arange(6.0).reshape(2, 3), (np.int64(1), slice(None))),
    ],
)
def test_other_arrays_and_keys_go_through_the_rule(x, key):
    y, pb = rcall(operator.getitem, x, key)
    want_y, pb0 = rrule(ad.ADConfig(), operator.getitem, x, key)
    same_bits(y, want_y)
    s = np.ones(np.shape(y), dtype=np.result_type(x.dtype, np.float64))
    same_bits(pb(s), pb0(s))


def test_pullback_holds_no_zeros_buffer_and_can_be_called_twice():
    x = np.arange(5.0)
    y, pb = rcall(operator.getitem, x, slice(1, None))
    s = np.ones(4)
    first = unthunk(pb(s)[1])
    second = unthunk(pb(s)[1])
    assert first is not second
    first[:] = 7.0  # a caller may update its cotangent: the next one is fresh
    same_bits(unthunk(pb(s)[1]), np.array([0.0, 1.0, 1.0, 1.0, 1.0]))
    assert pb(s)[0] is NoTangent() or type(pb(s)[0]) is NoTangent


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _slices_2d(A):
    return np.sum(A[1:, :] * A[:-1, :]) + np.sum(A[:, 0] ** 2) + A[1, 2] * 3.0


def _rules_path(f, *args):
    with rules_path():
        return ad.gradient(f, *args)


@pytest.mark.parametrize(
    "f, x",
    [
        (_rosen, np.linspace(-1.5, 1.5, 11)),
        (_slices_2d, np.random.default_rng(7).normal(size=(4, 5))),
    ],
)
def test_gradients_match_the_rules_path_bit_for_bit(f, x):
    x0 = x.copy()
    lean = ad.gradient(f, x)
    same_bits(tuple(lean), tuple(_rules_path(f, x)))
    same_bits(x, x0)  # the input is never written


def test_gradient_of_a_slice_does_not_alias_the_cotangent():
    # the scattered cotangent must be fresh zeros, never the seed nor the input
    x = np.arange(4.0)
    (g,) = ad.gradient(lambda x: np.sum(x[1:]) + np.sum(x[:-1]), x)
    same_bits(g, np.array([1.0, 2.0, 2.0, 1.0]))
    same_bits(x, np.arange(4.0))


def test_nested_gradient_through_slices():
    def f(x):
        return np.sum(x[1:] * x[:-1] ** 2)

    def g(x):
        return np.sum(ad.gradient(f, x)[0] ** 2)

    x = np.linspace(-1.0, 1.0, 5)
    (h,) = ad.gradient(g, x)
    eps = 1e-6
    fd = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(5)])
    assert np.allclose(h, fd, atol=1e-5)


def test_a_getitem_rule_registered_later_is_honoured(tmp_path):
    """Checked in a fresh interpreter: rules cannot be unregistered."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "override_getitem.py"
    script.write_text(
        textwrap.dedent(
            """
            import operator
            import numpy as np
            import ad
            from rulescore import NoTangent, rrule

            def f(x):
                return np.sum(x[1:])

            x = np.arange(4.0)
            g0 = ad.gradient(f, x)[0]
            assert (g0 == [0.0, 1.0, 1.0, 1.0]).all(), g0

            @rrule.register(operator.getitem)
            def _(x: np.ndarray, key: slice):
                return x[key], lambda ȳ: (NoTangent(), np.full(x.shape, 5.0), NoTangent())

            g1 = ad.gradient(f, x)[0]
            assert (g1 == 5.0).all(), g1
            print("ok")
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
