"""ad's rules for item writes, ``append`` and augmented assignment (``x op= y``).

The helpers the ANF pass emits for ``obj[key] = value`` (``setitem``: a list or
dict, followed by identity where a differentiation follows it, or an array
written as a new array, ``array_setitem``), ``lst.append(v)`` (``append``) and
``x op= y`` (``inplace_helper``, and ``inplace_fast`` for the generated code's
fast path), each an ordinary function with an ``rrule``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ad.errors import MutationError
from ad.runtime import reverse as _runtime
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import (
    from_list_ct,
    np_module,
    take_entry,
    take_key,
    take_tail,
)
from ad.runtime.dunders import defines_inplace, overriding
from ad.runtime.rules_objects import _follow_rule
from ad.runtime.state import item_key, item_write_pullback, keep_stateful, tracked
from rules.extension import unbroadcast
from rulescore import AbstractZero, NoTangent, ZeroTangent, rrule, unthunk

__all__ = [
    "append",
    "array_setitem",
    "inplace_fast",
    "inplace_helper",
    "method_write",
    "setitem",
]

_Z = ZeroTangent()
_NO = NoTangent()


# --- item writes and in-place updates ---------------------------------------


def setitem(obj: Any, key: Any, value: Any) -> Any:
    obj[key] = value
    return obj


@rrule.register(setitem, config=ADConfig)
def _(config: Any, obj: Any, key: Any, value: Any) -> Any:
    np = np_module()
    if np is not None and isinstance(obj, np.ndarray):
        return array_setitem(obj, key, value)
    if overriding(obj, "__setitem__") is not None:  # a list or dict subclass's own
        return method_write(config, obj, "__setitem__", key, value)
    p = tracked(obj)
    if p is not None and isinstance(obj, (list, dict)):  # followed by identity (ad.runtime.state)
        if isinstance(obj, list) and not isinstance(key, int):
            raise TypeError("slice assignment into a list is not differentiable; build a new list")
        n = len(obj)
        k = item_key(obj, key)
        obj[key] = value
        p.mark(obj)  # a write: the calls it happens in must run their pullbacks
        return obj, item_write_pullback(p, obj, k, n)
    if isinstance(obj, list):
        n = len(obj)
        obj[key] = value
        if not isinstance(key, int):
            raise TypeError("slice assignment into a list is not differentiable; build a new list")

        def list_setitem_pullback(ȳ: Any) -> tuple:
            # the entry written, taken out of the list's cotangent in place where
            # that is ours: a loop of n writes costs n, not n**2
            rest, v = take_entry(ȳ, n, key)
            return (_NO, rest, _NO, v)

        return obj, list_setitem_pullback
    if isinstance(obj, dict):
        obj[key] = value

        def dict_setitem_pullback(ȳ: Any) -> tuple:
            rest, v = take_key(ȳ, key)  # in place where ours, as for a list above
            return (_NO, rest, _NO, v)

        return obj, dict_setitem_pullback
    raise TypeError(
        f"cannot differentiate item assignment into a {type(obj).__name__} "
        f"(at {_runtime.call_site()}); only lists and dicts are supported"
    )


def array_setitem(x: Any, key: Any, value: Any) -> Any:
    """``x[key] = value`` on an array that nothing else observes (``ad.runtime.ownership``
    checked that before the write): differentiated as a new array, equal to ``x``
    but at ``key``, so that values a pullback saved keep their old entries. Each
    write copies ``x``: to fill a large array entry by entry, use ``ad.Buffer``.
    """
    np = np_module()
    if _repeats(np, x, key):
        raise MutationError(
            f"item assignment with repeated indices (at {_runtime.call_site()}): which write "
            "wins is up to numpy, so its derivative is not defined.\n"
            "To fix: index each entry once (np.unique), add once per occurrence with "
            "np.add.at(a, idx, v), or build the array out of place."
        )
    y = x.copy()
    y[key] = value  # numpy's own broadcasting, casting and errors

    def array_setitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO, _Z)
        x̄ = np.array(ȳ, dtype=np.result_type(ȳ, x.dtype), copy=True)
        x̄[key] = 0
        v̄ = unbroadcast(value, ȳ[key])
        return (_NO, x̄, _NO, v̄)

    return y, array_setitem_pullback


def _repeats(np: Any, x: Any, key: Any) -> bool:
    """Whether ``x[key] = v`` writes some entry of ``x`` twice: an index array or
    list (alone or in a tuple) naming one position more than once (``a[[0, 0]]``,
    ``a[[1, 1], [2, 2]]``). Basic indexing and boolean masks name each once."""
    parts = key if type(key) is tuple else (key,)
    if not any(isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype != bool for k in parts):
        return False
    written = np.arange(x.size).reshape(x.shape)[key]  # the flat positions written
    return np.unique(written).size < np.size(written)


def append(lst: Any, value: Any) -> Any:
    lst.append(value)
    return lst


@rrule.register(append, config=ADConfig)
def _(config: Any, lst: list, value: Any) -> Any:
    if overriding(lst, "append") is not None:  # a list subclass's own
        return method_write(config, lst, "append", value)
    n = len(lst)
    lst.append(value)
    p = tracked(lst)
    if p is not None:  # followed by identity (ad.runtime.state)
        p.mark(lst)
        return lst, item_write_pullback(p, lst, n, n, append=True)

    def append_pullback(ȳ: Any) -> tuple:
        # the list's cotangent gives up its last entry, in place where it is ours:
        # a loop of appends costs each append, not the list's length
        rest, tail = take_tail(ȳ, n, 1)
        return (_NO, rest, tail[0])

    return lst, append_pullback


@rrule.register(append, config=ADConfig)
def _(config: Any, obj: object, value: Any) -> Any:
    """``obj.append(v)`` on anything but a list (a user class's method, a deque)."""
    return method_write(config, obj, "append", value)


def method_write(config: Any, obj: Any, name: str, *args: Any) -> Any:
    """A helper's write done by ``obj``'s own method ``name`` (a user class's, a
    deque's, a list subclass's ``append`` or ``__setitem__``), differentiated as
    any call is (from its source, by its rule, or as plain Python under
    ``plain_calls``' checks). The helper's output is ``obj`` again: its
    cotangent passes through, plus what the method's reads of its receiver give."""
    # followed by identity from here, as the receiver of any method call is
    obj, fpb = _follow_rule(config, obj)
    _, pb = _runtime.rcall(getattr(obj, name), *args)

    def method_write_pullback(ȳ: Any) -> tuple:
        dm, *dargs = pb(_Z)  # the method's value (None) carries no cotangent
        d_obj = fpb(_runtime.acc(ȳ, dm))[1]
        if name == "append":
            return (_NO, d_obj, *dargs)
        if name == "__delitem__":  # the key has none
            return (_NO, d_obj, _NO)
        return (_NO, d_obj, _NO, dargs[1])  # __setitem__: the key has none

    return obj, keep_stateful(fpb, keep_stateful(pb, method_write_pullback))


def inplace_helper(op: str) -> Callable:
    """``x op= y``: lists extend in place; everything else rebinds to ``x op y``.

    numpy arrays are updated out of place when differentiated (the old array
    may be saved by a pullback; ``ad.runtime.ownership`` made sure nothing else
    observes it), keeping numpy's in-place semantics for the result: ``x``'s
    shape and dtype (``float32 += float64`` stays float32) and numpy's error
    where ``y`` does not broadcast into ``x``. Inactive code runs in place.
    """
    inplace = getattr(operator, f"i{op}" if not op.endswith("_") else f"i{op[:-1]}")
    outofplace = getattr(operator, op)

    def iop(x: Any, y: Any) -> Any:
        return inplace(x, y)

    iop.__name__ = iop.__qualname__ = f"iop_{op}"

    def iop_rule(config: Any, x: Any, y: Any) -> Any:
        if type(x) is list and op == "add":
            n = len(x)
            x += y
            m = len(x) - n

            def extend_pullback(ȳ: Any) -> tuple:
                # the entries added, taken off the list's cotangent (in place where
                # it is ours, as for an append)
                rest, tail = take_tail(ȳ, n, m)
                return (_NO, rest, from_list_ct(y, tail))

            return x, extend_pullback
        z, pb = _runtime.rcall(inplace if defines_inplace(inplace, x) else outofplace, x, y)
        np = np_module()
        if np is not None and type(x) is np.ndarray and not same_array_kind(z, x):
            z = as_inplace_result(z, x, y, inplace)
        return z, pb

    rrule.register(iop, config=ADConfig)(iop_rule)
    iop.inplace = inplace  # type: ignore[attr-defined]
    return iop


def inplace_fast(fasti: Callable, iop: Callable) -> Callable:
    """``x op= y`` for the generated code's fast path (``_ad_fasti_iop_<op>``):
    on numbers, and on an array whose shape and dtype the result keeps, the
    same program as ``x = x op y`` (``ad.runtime.ownership`` made sure nothing else
    observes ``x``), so ``fasti``'s tape entries serve; lists, user objects and
    updates numpy would cast or refuse take ``iop``'s rule."""
    np = np_module()
    ndarray = np.ndarray
    numbers_ = (float, int, complex, np.float64, np.float32, np.complex128)

    def fasti_iop(x: Any, y: Any) -> Any:
        kind = type(x)
        if kind is ndarray:
            out = fasti(x, y)
            z = out[0]
            if type(z) is ndarray and z.shape == x.shape and z.dtype == x.dtype:
                return out
        elif kind in numbers_:
            return fasti(x, y)
        return _runtime.rcall(iop, x, y)

    fasti_iop.__name__ = fasti_iop.__qualname__ = f"fasti_{iop.__name__}"
    return fasti_iop


def same_array_kind(z: Any, x: Any) -> bool:
    """Whether ``z`` has the array ``x``'s type, shape and dtype."""
    return type(z) is type(x) and z.shape == x.shape and z.dtype == x.dtype


def as_inplace_result(z: Any, x: Any, y: Any, inplace: Callable) -> Any:
    """``x op y`` (computed out of place as ``z``) as ``x op= y`` leaves ``x``: in
    ``x``'s dtype, or numpy's own error where the update could not be in place."""
    np = np_module()
    z = np.asarray(z)
    if z.shape != x.shape or not np.can_cast(z.dtype, x.dtype, "same_kind"):
        inplace(x.copy(), y)  # raises numpy's error (a broadcast or a cast it refuses)
    return z.astype(x.dtype, copy=False)
