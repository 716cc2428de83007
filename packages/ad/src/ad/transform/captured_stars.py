"""Unpack a captured tuple at the transform: ``f(w, *data)`` as ``f(w, data[0], data[1])``.

``lambda *p: loss(*p, *data)`` and ``lambda w: loss(w, *data)`` pass data the
function captured to another function. Left a ``*`` call,
the callee is called through the generic star path: it cannot be inlined, and
the arguments it is given are known only when it runs. When the name holds a
tuple as the transform is built, ``unpack_captured`` writes the call with that many
subscripts instead, so every later pass sees an ordinary call (inlining, the
inactive-argument mask, fusion across the call).

The transform is used only while the name still holds a tuple of that length
(a ``Length`` guard, checked with the helpers' guards, see ``inline_guards``); any
other value gets the general transform, which keeps the ``*``. A global tuple
keeps its ``*``: a function the caller calls may rebind it and put it back.

>>> import ast
>>> def make(data):
...     def f(w):
...         return g(w, *data)
...     return f
>>> f = make((1.0, 2.0))
>>> tree = ast.parse("def f(w):\\n    return g(w, *data)").body[0]
>>> new, guards = unpack_captured(tree, f)
>>> ast.unparse(new.body[0])
'return g(w, data[0], data[1])'
>>> guards
((Length(name='data'), 2),)
"""

from __future__ import annotations

import ast
import copy
import types
from typing import NamedTuple

__all__ = ["MAX_ENTRIES", "Length", "length", "starred_parameters", "unpack_captured"]

#: A longer tuple keeps its ``*``: unpacked, its reads would cost more than the call.
MAX_ENTRIES = 16


class Length(NamedTuple):
    """A guard's key: the length of the tuple a captured variable holds."""

    name: str


def length(name: str, f: types.FunctionType) -> int | None:
    """The length of the tuple the variable ``name`` that ``f`` captures holds, or
    None when it holds something else or nothing. A global's is not read: any
    function ``f`` calls may rebind a global for the time of a call and put it back,
    which no guard before and after the call sees."""
    code = f.__code__
    if name not in code.co_freevars:
        return None
    try:
        value = f.__closure__[code.co_freevars.index(name)].cell_contents  # type: ignore[index]
    except ValueError:  # an empty cell
        return None
    return len(value) if type(value) is tuple else None


def unpack_captured(
    tree: ast.FunctionDef, f: types.FunctionType, lengths: tuple = ()
) -> tuple[ast.FunctionDef, tuple]:
    """``tree`` (``f``'s definition) with each ``*name`` call argument whose name
    ``f`` captures, holding a tuple now, written as subscripts; and the guards ``((Length(name), n), ...)`` it holds under.

    ``lengths``: ``((parameter, n), ...)`` (``starred_parameters``' indices): the
    parameters unpacked by ``*`` hold tuples of these lengths at the call this
    transform is for (the transform's cache key holds them, so no guard is
    needed), and ``*q`` becomes ``n`` names. ``*args`` itself becomes those
    parameters (``def f(*q)`` called with two arguments: ``def f(q_ad_star0,
    q_ad_star1)``, and ``q = (q_ad_star0, q_ad_star1)`` where ``q`` is read
    otherwise); any other parameter is unpacked once where the function starts
    (``q_ad_star0, q_ad_star1 = q``: one read of the tuple, whose cotangent is
    built once)."""
    starred = _starred(tree)
    if not starred:
        return tree, ()
    bound = _bound(tree)
    params = _parameters(tree)
    taken = {n.id for n in ast.walk(tree) if type(n) is ast.Name} | set(params)
    spread: dict[str, list[str]] = {}
    for i, n in lengths:
        names = []
        for k in range(n):
            new = f"{params[i]}_ad_star{k}"
            while new in taken:
                new += "_"
            names.append(new)
        spread[params[i]] = names
    found: dict[str, int] = {}

    class Expand(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.Call:
            self.generic_visit(node)
            if not any(type(a) is ast.Starred for a in node.args):
                return node
            args: list[ast.expr] = []
            for a in node.args:
                name = a.value.id if type(a) is ast.Starred and type(a.value) is ast.Name else ""  # type: ignore[attr-defined]
                if name in spread:
                    args.extend(ast.copy_location(ast.Name(n, ast.Load()), a) for n in spread[name])
                    continue
                n = _unpackable(a, bound, f)
                if n is None:
                    args.append(a)
                    continue
                found[name] = n
                args.extend(
                    ast.copy_location(
                        ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(i), ast.Load()), a
                    )
                    for i in range(n)
                )
            node.args = args
            return node

        def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
            return node  # a nested function's own scope: left as written

        visit_FunctionDef = visit_Lambda  # type: ignore[assignment]

    if not spread and not any(_unpackable(a, bound, f) is not None for a in starred):
        return tree, ()
    new = copy.deepcopy(tree)
    new.body = [Expand().visit(s) for s in new.body]
    vararg = tree.args.vararg.arg if tree.args.vararg else None
    prologue = []
    for param, names in spread.items():
        if param == vararg:  # its entries are the parameters now
            new.args = copy.copy(new.args)
            new.args.args = [*new.args.args, *(ast.arg(n) for n in names)]
            new.args.vararg = None
            if any(type(n) is ast.Name and n.id == param for n in _walk_body(new)):
                value: ast.expr = ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load())
                prologue.append(ast.Assign([ast.Name(param, ast.Store())], value))
        elif names:
            targets = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
            prologue.append(ast.Assign([targets], ast.Name(param, ast.Load())))
    new.body = [ast.copy_location(st, tree) for st in prologue] + new.body
    return new, tuple((Length(name), n) for name, n in found.items())


def _walk_body(tree: ast.FunctionDef) -> list[ast.AST]:
    return [n for st in tree.body for n in ast.walk(st)]


def _starred(tree: ast.FunctionDef) -> list[ast.Starred]:
    return [n for n in ast.walk(tree) if type(n) is ast.Starred]


def starred_parameters(tree: ast.FunctionDef) -> tuple[int, ...]:
    """The parameters ``tree`` unpacks by ``*`` in a call and never binds again, by
    index among ``_parameters`` (its positional ones, then ``*args``): at a call
    where one holds a tuple, ``unpack_captured`` may write it out."""
    params = _parameters(tree)
    names = {a.value.id for a in _starred(tree) if type(a.value) is ast.Name}
    if not names & set(params):
        return ()
    stored = _stored(tree)
    return tuple(sorted(params.index(n) for n in names if n in params and n not in stored))


def _parameters(tree: ast.FunctionDef) -> list[str]:
    a = tree.args
    names = [p.arg for p in a.posonlyargs + a.args]
    return [*names, a.vararg.arg] if a.vararg else names


def _stored(tree: ast.FunctionDef) -> set[str]:
    """The names ``tree``'s body binds or declares anywhere (nested functions' included)."""
    out: set[str] = set()
    for s in tree.body:
        out |= _bound(s)
    return out


def _unpackable(a: ast.expr, bound: set[str], f: types.FunctionType) -> int | None:
    if type(a) is not ast.Starred or type(a.value) is not ast.Name:
        return None
    name = a.value.id
    if name in bound:
        return None
    n = length(name, f)
    return n if n is not None and n <= MAX_ENTRIES else None


def _bound(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds or declares ``global``/``nonlocal`` anywhere, its
    parameters and nested functions' included (a name any of them binds is left
    alone)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if type(node) is ast.Name and type(node.ctx) is not ast.Load:
            out.add(node.id)
        elif type(node) is ast.arg:
            out.add(node.arg)
        elif type(node) in (ast.Global, ast.Nonlocal):
            out.update(node.names)  # type: ignore[attr-defined]
        elif type(node) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            out.add(node.name)  # type: ignore[attr-defined]
        elif type(node) is ast.alias:
            out.add((node.asname or node.name).split(".")[0])
    return out
