"""Library code the AD does not follow: run as plain Python, derivative decided by what it did.

A call in differentiated code whose callable has no rule and whose source is
not the user's is *library code*: a builtin or C function or class (``str.format``,
``"%.3f" % x``, ``np.array2string``, an ``rng.normal`` method), or a Python
function of the standard library (``logging``, ``warnings``, ``json``,
``typing.cast``; decided by module and file: ``library_code``). The AD never
transforms it. It runs as plain Python (``run``), and its derivative is known when:

* its result provably carries no derivative (``derivative_free``): a string,
  bytes, a bool, an int (piecewise constant), None, a numpy array or scalar of
  bools, ints, strings or dates, a type, or a tuple, list, dict or set of such;
  or every input (arguments and receiver) provably carries none (a formatted
  string, a seed, a random generator: its draws are constants). The derivative
  is zero (``library_code.derivative_free``);
* its result is one of its arguments, the very object (``typing.cast(float, x)``,
  ``copy.copy(x)`` of a float), or a tuple or list of such and of values of the
  first kind: the derivative passes that argument's cotangent (tangent) through;

and it changed none of its inputs in a way that could carry a derivative (a
list sorted in place, an attribute set to a float, an array written: see
``plain_checks``), and was given no Python function of the user's to call back
(plain Python would run it without derivatives). Otherwise the call is an
error (``NoRuleError``) naming the library function, the user's line that
called it, and the fix. Opaque objects (iterators, ``zip``/``map`` objects,
containers of floats, user objects) are never taken as derivative-free: they
could hold what carries the derivative.

This is what errors would otherwise be raised for, and what would otherwise be
transformed from the standard library's source (``transform.transformed``
and its forward and pure forms ask ``plain_functions.plain_entry`` on a cache
miss): nothing here runs on a fast path. Here: ``run``, the derivative along
its route in reverse mode (``reverse_call``), forward mode (``forward_call``)
and under nested differentiation (``reverse_over_forward``,
``reverse_over_fcall``, ``reverse_over_reverse``).

>>> import logging, ad
>>> log = logging.getLogger("example")
>>> def f(x):
...     log.debug("x=%s", x)
...     return x * float("{:.1f}".format(2.0))
>>> ad.gradient(f, 3.0)
(2.0,)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ad.runtime.library_code import _user_callable, derivative_free
from ad.runtime.plain_checks import (
    _container_fix,
    _describe,
    _error,
    _inputs,
    _receiver,
    _Snapshot,
    _what,
)
from ad.runtime.plain_routes import RECEIVER, route_cotangents, route_of, route_tangent
from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

__all__ = [
    "forward_call",
    "reverse_call",
    "reverse_over_fcall",
    "reverse_over_forward",
    "reverse_over_reverse",
    "run",
]

_Z = ZeroTangent()
_NO = NoTangent()


# --- running a call -----------------------------------------------------------------------

#: A route says where a result's derivative comes from: None (nowhere: zero), an
#: argument's key (an int position or a str keyword: the result is that object),
#: or ``(container, keys)`` for a tuple or list result, one key or None per entry.
Route = Any


def run(
    f: Any,
    args: tuple,
    kwargs: dict | None,
    name: str,
    forward: bool,
    as_init: int = 0,
    carried: bool = False,
) -> tuple[Any, Route]:
    """Call ``f(*args, **kwargs)`` as plain Python; return its value and the route of
    its derivative, or raise ``NoRuleError``. ``as_init``: ``f`` is an ``__init__``
    (or a setter) whose output is its ``as_init``-th positional argument.
    ``carried``: an int input carries a tangent (forward mode, ``ints_carry``), so
    the inputs are not all free of derivatives."""
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
    # A result that is an input, or is built of inputs' objects, carries their
    # derivative, whatever its type: an int argument passed through (copy.copy(2))
    # is a real number, as everywhere else (ProjectTo).
    route = None
    if not derivative_free(y) or _holds_int(y):
        route = route_of(y, args, kwargs, receiver)
    if route is not None:
        return y, route
    # The inputs as they were before the call: one it emptied (d.pop(k), the only
    # item) carried the derivative that its result (the item) may carry on.
    if derivative_free(y) or (snapshot.all_free_before(inputs) and not carried):
        return y, None
    raise _error(
        name,
        forward,
        f"its result ({_describe(y)}) may carry the derivative of its arguments, "
        "and plain Python does not compute it",
        _container_fix(f, receiver),
    )


def ints_carry(ts: tuple, args: tuple, kw_ts: dict | None, kwargs: dict | None) -> bool:
    """Whether an int argument has a non-zero tangent (``ts = (ḟ, ẋ1, ...)``): ints
    are real numbers, and one that carries a tangent makes a result not
    derivative-free only because its inputs look so."""
    pairs = list(zip(args, ts[1:]))
    if kwargs and kw_ts:
        pairs += [(v, kw_ts.get(k, _Z)) for k, v in kwargs.items()]
    return any(type(a) is int and not isinstance(unthunk(t), AbstractZero) for a, t in pairs)


def _holds_int(y: Any) -> bool:
    """An int, or a list or tuple holding one: it may be an input passed through."""
    t = type(y)
    if t is int:
        return True
    return (t is list or t is tuple) and any(type(e) is int for e in y)


# --- derivatives along a route ----------------------------------------------------------


def _route_cotangents(route: Route, ȳ: Any, n: int, kwnames: Any) -> tuple[list, dict]:
    """Per positional argument and per keyword, the cotangents ``route`` sends ``ȳ``
    to (a Python function's call: no receiver)."""
    _, cts, kw = route_cotangents(route, ȳ, n, kwnames)
    return cts, kw


def _route_tangent(route: Route, tangent_of: Callable[[Any], Any]) -> Any:
    """The tangent of a result along ``route``; ``tangent_of(key)`` is an input's."""
    return route_tangent(route, tangent_of)


def _call_tangent(ts: tuple, kw_ts: dict | None) -> Callable[[Any], Any]:
    """``tangent_of`` for a call with tangents ``ts = (ḟ, ẋ1, ...)``: a bound
    method's tangent is its receiver's."""

    def tangent_of(k: Any) -> Any:
        if type(k) is int:
            return ts[1 + k]
        if k is RECEIVER:
            return ts[0]
        return kw_ts.get(k, _Z) if kw_ts else _Z

    return tangent_of


def _plain_pullback(route: Route, n: int, kwargs: dict | None) -> Callable:
    """The pullback of a plain call: ``(NoTangent, *per-argument cotangents)``, then
    a dict of keyword cotangents when called with keywords."""

    def plain_pullback(ȳ: Any) -> tuple:
        f_ct, cts, kw = route_cotangents(route, ȳ, n, kwargs or ())
        if kwargs is None:
            return (f_ct, *cts)
        return (f_ct, *cts, kw)

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
    y, route = run(f, args, kwargs, name, True, 0, ints_carry(ts, args, kw_ts, kwargs))
    return y, route_tangent(route, _call_tangent(ts, kw_ts))


# --- second order -----------------------------------------------------------------------


def reverse_over_forward(
    f: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict, name: str, as_init: int = 0
) -> tuple[Any, Callable]:
    """Reverse mode over a forward-mode call of library code: ``((y, ẏ), pullback)``
    with the pullback of ``ad.higher.reverse_over_generated._pushforward_call``:
    ``(∂f, ∂ts, ∂args, ∂kwargs, ∂kw_ts)``. Along a route, ``y`` and ``ẏ`` are
    linear in the routed argument and its tangent; elsewhere constant."""
    carried = ints_carry(ts, args, kw_ts, kwargs)
    y, route = run(f, args, kwargs or None, name, True, as_init, carried)

    ẏ = route_tangent(route, _call_tangent(ts, kw_ts))
    n = len(args)

    def plain_pushforward_pullback(ct: Any) -> tuple:
        from ad.runtime.cotangents import entries

        ȳ, ẏ̄ = entries(ct, 2, "the (value, tangent) pair of a forward-mode call")
        f_ct, a_ct, kw_ct = route_cotangents(route, ȳ, n, kwargs)
        ḟ_ct, t_ct, kw_t_ct = route_cotangents(route, ẏ̄, n, kwargs)
        return f_ct, (ḟ_ct, *t_ct), tuple(a_ct), kw_ct, kw_t_ct

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
        f_ct, cts, kw = route_cotangents(route, ȳ, n, kwargs or ())
        return f_ct, tuple(cts), kw

    return (y, pullback), plain_call_pullback
