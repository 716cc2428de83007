"""rules: rrule/frule derivative rules for builtins, operator, math, cmath and numpy.

Importing this package registers every rule with ``rulescore``; ``inventory()``
lists the functions covered.
"""

from rulescore import register_lazy_rules

from . import (  # noqa: F401  (imported for their registrations)
    _builtins,
    _cmath,
    _helper_rules,
    _higher_order,
    _linalg,
    _math,
    _numpy_assembly,
    _numpy_binary,
    _numpy_construction,
    _numpy_counting,
    _numpy_cumulative,
    _numpy_differences,
    _numpy_einsum,
    _numpy_elementwise,
    _numpy_fft,
    _numpy_indexing,
    _numpy_methods,
    _numpy_order_statistics,
    _numpy_products,
    _numpy_reductions,
    _numpy_scalars,
    _numpy_shape,
    _numpy_signal,
    _numpy_statistics,
    _operator,
    _sequences,
)

try:  # scipy is optional (the rules[scipy] extra); its rules register where it is installed
    import scipy as _scipy  # noqa: F401
except ImportError:  # pragma: no cover - environments without scipy
    pass
else:
    from . import _scipy_linalg, _scipy_special  # noqa: F401
from ._inventory import inventory

# scipy.stats takes half a second to import: its rules load when it is imported.
register_lazy_rules("scipy.stats", "rules._scipy_stats")

__all__ = ["inventory"]
