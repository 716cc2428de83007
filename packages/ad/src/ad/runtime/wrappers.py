"""Callables that stand for a Python function they wrap, in both modes.

* A wrapper with no source of its own but a ``__wrapped__`` attribute:
  ``functools.lru_cache``/``functools.cache`` (C code), a ``staticmethod``
  object, a ``functools.wraps`` wrapper defined where its source cannot be
  read (``exec``, the interactive prompt). The wrapped function is
  differentiated instead (a chain of wrappers is followed to its end). A
  registered rule for the wrapper wins (dispatch looks for one first), and a
  wrapper with Python source is transformed as any function is: only a
  wrapper the transform cannot read gets here.

  The value returned is the wrapper's own, what Python returns: a cached
  function returns its cached value (a hit), or fills its cache (a miss). The
  cache cannot give a derivative, so the wrapped function also runs
  (transformed) for its pullback: a miss computes the function twice, once as
  plain Python. For a wrapper not known to pass its function's value through
  (anything but the caches and ``staticmethod``), the two values are compared,
  and a wrapper that changed the value is refused rather than differentiated
  as if it had not.

* ``np.vectorize(pyfunc)``: called on arrays, ``pyfunc`` is differentiated
  element by element (one transformed call, hence one pullback or one
  pushforward, per element of the broadcast arguments), as numpy calls it:
  ``excluded`` arguments are passed whole, keyword arguments not excluded are
  broadcast too, ``otypes`` (or the first element's output, as numpy probes
  it) gives the output's dtype, and an integer or boolean output carries no
  derivative. A ``signature`` (generalised ufunc) is refused.

``reverse`` and ``forward`` are the hooks ``reverse._fallback`` and
``forward._fallback`` call for a callable object they do not otherwise know;
``reverse_wrapper`` and ``forward_wrapper`` serve a Python function whose
source cannot be read (``call_function``).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ad.errors import NoRuleError
from ad.runtime import calls
from ad.runtime.accumulate import acc, field_ct
from ad.runtime.cotangents import entries
from ad.runtime.single_use import ONCE, handoff, new_token
from ad.runtime.tangents import split
from ad.runtime.tracebacks import call_site, function_name
from rulescore import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    frule,
    not_implemented,
    rrule,
    unthunk,
)

__all__ = [
    "check_same",
    "forward",
    "forward_wrapper",
    "is_vectorize",
    "is_vectorized",
    "nested_call",
    "reverse",
    "reverse_wrapper",
    "unwrapped",
    "vectorize_tangent",
    "vectorized_call",
    "wrapper_tangent",
]

_Z = ZeroTangent()
_NO = NoTangent()

#: Wrappers that return what their function returns (or returned, cached).
_TRANSPARENT: tuple[type, ...] = (staticmethod, type(functools.lru_cache(maxsize=1)(abs)))

#: Wrappers that are a library's public functions (numpy's ``__array_function__``
#: dispatchers, whose ``__wrapped__`` is numpy's implementation): one without a
#: rule is reported by its public name, as a missing rule, never followed into
#: the library's internals.
_LIBRARY: frozenset[type] = frozenset([type(np.sum)]) - {types.FunctionType}


def unwrapped(f: Any) -> Any:
    """The function a sourceless wrapper ``f`` stands for, or None when ``f`` is
    none (a plain Python ``__call__`` is transformed as it is, and so is a
    Python function: ``reverse_wrapper`` is asked only when its source is
    missing)."""
    tf = type(f)
    if tf is staticmethod:
        return f.__func__
    if tf is classmethod or tf is types.FunctionType or tf in _LIBRARY:
        return None  # an unbound classmethod is no callable; a def is transformed
    call = next((k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(call, types.FunctionType):
        return None
    try:
        inner = f.__wrapped__
    except Exception:  # any object may define __getattr__
        return None
    return inner if callable(inner) else None


def is_vectorize(f: Any) -> bool:
    return type(f) is np.vectorize or isinstance(f, np.vectorize)


def is_vectorized(f: Any) -> bool:
    """Whether ``f`` is an ``np.vectorize`` object with its function (not the
    decorator form before it, which is numpy's own)."""
    return is_vectorize(f) and f.pyfunc is not np._NoValue


# --- reverse mode ------------------------------------------------------------------


def reverse(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable] | None:
    """``(y, pullback)`` for a wrapper or ``np.vectorize`` object ``f``, or None
    when ``f`` is neither (the caller goes on as before)."""
    if is_vectorize(f):
        if f.pyfunc is np._NoValue:  # the decorator form before its function: numpy's own
            return None
        return _vectorize_reverse(f, args, kwargs)
    inner = unwrapped(f)
    if inner is None:
        return None
    return reverse_wrapper(f, args, kwargs, inner)


def reverse_wrapper(
    f: Any, args: tuple, kwargs: dict | None, inner: Any = None
) -> tuple[Any, Callable]:
    """Differentiate the function ``f`` wraps (``inner``, default
    ``f.__wrapped__``); the value is ``f``'s own. The pullback returns ``f``'s
    cotangent (the wrapped function's, as field ``__wrapped__``), the arguments',
    and with ``kwargs`` a dict of the keywords'."""
    if inner is None:
        inner = f.__wrapped__
    if kwargs is None:
        y_inner, pb = calls.rcall(inner, *args)
        y = f(*args)
    else:
        y_inner, pb = calls.rcall_kw(inner, args, kwargs)
        y = f(*args, **kwargs)
    check_same(f, inner, y, y_inner)

    def wrapper_pullback(ȳ: Any, _once: Any = new_token()) -> tuple:  # noqa: B008
        if ONCE.expect is not None:
            handoff(pb, _once)
        cts = pb(ȳ)
        return (wrapper_tangent(f, cts[0]), *cts[1:])

    return y, wrapper_pullback


def wrapper_tangent(f: Any, inner: Any) -> Any:
    """The wrapper's tangent from its wrapped function's: field ``__wrapped__``."""
    if isinstance(inner, AbstractZero):
        return _Z
    try:
        return Tangent[type(f)]._from_backing({"__wrapped__": inner})
    except (TypeError, ValueError):
        return not_implemented(
            f"the derivative with respect to what {_name(f)} captures cannot be expressed "
            "as a tangent of its wrapper"
        )


def check_same(f: Any, inner: Any, y: Any, y_inner: Any) -> None:
    """Refuse a wrapper that changed its function's value: its derivative is not
    the wrapped function's. The caches may return an older value: that is theirs."""
    if isinstance(f, _TRANSPARENT) or _same(y, y_inner):
        return
    site = call_site()
    raise NoRuleError(
        f"cannot differentiate {_name(f)}{f' (called at {site})' if site else ''}: a wrapper "
        f"without source of its own{_defined_at(f)}, whose __wrapped__ is {_name(inner)}"
        f"{_defined_at(inner)}; its value differs from the wrapped function's, so the wrapped "
        "function's derivative would be wrong.\nTo fix: register an rrule/frule for the "
        "wrapper with rulescore, or define the wrapper in a file so that its source can be "
        "differentiated."
    )


def _defined_at(f: Any) -> str:
    code = getattr(f, "__code__", None)
    if not isinstance(code, types.CodeType):
        return ""
    return f" (defined at {code.co_filename}:{code.co_firstlineno})"


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
            return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b, equal_nan=True))
        same = a == b
        if same is NotImplemented:
            return True  # incomparable: nothing to refuse on
        return bool(same) or (a != a and b != b)  # NaN is NaN
    except Exception:  # values that cannot be compared are not refused
        return True


def _name(f: Any) -> str:
    return function_name(f)


# --- forward mode --------------------------------------------------------------------


def forward(
    f: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None
) -> tuple[Any, Any] | None:
    """``(y, ẏ)`` for a wrapper or ``np.vectorize`` object ``f``, or None."""
    if is_vectorize(f):
        if f.pyfunc is np._NoValue:
            return None
        return _vectorize_forward(f, ts, args, kwargs, kw_ts)
    inner = unwrapped(f)
    if inner is None:
        return None
    return forward_wrapper(f, ts, args, kwargs, kw_ts, inner)


def forward_wrapper(
    f: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None, inner: Any = None
) -> tuple[Any, Any]:
    """Push forward the function ``f`` wraps; the value is ``f``'s own."""
    if inner is None:
        inner = f.__wrapped__
    inner_ts = (field_ct(ts[0], "__wrapped__"), *ts[1:])
    y_inner, ẏ = calls.dispatch(inner, inner_ts, args, kwargs, kw_ts)
    y = f(*args, **(kwargs or {}))
    check_same(f, inner, y, y_inner)
    return y, ẏ


# --- np.vectorize ----------------------------------------------------------------------


class _Plan:
    """How ``np.vectorize`` calls its function here: which arguments are broadcast
    (positions ``inds``, keywords ``names``), their broadcast shape, and each
    element's arguments."""

    def __init__(self, v: Any, args: tuple, kwargs: dict) -> None:
        if v.signature is not None:
            raise _vectorize_error(
                v,
                f"it has a signature ({v.signature!r}): a generalised ufunc, which ad does "
                "not follow element by element",
            )
        excluded = v.excluded
        self.v = v
        self.args = args
        self.kwargs = kwargs
        self.inds = [i for i in range(len(args)) if i not in excluded]
        self.names = [k for k in kwargs if k not in excluded]
        vargs = [args[i] for i in self.inds] + [kwargs[k] for k in self.names]
        self.vargs = vargs
        # numpy hands the function the entries of object arrays: Python floats.
        objs = [np.asanyarray(a, dtype=object) for a in vargs]
        self.shape = np.broadcast_shapes(*(a.shape for a in objs)) if objs else ()
        self.objs = [np.broadcast_to(a, self.shape) for a in objs]

    def call_args(self, elems: list) -> tuple[tuple, dict]:
        args = list(self.args)
        for j, i in enumerate(self.inds):
            args[i] = elems[j]
        kwargs = dict(self.kwargs)
        for j, k in enumerate(self.names, len(self.inds)):
            kwargs[k] = elems[j]
        return tuple(args), kwargs

    def element(self, idx: tuple) -> tuple[tuple, dict]:
        return self.call_args([a[idx] for a in self.objs])

    def otypes(self) -> list:
        """numpy's output types: ``otypes``, or those of the function's output on the
        first elements (as numpy scalars), which numpy computes by calling it once
        more (so does this)."""
        v = self.v
        if v.otypes is not None:
            return list(v.otypes)  # type codes (a string) or dtypes
        if any(np.asarray(a).size == 0 for a in self.vargs):
            v(*self.args, **self.kwargs)  # numpy's own error for size-0 inputs
        first = [np.asarray(a).flat[0] for a in self.vargs]
        args, kwargs = self.call_args(first)
        out = v.pyfunc(*args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        return [np.asarray(o).dtype.char for o in outs]


def vectorized_call(pyfunc: Any, shape: tuple, otypes: tuple, args: tuple) -> Any:
    """``np.vectorize(pyfunc, otypes=otypes)(*args)`` for positional arguments that
    broadcast to ``shape``, as a loop of Python that ad differentiates in every mode
    and to any order: nested differentiation (a derivative of a derivative through
    ``np.vectorize``) differentiates this in place of numpy's call. numpy hands
    ``pyfunc`` Python numbers (the entries of object arrays), and so does ``tolist``."""
    cols = [np.broadcast_to(a, shape).ravel().tolist() for a in args]
    ys = [_element(pyfunc, cols, j) for j in range(len(cols[0]))]
    if len(otypes) == 1:
        return np.array(ys, dtype=otypes[0]).reshape(shape)
    return tuple(
        np.array([y[k] for y in ys], dtype=otypes[k]).reshape(shape) for k in range(len(otypes))
    )


def _element(pyfunc: Any, cols: list, j: int) -> Any:
    """``pyfunc`` on the ``j``-th entries of ``cols`` (``vectorized_call``)."""
    n = len(cols)
    if n == 1:
        return pyfunc(cols[0][j])
    if n == 2:
        return pyfunc(cols[0][j], cols[1][j])
    if n == 3:
        return pyfunc(cols[0][j], cols[1][j], cols[2][j])
    return pyfunc(*[c[j] for c in cols])


def nested_call(v: Any, args: tuple, kwargs: dict | None) -> tuple:
    """``(pyfunc, shape, otypes)`` for ``vectorized_call``, which stands for the call
    ``v(*args, **kwargs)`` under nested differentiation; ``NoRuleError`` for what it
    does not follow (keyword or excluded arguments, a signature, object outputs)."""
    if kwargs:
        raise _vectorize_error(
            v,
            "a derivative of a derivative through np.vectorize follows positional "
            "arguments only, and this call passes keyword arguments",
        )
    plan = _Plan(v, args, {})
    if v.excluded or not plan.vargs:
        raise _vectorize_error(
            v,
            "a derivative of a derivative through np.vectorize follows calls whose "
            "arguments are all broadcast, and this call has excluded arguments or none",
        )
    otypes = tuple(plan.otypes())
    if any(np.dtype(t).kind == "O" for t in otypes):
        raise _vectorize_error(
            v, "a derivative of a derivative through np.vectorize needs numeric outputs"
        )
    if any(np.asarray(a).size == 0 for a in args):
        raise _vectorize_error(v, "an argument is empty")
    return v.pyfunc, plan.shape, otypes


def vectorize_tangent(v: Any, pyfunc_t: Any) -> Any:
    """``v``'s tangent (or cotangent) from its function's: field ``pyfunc``."""
    return _vectorize_ct(v, pyfunc_t)


def _vectorize_error(v: Any, why: str) -> NoRuleError:
    site = call_site()
    return NoRuleError(
        f"cannot differentiate np.vectorize({_name(v.pyfunc)}){f' (called at {site})' if site else ''}"
        f": {why}.\nTo fix: call the function in a loop or comprehension over the "
        "elements, or register an rrule/frule for it with rulescore."
    )


def _assemble(values: np.ndarray, otype: Any) -> Any:
    """numpy's conversion of the per-element outputs to the result array."""
    return np.asanyarray(values if values.shape else values[()], dtype=otype)


def _carries(otype: Any) -> bool:
    """Whether an output of this type code carries a derivative (floats, complex,
    objects); integers and booleans do not."""
    return np.dtype(otype).kind in "fcO"


def _vectorize_reverse(v: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    plan = _Plan(v, args, kwargs or {})
    if not plan.vargs:  # numpy calls the function itself: nothing to vectorize
        out = (
            calls.rcall(v.pyfunc, *args)
            if kwargs is None
            else calls.rcall_kw(v.pyfunc, args, kwargs)
        )
        return out[0], _with_own(out[1], v)
    otypes = plan.otypes()
    shape = plan.shape
    pbs = np.empty(shape, dtype=object)
    values = [np.empty(shape, dtype=object) for _ in otypes]
    for idx in np.ndindex(shape):
        e_args, e_kw = plan.element(idx)
        if kwargs:
            y_e, pbs[idx] = calls.rcall_kw(v.pyfunc, e_args, e_kw)
        else:
            y_e, pbs[idx] = calls.rcall(v.pyfunc, *e_args)
        outs = y_e if len(otypes) > 1 else (y_e,)
        for k, o in enumerate(outs):
            values[k][idx] = o
    ys = [_assemble(vals, t) for vals, t in zip(values, otypes)]
    y = ys[0] if len(otypes) == 1 else tuple(ys)
    carries = [_carries(t) for t in otypes]
    n_args = len(args)

    def vectorize_pullback(ȳ: Any) -> tuple:
        ȳs = (ȳ,) if len(otypes) == 1 else entries(ȳ, len(otypes), "np.vectorize's outputs")
        seeds = []
        for s, c in zip(ȳs, carries):
            s = unthunk(s)
            seeds.append(
                None
                if not c or isinstance(s, AbstractZero)
                else np.broadcast_to(np.asarray(s, dtype=object), shape)
            )
        df: Any = _Z
        per_arg: list[Any] = [_Z] * n_args
        per_kw: dict[str, Any] = {k: _Z for k in (kwargs or {})}
        grids = {i: np.empty(shape, dtype=object) for i in plan.inds}
        kw_grids = {k: np.empty(shape, dtype=object) for k in plan.names}
        for grid in (*grids.values(), *kw_grids.values()):
            grid.fill(0.0)
        if all(s is None for s in seeds):
            return _vectorize_cts(plan, v, _Z, per_arg, per_kw, kwargs, None, None)
        for idx in np.ndindex(shape):
            e = [_Z if s is None else s[idx] for s in seeds]
            cts = pbs[idx](e[0] if len(otypes) == 1 else Tangent[tuple](*e))
            df = acc(df, cts[0])
            for i in range(n_args):
                if i in grids:
                    grids[i][idx] = cts[1 + i]
                else:
                    per_arg[i] = acc(per_arg[i], cts[1 + i])
            if kwargs:
                kw = cts[-1]
                for k in kwargs:
                    if k in kw_grids:
                        kw_grids[k][idx] = kw.get(k, _Z)
                    else:
                        per_kw[k] = acc(per_kw[k], kw.get(k, _Z))
        return _vectorize_cts(plan, v, df, per_arg, per_kw, kwargs, grids, kw_grids)

    return y, vectorize_pullback


def _vectorize_cts(
    plan: _Plan,
    v: Any,
    df: Any,
    per_arg: list,
    per_kw: dict,
    kwargs: dict | None,
    grids: dict | None,
    kw_grids: dict | None,
) -> tuple:
    """The pullback's result: ``(∂v, ∂args..., [∂kwargs])``, each broadcast
    argument's per-element cotangents summed back to its shape."""
    if grids is not None:
        for i, grid in grids.items():
            per_arg[i] = _reduce(grid, plan.args[i])
    if kw_grids is not None:
        for k, grid in kw_grids.items():
            per_kw[k] = _reduce(grid, plan.kwargs[k])
    out = (_vectorize_ct(v, df), *per_arg)
    return (*out, per_kw) if kwargs is not None else out


def _reduce(grid: np.ndarray, x: Any) -> Any:
    """Per-element cotangents (an object array, zeros as tangent objects) as the
    cotangent of the argument ``x`` they were broadcast from."""
    from rules.extension import unbroadcast

    try:
        kind = np.asarray(x).dtype.kind
    except ValueError:  # ragged
        kind = "O"
    if kind not in "fciu":
        return _NO  # bools, strings, objects: no derivative
    flat = [_dense(c) for c in grid.flat]
    arr = np.array(flat).reshape(grid.shape) if flat else np.zeros(grid.shape)
    if arr.dtype.kind not in "fc":
        arr = arr.astype(np.float64)
    return unbroadcast(x, arr)


def _dense(c: Any) -> Any:
    c = unthunk(c)
    return 0.0 if isinstance(c, AbstractZero) else c


def _vectorize_ct(v: Any, pyfunc_ct: Any) -> Any:
    """``v``'s cotangent from its function's: field ``pyfunc`` (what a closure
    ``pyfunc`` captures flows through it)."""
    if isinstance(pyfunc_ct, AbstractZero):
        return _Z
    return Tangent[type(v)]._from_backing({"pyfunc": pyfunc_ct})


@rrule.register(np.vectorize)
def _(pyfunc: Any, *args: Any, **kwargs: Any) -> Any:
    """Building ``np.vectorize(pyfunc)`` where ``pyfunc`` captures a value that
    carries a derivative: the object's tangent is its function's."""

    v = np.vectorize(pyfunc, *args, **kwargs)
    n = len(args)

    def vectorize_constructor_pullback(ȳ: Any) -> tuple:
        return (_NO, field_ct(unthunk(ȳ), "pyfunc"), *([_NO] * n))

    return v, vectorize_constructor_pullback


@frule.register(np.vectorize)
def _(ṡ: Any, *rest: Any, **kwargs: Any) -> Any:
    m = len(rest) // 2
    ts, args = rest[:m], rest[m:]
    v = np.vectorize(*args, **kwargs)
    return v, _vectorize_ct(v, ts[0] if ts else _Z)


def _with_own(pb: Callable, v: Any) -> Callable:
    """A pullback of ``v.pyfunc`` as one of ``v``: its own cotangent is field ``pyfunc``."""

    def own_pullback(ȳ: Any) -> tuple:
        cts = pb(ȳ)
        return (_vectorize_ct(v, cts[0]), *cts[1:])

    return own_pullback


def _vectorize_forward(
    v: Any, ts: tuple, args: tuple, kwargs: dict | None, kw_ts: dict | None
) -> tuple[Any, Any]:
    plan = _Plan(v, args, kwargs or {})
    ṗ = field_ct(ts[0], "pyfunc")
    kw_ts = kw_ts or {}
    if not plan.vargs:
        return calls.dispatch(v.pyfunc, (ṗ, *ts[1:]), args, kwargs, kw_ts)
    otypes = plan.otypes()
    shape = plan.shape
    # Each broadcast argument's tangent as an object array of its elements' tangents.
    vts = [ts[1 + i] for i in plan.inds] + [kw_ts.get(k, _Z) for k in plan.names]
    grids = [_tangent_grid(ṫ, x, shape) for ṫ, x in zip(vts, plan.vargs)]
    values = [np.empty(shape, dtype=object) for _ in otypes]
    tangents = [np.empty(shape, dtype=object) for _ in otypes]
    n_in = len(plan.inds)
    for idx in np.ndindex(shape):
        e_args, e_kw = plan.element(idx)
        e_ts = list(ts[1:])
        for j, i in enumerate(plan.inds):
            e_ts[i] = _Z if grids[j] is None else grids[j][idx]
        e_kw_ts = dict(kw_ts)
        for j, k in enumerate(plan.names, n_in):
            e_kw_ts[k] = _Z if grids[j] is None else grids[j][idx]
        y_e, ẏ_e = calls.dispatch(v.pyfunc, (ṗ, *e_ts), e_args, e_kw or None, e_kw_ts)
        outs = y_e if len(otypes) > 1 else (y_e,)
        ẏs = (ẏ_e,) if len(otypes) == 1 else split(ẏ_e, len(otypes))
        for k, (o, ṫ) in enumerate(zip(outs, ẏs)):
            values[k][idx] = o
            tangents[k][idx] = ṫ
    ys = [_assemble(vals, t) for vals, t in zip(values, otypes)]
    ẏs = [_tangent_array(tan, y, t) for tan, y, t in zip(tangents, ys, otypes)]
    if len(otypes) == 1:
        return ys[0], ẏs[0]
    return tuple(ys), Tangent[tuple](*ẏs)


def _tangent_grid(ṫ: Any, x: Any, shape: tuple) -> np.ndarray | None:
    """The tangent ``ṫ`` of a broadcast argument ``x`` as an object array of the
    broadcast shape (None: zero everywhere)."""
    ṫ = unthunk(ṫ)
    if isinstance(ṫ, AbstractZero):
        return None
    if isinstance(ṫ, Tangent) or isinstance(ṫ, (list, tuple)):
        from rules.extension import dense

        ṫ = dense(ṫ, x)
    return np.broadcast_to(np.asarray(ṫ, dtype=object), shape)


def _tangent_array(tangents: np.ndarray, y: Any, otype: Any) -> Any:
    """The output's tangent from the per-element tangents."""
    kind = np.dtype(otype).kind
    if kind == "O":
        return tangents if tangents.shape else tangents[()]
    if kind not in "fc":
        return _NO
    if all(isinstance(unthunk(t), AbstractZero) for t in tangents.flat):
        return _Z
    flat = [_dense(t) for t in tangents.flat]
    return np.asarray(np.array(flat).reshape(tangents.shape), dtype=np.asarray(y).dtype)
