"""Reverse mode over reverse mode (``hessian_reverse``) through ``jacobian``,
``withjacobian``, ``diaghessian`` and ``withgradient`` called inside the function.

``hessian_reverse`` differentiates the pullbacks of those calls as source. The
pullback of ``jacobian`` (``diaghessian``) is the gradient of ``⟨J, w⟩``
(``⟨diag H, w⟩``) whose weight ``w``, the cotangent of the inner result, depends
on the point; it was read through a non-differentiable helper, so every second
derivative through it was dropped and ``hessian_reverse`` returned zeros where
``hessian`` was right. ``withgradient``'s pullback reads its (val, grad)
cotangent by position, whose cotangent reverse over reverse could not map back
to the fields (it ran out of memory); ``withjacobian`` had no forward rule, so
``hessian`` refused it naming ad's own file. Each case is checked against central
differences of ``ad.gradient``, against ``ad.hessian`` and against a value
derived by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ad

A0 = np.array([0.7, 1.3])
Y0 = np.array([0.4, -0.9])


def fd_hessian(g: Callable, a: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central differences of ``ad.gradient``: column ``j`` is ``∂∇g/∂a[j]``."""
    cols = []
    for j in range(a.size):
        e = np.zeros_like(a)
        e[j] = h
        cols.append((ad.gradient(g, a + e)[0] - ad.gradient(g, a - e)[0]) / (2 * h))
    return np.stack(cols, axis=1)


def check(g: Callable, expected: np.ndarray, a: np.ndarray = A0) -> None:
    H = ad.hessian_reverse(g, a)
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ad.hessian(g, a), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fd_hessian(g, a), expected, rtol=1e-6, atol=1e-6)


def test_the_report_jacobian_squared() -> None:
    # J = diag(2a) at y = 1, g = Σ (2 a_i)² : H = 8 I
    def g(a):
        J = ad.jacobian(lambda y: a * y**2, np.ones(2))[0]
        return np.sum(J * J)

    check(g, 8.0 * np.eye(2))


def test_the_report_diaghessian_squared() -> None:
    # diag H of Σ a y³ at y = 1 is 6a, g = Σ (6 a_i)² : H = 72 I
    def k(a):
        return np.sum(ad.diaghessian(lambda y: np.sum(a * y**3), np.ones(2))[0] ** 2)

    check(k, 72.0 * np.eye(2))


def test_jacobian_of_several_arguments_an_array_and_a_number() -> None:
    # f(y, s) = a y² s: J_y = diag(2 a y s), J_s = a y² (a vector).
    # g = Σ J_y² + Σ J_s³ = Σ 4 a² y² s² + Σ a³ y⁶ : H = diag(8 y² s² + 6 a y⁶)
    s0 = 1.7

    def g(a):
        Jy, Js = ad.jacobian(lambda y, s: a * y**2 * s, Y0, s0)
        return np.sum(Jy**2) + np.sum(Js**3)

    check(g, np.diag(8 * Y0**2 * s0**2 + 6 * A0 * Y0**6))


def test_jacobian_of_several_arrays_weighted_across_arguments() -> None:
    # f(y, z) = a ⊙ y ⊙ z²: J_y = diag(a z²), J_z = diag(2 a y z).
    # g = Σ J_y · J_z = Σ 2 a² y z³ : H = diag(4 y z³)
    z0 = np.array([1.1, 0.6])

    def g(a):
        Jy, Jz = ad.jacobian(lambda y, z: a * y * z**2, Y0, z0)
        return np.sum(Jy * Jz)

    check(g, np.diag(4 * Y0 * z0**3))


def test_withjacobian_value_and_jacobian() -> None:
    # val = a y², J = diag(2 a y): g = Σ (a y²)² + Σ (2 a y)² : H = diag(2 y⁴ + 8 y²)
    def g(a):
        r = ad.withjacobian(lambda y: a * y**2, Y0)
        return np.sum(r.val**2) + np.sum(r.grad[0] ** 2)

    check(g, np.diag(2 * Y0**4 + 8 * Y0**2))


def test_withjacobian_in_forward_mode() -> None:
    # withjacobian has forward rules of its own (hessian above runs them twice):
    # val = c a y², J = diag(2 c a y) with c = 2 by keyword, along v
    v = np.array([0.3, -1.2])

    def val_and_diag(a):
        r = ad.withjacobian(lambda y, c=1.0: c * a * y**2, Y0, c=2.0)
        return r.val + np.diag(r.grad[0])

    _, ẏ = ad.jvp(val_and_diag, (A0,), (v,))
    np.testing.assert_allclose(ẏ, 2 * v * Y0**2 + 4 * v * Y0, rtol=1e-12)


def test_diaghessian_of_several_arguments() -> None:
    # f(y, s) = Σ a y³ s²: diag H_y = 6 a y s², H_ss = 2 Σ a y³.
    # g = Σ (6 a y s²)² + (2 Σ a y³)² : H = diag(72 y² s⁴) + 8 (y³)(y³)ᵀ
    s0 = 1.5

    def g(a):
        dy, ds = ad.diaghessian(lambda y, s: np.sum(a * y**3 * s**2), Y0, s0)
        return np.sum(dy**2) + ds**2

    check(g, np.diag(72 * Y0**2 * s0**4) + 8 * np.outer(Y0**3, Y0**3))


def test_jacobian_of_a_closure_over_the_outer_variable() -> None:
    # inner(y)_k = sin(a_k y_k) S with S = Σ a: J = diag(u S), u_k = a_k cos(a_k y_k).
    # g = Σ J² = S² V with V = Σ u²: H_ij = 2V + 4S (w_i + w_j) + δ_ij 2S² (u'_i² + u_i u''_i),
    # w = u u', u' = c - a y s, u'' = -2 y s - a y² c (c, s: cos, sin of a y).
    def g(a):
        S = np.sum(a)

        def inner(y):
            return np.sin(a * y) * S

        J = ad.jacobian(inner, Y0)[0]
        return np.sum(J * J)

    c, s = np.cos(A0 * Y0), np.sin(A0 * Y0)
    S, u = np.sum(A0), A0 * c
    du = c - A0 * Y0 * s
    d2u = -2 * Y0 * s - A0 * Y0**2 * c
    w = u * du
    expected = 2 * np.sum(u**2) + 4 * S * (w[:, None] + w[None, :])
    expected += np.diag(2 * S**2 * (du**2 + u * d2u))
    check(g, expected)


def test_jacobian_weight_and_closure_both_depend_on_the_point() -> None:
    # J = diag(a² cos(y)), g = Σ J² = Σ a⁴ cos²(y) : H = diag(12 a² cos²(y))
    def g(a):
        J = ad.jacobian(lambda y: a**2 * np.sin(y), Y0)[0]
        return np.sum(J**2)

    check(g, np.diag(12 * A0**2 * np.cos(Y0) ** 2))


def test_jacobian_inside_a_helper_and_forward_mode_jacobian() -> None:
    # J = diag(a cos y) (forward-mode jacobian), through a helper: g = Σ J² : H = diag(2 cos² y)
    def helper(a):
        return ad.jacobian(lambda y: a * np.sin(y), Y0, mode="forward")[0]

    def g(a):
        J = helper(a)
        return np.sum(J**2)

    check(g, np.diag(2 * np.cos(Y0) ** 2))


def test_withgradient_value_and_gradient() -> None:
    # f(y) = Σ a y³: val = Σ a y³, grad = 3 a y².
    # g = val² + Σ grad² : H = 2 (y³)(y³)ᵀ + diag(18 y⁴)
    def g(a):
        r = ad.withgradient(lambda y: np.sum(a * y**3), Y0)
        return r.val**2 + np.sum(r.grad[0] ** 2)

    check(g, 2 * np.outer(Y0**3, Y0**3) + np.diag(18 * Y0**4))


def test_withgradient_gradient_only() -> None:
    # grad = 3 a y², g = Σ grad² : H = diag(18 y⁴)
    def g(a):
        return np.sum(ad.withgradient(lambda y: np.sum(a * y**3), Y0).grad[0] ** 2)

    check(g, np.diag(18 * Y0**4))


@pytest.mark.parametrize("outer", ["gradient", "hessian_reverse"])
def test_gradient_of_gradient_of_a_function_calling_jacobian(outer: str) -> None:
    # g(a) = Σ J², J = diag(2 a y): ∇g = 8 a y², and ⟨∇g, v⟩ has the gradient 8 y² v
    # (reverse mode over the inner gradient, which runs jacobian's rules once more).
    v = np.array([0.3, -1.2])

    def g(a):
        J = ad.jacobian(lambda y: a * y**2, Y0)[0]
        return np.sum(J**2)

    def directional(a):
        return np.sum(ad.gradient(g, a)[0] * v)

    def squared(a):
        return np.sum(ad.gradient(g, a)[0] ** 2)

    if outer == "gradient":
        got, expected, fd = ad.gradient(directional, A0)[0], 8 * Y0**2 * v, fd_hessian(g, A0) @ v
    else:  # Σ (8 a y²)² : H = diag(128 y⁴)
        got, expected, fd = (
            ad.hessian_reverse(squared, A0),
            np.diag(128 * Y0**4),
            fd_hessian(squared, A0),
        )
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(fd, expected, rtol=1e-6, atol=1e-6)
