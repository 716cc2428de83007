"""The finite-difference engine: coefficients, accuracy, adaptivity, jvp and j_vp."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulestest import backward_fdm, central_fdm, forward_fdm, j_vp, jvp

ACCURACY = [
    # (name, method, f, x, exact derivative, tolerance)
    ("sin, 5-point first", central_fdm(5, 1), math.sin, 0.3, math.cos(0.3), 1e-12),
    ("exp at 2, 5-point", central_fdm(5, 1), math.exp, 2.0, math.exp(2.0), 1e-11),
    ("log near 0", central_fdm(5, 1), math.log, 0.1, 10.0, 1e-9),
    ("3-point first", central_fdm(3, 1), math.sin, 1.0, math.cos(1.0), 1e-9),
    ("7-point first", central_fdm(7, 1), math.sin, 1.0, math.cos(1.0), 1e-13),
    ("4-point (half-integer grid)", central_fdm(4, 1), math.sin, 1.0, math.cos(1.0), 1e-10),
    ("second derivative", central_fdm(7, 2), math.sin, 0.5, -math.sin(0.5), 1e-8),
    ("linear function", central_fdm(5, 1), lambda t: 3.0 * t - 1.0, 0.0, 3.0, 1e-13),
    ("tiny scale", central_fdm(), lambda t: 1e-8 * math.sin(t), 0.3, 1e-8 * math.cos(0.3), 1e-20),
    ("huge scale", central_fdm(), lambda t: 1e8 * math.sin(t), 0.3, 1e8 * math.cos(0.3), 1e-3),
    ("forward", forward_fdm(5, 1), math.sqrt, 0.25, 1.0, 1e-7),
    ("backward", backward_fdm(5, 1), math.log, 1.0, 1.0, 1e-7),
    ("unadapted", central_fdm(5, 1, adapt=0), math.sin, 0.3, math.cos(0.3), 1e-10),
    ("adapt=2", central_fdm(5, 1, adapt=2), math.exp, 0.0, 1.0, 1e-12),
]  # fmt: skip


@pytest.mark.parametrize(("fdm", "f", "x", "exact", "tol"), [c[1:] for c in ACCURACY],
                         ids=[c[0] for c in ACCURACY])  # fmt: skip
def test_accuracy(fdm, f, x, exact, tol):
    assert abs(fdm(f, x) - exact) <= tol


def test_coefficients_are_exact():
    assert central_fdm(5, 1).coefs == (1 / 12, -2 / 3, 0.0, 2 / 3, -1 / 12)
    assert central_fdm(3, 2).coefs == (1.0, -2.0, 1.0)
    assert forward_fdm(2, 1, adapt=0).coefs == (-1.0, 1.0)


def test_vector_valued_function():
    f = lambda t: np.array([math.sin(t), 1e6 * math.cos(t), 0.0])  # noqa: E731
    d = central_fdm(5, 1)(f, 0.5)
    np.testing.assert_allclose(d, [math.cos(0.5), -1e6 * math.sin(0.5), 0.0], rtol=1e-11)


def test_max_range_keeps_evaluations_inside_the_domain():
    seen = []

    def f(t):
        seen.append(t)
        return math.log(t)

    fdm = central_fdm(5, 1, max_range=0.05)
    assert abs(fdm(f, 0.1) - 10.0) < 1e-6
    assert min(seen) >= 0.1 - 0.05 - 1e-15


def test_explicit_step():
    assert abs(central_fdm(5, 1)(math.sin, 0.0, step=1e-3) - 1.0) < 1e-12


def test_float32_precision_gives_a_larger_step():
    fdm = central_fdm(5, 1)
    h64 = fdm.estimate_step(math.sin, 0.3)[0]
    h32 = fdm.estimate_step(math.sin, 0.3, eps=float(np.finfo(np.float32).eps))[0]
    assert h32 > 10 * h64


@pytest.mark.parametrize(("p", "q"), [(1, 1), (3, 3), (3, 0)])
def test_invalid_methods_are_rejected(p, q):
    with pytest.raises(ValueError, match="points"):
        central_fdm(p, q)


def test_jvp_on_structures():
    def f(d, x):
        return {"y": d["a"] * x, "z": np.sum(x) * d["b"]}

    d, x = {"a": 2.0, "b": 3.0}, np.array([1.0, 2.0])
    ẏ = jvp(central_fdm(), f, (d, {"a": 1.0, "b": 0.0}), (x, np.array([0.0, 1.0])))
    np.testing.assert_allclose(ẏ["y"], [1.0, 4.0], atol=1e-10)
    assert abs(ẏ["z"] - 3.0) < 1e-10


def test_j_vp_complex_follows_the_chainrules_convention():
    # L = Re(conj(ȳ) z²): the gradient is ∂L/∂re + i ∂L/∂im = ȳ conj(2z).
    z, ȳ = 1.0 + 2.0j, 0.5 - 1.0j
    (dz,) = j_vp(central_fdm(), lambda z: z * z, ȳ, z)
    assert abs(dz - ȳ * np.conj(2 * z)) < 1e-10


def test_j_vp_matches_the_transposed_jacobian():
    A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ȳ = np.array([1.0, -1.0])
    (dx,) = j_vp(central_fdm(), lambda x: A @ x, ȳ, np.zeros(3))
    np.testing.assert_allclose(dx, A.T @ ȳ, atol=1e-10)
