"""Spellings of the array workloads for ``variants.py``: ``mlp_small``, ``mlp_large``,
``rnn``, ``gauss_logpdf``, ``elementwise``, ``rosenbrock``.

Each spelling computes the same function as its workload in ``workloads.py`` and is
checked against the same hand-written gradient; see ``variants.Variant`` for the fields.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import workloads as wl
from variants import Variant, attrs, baseline, baseline_prepare, float32, keys

MLP = ("W1", "b1", "W2", "b2")


def as_dict(names):
    """prepare: the parameters as one dict argument, for ``loss(p, *data)``."""
    return lambda loss: (
        lambda params, data: (
            lambda p: loss(p, *data),
            (dict(zip(names, params)),),
        )
    )


@dataclass
class MLPParams:
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


# mlp_small: params (W1, b1, W2, b2), data (X, y).


def mse_closure(X, y):
    def loss(W1, b1, W2, b2):
        h = np.tanh(X @ W1 + b1)
        out = h @ W2 + b2
        return np.mean((out - y) ** 2)

    return loss


def mse_tuple(params, X, y):
    W1, b1, W2, b2 = params
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 + b2 - y) ** 2)


def mse_dict(p, X, y):
    h = np.tanh(X @ p["W1"] + p["b1"])
    return np.mean((h @ p["W2"] + p["b2"] - y) ** 2)


def mse_dataclass(p, X, y):
    h = np.tanh(X @ p.W1 + p.b1)
    return np.mean((h @ p.W2 + p.b2 - y) ** 2)


class TanhMLP:
    def __init__(self, W1, b1, W2, b2):
        self.W1, self.b1, self.W2, self.b2 = W1, b1, W2, b2

    def __call__(self, X):
        h = np.tanh(X @ self.W1 + self.b1)
        return h @ self.W2 + self.b2


def mse_dot(W1, b1, W2, b2, X, y):
    h = np.tanh(np.dot(X, W1) + b1)
    return np.mean((np.dot(h, W2) + b2 - y) ** 2)


def mse_square(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    return np.mean(np.square(h @ W2 + b2 - y))


def dense(x, W, b):
    return x @ W + b


def mse_dense(W1, b1, W2, b2, X, y):
    h = np.tanh(dense(X, W1, b1))
    return np.mean((dense(h, W2, b2) - y) ** 2)


def mse_temps(W1, b1, W2, b2, X, y):
    z = X @ W1
    z = z + b1
    h = np.tanh(z)
    out = h @ W2
    out = out + b2
    r = out - y
    sq = r**2
    return np.mean(sq)


def on_data(loss):
    """prepare: ``lambda *params: loss(*params, *data)`` spelled out by name."""
    return lambda params, data: (lambda W1, b1, W2, b2: loss(W1, b1, W2, b2, *data), params)


MLP_SMALL = (
    baseline("mlp_small", "lambda W1, b1, W2, b2: f(…, X, y)"),
    Variant("mlp_small", "closure", lambda p, d: (mse_closure(*d), p)),
    Variant(
        "mlp_small",
        "functools.partial",
        lambda p, d: (functools.partial(wl.mlp_mse, X=d[0], y=d[1]), p),
    ),
    Variant("mlp_small", "lambda *p", lambda p, d: (lambda *q: wl.mlp_mse(*q, *d), p)),
    Variant(
        "mlp_small",
        "tuple params",
        lambda p, d: (lambda q: mse_tuple(q, *d), (tuple(p),)),
        leaves=lambda g: g[0],
    ),
    Variant(
        "mlp_small",
        "list params",
        lambda p, d: (lambda q: mse_tuple(q, *d), (list(p),)),
        leaves=lambda g: tuple(g[0]),
    ),
    Variant("mlp_small", "dict params", as_dict(MLP)(mse_dict), leaves=keys(*MLP)),
    Variant(
        "mlp_small",
        "dataclass params",
        lambda p, d: (lambda q: mse_dataclass(q, *d), (MLPParams(*p),)),
        leaves=attrs(*MLP),
    ),
    Variant(
        "mlp_small",
        "model object __call__",
        lambda p, d: (lambda m: np.mean((m(d[0]) - d[1]) ** 2), (TanhMLP(*p),)),
        leaves=attrs(*MLP),
    ),
    Variant("mlp_small", "np.dot", on_data(mse_dot)),
    Variant("mlp_small", "np.square", on_data(mse_square)),
    Variant("mlp_small", "dense() helper", on_data(mse_dense)),
    Variant("mlp_small", "temporaries", on_data(mse_temps)),
    Variant("mlp_small", "float32", baseline_prepare("mlp_small"), inputs=float32),
)

# mlp_large: params (W1, b1, W2, b2), data (X, Y one-hot).


def xent_dict(p, X, Y):
    h = np.maximum(X @ p["W1"] + p["b1"], 0.0)
    z = h @ p["W2"] + p["b2"]
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


class ReluMLP:
    def __init__(self, W1, b1, W2, b2):
        self.W1, self.b1, self.W2, self.b2 = W1, b1, W2, b2

    def __call__(self, X):
        h = np.maximum(X @ self.W1 + self.b1, 0.0)
        return h @ self.W2 + self.b2


def xent_model(model, X, Y):
    z = model(X)
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def xent_dataclass(p, X, Y):
    return xent_model(lambda X: np.maximum(X @ p.W1 + p.b1, 0.0) @ p.W2 + p.b2, X, Y)


def xent_dot(W1, b1, W2, b2, X, Y):
    h = np.maximum(np.dot(X, W1) + b1, 0.0)
    z = np.dot(h, W2) + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def relu(a):
    return np.maximum(a, 0.0)


def log_softmax(z):
    z = z - np.max(z, axis=1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))


def xent_helpers(W1, b1, W2, b2, X, Y):
    logp = log_softmax(dense(relu(dense(X, W1, b1)), W2, b2))
    return -np.sum(Y * logp) / X.shape[0]


def xent_two_sums(W1, b1, W2, b2, X, Y):
    # Y's rows are one-hot: sum(Y * logp) = sum(Y * z) - sum(logsumexp(z)).
    h = np.maximum(X @ W1 + b1, 0.0)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z), axis=1))
    return (np.sum(lse) - np.sum(Y * z)) / X.shape[0]


def xent_aug(W1, b1, W2, b2, X, Y):
    h = X @ W1
    h += b1
    h = np.maximum(h, 0.0)
    z = h @ W2
    z += b2
    z -= np.max(z, axis=1, keepdims=True)
    z -= np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * z) / X.shape[0]


MLP_LARGE = (
    baseline("mlp_large", "lambda W1, b1, W2, b2: f(…, X, Y)"),
    Variant(
        "mlp_large",
        "functools.partial",
        lambda p, d: (functools.partial(wl.mlp_softmax_xent, X=d[0], Y=d[1]), p),
    ),
    Variant("mlp_large", "dict params", as_dict(MLP)(xent_dict), leaves=keys(*MLP)),
    Variant(
        "mlp_large",
        "dataclass params",
        lambda p, d: (lambda q: xent_dataclass(q, *d), (MLPParams(*p),)),
        leaves=attrs(*MLP),
    ),
    Variant(
        "mlp_large",
        "model object __call__",
        lambda p, d: (lambda m: xent_model(m, *d), (ReluMLP(*p),)),
        leaves=attrs(*MLP),
    ),
    Variant("mlp_large", "np.dot", on_data(xent_dot)),
    Variant("mlp_large", "dense/relu/log_softmax helpers", on_data(xent_helpers)),
    Variant("mlp_large", "two np.sum terms", on_data(xent_two_sums)),
    Variant("mlp_large", "augmented assignment", on_data(xent_aug)),
    Variant("mlp_large", "float32", baseline_prepare("mlp_large"), inputs=float32),
)

# rnn: params (Wx, Wh, b, w_out), data (xs,).
RNN = ("Wx", "Wh", "b", "w_out")


def rnn_indices(Wx, Wh, b, w_out, xs):
    h = np.zeros(Wh.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(Wx @ xs[t] + Wh @ h + b)
    return (w_out @ h) ** 2


def rnn_enumerate(Wx, Wh, b, w_out, xs):
    h = np.zeros(Wh.shape[0])
    for _t, x in enumerate(xs):
        h = np.tanh(Wx @ x + Wh @ h + b)
    return (w_out @ h) ** 2


def cell(h, x, Wx, Wh, b):
    return np.tanh(Wx @ x + Wh @ h + b)


def rnn_cell(Wx, Wh, b, w_out, xs):
    h = np.zeros(Wh.shape[0])
    for x in xs:
        h = cell(h, x, Wx, Wh, b)
    return (w_out @ h) ** 2


def rnn_dot(Wx, Wh, b, w_out, xs):
    h = np.zeros(Wh.shape[0])
    for x in xs:
        h = np.tanh(np.dot(Wx, x) + np.dot(Wh, h) + b)
    return np.dot(w_out, h) ** 2


def rnn_dict(p, xs):
    h = np.zeros(p["Wh"].shape[0])
    for x in xs:
        h = np.tanh(p["Wx"] @ x + p["Wh"] @ h + p["b"])
    return (p["w_out"] @ h) ** 2


class Elman:
    def __init__(self, Wx, Wh, b, w_out):
        self.Wx, self.Wh, self.b, self.w_out = Wx, Wh, b, w_out

    def __call__(self, xs):
        h = np.zeros(self.Wh.shape[0])
        for x in xs:
            h = np.tanh(self.Wx @ x + self.Wh @ h + self.b)
        return self.w_out @ h


def rnn_readouts(Wx, Wh, b, w_out, xs):
    # A readout per step, as a sequence model keeps them; the loss reads the last.
    h = np.zeros(Wh.shape[0])
    ys = []
    for x in xs:
        h = np.tanh(Wx @ x + Wh @ h + b)
        ys.append(w_out @ h)
    return ys[-1] ** 2


def rnn_states(Wx, Wh, b, w_out, xs):
    hs = [np.zeros(Wh.shape[0])]
    for x in xs:
        hs.append(np.tanh(Wx @ x + Wh @ hs[-1] + b))
    return (w_out @ hs[-1]) ** 2


def rnn_aug(Wx, Wh, b, w_out, xs):
    h = np.zeros(Wh.shape[0])
    for x in xs:
        a = Wx @ x
        a += Wh @ h
        a += b
        h = np.tanh(a)
    return (w_out @ h) ** 2


def rnn_projected(Wx, Wh, b, w_out, xs):
    # The input projections of all steps in one matrix product, before the loop.
    h = np.zeros(Wh.shape[0])
    for u in xs @ Wx.T + b:
        h = np.tanh(u + Wh @ h)
    return (w_out @ h) ** 2


def rnn_on_data(loss):
    return lambda params, data: (lambda Wx, Wh, b, w_out: loss(Wx, Wh, b, w_out, *data), params)


RNN_VARIANTS = (
    baseline("rnn", "for x in xs (rows)"),
    Variant("rnn", "for t in range: xs[t]", rnn_on_data(rnn_indices)),
    Variant("rnn", "enumerate(xs)", rnn_on_data(rnn_enumerate)),
    Variant("rnn", "cell(h, x, …) helper", rnn_on_data(rnn_cell)),
    Variant("rnn", "np.dot", rnn_on_data(rnn_dot)),
    Variant("rnn", "dict params", as_dict(RNN)(rnn_dict), leaves=keys(*RNN)),
    Variant(
        "rnn",
        "model object __call__",
        lambda p, d: (lambda m: m(*d) ** 2, (Elman(*p),)),
        leaves=attrs(*RNN),
    ),
    Variant("rnn", "per-step readouts list", rnn_on_data(rnn_readouts)),
    Variant("rnn", "hs.append(h), hs[-1]", rnn_on_data(rnn_states)),
    Variant("rnn", "augmented a += …", rnn_on_data(rnn_aug)),
    Variant("rnn", "inputs projected once", rnn_on_data(rnn_projected)),
    Variant("rnn", "float32", baseline_prepare("rnn"), inputs=float32),
)

# gauss_logpdf: params (mu, S), data (x,).


def gauss_temps(mu, S, x):
    L = np.linalg.cholesky(S)
    r = x - mu
    z = np.linalg.solve(L, r)
    quad = z @ z
    half_logdet = np.sum(np.log(np.diagonal(L)))
    const = 0.5 * x.shape[0] * math.log(2.0 * math.pi)
    return -0.5 * quad - half_logdet - const


def gauss_dot(mu, S, x):
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x - mu)
    n = x.shape[0]
    return -0.5 * np.dot(z, z) - np.sum(np.log(np.diag(L))) - 0.5 * n * math.log(2.0 * math.pi)


def gauss_square(mu, S, x):
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x - mu)
    n = x.shape[0]
    return (
        -0.5 * np.sum(np.square(z))
        - np.sum(np.log(np.diagonal(L)))
        - 0.5 * n * math.log(2.0 * math.pi)
    )


def gauss_methods(mu, S, x):
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x - mu)
    n = x.shape[0]
    return -0.5 * z.dot(z) - np.log(L.diagonal()).sum() - 0.5 * n * math.log(2.0 * math.pi)


def mahalanobis_sq(L, r):
    z = np.linalg.solve(L, r)
    return z @ z


def half_logdet(L):
    return np.sum(np.log(np.diagonal(L)))


def gauss_helpers(mu, S, x):
    L = np.linalg.cholesky(S)
    n = x.shape[0]
    return -0.5 * mahalanobis_sq(L, x - mu) - half_logdet(L) - 0.5 * n * math.log(2.0 * math.pi)


def gauss_dict(p, x):
    return wl.gauss_logpdf(p["mu"], p["S"], x)


@dataclass
class Gaussian:
    mu: np.ndarray
    S: np.ndarray

    def logpdf(self, x):
        return wl.gauss_logpdf(self.mu, self.S, x)


def gauss_on_data(loss):
    return lambda params, data: (lambda mu, S: loss(mu, S, *data), params)


GAUSS = (
    baseline("gauss_logpdf", "lambda mu, S: f(mu, S, x)"),
    Variant("gauss_logpdf", "temporaries", gauss_on_data(gauss_temps)),
    Variant("gauss_logpdf", "np.dot(z, z), np.diag", gauss_on_data(gauss_dot)),
    Variant("gauss_logpdf", "np.sum(np.square(z))", gauss_on_data(gauss_square)),
    Variant("gauss_logpdf", "methods z.dot, .diagonal().sum()", gauss_on_data(gauss_methods)),
    Variant("gauss_logpdf", "two helpers", gauss_on_data(gauss_helpers)),
    Variant(
        "gauss_logpdf",
        "functools.partial",
        lambda p, d: (functools.partial(wl.gauss_logpdf, x=d[0]), p),
    ),
    Variant(
        "gauss_logpdf", "dict params", as_dict(("mu", "S"))(gauss_dict), leaves=keys("mu", "S")
    ),
    Variant(
        "gauss_logpdf",
        "dataclass with method",
        lambda p, d: (lambda g: g.logpdf(*d), (Gaussian(*p),)),
        leaves=attrs("mu", "S"),
    ),
    Variant("gauss_logpdf", "float32", baseline_prepare("gauss_logpdf"), inputs=float32),
)

# elementwise: params (x, y), no data.


def elementwise_temps(x, y):
    s = np.sin(x)
    g = np.exp(-0.5 * x * x)
    t = np.tanh(y)
    v = s * g + t * x + y * y
    return np.sum(v)


def elementwise_two_sums(x, y):
    return np.sum(np.sin(x) * np.exp(-0.5 * x * x)) + np.sum(np.tanh(y) * x + y * y)


def elementwise_square(x, y):
    return np.sum(np.sin(x) * np.exp(-0.5 * np.square(x)) + np.tanh(y) * x + np.square(y))


def elementwise_pow(x, y):
    return np.sum(np.sin(x) * np.exp(-0.5 * x**2) + np.tanh(y) * x + y**2)


def bump(x):
    return np.sin(x) * np.exp(-0.5 * x * x)


def mix(x, y):
    return np.tanh(y) * x


def quad(y):
    return y * y


def elementwise_helpers(x, y):
    return np.sum(bump(x) + mix(x, y) + quad(y))


def elementwise_aug(x, y):
    s = np.sin(x) * np.exp(-0.5 * x * x)
    s += np.tanh(y) * x
    s += y * y
    return np.sum(s)


def elementwise_method(x, y):
    return (np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x + y * y).sum()


ELEMENTWISE = (
    baseline("elementwise", "f direct"),
    Variant("elementwise", "lambda *p", lambda p, d: (lambda *q: wl.elementwise(*q), p)),
    Variant("elementwise", "temporaries", lambda p, d: (elementwise_temps, p)),
    Variant("elementwise", "two np.sum terms", lambda p, d: (elementwise_two_sums, p)),
    Variant("elementwise", "np.square", lambda p, d: (elementwise_square, p)),
    Variant("elementwise", "x**2 for x*x", lambda p, d: (elementwise_pow, p)),
    Variant("elementwise", "three helpers", lambda p, d: (elementwise_helpers, p)),
    Variant("elementwise", "augmented s += …", lambda p, d: (elementwise_aug, p)),
    Variant("elementwise", "(…).sum() method", lambda p, d: (elementwise_method, p)),
    Variant(
        "elementwise",
        "tuple params",
        lambda p, d: (lambda q: wl.elementwise(*q), (tuple(p),)),
        leaves=lambda g: g[0],
    ),
    Variant("elementwise", "float32", baseline_prepare("elementwise"), inputs=float32),
)

# rosenbrock: params (x,), no data.


def rosen_temps(x):
    a = x[:-1]
    b = x[1:]
    r = b - a**2
    return np.sum(100.0 * r**2 + (1.0 - a) ** 2)


def rosen_two_sums(x):
    return 100.0 * np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum((1.0 - x[:-1]) ** 2)


def rosen_square(x):
    return np.sum(100.0 * np.square(x[1:] - np.square(x[:-1])) + np.square(1.0 - x[:-1]))


def rosen_term(a, b):
    return 100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2


def rosen_helper(x):
    return np.sum(rosen_term(x[:-1], x[1:]))


def rosen_aug(x):
    s = 100.0 * (x[1:] - x[:-1] ** 2) ** 2
    s += (1.0 - x[:-1]) ** 2
    return np.sum(s)


def rosen_ab(x, a=1.0, b=100.0):
    return np.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)


def rosen_closure(a, b):
    def f(x):
        return np.sum(b * (x[1:] - x[:-1] ** 2) ** 2 + (a - x[:-1]) ** 2)

    return f


ROSENBROCK = (
    baseline("rosenbrock", "f direct"),
    Variant("rosenbrock", "temporaries a, b, r", lambda p, d: (rosen_temps, p)),
    Variant("rosenbrock", "two np.sum terms", lambda p, d: (rosen_two_sums, p)),
    Variant("rosenbrock", "np.square", lambda p, d: (rosen_square, p)),
    Variant("rosenbrock", "term(a, b) helper", lambda p, d: (rosen_helper, p)),
    Variant("rosenbrock", "augmented s += …", lambda p, d: (rosen_aug, p)),
    Variant(
        "rosenbrock",
        "functools.partial(a=, b=)",
        lambda p, d: (functools.partial(rosen_ab, a=1.0, b=100.0), p),
    ),
    Variant("rosenbrock", "closure over a, b", lambda p, d: (rosen_closure(1.0, 100.0), p)),
    Variant("rosenbrock", "float32", baseline_prepare("rosenbrock"), inputs=float32),
)

VARIANTS = MLP_SMALL + MLP_LARGE + RNN_VARIANTS + GAUSS + ELEMENTWISE + ROSENBROCK
