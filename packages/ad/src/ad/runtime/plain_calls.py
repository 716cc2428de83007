"""Library code the AD does not follow: run as plain Python, derivative decided by what it did.

A call in differentiated code whose callable has no rule and whose source is
not the user's is *library code*: a builtin or C function or class (``str.format``,
``"%.3f" % x``, ``np.array2string``, an ``rng.normal`` method), or a Python
function of the standard library (``logging``, ``warnings``, ``json``,
``typing.cast``; decided by module and file, ``is_library_function``). The AD
never transforms it. It runs as plain Python, and its derivative is known when:

* its result provably carries no derivative (``derivative_free``): a string,
  bytes, a bool, an int (piecewise constant), None, a numpy array or scalar of
  bools, ints, strings or dates, a type, or a tuple, list, dict or set of such;
  or every input (arguments and receiver) provably carries none (a formatted
  string, a seed, a random generator: its draws are constants). The derivative
  is zero;
* its result is one of its arguments, the very object (``typing.cast(float, x)``,
  ``copy.copy(x)`` of a float), or a tuple or list of such and of values of the
  first kind: the derivative passes that argument's cotangent (tangent) through;

and it changed none of its inputs in a way that could carry a derivative (a
list sorted in place, an attribute set to a float, an array written: see
``_Snapshot``), and was given no Python function of the user's to call back
(plain Python would run it without derivatives). Otherwise the call is an
error (``NoRuleError``) naming the library function, the user's line that
called it, and the fix. Opaque objects (iterators, ``zip``/``map`` objects,
containers of floats, user objects) are never taken as derivative-free: they
could hold what carries the derivative.

This is what errors would otherwise be raised for, and what would otherwise be
transformed from the standard library's source (``transform.transformed``
and its forward and pure forms ask ``plain_entry`` on a cache miss): nothing
here runs on a fast path.

>>> import logging, ad
>>> log = logging.getLogger("example")
>>> def f(x):
...     log.debug("x=%s", x)
...     return x * float("{:.1f}".format(2.0))
>>> ad.gradient(f, 3.0)
(2.0,)
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import sysconfig
import types
from collections.abc import Callable
from typing import Any

from ad.errors import NoRuleError
from ad.runtime.tangents import mapping_entry, tan_list, tan_tuple
from ad.runtime.tracebacks import call_site, function_name
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

__all__ = [
    "DERIVATIVE_FREE_TYPES",
    "PlainEntry",
    "derivative_free",
    "forward_call",
    "is_library_function",
    "library_callable",
    "library_class",
    "plain_entry",
    "reverse_call",
    "reverse_over_fcall",
    "reverse_over_forward",
    "reverse_over_reverse",
]

_Z = ZeroTangent()
_NO = NoTangent()
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


def is_library_function(f: Any) -> bool:
    """Whether the Python function ``f`` is library code the AD runs as plain Python:
    a function of the standard library (its module is one of
    ``sys.stdlib_module_names`` and its file is the standard library's, not a
    same-named module of the user's or a site-packages one), a function of an
    array library (``ARRAY_LIBRARIES``: dask, CuPy), or one of this module's own
    runners and pullbacks. Cached per code object.

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


def _is_library(f: Any, code: types.CodeType) -> bool:
    filename = code.co_filename
    if filename == __file__:  # the runners and pullbacks below (second order runs them)
        return True
    mod = getattr(f, "__module__", None)
    if not isinstance(mod, str):
        return False
    top = mod.partition(".")[0]
    if top in ARRAY_LIBRARIES:
        return True
    return top in _STDLIB_NAMES and _in_stdlib(filename)


# --- what carries no derivative -------------------------------------------------------

_FREE_SCALARS = frozenset([str, bytes, bool, int, type(None), type(Ellipsis), range, type])
#: Inputs nothing can change in place (a tuple's entries may be: they are not followed).
_UNCHANGEABLE = _FREE_SCALARS | {float, complex, tuple, frozenset}
_MISSING = object()


def _opaque_free_types() -> tuple[type, ...]:
    """Objects of a library's own that hold no value a derivative could ride on: random
    generators and their seeds (their draws are constants), dtypes, compiled
    regular expressions and their matches (strings), locks."""
    import random
    import re
    import threading

    kinds: list[type] = [random.Random, re.Pattern, re.Match, type(threading.Lock())]
    kinds.append(type(threading.RLock()))
    np = sys.modules.get("numpy")
    if np is not None:
        r = np.random
        kinds += [np.dtype, r.Generator, r.RandomState, r.BitGenerator, r.SeedSequence]
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


# --- running a call -----------------------------------------------------------------------

#: A route says where a result's derivative comes from: None (nowhere: zero), an
#: argument's key (an int position or a str keyword: the result is that object),
#: or ``(container, keys)`` for a tuple or list result, one key or None per entry.
Route = Any


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


def _inputs(args: tuple, kwargs: dict | None, receiver: Any) -> list[Any]:
    out = list(args)
    if kwargs:
        out.extend(kwargs.values())
    if receiver is not None:
        out.append(receiver)
    return out


class _Snapshot:
    """What a library call could change in its inputs without the AD seeing: the
    entries of lists, dicts and sets, float and object arrays' values, and plain
    objects' attributes. ``changed()`` names the first input changed with a value
    that may carry a derivative.

    A writeable float or complex array is also made read-only for the call
    (``locked``; ``release()`` restores it): a write into it raises, so a write
    of the values it already holds (``np.put(x, [0], [x[0]])``), which the
    comparison cannot see but which cuts the derivative, is caught too."""

    __slots__ = ("before", "locked")

    def __init__(self, inputs: list[Any]) -> None:
        before = []
        locked = []
        np = sys.modules.get("numpy")
        for i, v in enumerate(inputs):
            t = type(v)
            if t in _UNCHANGEABLE:
                continue
            if t is list or t is set or t is dict or isinstance(v, _CONTAINERS):
                before.append((i, v, _entries(v)))
            elif np is not None and t is np.ndarray:
                if v.dtype.kind in "fcO" and v.flags.writeable:
                    before.append((i, v, v.copy()))
                    if v.dtype.kind != "O":
                        v.flags.writeable = False
                        locked.append(v)
            elif _has_state(v):
                before.append((i, v, dict(vars(v))))
        self.before = before
        self.locked = locked

    def release(self) -> None:
        for v in self.locked:
            v.flags.writeable = True

    def all_free_before(self, inputs: list[Any]) -> bool:
        """Whether every input provably carried no derivative before the call
        (``derivative_free``, on the entries a container had then)."""
        old = {i: e for i, v, e in self.before if isinstance(v, _CONTAINERS)}
        return all(
            derivative_free(v) if i not in old else derivative_free(old[i])
            for i, v in enumerate(inputs)
        )

    def emptied(self) -> tuple[int, Any] | None:
        """``(index of the input, the input)``: a list or deque the call left with no
        value that may carry a derivative, where it had one (forward mode keeps
        its tangent along the variable, which would keep the entries removed)."""
        for i, v, old in self.before:
            if isinstance(v, (list, collections.deque)):
                if not _same_entries(old, _entries(v)) and not derivative_free(old):
                    return i, v
        return None

    def changed(self) -> tuple[int, Any] | None:
        """``(index of the input, the input)`` changed in a way that may carry a
        derivative, or None."""
        np = sys.modules.get("numpy")
        for i, v, old in self.before:
            if np is not None and type(v) is np.ndarray:
                if not _same_array(v, old):
                    return i, v  # a float array's values: they carry derivatives
            elif isinstance(v, _CONTAINERS):
                new = _entries(v)
                if not _same_entries(old, new) and not derivative_free(v):
                    return i, v
            else:
                for k, e in vars(v).items():
                    if old.get(k, _MISSING) is not e and not derivative_free(e):
                        return i, v
        return None


#: The containers whose entries a library call may change (a deque is a list to it).
_CONTAINERS = (list, dict, set, collections.deque)


def _entries(v: Any) -> tuple:
    return tuple(v.items()) if isinstance(v, dict) else tuple(v)


def _same_entries(old: tuple, new: tuple) -> bool:
    if len(old) != len(new):
        return False
    for a, b in zip(old, new):
        if type(a) is tuple and type(b) is tuple and len(a) == 2 == len(b):  # dict items
            if a[0] is not b[0] or a[1] is not b[1]:
                return False
        elif a is not b:
            return False
    return True


def _same_array(v: Any, old: Any) -> bool:
    import numpy as np

    if v.shape != old.shape or v.dtype != old.dtype:
        return False
    if v.dtype.kind == "O":
        return all(a is b for a, b in zip(v.flat, old.flat))
    return bool(np.array_equal(v, old, equal_nan=True))


def _has_state(v: Any) -> bool:
    """A plain object whose attributes a call could set (not a module, class or function)."""
    if isinstance(v, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
        return False
    try:
        vars(v)
    except TypeError:
        return False
    return True


def library_class(cls: type) -> bool:
    """Whether constructing ``cls`` runs no Python code of the user's: its ``__new__``
    and ``__init__`` are C code or the standard library's (``np.float64``,
    ``fractions.Fraction``, ``_json.Encoder``)."""
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


def _receiver(f: Any) -> Any:
    """The object a bound builtin method or method-wrapper acts on, if any."""
    owner = getattr(f, "__self__", None)
    if owner is None or isinstance(owner, (types.ModuleType, type)):
        return None
    return owner


def run(
    f: Any,
    args: tuple,
    kwargs: dict | None,
    name: str,
    forward: bool,
    as_init: int = 0,
) -> tuple[Any, Route]:
    """Call ``f(*args, **kwargs)`` as plain Python; return its value and the route of
    its derivative, or raise ``NoRuleError``. ``as_init``: ``f`` is an ``__init__``
    (or a setter) whose output is its ``as_init``-th positional argument."""
    for v in _inputs(args, kwargs, None):
        if _user_callable(v) or (type(v) in (list, tuple) and any(map(_user_callable, v))):
            raise _error(
                name,
                forward,
                f"it was given a Python function of yours ({_describe(v)}) to call, which "
                "would then run as plain Python, without derivatives",
            )
    receiver = _receiver(f)
    inputs = _inputs(args, kwargs, receiver)
    snapshot = _Snapshot(inputs)
    try:
        out = f(*args, **kwargs) if kwargs else f(*args)
    except ValueError as e:
        if snapshot.locked and "read-only" in str(e):
            raise _error(
                name,
                forward,
                "it writes into an array argument in place, an array that may carry the "
                "derivative, where the AD cannot follow the write",
                "compute a new array instead (np.where(mask, values, x), "
                "x_new = x.copy() then index assignment x_new[i] = v, or a functional "
                "form)",
            ) from None
        raise
    finally:
        snapshot.release()
    y = args[as_init - 1] if as_init else out
    changed = snapshot.changed()
    if changed is not None:
        i, v = changed
        raise _error(
            name,
            forward,
            f"it changed {_what(receiver, i, inputs)} in place ({_describe(v)}) with values "
            "that may carry the derivative, where the AD cannot follow them",
            _container_fix(f, v),
        )
    if forward:
        emptied = snapshot.emptied()
        if emptied is not None:
            i, v = emptied
            raise _error(
                name,
                forward,
                f"it removed from {_what(receiver, i, inputs)} ({_describe(v)}) values "
                "that may carry the derivative, where forward mode cannot follow them",
                _container_fix(f, v),
            )
    if as_init:
        return y, as_init - 1
    # The inputs as they were before the call: one it emptied (d.pop(k), the only
    # item) carried the derivative that its result (the item) may carry on.
    if derivative_free(y) or snapshot.all_free_before(inputs):
        return y, None
    route = _identity_route(y, args, kwargs)
    if route is None:
        raise _error(
            name,
            forward,
            f"its result ({_describe(y)}) may carry the derivative of its arguments, "
            "and plain Python does not compute it",
            _container_fix(f, receiver),
        )
    return y, route


def _what(receiver: Any, i: int, inputs: list) -> str:
    return "its receiver" if receiver is not None and i == len(inputs) - 1 else "an argument"


#: For a C method of a list or dict that changed its receiver: the same done by
#: building a new container, which the AD differentiates.
_CONTAINER_FIXES = {
    (list, "pop"): "read the item and bind a new list without it (v = xs[-1]; xs = xs[:-1], "
    "or v = xs[i]; xs = xs[:i] + xs[i + 1:])",
    (dict, "pop"): "read the item and bind a new dict without it (v = d[k]; "
    "d = {j: e for j, e in d.items() if j != k})",
    (dict, "popitem"): "read the last item and bind a new dict without it (k = list(d)[-1]; "
    "v = d[k]; d = {j: e for j, e in d.items() if j != k})",
    (list, "clear"): "bind a new empty list (xs = [])",
    (dict, "clear"): "bind a new empty dict (d = {})",
    (list, "remove"): "bind a new list without the item (i = xs.index(v); "
    "xs = xs[:i] + xs[i + 1:])",
    (list, "insert"): "bind a new list (xs = xs[:i] + [v] + xs[i:])",
    (list, "reverse"): "bind a new list (xs = xs[::-1])",
    (list, "sort"): "bind a new list (xs = sorted(xs))",
    (list, "extend"): "bind a new list (xs = xs + list(more)), or append the items one by one",
    (dict, "update"): "bind a new dict (d = {**d, **more}), or write the items one by one "
    "(d[k] = v)",
    (dict, "setdefault"): "write the item (if k not in d: d[k] = v) and read it (d[k])",
}


def _container_fix(f: Any, v: Any) -> str:
    """The fix for a C method ``f`` of a list or dict that changed ``v``, its receiver."""
    if _receiver(f) is not v:
        return ""
    for kind in (list, dict):
        if isinstance(v, kind):
            return _CONTAINER_FIXES.get((kind, getattr(f, "__name__", "")), "")
    return ""


def _identity_route(y: Any, args: tuple, kwargs: dict | None) -> Route:
    """The route of a result that is one of the arguments (or a tuple or list of
    those and of derivative-free values), else None. An object passed twice is
    ambiguous: no route."""
    key = _key_of(y, args, kwargs)
    if key is not None:
        return key
    if type(y) is tuple or type(y) is list:
        keys = []
        for e in y:
            k = _key_of(e, args, kwargs)
            if k is None and not derivative_free(e):
                return None
            keys.append(k)
        if any(k is not None for k in keys):
            return (type(y), tuple(keys))
    return None


def _key_of(v: Any, args: tuple, kwargs: dict | None) -> Any:
    found = [i for i, a in enumerate(args) if a is v]
    if kwargs:
        found += [k for k, a in kwargs.items() if a is v]
    return found[0] if len(found) == 1 else None


def _describe(v: Any) -> str:
    if isinstance(v, (_FunctionType, types.MethodType)):
        return f"{getattr(v, '__qualname__', v)!s}"
    shape = getattr(v, "shape", None)
    kind = type(v).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{article} {kind} of shape {shape}" if shape not in (None, ()) else f"{article} {kind}"


def _user_site() -> str:
    """file:line of the innermost differentiated frame of the user's code: not the
    standard library's (a ``functools.wraps`` wrapper such as ``@contextmanager``'s
    is transformed as the function it wraps, but its line is no help)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name in ("_ad_fwd", "_ad_back") and not _in_stdlib(code.co_filename):
            return f"{code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return call_site()


def _in_stdlib(filename: str) -> bool:
    if filename.startswith("<frozen "):
        return True
    path = os.path.realpath(filename)
    return path.startswith(_STDLIB_DIRS) and "-packages" + os.sep not in path


def _error(name: str, forward: bool, why: str, fix: str = "") -> NoRuleError:
    site = _user_site()
    mode = " in forward mode" if forward else ""
    rule = "frule" if forward else "rrule"
    fix = fix or (
        f"register an {rule} for it with rulescore (see rulescore's README); or "
        "compute the value with differentiable operations"
    )
    return NoRuleError(
        f"no rule to differentiate {name}{mode}{f' (called at {site})' if site else ''}: "
        f"it has no {rule} and no Python source of yours to transform, so it ran as plain "
        f"Python, and {why}.\n"
        f"To fix: {fix}; or, if no derivative should flow through it, wrap the call in "
        "ad.ignore_derivatives."
    )


# --- derivatives along a route ----------------------------------------------------------


def _route_cotangents(route: Route, ȳ: Any, n: int, kwnames: Any) -> tuple[list, dict]:
    """Per positional argument and per keyword, the cotangents ``route`` sends ``ȳ`` to."""
    cts: list[Any] = [_Z] * n
    kw: dict[str, Any] = {k: _Z for k in kwnames}
    if route is None:
        return cts, kw
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return cts, kw
    if type(route) is tuple:
        from ad.runtime.cotangents import entries

        keys = route[1]
        pairs = zip(keys, entries(ȳ, len(keys), f"a {route[0].__name__} result"))
    else:
        pairs = iter([(route, ȳ)])
    from ad.runtime.accumulate import acc

    for key, c in pairs:
        if key is None or isinstance(c, AbstractZero):
            continue
        if type(key) is int:
            cts[key] = c if isinstance(cts[key], AbstractZero) else acc(cts[key], c)
        else:
            kw[key] = c if isinstance(kw[key], AbstractZero) else acc(kw[key], c)
    return cts, kw


def _route_tangent(route: Route, tangent_of: Callable[[Any], Any]) -> Any:
    """The tangent of a result along ``route``; ``tangent_of(key)`` is an argument's."""
    if route is None:
        return _Z
    if type(route) is not tuple:
        return tangent_of(route)
    ts = [_NO if k is None else tangent_of(k) for k in route[1]]
    return tan_list(*ts) if route[0] is list else tan_tuple(*ts)


def _plain_pullback(route: Route, n: int, kwargs: dict | None) -> Callable:
    """The pullback of a plain call: ``(NoTangent, *per-argument cotangents)``, then
    a dict of keyword cotangents when called with keywords."""

    def plain_pullback(ȳ: Any) -> tuple:
        cts, kw = _route_cotangents(route, ȳ, n, kwargs or ())
        if kwargs is None:
            return (_NO, *cts)
        return (_NO, *cts, kw)

    return plain_pullback


def reverse_call(f: Any, args: tuple, kwargs: dict | None, name: str) -> tuple[Any, Callable]:
    """``(y, pullback)`` for a call of library code in reverse mode (``reverse``'s
    fallback): ``kwargs`` None for a call without keywords (``rcall``), else
    the pullback ends with their cotangents (``rcall_kw``)."""
    y, route = run(f, args, kwargs, name, False)
    return y, _plain_pullback(route, len(args), kwargs)


def forward_call(
    f: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None, name: str
) -> tuple[Any, Any]:
    """``(y, ẏ)`` for a call of library code in forward mode (``ts = (ḟ, ẋ1, ...)``)."""
    y, route = run(f, args, kwargs, name, True)
    return y, _route_tangent(route, lambda k: ts[1 + k] if type(k) is int else kw_ts.get(k, _Z))


# --- Python functions of the standard library: entries of the transform's caches -------


class PlainEntry:
    """What ``transform.transformed`` (``mode="reverse"``), ``pure_transformed``
    (``"pure"``) and ``forward_transformed`` (``"forward"``) cache for library
    code: its generated function is a runner that calls it as plain Python
    (``run``) with the generated function's calling convention."""

    elides = False
    source = ""
    guards = ()  # no helper is inlined into library code

    def __init__(self, f: types.FunctionType, mode: str, as_init: int) -> None:
        from ad.transform.compiled import Signature

        code = f.__code__
        names = code.co_varnames
        n_pos = code.co_argcount
        n_kw = code.co_kwonlyargcount
        i = n_pos + n_kw
        vararg = names[i] if code.co_flags & 0x04 else None
        if vararg is not None:
            i += 1
        kwarg = names[i] if code.co_flags & 0x08 else None
        positional = names[:n_pos]
        kwonly = names[n_pos : n_pos + n_kw]
        all_names = (
            positional + ((vararg,) if vararg else ()) + kwonly + ((kwarg,) if kwarg else ())
        )
        self.spec = Signature(positional, vararg, kwonly, kwarg, all_names)
        self.simple = self.spec.simple
        self.n_positional = n_pos
        self.mode = mode
        self.as_init = int(as_init)
        self.last: tuple[Any, Any] = (None, None)

    def instantiate(self, f: types.FunctionType) -> Callable:
        """The runner for ``f`` (the last one made is reused)."""
        last_f, last_fn = self.last
        if last_f is f:
            return last_fn
        fn = _forward_runner(self, f) if self.mode == "forward" else _reverse_runner(self, f)
        self.last = (f, fn)
        return fn


def plain_entry(f: Any, mode: str, as_init: bool | int = False) -> PlainEntry | None:
    """A ``PlainEntry`` for ``f`` when it is library code, else None (transform it)."""
    if not is_library_function(f):
        return None
    return PlainEntry(f, mode, int(as_init))


def _name(f: Any) -> str:
    return function_name(f)


def _reverse_runner(entry: PlainEntry, f: types.FunctionType) -> Callable:
    spec = entry.spec
    name = _name(f)

    def plain_primal(*args: Any, **kwargs: Any) -> tuple[Any, Callable]:
        y, route = run(f, args, kwargs or None, name, False, entry.as_init)
        n = len(args)

        def plain_function_pullback(ȳ: Any) -> tuple:
            cts, kw = _route_cotangents(route, ȳ, n, kwargs)
            return (_NO, *_by_parameter(spec, cts, kw))

        return y, plain_function_pullback

    return plain_primal


def _by_parameter(spec: Any, cts: list, kw: dict) -> tuple:
    """The cotangents of a call's arguments in the order of ``spec.all_names``, as a
    generated adjoint returns them (``*args`` a tuple, ``**kwargs`` a dict)."""
    pos = spec.positional
    n_bound = min(len(cts), len(pos))
    by_name: dict[str, Any] = dict(zip(pos[:n_bound], cts[:n_bound]))
    rest = cts[n_bound:]
    if spec.vararg is not None and any(not isinstance(c, AbstractZero) for c in rest):
        by_name[spec.vararg] = tuple(rest)
    extra = {}
    for k, c in kw.items():
        if k in pos or k in spec.kwonly:
            by_name[k] = c
        elif not isinstance(c, AbstractZero):
            extra[k] = c
    if spec.kwarg is not None and extra:
        by_name[spec.kwarg] = extra
    return tuple(by_name.get(n, _Z) for n in spec.all_names)


def _forward_runner(entry: PlainEntry, f: types.FunctionType) -> Callable:
    spec = entry.spec
    name = _name(f)
    index = {n: i for i, n in enumerate(spec.all_names)}

    def plain_pushforward(*args: Any, _ad_dt: tuple, _ad_df: Any, **kwargs: Any) -> tuple:
        y, route = run(f, args, kwargs or None, name, True, entry.as_init)
        return y, _route_tangent(route, lambda k: _parameter_tangent(spec, index, _ad_dt, k))

    return plain_pushforward


def _parameter_tangent(spec: Any, index: dict, dt: tuple, key: Any) -> Any:
    """The tangent of the argument at ``key`` from the parameter tangents ``dt``."""
    pos = spec.positional
    if type(key) is int:
        if key < len(pos):
            return dt[index[pos[key]]]
        rest = dt[index[spec.vararg]]
        return _Z if isinstance(rest, AbstractZero) else rest[key - len(pos)]
    if key in index and key not in (spec.vararg, spec.kwarg):
        return dt[index[key]]
    return mapping_entry(dt[index[spec.kwarg]], key) if spec.kwarg else _Z


# --- second order -----------------------------------------------------------------------


def reverse_over_forward(
    f: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict, name: str, as_init: int = 0
) -> tuple[Any, Callable]:
    """Reverse mode over a forward-mode call of library code: ``((y, ẏ), pullback)``
    with the pullback of ``ad.higher.reverse_over_generated._pushforward_call``:
    ``(∂f, ∂ts, ∂args, ∂kwargs, ∂kw_ts)``. Along a route, ``y`` and ``ẏ`` are
    linear in the routed argument and its tangent; elsewhere constant."""
    y, route = run(f, args, kwargs or None, name, True, as_init)

    def tangent_of(k: Any) -> Any:
        return ts[1 + k] if type(k) is int else kw_ts.get(k, _Z)

    ẏ = _route_tangent(route, tangent_of)
    n = len(args)

    def plain_pushforward_pullback(ct: Any) -> tuple:
        from ad.runtime.cotangents import entries

        ȳ, ẏ̄ = entries(ct, 2, "the (value, tangent) pair of a forward-mode call")
        a_ct, kw_ct = _route_cotangents(route, ȳ, n, kwargs)
        t_ct, kw_t_ct = _route_cotangents(route, ẏ̄, n, kwargs)
        return _NO, (_NO, *t_ct), tuple(a_ct), kw_ct, kw_t_ct

    return (y, ẏ), plain_pushforward_pullback


def reverse_over_fcall(f: Any, ts: tuple, args: tuple, name: str) -> tuple[Any, Callable]:
    """``reverse_over_forward`` in the form of the ``rrule`` of ``fcall(f, ts, *args)``:
    the pullback returns ``(∂fcall, ∂f, ∂ts, ∂args...)``."""
    out, pb = reverse_over_forward(f, ts, args, {}, {}, name)

    def plain_fcall_pullback(ct: Any) -> tuple:
        f_ct, ts_ct, args_ct, _, _ = pb(ct)
        if all(isinstance(t, AbstractZero) for t in ts_ct):
            return (_NO, f_ct, _Z, *args_ct)
        return (_NO, f_ct, Tangent[tuple]._from_backing(tuple(ts_ct)), *args_ct)

    return out, plain_fcall_pullback


def reverse_over_reverse(
    f: Any, args: tuple, kwargs: dict | None, name: str
) -> tuple[Any, Callable]:
    """Reverse mode over a reverse-mode call of library code (``ad.higher.reverse_over_reverse``'s
    dispatch): ``((y, pullback), pb)`` with ``pb(ct) -> (∂f, ∂args, ∂kwargs)``. The
    pullback is linear in its cotangent and reads no argument, so only ``y``'s
    cotangent flows, along the route."""
    y, route = run(f, args, kwargs, name, False)
    n = len(args)
    pullback = _plain_pullback(route, n, kwargs)

    def plain_call_pullback(ct: Any) -> tuple:
        from ad.runtime.cotangents import entries

        ȳ, _ = entries(ct, 2, "the (value, pullback) pair of a call")
        cts, kw = _route_cotangents(route, ȳ, n, kwargs or ())
        return _NO, tuple(cts), kw

    return (y, pullback), plain_call_pullback
