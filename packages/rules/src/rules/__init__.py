"""rules: rrule/frule derivative rules for builtins, operator, math, cmath and numpy.

Importing this package registers every rule with ``rulescore``; ``inventory()``
lists the functions covered.
"""

from . import (  # noqa: F401  (imported for their registrations)
    _builtins,
    _cmath,
    _helper_rules,
    _higher_order,
    _linalg,
    _math,
    _numpy_binary,
    _numpy_construction,
    _numpy_cumulative,
    _numpy_einsum,
    _numpy_elementwise,
    _numpy_indexing,
    _numpy_methods,
    _numpy_products,
    _numpy_reductions,
    _numpy_scalars,
    _numpy_shape,
    _operator,
    _sequences,
)
from ._inventory import inventory

__all__ = ["inventory"]
