"""ad on CuPy arrays (GPU): numpy's rules, cotangents that stay on the device.

Runs where CuPy and a GPU are present; skipped elsewhere (no GPU is needed for
the suite to pass). Each derivative is compared with the one on numpy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ad

cp = pytest.importorskip("cupy")
try:
    cp.zeros(1).sum().item()
except Exception as e:  # CuPy installed, but no usable GPU or driver
    pytest.skip(f"no usable GPU for CuPy: {e}", allow_module_level=True)


def pair(shape: tuple, seed: int = 0) -> tuple:
    x = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    return cp.asarray(x), x


def check(f: Any, cargs: tuple, nargs: tuple) -> None:
    g = ad.gradient(f, *cargs)
    assert all(isinstance(d, cp.ndarray) for d in g), [type(d) for d in g]
    for a, b in zip(g, ad.gradient(f, *nargs)):
        np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-9)
    ts = tuple(a * 0.5 for a in cargs)
    ẏ = ad.jvp(f, cargs, ts)[1]
    ẏn = ad.jvp(f, nargs, tuple(a * 0.5 for a in nargs))[1]
    assert isinstance(ẏ, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(ẏ), ẏn, rtol=1e-9)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(np.sin(x) * x),
        lambda x: np.sum(np.exp(-x) / (1.0 + x**2)) + x.sum() * 0.5,
        lambda x: cp.sum(cp.tanh(x) ** 2),
        lambda x: np.sum(np.mean(x.reshape(100, -1), axis=0) ** 2) + x.max(),
    ],
)
def test_elementwise_and_reductions(f: Any) -> None:
    x, xn = pair((10_000,))
    check(f, (x,), (xn,))


def test_small_mlp() -> None:
    rng = np.random.default_rng(1)
    Xn, yn = rng.normal(size=(2000, 20)), rng.normal(size=(2000, 1))
    X, y = cp.asarray(Xn), cp.asarray(yn)
    params = (rng.normal(size=(20, 16)) * 0.2, np.zeros(16), rng.normal(size=(16, 1)))

    def loss(W1, b1, W2, X, y):
        return np.mean((np.tanh(X @ W1 + b1) @ W2 - y) ** 2)

    g = ad.gradient(lambda *p: loss(*p, X, y), *map(cp.asarray, params))
    gn = ad.gradient(lambda *p: loss(*p, Xn, yn), *params)
    for a, b in zip(g, gn):
        assert isinstance(a, cp.ndarray)
        np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-9)
