"""Rules for the methods of numpy scalars: the ``ndarray`` method's rule on a 0-d array.

numpy scalars are everywhere (``v.sum()``, ``np.dot(v, w)`` and ``a[0]`` return
them), and users call methods on them: ``s.clip(0, 1)``, ``s.round(2)``,
``s.conjugate()``, ``s.sum()``, ``s.reshape(())``. numpy implements each such
method of ``np.generic`` by converting the scalar to a 0-d array, calling the
``ndarray`` method, and turning a 0-d result back into a scalar. The rules here
do the same, once for every method: for each ``np.ndarray.<name>`` with an
``rrule`` or ``frule`` (whoever registered it, so new array methods are covered
as they get rules), ``np.generic.<name>`` (where numpy has it and it has no rule
of its own, as ``item`` and ``astype`` do) gets rules that

* run the array method's rule on ``np.asarray(s)``, with the other arguments
  unchanged;
* return what numpy returns: a 0-d result as the numpy scalar ``y[()]``
  (``s.sum()``, ``s.reshape(())`` is a ``float64``), any other result as it is
  (``s.reshape(1)`` is an array of shape ``(1,)``, ``s.tolist()`` a float);
* convert the scalar's cotangent back to the scalar's own type (``ProjectTo(s)``:
  a ``float32`` stays ``float32``, an integer scalar gets a ``float64``), its
  tangent to a 0-d array of that dtype for the array rule, and the output's
  tangent to a scalar where the output is one; the other arguments' cotangents
  are the array rule's, unchanged.

An array method whose rules are all ``non_differentiable`` (``argmax``,
``nonzero``, ...) makes the scalar's method ``non_differentiable`` too. This
module is imported last by ``rules/__init__``, after every array method rule.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.generic.clip, np.float32(1.5), 0.0, 1.0)
>>> y, type(y).__name__
(np.float32(1.0), 'float32')
>>> y, pb = rrule(np.generic.sum, np.float32(1.5))
>>> type(pb(1.0)[1]).__name__
'float32'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    ProjectTo,
    frule,
    non_differentiable,
    rrule,
    unthunk,
)

__all__ = ["SCALAR_METHODS", "array_method_names"]

_NO = NoTangent()


def _scalar_result(y: Any) -> Any:
    """What numpy's scalar method returns for the array method's result ``y``."""
    return y[()] if type(y) is np.ndarray and y.ndim == 0 else y


def _non_differentiable_only(f: Any) -> bool:
    """Whether every (not opted-out) rule of ``f`` comes from ``non_differentiable``."""
    rules = [r for t in (rrule, frule) for r in t.table.rules_for(f) if not r.opt_out]
    return bool(rules) and all(
        getattr(r.impl, "__name__", "").startswith(("nondiff_rrule_", "nondiff_frule_"))
        for r in rules
    )


def _register(method: Any, generic: Any) -> None:
    """Rules for ``generic`` (a numpy scalar's method) that run ``method``'s rules
    (the ``ndarray`` method of the same name) on the scalar as a 0-d array."""
    name = method.__name__

    def scalar_method_rrule(x: Any, *args: Any, **kw: Any) -> Any:
        if not isinstance(x, np.generic):
            return None  # numpy's own TypeError, from the primal run plainly
        out = rrule(method, np.asarray(x), *args, **kw)
        if out is None:
            return None
        y, array_pullback = out
        ys = _scalar_result(y)
        project = ProjectTo(x)

        def scalar_method_pullback(ȳ: Any) -> tuple:
            if ys is not y and not isinstance(ȳ, AbstractZero):
                ȳ = np.asarray(unthunk(ȳ))  # the 0-d cotangent the array rule expects
            cts = array_pullback(ȳ)
            return (cts[0], project(unthunk(cts[1])), *cts[2:])

        scalar_method_pullback.__name__ = scalar_method_pullback.__qualname__ = (
            f"generic_{name}_pullback"
        )
        return ys, scalar_method_pullback

    def scalar_method_frule(ḟ: Any, *rest: Any, **kw: Any) -> Any:
        n = len(rest) // 2
        ts, x, args = rest[:n], rest[n], rest[n + 1 :]
        if not isinstance(x, np.generic):
            return None
        xa = np.asarray(x)
        ẋ = unthunk(ts[0])
        if not isinstance(ẋ, AbstractZero):
            ẋ = ProjectTo(xa)(ẋ)  # a 0-d array of the scalar's tangent dtype
        out = frule((_NO, ẋ, *ts[1:]), method, xa, *args, **kw)
        if out is None:
            return None
        y, ẏ = out
        ys = _scalar_result(y)
        if ys is not y:
            ẏ = unthunk(ẏ)
            if type(ẏ) is np.ndarray and ẏ.ndim == 0:
                ẏ = ẏ[()]
        return ys, ẏ

    scalar_method_rrule.__name__ = scalar_method_rrule.__qualname__ = f"generic_{name}_rrule"
    scalar_method_frule.__name__ = scalar_method_frule.__qualname__ = f"generic_{name}_frule"
    rrule.register_signature(generic, scalar_method_rrule, None)
    frule.register_signature(generic, scalar_method_frule, None)


def array_method_names() -> list[str]:
    """The names of the ``ndarray`` methods with rules whose numpy-scalar namesake
    has none of its own: those this module gives rules (sorted)."""
    out = set()
    for f in rrule.functions() + frule.functions():
        if getattr(f, "__objclass__", None) is not np.ndarray:
            continue
        generic = getattr(np.generic, f.__name__, None)
        if generic is None or getattr(generic, "__objclass__", None) is not np.generic:
            continue
        if not (rrule.has_rule_for(generic) or frule.has_rule_for(generic)):
            out.add(f.__name__)
    return sorted(out)


def _register_all() -> list[str]:
    """Register the scalar methods' rules; returns the names given derivative rules."""
    differentiable = []
    for name in array_method_names():
        method, generic = getattr(np.ndarray, name), getattr(np.generic, name)
        if _non_differentiable_only(method):
            non_differentiable(generic)
        else:
            _register(method, generic)
            differentiable.append(name)
    return differentiable


#: The numpy scalar methods given rules that run their array method's rule.
SCALAR_METHODS: tuple[str, ...] = tuple(_register_all())
