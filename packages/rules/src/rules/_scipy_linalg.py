"""Rules for scipy.linalg: solves, factorizations, decompositions and matrix functions.

Covered: ``solve_triangular``, ``cho_factor``/``cho_solve``, ``cholesky``,
``lu_factor``/``lu_solve``, ``lu``, ``solve``, ``inv``, ``det``, ``eigh``,
``eigvalsh``, ``svd``, ``svdvals``, ``qr``, ``expm``, ``sqrtm``,
``solve_sylvester``, ``solve_banded`` and ``block_diag``; batched
``(..., m, n)`` inputs and complex input wherever scipy takes them. The
rules live in ``_scipy_linalg_solve`` (solve_triangular, solve, inv, det,
solve_sylvester, solve_banded), ``_scipy_linalg_factor`` (Cholesky and LU),
``_scipy_linalg_decomp`` (eigh, svd, qr) and ``_scipy_linalg_matfuncs``
(expm, sqrtm, block_diag), with helpers in ``_scipy_linalg_util``; this
module imports them (scipy is optional: ``rules`` imports it only where scipy
is installed). The
derivatives reuse the numpy.linalg rules' math (``_linalg_basic``,
``_linalg_factor``, ``_linalg_svd``); the conventions of LINALG.md hold here
too (ChainRules' complex convention, gauge and degenerate spectra, errors at
rule time for options without a derivative). Specific to scipy:

* **Entries scipy does not read get no derivative.** ``solve_triangular``
  reads one triangle of ``a`` (without the diagonal when
  ``unit_diagonal=True``), ``cho_solve`` one triangle of ``c``, ``lu_solve``
  the strict lower (``L``, unit diagonal) and upper (``U``) parts of ``lu``,
  ``solve_banded`` the band entries of ``ab`` (not its unused corners),
  ``solve``/``inv`` with ``assume_a`` 'diagonal', 'tridiagonal', 'upper
  triangular' or 'lower triangular' that structure of ``a``; ``cholesky``,
  ``cho_factor``, ``eigh``, ``eigvalsh`` and ``solve``/``inv`` with
  ``assume_a`` 'her'/'pos' the triangle ``lower`` names and the real part of
  the diagonal (as numpy's ``cholesky``/``eigh``), 'sym' that triangle and the
  whole diagonal (LAPACK's complex symmetric): the cotangent is zero elsewhere
  and the tangent there is ignored (``_linalg_triangle``). These are exact.
* **Tuple results and arguments.** ``cho_factor`` returns ``(c, lower)``:
  its cotangent is a pair ``(c̄, anything)`` (plain tuple, ``Tangent[tuple]``,
  zeros allowed), of which only the triangle of ``c̄`` that holds the factor is
  read -- the other triangle of ``c`` is scratch (scipy: "random data") and
  its cotangent is ignored; the frule returns ``Tangent[tuple](ċ,
  NoTangent())`` with ``ċ`` zero outside the factor's triangle. ``cho_solve``
  gives the argument ``(c, lower)`` the cotangent ``(c̄, NoTangent())``, ``c̄``
  zero outside the triangle read. ``lu_factor``/``lu_solve`` likewise with
  ``(lu, piv)``; ``piv`` (and ``qr``'s and ``lu``'s permutations) is
  piecewise constant: ``NoTangent()`` for integers, a zero tangent for
  ``lu``'s float permutation matrix.
* ``overwrite_a``/``overwrite_b``/``overwrite_ab`` are accepted and ignored:
  the rules never let scipy destroy an input a pullback may need.
* Refused with ``NotImplementedError`` when the rule is called: ``eigh``'s
  generalized problem (``b``) and eigenvectors of a subset (eigenvalues of
  a subset work); ``svd(full_matrices=True, compute_uv=True)`` and
  ``qr(mode='full')`` of a non-square (resp. tall) matrix, whose extra
  singular vectors / columns of ``Q`` are not unique; ``qr(mode='raw')``;
  ``inv(assume_a='diagonal')`` (scipy 1.17 copies the off-diagonal entries of
  ``a`` into the result); ``sqrtm(disp=False)``.

``expm``'s pushforward is its Fréchet derivative ``L(A, Ȧ)``
(``scipy.linalg.expm_frechet``) and its pullback ``L(Aᴴ, Ȳ)``; ``sqrtm``'s
solve the Sylvester equations ``X Ẋ + Ẋ X = Ȧ`` and ``Xᴴ Ā + Ā Xᴴ = X̄``.

>>> import numpy as np
>>> import scipy.linalg
>>> from rulescore import rrule
>>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> cf, pb = rrule(scipy.linalg.cho_factor, a, lower=True)
>>> c̄ = np.array([[1.0, 9.0], [0.0, 0.0]])  # 9.0 sits on the scratch triangle
>>> bool(np.allclose(pb((c̄, None))[1], pb((np.tril(c̄), None))[1]))
True
"""

from . import (  # noqa: F401  (imported for their registrations)
    _scipy_linalg_decomp,
    _scipy_linalg_factor,
    _scipy_linalg_matfuncs,
    _scipy_linalg_solve,
)

__all__: list[str] = []
