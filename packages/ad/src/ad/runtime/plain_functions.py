"""Python functions of the standard library: entries of the transform's caches.

A Python function that is library code (``library_code.is_library_function``:
``logging``, ``json``, ``typing.cast``...) is not transformed: on a cache miss
``transform.transformed`` (reverse mode), ``pure_transformed`` and
``forward_transformed`` ask ``plain_entry`` for a ``PlainEntry``, whose
generated function is a runner that calls it as plain Python
(``plain_calls.run``) with the generated function's calling convention: the
reverse runner's pullback returns one cotangent per parameter (``*args`` a
tuple, ``**kwargs`` a dict), the forward runner reads the parameters' tangents.

>>> import typing
>>> primal = plain_entry(typing.cast, "reverse").instantiate(typing.cast)
>>> y, pullback = primal(float, 2.5)
>>> y, pullback(1.0)
(2.5, (NoTangent(), ZeroTangent(), 1.0))
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ad.runtime.library_code import is_library_function
from ad.runtime.plain_calls import _route_cotangents, _route_tangent, run
from ad.runtime.tangents import mapping_entry
from ad.runtime.tracebacks import function_name
from rulescore import AbstractZero, NoTangent, ZeroTangent

__all__ = ["PlainEntry", "plain_entry"]

_Z = ZeroTangent()
_NO = NoTangent()


class PlainEntry:
    """What ``transform.transformed`` (``mode="reverse"``), ``pure_transformed``
    (``"pure"``) and ``forward_transformed`` (``"forward"``) cache for library
    code: its generated function is a runner that calls it as plain Python
    (``run``) with the generated function's calling convention."""

    elides = False
    source = ""
    guards = ()  # no helper is inlined into library code
    starred = ()  # nor any argument unpacked

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
