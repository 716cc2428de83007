"""Tests for slices with number bounds, and np.mgrid / np.ogrid / np.r_ / np.c_ built from them."""

import operator

import numpy as np
import pytest
from rules_testing import TOLERANCES

import rules  # noqa: F401  (registers the rules)
from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule
from rulestest import central_fdm, test_frule, test_rrule

test_rrule.__test__ = False
test_frule.__test__ = False


def through_slices(obj, template, n_bounds):
    """``f(*bounds) = obj[key]``, the key built from slices of the bounds, with rules
    chaining ``slice``'s rules and ``obj``'s getitem rule, as the AD chains them
    (``template(s)`` builds the key from the list of slices ``s``; each slice takes
    ``n_bounds`` consecutive bounds, then the fixed tail ``rest``)."""

    def slices(bounds, tails):
        it = iter(bounds)
        return [slice(*[next(it) for _ in range(n_bounds)], *tail) for tail in tails]

    def make(tails):
        def f(*bounds):
            return obj[template(slices(bounds, tails))]

        @rrule.register(f)
        def _(*bounds):
            made = []
            it = iter(bounds)
            for tail in tails:
                made.append(rrule(slice, *[next(it) for _ in range(n_bounds)], *tail))
            key = template([s for s, _ in made])
            y, pb = rrule(operator.getitem, obj, key)

            def chained_pullback(ȳ):
                k̄ = pb(ȳ)[2]
                if isinstance(k̄, tuple):  # the slices' entries
                    parts = [k̄[i] for i, item in enumerate(key) if isinstance(item, slice)]
                else:  # one slice, or a zero for every item
                    parts = [k̄] * len(made)
                out = []
                for (_, spb), p in zip(made, parts):
                    out += list(spb(p)[1 : 1 + n_bounds])
                return (NoTangent(), *out)

            return y, chained_pullback

        @frule.register(f)
        def _(ḟ, *args):
            n = len(args) // 2
            ḃ, bounds = args[:n], args[n:]
            made, it, ṫ = [], iter(zip(ḃ, bounds)), []
            for tail in tails:
                pairs = [next(it) for _ in range(n_bounds)]
                t = tuple(p[0] for p in pairs) + (NoTangent(),) * len(tail)
                s, ṡ = frule((NoTangent(), *t), slice, *(p[1] for p in pairs), *tail)
                made.append(s)
                ṫ.append(ṡ)
            key = template(made)
            k̇ = template(ṫ)
            if isinstance(key, tuple):  # the key's constant items have no tangent
                k̇ = tuple(t if isinstance(i, slice) else NoTangent() for i, t in zip(key, k̇))
            return frule((ḟ, NoTangent(), k̇), operator.getitem, obj, key)

        return f

    return make


CASES = [
    # (name, obj, template, bounds per slice, tails, bounds)
    ("r-linspace", np.r_, lambda s: s[0], 2, [(5j,)], (0.3, 1.7)),
    ("r-one-point", np.r_, lambda s: s[0], 2, [(1j,)], (0.3, 1.7)),
    ("r-arange", np.r_, lambda s: s[0], 3, [()], (0.25, 2.0, 0.4)),
    (
        "r-mixed",
        np.r_,
        lambda s: (np.arange(2.0), s[0], 3.0, s[1]),
        2,
        [(4j,), (2j,)],
        (0.1, 0.9, 1.0, 2.0),
    ),
    ("c-columns", np.c_, lambda s: (s[0], s[1]), 2, [(3j,), (3j,)], (0.5, 1.5, -1.0, 2.0)),
    ("mgrid-1d", np.mgrid, lambda s: s[0], 2, [(4j,)], (0.5, 1.5)),
    ("mgrid-2d", np.mgrid, lambda s: (s[0], s[1]), 2, [(3j,), (4j,)], (0.5, 1.5, -1.0, 2.0)),
    (
        "mgrid-arange",
        np.mgrid,
        lambda s: (s[0], s[1]),
        3,
        [(), ()],
        (0.1, 1.05, 0.3, 0.2, 1.1, 0.5),
    ),
    ("ogrid-2d", np.ogrid, lambda s: (s[0], s[1]), 2, [(3j,), (2j,)], (0.5, 1.5, -1.0, 2.0)),
    ("ogrid-1d", np.ogrid, lambda s: s[0], 2, [(3j,)], (0.5, 1.5)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128], ids=str)
@pytest.mark.parametrize(
    ("obj", "template", "n", "tails", "bounds"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_slice_bounds_get_derivatives(obj, template, n, tails, bounds, dtype):
    if dtype is np.complex128 and n == 3:
        pytest.skip("numpy has no arange of complex bounds")
    f = through_slices(obj, template, n)(tails)
    args = [dtype(b) if isinstance(b, float) else b for b in bounds]
    if dtype is np.complex128:
        args = [a + 0.5j * a if isinstance(a, complex) else a for a in args]
    # A real step: the number of values is a step function of the bounds; stay near them.
    fdm = central_fdm(5, 1, max_range=1e-3) if n == 3 else None
    test_rrule(f, *args, fdm=fdm, **TOLERANCES[dtype])
    test_frule(f, *args, fdm=fdm, **TOLERANCES[dtype])


def test_slice_rules():
    s, pb = rrule(slice, 1.0, 2, None)
    assert s == slice(1.0, 2, None)
    assert pb(Tangent[slice](start=3.0)) == (NoTangent(), 3.0, NoTangent(), NoTangent())
    assert pb(ZeroTangent()) == (NoTangent(), ZeroTangent(), NoTangent(), NoTangent())
    assert rrule(slice, 3)[1](Tangent[slice](stop=1.0)) == (NoTangent(), NoTangent())
    assert rrule(slice, 3.0)[1](Tangent[slice](stop=1.0)) == (NoTangent(), 1.0)
    assert frule((NoTangent(), 1.0, NoTangent()), slice, 0.0, 3)[1] == Tangent[slice](start=1.0)
    assert frule((NoTangent(), 1, 1), slice, 0, 3)[1] is NoTangent()  # indices
    assert frule((NoTangent(), ZeroTangent()), slice, 2.0)[1] is ZeroTangent()
    # a float32 bound gets a float32 cotangent
    d = rrule(slice, np.float32(1.0), np.float32(2.0))[1](Tangent[slice](start=1.0))[1]
    assert type(d) is np.float32


def test_integer_slices_stay_constants():
    _, pb = rrule(operator.getitem, np.mgrid, (slice(0, 3), slice(0, 2)))
    assert pb(np.ones((2, 3, 2))) == (NoTangent(), NoTangent(), NoTangent())
    assert frule((NoTangent(),) * 3, operator.getitem, np.ogrid, slice(0, 3))[1] is NoTangent()
    # np.r_ of a float slice: no silent zero (the values' cotangent reaches the bounds)
    _, pb = rrule(operator.getitem, np.r_, (np.ones(2), slice(0, 2), slice(0.0, 1.0, 3j)))
    k̄ = pb(np.arange(7.0))[2]
    assert k̄[1] is NoTangent()
    assert k̄[2] == Tangent[slice](start=4 + 2.5, stop=2.5 + 6)  # v̄ = 4, 5, 6


def test_stop_of_a_real_step_has_zero_derivative():
    _, pb = rrule(operator.getitem, np.r_, slice(0.0, 2.5, 1.0))  # 0, 1, 2
    assert pb(np.ones(3))[2] == Tangent[slice](start=3.0, stop=ZeroTangent(), step=3.0)
