"""``DuckArray``: arrays of any library that follows numpy's dispatch protocols.

dask arrays, CuPy arrays and numpy arrays all implement ``__array_ufunc__``
(NEP 13) and ``__array_function__`` (NEP 18): ``np.sin(x)``, ``np.sum(x, axis=0)``
or ``np.zeros_like(x)`` on them run the array's own library and return its own
array type. A rule written with numpy's functions therefore serves them all, and
builds its cotangents in the input's library, when it is registered for
``DuckArray`` rather than ``numpy.ndarray``:

>>> from rulescore import DuckArray
>>> import numpy as np
>>> issubclass(np.ndarray, DuckArray), isinstance([1.0], DuckArray)
(True, False)
>>> class Wrapped:  # a minimal duck array: the two protocols, shape and dtype
...     shape, dtype = (2,), np.dtype(float)
...     def __array_ufunc__(self, ufunc, method, *inputs, **kwargs): ...
...     def __array_function__(self, func, types, args, kwargs): ...
>>> isinstance(Wrapped(), DuckArray)
True

A class that opts out of the protocols (``__array_ufunc__ = None``) is not one.
"""

from __future__ import annotations

import abc
import sys
from typing import Any

__all__ = ["DuckArray", "is_duck_array"]

_PROTOCOLS = ("__array_ufunc__", "__array_function__")


class DuckArray(abc.ABC):
    """Any array type with numpy's ``__array_ufunc__`` and ``__array_function__``
    protocols and ``shape``/``dtype`` attributes (numpy, dask, CuPy arrays).

    Not to be instantiated or subclassed: ``issubclass`` recognises the protocols.
    """

    __slots__ = ()
    shape: tuple  # what rules read of any array (declared for type checkers)
    dtype: Any

    @classmethod
    def __subclasshook__(cls, C: type) -> Any:
        if cls is not DuckArray:
            return NotImplemented
        if all(getattr(C, p, None) is not None for p in _PROTOCOLS) and all(
            hasattr(C, a) for a in ("shape", "dtype")
        ):
            return True
        return NotImplemented  # the usual checks (DuckArray is a subclass of itself)


def is_duck_array(x: Any) -> bool:
    """Whether ``x`` is an array of a library other than numpy that follows its
    protocols (a dask or CuPy array, not a ``numpy.ndarray``).

    >>> import numpy as np
    >>> is_duck_array(np.ones(2)), is_duck_array(2.0)
    (False, False)
    """
    if not isinstance(x, DuckArray):
        return False
    np = sys.modules.get("numpy")  # never imported here
    return np is None or not isinstance(x, np.ndarray)
