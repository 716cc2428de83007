"""Implicit parameters: ``Params`` and ``Grads``, after Zygote's.

``ad.gradient(loss, Params([W, b]))`` differentiates the zero-argument
``loss`` with respect to arrays it reaches without taking them as
arguments. ad gets them from the tangent of ``loss`` itself: differentiating
``call(loss) = loss()`` with respect to ``loss`` gives the cotangents of its
captured variables, field by field, recursively through nested closures,
bound methods, ``functools.partial``, containers and objects. Walking that
tangent alongside the values it describes finds each parameter by identity
(``is``), and the cotangents of every place it was reached are added.

Module-level globals are constants to ad, so a parameter read as a global
gets no cotangent; rather than report ``None`` for it, ``gradient`` raises
``ParamsError`` naming the global and how to fix it.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ad.errors import ParamsError
from rulescore import AbstractZero, Tangent, backing

__all__ = ["Grads", "Params", "grads_of"]


class Params:
    """An ordered set of numpy arrays, compared by identity, to differentiate with respect to.

    The loss must reach the arrays through variables it captures (a closure,
    an object it uses), not as module-level globals.

    >>> import numpy as np, ad
    >>> def step(x):
    ...     W = np.array([[1.0, 2.0], [3.0, 4.0]]); b = np.array([0.5, -0.5])
    ...     grads = ad.gradient(lambda: np.sum(W @ x + b), ad.Params([W, b]))
    ...     return grads[W], grads[b]
    >>> step(np.array([1.0, 1.0]))
    (array([[1., 1.],
           [1., 1.]]), array([1., 1.]))

    See also: Grads, gradient.
    """

    __slots__ = ("_ids", "_items")

    def __init__(self, xs: Iterable[np.ndarray] = ()) -> None:
        self._items: list[np.ndarray] = []
        self._ids: set[int] = set()
        for x in xs:
            self.add(x)

    def add(self, x: np.ndarray) -> None:
        """Add ``x`` (a numpy array) unless this very array is already in."""
        if not isinstance(x, np.ndarray):
            raise TypeError(
                f"ad.Params holds numpy arrays, found by identity; got {type(x).__name__}.\n"
                "To fix: keep parameters in numpy arrays (np.array(v) for a number), or pass "
                "them to gradient as explicit arguments."
            )
        if id(x) not in self._ids:
            self._ids.add(id(x))
            self._items.append(x)

    def __contains__(self, x: Any) -> bool:
        return id(x) in self._ids and any(p is x for p in self._items)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Params([{', '.join(_describe(p) for p in self._items)}])"


class Grads:
    """The gradients found for a ``Params``: ``grads[W]`` by identity of ``W``.

    An entry is an array like its parameter, or ``None`` when no gradient
    flows to it. Iterating yields the parameters; ``items()`` gives pairs.
    """

    __slots__ = ("_grads", "params")

    def __init__(self, params: Params, grads: dict[int, Any]) -> None:
        self.params = params
        self._grads = grads

    def __getitem__(self, x: Any) -> Any:
        if x not in self.params:
            raise KeyError(
                f"{_describe(x)} is not one of the parameters {self.params!r} "
                "(parameters are found by identity: pass the very array object)"
            )
        return self._grads.get(id(x))

    def get(self, x: Any, default: Any = None) -> Any:
        return self[x] if x in self.params else default

    def __contains__(self, x: Any) -> bool:
        return x in self.params

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def keys(self) -> list[np.ndarray]:
        return list(self.params)

    def values(self) -> list[Any]:
        return [self[p] for p in self.params]

    def items(self) -> list[tuple[np.ndarray, Any]]:
        return [(p, self[p]) for p in self.params]

    def __repr__(self) -> str:
        return f"Grads({len(self.params)} parameters)"


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"array(shape={x.shape}, dtype={x.dtype})"
    return type(x).__name__


# --- differentiating with respect to Params ------------------------------------


def grads_of(f: Callable, df: Any, ps: Params) -> Grads:
    """The ``Grads`` of ``ps`` from ``df``, the cotangent of the zero-argument ``f``
    (of its closure, bound method, partial...): what ``gradient(f, ps)`` returns."""
    out: dict[int, Any] = {}
    _collect(f, df, ps, out, set())
    missing = [p for p in ps if id(p) not in out]
    if missing:
        _check_globals(f, missing)
    return Grads(ps, out)


def _collect(p: Any, t: Any, ps: Params, out: dict, seen: set) -> None:
    """Add into ``out`` the cotangents ``t`` holds for parameters reachable from ``p``."""
    if t is None or isinstance(t, AbstractZero):
        return
    key = (id(p), id(t))
    if key in seen:
        return
    seen.add(key)
    if p in ps:
        out[id(p)] = t if id(p) not in out else out[id(p)] + t
        return
    if isinstance(p, types.MethodType):  # a bound method's tangent is its receiver's
        _collect(p.__self__, t, ps, out, seen)
    elif isinstance(p, types.FunctionType):
        cells = dict(zip(p.__code__.co_freevars, p.__closure__ or ()))
        for name, ft in _fields(t).items():
            if name in cells:
                try:
                    value = cells[name].cell_contents
                except ValueError:  # an empty cell
                    continue
                _collect(value, ft, ps, out, seen)
    elif isinstance(p, functools.partial):
        fields = _fields(t)
        _collect(p.func, fields.get("func"), ps, out, seen)
        _collect(p.args, fields.get("args"), ps, out, seen)
        _collect(p.keywords, fields.get("keywords"), ps, out, seen)
    elif isinstance(p, (list, tuple)) and isinstance(t, (list, tuple)):
        for pi, ti in zip(p, t):
            _collect(pi, ti, ps, out, seen)
    elif isinstance(p, dict) and isinstance(t, (dict, Tangent)):
        for k, tk in _fields(t).items():
            if k in p:
                _collect(p[k], tk, ps, out, seen)
    elif isinstance(t, Tangent):
        for name, ft in _fields(t).items():
            _collect(getattr(p, name, None), ft, ps, out, seen)


def _fields(t: Any) -> dict:
    if isinstance(t, Tangent):
        b = backing(t)
        return b if isinstance(b, dict) else dict(enumerate(b))
    return t if isinstance(t, dict) else {}


def _check_globals(f: Callable, missing: list[np.ndarray]) -> None:
    """Raise if a parameter without a gradient is reached through a module global.

    Walks what ``f`` can reach — closure cells, globals its code names,
    bound methods' receivers, partials, containers, object attributes —
    remembering the last global crossed on the way.
    """
    want = {id(p): p for p in missing}
    seen: set[int] = set()
    stack: list[tuple[Any, Any]] = [(f, None)]  # (value, (global name, function) or None)
    while stack:
        g, via = stack.pop()
        if id(g) in want and g is want[id(g)]:
            if via is not None:
                raise ParamsError(_global_message(via[0], via[1]))
            continue
        if id(g) in seen or len(seen) > 10_000:
            continue
        seen.add(id(g))
        if isinstance(g, types.FunctionType):
            for name in _code_names(g.__code__):
                if name in g.__globals__:
                    stack.append((g.__globals__[name], (name, g)))
            for cell in g.__closure__ or ():
                try:
                    stack.append((cell.cell_contents, via))
                except ValueError:  # an empty cell
                    pass
        elif isinstance(g, types.MethodType):
            stack += [(g.__func__, via), (g.__self__, via)]
        elif isinstance(g, functools.partial):
            stack += [(g.func, via), (g.args, via), (g.keywords, via)]
        elif isinstance(g, (list, tuple)):
            stack += [(v, via) for v in g]
        elif isinstance(g, dict):
            stack += [(v, via) for v in g.values()]
        elif _is_user_object(g):
            stack += [(v, via) for v in vars(g).values()]
            call = type(g).__dict__.get("__call__")
            if isinstance(call, types.FunctionType):
                stack.append((call, via))


def _is_user_object(g: Any) -> bool:
    """An instance of a user-defined class (not a module, class, or library value)."""
    if isinstance(g, (type, types.ModuleType)) or not hasattr(g, "__dict__"):
        return False
    module = type(g).__module__ or ""
    return module.split(".")[0] not in ("builtins", "numpy", "rulescore", "rules", "ad")


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _global_message(name: str, g: types.FunctionType) -> str:
    code = g.__code__
    return (
        f"ad.Params: a parameter is reached through the module-level global {name!r}, read in "
        f"{g.__qualname__} ({code.co_filename}:{code.co_firstlineno}); ad treats globals as "
        "constants, so its gradient would silently be missing.\n"
        "To fix: make the loss a closure over the parameters (define it inside a function "
        "where they are local variables, or keep them on an object the loss uses), or pass "
        "them as arguments: ad.gradient(lambda W, b: loss(W, b), W, b)."
    )
