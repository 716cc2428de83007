"""Second derivatives through the rules: ``hessian`` (forward over gradient) and
``hessian_reverse`` (reverse over reverse) of small functions built on each
family of rules — math and numpy elementwise, reductions, products, linear
algebra, shapes, containers, control flow — against central differences of
``gradient``, which the first-order tests check against finite differences of
the function. A rule whose frule body cannot be followed would fail here, and
one whose second derivative came out wrong (e.g. a derivative lost inside a
rule body) would disagree with the differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ad_testing import fd_hessian

import ad

X3 = np.array([0.3, 0.7, 0.45])
M = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.8]])


def _np_unary(fn):
    return lambda x: np.sum(fn(x) * x)


def _math_unary(fn):
    return lambda x: fn(x[0]) * x[1] + fn(x[2])


def _math_binary(fn):
    return lambda x: fn(x[0], x[1]) * x[2]


NP_UNARY = (
    "sin cos tan exp log sqrt sinh cosh tanh arcsin arctan arcsinh log1p expm1 exp2 log2 "
    "log10 square cbrt reciprocal abs negative"
).split()
MATH_UNARY = "sin cos tan exp log sqrt sinh cosh tanh asin atan asinh log1p expm1 erf erfc gamma lgamma".split()
MATH_BINARY = "atan2 hypot pow".split()

CASES = {f"np.{n}": _np_unary(getattr(np, n)) for n in NP_UNARY}
CASES.update({f"math.{n}": _math_unary(getattr(math, n)) for n in MATH_UNARY})
CASES.update({f"math.{n}": _math_binary(getattr(math, n)) for n in MATH_BINARY})
CASES.update(
    {
        "prod": lambda x: np.prod(x),
        "mean": lambda x: np.mean(x**2) * x[0],
        "var": lambda x: np.var(x) * x[1],
        "std": lambda x: np.std(x),
        "max": lambda x: np.max(x * x),
        "min": lambda x: np.min(x**2 + x),
        "maximum": lambda x: np.sum(np.maximum(x, 0.5) ** 2),
        "where": lambda x: np.sum(np.where(x > 0.4, x**3, x**2)),
        "clip": lambda x: np.sum(np.clip(x, 0.35, 0.6) ** 2),
        "sort": lambda x: np.sum(np.sort(x) * np.array([1.0, 2.0, 3.0])) ** 2,
        "cumsum": lambda x: np.sum(np.cumsum(x) ** 2),
        "sum_axis_keyword": lambda x: np.sum(np.sum(np.outer(x, x), axis=0) ** 2),
        "dot": lambda x: np.dot(x, M @ x),
        "matmul": lambda x: x @ M @ x,
        "outer": lambda x: np.sum(np.outer(x, x) ** 2),
        "einsum": lambda x: np.einsum("i,ij,j->", x, M, x),
        "trace": lambda x: np.trace(np.outer(x, x) @ M),
        "diag": lambda x: np.sum(np.diag(x) @ M @ np.diag(x)),
        "solve": lambda x: np.sum(np.linalg.solve(M + np.diag(x), x)),
        "inv": lambda x: np.sum(np.linalg.inv(M + np.diag(x))),
        "det": lambda x: np.linalg.det(M + np.diag(x)),
        "slogdet": lambda x: np.linalg.slogdet(M + np.diag(x))[1],
        "cholesky": lambda x: np.sum(np.linalg.cholesky(M + np.diag(x))),
        "norm": lambda x: np.linalg.norm(x),
        "norm_ord3": lambda x: np.linalg.norm(x, 3),
        "concatenate": lambda x: np.sum(np.concatenate([x, x**2]) ** 2),
        "stack": lambda x: np.sum(np.stack([x, x**2]) ** 3),
        "reshape": lambda x: np.sum(x.reshape(3, 1) * x.reshape(1, 3) ** 2),
        "transpose_attribute": lambda x: np.sum(np.outer(x, x**2).T @ x),
        "methods": lambda x: (x**2).sum() * x.mean(),
        "logsumexp": lambda x: np.log(np.sum(np.exp(x))),
        "softmax_cross_entropy": lambda x: -np.log(np.exp(x[0]) / np.sum(np.exp(x))),
        "rational": lambda x: np.sum(x / (1 + x**2)),
        "power_of_arrays": lambda x: np.sum(x**x),
        "sigmoid": lambda x: np.sum(1 / (1 + np.exp(-x))),
        "tanh_layer": lambda x: np.sum(np.tanh(M @ x + 0.1) ** 2),
        "complex_intermediate": lambda x: abs(np.sum(np.exp(1j * x) * x)) ** 2,
        "list_comprehension": lambda x: sum([xi**2 for xi in x]) * x[0],
        "generator_of_floats": lambda x: sum(
            float(x[i]) ** 2 * float(x[(i + 1) % 3]) for i in range(3)
        ),
        "star_call": lambda x: (lambda a, b, c: a * b * c)(*x),
        "dict": lambda x: (lambda d: d["a"] ** 2 * d["b"])({"a": x[0], "b": x[1] + x[2]}),
    }
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_through_rules_matches_differences_of_the_gradient(name):
    f = CASES[name]
    H = ad.hessian(f, X3)
    np.testing.assert_allclose(H, fd_hessian(f, X3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ad.hessian_reverse(f, X3), H, rtol=1e-10, atol=1e-10)
