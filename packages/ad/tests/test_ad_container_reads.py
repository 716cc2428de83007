"""Reading entries of a differentiated dict: cotangents add key by key, in place
only where nothing else holds them (``ad._accumulate._add_mappings``).

Checked against central differences and hand-derived values: many keys read
many times, a dict reached through several names and containers, nested dicts,
arrays as values, and gradients that stay independent of one another.
"""

from __future__ import annotations

import numpy as np
import pytest

import ad


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
