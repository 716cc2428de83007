"""Builtins that iterate a dict argument: ``sorted(d)``, ``max(d)``, ``map(f, d)``,
``filter(p, d)``, ``functools.reduce(f, d)``, ``sum(d)`` (issue 20, autograd's
``test_dict::test_iter``).

Iterating a dict yields its keys, and a dict's tangent holds its *values'*
tangents, by key. The rules of these builtins read the dict's tangent as the
tangents of the items they iterate, entry by entry (``seq_entries``): in forward
mode a float key got the tangent of some value (a silently wrong derivative, and
a ``ValueError`` when the tangent held fewer keys than the dict, as the tangent
of a gradient read through two of three keys does under reverse over reverse);
in reverse mode the dict got a list as its cotangent (``TypeError`` when added to
the ``Tangent[dict]`` of its values). Now the keys carry no derivative
(``rules``' ``item_tangents`` / ``items_cotangent``), in every rule that
iterates its argument. Checked in each mode and mode pair against central
differences (of first derivatives for the pairs) and a hand-derived value.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ad


def _dot(g, t):
    """``⟨g, t⟩`` over the keys of a gradient dict (None: no gradient)."""
    return sum(float(np.sum(g[k] * t[k])) for k in g if g[k] is not None)


def _moved(d, t, h):
    return {k: d[k] + h * t[k] for k in d}


def _fd(f, d, t, h=1e-6):
    return (f(_moved(d, t, h)) - f(_moved(d, t, -h))) / (2 * h)


def _rev(f):
    return lambda d, t: _dot(ad.gradient(f, d)[0], t)


def _fwd(f):
    return lambda d, t: ad.jvp(f, (d,), (t,))[1]


MODES = {"r": _rev, "f": _fwd}


def f_sorted(d):
    s = 0.0
    for k in sorted(d):
        s = s + k * np.sum(d[k] ** 3)
    return s


def f_sorted_reverse_enumerate(d):
    s = 0.0
    for i, k in enumerate(sorted(d, reverse=True)):
        s = s + (i + 1.0) * np.sum(np.sin(d[k])) + k
    return s


def f_sorted_keys_view(d):
    s = 0.0
    for k in sorted(d.keys()):
        s = s + k * np.sum(d[k] ** 3)
    return s


def f_max_min(d):
    hi, lo = max(d), min(d)
    return hi * np.sum(d[hi] ** 3) + lo * np.sum(d[lo] ** 2)


def f_max_by_value(d):
    k = max(d, key=lambda k: np.sum(d[k]))
    return k * np.sum(d[k] ** 3)


def f_map(d):
    return sum(map(lambda k: k * np.sum(d[k] ** 3), d))


def f_filter(d):
    s = 0.0
    for k in filter(lambda k: k > 1.0, d):
        s = s + k * np.sum(d[k] ** 3)
    return s


def f_reduce(d):
    return functools.reduce(lambda a, k: a + k * np.sum(d[k] ** 3), d, 0.0)


def f_sum_of_keys(d):
    return sum(d) * np.sum(d[2.0] ** 2)


PROGRAMS = [
    f_sorted,
    f_sorted_reverse_enumerate,
    f_sorted_keys_view,
    f_max_min,
    f_max_by_value,
    f_map,
    f_filter,
    f_reduce,
    f_sum_of_keys,
]


def _inputs(kind):
    rng = np.random.default_rng(3)
    keys = (2.0, 0.5, 1.5)  # float keys: a key given a value's tangent shows
    if kind == "float":
        d = {k: float(rng.uniform(0.5, 1.5)) for k in keys}
        t = {k: float(rng.normal()) for k in keys}
    else:
        d = {k: rng.uniform(0.5, 1.5, size=(i + 2,)) for i, k in enumerate(keys)}
        t = {k: rng.normal(size=v.shape) for k, v in d.items()}
    return d, t


@pytest.mark.parametrize("kind", ["float", "array"])
@pytest.mark.parametrize("mode", ["r", "f"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_first_order_matches_central_differences(f, mode, kind):
    d, t = _inputs(kind)
    assert MODES[mode](f)(d, t) == pytest.approx(_fd(f, d, t), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("kind", ["float", "array"])
@pytest.mark.parametrize("pair", ["ff", "fr", "rf", "rr"])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_second_order_matches_differences_of_first(f, pair, kind):
    """``outer(inner(f))`` along ``t`` twice: ``tᵀ H t``."""
    d, t = _inputs(kind)
    inner = MODES[pair[1]](f)
    first = lambda dd: inner(dd, t)  # noqa: E731
    got = MODES[pair[0]](first)(d, t)
    assert got == pytest.approx(_fd(first, d, t), rel=1e-5, abs=1e-7)


def test_hand_derived_values_of_sorted():
    """``Σ_k k d_k³``: gradient ``3 k d_k²``, Hessian diagonal ``6 k d_k``."""
    d = {2.0: 0.7, 0.5: -1.3, 1.5: 0.4}
    g = ad.gradient(f_sorted, d)[0]
    assert g == pytest.approx({k: 3 * k * v**2 for k, v in d.items()})
    one = {k: 1.0 for k in d}
    assert ad.jvp(f_sorted, (d,), (one,))[1] == pytest.approx(
        sum(3 * k * v**2 for k, v in d.items())
    )
    hvp = ad.gradient(lambda dd: ad.jvp(f_sorted, (dd,), (one,))[1], d)[0]
    assert hvp == pytest.approx({k: 6 * k * v for k, v in d.items()})


def test_autograd_test_iter_reverse_over_reverse_reads_two_of_three_keys():
    """autograd's ``test_dict::test_iter``: the gradient's tangent holds two keys."""

    def fun(d):
        a, b = 0.0, 0.0
        for i, k in enumerate(sorted(d)):
            a = a + np.sum(np.sin(d[k])) * (i + 1.0)
            b = b + np.sum(np.cos(d[k]))
        return a + b

    def d_fun(d):
        g = ad.gradient(fun, d)[0]
        return np.sum(g["item_1"]) + np.sum(np.sin(g["item_1"])) + np.sum(np.sin(g["item_2"]))

    rng = np.random.default_rng(0)
    shapes = {"item_1": (5, 6), "item_2": (4, 3), "item_X": (2, 4)}
    d = {k: rng.normal(size=s) for k, s in shapes.items()}
    t = {k: rng.normal(size=s) for k, s in shapes.items()}
    want = _fd(d_fun, d, t)
    assert _rev(d_fun)(d, t) == pytest.approx(want, rel=1e-6)
    assert _fwd(d_fun)(d, t) == pytest.approx(want, rel=1e-6)
    g = ad.gradient(d_fun, d)[0]
    assert g.get("item_X") is None or not np.any(g["item_X"])


def test_a_dict_s_cotangent_from_iterating_it_is_no_list():
    """The keys' cotangents (none) leave the dict's own values' cotangents alone."""
    d = {"a": 2.0, "b": 3.0}

    def f(d):
        return sum(d[k] * d[k] for k in sorted(d))

    assert ad.gradient(f, d)[0] == {"a": 4.0, "b": 6.0}
