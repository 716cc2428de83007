"""ad on dask arrays: the same rules as numpy, gradients that stay lazy.

Every derivative is taken with a dask scheduler that refuses to run, so a test
fails if differentiation computes anything; the caller then computes the result
and it is compared with the derivative of the same function on numpy arrays.
The arrays have 10⁶ entries in several chunks, as a user's out-of-core data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ad
from ad.errors import NoRuleError

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")


class Computed(AssertionError):
    pass


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise Computed("dask computed during differentiation")


def lazily(thunk: Any) -> Any:
    """Run ``thunk`` under a scheduler that refuses to compute."""
    with dask.config.set(scheduler=_refuse):
        return thunk()


def chunked(shape: tuple, chunks: Any, seed: int = 0, dtype: Any = np.float64) -> tuple:
    """A dask array of ``shape`` in ``chunks`` and the same values in numpy."""
    x = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)
    return da.from_array(x, chunks=chunks), x


def check_all_modes(f: Any, dargs: tuple, nargs: tuple, rtol: float = 1e-10) -> tuple:
    """gradient, pullback and jvp of ``f`` on dask arrays: lazy, dask-typed, and equal
    to the derivatives on numpy arrays. Returns the dask gradient."""
    g = lazily(lambda: ad.gradient(f, *dargs))
    y, pb = lazily(lambda: ad.pullback(f, *dargs))
    g_pb = lazily(lambda: pb(np.ones_like(y)))
    tangents = tuple(a * 0.5 for a in dargs)  # not constant: var has a zero jvp along ones
    yj, ẏ = lazily(lambda: ad.jvp(f, dargs, tangents))
    for d in (*g, *g_pb, ẏ):
        assert isinstance(d, da.Array), type(d)
    gn = ad.gradient(f, *nargs)
    ẏn = ad.jvp(f, nargs, tuple(a * 0.5 for a in nargs))[1]
    for a, b, c in zip(dask.compute(*g), dask.compute(*g_pb), gn):
        np.testing.assert_allclose(a, c, rtol=rtol)
        np.testing.assert_allclose(b, c, rtol=rtol)
    np.testing.assert_allclose(ẏ.compute(), ẏn, rtol=rtol)
    return g


N = 10**6


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(np.sin(x) * x),
        lambda x: np.sum(np.exp(-x) / (1.0 + x**2) - np.tanh(2.0 * x)),
        lambda x: np.mean(np.log1p(x) ** 2) + np.sum(np.sqrt(x)) * 1e-3,
        lambda x: np.sum(np.maximum(x - 1.0, 0.0) ** 2 + np.where(x > 1.2, x, -x)),
        lambda x: da.sum(da.cos(x) * x) + x.sum() * 0.5,
    ],
    ids=["sin", "exp-tanh", "log1p-sqrt", "relu-where", "dask-spelling"],
)
def test_elementwise_million_entries(f: Any) -> None:
    x, xn = chunked((N,), 125_000)
    (g,) = check_all_modes(f, (x,), (xn,))
    assert g.chunks == x.chunks  # the cotangent keeps the input's blocks


def test_elementwise_two_arrays_and_augmented_assignment() -> None:
    def f(x, y):
        s = np.sum(x * y)
        s += np.sum(np.exp(x - y))
        z = x / (1.0 + y)
        z = z * z
        return s + np.sum(z)

    (x, xn), (y, yn) = chunked((1000, 1000), (250, 500)), chunked((1000, 1000), (250, 500), 1)
    gx, gy = check_all_modes(f, (x, y), (xn, yn))
    assert gx.chunks == x.chunks and gy.chunks == y.chunks


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(np.sum(x, axis=0) ** 2),
        lambda x: np.sum(np.mean(x * x, axis=1)),
        lambda x: np.sum(x.max(axis=1)) + np.min(x),
        lambda x: np.sum(np.var(x, axis=0)) + x.std(),
        lambda x: np.sum((x - x.mean(axis=0, keepdims=True)) ** 2),
        lambda x: np.sum(np.log(np.sum(np.exp(x), axis=1))),
        lambda x: np.sum(np.cumsum(x, axis=1)[:, -1]) + x.reshape(1000, 4, 250).T.sum(),
    ],
    ids=["sum0", "mean1", "max-min", "var-std", "keepdims", "logsumexp", "cumsum-reshape"],
)
def test_reductions_with_axis(f: Any) -> None:
    x, xn = chunked((1000, 1000), (250, 250))
    check_all_modes(f, (x,), (xn,), rtol=1e-9)


def test_matmul() -> None:
    (a, an), (b, bn) = chunked((2000, 500), (500, 250)), chunked((500, 40), (250, 40), 1)

    def f(a, b):
        return np.sum(np.tanh(a @ b) ** 2) + np.sum(a.T @ a[:, :3])

    check_all_modes(f, (a, b), (an, bn), rtol=1e-9)


def mlp_loss(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def test_small_mlp_dask_data_and_parameters() -> None:
    rng = np.random.default_rng(3)
    X, Xn = chunked((20_000, 50), (5_000, 50))
    yn = rng.normal(size=(20_000, 1))
    y = da.from_array(yn, chunks=(5_000, 1))
    params = [rng.normal(size=(50, 16)) * 0.2, np.zeros(16), rng.normal(size=(16, 1)), np.zeros(1)]
    dparams = [da.from_array(p) for p in params]
    check_all_modes(lambda *p: mlp_loss(*p, X, y), tuple(dparams), tuple(params), rtol=1e-9)


def test_numpy_parameters_with_dask_data_get_lazy_gradients() -> None:
    rng = np.random.default_rng(4)
    X, Xn = chunked((20_000, 50), (5_000, 50))
    yn = rng.normal(size=(20_000, 1))
    y = da.from_array(yn, chunks=(5_000, 1))
    params = (rng.normal(size=(50, 16)) * 0.2, np.zeros(16), rng.normal(size=(16, 1)), np.zeros(1))
    g = lazily(lambda: ad.gradient(lambda *p: mlp_loss(*p, X, y), *params))
    assert all(isinstance(d, da.Array) for d in g)  # the caller computes them
    gn = ad.gradient(lambda *p: mlp_loss(*p, Xn, yn), *params)
    for a, b in zip(dask.compute(*g), gn):
        np.testing.assert_allclose(a, b, rtol=1e-9)
        assert a.shape == b.shape and a.dtype == b.dtype


def test_float32_stays_float32() -> None:
    x, xn = chunked((N,), 250_000, dtype=np.float32)
    (g,) = lazily(lambda: ad.gradient(lambda x: np.sum(np.sin(x) * x), x))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.compute(), ad.gradient(lambda x: np.sum(np.sin(x) * x), xn)[0])


def test_slicing_concatenation_and_newaxis() -> None:
    (x, xn), (b, bn) = chunked((1000, 1000), (250, 250)), chunked((1000,), 250, 1)

    def f(x, b):
        z = np.concatenate([x[:10], x[-5:] * 2.0])
        return np.sum(z**2) + np.sum(x * b[:, None]) + np.sum(np.stack([b, b * b]))

    check_all_modes(f, (x, b), (xn, bn), rtol=1e-9)


def test_rechunk_is_differentiated_and_keeps_blocks() -> None:
    x, xn = chunked((N,), 100_000)

    def f(x):
        return np.sum(x.rechunk(300_000) ** 2) + np.sum(da.rechunk(x, 50_000) * 3.0)

    (g,) = lazily(lambda: ad.gradient(f, x))
    assert g.chunks == x.chunks
    np.testing.assert_allclose(g.compute(), 2 * xn + 3.0)
    ẏ = lazily(lambda: ad.jvp(f, (x,), (da.ones_like(x),))[1])
    np.testing.assert_allclose(ẏ.compute(), np.sum(2 * xn + 3.0))


def test_second_order_stays_lazy() -> None:
    x, xn = chunked((10_000,), 2_500)

    def f(x):
        return np.sum(np.sin(x) * x)

    v = da.ones_like(x)
    hv = lazily(lambda: ad.jvp(lambda x: ad.gradient(f, x)[0], (x,), (v,))[1])
    assert isinstance(hv, da.Array)
    np.testing.assert_allclose(hv.compute(), 2 * np.cos(xn) - xn * np.sin(xn))


def test_function_of_dask_without_a_rule_is_a_clear_error() -> None:
    x, _ = chunked((1000,), 250)

    def f(x):
        return np.sum(da.map_blocks(np.sin, x))

    with pytest.raises(NoRuleError) as err:
        ad.gradient(f, x)
    message = str(err.value)
    assert "map_blocks" in message and "test_ad_dask.py" in message
    assert "dask/array" not in message.split("To fix")[0].split("called at")[1]
