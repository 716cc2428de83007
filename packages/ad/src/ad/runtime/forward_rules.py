"""``frule``s for the helpers generated code calls, and for iteration builtins.

The counterparts of the ``rrule``s in ``helpers``, registered under ad's own
``ADConfig``: containers (``_ad_mk_tuple``, ``_ad_concat_list``, unpacking,
``list``/``tuple``/``reversed``, ``dict.items``...), attribute reads and
writes, item writes, ``append`` and the in-place operators. A container's
tangent is a ``Tangent[tuple]`` / ``Tangent[list]`` / ``Tangent[dict]`` (as in
``rules``), or a zero.
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
import sys
from collections.abc import Callable
from typing import Any

from ad.runtime import attribute_routes as _attribute_routes
from ad.runtime import forward as _forward
from ad.runtime import helpers as _helpers
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import rules_item_writes as _item_writes
from ad.runtime import rules_objects as _rules_objects
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import instance_fields, np_module
from ad.runtime.dunders import defines_inplace, overriding
from ad.runtime.forward import (
    call_with,
    entries,
    fcall,
    is_zero,
    mapping_entry,
    split,
    tan_list,
    tan_tuple,
)
from ad.runtime.reverse import call_site
from ad.runtime.rules_item_writes import as_inplace_result, same_array_kind
from ad.runtime.state import (
    current,
    follow,
    followed,
    item_key,
    merged_tangent,
    nested,
    read_tangent,
    stateful,
    write_tangent,
)
from ad.runtime.user_iterables import through_fiter, user_iterable
from rules.extension import dict_getitem_frule, sequence_getitem_frule
from rulescore import DuckArray, NoTangent, Tangent, ZeroTangent, frule, unthunk

__all__: list[str] = []

_Z = ZeroTangent()
_NO = NoTangent()


def _halves(args: tuple) -> tuple[tuple, tuple]:
    """A variadic frule's arguments: (tangents, primals)."""
    n = len(args) // 2
    return args[:n], args[n:]


# --- containers -------------------------------------------------------------


@frule.register(_helpers.mk_tuple, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, xs = _halves(args)
    return xs, tan_tuple(*ts)


@frule.register(_helpers.mk_list, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, xs = _halves(args)
    return list(xs), tan_list(*ts)


@frule.register(_helpers.mk_dict, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, xs = _halves(args)
    keys = xs[0]
    return dict(zip(keys, xs[1:])), _forward.tan_dict(keys, ts[1:])


def _concat_frule(kind: type) -> Callable:
    def concat_frule(config: Any, ḟ: Any, *args: Any) -> Any:
        ts, parts = _halves(args)
        items: list = []
        item_ts: list = []
        for p, ṗ in zip(parts, ts):
            p = list(p)
            items.extend(p)
            item_ts.extend(entries(ṗ, len(p), p))
        return kind(items), (tan_tuple if kind is tuple else tan_list)(*item_ts)

    return concat_frule


frule.register(_helpers.concat_tuple, config=ADConfig)(_concat_frule(tuple))
frule.register(_helpers.concat_list, config=ADConfig)(_concat_frule(list))


@frule.register(_helpers.unpack, config=ADConfig)
def _(config: Any, ḟ: Any, ṫ: Any, ṅ: Any, t: Any, n: int) -> Any:
    if user_iterable(t):  # its __iter__ pushed forward
        t, ṫ = through_fiter(t, ṫ)
    return _helpers.unpack(t, n), tan_tuple(*split(ṫ, n))


@frule.register(_helpers.unpack_star, config=ADConfig)
def _(config: Any, ḟ: Any, ṫ: Any, ḃ: Any, ȧ: Any, t: Any, before: int, after: int) -> Any:
    if user_iterable(t):  # its __iter__ pushed forward
        t, ṫ = through_fiter(t, ṫ)
    items = list(t)
    y = _helpers.unpack_star(t, before, after)
    es = entries(ṫ, len(items), t)
    end = len(items) - after
    mid = tan_list(*es[before:end]) if end > before else _Z
    return y, tan_tuple(*es[:before], mid, *es[end:])


def _apply_frule(config: Any, ḟ: Any, ḟn: Any, ȧ: Any, k̇: Any, f: Any, args: tuple, kwargs: dict):
    """``f(*args, **kwargs)`` (calls with ``*``/``**``): the entries' tangents, then dispatch."""
    args = tuple(args)
    arg_ts = entries(ȧ, len(args), args)
    kw_ts = {k: mapping_entry(k̇, k) for k in kwargs}
    return call_with(f, (ḟn, *arg_ts), args, dict(kwargs), kw_ts)


def _merge_kw_frule(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, dicts = _halves(args)
    y = _helpers.merge_kw(*dicts)
    b = {k: v̇ for d, ḋ in zip(dicts, ts) for k in d if not is_zero(v̇ := mapping_entry(ḋ, k))}
    return y, Tangent[dict]._from_backing(b) if b else _Z


def _merge_dicts_frule(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, parts = _halves(args)
    y = _helpers.merge_dicts(*parts)
    b: dict = {}
    for p, ṗ in zip(parts, ts):  # a later part's key replaces the earlier one's tangent too
        for k in p.keys():
            b[k] = mapping_entry(ṗ, k)
    b = {k: v̇ for k, v̇ in b.items() if not is_zero(v̇)}
    return y, Tangent[dict]._from_backing(b) if b else _Z


def _dict_frule(config: Any, ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    """``dict(source, **kwargs)``: each value's tangent from where the value came from,
    a keyword's from the dict of keyword tangents that a call with keywords passes
    before ``ḟ`` (see ``keyword_tangents``; ``dict``'s own tangent is never a dict).
    ``args`` is ``(ṡource, source)`` or empty."""
    kw_ts: dict = {}
    if type(ḟ) is dict:
        kw_ts, ḟ, args = ḟ, args[0], args[1:]
    ts, (source,) = _halves(args) if args else ((_Z,), ({},))
    mapping, items = _rules_containers.dict_items(source)
    b: dict = {}
    if mapping:
        for k in items:
            b[k] = mapping_entry(ts[0], k)
        y = {k: source[k] for k in items}
    else:
        ṫs = [_Z] * len(items) if is_zero(unthunk(ts[0])) else list(unthunk(ts[0]))
        for (k, _), ṫ in zip(items, ṫs):
            b[k] = _Z if is_zero(unthunk(ṫ)) else unthunk(ṫ)[1]
        y = dict(items)
    for k in kwargs:  # item by item, not y.update: higher orders differentiate this body
        y[k] = kwargs[k]
        b[k] = kw_ts.get(k, _Z)
    b = {k: v̇ for k, v̇ in b.items() if not is_zero(v̇)}
    return y, Tangent[dict]._from_backing(b) if b else _Z


_dict_frule.keyword_tangents = True  # type: ignore[attr-defined]
frule.register(dict, config=ADConfig)(_dict_frule)


# Calls with ``*``/``**`` arrive as ``_ad_apply`` (when the ANF pass emits it).
if hasattr(_helpers, "apply"):
    frule.register(_helpers.apply, config=ADConfig)(_apply_frule)
if hasattr(_helpers, "merge_kw"):
    frule.register(_helpers.merge_kw, config=ADConfig)(_merge_kw_frule)
frule.register(_helpers.merge_dicts, config=ADConfig)(_merge_dicts_frule)


def _iterable_frule(kind: Callable) -> Callable:
    """``list(it)``, ``tuple(it)``, ``_ad_aslist(it)``: the entries' tangents, in order."""

    def iterable_frule(config: Any, ḟ: Any, *args: Any) -> Any:
        ts, xs = _halves(args)
        if not xs:
            return kind(), _Z
        (it,), (ṫ,) = xs, ts
        if user_iterable(it):  # iter(it) pushed forward: its items
            it, ṫ = through_fiter(it, ṫ)
        y = kind(it)
        es = entries(ṫ, len(y), it)
        return y, (tan_tuple if kind is tuple else tan_list)(*es)

    return iterable_frule


for _f, _kind in ((list, list), (tuple, tuple), (_helpers.aslist, list)):
    frule.register(_f, config=ADConfig)(_iterable_frule(_kind))


@frule.register(reversed, config=ADConfig)
def _(config: Any, ḟ: Any, ẋ: Any, xs: Any) -> Any:
    # Materialised, as the reverse-mode rule does, so the loop can index it.
    src = list(xs)
    return src[::-1], tan_list(*entries(ẋ, len(src), xs)[::-1])


@frule.register(dict.items, config=ADConfig)
def _(config: Any, ḟ: Any, ḋ: Any, d: dict) -> Any:
    y = list(d.items())
    if is_zero(unthunk(ḋ)):
        return y, _Z
    return y, tan_list(*(tan_tuple(_NO, mapping_entry(ḋ, k)) for k in d))


@frule.register(dict.values, config=ADConfig)
def _(config: Any, ḟ: Any, ḋ: Any, d: dict) -> Any:
    return list(d.values()), tan_list(*(mapping_entry(ḋ, k) for k in d))


@frule.register(dict.keys, config=ADConfig)
def _(config: Any, ḟ: Any, ḋ: Any, d: dict) -> Any:
    return list(d.keys()), _NO


@frule.register(dict.get, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, xs = _halves(args)
    d, key = xs[0], xs[1]
    if key in d:
        return d[key], mapping_entry(ts[0], key)
    return (xs[2], ts[2]) if len(xs) > 2 else (None, _NO)


# --- attributes ---------------------------------------------------------------


def _read_through(route: tuple, ȯ: Any) -> Any:
    """A read that runs user code ``fn(*args)`` (``attribute_routes.read_route``)."""
    fn, args, i = route
    ts = [_Z] * len(args)
    ts[i] = ȯ
    return fcall(fn, (_Z, *ts), *args)


def _write_through(route: tuple, ȯ: Any, v̇: Any) -> Any:
    """A write that runs user code ``fn(*args)``, updating ``args[i]`` in place."""
    fn, args, i = route
    ts = [_Z] * len(args)
    ts[i] = ȯ
    ts[-1] = v̇
    return _forward.call_function(fn, (_Z, *ts), args, None, None, as_init=i + 1)


@frule.register(_helpers.getattr_, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ṅ: Any, obj: Any, name: str) -> Any:
    return _getattr_frule(config, ȯ, obj, name, False)


@frule.register(_rules_objects.getattr_object, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ṅ: Any, obj: Any, name: str) -> Any:
    return _getattr_frule(config, ȯ, obj, name, True)


def _getattr_frule(config: Any, ȯ: Any, obj: Any, name: str, bypass: bool) -> Any:
    route = _attribute_routes.read_route(obj, name, bypass)
    if route is not None:
        return _read_through(route, ȯ)
    value = object.__getattribute__(obj, name) if bypass else getattr(obj, name)
    written = read_tangent(obj, name)
    if written is not None:  # written in this pass, through any name (ad.runtime.state)
        return value, _with_items(value, written)
    if type(obj) is super:
        bound = getattr(value, "__self__", None) is obj.__self__ and callable(value)
        return value, ȯ if bound else _Z  # a method, or a class attribute (a constant)
    if getattr(value, "__self__", None) is obj and callable(value):
        return value, ȯ  # a bound method: its tangent is its receiver's
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, (DuckArray, np.generic)):
        out = frule(config, (_Z, ȯ, _NO), getattr, obj, name)
        if out is not None:
            return out
        if isinstance(obj, DuckArray):
            raise TypeError(f"no frule for reading attribute {name!r} of an array")
    ȯ = unthunk(ȯ)
    if isinstance(obj, numbers.Number) and name in ("real", "imag"):
        if is_zero(ȯ):
            return value, _Z
        return value, getattr(ȯ, name) if isinstance(ȯ, numbers.Number) else _Z
    if is_zero(ȯ):
        v̇: Any = _Z
    elif isinstance(ȯ, Tangent):
        try:
            v̇ = getattr(ȯ, name)
        except AttributeError:
            if name in instance_fields(obj):
                raise
            v̇ = _Z  # a class attribute of a class with slots: no field of its Tangent
    else:
        v̇ = getattr(ȯ, name, _Z)
    return value, _with_items(value, v̇)


def _written(obj: Any, ȯ: Any, name: str, v̇: Any) -> Any:
    """``obj``'s tangent after its field ``name`` is set; a user object's field
    tangent is also kept by identity, for reads through other names (ad.runtime.state)."""
    p = current(forward=True) if stateful(obj) else None
    if p is not None:
        write_tangent(p, obj, name, v̇)
    return _set_field(type(obj), ȯ, name, v̇)


def _set_field(kind: type, ȯ: Any, name: str, v̇: Any) -> Any:
    """The tangent of an object of type ``kind`` after its field ``name`` is set."""
    ȯ = unthunk(ȯ)
    b = dict(ȯ._backing) if isinstance(ȯ, Tangent) else {}
    if is_zero(v̇):
        b.pop(name, None)
    else:
        b[name] = v̇
    return Tangent[kind]._from_backing(b) if b else _Z


@frule.register(_helpers.setattr_, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ṅ: Any, v̇: Any, obj: Any, name: str, value: Any) -> Any:
    if dataclasses.is_dataclass(obj) and type(obj).__dataclass_params__.frozen:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
    route = _attribute_routes.write_route(obj, name, value)
    if route is not None:
        return _write_through(route, ȯ, v̇)
    setattr(obj, name, value)
    return obj, _written(obj, ȯ, name, v̇)


@frule.register(_rules_objects.setattr_object, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ṅ: Any, v̇: Any, obj: Any, name: str, value: Any) -> Any:
    route = _attribute_routes.write_route(obj, name, value, True)
    if route is not None:
        return _write_through(route, ȯ, v̇)
    object.__setattr__(obj, name, value)
    return obj, _written(obj, ȯ, name, v̇)


@frule.register(_rules_objects.setdict, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ṅ: Any, v̇: Any, obj: Any, name: str, value: Any) -> Any:
    obj.__dict__[name] = value
    return obj, _written(obj, ȯ, name, v̇)


@frule.register(super, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:
    ts, xs = _halves(args)
    return super(*xs), ts[-1] if ts else _Z  # a super object's tangent is its instance's


def _super_init_frule(config: Any, ḟ: Any, *args: Any, **kwargs: Any) -> Any:
    kw_ts: Any = None  # the keywords' tangents, a dict before ḟ (``keyword_tangents``)
    if type(ḟ) is dict:
        kw_ts, ḟ, args = ḟ, args[0], args[1:]
    ts, xs = _halves(args)
    sup, rest = xs[0], xs[1:]
    init = _rules_objects._next_init(sup)
    if init is None:
        sup.__init__(*rest, **kwargs)
        return sup.__self__, ts[0]
    return _forward.call_function(
        init, (_Z, *ts), (sup.__self__, *rest), kwargs or None, kw_ts, as_init=True
    )


_super_init_frule.keyword_tangents = True  # type: ignore[attr-defined]
frule.register(_rules_objects.super_init, config=ADConfig)(_super_init_frule)


# --- item writes and in-place updates -------------------------------------------


@frule.register(_helpers.setitem, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, k̇: Any, v̇: Any, obj: Any, key: Any, value: Any) -> Any:
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        # As in reverse mode: a new array, equal to obj but at key.
        y, _ = _item_writes.array_setitem(obj, key, value)
        if is_zero(ȯ) and is_zero(v̇):
            return y, _Z
        ẏ = np.zeros(y.shape, np.result_type(y.dtype, *_dtypes(ȯ, v̇)))
        if not is_zero(ȯ):
            ẏ[...] = unthunk(ȯ)
        ẏ[key] = 0 if is_zero(v̇) else unthunk(v̇)
        return y, ẏ
    if overriding(obj, "__setitem__") is not None:  # a list or dict subclass's own
        ȯ = merged_tangent(follow(obj), ȯ)  # followed by identity, as a method's receiver
        fcall(obj.__setitem__, (ȯ, _Z, v̇), key, value)
        return obj, ȯ
    ṫ = set_entry(obj, key, ȯ, v̇)
    _written_item(obj, key, v̇)
    obj[key] = value
    return obj, ṫ


def _written_item(obj: Any, key: Any, v̇: Any) -> None:
    """Keep ``obj[key]``'s new tangent by identity where the pass follows ``obj``."""
    p = current(forward=True)
    if p is not None and p.written.get(id(obj)) is obj:
        write_tangent(p, obj, item_key(obj, key), v̇)


def _dtypes(*ts: Any) -> list:
    """The dtypes of the tangents that are not zero (a number's is its type)."""
    return [getattr(t, "dtype", type(t)) for t in map(unthunk, ts) if not is_zero(t)]


def set_entry(obj: Any, key: Any, ȯ: Any, v̇: Any) -> Any:
    """The tangent of the list or dict ``obj`` (tangent ``ȯ``) once ``obj[key]``
    is set to a value of tangent ``v̇``."""
    if isinstance(obj, list):
        if not isinstance(key, int):
            raise TypeError("slice assignment into a list is not differentiable; build a new list")
        es = entries(ȯ, len(obj), obj)
        es[key] = v̇
        return tan_list(*es)
    if isinstance(obj, dict):
        ȯ = unthunk(ȯ)
        b = dict(ȯ._backing if isinstance(ȯ, Tangent) else {} if is_zero(ȯ) else ȯ)
        if is_zero(v̇):
            b.pop(key, None)
        else:
            b[key] = v̇
        return Tangent[dict]._from_backing(b) if b else _Z
    raise TypeError(
        f"cannot differentiate item assignment into a {type(obj).__name__} "
        f"(at {call_site()}); only lists and dicts are supported"
    )


@frule.register(_helpers.append, config=ADConfig)
def _(config: Any, ḟ: Any, l̇: Any, v̇: Any, lst: list, value: Any) -> Any:
    if overriding(lst, "append") is not None:  # a list subclass's own
        l̇ = merged_tangent(follow(lst), l̇)  # followed by identity, as a method's receiver
        fcall(lst.append, (l̇, v̇), value)
        return lst, l̇
    es = entries(l̇, len(lst), lst)
    _written_item(lst, len(lst), v̇)
    # appended by the helper, not by the method: pushed forward again (forward over
    # forward over forward mode, as in a list comprehension at third order) this body
    # runs as source, where the helper's own rules append once and carry the tangents
    lst = _item_writes.append(lst, value)
    return lst, tan_list(*es, v̇)


@frule.register(_helpers.append, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, v̇: Any, obj: object, value: Any) -> Any:
    # anything but a list (a user class's method, a deque): the method itself,
    # pushed forward as any call (a user object's fields follow by identity)
    ȯ = merged_tangent(follow(obj), ȯ)  # followed by identity, as a method's receiver
    fcall(obj.append, (ȯ, v̇), value)
    return obj, ȯ


@frule.register(follow, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, obj: Any) -> Any:
    return follow(obj), merged_tangent(obj, ȯ)


@frule.register(_rules_objects.follow_after, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ḃ: Any, ṡ: Any, obj: Any, before: Any, site: str) -> Any:
    return _rules_objects.follow_after(obj, before, site), merged_tangent(obj, ȯ)


@frule.register(_rules_objects.follow_written, config=ADConfig)
def _(config: Any, ḟ: Any, ȯ: Any, ṡ: Any, obj: Any, site: str) -> Any:
    if current(forward=True) is None or nested():  # see nested_write_refused
        raise _rules_objects.nested_write_refused(site)
    return _rules_objects.follow_written(obj, site), merged_tangent(obj, ȯ)


def _with_items(value: Any, v̇: Any) -> Any:
    """A value read out of an object or container, with the tangents written into
    its own items by identity (``self.items[i] = v``) when the pass follows it;
    otherwise ``v̇`` as it is (no pass over its entries on every read)."""
    return merged_tangent(value, v̇) if followed(value, forward=True) else v̇


def _followed_item(ẋ: Any, x: Any, key: Any) -> Any:
    """``x[key]`` of a list or dict, with the tangent a write kept by identity."""
    if type(key) is slice and isinstance(x, list):
        es = entries(ẋ, len(x), x)
        found = [read_tangent(x, i) for i in range(len(x))]
        y = x[key]
        ts = [e if f is None else f for e, f in zip(es, found)][key]
        return y, tan_list(*ts)
    written = read_tangent(x, item_key(x, key))
    if written is not None:
        return x[key], _with_items(x[key], written)
    if isinstance(x, dict):
        y, ẏ = dict_getitem_frule(_Z, ẋ, _Z, x, key)
    else:
        y, ẏ = sequence_getitem_frule(_Z, ẋ, _Z, x, key)
    return y, _with_items(y, ẏ)


@frule.register(operator.getitem, config=ADConfig)
def _(config: Any, ḟ: Any, ẋ: Any, k̇: Any, x: list, key: numbers.Integral | slice) -> Any:
    if (own := overriding(x, "__getitem__")) is not None:  # a list subclass's own
        return fcall(own, (_Z, ẋ, k̇), x, key)
    return _followed_item(ẋ, x, key)


@frule.register(operator.getitem, config=ADConfig)
def _(config: Any, ḟ: Any, ẋ: Any, k̇: Any, x: dict, key) -> Any:  # any key, as rules'
    if (own := overriding(x, "__getitem__")) is not None:  # a dict subclass's own
        return fcall(own, (_Z, ẋ, k̇), x, key)
    return _followed_item(ẋ, x, key)


def _iop_frule(op: str, inplace: Callable) -> Callable:
    outofplace = getattr(operator, op)

    def iop_frule(config: Any, ḟ: Any, ẋ: Any, ẏ: Any, x: Any, y: Any) -> Any:
        if type(x) is list and op == "add":
            es = entries(ẋ, len(x), x)
            x += y
            es += entries(ẏ, len(x) - len(es), y)
            return x, tan_list(*es)
        z, ż = fcall(inplace if defines_inplace(inplace, x) else outofplace, (_Z, ẋ, ẏ), x, y)
        np = np_module()
        if np is not None and type(x) is np.ndarray and not same_array_kind(z, x):
            z = as_inplace_result(z, x, y, inplace)
            if not is_zero(ż):
                ż = np.asarray(unthunk(ż)).astype(z.dtype, copy=False)
        return z, ż

    iop_frule.__name__ = iop_frule.__qualname__ = f"iop_{op}_frule"
    return iop_frule


for _name, _fn in _helpers.HELPERS.items():
    if _name.startswith("_ad_iop_"):
        frule.register(_fn, config=ADConfig)(_iop_frule(_name[len("_ad_iop_") :], _fn.inplace))
        _forward.NO_SHORTCUT.add(_fn)
_forward.NO_SHORTCUT.add(_helpers.setitem)
# A field written in this pass has its tangent by identity, whatever the object's
# tangent along the variable: reads and writes always go through their frules.
_forward.NO_SHORTCUT.update(
    [
        _helpers.getattr_,
        _helpers.setattr_,
        _rules_objects.getattr_object,
        _rules_objects.setattr_object,
        _rules_objects.setdict,
    ]
)
