"""Reverse mode over reverse mode: the generated adjoint and the rules' pullbacks,
differentiated again.

``gradient`` runs two generated functions: ``_ad_fwd`` (the primal, which
calls each rule and keeps its pullback) and ``_ad_back`` (the adjoint, which
calls those pullbacks). Both are ordinary Python, and so are the rules. So a
second reverse pass can differentiate all of it, as Zygote does over itself:

- ``transform.pure_transformed`` generates a *pure* form of a function's
  primal and adjoint (every call through ``rcall``, no fast paths, no tape
  freeing; see ``reverse.generate``) and keeps their trees, so the reverse
  transform can read them as source;
- ``rcall`` gets an ``rrule`` that differentiates what the dispatch runs: the
  pure form of a Python function, or the body of the ``rrule`` that handles
  the call. The pullback that body returns is a closure over the primal
  values; differentiating the adjoint's call of it differentiates its source,
  and the cotangent of its captured values flows back through the closure
  into the rule body that made it;
- the adjoint's own plumbing (``acc``, the structured cotangent builders),
  thunks (evaluated where they are made: a thunk is its value) and projectors
  get linear ``rrule``s (``reverse_over_adjoint_plumbing``).

``gradient_pure(f, x)`` is ``∇f(x)`` computed this way; ``hessian_reverse``
differentiates it in reverse mode, one pullback per row.
"""

from __future__ import annotations

import functools
import operator
import types
from collections.abc import Callable
from typing import Any

from ad.higher import nested_partials as _nested_partials
from ad.higher import reverse_over_rules as _over_rules
from ad.higher.cotangent_parts import _closure_ct, _is_zero, _tangents_ct, kw_entry
from ad.higher.unsupported import _unsupported
from ad.runtime import accumulate as _accumulate
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import rules_item_writes as _item_writes
from ad.runtime import rules_objects as _rules_objects
from ad.runtime import wrappers as _wrappers
from ad.runtime.attribute_routes import read_route
from ad.runtime.config import ADConfig
from ad.runtime.cotangents import entries, zero_like
from ad.runtime.keywords import keywords_as_positions
from ad.runtime.library_code import library_callable
from ad.runtime.plain_functions import PlainEntry
from ad.runtime.reverse import CONFIG, rcall, rcall_kw
from ad.runtime.reverse_fallback import _hashable
from ad.runtime.reverse_functions import call_function
from ad.runtime.tracebacks import function_name
from rulescore import (
    AbstractZero,
    NoTangent,
    Tangent,
    ZeroTangent,
    non_differentiable,
    rrule,
    unthunk,
)

__all__ = ["gradient_pure", "receiver_first", "with_keyword_slot"]

_Z = ZeroTangent()
_NO = NoTangent()
_FunctionType = types.FunctionType
_RRULES = rrule.table._rules
_lookup = rrule.table.lookup


# --- the function differentiated twice ------------------------------------------------


def unit_seed(y: Any) -> Any:
    """The cotangent ``1`` for a real scalar output ``y`` (its type kept)."""
    if isinstance(y, float):
        return 1.0
    return type(y)(1.0) if hasattr(y, "dtype") and getattr(y, "ndim", 0) == 0 else 1.0


non_differentiable(unit_seed)


def gradient_pure(f: Callable, x: Any) -> Any:
    """``∇f(x)`` through ``f``'s pure transform: differentiated again, this is
    reverse mode over the generated adjoint and the rules' pullbacks."""
    y, back = rcall(f, x)
    g = unthunk(back(unit_seed(y))[1])
    if isinstance(g, AbstractZero):
        return zero_like(x)
    return g


non_differentiable(zero_like)


# --- rcall: differentiate what the dispatch runs ------------------------------------------


def _dispatch(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """``((y, pullback), outer_pullback)`` for the call ``rcall`` makes, with
    ``outer_pullback(ct) -> (∂f, (∂args...), {∂kwargs})``."""
    n = len(args)
    tf = type(f)
    if tf is _FunctionType and f not in _RRULES:
        return _through_pure(f, args, kwargs)
    if (f is _rules_objects.getattr_ or f is _rules_objects.getattr_object) and not kwargs:
        route = read_route(*args, f is _rules_objects.getattr_object)
        if route is not None:  # a property, descriptor or __getattr__: its code
            return _through_attribute_route(*route)
    if _hashable(f) and f in _STRUCTURAL:
        return _through_structural(f, args, kwargs)
    if f is operator.getitem and type(args[0]) in (list, tuple):  # a read: structure only
        return _through_structural(f, args, kwargs)
    if tf is types.MethodType:
        return _through_method(f.__func__, f.__self__, args, kwargs)
    if _nested_partials.is_partial(f):
        return _through_partial(f, args, kwargs)
    if tf is types.BuiltinFunctionType:
        owner = f.__self__
        if owner is not None and not isinstance(owner, types.ModuleType):
            unbound = getattr(type(owner), f.__name__, None)
            if unbound is not None and _hashable(unbound) and unbound in _RRULES:
                return _through_method(unbound, owner, args, kwargs)
    if _wrappers.is_vectorized(f):
        return _through_vectorize(f, args, kwargs)
    has_rules = _hashable(f) and f in _RRULES
    rule = _lookup(f, tuple(map(type, args)), ADConfig) if has_rules else None
    if rule is None:
        call = getattr(tf, "__call__", None)  # noqa: B004 - a Python __call__ only
        if type(call) is _FunctionType and not isinstance(f, type):  # a callable object
            return _through_method(call, f, args, kwargs)  # (a dataclass with __call__)
        if library_callable(f):  # C code: run as plain Python
            return _plain_calls.reverse_over_reverse(f, args, kwargs, function_name(f))
        raise _unsupported(
            f"reverse over reverse: {function_name(f)} is neither a Python function nor a "
            "function with an rrule",
            "call it through a Python function, or use ad.hessian (forward over reverse)",
        )
    if kwargs and not getattr(rule.impl, "keyword_cotangents", False):
        moved = keywords_as_positions(f, args, kwargs)
        if moved is not None:  # odeint(..., args=(k,)): as rcall_kw, keywords by position
            return _through_moved_keywords(f, n, *moved)
    impl = rule.impl
    if type(impl) is not _FunctionType or impl in _RRULES:
        raise _unsupported(
            f"reverse over reverse: the rrule for {function_name(f)} is not a Python function",
            "use ad.hessian (forward over reverse)",
        )
    offset = 2 if rule.takes_config else 1
    call_args = (CONFIG, *args) if rule.takes_config else args
    # The rule's captured variables (the function it was made for, its partials)
    # are constants: differentiate its body with the closure inactive.
    out, pb = call_function(impl, call_args, kwargs or None, False)

    def rule_body_pullback(ct: Any) -> tuple:
        raw = pb(ct)
        kw_ct = raw[-1] if kwargs else {}
        return _NO, raw[offset : offset + n], kw_ct

    if kwargs and not getattr(impl, "keyword_cotangents", False):
        # rcall_kw's pullback ends with the keyword cotangents: none from a rule.
        return _wrapped(out, rule_body_pullback, with_keyword_slot)
    return out, rule_body_pullback


def _through_moved_keywords(
    f: Any, n: int, args: tuple, kwargs: dict, names: tuple
) -> tuple[Any, Callable]:
    """A rule's call ``f(*args[:n], **kw)`` made as ``f(*args, **kwargs)``, the keywords
    that may carry a derivative passed by position (``keywords.keywords_as_positions``;
    ``names``: the keyword at each position past ``n``, None for a default), as
    ``rcall_kw`` makes it at first order: their cotangents go back to the keywords."""
    out, pb = _dispatch(f, args, kwargs)

    def moved_keywords_pullback(ct: Any) -> tuple:
        f_ct, a_ct, kw_ct = pb(ct)
        kw = dict(kw_ct)
        kw.update((k, c) for k, c in zip(names, a_ct[n:]) if k is not None)
        return f_ct, tuple(a_ct[:n]), kw

    slot = bool(kwargs)  # the inner pullback ends with a dict of keyword cotangents
    return _wrapped(
        out, moved_keywords_pullback, lambda inner: keywords_back(inner, n, names, slot)
    )


def keywords_back(pb: Callable, n: int, names: tuple, slot: bool) -> Callable:
    """The pullback of a call written with keywords, from ``pb``, that of the same call
    with the keywords ``names`` passed by position after the first ``n`` arguments
    (``slot``: ``pb``'s result ends with a dict of the other keywords' cotangents)."""

    def keywords_back_pullback(ȳ: Any) -> tuple:
        return moved_cts(pb(ȳ), n, names, slot)

    return keywords_back_pullback


def moved_cts(cts: tuple, n: int, names: tuple, slot: bool) -> tuple:
    """``(of f, of each of the n positional arguments..., {of each keyword})`` from the
    cotangents ``cts`` of the call with keywords moved to positions. Linear."""
    kw = dict(cts[-1]) if slot else {}
    moved = cts[n + 1 : -1] if slot else cts[n + 1 :]
    kw.update((k, c) for k, c in zip(names, moved) if k is not None)
    return (*cts[: n + 1], kw)


@rrule.register(moved_cts, config=ADConfig)
def _(config: Any, cts: tuple, n: int, names: tuple, slot: bool) -> Any:
    m = len(cts)
    out = moved_cts(cts, n, names, slot)

    def moved_cts_pullback(ȳ: Any) -> tuple:
        c = entries(ȳ, n + 2, "a call's cotangents")
        back = [*c[: n + 1], *([_Z] * (m - n - 1))]
        for j, k in enumerate(names):
            if k is not None:
                back[n + 1 + j] = kw_entry(c[-1], k)
        if slot:
            left = {k: kw_entry(c[-1], k) for k in cts[-1] if k not in names}
            back[-1] = Tangent[dict]._from_backing(left) if left else _Z
        return (_NO, _tangents_ct(tuple(back)), _NO, _NO, _NO)

    return out, moved_cts_pullback


def with_keyword_slot(pb: Callable) -> Callable:
    """A rule's pullback as ``rcall_kw`` returns it: with a final (empty) dict of
    keyword cotangents (rules give keyword arguments none)."""

    def keyword_slot_pullback(ȳ: Any) -> tuple:
        return (*pb(ȳ), {})

    return keyword_slot_pullback


def receiver_first(pb: Callable) -> Callable:
    """A method's pullback as ``rcall`` returns it: the method's own cotangent is
    its receiver's, so the unbound function's ``∂f`` is dropped."""

    def receiver_first_pullback(ȳ: Any) -> tuple:
        return pb(ȳ)[1:]

    return receiver_first_pullback


def _wrapped(out: Any, outer_pb: Callable, wrap: Callable) -> tuple[Any, Callable]:
    """``(y, wrap(pb))`` from ``out = (y, pb)``: the wrapper is a closure over ``pb``
    (differentiated through its source), so its cotangent's ``pb`` field is ``pb``'s."""
    y, pb = out

    def wrapped_pullback(ct: Any) -> tuple:
        ȳ, w̄ = entries(ct, 2, "the (value, pullback) pair of a call")
        p̄b = _accumulate.field_ct(unthunk(w̄), "pb")
        return outer_pb(_tangents_ct((ȳ, p̄b)))

    return (y, wrap(pb)), wrapped_pullback


def _through_method(
    func: Any, owner: Any, args: tuple, kwargs: dict | None
) -> tuple[Any, Callable]:
    out, pb = _dispatch(func, (owner, *args), kwargs)

    def method_pullback(ct: Any) -> tuple:
        _, a_ct, kw_ct = pb(ct)
        return a_ct[0], a_ct[1:], kw_ct

    return _wrapped(out, method_pullback, receiver_first)


def _through_partial(
    p: functools.partial, args: tuple, kwargs: dict | None
) -> tuple[Any, Callable]:
    """A partial's call: the call it makes, bound arguments first (its cotangent
    is its parts', ``nested_partials``); the first-order pullback is that call's,
    its cotangents packed as first-order reverse mode packs them."""
    nb, n = len(p.args), len(args)
    own = kwargs or {}
    all_kw = {**p.keywords, **own}
    out, pb = _dispatch(p.func, (*p.args, *args), all_kw or None)
    bound_keys = tuple(k for k in p.keywords if k not in own)
    own_keys = tuple(own) if kwargs is not None else None

    def partial_outer_pullback(ct: Any) -> tuple:
        f_ct, a_ct, kw_ct = pb(ct)
        return _nested_partials.parts_ct(p, n, f_ct, tuple(a_ct), kw_ct, own)

    def wrap(inner: Callable) -> Callable:
        return _nested_partials.first_order(inner, nb, n, bound_keys, own_keys, bool(all_kw))

    return _wrapped(out, partial_outer_pullback, wrap)


def _through_vectorize(v: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """An ``np.vectorize`` object's call as ``ad.runtime.wrappers.vectorized_call``, a loop of
    Python whose pure form is differentiated (``v``'s cotangent is its function's,
    field ``pyfunc``); ``NoRuleError`` for the calls that does not follow (keywords)."""
    pyfunc, shape, otypes = _wrappers.nested_call(v, args, kwargs)
    n = len(args)
    out, pb = _dispatch(_wrappers.vectorized_call, (pyfunc, shape, otypes, tuple(args)), None)

    def vectorize_pullback(ct: Any) -> tuple:
        _, a_ct, _ = pb(ct)  # a_ct: (∂pyfunc, ∂shape, ∂otypes, ∂args)
        return _wrappers.vectorize_tangent(v, a_ct[0]), tuple(arg_cts(a_ct[3], n)), {}

    return _wrapped(out, vectorize_pullback, lambda inner: as_vectorize_call(inner, v, n))


def as_vectorize_call(pb: Callable, v: Any, n: int) -> Callable:
    """``vectorized_call``'s pullback as one of the call ``v(*args)``: ``v``'s
    cotangent is its function's (field ``pyfunc``), each argument's its own."""

    def vectorize_call_pullback(ȳ: Any) -> tuple:
        raw = pb(ȳ)  # (∂vectorized_call, ∂pyfunc, ∂shape, ∂otypes, ∂args)
        return (_wrappers.vectorize_tangent(v, raw[1]), *arg_cts(raw[4], n))

    return vectorize_call_pullback


def arg_cts(ct: Any, n: int) -> tuple:
    """The entries of the cotangent of a tuple of ``n`` arguments."""
    return tuple(entries(ct, n, "np.vectorize's arguments"))


@rrule.register(arg_cts, config=ADConfig)
def _(config: Any, ct: Any, n: int) -> Any:
    def arg_cts_pullback(ȳ: Any) -> tuple:
        return (_NO, _tangents_ct(tuple(entries(ȳ, n, "np.vectorize's arguments"))), _NO)

    return arg_cts(ct, n), arg_cts_pullback


@rrule.register(_wrappers.vectorize_tangent, config=ADConfig)
def _(config: Any, v: Any, pyfunc_ct: Any) -> Any:
    def vectorize_tangent_pullback(ȳ: Any) -> tuple:
        return (_NO, _Z, _accumulate.field_ct(unthunk(ȳ), "pyfunc"))

    return _wrappers.vectorize_tangent(v, pyfunc_ct), vectorize_tangent_pullback


#: ad's helpers that pack, unpack and select: linear maps whose pullbacks keep
#: only the structure of their arguments (lengths, keys, field names).
#: (``getitem`` is not among them here: on arrays the dispatch would take its lean
#: pullback, which scatters in place; its rule body is differentiated instead.)
_STRUCTURAL = (_over_rules._STRUCTURAL - {operator.getitem}) | {
    _item_writes.append,
    _item_writes.setitem,  # into a list or dict (an array's refuses)
    _rules_containers.merge_kw,
    _rules_containers.merge_dicts,
    dict,
}


def _through_attribute_route(fn: Any, args: tuple, i: int) -> tuple[Any, Callable]:
    """An attribute read that runs ``fn(*args)`` (``attribute_routes.read_route``), the
    object at ``args[i]``: ``fn`` differentiated twice, its cotangents given to the
    object (the name, descriptor and type carry none)."""
    out, pb = _dispatch(fn, args, None)

    def attribute_route_pullback(ct: Any) -> tuple:
        _, a_ct, _ = pb(ct)
        return _NO, (a_ct[i], _Z), {}

    return _wrapped(out, attribute_route_pullback, lambda inner: object_read(inner, i))


def object_read(pb: Callable, i: int) -> Callable:
    """The pullback of ``getattr_(obj, name)`` from ``pb``, that of the code the read
    runs (``obj`` its ``i``-th argument)."""

    def object_read_pullback(ȳ: Any) -> tuple:
        return (_NO, pb(ȳ)[1 + i], _NO)

    return object_read_pullback


def _through_structural(f: Any, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    """A linear helper: its value's cotangent goes through its own pullback, and
    its pullback's cotangent is dropped (what the pullback captured is structure,
    so its output does not depend on the arguments' values)."""
    y, pb = rcall_kw(f, args, kwargs) if kwargs else rcall(f, *args)
    n = len(args)

    def structural_pullback(ct: Any) -> tuple:
        ȳ = entries(ct, 2, "the (value, pullback) pair of a call")[0]
        if _is_zero(unthunk(ȳ)):
            return _NO, (_Z,) * n, {}
        raw = pb(ȳ)
        return raw[0], raw[1 : 1 + n], (raw[-1] if kwargs else {})

    return (y, pb), structural_pullback


def _through_pure(f: types.FunctionType, args: tuple, kwargs: dict | None) -> tuple[Any, Callable]:
    from ad.transform import pure_transformed

    closure = bool(f.__code__.co_freevars)
    entry = pure_transformed(f, closure)
    if type(entry) is PlainEntry:  # library code: run as plain Python
        return _plain_calls.reverse_over_reverse(f, args, kwargs, function_name(f))
    n = len(args)
    names = entry.spec.positional
    spec = entry.spec
    varargs = (
        spec.vararg is not None and not (spec.kwonly or spec.kwarg or kwargs) and n >= len(names)
    )
    if not entry.simple and not varargs:
        raise _unsupported(
            f"reverse over reverse: {function_name(f)} has *args, **kwargs or keyword-only "
            "parameters, which it does not follow",
            f"give {function_name(f)} positional parameters only, or use ad.hessian (forward over "
            "reverse)",
        )
    full = args if varargs else _positional(f, names, args, kwargs)
    if full is None:
        raise _unsupported(
            f"reverse over reverse: the call of {function_name(f)} does not bind its arguments to "
            "its parameters by position",
            "pass every parameter positionally, or use ad.hessian (forward over reverse)",
        )
    gen = entry.instantiate(f)
    out, pb = call_function(gen, full, None, closure)
    own = frozenset(f.__code__.co_freevars)
    keys = tuple(kwargs or ())
    where = tuple(1 + names.index(k) for k in keys)

    def pure_pullback(ct: Any) -> tuple:
        raw = pb(ct)
        kw_ct = {k: raw[i] for k, i in zip(keys, where)}
        return _closure_ct(raw[0], own) if closure else _NO, raw[1 : 1 + n], kw_ct

    if varargs:  # the first-order pullback gives ``rest`` one cotangent: spread it
        return _wrapped(out, pure_pullback, lambda inner: spread(inner, len(names), n))
    if full is args:
        return out, pure_pullback
    # called with keywords or defaults: the first-order pullback as rcall_kw's (or
    # rcall's) of the call as written, from that of the positional call made
    with_kw = kwargs is not None
    return _wrapped(out, pure_pullback, lambda inner: as_written(inner, n, keys, where, with_kw))


def spread(pb: Callable, n_pos: int, n: int) -> Callable:
    """The pullback of a call of ``def f(a, b, *rest)`` with ``n`` positional
    arguments, from ``pb``, the generated one (one cotangent for ``rest``)."""

    def spread_pullback(ȳ: Any) -> tuple:
        return spread_cts(pb(ȳ), n_pos, n)

    return spread_pullback


def spread_cts(cts: tuple, n_pos: int, n: int) -> tuple:
    """``(of f, of each argument...)`` from ``(of f, of each named parameter..., of
    rest)``: the last spread over the ``n - n_pos`` arguments ``rest`` collected. Linear."""
    head, extra = tuple(cts[: 1 + n_pos]), unthunk(cts[1 + n_pos])
    if isinstance(extra, AbstractZero):
        return head + (_Z,) * (n - n_pos)
    return head + tuple(extra[i] for i in range(n - n_pos))


@rrule.register(spread_cts, config=ADConfig)
def _(config: Any, cts: tuple, n_pos: int, n: int) -> Any:
    out = spread_cts(cts, n_pos, n)

    def spread_cts_pullback(ȳ: Any) -> tuple:
        c = entries(ȳ, len(out), "a call's cotangents")
        back = (*c[: 1 + n_pos], _tangents_ct(tuple(c[1 + n_pos :])))
        return (_NO, _tangents_ct(back), _NO, _NO)

    return out, spread_cts_pullback


def as_written(pb: Callable, n: int, keys: tuple, where: tuple, with_kw: bool) -> Callable:
    """The pullback of a call written with keywords or defaults, from ``pb``, that of
    the same call with every parameter positional."""

    def as_written_pullback(ȳ: Any) -> tuple:
        return written_cts(pb(ȳ), n, keys, where, with_kw)

    return as_written_pullback


def written_cts(cts: tuple, n: int, keys: tuple, where: tuple, with_kw: bool) -> tuple:
    """``(of f, of each positional argument..., [{of each keyword}])`` from the
    cotangents ``cts`` of the positional call (``as_written``). Linear."""
    out = tuple(cts[: 1 + n])
    if not with_kw:
        return out
    return (*out, {k: cts[i] for k, i in zip(keys, where)})


@rrule.register(written_cts, config=ADConfig)
def _(config: Any, cts: tuple, n: int, keys: tuple, where: tuple, with_kw: bool) -> Any:
    m = len(cts)
    out = written_cts(cts, n, keys, where, with_kw)

    def written_cts_pullback(ȳ: Any) -> tuple:
        c = entries(ȳ, len(out), "a call's cotangents")
        back = [*c[: 1 + n], *([_Z] * (m - 1 - n))]
        if with_kw:
            for k, i in zip(keys, where):
                back[i] = kw_entry(c[-1], k)
        return (_NO, _tangents_ct(tuple(back)), _NO, _NO, _NO, _NO)

    return out, written_cts_pullback


def _positional(f: types.FunctionType, names: tuple, args: tuple, kwargs: dict | None) -> Any:
    """Every positional parameter's value for ``f(*args, **kwargs)`` (keywords by
    name, defaults filled in: constants), or None where the call cannot be so written."""
    if not kwargs and len(args) == len(names):
        return args
    if len(args) > len(names):
        return None
    full: list[Any] = [*args, *([_MISSING] * (len(names) - len(args)))]
    posonly = f.__code__.co_posonlyargcount
    for k, v in (kwargs or {}).items():
        if k not in names or names.index(k) < max(len(args), posonly):
            return None
        full[names.index(k)] = v
    defaults = f.__defaults__ or ()
    first = len(names) - len(defaults)
    for i, v in enumerate(full):
        if v is _MISSING:
            if i < first:
                return None
            full[i] = defaults[i - first]
    return tuple(full)


_MISSING = object()


@rrule.register(rcall, config=ADConfig)
def _(config: Any, f: Any, *args: Any) -> Any:
    out, pb = _dispatch(f, args, None)

    def rcall_pullback(ct: Any) -> tuple:
        f_ct, a_ct, _ = pb(ct)
        return (_NO, f_ct, *a_ct)

    return out, rcall_pullback


@rrule.register(rcall_kw, config=ADConfig)
def _(config: Any, f: Any, args: tuple, kwargs: dict) -> Any:
    out, pb = _dispatch(f, tuple(args), dict(kwargs))

    def rcall_kw_pullback(ct: Any) -> tuple:
        f_ct, a_ct, kw_ct = pb(ct)
        kw = {k: kw_ct.get(k, _Z) for k in kwargs}
        kw_tangent = (
            Tangent[dict]._from_backing(kw) if any(not _is_zero(c) for c in kw.values()) else _Z
        )
        return (_NO, f_ct, _tangents_ct(tuple(a_ct)), kw_tangent)

    return out, rcall_kw_pullback
