"""What a library call run as plain Python may not do, and the errors that say so.

``plain_calls.run`` takes a ``_Snapshot`` of the call's inputs before it runs
library code: the entries of lists, dicts and sets, float and object arrays'
values, plain objects' attributes. A call that changed one of them with a
value that may carry a derivative (a list sorted in place, an attribute set to
a float, an array written) is an error, as is a call given a Python function of
the user's to call back (plain Python would run it without derivatives). Each
error (``NoRuleError``) names the library function, the user's line that
called it (``_user_site``), what it did, and the fix: for a C method of a list
or dict that changed its receiver, the same done by building a new container
(``_CONTAINER_FIXES``).

>>> xs = [3.0, 1.0]
>>> snapshot = _Snapshot([xs])
>>> xs.sort()
>>> snapshot.changed()
(0, [1.0, 3.0])
"""

from __future__ import annotations

import collections
import sys
import types
from typing import Any

from ad.errors import NoRuleError
from ad.runtime import library_code
from ad.runtime.library_code import _UNCHANGEABLE, _in_stdlib, derivative_free
from ad.runtime.tracebacks import call_site

__all__: list[str] = []

_FunctionType = types.FunctionType
_MISSING = object()


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
            elif _has_state(v) and not isinstance(v, library_code.DERIVATIVE_FREE_TYPES):
                # an object of no derivative may cache its own state (``np.finfo``'s
                # ``cached_property`` attributes, a generator's draws): not followed
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


def _receiver(f: Any) -> Any:
    """The object a bound builtin method or method-wrapper acts on, if any."""
    owner = getattr(f, "__self__", None)
    if owner is None or isinstance(owner, (types.ModuleType, type)):
        return None
    return owner


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
    (list, "append"): "store a new list where the list was (G['k'] = G['k'] + [v], "
    "o.items = o.items + [v])",
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
