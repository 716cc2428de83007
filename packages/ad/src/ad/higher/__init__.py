"""Derivatives of derivatives: ad's own code and entry points, differentiated again.

Rules for the entry points of ``ad.api`` called inside differentiated code
(``gradient``, ``jvp``, ``pullback``, ``jacobian``, ``functools.partial``), and
for the runtime's own dispatch (``fcall``, the generated adjoints), in every
pair of modes: ``reverse_over_forward`` (the composition second derivatives
come from), ``reverse_over_reverse``, ``forward_over_forward`` (with
``forward_over_jvp`` and ``forward_over_plumbing``), ``over_pushforward``
(third order). ``hessian`` holds ``hessian``, ``hessian_reverse``,
``diaghessian`` and ``hvp``. Importing ``ad`` registers these rules.
"""
