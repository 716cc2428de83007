"""Arguments that the function an entry point differentiates writes into.

A user object handed to code that may write it is followed by identity
(``ad.runtime.state``): the transform emits that ``follow`` in the caller, so a
write in the callee is seen by the caller's reads after the call. At the top
level the caller is ``ad.gradient`` itself: ``ad.gradient(model.loss, w)`` with
a ``loss`` that records ``self.last = out``, or ``ad.gradient(step, opt, w)``
with a ``step`` that updates ``opt``. Nothing reads the object after the call
but the user, who sees its primal fields as Python leaves them, so the entry
points follow such objects from the start, as the transform would, and the
writes are differentiated like any other.

>>> import ad
>>> class Model:
...     def __init__(self, w):
...         self.w = w
...     def loss(self, a):
...         self.last = self.w * a * a
...         return self.last
>>> m = Model(2.0)
>>> ad.gradient(m.loss, 3.0), m.last
((12.0,), 18.0)
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from ad.runtime.dunders import method
from ad.runtime.rules_callbacks import may_write
from ad.transform.holders import stateful

__all__ = ["RECEIVER", "held", "written_arguments"]

#: the position ``written_arguments`` gives a bound method's receiver
RECEIVER = -1
_PLAIN = frozenset([float, int, complex, np.ndarray, tuple, list, dict])
_MethodType = types.MethodType
_FunctionType = types.FunctionType
_NONE: list[int] = []  # never changed: callers only read it


def written_arguments(f: Any, args: tuple) -> list[int]:
    """The positions of the user objects among ``args`` (``RECEIVER``: a bound
    method's receiver, or ``f`` itself, a callable object) that ``f`` may write;
    empty when there are none."""
    found = None
    for i, a in enumerate(args):  # a loop, not a comprehension: every call pays it
        if a.__class__ in _PLAIN or not stateful(a):
            continue
        if found is None:
            found = [i]
        else:
            found.append(i)
    call = f
    if type(f) is _MethodType:
        if stateful(f.__self__):
            found = [*(found or ()), RECEIVER]
    elif f.__class__ is not _FunctionType and stateful(f):
        call = method(type(f), "__call__")
        if type(call) is _FunctionType:  # a callable object: what its __call__ writes
            found = [*(found or ()), RECEIVER]
    if not found:
        return _NONE
    kinds = (type(held(f, args, found[-1])), *map(type, args))
    key = (call, kinds)
    try:
        writes = _DECIDED[key]
    except KeyError:
        writes = may_write(call, kinds=kinds)
        if len(_DECIDED) >= 256:  # bounded: functions made per call leave
            _DECIDED.clear()
        _DECIDED[key] = writes
    except TypeError:  # an unhashable callable
        writes = may_write(call, kinds=kinds)
    return found if writes else _NONE


#: (function, argument types) -> whether it may write: ``may_write`` reads the
#: function's code and what it names, too slow for every call of ``gradient``
_DECIDED: dict[tuple, bool] = {}


def held(f: Any, args: tuple, i: int) -> Any:
    """The object at position ``i`` (see ``written_arguments``): ``RECEIVER`` is a bound
    method's object, or the callable object itself."""
    if i != RECEIVER:
        return args[i]
    return f.__self__ if type(f) is _MethodType else f
