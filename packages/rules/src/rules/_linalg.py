"""numpy.linalg rules, by topic (imported here for their registrations).

* ``_linalg_basic``: inv, det, slogdet, solve, tensorinv, tensorsolve,
  matrix_power, multi_dot, trace; matrix_rank (non-differentiable);
* ``_linalg_factor``: cholesky, qr, eigh, eigvalsh;
* ``_linalg_svd``: svd, svdvals, pinv, lstsq;
* ``_linalg_norm``: norm, vector_norm, matrix_norm;
* ``_linalg_util``: shared helpers.

Conventions (Hermitian inputs, gauge freedom, degenerate spectra, errors) are
documented in ``packages/rules/LINALG.md``.
"""

from . import _linalg_basic, _linalg_factor, _linalg_norm, _linalg_svd  # noqa: F401
