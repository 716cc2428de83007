"""numpy.linalg rules, by topic (imported here for their registrations).

* ``_linalg_basic``: inv, det, slogdet, solve, tensorinv, tensorsolve,
  matrix_power, multi_dot, trace; matrix_rank (non-differentiable);
* ``_linalg_factor``: cholesky, qr, eigh, eigvalsh;
* ``_linalg_eig``: eig, eigvals (general matrices);
* ``_linalg_svd``: svd, svdvals, pinv, lstsq;
* ``_linalg_norm``: norm, vector_norm, matrix_norm;
* ``_linalg_api``: cond, and the array-API cross, outer, matmul, tensordot,
  matrix_transpose, vecdot, diagonal (with numpy's own vecdot, matrix_transpose);
* ``_linalg_util``: shared helpers.

Conventions (Hermitian inputs, gauge freedom, degenerate spectra, errors) are
documented in ``packages/rules/LINALG.md``.
"""

from . import (  # noqa: F401
    _linalg_api,
    _linalg_basic,
    _linalg_eig,
    _linalg_factor,
    _linalg_norm,
    _linalg_svd,
)
