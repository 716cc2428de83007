"""Forward mode over forward mode: ``frule``s for forward mode's own dispatch.

A pushforward that forward mode generated is ordinary Python: it calls
``fcall(op, (ȯp, ẋ1, ...), x1, ...)`` for each operation (or a scalar fast
path, ``ffast_mul(a, b, ȧ, ḃ)``) and a few linear helpers that pack and unpack
tangents. So a second forward pass differentiates it, as reverse over forward
does (``reverse_over_forward``): ``fcall`` gets an ``frule`` that pushes the outer tangents
through *what the dispatch runs* (the program one level up):

- a Python function: its generated pushforward, itself pushed forward (a copy
  of it whose private names carry a prefix of their own, so the outer transform's
  names cannot collide with the inner's: ``nested_pushforward``);
- a function with an ``frule``: the rule's body, pushed forward as source;
- a linear helper (packing, selection): the same map on the outer tangents;
- library code run as plain Python: its route, the same at every level;
- a bound method: its function, the receiver first.

Three levels deep, the outer pass meets ``fcall`` (or ``jvp``, or a fast path)
inside the pushforward it differentiates: ``unfold`` rewrites such a call as
the call it makes one level up, composing the maps of the tangents, so every
depth meets this same rule again. Each level's tangents live in that level's
generated variables, so an inner perturbation never meets an outer one (no
perturbation confusion). ``jvp``'s own ``frule`` is in ``forward_over_jvp``,
those of forward mode's helpers in ``forward_over_plumbing``; reverse mode over
all this is ``over_pushforward``.
"""

from __future__ import annotations

import ast
import copy
import functools
import types
from collections.abc import Callable
from typing import Any

from ad.errors import MutationError
from ad.higher import nested_partials as _nested_partials
from ad.higher import reverse_over_forward as _nested
from ad.runtime import forward as _forward
from ad.runtime import plain_calls as _plain_calls
from ad.runtime import rules_containers as _rules_containers
from ad.runtime import rules_objects as _rules_objects
from ad.runtime import wrappers as _wrappers
from ad.runtime.accumulate import field_ct, fn_tangent
from ad.runtime.config import ADConfig
from rulescore import AbstractZero, Tangent, ZeroTangent, frule, non_differentiable, unthunk
from rulescore._projection import Projector

__all__ = ["forward_over_fcall", "nested_pushforward"]

_Z = ZeroTangent()
_TupleT = Tangent[tuple]
_FunctionType = types.FunctionType
_MethodType = types.MethodType
CONFIG = ADConfig()


def _zero(ṫ: Any) -> bool:
    return ṫ is None or ṫ.__class__ in _forward._ZEROS or isinstance(unthunk(ṫ), AbstractZero)


# --- the pushforward of a pushforward ---------------------------------------------

_NESTED: dict[tuple, tuple] = {}


def _prefix(tree: ast.AST) -> str:
    """A prefix for generated names that no name in ``tree`` starts with."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    k = 1
    while any(n.startswith((f"_a{k}_", f"_ad_q{k}_")) for n in names):
        k += 1
    return f"_a{k}_"


def nested_pushforward(f: types.FunctionType, closure_active: bool) -> tuple:
    """``(gen, spec, dt, df)``: ``f``'s pushforward as forward mode generates it, its
    private names renamed so that it can be differentiated again (its source tree
    is registered), bound to ``f``; ``dt``/``df`` name its keyword-only tangent
    parameters, ``spec`` is ``f``'s signature."""
    key = (f.__code__, closure_active)
    entry = _NESTED.get(key)
    if entry is None:
        entry = _build(f, closure_active)
        _NESTED[key] = entry
    compiled, dt, df = entry
    return compiled.instantiate(f), compiled.spec, dt, df


def _build(f: types.FunctionType, closure_active: bool) -> tuple:
    from ad.runtime.helpers import FORWARD_HELPERS
    from ad.transform import front
    from ad.transform.codegen import compile_primal, factory_module
    from ad.transform.compiled import Compiled, signature_of
    from ad.transform.forward import generate_forward
    from ad.transform.source import register_generated

    fr = front(f, closure_active)
    freevars = f.__code__.co_freevars
    fn = generate_forward(fr.anf, fr.active, freevars, closure_active, fr.filename, fr.plain)
    fn = copy.deepcopy(fn)  # renamed in place below: it may share nodes with cached trees
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in FORWARD_HELPERS}
    prefix = _prefix(fn)
    keep = set(freevars)

    # Every generated name gets a prefix of its own, the helpers' too: a second
    # transform reads this code as user code, and must see calls of captured
    # functions where it would read its own helpers' names as its own constructs
    # (``_ad_unpack``). Helpers keep ``_ad_`` in front: they write nothing a caller
    # reads (see ``transform.holders``).
    helper_prefix = "_ad_q" + prefix[2:]

    def fix(name: str) -> str:
        if not name.startswith("_ad_") or name in keep:
            return name
        return (helper_prefix if name in FORWARD_HELPERS else prefix) + name[4:]

    seen: set[int] = set()  # a node may appear twice in the tree: rename it once
    for node in ast.walk(fn):
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ast.Name):
            node.id = fix(node.id)
        elif isinstance(node, ast.arg):
            node.arg = fix(node.arg)
        elif isinstance(node, ast.FunctionDef) and node is not fn:
            node.name = fix(node.name)
    helpers = {fix(n): FORWARD_HELPERS[n] for n in used}
    cell_names = sorted(set(helpers) - set(freevars)) + list(freevars)
    pristine = copy.deepcopy(fn)
    module = factory_module(fn, cell_names)
    code = compile_primal(module, fr.filename)
    register_generated(code, pristine, fr.filename, frozenset(helpers))
    compiled = Compiled(
        code=code,
        helper_cells={n: types.CellType(v) for n, v in helpers.items()},
        spec=signature_of(fr.anf),
    )
    return compiled, prefix + "dt", prefix + "df"


#: Functions linear in their arguments with a Jacobian that does not depend on
#: them (selection and packing): each level's tangents go through the same map.
LINEAR: set[Any] = set(_nested._STRUCTURAL) | {fn_tangent, field_ct}

#: forward mode's dispatch: ``fcall(g, ts, *args)`` of a linear ``g`` is linear in
#: ``(ts, args)`` with a constant Jacobian too, at any depth (``linear_call``)
_DISPATCH = (_forward.fcall, _nested.fcall_pair)


def linear_call(op: Any, args: tuple) -> bool:
    """Whether ``op(*args)`` is linear with a constant Jacobian: a function of
    ``LINEAR``, a projector, or forward mode's dispatch of one (``fcall(g, ts,
    *gargs)`` for such a ``g``, however deep), so that every level's tangents go
    through the same map and no level reads the map's rule as source."""
    while True:
        if isinstance(op, Projector) or (isinstance(op, type) and issubclass(op, Tangent)):
            return True  # a tangent built in a rule's body is linear in its entries
        if not _forward._hashable(op):
            return False
        if op in LINEAR:
            return True
        if op is _rules_containers.apply and len(args) == 3 and not args[2]:
            op, args = args[0], tuple(args[1])  # fn(*args)
            continue
        if op not in _DISPATCH or len(args) < 2:
            return False
        op, args = args[0], args[2:]


# --- fcall pushed forward -------------------------------------------------------------


def forward_over_fcall(
    op: Any, ts: tuple, args: tuple, ȯp: Any, ṫs: tuple, ȧ: tuple
) -> tuple[Any, Any]:
    """``((y, ẏ), its tangent)`` for ``(y, ẏ) = fcall(op, ts, *args)`` along the outer
    tangents ``ȯp`` (of ``op``), ``ṫs`` (of each of ``ts``) and ``ȧ`` (of each argument)."""
    return forward_over(op, ts, args, {}, {}, ȯp, ṫs, ȧ, {}, {})


def forward_over(
    op: Any,
    ts: tuple,
    args: tuple,
    kwargs: dict,
    kw_ts: dict,
    ȯp: Any,
    ṫs: tuple,
    ȧ: tuple,
    k̇w: dict,
    k̇w_ts: dict,
) -> tuple[Any, Any]:
    """``forward_over_fcall`` for a call with keyword arguments: ``kw_ts`` their inner
    tangents, ``k̇w`` their outer tangents, ``k̇w_ts`` the outer tangents of ``kw_ts``."""
    if (
        _zero(ȯp)
        and all(_zero(t) for t in ṫs)
        and all(_zero(t) for t in ȧ)
        and all(_zero(t) for t in k̇w.values())
        and all(_zero(t) for t in k̇w_ts.values())
    ):
        return _forward.call_with(op, ts, args, kwargs, kw_ts), _Z
    if op is getattr and len(args) == 2 and not kwargs:  # getattr(obj, name): a read
        op = _rules_objects.getattr_
    if op is functools.partial:  # building a partial: packing, at every level
        args2, ts2 = _nested_partials.constructor_call(ts, args, kwargs, kw_ts)
        ȧ2 = _nested_partials.constructor_call((_Z, *ȧ), args, kwargs, k̇w)[1][1:]
        ṫs2 = _nested_partials.constructor_call(ṫs, args, kwargs, k̇w_ts)[1]
        return forward_over_fcall(_nested_partials.make_partial, ts2, args2, _Z, ṫs2, ȧ2)
    if _nested_partials.is_partial(op):  # the call it makes, each level's tangent split
        func, ts2, args2, kwargs2, kw_ts2 = _nested_partials.unwrap(op, ts, args, kwargs, kw_ts)
        ȯf, ȧb, k̇wb = _nested_partials.split(op, ȯp)
        _, ṫs2, _, _, k̇w_ts2 = _nested_partials.unwrap(op, ṫs, args, kwargs, k̇w_ts)
        k̇w2 = {**k̇wb, **{k: k̇w.get(k, _Z) for k in kwargs}}
        return forward_over(func, ts2, args2, kwargs2, kw_ts2, ȯf, ṫs2, (*ȧb, *ȧ), k̇w2, k̇w_ts2)
    tf = type(op)
    func, owner = _method_parts(op)
    if func is not None:  # the method's tangent is its receiver's
        return forward_over(
            func,
            (_Z, ts[0], *ts[1:]),
            (owner, *args),
            kwargs,
            kw_ts,
            _Z,
            (_Z, ṫs[0], *ṫs[1:]),
            (ȯp, *ȧ),
            k̇w,
            k̇w_ts,
        )
    if (
        all(t.__class__ in _forward._ZEROS for t in ts)
        and all(_zero(t) for t in kw_ts.values())
        and (tf is not _FunctionType or op not in _forward.NO_SHORTCUT)
    ):
        # No inner tangent: the inner value is op(*args), its tangent a constant zero.
        y, ẏo = _forward.call_with(op, (ȯp, *ȧ), args, kwargs, k̇w)
        return (y, _Z), _forward.tan_tuple(ẏo, _Z)
    if not kwargs and linear_call(op, args):
        # Linear with a constant Jacobian: the same map on each level's tangents.
        y, ẏ = _forward.fcall(op, ts, *args)
        y_o = _forward.fcall(op, (_Z, *ȧ), *args)[1]
        ẏ_o = _forward.fcall(op, (_Z, *ṫs[1:]), *args)[1]
        return (y, ẏ), _forward.tan_tuple(y_o, ẏ_o)
    if op is _rules_objects.append and not kwargs:  # lst.append(v): once, tangents beside
        return _over_append(ts, args, ṫs, ȧ)
    if _forward._hashable(op) and op in _FIELD_WRITES and len(args) == 3:
        raise _field_write_refused(*args)
    plain = op not in _SELF and (not _forward._hashable(op) or op not in _forward._FRULES)
    if plain and _plain_calls.library_callable(op):  # library code: as plain Python
        return _over_plain(op, ts, args, kwargs, kw_ts, ṫs, ȧ, k̇w, k̇w_ts)
    u = unfold(op, ts, args, kwargs, kw_ts)
    op2, args2, kwargs2, tmap = u
    ts2, kw_ts2 = tmap(ȯp, ṫs, ȧ, k̇w, k̇w_ts)
    return _forward.call_with(op2, ts2, args2, kwargs2, kw_ts2)


def _over_append(ts: tuple, args: tuple, ṫs: tuple, ȧ: tuple) -> tuple[Any, Any]:
    """``lst.append(value)`` (a list being built): appended once; each level's tangent
    is the list's tangent with the value's appended."""
    lst, _ = args
    n = len(lst)
    before = list(lst)
    y, ẏ = _forward.fcall(_rules_objects.append, ts, *args)
    y_o = _forward.tan_list(*_forward.entries(ȧ[0], n, before), ȧ[1])
    ẏ_o = _forward.tan_list(*_forward.entries(ṫs[1], n, before), ṫs[2])
    return (y, ẏ), _forward.tan_tuple(y_o, ẏ_o)


def _field_writes() -> frozenset:
    from ad.runtime.helpers import setattr_

    return frozenset([setattr_, _rules_objects.setattr_object, _rules_objects.setdict])


#: the helpers writing an object's field (``obj.name = value`` in generated code)
_FIELD_WRITES = _field_writes()


def _field_write_refused(obj: Any, name: Any, value: Any) -> MutationError:
    """A field write pushed forward twice. Forward mode keeps the tangents of an
    object's written fields by identity (``ad.runtime.state``), so that reads through any
    name (the caller of a method that wrote ``self``) find them; forward over
    forward would need the outer tangents of those inner tangents kept the same
    way, which it does not do: pushed forward as source, the write's rule lost
    them (a wrong second derivative, or an error naming a line inside ad)."""
    site = _nested.user_site()
    return MutationError(
        f"{site}: the field {name!r} of a {type(obj).__name__} object is written under "
        "forward over forward mode (ad.jvp inside ad.jvp, or a third derivative ending "
        "in two forward passes), which does not follow the derivatives of an object's "
        "fields written while it differentiates.\n"
        "To fix: take this derivative with reverse mode on one of the levels (ad.hessian, "
        "ad.hvp, ad.jvp over ad.gradient or ad.gradient over ad.jvp follow such writes), "
        "or compute the value without writing the field (pass it as an argument or "
        "return it)."
    )


def _over_plain(
    op: Any,
    ts: tuple,
    args: tuple,
    kwargs: dict,
    kw_ts: dict,
    ṫs: tuple,
    ȧ: tuple,
    k̇w: dict,
    k̇w_ts: dict,
) -> tuple[Any, Any]:
    """Library code run as plain Python (``ad.runtime.plain_calls``): its output is one of its
    inputs or carries no derivative (its route), the same at every level."""
    y, route = _plain_calls.run(op, args, kwargs or None, _forward._fname(op), True)

    def along(pos: tuple, kw: dict) -> Any:
        return _plain_calls._route_tangent(
            route, lambda k: pos[k] if type(k) is int else kw.get(k, _Z)
        )

    ẏ = along(ts[1:], kw_ts)
    return (y, ẏ), _forward.tan_tuple(along(ȧ, k̇w), along(ṫs[1:], k̇w_ts))


def unfold(op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """The program the forward-mode call ``call_with(op, ts, args, kwargs, kw_ts)`` runs,
    as a plain call: ``(op2, args2, kwargs2, tmap)`` with ``op2(*args2, **kwargs2)``
    returning ``(y, ẏ)``; ``tmap(ȯp, ṫs, ȧ, k̇w, k̇w_ts) -> (ts2, kw_ts2)`` maps tangents
    of the call's parts to tangents of ``op2``'s (a linear map, the same at every level)."""
    tf = type(op)
    if not kwargs and linear_call(op, args):
        # Packing and selection, at any depth: the call itself, pushed forward by
        # fcall's frule (the same map on every level's tangents), never its rule's body.
        def linear_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return (_Z, ȯp, _forward.tan_tuple(*ṫs), *ȧ), {}

        return _forward.fcall, (op, ts, *args), {}, linear_tmap
    if _forward._hashable(op) and op in _SELF:  # ad's own dispatch, one level up
        return _SELF[op](ts, args, kwargs, kw_ts)
    if op is functools.partial or _nested_partials.is_partial(op):
        return _unfold_partial(op, ts, args, kwargs, kw_ts)
    func, owner = _method_parts(op)
    if func is not None:
        # (each branch names its inner map apart: reverse mode reads these maps as
        # source, where a name assigned twice is refused; see _over_pushforward)
        op2, args2, kwargs2, func_tmap = unfold(
            func, (_Z, ts[0], *ts[1:]), (owner, *args), kwargs, kw_ts
        )

        def method_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return func_tmap(_Z, (_Z, ṫs[0], *ṫs[1:]), (ȯp, *ȧ), k̇w, k̇w_ts)

        return op2, args2, kwargs2, method_tmap
    if tf is _FunctionType and op not in _forward._FRULES:
        return _unfold_python(op, ts, args, kwargs, kw_ts)
    if _forward._hashable(op) and op in _forward._FRULES:
        rule = _forward._lookup(op, tuple(map(type, args)), ADConfig)
        if rule is not None:
            return _unfold_frule(rule, op, ts, args, kwargs, kw_ts)
    if _wrappers.is_vectorized(op):
        return _unfold_vectorize(op, ts, args, kwargs, kw_ts)
    call = next((k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(call, _FunctionType):  # a callable object: its __call__, op the receiver
        op2, args2, kwargs2, call_map = unfold(
            call, (_Z, ts[0], *ts[1:]), (op, *args), kwargs, kw_ts
        )

        def call_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            return call_map(_Z, (_Z, ṫs[0], *ṫs[1:]), (ȯp, *ȧ), k̇w, k̇w_ts)

        return op2, args2, kwargs2, call_tmap
    if _plain_calls.library_callable(op):
        return _unfold_plain(op, args, kwargs)
    if isinstance(op, type):
        raise _nested._unsupported(
            f"a {op.__name__} object is constructed under forward over forward mode (ad.jvp "
            "inside ad.jvp), which does not follow the fields a constructor writes",
            "take this derivative with reverse mode on one of the levels (ad.hessian, "
            "ad.hvp, ad.jvp over ad.gradient or ad.gradient over ad.jvp follow such "
            f"objects), or build the {op.__name__} outside the function differentiated twice",
        )
    raise _nested._unsupported(
        f"cannot push forward the forward-mode call of {_forward._fname(op)} again (forward "
        "over forward supports Python functions, functions with an frule, and methods)",
        "call it through a Python function, or register an frule for it",
    )


def _unfold_partial(op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """Building a partial (as ``make_partial``, packing) or calling one (the call it
    makes, its tangents split into its parts'): see ``nested_partials``."""
    if op is functools.partial:
        args2, ts2 = _nested_partials.constructor_call(ts, args, kwargs, kw_ts)

        def partial_ctor_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
            ȧ2 = _nested_partials.constructor_call((_Z, *ȧ), args, kwargs, k̇w)[1]
            ṫs2 = _nested_partials.constructor_call(ṫs, args, kwargs, k̇w_ts)[1]
            return (_Z, _Z, _forward.tan_tuple(*ṫs2), *ȧ2[1:]), {}

        return _forward.fcall, (_nested_partials.make_partial, ts2, *args2), {}, partial_ctor_tmap
    p = op
    func, ts2, args2, kwargs2, kw_ts2 = _nested_partials.unwrap(p, ts, args, kwargs, kw_ts)
    op2, args3, kwargs3, func_tmap = unfold(func, ts2, args2, kwargs2, kw_ts2)
    own = tuple(kwargs)

    def partial_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ȯf, ȧb, k̇wb = _nested_partials.split(p, ȯp)
        ṫf, ṫb, ṫkw = _nested_partials.split(p, ṫs[0])
        k̇w2 = {**k̇wb, **{k: k̇w.get(k, _Z) for k in own}}
        k̇w_ts2 = {**ṫkw, **{k: k̇w_ts.get(k, _Z) for k in own}}
        return func_tmap(ȯf, (ṫf, *ṫb, *ṫs[1:]), (*ȧb, *ȧ), k̇w2, k̇w_ts2)

    return op2, args3, kwargs3, partial_tmap


def constant_pair(y: Any) -> tuple:
    """``(y, 0)``: the forward-mode call of library code whose result carries no
    derivative, as a program of its own (``_unfold_plain``)."""
    return y, _Z


non_differentiable(constant_pair)


def _unfold_plain(op: Any, args: tuple, kwargs: dict) -> tuple:
    """Library code (C code, the standard library: ``ad.runtime.plain_calls``) at any depth: run
    as plain Python, as first-order modes run it. A result that carries no derivative
    (a string, an int...) is a constant at every level; any other is refused with
    first order's error (``ad.runtime.plain_calls.run`` raises it), unless its derivative is
    one of its arguments', which forward over forward does not follow past here."""
    name = _forward._fname(op)
    y, route = _plain_calls.run(op, args, kwargs or None, name, True)
    if route is not None:
        raise _nested._unsupported(
            f"{name} is library code run as plain Python whose result passes an argument "
            "through; forward over forward over forward does not follow it",
            "call it outside the differentiated function, or register an frule for it",
        )

    def constant_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        return (_Z, _Z), {}

    return constant_pair, (y,), {}, constant_tmap


def _unfold_vectorize(v: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``np.vectorize``'s call as ``ad.runtime.wrappers.vectorized_call``, a loop of Python (the
    function's tangent is ``v``'s field ``pyfunc``)."""
    pyfunc, shape, otypes = _wrappers.nested_call(v, args, kwargs)
    inner_ts = (_Z, field_ct(ts[0], "pyfunc"), _Z, _Z, _forward.tan_tuple(*ts[1:]))
    call_args = (pyfunc, shape, otypes, tuple(args))
    op2, args2, kwargs2, tmap = unfold(_wrappers.vectorized_call, inner_ts, call_args, {}, {})

    def vectorize_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ṫs2 = (_Z, field_ct(ṫs[0], "pyfunc"), _Z, _Z, _forward.tan_tuple(*ṫs[1:]))
        ȧ2 = (field_ct(ȯp, "pyfunc"), _Z, _Z, _forward.tan_tuple(*ȧ))
        return tmap(_Z, ṫs2, ȧ2, {}, {})

    return op2, args2, kwargs2, vectorize_tmap


def _method_parts(op: Any) -> tuple[Any, Any]:
    """``(function, receiver)`` of a bound method (a Python method, or a library
    type's method with an frule: ``x.std``); ``(None, None)`` for anything else, a
    bound method with rules of its own (``scipy.stats.norm.pdf``) included."""
    if _forward._hashable(op) and op in _forward._FRULES:
        return None, None
    if type(op) is _MethodType:
        return op.__func__, op.__self__
    owner = getattr(op, "__self__", None)
    if type(op) is types.BuiltinFunctionType and owner is not None:
        if not isinstance(owner, types.ModuleType):
            unbound = getattr(type(owner), op.__name__, None)
            if unbound is not None and _forward._hashable(unbound) and unbound in _forward._FRULES:
                return unbound, owner
    return None, None


def _unfold_python(f: types.FunctionType, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict):
    """A Python function: its pushforward (whose closure's tangent is ``f``'s: the
    generated function shares ``f``'s cells)."""
    closure_active = bool(f.__code__.co_freevars) and not _zero(ts[0])
    gen, spec, dt, df = nested_pushforward(f, closure_active)
    n = len(args)
    inner_dt = _forward._param_tangents(spec, n, ts[1:], kwargs, kw_ts)
    kwargs2 = {**kwargs, dt: inner_dt, df: ts[0]}

    def python_tmap(ḟ: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        outer_dt = _forward._param_tangents(spec, n, ṫs[1:], kwargs, k̇w_ts)
        kw = {k: k̇w.get(k, _Z) for k in kwargs}
        return (ḟ, *ȧ), {**kw, dt: _forward.tan_tuple(*outer_dt), df: ṫs[0]}

    return gen, args, kwargs2, python_tmap


def _unfold_frule(rule: Any, op: Any, ts: tuple, args: tuple, kwargs: dict, kw_ts: dict):
    """A function with an frule: the rule's body (its captured variables, the function
    it was made for and its partials, are constants)."""
    if any(not _zero(t) for t in kw_ts.values()):
        raise _nested._unsupported(
            f"a keyword argument of {_forward._fname(op)} carries a derivative, which its "
            "frule does not follow",
            "pass it positionally",
        )
    numpy = _forward._is_numpy_function(op)
    if numpy:
        ts = _forward._array_like_tangents(ts, args)
    head = (CONFIG,) if rule.takes_config else ()
    zhead = (_Z,) * len(head)
    impl = rule.impl

    def frule_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        if numpy:
            ṫs = _forward._array_like_tangents(ṫs, args)
        kw = {k: k̇w.get(k, _Z) for k in kwargs}
        return (_Z, *zhead, *ṫs, *ȧ), kw

    return impl, (*head, *ts, *args), dict(kwargs), frule_tmap


def _split_ts(ṫ: Any, n: int) -> tuple:
    """The outer tangents of a tuple of ``n`` inner tangents."""
    ṫ = unthunk(ṫ)
    if _zero(ṫ):
        return (_Z,) * n
    return tuple(_forward.split(ṫ, n))


def _unfold_fcall(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``fcall(g, gts, *gargs)`` pushed forward along ``ts``: it runs ``g``'s unfolded
    program ``op2`` in forward mode, with the tangents ``tmap`` gives; so unfold that
    call in turn, the tangent maps composed."""
    g, gts, *gargs = args
    m = len(gts)

    def parts(t: tuple) -> tuple:  # tangents of (fcall, g, gts, *gargs) -> of g's call
        return t[1], _split_ts(t[2], m), tuple(t[3:]), {}, {}

    return _unfold_twice((g, tuple(gts), tuple(gargs), {}, {}), parts, ts)


def _unfold_twice(call: tuple, parts: Callable, ts: tuple) -> tuple:
    """Unfold a forward-mode kernel's inner ``call`` ``(g, gts, gargs, gkw, gkw_ts)``,
    then the program it unfolds to, along ``ts`` (the kernel's own argument
    tangents, which ``parts`` maps to those of ``call``); the tangent maps composed."""
    op2, args2, kwargs2, tmap = unfold(*call)

    def to_op2(t: tuple) -> tuple:
        return tmap(*parts(t))

    ts2, kw_ts2 = to_op2(ts)
    op3, args3, kwargs3, tmap3 = unfold(op2, ts2, args2, kwargs2, kw_ts2)

    def composed_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ȧ2, k̇w2 = to_op2((_Z, *ȧ))
        ṫs2, k̇w_ts2 = to_op2(ṫs)
        return tmap3(ȧ2[0], ṫs2, ȧ2[1:], k̇w2, k̇w_ts2)

    return op3, args3, kwargs3, composed_tmap


_SELF: dict[Any, Callable] = {}


def _fcall_frule(config: Any, ṡ: Any, *rest: Any) -> Any:
    """``frule`` of ``fcall(op, ts, *args)``: forward mode over forward mode."""
    n = len(rest) // 2
    ȯp, ṫs, *ȧ = rest[:n]
    op, ts, *args = rest[n:]
    return forward_over_fcall(op, tuple(ts), tuple(args), ȯp, _split_ts(ṫs, len(ts)), tuple(ȧ))


def _gen_parts(t: tuple, n: int, kwnames: tuple) -> tuple:
    """Tangents of ``fcall_gen``'s arguments ``(f, ḟ, args, arg_ts, stars, kwnames,
    kwvalues, kw_ts)`` (``t[0]``: its own) as those of the call it makes:
    ``(of f, of (ḟ, *arg_ts), of args, of kwvalues, of kw_ts)``."""
    m = len(kwnames)
    ṫs = (t[2], *_split_ts(t[4], n))
    k̇w = dict(zip(kwnames, _split_ts(t[7], m)))
    k̇w_ts = dict(zip(kwnames, _split_ts(t[8], m)))
    return t[1], ṫs, _split_ts(t[3], n), k̇w, k̇w_ts


def _gen_call(args: tuple) -> tuple:
    f, ḟ, fargs, arg_ts, stars, kwnames, kwvalues, kw_ts = args
    if stars is not None or None in kwnames:
        raise _nested._unsupported(
            f"the forward-mode call of {_forward._fname(f)} passes *args or **kwargs, which "
            "forward over forward does not follow",
            "pass the arguments one by one",
        )
    kwargs = dict(zip(kwnames, kwvalues))
    return f, (ḟ, *arg_ts), tuple(fargs), kwargs, dict(zip(kwnames, kw_ts)), tuple(kwnames)


@frule.register(_forward.fcall_gen, config=ADConfig)
def _(config: Any, ṡ: Any, *rest: Any) -> Any:
    """``frule`` of ``fcall_gen`` (a forward-mode call with keywords): forward over forward."""
    f, ts, args, kwargs, kw_ts, kwnames = _gen_call(rest[8:])
    ȯp, ṫs, ȧ, k̇w, k̇w_ts = _gen_parts((_Z, *rest[:8]), len(args), kwnames)
    return forward_over(f, ts, args, kwargs, kw_ts, ȯp, ṫs, ȧ, k̇w, k̇w_ts)


def _unfold_fcall_gen(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``fcall_gen(...)`` pushed forward: as ``_unfold_fcall``, keywords included."""
    g, gts, gargs, gkw, gkw_ts, kwnames = _gen_call(args)
    n = len(gargs)
    return _unfold_twice((g, gts, gargs, gkw, gkw_ts), lambda t: _gen_parts(t, n, kwnames), ts)


_SELF[_forward.fcall_gen] = _unfold_fcall_gen


for _kernel in (_forward.fcall, _nested.fcall_pair):
    frule.register(_kernel, config=ADConfig)(_fcall_frule)
    _SELF[_kernel] = _unfold_fcall


def _unfold_apply(ts: tuple, args: tuple, kwargs: dict, kw_ts: dict) -> tuple:
    """``apply(fn, args, kwargs)`` (a call with ``*args``/``**kwargs``): ``fn``'s call."""
    fn, a, kw = args[0], tuple(args[1]), dict(args[2])
    n = len(a)

    def parts(t: tuple) -> tuple:  # tangents of (apply, fn, a, kw) -> of fn's call
        pos = (t[1], *_forward.entries(t[2], n, a))
        return pos, {k: _forward.mapping_entry(t[3], k) for k in kw}

    inner_ts, inner_kw_ts = parts(ts)
    op2, args2, kwargs2, tmap = unfold(fn, inner_ts, a, kw, inner_kw_ts)

    def apply_tmap(ȯp: Any, ṫs: tuple, ȧ: tuple, k̇w: dict, k̇w_ts: dict) -> tuple:
        ȧ_pos, ȧ_kw = parts((_Z, *ȧ))
        ṫ_pos, ṫ_kw = parts(ṫs)
        return tmap(ȧ_pos[0], ṫ_pos, ȧ_pos[1:], ȧ_kw, ṫ_kw)

    return op2, args2, kwargs2, apply_tmap


_SELF[_rules_containers.apply] = _unfold_apply


#: the binary operators with a scalar fast path (``ad.runtime.forward_arithmetic``)
BINARY = ("add", "sub", "mul", "truediv", "pow")

# For the modules that register the rest of forward over forward's rules
# (``forward_over_plumbing``, ``forward_over_jvp``) and reverse over it.
SELF = _SELF
zero = _zero
split_ts = _split_ts
unfold_fcall = _unfold_fcall
