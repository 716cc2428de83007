"""rules: rrule/frule derivative rules for builtins, operator, math, cmath and numpy.

Importing this package registers every rule with ``rulescore``; ``inventory()``
lists the functions covered. ``rules.functional`` holds functional forms (with
rules) of numpy's in-place functions (``np.put_along_axis``, ``ufunc.at``, ...).
``rules.extension`` is for ADs and rule packages built on ``rules``: the helpers
its rules are made of (un-broadcasting, the getitem rules of containers, the
derivatives of numpy's elementwise functions, ...) and ``is_standard_rule``, which
tells ``rules``' own rules from a user's. The methods of numpy scalars
(``np.float64(x).clip(0, 1)``) run the rules of their ``ndarray`` namesakes
(``rules._numpy_scalar_methods``, registered after every other rule).
"""

from rulescore import register_lazy_rules

from . import (  # noqa: F401  (imported for their registrations)
    _array_libraries,
    _builtins,
    _cmath,
    _helper_rules,
    _higher_order,
    _linalg,
    _math,
    _numpy_along_axis,
    _numpy_array_api,
    _numpy_assembly,
    _numpy_binary,
    _numpy_construction,
    _numpy_counting,
    _numpy_cumulative,
    _numpy_differences,
    _numpy_einsum,
    _numpy_elementwise,
    _numpy_fft,
    _numpy_gathers,
    _numpy_index_tricks,
    _numpy_indexing,
    _numpy_integer_results,
    _numpy_layout,
    _numpy_methods,
    _numpy_number_parts,
    _numpy_order_statistics,
    _numpy_polyfit,
    _numpy_polynomials,
    _numpy_products,
    _numpy_reductions,
    _numpy_scalars,
    _numpy_sets,
    _numpy_shape,
    _numpy_signal,
    _numpy_statistics,
    _numpy_ufunc_methods,
    _operator,
    _sequences,
    extension,
    functional,
)

# isort: split
# Last: the methods of numpy scalars reuse the rules of every ndarray method above.
from . import _numpy_scalar_methods  # noqa: F401  (imported for its registrations)
from ._inventory import inventory

# scipy is optional (the rules[scipy] extra) and costly to import (scipy.stats half a
# second, scipy.linalg and scipy.special a fifth): the rules for each module register
# when it is imported, so ``import rules`` imports no scipy at all.
register_lazy_rules("scipy.special", "rules._scipy_special")
register_lazy_rules("scipy.linalg", "rules._scipy_linalg")
register_lazy_rules("scipy.stats", "rules._scipy_stats")
register_lazy_rules("scipy.stats", "rules._scipy_stats_more")
register_lazy_rules("scipy.stats", "rules._scipy_stats_multivariate")
register_lazy_rules("scipy.signal", "rules._scipy_signal")
register_lazy_rules("scipy.signal", "rules._scipy_signal_filters")
register_lazy_rules("scipy.signal", "rules._scipy_signal_savgol")
register_lazy_rules("scipy.integrate", "rules._scipy_integrate")
register_lazy_rules("scipy.integrate", "rules._scipy_integrate_ivp")
# dask and CuPy arrays run numpy's rules; their own spellings (da.sum, x.sum()) get
# rules that call numpy's when the library is imported.
register_lazy_rules("dask.array", _array_libraries.register_dask)
register_lazy_rules("cupy", _array_libraries.register_cupy)
# numpy.polynomial is a lazily imported submodule of numpy: its rules follow it.
register_lazy_rules("numpy.polynomial.polynomial", "rules._numpy_polynomial_module")

__all__ = ["extension", "functional", "inventory"]
