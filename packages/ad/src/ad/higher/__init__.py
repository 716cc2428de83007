"""Derivatives of derivatives: ad's own code and entry points, differentiated again.

Rules for the entry points of ``ad.api`` called inside differentiated code
(``gradient``, ``jvp``, ``pullback``, ``jacobian``, ``functools.partial``), and
for the runtime's own dispatch (``fcall``, the generated adjoints), in every
pair of modes:

- ``reverse_over_forward`` (the composition second derivatives come from: the
  rules of the API and of the kernels in ``ad.runtime.nested_kernels``), with
  ``reverse_over_fcall`` (the ``rrule`` of forward mode's dispatch), which hands
  its cases to ``reverse_over_generated`` (a generated pushforward),
  ``reverse_over_rules`` (an ``frule``'s body, a linear map, a pushforward
  kernel) and ``reverse_over_writes`` (objects and containers written), and
  ``reverse_over_tangent_plumbing``; ``cotangent_parts`` and ``unsupported``
  hold what the nested rules share;
- ``reverse_over_reverse`` (with ``reverse_over_adjoint_plumbing``);
- ``forward_over_forward`` (with ``unfold``, ``nested_pushforward``,
  ``forward_over_jvp`` and ``forward_over_plumbing``);
- ``over_pushforward`` (third order), ``pushforward_kernels``,
  ``nested_partials``, ``nested_pullback``, ``nested_jacobian``.

``hessian`` holds ``hessian``, ``hessian_reverse``, ``diaghessian`` and ``hvp``.
Importing ``ad`` registers these rules.
"""
