"""Pass 1c, writers: numpy's functions that write an array argument in place,
spelled as the rebinding of that array to a new one.

``np.put_along_axis(a, idx, v, axis=1)`` changes the *object* ``a``; the AD
follows *variables* (see ``ad.runtime.ownership``), so the statement becomes

    _ad_wf1 = _ad_writer(np.put_along_axis)
    a = _ad_wf1(a, idx, v, axis=1)

where ``_ad_writer`` returns the function's functional form
(``rules.functional``: a new array, equal to what ``a`` holds after numpy's
call, with an rrule and an frule). The generators guard the rebinding like
``a[i] = v`` (``guards.ownership_guard``: nothing the user can observe may
hold the old array), differentiate it through the functional form's rules,
and run an undifferentiated one in place (``_ad_in_place``), so that views
and other names see the write as in plain Python.

An ndarray method that writes its array, ``a.fill(v)``, ``a.sort()``,
``a.partition(k)`` or ``a.put(idx, v)``, is spelled the same way when ``a``
holds an ndarray; the statement runs as written otherwise (``a`` may be a list
or an object of the user's with a method of that name)::

    if _ad_isinstance(a, _ad_np.ndarray):
        _ad_wf1 = _ad_method_form("fill")
        a = _ad_wf1(a, v)
    else:
        a.fill(v)

The same holds for a numpy call's ``out=c`` (a ufunc, ``np.dot``, a
reduction): ``np.multiply(a, b, out=c)`` as a statement, or as the value of
an assignment, becomes ``c = copyto(c, np.multiply(a, b))`` (numpy's
``same_kind`` casting into ``c``; a ``where=`` mask goes to the copy).

Rewritten: a call statement (or a single-target assignment, for ``out=``)
whose function is a name or a dotted name that the function neither binds nor
receives, resolving *now* to such a numpy function, and whose written array
is a plain name; a method call statement ``a.<method>(...)`` on a name the
function binds or receives. Anything else runs as before (``ad.runtime.plain_calls`` refuses a
write it cannot follow, naming the line).

>>> import numpy as np, ad
>>> def f(x):
...     a = np.zeros((2, 2))
...     np.put_along_axis(a, np.array([[1], [0]]), x[:, None], axis=1)
...     return np.sum(a * np.arange(4.0).reshape(2, 2))
>>> ad.gradient(f, np.array([1.0, 2.0]))
(array([1., 2.]),)
"""

from __future__ import annotations

import ast
import itertools
import types
from collections.abc import Callable
from typing import Any

from ad.transform.holders import LOCAL, UNBOUND, name_resolver
from rules.functional import functional_form

__all__ = [
    "ARRAY_WRITER_METHODS",
    "WRITER_PREFIX",
    "in_place_form",
    "rewrite_statements",
    "spelled_as_rebinding",
]

#: The names ``_ad_wf<n>`` bind a writer's functional form (``guards`` and the
#: generators recognise the rebinding by it).
WRITER_PREFIX = "_ad_wf"

#: ndarray methods that write their array (``ad.runtime.writers.method_form``).
ARRAY_WRITER_METHODS = frozenset(["fill", "partition", "put", "sort"])

#: numpy's ``copyto`` in generated code (``_ad_np`` is numpy, ``ad.runtime.helpers``).
_COPYTO = ast.Attribute(ast.Name("_ad_np", ast.Load()), "copyto", ast.Load())
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def spelled_as_rebinding(tree: ast.FunctionDef, f: types.FunctionType) -> ast.FunctionDef:
    """``tree`` (edited in place) with each in-place numpy call on a local name
    spelled as that name's rebinding (see the module docstring)."""
    resolve = _resolver(f)
    counter = itertools.count(1)
    return rewrite_statements(tree, lambda s: _rewritten(s, resolve, counter))


def rewrite_statements(
    tree: ast.FunctionDef, one: Callable[[ast.stmt], list[ast.stmt] | None]
) -> ast.FunctionDef:
    """``tree`` (edited in place) with each statement of its blocks, nested ones
    included but not those of nested functions, lambdas and classes, replaced by
    ``one(s)`` where that is not None (inner blocks first)."""

    def rewrite(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(s, field, None)
                if inner and not isinstance(s, _SCOPES):
                    setattr(s, field, rewrite(inner))
            for h in getattr(s, "handlers", ()):
                h.body = rewrite(h.body)
            for c in getattr(s, "cases", ()):
                c.body = rewrite(c.body)
            out.extend(one(s) or [s])
        return out

    tree.body = rewrite(tree.body)
    return tree


def in_place_form(s: ast.Assign) -> ast.Assign:
    """The undifferentiated form of a writer's rebinding ``a = _ad_wf1(a, ...)``:
    ``a = _ad_in_place(_ad_wf1, a, ...)``, which writes the new value into ``a``'s
    own memory; any other statement unchanged."""
    v = s.value
    if not (
        isinstance(v, ast.Call)
        and isinstance(v.func, ast.Name)
        and v.func.id.startswith(WRITER_PREFIX)
    ):
        return s
    call = ast.Call(_name("_ad_in_place", v), [v.func, *v.args], v.keywords)
    return ast.copy_location(ast.Assign([s.targets[0]], ast.copy_location(call, v)), s)


def _resolver(f: types.FunctionType) -> Any:
    """A dotted name's value now (through ``f``'s closure, globals, builtins), or
    None; names ``f`` binds itself are not resolved."""
    code = f.__code__
    resolve_name = name_resolver(f, set(code.co_varnames) | set(code.co_cellvars))

    def resolve(e: ast.expr) -> Any:
        if isinstance(e, ast.Attribute):
            owner = resolve(e.value)
            return None if owner is None else getattr(owner, e.attr, None)
        if not isinstance(e, ast.Name):
            return None
        value = resolve_name(e.id)
        return None if value is LOCAL or value is UNBOUND else value

    return resolve


def _rewritten(s: ast.stmt, resolve: Any, counter: Any) -> list[ast.stmt] | None:
    if isinstance(s, ast.Expr):
        e, result = s.value, None
    elif isinstance(s, ast.Assign) and len(s.targets) == 1:
        e, result = s.value, s.targets[0]
    else:
        return None
    if not isinstance(e, ast.Call) or any(isinstance(x, ast.Starred) for x in e.args):
        return None
    if any(k.arg is None for k in e.keywords):
        return None
    if result is None and _array_method(e, resolve):
        return [_method_rebinding(s, e, counter)]
    out = [k for k in e.keywords if k.arg == "out"]
    if out:
        written = _out_name(out[0].value)
        fn = resolve(e.func)
        if written is None or not _numpy_callable(fn):
            return None
        rest = [k for k in e.keywords if k.arg not in ("out", "where")]
        where = [k for k in e.keywords if k.arg == "where"]
        value = ast.copy_location(ast.Call(e.func, e.args, rest), e)
        stmts = _rebinding(written, _writer_of(_COPYTO, s), [value], where, s, counter)
        if result is not None:
            stmts.append(ast.copy_location(ast.Assign([result], _name(written.id, s)), s))
        return stmts
    if result is not None or not e.args or not isinstance(e.args[0], ast.Name):
        return None
    fn = resolve(e.func)
    if fn is None or functional_form(fn) is None:
        return None
    return _rebinding(e.args[0], _writer_of(e.func, s), e.args[1:], e.keywords, s, counter)


def _array_method(e: ast.Call, resolve: Any) -> bool:
    """``a.<method>(...)`` for an ndarray method that writes ``a``, ``a`` a name the
    function binds or receives (a captured or global one is not rebound here)."""
    f = e.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr in ARRAY_WRITER_METHODS
        and isinstance(f.value, ast.Name)
        and resolve(f.value) is None
    )


def _method_rebinding(s: ast.stmt, e: ast.Call, counter: Any) -> ast.If:
    """``if a is an ndarray: <a's rebinding to the method's form> else: <s>``."""
    f = e.func
    assert isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
    written = f.value
    is_array = ast.Call(
        _name("_ad_isinstance", s),
        [_name(written.id, s), ast.Attribute(_name("_ad_np", s), "ndarray", ast.Load())],
        [],
    )
    form = ast.Call(_name("_ad_method_form", s), [ast.Constant(f.attr)], [])
    body = _rebinding(written, form, e.args, e.keywords, s, counter)
    return ast.copy_location(ast.If(ast.copy_location(is_array, s), body, [s]), s)


def _writer_of(func: ast.expr, like: ast.stmt) -> ast.Call:
    """``_ad_writer(func)``: the functional form of numpy's in-place ``func``."""
    return ast.Call(_name("_ad_writer", like), [func], [])


def _rebinding(
    written: ast.Name,
    form: ast.expr,
    args: list[ast.expr],
    keywords: list[ast.keyword],
    like: ast.stmt,
    counter: Any,
) -> list[ast.stmt]:
    """``_ad_wf<n> = form``; ``written = _ad_wf<n>(written, *args, **keywords)``."""
    wf = f"{WRITER_PREFIX}{next(counter)}"
    call = ast.Call(_name(wf, like), [_name(written.id, like), *args], keywords)
    return [
        ast.copy_location(ast.Assign([_name(wf, like, True)], ast.copy_location(form, like)), like),
        ast.copy_location(ast.Assign([_name(written.id, like, True)], call), like),
    ]


def _out_name(e: ast.expr) -> ast.Name | None:
    """The name in ``out=c`` or ``out=(c,)``."""
    if isinstance(e, ast.Tuple) and len(e.elts) == 1:
        e = e.elts[0]
    return e if isinstance(e, ast.Name) else None


def _numpy_callable(fn: Any) -> bool:
    """A ufunc or a function of numpy's (they take ``out=`` as numpy documents)."""
    import numpy as np

    if isinstance(fn, np.ufunc):
        return True
    module = getattr(fn, "__module__", None) or ""
    return callable(fn) and (module == "numpy" or module.startswith("numpy."))


def _name(id_: str, like: ast.AST, store: bool = False) -> ast.Name:
    return ast.copy_location(ast.Name(id_, ast.Store() if store else ast.Load()), like)
