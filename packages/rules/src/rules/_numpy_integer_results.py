"""Non-differentiable numpy functions: integer arithmetic, index builders, dtype queries.

Their outputs are integers, booleans, index arrays, dtypes, windows of a
given length or floating-point neighbours; no derivative flows through them,
so they are registered with ``non_differentiable`` (every argument gets
``NoTangent()``):

* integer and bit arithmetic: ``gcd``, ``lcm``, ``bitwise_*``, ``invert``,
  ``left_shift``/``right_shift``, ``bitwise_count``, ``packbits``/``unpackbits``;
* floating-point neighbours: ``spacing``, ``nextafter`` (piecewise constant);
* index builders: ``tril_indices``/``triu_indices``/``diag_indices`` and their
  ``_from`` forms, ``mask_indices``, ``ix_``, ``lexsort``;
* windows of a length: ``bartlett``, ``blackman``, ``hamming``, ``hanning``
  (``kaiser`` is left out: its ``beta`` is a real parameter);
* queries about types, shapes and memory: ``isscalar``, ``iterable``,
  ``isfortran``, ``isnat``, ``isdtype``, ``issubdtype``, ``can_cast``,
  ``promote_types``, ``min_scalar_type``, ``common_type``, ``mintypecode``,
  ``typename``, ``broadcast_shapes``, ``shares_memory``, ``may_share_memory``,
  ``einsum_path``.

>>> import numpy as np
>>> from rulescore import rrule
>>> rrule(np.nextafter, 1.0, 2.0)[1](1.0)
(NoTangent(), NoTangent(), NoTangent())
"""

from __future__ import annotations

import numpy as np

from rulescore import non_differentiable

__all__: list[str] = []

_NAMES = (
    "gcd lcm bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_invert invert "
    "bitwise_left_shift bitwise_right_shift left_shift right_shift bitwise_count packbits "
    "unpackbits spacing nextafter "
    "tril_indices triu_indices tril_indices_from triu_indices_from diag_indices "
    "diag_indices_from mask_indices ix_ lexsort "
    "bartlett blackman hamming hanning "
    "isscalar iterable isfortran isnat isdtype issubdtype can_cast promote_types "
    "min_scalar_type common_type mintypecode typename broadcast_shapes shares_memory "
    "may_share_memory einsum_path"
)

for _name in _NAMES.split():
    if hasattr(np, _name):  # (some are numpy 2 names)
        non_differentiable(getattr(np, _name))
