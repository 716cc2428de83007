"""What is library code, and what carries no derivative: the tests of ``plain_calls``.

A call in differentiated code whose callable has no rule and whose source is
not the user's is *library code*: a builtin or C function or class (``str.format``,
``"%.3f" % x``, ``np.array2string``, an ``rng.normal`` method), or a Python
function of the standard library (``logging``, ``warnings``, ``json``,
``typing.cast``; decided by module and file, ``is_library_function``) or of an
array library (``ARRAY_LIBRARIES``). The AD never transforms it: it runs as
plain Python (``plain_calls``), whose derivative is zero when its result, or
every input, provably carries none (``derivative_free``): a string, bytes, a
bool, an int (piecewise constant), None, a numpy array or scalar of bools,
ints, strings or dates, a type, an object of ``DERIVATIVE_FREE_TYPES`` (a random
generator: its draws are constants; machine limits such as ``np.finfo``), or a tuple, list, dict or set of such.
Opaque objects (iterators, ``zip``/``map`` objects, containers of floats, user
objects) are never taken as derivative-free: they could hold what carries the
derivative.

>>> import json
>>> is_library_function(json.dumps), derivative_free(("x=1.5", 3, None))
(True, True)
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import sysconfig
import types
from typing import Any

from ad.runtime.tracebacks import internal_file
from rulescore import AbstractZero

__all__ = [
    "ARRAY_LIBRARIES",
    "DERIVATIVE_FREE_TYPES",
    "derivative_free",
    "is_library_function",
    "library_callable",
    "library_class",
]

_FunctionType = types.FunctionType


# --- what is library code ----------------------------------------------------------


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if k in paths}
    return tuple(d + os.sep for d in dirs)


_STDLIB_DIRS = _stdlib_dirs()
_STDLIB_NAMES = frozenset(getattr(sys, "stdlib_module_names", ()))
#: Array libraries whose functions run as library code: numpy's rules serve their
#: arrays and their own spellings (``rules._array_libraries``); what has no rule
#: is an error naming it, never a walk through the library's source.
ARRAY_LIBRARIES = frozenset(["dask", "cupy", "cupyx"])
_LIBRARY: dict[tuple, bool] = {}
#: The files of the modules that run library code: their own runners and pullbacks
#: are library code too (second order runs them as plain Python).
_PLAIN_FILES = frozenset(
    os.path.join(os.path.dirname(__file__), f"{name}.py")
    for name in ("library_code", "plain_calls", "plain_checks", "plain_functions")
)


def is_library_function(f: Any) -> bool:
    """Whether the Python function ``f`` is library code the AD runs as plain Python:
    a function of the standard library (its module is one of
    ``sys.stdlib_module_names`` and its file is the standard library's, not a
    same-named module of the user's or a site-packages one), a function of an
    array library (``ARRAY_LIBRARIES``: dask, CuPy), or one of the runners and
    pullbacks of the modules that run library code (``plain_calls``...). Cached per code object.

    >>> import logging, json
    >>> is_library_function(logging.Logger.debug), is_library_function(json.dumps)
    (True, True)
    >>> import ad
    >>> is_library_function(ad.gradient)
    False
    """
    code = f.__code__
    mod = getattr(f, "__module__", None)
    key = (code.co_filename, mod if type(mod) is str else None)  # what decides: no code kept
    known = _LIBRARY.get(key)
    if known is None:
        known = _is_library(f, code)
        if len(_LIBRARY) >= 1024:  # bounded: files made per call (exec) leave
            _LIBRARY.clear()
        _LIBRARY[key] = known
    return known


def users_method(f: Any) -> bool:
    """Whether ``f``, a class's special method (``__iter__``, ``__enter__``), is
    Python code of the user's, which the AD differentiates where Python calls it:
    not C code, the standard library's (``is_library_function``), an installed
    package's (``np.errstate.__enter__`` sets a context variable) or the AD's own
    (a ``Tangent``'s ``__iter__``).

    >>> import numpy as np
    >>> users_method(np.errstate.__enter__), users_method(list.__iter__)
    (False, False)
    """
    if type(f) is not types.FunctionType:
        return False
    filename = f.__code__.co_filename
    return _INSTALLED not in filename and not internal_file(filename) and not is_library_function(f)


_INSTALLED = "-packages" + os.sep  # site-packages, dist-packages


def _is_library(f: Any, code: types.CodeType) -> bool:
    filename = code.co_filename
    if filename in _PLAIN_FILES:  # plain calls' runners and pullbacks (second order runs them)
        return True
    mod = getattr(f, "__module__", None)
    if not isinstance(mod, str):
        return False
    top = mod.partition(".")[0]
    if top in ARRAY_LIBRARIES:
        return True
    return top in _STDLIB_NAMES and _in_stdlib(filename)


def _in_stdlib(filename: str) -> bool:
    if filename.startswith("<frozen "):
        return True
    path = os.path.realpath(filename)
    return path.startswith(_STDLIB_DIRS) and "-packages" + os.sep not in path


def library_class(cls: type) -> bool:
    """Whether constructing ``cls`` runs no Python code of the user's: its ``__new__``
    and ``__init__`` are C code or the standard library's (``np.float64``,
    ``fractions.Fraction``, ``_json.Encoder``), or its objects carry no derivative
    (``DERIVATIVE_FREE_TYPES``: ``np.finfo(x.dtype)``)."""
    if issubclass(cls, DERIVATIVE_FREE_TYPES):
        return True
    for attr in ("__new__", "__init__"):
        m = getattr(cls, attr, None)
        m = getattr(m, "__func__", m)  # a staticmethod's or classmethod's function
        if type(m) is _FunctionType and not is_library_function(m):
            return False
    return True


def library_callable(f: Any) -> bool:
    """Whether calling ``f`` runs no Python code of the user's (C code, a library
    class, the standard library): what second-order dispatch may run plainly."""
    tf = type(f)
    if tf is _FunctionType:
        return is_library_function(f)
    if tf is types.MethodType:
        return library_callable(f.__func__)
    if tf is functools.partial:
        return library_callable(f.func)
    if isinstance(f, type):
        return library_class(f)
    call = _call_method(tf)
    return type(call) is not _FunctionType or is_library_function(call)


def _user_callable(v: Any) -> bool:
    """Whether ``v`` is a function (method, partial, callable object) of the user's,
    which plain Python would run without derivatives."""
    tv = type(v)
    if tv in _UNCHANGEABLE:
        return False
    if tv is _FunctionType:
        return not is_library_function(v)
    if tv is types.MethodType:
        return _user_callable(v.__func__)
    if tv is functools.partial:
        return _user_callable(v.func) or any(_user_callable(a) for a in v.args)
    if isinstance(v, type) or tv.__module__ == "builtins" or not callable(v):
        return False
    call = _call_method(tv)
    return type(call) is _FunctionType and not is_library_function(call)


def _call_method(tv: type) -> Any:
    """The ``__call__`` the objects of ``tv`` run (a Python function, a slot wrapper)."""
    return next((k.__dict__["__call__"] for k in tv.__mro__ if "__call__" in k.__dict__), None)


# --- what carries no derivative -------------------------------------------------------

_FREE_SCALARS = frozenset([str, bytes, bool, int, type(None), type(Ellipsis), range, type])
#: Inputs nothing can change in place (a tuple's entries may be: they are not followed).
_UNCHANGEABLE = _FREE_SCALARS | {float, complex, tuple, frozenset}


def _opaque_free_types() -> tuple[type, ...]:
    """Objects of a library's own that hold no value a derivative could ride on: random
    generators and their seeds (their draws are constants), dtypes, machine limits
    (``np.finfo``, ``np.iinfo``: constants of a dtype, whose attributes are computed
    and cached on first read), compiled regular expressions and their matches
    (strings), locks."""
    import random
    import re
    import threading

    kinds: list[type] = [random.Random, re.Pattern, re.Match, type(threading.Lock())]
    kinds.append(type(threading.RLock()))
    np = sys.modules.get("numpy")
    if np is not None:
        r = np.random
        kinds += [np.dtype, r.Generator, r.RandomState, r.BitGenerator, r.SeedSequence]
        kinds += [np.finfo, np.iinfo]
    return tuple(kinds)


#: Types whose objects never carry a derivative, beyond strings, numbers of
#: no derivative and containers of them (``derivative_free``). A library whose
#: opaque objects are like that (a random generator) may add its own.
DERIVATIVE_FREE_TYPES: tuple[type, ...] = _opaque_free_types()
_DEPTH = 4


def derivative_free(v: Any, depth: int = 0) -> bool:
    """Whether ``v`` provably carries no derivative: see the module docstring.

    >>> import numpy as np
    >>> derivative_free(("x=1.5", 3, None, np.array([True])))
    True
    >>> derivative_free(1.5), derivative_free([1.5]), derivative_free(iter([1]))
    (False, False, False)
    """
    t = type(v)
    if t in _FREE_SCALARS:
        return True
    if t is float or t is complex:
        return False
    if isinstance(v, (str, bytes, bool, int, type, AbstractZero, DERIVATIVE_FREE_TYPES)):
        return True
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, (np.ndarray, np.generic)):
        return v.dtype.kind in "biuSUmM"
    if depth >= _DEPTH:
        return False
    if (
        t is list
        or t is set
        or t is frozenset
        or t is collections.deque
        or (isinstance(v, tuple) and _no_dict(v))
    ):
        return all(derivative_free(e, depth + 1) for e in v)
    if t is dict:
        return all(
            derivative_free(k, depth + 1) and derivative_free(e, depth + 1) for k, e in v.items()
        )
    return False


def _no_dict(v: Any) -> bool:
    """A tuple (a namedtuple) with no attributes beside its entries."""
    return not hasattr(v, "__dict__")
