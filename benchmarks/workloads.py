"""The benchmark workloads: plain numpy/Python functions and their hand-written gradients.

Each `Workload` pairs a loss a user would write (``f(*params, *data)``, using only the
module globals ``np`` and ``math``) with a hand-written numpy gradient ``grad(*params,
*data)`` returning one array per parameter: the reference limit an AD is measured
against. ``make(rng, small)`` builds ``(params, data)`` from a seeded generator;
``small=True`` gives tiny sizes for the smoke test. Only ``params`` are differentiated;
``data`` is captured by a closure, so an AD that skips unrequested cotangents gains.

Because the losses look ``np`` and ``math`` up as globals at call time, a peer AD
(autograd, JAX, PyTorch) runs the very same source after this module is loaded again
with those two names rebound (see ``run.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["WORKLOADS", "Workload"]


@dataclass(frozen=True)
class Workload:
    """One benchmark: the loss, its hand-written gradient, inputs, and the target.

    ``bind(*data)`` returns the function of the parameters alone that is differentiated,
    a closure over the data as a user writes it (``lambda W: loss(W, X)``).
    ``target`` is DESIGN.md's bound on ``ad`` time ÷ hand-written gradient time;
    ``n_ops`` is the number of primitive operations of a scalar workload (for the
    per-operation overhead), ``None`` for array workloads. ``symmetric`` lists the
    parameters that are symmetric matrices: their gradients follow the symmetric
    convention, so finite differences must perturb them symmetrically.
    """

    name: str
    f: Callable
    grad: Callable
    make: Callable
    bind: Callable
    target: float
    n_ops: int | None = None
    symmetric: tuple[int, ...] = ()


def pow_loop(x, n):
    """x**n by repeated multiplication: a scalar Python loop."""
    r = 1.0
    for _ in range(n):
        r = r * x
    return r


def pow_loop_grad(x, n):
    # Forward-mode product rule in the same loop: what a person writes by hand.
    r, dr = 1.0, 0.0
    for _ in range(n):
        r, dr = r * x, dr * x + r
    return (dr,)


def make_pow_loop(rng, small=False):
    return (1.0 + 0.01 * rng.random(),), (10 if small else 100,)


def bind_pow_loop(n):
    return lambda x: pow_loop(x, n)


def math_expr(x, y, z):
    """A straight-line scalar expression of 39 operations, 10 of them ``math`` calls."""
    a = math.sin(x) * math.cos(y) + math.exp(-z * z)
    b = math.log(1.0 + x * x) / (1.0 + math.sqrt(y * y + 1.0))
    c = math.tanh(a - b) ** 2 + a * b
    d = math.atan(x * y - z) * math.cosh(0.1 * c)
    e = (a + b + c + d) / (2.0 + math.sin(z) ** 2)
    return e * math.exp(-0.5 * x) + d - c / 3.0


def math_expr_grad(x, y, z):
    # Forward, keeping what the reverse sweep needs.
    sx, cx, cy, sy = math.sin(x), math.cos(x), math.cos(y), math.sin(y)
    ez = math.exp(-z * z)
    a = sx * cy + ez
    q = math.sqrt(y * y + 1.0)
    den_b = 1.0 + q
    lx = math.log(1.0 + x * x)
    b = lx / den_b
    t = math.tanh(a - b)
    c = t**2 + a * b
    u = x * y - z
    at = math.atan(u)
    ch = math.cosh(0.1 * c)
    d = at * ch
    sz = math.sin(z)
    den_e = 2.0 + sz**2
    num_e = a + b + c + d
    e = num_e / den_e
    ex = math.exp(-0.5 * x)
    # Reverse sweep.
    e_bar = ex
    x_bar = -0.5 * e * ex
    d_bar = 1.0 + e_bar / den_e
    c_bar = -1.0 / 3.0 + e_bar / den_e
    a_bar = e_bar / den_e
    b_bar = e_bar / den_e
    z_bar = -e_bar * num_e / den_e**2 * 2.0 * sz * math.cos(z)
    u_bar = d_bar * ch / (1.0 + u * u)
    c_bar += d_bar * at * math.sinh(0.1 * c) * 0.1
    x_bar += u_bar * y
    y_bar = u_bar * x
    z_bar -= u_bar
    t_bar = c_bar * 2.0 * t * (1.0 - t * t)
    a_bar += c_bar * b + t_bar
    b_bar += c_bar * a - t_bar
    x_bar += b_bar / den_b * 2.0 * x / (1.0 + x * x)
    y_bar -= b_bar * lx / den_b**2 * y / q
    x_bar += a_bar * cx * cy
    y_bar -= a_bar * sx * sy
    z_bar -= a_bar * ez * 2.0 * z
    return (x_bar, y_bar, z_bar)


def make_math_expr(rng, small=False):
    return tuple(float(v) for v in rng.uniform(0.2, 1.2, 3)), ()


def bind_math_expr():
    return math_expr


def mlp_mse(W1, b1, W2, b2, X, y):
    """A one-hidden-layer tanh network with a mean-squared-error loss."""
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def mlp_mse_grad(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    d_out = (2.0 / out.size) * (out - y)
    dz = (d_out @ W2.T) * (1.0 - h * h)
    return (X.T @ dz, dz.sum(axis=0), h.T @ d_out, d_out.sum(axis=0))


def make_mlp_small(rng, small=False):
    batch, n_in, n_hid = 8, 16, 16
    params = (
        rng.standard_normal((n_in, n_hid)) / math.sqrt(n_in),
        0.1 * rng.standard_normal(n_hid),
        rng.standard_normal((n_hid, 1)) / math.sqrt(n_hid),
        0.1 * rng.standard_normal(1),
    )
    return params, (rng.standard_normal((batch, n_in)), rng.standard_normal((batch, 1)))


def bind_mlp_small(X, y):
    return lambda W1, b1, W2, b2: mlp_mse(W1, b1, W2, b2, X, y)


def mlp_softmax_xent(W1, b1, W2, b2, X, Y):
    """A one-hidden-layer ReLU classifier with a softmax cross-entropy loss
    (``Y`` one-hot)."""
    h = np.maximum(X @ W1 + b1, 0.0)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def mlp_softmax_xent_grad(W1, b1, W2, b2, X, Y):
    a = X @ W1 + b1
    h = np.maximum(a, 0.0)
    z = h @ W2 + b2
    p = np.exp(z - np.max(z, axis=1, keepdims=True))
    p /= np.sum(p, axis=1, keepdims=True)
    dz = (p - Y) / X.shape[0]
    da = (dz @ W2.T) * (a > 0.0)
    return (X.T @ da, da.sum(axis=0), h.T @ dz, dz.sum(axis=0))


def make_mlp_large(rng, small=False):
    batch, n_in, n_hid, n_out = (8, 12, 12, 10) if small else (256, 512, 512, 10)
    params = (
        rng.standard_normal((n_in, n_hid)) * math.sqrt(2.0 / n_in),
        0.1 * rng.standard_normal(n_hid),
        rng.standard_normal((n_hid, n_out)) / math.sqrt(n_hid),
        0.1 * rng.standard_normal(n_out),
    )
    Y = np.eye(n_out)[rng.integers(0, n_out, batch)]
    return params, (rng.standard_normal((batch, n_in)), Y)


def bind_mlp_large(X, Y):
    return lambda W1, b1, W2, b2: mlp_softmax_xent(W1, b1, W2, b2, X, Y)


def rnn(Wx, Wh, b, w_out, xs):
    """An Elman RNN run by a Python loop over the rows of ``xs``; squared readout."""
    h = np.zeros(Wh.shape[0])
    for x in xs:
        h = np.tanh(Wx @ x + Wh @ h + b)
    return (w_out @ h) ** 2


def rnn_grad(Wx, Wh, b, w_out, xs):
    hs = [np.zeros(Wh.shape[0])]
    for x in xs:
        hs.append(np.tanh(Wx @ x + Wh @ hs[-1] + b))
    s = w_out @ hs[-1]
    dWx, dWh, db = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(b)
    dh = 2.0 * s * w_out
    for t in range(len(xs) - 1, -1, -1):
        da = dh * (1.0 - hs[t + 1] ** 2)
        dWx += np.outer(da, xs[t])
        dWh += np.outer(da, hs[t])
        db += da
        dh = Wh.T @ da
    return (dWx, dWh, db, 2.0 * s * hs[-1])


def make_rnn(rng, small=False):
    steps, n_in, n_hid = (5, 3, 4) if small else (50, 8, 32)
    params = (
        rng.standard_normal((n_hid, n_in)) / math.sqrt(n_in),
        rng.standard_normal((n_hid, n_hid)) / math.sqrt(n_hid),
        0.1 * rng.standard_normal(n_hid),
        rng.standard_normal(n_hid) / math.sqrt(n_hid),
    )
    return params, (rng.standard_normal((steps, n_in)),)


def bind_rnn(xs):
    return lambda Wx, Wh, b, w_out: rnn(Wx, Wh, b, w_out, xs)


def gauss_logpdf(mu, S, x):
    """The log-density of ``x`` under N(mu, S), through the Cholesky factor of S."""
    L = np.linalg.cholesky(S)
    z = np.linalg.solve(L, x - mu)
    n = x.shape[0]
    return -0.5 * (z @ z) - np.sum(np.log(np.diagonal(L))) - 0.5 * n * math.log(2.0 * math.pi)


def gauss_logpdf_grad(mu, S, x):
    L = np.linalg.cholesky(S)
    Linv = np.linalg.solve(L, np.eye(x.shape[0]))
    S_inv = Linv.T @ Linv
    alpha = S_inv @ (x - mu)
    # cholesky reads the lower triangle of S: the symmetric gradient G is read back
    # onto it (2 G below the diagonal, G on it, 0 above), as the Cholesky rule does.
    G = 0.5 * (np.outer(alpha, alpha) - S_inv)
    return (alpha, 2 * np.tril(G, -1) + np.diag(np.diag(G)))


def make_gauss(rng, small=False):
    n = 6 if small else 200
    A = rng.standard_normal((n, n)) / math.sqrt(n)
    S = A @ A.T + np.eye(n)
    return (rng.standard_normal(n), S), (rng.standard_normal(n),)


def bind_gauss(x):
    return lambda mu, S: gauss_logpdf(mu, S, x)


def elementwise(x, y):
    """A large elementwise expression summed to a scalar."""
    return np.sum(np.sin(x) * np.exp(-0.5 * x * x) + np.tanh(y) * x + y * y)


def elementwise_grad(x, y):
    g = np.exp(-0.5 * x * x)
    t = np.tanh(y)
    return ((np.cos(x) - x * np.sin(x)) * g + t, (1.0 - t * t) * x + 2.0 * y)


def make_elementwise(rng, small=False):
    n = 1000 if small else 10**6
    return (rng.standard_normal(n), rng.standard_normal(n)), ()


def bind_elementwise():
    return elementwise


def rosenbrock(x):
    """The vectorised Rosenbrock function."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    r = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return (g,)


def make_rosenbrock(rng, small=False):
    return (rng.uniform(-1.5, 1.5, 20 if small else 10**4),), ()


def bind_rosenbrock():
    return rosenbrock


# Primitive operations per call, counted as the AD sees them (each operator and call):
# pow_loop, one multiply per iteration; math_expr, 28 binary + 1 unary operators (-z)
# and 10 ``math`` calls (``-0.5`` is a constant).
WORKLOADS = (
    Workload("pow_loop", pow_loop, pow_loop_grad, make_pow_loop, bind_pow_loop, 15.0, 100),
    Workload("math_expr", math_expr, math_expr_grad, make_math_expr, bind_math_expr, 15.0, 39),
    Workload("mlp_small", mlp_mse, mlp_mse_grad, make_mlp_small, bind_mlp_small, 3.0),
    Workload(
        "mlp_large",
        mlp_softmax_xent,
        mlp_softmax_xent_grad,
        make_mlp_large,
        bind_mlp_large,
        1.1,
    ),
    Workload("rnn", rnn, rnn_grad, make_rnn, bind_rnn, 3.0),
    Workload(
        "gauss_logpdf",
        gauss_logpdf,
        gauss_logpdf_grad,
        make_gauss,
        bind_gauss,
        1.2,
        symmetric=(1,),
    ),
    Workload("elementwise", elementwise, elementwise_grad, make_elementwise, bind_elementwise, 1.1),
    Workload("rosenbrock", rosenbrock, rosenbrock_grad, make_rosenbrock, bind_rosenbrock, 2.0),
)
