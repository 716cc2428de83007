"""``f(w, *data)`` with ``data`` a tuple the function captures (not a global)
is transformed as ``f(w, data[0], data[1])`` while ``data`` holds a tuple of that
length (``ad.transform.captured_stars``): the callee is then an ordinary call,
inlined and given its inactive arguments as constants.

Checked against central differences and against the same program with the
``*`` kept (helpers left as calls), in reverse and forward mode and at second
order; the same code captured by closures over tuples of other lengths, a global
rebound between calls and during one, a list, and a name the function binds.
"""

from __future__ import annotations

import numpy as np
import pytest
from ad_testing import fd_gradient, fd_hessian, helpers_as_calls

import ad
from ad.transform.cache import transformed
from ad.transform.captured_stars import Length


def loss(w, X, y):
    return np.mean((np.tanh(X @ w) - y) ** 2)


def weighted(w, *rest):
    out = np.sum(w * w)
    for k, r in enumerate(rest):
        out = out + (k + 1.0) * np.sum(np.sin(w * r))
    return out


def bind(data):
    return lambda w: loss(w, *data)


def bind_rest(data):
    return lambda w: weighted(w, *data)


def _data(n=5, m=3):
    rng = np.random.default_rng(4)
    return rng.normal(size=(n, m)), rng.normal(size=n)


def _plain(fn, *args):
    """``fn(*args)`` with the ``*`` kept and helpers left as calls (fresh transforms)."""
    with helpers_as_calls():
        return fn(*args)


def test_a_captured_tuple_is_unpacked_and_the_callee_inlined():
    f = bind(_data())
    w = np.array([0.3, -0.7, 1.1])
    (g,) = ad.gradient(f, w)
    np.testing.assert_allclose(g, fd_gradient(f, w)[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g, _plain(ad.gradient, f, w)[0], rtol=1e-12, atol=1e-15)
    guards = dict(transformed(f, False).guards)
    assert guards[Length("data")] == 2 and guards["loss"] is loss  # unpacked, then inlined
    assert "rcall_star" not in ad.code_adjoint(f, w)
    _, ẏ = ad.jvp(f, (w,), (np.ones(3),))
    assert ẏ == pytest.approx(np.sum(g), rel=1e-10)
    np.testing.assert_allclose(ad.hessian(f, w), fd_hessian(f, w), rtol=1e-5, atol=1e-6)


def test_closures_over_tuples_of_other_lengths_share_the_code():
    w = np.array([0.3, -0.7])
    for data in [(), (np.array([1.0, 2.0]),), (np.array([1.0, 2.0]), 0.5), [0.5, 2.0]]:
        f = bind_rest(data)  # one code object, three lengths and a list
        (g,) = ad.gradient(f, w)
        np.testing.assert_allclose(g, fd_gradient(f, w)[0], rtol=1e-6, atol=1e-9)
        _, ẏ = ad.jvp(f, (w,), (np.array([1.0, 0.0]),))
        assert ẏ == pytest.approx(g[0], rel=1e-10)


DATA = (np.array([1.0, -1.0]),)


def uses_global(w):
    return weighted(w, *DATA)


def _grow():
    global DATA
    DATA = (*DATA, np.array([0.5, 0.5]))


def grows_while_running(w):
    a = weighted(w, *DATA)
    _grow()
    return a + weighted(w, *DATA)


def test_a_global_tuple_rebound_between_calls(monkeypatch):
    w = np.array([0.3, -0.7])
    monkeypatch.setitem(globals(), "DATA", DATA)
    g1 = ad.gradient(uses_global, w)[0]
    np.testing.assert_allclose(g1, fd_gradient(uses_global, w)[0], rtol=1e-6, atol=1e-9)
    monkeypatch.setitem(globals(), "DATA", (*DATA, np.array([2.0, 0.0])))
    g2 = ad.gradient(uses_global, w)[0]
    np.testing.assert_allclose(g2, fd_gradient(uses_global, w)[0], rtol=1e-6, atol=1e-9)
    assert not np.allclose(g1, g2)


def test_a_global_tuple_rebound_during_the_call_keeps_pythons_meaning(monkeypatch):
    # a global tuple keeps its * (a callee may rebind it and put it back)
    start = DATA

    def from_start(w):
        monkeypatch.setitem(globals(), "DATA", start)
        return grows_while_running(w)

    w = np.array([0.3, -0.7])
    monkeypatch.setitem(globals(), "DATA", start)
    g = ad.gradient(grows_while_running, w)[0]
    np.testing.assert_allclose(g, fd_gradient(from_start, w)[0], rtol=1e-6, atol=1e-9)
    assert not any(type(k) is Length for k, _ in transformed(uses_global, False).guards)


def binds_its_own(w, extra):
    data = (extra, extra * 2.0)
    return weighted(w, *data)  # a local: left a * call


def test_a_name_the_function_binds_keeps_its_star():
    w, e = np.array([0.3, -0.7]), np.array([1.0, 0.5])
    assert "rcall_star" in ad.code_adjoint(binds_its_own, w, e)
    g = ad.gradient(binds_its_own, w, e)
    np.testing.assert_allclose(g[0], fd_gradient(binds_its_own, w, e)[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(g[1], fd_gradient(binds_its_own, w, e)[1], rtol=1e-6, atol=1e-9)


# --- parameters unpacked by ``*``: a transform per length -------------------------


def three(x, y, z):
    return x * y * z + np.sin(x * z)


def forwards_all(*q):
    return three(*q)


def forwards_rest(a, *rest):
    return weighted(a, *rest) + len(rest) * np.sum(a)  # rest read as a tuple too


def forwards_tuple(q):
    return three(*q)


def defaults_and_keywords(a, b=2.0, *q, scale=1.0):
    return scale * weighted(a * b, *q)


def _check(f, *args):
    g = ad.gradient(f, *args)
    want = fd_gradient(f, *args)
    for a, e in zip(g, want):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-9)
    return g


def test_star_args_forwarded_for_each_length():
    _check(forwards_all, 0.7, 1.3, -0.4)
    assert transformed(forwards_all, False, lengths=((0, 3),)).n_positional == 3  # q0, q1, q2
    w = np.array([0.3, -0.7])
    for rest in [(), (np.array([1.0, 2.0]),), (np.array([1.0, 2.0]), np.array([0.5, 0.1]))]:
        g = _check(forwards_rest, w, *rest)
        _, ẏ = ad.jvp(forwards_rest, (w, *rest), (np.ones(2), *(0 * r for r in rest)))
        assert ẏ == pytest.approx(np.sum(g[0]), rel=1e-10)
    x = np.array([0.7, 1.3, -0.4])
    h = ad.hessian(lambda v: forwards_all(v[0], v[1], v[2]), x)
    np.testing.assert_allclose(h, fd_hessian(lambda v: three(*v), x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", [tuple, list])
def test_a_parameter_holding_a_tuple_or_list(kind):
    q = kind([0.7, 1.3, -0.4])
    (g,) = ad.gradient(forwards_tuple, q)
    assert type(g) is kind
    x, y, z = q
    hand = [y * z + z * np.cos(x * z), x * z, x * y + x * np.cos(x * z)]
    np.testing.assert_allclose(g, hand, rtol=1e-12)
    arrays = kind([np.array([0.5, 1.0]), np.array([2.0, -1.0]), np.array([0.1, 0.3])])
    (g,) = ad.gradient(lambda q: np.sum(forwards_tuple(q)), arrays)
    np.testing.assert_allclose(g[1], arrays[0] * arrays[2], rtol=1e-12)


def test_defaults_keywords_and_long_argument_lists():
    w = np.array([0.3, -0.7])
    r = np.array([1.0, 2.0])
    _check(defaults_and_keywords, w)  # b from its default: no length to unpack
    _check(defaults_and_keywords, w, 3.0, r)
    g = ad.gradient(defaults_and_keywords, w, 3.0, r, scale=2.0)  # a keyword: the * call
    np.testing.assert_allclose(g[0], 2.0 * ad.gradient(defaults_and_keywords, w, 3.0, r)[0])
    many = [np.full(2, 0.1 * k) for k in range(20)]  # longer than MAX_ENTRIES: the * call
    _check(forwards_rest, w, *many)
