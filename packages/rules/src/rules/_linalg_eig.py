"""numpy.linalg rules for the general (non-Hermitian) eigenproblem: eig, eigvals.

``w, V = eig(a)`` solves ``a V = V diag(w)`` for square ``(..., n, n)``
stacks, real or complex. The outputs are complex in general; numpy returns
real ones when every eigenvalue of a real ``a`` is real (the tangents then are
real too). With ``P = V⁻¹ ȧ V`` and ``F[i, j] = 1 / (w[j] - w[i])`` (0 on the
diagonal), the first-order perturbation theory gives ``ẇ = diag(P)`` and
``V̇ = V (F ∘ P) + V diag(c)``, where ``diag(c)`` is the gauge term: an
eigenvector is defined up to a complex factor, which numpy (LAPACK's
``geev``) fixes by **unit 2-norm** and by making the **entry of largest
modulus real**. The rules differentiate exactly that normalisation:
``Re cᵢ = -Re(vᵢᴴ Wᵢ)`` keeps ``‖vᵢ‖ = 1`` and ``Im cᵢ = -Im(W[k, i] / V[k, i])``
keeps the phase of the largest entry ``k`` (``W = V (F ∘ P)``), so the
tangents and cotangents are those of numpy's own outputs, and any loss of them
(gauge-invariant or not) gets its exact gradient. (The phase condition is
locally constant: it changes where two entries tie for the largest modulus.)
The pullback is the adjoint of that map:
``ā = V⁻ᴴ (diag(w̄) + conj(F) ∘ (Vᴴ W̄)) Vᴴ`` with
``W̄ = V̄ - V diag(Re gᵢ) - i Im(gᵢ) / conj(V[k, i]) e_k eᵢᵀ`` and
``gᵢ = vᵢᴴ v̄ᵢ``. A real ``a`` gets the real part.

``eigvals`` uses the same eigenvectors (numpy computes the values alone; the
rule pairs each with its eigenvector): ``ā = V⁻ᴴ diag(w̄) Vᴴ``.

Degenerate eigenvalues: the diverging ``1 / (wⱼ - wᵢ)`` terms are set to 0
with a ``LinalgGradientWarning``, as for ``eigh`` (LINALG.md); a defective
matrix (``V`` singular) has no derivative and ``LinAlgError`` is raised.

>>> import numpy as np
>>> from rulescore import rrule
>>> a = np.array([[2.0, 1.0], [0.0, 3.0]])
>>> w, pb = rrule(np.linalg.eigvals, a)
>>> w
array([2., 3.])
>>> pb(np.array([1.0, 0.0]))[1]  # dw₀/da = u vᵀ: left eigenvector [1, -1], right [1, 0]
array([[ 1.,  0.],
       [-1.,  0.]])
"""

from __future__ import annotations

import numpy as np

from rulescore import NoTangent, Tangent, ZeroTangent, frule, rrule, unthunk

from ._linalg_factor import _inv_gaps
from ._linalg_util import dense, diag_embed, entries, is_zero, mH
from ._util import asarray, project
from .functional import put_along_axis

__all__: list[str] = []

_EIG = "numpy.linalg.eig"


def _largest_entries(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the row of the entry of largest modulus (the first, as LAPACK's
    ``i?amax``) and that entry."""
    k = np.argmax(np.abs(v) ** 2, axis=-2)[..., None, :]
    return k, np.take_along_axis(v, k, axis=-2)[..., 0, :]


def _eig_tangent(w: np.ndarray, v: np.ndarray, ȧ: np.ndarray) -> tuple:
    """``(ẇ, V̇)`` along ``ȧ`` under numpy's normalisation (see the module docstring)."""
    p = np.linalg.solve(v, ȧ @ v)
    ẇ = np.diagonal(p, axis1=-2, axis2=-1)
    W = v @ (_inv_gaps(w, _EIG, used=True) * p)
    c = -np.real(np.sum(v.conj() * W, axis=-2))
    if np.iscomplexobj(W):
        k, vk = _largest_entries(v)
        c = c - 1j * np.imag(np.take_along_axis(W, k, axis=-2)[..., 0, :] / vk)
    return ẇ, W + v * c[..., None, :]


def _eig_cotangent(w: np.ndarray, v: np.ndarray, w̄, v̄) -> np.ndarray:
    """``ā`` given cotangents of ``(w, V)`` (either may be a zero)."""
    dtype = np.result_type(v, w)
    p̄ = diag_embed(dense(w̄, w).astype(dtype, copy=False))
    if not is_zero(v̄):
        v̄ = asarray(unthunk(v̄))
        g = np.sum(v.conj() * v̄, axis=-2)
        W̄ = v̄ - v * np.real(g)[..., None, :]
        if np.iscomplexobj(W̄):
            k, vk = _largest_entries(v)
            at_k = put_along_axis(
                np.zeros_like(W̄), k, (1j * np.imag(g) / np.conj(vk))[..., None, :], -2
            )
            W̄ = W̄ - at_k
        p̄ = p̄ + np.conj(_inv_gaps(w, _EIG, used=True)) * (mH(v) @ W̄)
    vh = mH(v)
    return np.linalg.solve(vh, p̄ @ vh)


@rrule.register(np.linalg.eig)
def eig_rrule(a):
    """rrule of ``np.linalg.eig``: exact for numpy's normalised eigenvectors."""
    res = np.linalg.eig(asarray(a))
    w, v = res

    def eig_pullback(ȳ):
        w̄, v̄ = entries(ȳ, 2)
        if is_zero(w̄) and is_zero(v̄):
            return NoTangent(), ZeroTangent()
        return NoTangent(), project(a, _eig_cotangent(w, v, w̄, v̄))

    return res, eig_pullback


@frule.register(np.linalg.eig)
def _(ḟ, ȧ, a):
    res = np.linalg.eig(asarray(a))
    if is_zero(ȧ):
        return res, ZeroTangent()
    w, v = res
    ẇ, v̇ = _eig_tangent(w, v, asarray(unthunk(ȧ)))
    return res, Tangent[type(res)](eigenvalues=project(w, ẇ), eigenvectors=project(v, v̇))


def _paired_vectors(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Eigenvectors of ``a`` in the order of the eigenvalues ``w`` (from ``eigvals``).

    ``eig`` normally lists them in the same order; otherwise each value takes
    the nearest eigenvalue of ``eig`` not yet taken (a permutation, also for
    repeated eigenvalues).
    """
    we, v = np.linalg.eig(a)
    if np.array_equal(w, we):
        return v
    v = v.copy()
    for batch in np.ndindex(w.shape[:-1]):
        free = list(range(w.shape[-1]))
        order = []
        for x in w[batch]:
            order.append(free.pop(int(np.argmin(np.abs(we[batch][free] - x)))))
        v[batch] = v[batch][:, order]
    return v


@rrule.register(np.linalg.eigvals)
def eigvals_rrule(a):
    """rrule of ``np.linalg.eigvals``: ``ā = V⁻ᴴ diag(w̄) Vᴴ``."""
    a_ = asarray(a)
    w = np.linalg.eigvals(a_)

    def eigvals_pullback(w̄):
        w̄ = unthunk(w̄)
        if is_zero(w̄):
            return NoTangent(), w̄
        v = _paired_vectors(a_, w)
        return NoTangent(), project(a, _eig_cotangent(w, v, w̄, ZeroTangent()))

    return w, eigvals_pullback


@frule.register(np.linalg.eigvals)
def _(ḟ, ȧ, a):
    a_ = asarray(a)
    w = np.linalg.eigvals(a_)
    if is_zero(ȧ):
        return w, ZeroTangent()
    v = _paired_vectors(a_, w)
    ẇ = np.diagonal(np.linalg.solve(v, asarray(unthunk(ȧ)) @ v), axis1=-2, axis2=-1)
    return w, project(w, ẇ)
