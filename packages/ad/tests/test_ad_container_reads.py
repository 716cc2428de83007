"""Reading entries of a differentiated dict or list: cotangents add key by key
(entry by entry), in place only where nothing else holds them
(``ad.runtime.accumulate._add_mappings`` and ``_add_into_entries``, with the one-entry
cotangent ``rules.entry_cotangent`` of ``xs[i]``).

Checked against central differences and hand-derived values: many keys read
many times, a container reached through several names and containers, nested
ones, arrays as values, lists that change after a read, and gradients that
stay independent of one another and of the inputs. That reading every entry
of a long container never adds whole cotangents per read is checked by
counting those additions (timings live in ``benchmarks/``).
"""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, in_place

import ad
from rulescore import Tangent


def _fd_dict(f, d, h=1e-6):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _fd_dict(lambda sub, k=k: f({**d, k: sub}), v, h)
        elif isinstance(v, float):
            out[k] = (f({**d, k: v + h}) - f({**d, k: v - h})) / (2 * h)
        else:
            g = np.zeros_like(v)
            for i in np.ndindex(v.shape):
                vp, vm = v.copy(), v.copy()
                vp[i] += h
                vm[i] -= h
                g[i] = (f({**d, k: vp}) - f({**d, k: vm})) / (2 * h)
            out[k] = g
    return out


def _close(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], dict):
            _close(a[k], b[k])
        else:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-6, atol=1e-8)


def many_reads(d):
    r = 0.0
    for i in range(3):
        for k in d:
            r = r + d[k] * (i + 1.0) * d["k0"]
    return r


def through_aliases(d):
    e = d
    pair = (d, e)
    box = {"inner": d}
    return pair[0]["a"] * pair[1]["b"] + box["inner"]["a"] ** 2 + e["b"]


def nested(p):
    s = 0.0
    for _ in range(4):
        s = s + p["layer"]["w"] * p["layer"]["b"] + p["scale"]
    return s * p["layer"]["w"]


def arrays(params):
    h = np.tanh(params["W"] @ params["x"] + params["b"])
    return np.sum(h * h) + np.sum(params["W"] * params["W"]) + np.sum(params["b"])


def test_many_keys_read_many_times():
    d = {f"k{i}": 0.1 * (i + 1) for i in range(40)}
    g = ad.gradient(many_reads, d)[0]
    _close(g, _fd_dict(many_reads, d))
    # by hand: r = 6 * k0 * sum(d); dr/dk0 = 6 * (sum + k0), dr/dki = 6 * k0
    total = sum(d.values())
    assert g["k0"] == pytest.approx(6 * (total + d["k0"]))
    assert g["k7"] == pytest.approx(6 * d["k0"])


@pytest.mark.parametrize("f", [through_aliases, nested])
def test_a_dict_reached_through_several_names_and_nesting(f):
    d = (
        {"a": 1.5, "b": -0.5}
        if f is through_aliases
        else {"layer": {"w": 0.7, "b": 1.2}, "scale": 2.0}
    )
    _close(ad.gradient(f, d)[0], _fd_dict(f, d))


def test_arrays_as_values_in_both_modes():
    rng = np.random.default_rng(1)
    params = {"W": rng.normal(size=(3, 4)), "x": rng.normal(size=4), "b": rng.normal(size=3)}
    g = ad.gradient(arrays, params)[0]
    _close(g, _fd_dict(arrays, params))
    dW = rng.normal(size=(3, 4))
    tangent = {"W": dW, "x": np.zeros(4), "b": np.zeros(3)}
    _, ẏ = ad.jvp(arrays, (params,), (tangent,))
    assert ẏ == pytest.approx(np.sum(g["W"] * dW), rel=1e-10)


def test_gradients_are_independent_of_each_other_and_of_the_inputs():
    d = {"a": 1.5, "b": -0.5}
    before = dict(d)
    g1 = ad.gradient(through_aliases, d)[0]
    g1["a"] = 1e9  # the caller's to change
    g2 = ad.gradient(through_aliases, d)[0]
    assert g2 == pytest.approx({"a": -0.5 + 3.0, "b": 1.5 + 1.0})
    assert d == before


def _fd_list(f, xs):
    """Central differences of ``f`` in each entry of the list ``xs``."""
    return list(fd_gradient(lambda *entries: f(list(entries)), *xs))


def indexed_loop(xs):
    s = 0.0
    for i in range(len(xs)):
        s = s + xs[i] * xs[i - 1] + xs[-1]
    return s


def through_list_aliases(xs):
    ys = xs
    pair = [xs, ys]
    return pair[0][0] * pair[1][2] + ys[1] ** 2 + xs[0] * xs[0]


def grows_after_reads(xs):
    out = [xs[0] * 2.0]
    for i in range(1, len(xs)):
        out.append(out[-1] * xs[i] + out[0])
    return out[-1] + out[1] * xs[0]


def array_entries(ws):
    h = ws[0]
    for k in range(1, len(ws)):
        h = np.tanh(ws[k] * h) + ws[k - 1]
    return np.sum(h * h)


@pytest.mark.parametrize("f", [indexed_loop, through_list_aliases, grows_after_reads])
@pytest.mark.parametrize("n", [3, 7])
def test_list_reads_match_differences(f, n):
    xs = [0.3 + 0.1 * i for i in range(n)]
    g = ad.gradient(f, xs)[0]
    assert type(g) is list
    g = [0.0 if v is None else v for v in g]  # an entry never read gets None
    np.testing.assert_allclose(g, _fd_list(f, xs), rtol=1e-6, atol=1e-8)
    ẋ = [0.5 - 0.2 * i for i in range(n)]
    assert ad.jvp(f, (xs,), (ẋ,))[1] == pytest.approx(np.dot(g, ẋ), rel=1e-9)


def test_list_reads_hand_derived():
    # s = sum_i x_i x_(i-1) + n x_(n-1): for (1, 2, 3): ds/dx0 = x1 + x2, ds/dx1 = x0 + x2,
    # ds/dx2 = x1 + x0 + 3
    assert ad.gradient(indexed_loop, [1.0, 2.0, 3.0])[0] == [5.0, 4.0, 6.0]


def test_list_of_arrays_and_float32():
    rng = np.random.default_rng(2)
    ws = [rng.normal(size=3).astype(np.float32) for _ in range(4)]
    g = ad.gradient(array_entries, ws)[0]
    assert all(gi.dtype == np.float32 for gi in g)
    ws64 = [w.astype(np.float64) for w in ws]
    want = _fd_list(array_entries, ws64)
    for gi, wi in zip(g, want):
        np.testing.assert_allclose(gi, wi, rtol=2e-3, atol=2e-3)


def _count_whole_cotangents(monkeypatch, n):
    built = []  # whole cotangents of n entries built: by a dense addition or a copy
    from_backing = Tangent._from_backing.__func__

    def counting(cls, b):
        if len(b) == n:
            built.append(cls)
        return from_backing(cls, b)

    monkeypatch.setattr(Tangent, "_from_backing", classmethod(counting))
    return built


def test_reading_every_list_entry_adds_no_whole_cotangents(monkeypatch):
    built = _count_whole_cotangents(monkeypatch, 300)
    xs = [0.01 * i for i in range(300)]
    g = ad.gradient(indexed_loop, xs)[0]
    np.testing.assert_allclose(g[5], xs[6] + xs[4])
    assert len(built) <= 3, f"{len(built)} whole-list cotangents built for 900 reads"


def test_reading_every_dict_entry_adds_no_whole_cotangents(monkeypatch):
    built = _count_whole_cotangents(monkeypatch, 300)
    d = {f"k{i}": 0.01 * i for i in range(300)}
    g = ad.gradient(many_reads, d)[0]
    assert g["k7"] == pytest.approx(6 * d["k0"])
    assert len(built) <= 3, f"{len(built)} whole-dict cotangents built for 1800 reads"


def test_list_gradients_are_the_callers_to_change():
    xs = [1.0, 2.0, 3.0]
    g1 = ad.gradient(indexed_loop, xs)[0]
    g1[0] = 1e9
    y, back = ad.pullback(indexed_loop, xs)
    assert back(1.0)[0] == [5.0, 4.0, 6.0]
    assert back(2.0)[0] == [10.0, 8.0, 12.0]
    assert xs == [1.0, 2.0, 3.0]


def split_products(x):
    parts = np.split(x, 3)
    s = 0.0
    for i in range(3):
        s = s + np.sum(parts[i] * parts[i - 1] ** 2)
    return s


def test_list_reads_at_second_order_through_a_rule_reading_the_whole_cotangent():
    # parts[i]'s cotangents accumulate into np.split's list cotangent, which its
    # pullback reads whole (rulescore.backing): checked by every mode pair
    x = np.array([0.5, 1.5, -0.7, 0.2, 1.1, -0.4])
    v = np.array([1.0, 0.3, -0.2, 0.5, -1.0, 0.7])
    grad = lambda x: ad.gradient(split_products, x)[0]  # noqa: E731
    h = 1e-5
    want = (grad(x + h * v) - grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(ad.hvp(split_products, (x,), (v,))[0], want, rtol=1e-6)
    np.testing.assert_allclose(ad.hessian(split_products, x) @ v, want, rtol=1e-6)
    np.testing.assert_allclose(ad.hessian_reverse(split_products, x) @ v, want, rtol=1e-6)
    wHv = ad.jvp(lambda x: ad.jvp(split_products, (x,), (v,))[1], (x,), (v,))[1]
    assert wHv == pytest.approx(v @ want, rel=1e-6)


def appended(xs):
    out = []
    for x in xs:
        out.append(x * x)
    s = 0.0
    for k, v in enumerate(out):
        s = s + v * (k + 1.0)
    return s + out[0] * out[-1]


def test_appends_match_differences_and_hand_derived():
    xs = [0.5, -1.0, 2.0, 0.25]
    g = ad.gradient(appended, xs)[0]
    np.testing.assert_allclose(g, _fd_list(appended, xs), rtol=1e-6)
    # s = sum (k+1) x_k^2 + x_0^2 x_3^2: ds/dx_1 = 2 * 2 * x_1
    assert g[1] == pytest.approx(-4.0)
    ẋ = [1.0, 0.5, -0.5, 2.0]
    assert ad.jvp(appended, (xs,), (ẋ,))[1] == pytest.approx(np.dot(g, ẋ))


def test_a_list_returned_after_appends_keeps_the_callers_seed():
    def squares(xs):
        out = []
        for x in xs:
            out.append(x * x)
        return out

    seed = [1.0, 2.0, 3.0]
    y, back = ad.pullback(squares, [1.0, 2.0, 3.0])
    assert back(seed)[0] == [2.0, 8.0, 18.0]
    assert seed == [1.0, 2.0, 3.0]
    assert back(seed)[0] == [2.0, 8.0, 18.0]


def _count_splits(monkeypatch):
    """The lengths of the list cotangents the append rule splits whole (copies:
    ``writable_entries`` calls ``entries`` only when it cannot write in place)."""
    import ad.runtime.cotangents as objects

    whole = []
    entries = objects.entries

    def counting(ȳ, n, what):
        whole.append(n)
        return entries(ȳ, n, what)

    monkeypatch.setattr(objects, "entries", counting)
    return whole


def appended_param(x, n):
    ys = []
    for _ in range(n):
        ys.append(x)  # the parameter itself: its adjoint and the list's in one loop
    return ys[0] * ys[-1]


def test_appending_a_parameter_matches_hand_derived_in_both_modes():
    assert ad.gradient(appended_param, 1.5, 7)[0] == pytest.approx(3.0)
    assert ad.jvp(appended_param, (1.5, 7), (1.0, None))[1] == pytest.approx(3.0)


@in_place
def test_a_loop_of_appends_of_a_parameter_copies_no_whole_cotangents(monkeypatch):
    # the list's adjoint was also held by the slot it came in (``_ad_g1``), so no
    # pullback could give up its last entry in place: each append copied the list
    whole = _count_splits(monkeypatch)
    assert ad.gradient(appended_param, 0.5, 300)[0] == pytest.approx(1.0)
    assert len(whole) <= 2, f"{len(whole)} whole-list cotangents split for 300 appends"


def test_a_loop_of_appends_copies_no_whole_cotangents(monkeypatch):
    whole = _count_splits(monkeypatch)
    xs = [0.01 * i for i in range(300)]
    g = ad.gradient(appended, xs)[0]
    assert g[5] == pytest.approx(2 * xs[5] * 6.0)
    assert len(whole) <= 2, f"{len(whole)} whole-list cotangents split for 300 appends"
