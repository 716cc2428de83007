"""Helpers that generated code calls, and their rules.

The ANF pass rewrites containers, attribute access, unpacking and in-place
updates into calls of these helpers; each is an ordinary function (so
inactive code just runs it) with an ``rrule`` that ad registers under its own
``ADConfig``. Iteration builtins (``enumerate``, ``zip``, ``reversed``,
``dict.items``...) get ad-specific rules that materialise lists, so a loop over
them can send each element's cotangent back to its source.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, rrule, unthunk

from . import _runtime
from ._config import ADConfig
from ._fast import FAST_HELPERS
from .errors import CotangentShapeError, MutationError
from .transform.anf import BINOPS, UNARYOPS

__all__ = ["HELPERS"]

_Z = ZeroTangent()
_NO = NoTangent()


def _np() -> Any:
    return sys.modules.get("numpy")


def _entries(ȳ: Any, n: int, what: str) -> tuple:
    """The entry cotangents of a tuple/list cotangent (zeros expand to n zeros)."""
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return (_Z,) * n
    if isinstance(ȳ, Tangent):
        ȳ = ȳ._backing if isinstance(ȳ._backing, tuple) else tuple(ȳ)
    if not isinstance(ȳ, (tuple, list)) or len(ȳ) != n:
        raise CotangentShapeError(
            f"the cotangent of {what} must have {n} entries, got {type(ȳ).__name__}"
            f"{f' of length {len(ȳ)}' if hasattr(ȳ, '__len__') else ''}"
        )
    return tuple(ȳ)


def _zero_like(x: Any) -> Any:
    np = _np()
    if np is not None and isinstance(x, np.ndarray):
        return np.zeros_like(
            x, dtype=np.result_type(x.dtype, np.float64) if x.dtype.kind in "iub" else x.dtype
        )
    return 0.0


def _from_list_ct(src: Any, cts: list) -> Any:
    """Cotangent of ``src`` from the cotangents of ``list(src)``'s entries."""
    if all(isinstance(c, AbstractZero) for c in cts):
        return _Z
    if type(src) is list:
        return list(cts)
    if isinstance(src, tuple):
        return tuple(cts)
    np = _np()
    if np is not None and isinstance(src, np.ndarray):
        rows = [
            _zero_like(src[i]) if isinstance(c, AbstractZero) else unthunk(c)
            for i, c in enumerate(cts)
        ]
        return np.stack([np.asarray(r) for r in rows]).astype(
            np.result_type(src.dtype, np.float64) if src.dtype.kind in "iub" else src.dtype,
            copy=False,
        )
    if isinstance(src, dict):
        return _NO  # iterating a dict yields its keys
    if isinstance(src, range):
        return _NO
    return list(cts)


# --- containers -----------------------------------------------------------


def mk_tuple(*xs: Any) -> tuple:
    return xs


def mk_list(*xs: Any) -> list:
    return list(xs)


def mk_dict(keys: tuple, *values: Any) -> dict:
    return dict(zip(keys, values))


@rrule.register(mk_tuple, config=ADConfig)
def _(config: Any, *xs: Any) -> Any:
    n = len(xs)

    def tuple_pullback(ȳ: Any) -> tuple:
        return (_NO, *_entries(ȳ, n, "a tuple"))

    return xs, tuple_pullback


@rrule.register(mk_list, config=ADConfig)
def _(config: Any, *xs: Any) -> Any:
    n = len(xs)

    def list_pullback(ȳ: Any) -> tuple:
        return (_NO, *_entries(ȳ, n, "a list"))

    return list(xs), list_pullback


@rrule.register(mk_dict, config=ADConfig)
def _(config: Any, keys: tuple, *values: Any) -> Any:
    def dict_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, *(_Z for _ in keys))
        b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
        return (_NO, _NO, *(b.get(k, _Z) for k in keys))

    return dict(zip(keys, values)), dict_pullback


def concat_tuple(*parts: Any) -> tuple:
    return tuple(x for p in parts for x in p)


def concat_list(*parts: Any) -> list:
    return [x for p in parts for x in p]


def _concat_rule(kind: Callable) -> Callable:
    def rule(config: Any, *parts: Any) -> Any:
        lens = [len(p) for p in parts]
        y = kind(x for p in parts for x in p)

        def concat_pullback(ȳ: Any) -> tuple:
            cts = _entries(ȳ, sum(lens), "a concatenation")
            out, i = [], 0
            for p, n in zip(parts, lens):
                out.append(_from_list_ct(p, list(cts[i : i + n])))
                i += n
            return (_NO, *out)

        return y, concat_pullback

    return rule


rrule.register(concat_tuple, config=ADConfig)(_concat_rule(tuple))
rrule.register(concat_list, config=ADConfig)(_concat_rule(list))


def apply(f: Any, args: tuple, kwargs: dict) -> Any:
    return f(*args, **kwargs)


@rrule.register(apply, config=ADConfig)
def _(config: Any, f: Any, args: tuple, kwargs: dict) -> Any:
    y, pb = _runtime.rcall_kw(f, tuple(args), dict(kwargs))
    n = len(args)

    def apply_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        kw = cts[n + 1]
        kw = {k: v for k, v in kw.items() if not isinstance(v, AbstractZero)} if kw else {}
        return (_NO, cts[0], tuple(cts[1 : n + 1]), kw or _Z)

    return y, apply_pullback


def merge_kw(*dicts: dict) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in out:
                raise TypeError(f"got multiple values for keyword argument {k!r}")
            out[k] = v
    return out


@rrule.register(merge_kw, config=ADConfig)
def _(config: Any, *dicts: dict) -> Any:
    y = merge_kw(*dicts)

    def merge_kw_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, *(_Z for _ in dicts))
        b = ȳ._backing if isinstance(ȳ, Tangent) else ȳ
        parts = []
        for d in dicts:
            part = {k: b[k] for k in d if k in b and not isinstance(b[k], AbstractZero)}
            parts.append(part or _Z)
        return (_NO, *parts)

    return y, merge_kw_pullback


def unpack(t: Any, n: int) -> tuple:
    items = tuple(t)
    if len(items) != n:
        raise ValueError(
            f"{'too many' if len(items) > n else 'not enough'} values to unpack "
            f"(expected {n}, got {len(items)})"
        )
    return items


@rrule.register(unpack, config=ADConfig)
def _(config: Any, t: Any, n: int) -> Any:
    items = unpack(t, n)

    def unpack_pullback(ȳ: Any) -> tuple:
        return (_NO, _from_list_ct(t, list(_entries(ȳ, n, "an unpacking"))), _NO)

    return items, unpack_pullback


def unpack_star(t: Any, before: int, after: int) -> tuple:
    items = list(t)
    if len(items) < before + after:
        raise ValueError(
            f"not enough values to unpack (expected at least {before + after}, got {len(items)})"
        )
    return (*items[:before], items[before : len(items) - after], *items[len(items) - after :])


@rrule.register(unpack_star, config=ADConfig)
def _(config: Any, t: Any, before: int, after: int) -> Any:
    y = unpack_star(t, before, after)
    n_mid = len(y[before])

    def unpack_star_pullback(ȳ: Any) -> tuple:
        cts = _entries(ȳ, before + 1 + after, "an unpacking")
        mid = cts[before]
        mid = [_Z] * n_mid if isinstance(unthunk(mid), AbstractZero) else list(unthunk(mid))
        flat = [*cts[:before], *mid, *cts[before + 1 :]]
        return (_NO, _from_list_ct(t, flat), _NO, _NO)

    return y, unpack_star_pullback


def aslist(it: Any) -> list:
    return list(it)


@rrule.register(aslist, config=ADConfig)
def _(config: Any, it: Any) -> Any:
    np = _np()
    if not isinstance(it, (list, tuple, range, dict)) and not (
        np is not None and isinstance(it, np.ndarray)
    ):
        raise TypeError(
            f"cannot differentiate a loop over a {type(it).__name__} (at {_runtime.call_site()}): "
            "its elements cannot send their derivatives back.\n"
            "To fix: loop over a list, tuple, numpy array, range, zip/enumerate of those, or dict items."
        )
    y = list(it)

    def aslist_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _Z)
        return (_NO, _from_list_ct(it, list(ȳ)))

    return y, aslist_pullback


def _partial_rule(config: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
    """Building a partial: its tangent has fields func, args (a tuple) and keywords.

    Called with keywords, the pullback appends their cotangents (see
    ``keyword_cotangents``), which ordinary rules cannot give.
    """
    p = functools.partial(func, *args, **kwargs)
    n = len(args)

    def partial_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        b = ȳ._backing if isinstance(ȳ, Tangent) else {}
        bound = b.get("args", _Z)
        bound = (_Z,) * n if isinstance(bound, AbstractZero) else tuple(bound)
        kw_cts = b.get("keywords", {})
        kw_cts = {} if isinstance(kw_cts, AbstractZero) else kw_cts
        out = (_NO, b.get("func", _Z), *bound)
        if kwargs:
            return (*out, {k: kw_cts.get(k, _Z) for k in kwargs})
        return out

    return p, partial_pullback


_partial_rule.keyword_cotangents = True  # type: ignore[attr-defined]
rrule.register(functools.partial, config=ADConfig)(_partial_rule)


# --- iteration builtins ---------------------------------------------------


def _container_rule(kind: type) -> Any:
    def rule(config: Any, *args: Any) -> Any:
        if not args:

            def empty_pullback(ȳ: Any) -> tuple:
                return (_NO,)

            return kind(), empty_pullback
        (it,) = args
        src = list(it)
        y = kind(src)

        def container_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (_NO, ȳ)
            return (_NO, _from_list_ct(it, list(_entries(ȳ, len(src), kind.__name__))))

        return y, container_pullback

    return rule


rrule.register(list, config=ADConfig)(_container_rule(list))
rrule.register(tuple, config=ADConfig)(_container_rule(tuple))


def _enumerate_rule(config: Any, xs: Any, start: Any = 0) -> Any:
    src = list(xs)
    y = list(enumerate(src, start))

    def enumerate_pullback(ȳ: Any) -> tuple:
        cts = _entries(ȳ, len(src), "enumerate's output")
        xs_ct = [_entries(c, 2, "an (index, value) pair")[1] for c in cts]
        return (_NO, _from_list_ct(xs, xs_ct), *([_NO] if start != 0 else []))

    return y, enumerate_pullback


def _zip_rule(config: Any, *seqs: Any) -> Any:
    srcs = [list(s) for s in seqs]
    y = list(zip(*srcs))
    k = len(seqs)

    def zip_pullback(ȳ: Any) -> tuple:
        cts = _entries(ȳ, len(y), "zip's output")
        per = [[_Z] * len(s) for s in srcs]
        for i, c in enumerate(cts):
            for j, cj in enumerate(_entries(c, k, "a zipped tuple")):
                per[j][i] = cj
        return (_NO, *(_from_list_ct(s, p) for s, p in zip(seqs, per)))

    return y, zip_pullback


def _reversed_rule(config: Any, xs: Any) -> Any:
    src = list(xs)
    y = src[::-1]

    def reversed_pullback(ȳ: Any) -> tuple:
        cts = list(_entries(ȳ, len(y), "reversed's output"))[::-1]
        return (_NO, _from_list_ct(xs, cts))

    return y, reversed_pullback


_Seq = tuple | list | np.ndarray | range


def _register_iteration_rules() -> None:
    """ad's list-materialising rules for the iteration builtins.

    They are registered twice: for any iterable, and with the sequence types
    other rule sets use, so that under ``ADConfig`` they win the tie.
    """

    def enumerate_seq(config: Any, xs: _Seq, start: Any = 0) -> Any:
        return _enumerate_rule(config, xs, start)

    def zip_seq(config: Any, *seqs: _Seq) -> Any:
        return _zip_rule(config, *seqs)

    def reversed_seq(config: Any, xs: _Seq) -> Any:
        return _reversed_rule(config, xs)

    for f, general, specific in (
        (enumerate, _enumerate_rule, enumerate_seq),
        (zip, _zip_rule, zip_seq),
        (reversed, _reversed_rule, reversed_seq),
    ):
        rrule.register(f, config=ADConfig)(general)
        rrule.register(f, config=ADConfig)(specific)


_register_iteration_rules()


@rrule.register(dict.items, config=ADConfig)
def _(config: Any, d: dict) -> Any:
    keys = list(d)
    y = list(d.items())

    def items_pullback(ȳ: Any) -> tuple:
        cts = _entries(ȳ, len(keys), "dict.items()")
        out = {}
        for k, c in zip(keys, cts):
            v = _entries(c, 2, "a (key, value) pair")[1]
            if not isinstance(v, AbstractZero):
                out[k] = v
        return (_NO, out or _Z)

    return y, items_pullback


@rrule.register(dict.values, config=ADConfig)
def _(config: Any, d: dict) -> Any:
    keys = list(d)

    def values_pullback(ȳ: Any) -> tuple:
        cts = _entries(ȳ, len(keys), "dict.values()")
        out = {k: c for k, c in zip(keys, cts) if not isinstance(c, AbstractZero)}
        return (_NO, out or _Z)

    return list(d.values()), values_pullback


@rrule.register(dict.keys, config=ADConfig)
def _(config: Any, d: dict) -> Any:
    def keys_pullback(ȳ: Any) -> tuple:
        return (_NO, _NO)

    return list(d.keys()), keys_pullback


@rrule.register(dict.get, config=ADConfig)
def _(config: Any, d: dict, key: Any, default: Any = None) -> Any:
    present = key in d
    y = d[key] if present else default

    def get_pullback(ȳ: Any) -> tuple:
        if present:
            return (_NO, {key: ȳ}, _NO, *([_Z] if default is not None else []))
        return (_NO, _Z, _NO, *([ȳ] if default is not None else []))

    return y, get_pullback


# --- attributes -----------------------------------------------------------


def getattr_(obj: Any, name: str) -> Any:
    return getattr(obj, name)


@rrule.register(getattr_, config=ADConfig)
def _(config: Any, obj: Any, name: str) -> Any:
    value = getattr(obj, name)
    if getattr(value, "__self__", None) is obj and callable(value):
        # A bound method: its cotangent is its receiver's (see _runtime._call_bound).
        def method_pullback(ȳ: Any) -> tuple:
            return (_NO, ȳ, _NO)

        return value, method_pullback
    np = _np()
    if np is not None and isinstance(obj, (np.ndarray, np.generic)):
        out = rrule(config, getattr, obj, name)
        if out is not None:
            return out
        if isinstance(obj, np.ndarray):
            raise TypeError(f"no rule for reading attribute {name!r} of a numpy array")
    if isinstance(obj, numbers.Number) and name in ("real", "imag"):
        return _number_part(obj, name)
    prop = _find_property(type(obj), name)
    if prop is not None and prop.fget is not None:
        y, pb = _runtime.rcall(prop.fget, obj)

        def property_pullback(ȳ: Any) -> tuple:
            return (_NO, pb(ȳ)[1], _NO)

        return y, property_pullback
    cls = type(obj)

    def getattr_pullback(ȳ: Any) -> tuple:
        if isinstance(ȳ, AbstractZero):
            return (_NO, _Z, _NO)
        return (_NO, Tangent[cls]._from_backing({name: ȳ}), _NO)

    return value, getattr_pullback


def _number_part(z: Any, name: str) -> Any:
    """``z.real`` / ``z.imag``: with ∂z = ∂L/∂re + i ∂L/∂im."""
    y = getattr(z, name)
    is_complex = isinstance(z, complex) or getattr(getattr(z, "dtype", None), "kind", "") == "c"

    def part_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO)
        r = ȳ.real
        if name == "real":
            return (_NO, complex(r) if is_complex else r, _NO)
        return (_NO, 1j * r if is_complex else _Z, _NO)

    return y, part_pullback


def _find_property(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        attr = klass.__dict__.get(name)
        if attr is not None:
            return attr if isinstance(attr, property) else None
    return None


def setattr_(obj: Any, name: str, value: Any) -> Any:
    setattr(obj, name, value)
    return obj


@rrule.register(setattr_, config=ADConfig)
def _(config: Any, obj: Any, name: str, value: Any) -> Any:
    if dataclasses.is_dataclass(obj) and type(obj).__dataclass_params__.frozen:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    setattr(obj, name, value)

    def setattr_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO, _Z)
        if isinstance(ȳ, Tangent):
            b = dict(ȳ._backing)
            v = b.pop(name, _Z)
            rest = type(ȳ)._from_backing(b) if b else _Z
            return (_NO, rest, _NO, v)
        raise CotangentShapeError(
            f"cotangent of an object must be a Tangent, got {type(ȳ).__name__}"
        )

    return obj, setattr_pullback


# --- item writes and in-place updates ---------------------------------------


def setitem(obj: Any, key: Any, value: Any) -> Any:
    obj[key] = value
    return obj


@rrule.register(setitem, config=ADConfig)
def _(config: Any, obj: Any, key: Any, value: Any) -> Any:
    np = _np()
    if np is not None and isinstance(obj, np.ndarray):
        raise MutationError(
            f"in-place assignment into a numpy array (at {_runtime.call_site()}) would corrupt "
            "values the backward pass has saved.\n"
            "To fix: build the array out of place (np.where, np.concatenate, np.stack, a list "
            "then np.array), or use ad.Buffer for a buffer you fill and then copy."
        )
    if isinstance(obj, list):
        n = len(obj)
        obj[key] = value
        if not isinstance(key, int):
            raise TypeError("slice assignment into a list is not differentiable; build a new list")

        def list_setitem_pullback(ȳ: Any) -> tuple:
            cts = list(_entries(ȳ, n, "a list"))
            v = cts[key]
            cts[key] = _Z
            return (_NO, cts, _NO, v)

        return obj, list_setitem_pullback
    if isinstance(obj, dict):
        obj[key] = value

        def dict_setitem_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if isinstance(ȳ, AbstractZero):
                return (_NO, ȳ, _NO, _Z)
            b = dict(ȳ._backing if isinstance(ȳ, Tangent) else ȳ)
            v = b.pop(key, _Z)
            return (_NO, b or _Z, _NO, v)

        return obj, dict_setitem_pullback
    raise TypeError(
        f"cannot differentiate item assignment into a {type(obj).__name__} "
        f"(at {_runtime.call_site()}); only lists and dicts are supported"
    )


def append(lst: Any, value: Any) -> Any:
    lst.append(value)
    return lst


@rrule.register(append, config=ADConfig)
def _(config: Any, lst: list, value: Any) -> Any:
    n = len(lst)
    lst.append(value)

    def append_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _Z)
        cts = _entries(ȳ, n + 1, "a list")
        return (_NO, list(cts[:n]) if n else _Z, cts[n])

    return lst, append_pullback


def _inplace_helper(op: str) -> Callable:
    """``x op= y``: lists extend in place; everything else rebinds to ``x op y``.

    numpy arrays are updated out of place when differentiated (the old array
    may be saved by a pullback); another name bound to the same array does not
    see the update. Inactive code keeps Python's in-place semantics.
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
                cts = _entries(ȳ, n + m, "a list")
                return (_NO, list(cts[:n]) if n else _Z, _from_list_ct(y, list(cts[n:])))

            return x, extend_pullback
        return _runtime.rcall(outofplace, x, y)

    rrule.register(iop, config=ADConfig)(iop_rule)
    return iop


HELPERS: dict[str, Any] = {
    "_ad_rcall": _runtime.rcall,
    "_ad_rcall_kw": _runtime.rcall_kw,
    "_ad_acc": _runtime.acc,
    "_ad_Z": _Z,
    "_ad_NoTangent": _NO,
    "_ad_unpack_error": _runtime.unpack_error,
    "_ad_argument_write": _runtime.argument_write,
    "_ad_shared_update": _runtime.shared_update,
    "_ad_kw_ct": _runtime.kw_ct,
    "_ad_field": _runtime.field_ct,
    "_ad_fn_tangent": _runtime.fn_tangent,
    "_ad_tuple_ct": _runtime.tuple_ct,
    "_ad_getattr": getattr_,
    "_ad_setattr": setattr_,
    "_ad_setitem": setitem,
    "_ad_append": append,
    "_ad_unpack": unpack,
    "_ad_apply": apply,
    "_ad_merge_kw": merge_kw,
    "_ad_unpack_star": unpack_star,
    "_ad_mk_tuple": mk_tuple,
    "_ad_mk_list": mk_list,
    "_ad_mk_dict": mk_dict,
    "_ad_concat_tuple": concat_tuple,
    "_ad_concat_list": concat_list,
    "_ad_aslist": aslist,
    "_ad_op_getitem": operator.getitem,
}
HELPERS.update(FAST_HELPERS)
for _op in [*BINOPS.values(), *UNARYOPS.values()]:
    HELPERS[f"_ad_op_{_op}"] = getattr(operator, _op)
for _op in BINOPS.values():
    if _op != "matmul" or hasattr(operator, "imatmul"):
        HELPERS[f"_ad_iop_{_op}"] = _inplace_helper(_op)
