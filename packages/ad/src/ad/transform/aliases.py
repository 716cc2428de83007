"""Pass 4a's aliases: an object written in place through a name that shares it.

``for p in ps: p.v = p.v + x`` writes a value that carries a derivative into the
object ``p`` names, which ``ps`` holds too: reads through ``ps`` afterwards see
the write. The activity analysis follows values forward, from what a statement
reads to what it binds, so it makes ``p`` active but not ``ps`` (built from
constants), whose reads would then run as plain Python and lose the derivative.
This module finds such writes in an ANF body (``holders`` follows the written
object by identity from the write on, ``ad.runtime.state``) and the names the
written one was read out of (``ps``: by an item or attribute read, an iteration,
a copy of the name, a method's result), which carry a derivative from there on.

>>> import ad
>>> class P:
...     def __init__(self, v):
...         self.v = v
>>> def f(x):
...     ps = [P(2.0), P(3.0)]
...     for p in ps:
...         p.v = p.v * x            # n-body style: an object updated through the loop variable
...     return ps[0].v + ps[1].v
>>> ad.gradient(f, 1.5)
(5.0,)
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from ad.transform._nodes import at
from ad.transform.activity import param_names, statements, value_is_active
from ad.transform.anf_base import IN_PLACE_HELPERS

__all__ = [
    "aliased_writes",
    "around",
    "bound_before",
    "follow_before_writes",
    "follow_call",
    "with_body",
    "written_in_place",
]

#: ANF helpers and builtins whose result holds, or is, what their arguments hold
_PASS_ON = frozenset(
    ["_ad_op_getitem", "_ad_getattr", "_ad_unpack", "_ad_funpack", "_ad_aslist", "_ad_follow"]
)
_BUILTINS_PASS_ON = frozenset(["enumerate", "zip", "reversed", "iter", "next"])
#: ANF helpers that build a container of their arguments
_BUILDS = frozenset(["_ad_mk_list", "_ad_mk_dict", "_ad_mk_tuple"])


def aliased_writes(
    fn: ast.FunctionDef, active: set[str], plain: frozenset[str], local: Any, handed: Any
) -> tuple[dict[str, set[str]], set[str]]:
    """({each local name through which ``fn`` writes a value that carries a derivative
    into an object another name may hold: the names that may share that object, read
    out of one another or held by one another, either way}, all those names).

    ``local(name)``: whether ``fn`` binds ``name``; ``handed(s)``: the local names
    statement ``s`` hands to a call that may write into them (``holders._Calls``),
    which count as written there."""
    writes = [(s, written_in_place(s, active, plain) + handed(s)) for s in statements(fn.body)]
    if not any(names or _pushforward_follow(s) for s, names in writes):
        return {}, set()  # nothing written in place (straight-line code): nothing to share
    sources = _sources(fn, local)
    holdings = _holdings(fn, local)
    # where a name's object is given another holder (``ps = [c]``, ``q = c``)
    shared = _shared_at(fn, local)
    order = _order(fn)
    params = set(param_names(fn))
    written: set[str] = set()
    for s, names in writes:
        for name in names:
            if name.startswith("_ad_cap_") or not local(name) or _upstream(name, sources) & params:
                continue  # a parameter's objects are checked as such; a capture's followed
            if sources.get(name) or any(_before(t, s, order) for t in shared.get(name, ())):
                written.add(name)
        if _pushforward_follow(s):
            # a generated pushforward differentiated again (second order): the object
            # its ``_ad_follow`` follows was written through that name
            written |= _names(s.targets[0])  # type: ignore[attr-defined]
    shares = {n: _sharing(n, sources, holdings) - params for n in written}
    return shares, set().union(*shares.values()) - written


def _sharing(name: str, sources: dict[str, set[str]], holdings: dict[str, set[str]]) -> set[str]:
    """The names that may hold ``name``'s object: those it was read out of and the
    containers it was put in (at any remove, either way), and what the former hold."""
    held_by: dict[str, set[str]] = {}
    for holder, held in holdings.items():
        for h in held:
            held_by.setdefault(h, set()).add(holder)
    up: set[str] = set()
    seen, todo = {name}, [name]
    while todo:
        n = todo.pop()
        for m in sources.get(n, ()):
            up.add(m)
            if m not in seen:
                seen.add(m)
                todo.append(m)
        for m in held_by.get(n, ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    todo = list(up)
    while todo:
        for m in holdings.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen - {name}


def written_in_place(s: ast.stmt, active: set[str], plain: frozenset[str]) -> list[str]:
    """``[p]`` when ``s`` writes a value that carries a derivative into ``p``
    in place (``p = _ad_setattr(p, 'v', t)``, ``p = _ad_setitem(p, k, t)``, ...)."""
    if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
        return []
    call = s.value
    if not (isinstance(call.func, ast.Name) and call.func.id in IN_PLACE_HELPERS and call.args):
        return []
    first = call.args[0]
    if not isinstance(first, ast.Name) or not value_is_active(call, active, plain):
        return []
    rest = ast.Call(call.func, call.args[1:], call.keywords)
    return [first.id] if value_is_active(rest, active, plain) else []


def _sources(fn: ast.FunctionDef, local: Any) -> dict[str, set[str]]:
    """For each local name, the local names whose object it may be read out of."""
    out: dict[str, set[str]] = {}
    slices = {
        s.targets[0].id
        for s in statements(fn.body)
        if isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Name)
        and _slice([s.value, s.value])
    }

    methods = {  # a temporary bound to a method read off a local object -> the object
        s.targets[0].id: s.value.args[0].id
        for s in statements(fn.body)
        if isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Name)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id == "_ad_getattr"
        and s.value.args
        and isinstance(s.value.args[0], ast.Name)
    }

    def add(targets: ast.expr, names: set[str]) -> None:
        for t in ast.walk(targets):
            if isinstance(t, ast.Name):
                out.setdefault(t.id, set()).update(n for n in names if n != t.id and local(n))

    for s in statements(fn.body):
        if isinstance(s, ast.For):
            add(s.target, _names(s.iter))
        elif isinstance(s, ast.Assign):
            v = s.value
            if isinstance(v, ast.Name):
                add(s.targets[0], {v.id})
            elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
                f, args = v.func.id, v.args
                if f == "_ad_fcall" and len(args) > 1 and isinstance(args[0], ast.Name):
                    f, args = args[0].id, args[2:]  # a call in a generated pushforward
                key = args[1] if len(args) > 1 else None
                if isinstance(key, ast.Name) and key.id in slices:
                    continue  # a slice of a list: a new list
                if f in _PASS_ON and not _slice(args):
                    add(s.targets[0], _names(args[0]) if args else set())
                elif f == "_ad_fiter" or (
                    f in _BUILTINS_PASS_ON and not local(f) and getattr(builtins, f, None)
                ):
                    add(s.targets[0], set().union(*map(_names, args)))
                elif f in methods:  # a method read off a local object (``p = ps.pop()``)
                    add(s.targets[0], {methods[f]})
    return out


def _slice(args: list[ast.expr]) -> bool:
    """Whether an item read's key is a slice (``s[::-1]``: a new list)."""
    key = args[1] if len(args) > 1 else None
    return isinstance(key, ast.Slice) or (
        isinstance(key, ast.Call) and isinstance(key.func, ast.Name) and key.func.id == "slice"
    )


def _holdings(fn: ast.FunctionDef, local: Any) -> dict[str, set[str]]:
    """For each local name, the local names whose objects the container or object
    it names was given (``ps = [c]``, ``d[k] = c``, ``o.a = c``, ``lst.append(c)``)."""
    out: dict[str, set[str]] = {}
    for s, held in _given(fn, local):
        out.setdefault(s.targets[0].id, set()).update(held)  # type: ignore[attr-defined]
    return out


def _shared_at(fn: ast.FunctionDef, local: Any) -> dict[str, list[ast.stmt]]:
    """For each local name, the statements that give its object another holder: a
    container or object (``ps = [c]``), or another name (``q = c``)."""
    out: dict[str, list[ast.stmt]] = {}
    for s, held in _given(fn, local):
        for n in held:
            out.setdefault(n, []).append(s)
    for s in statements(fn.body):
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Name):
            out.setdefault(s.value.id, []).append(s)
    return out


def _order(fn: ast.FunctionDef) -> dict[int, tuple[int, frozenset[int]]]:
    """For each statement (by id): its place in the source, and the loops around it."""
    out: dict[int, tuple[int, frozenset[int]]] = {}

    def walk(body: list[ast.stmt], loops: frozenset[int]) -> None:
        for s in body:
            out[id(s)] = (len(out), loops)
            inner = loops | {id(s)} if isinstance(s, (ast.For, ast.While)) else loops
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if isinstance(block, list) and not isinstance(s, ast.FunctionDef):
                    walk(block, inner if field == "body" else loops)
            for h in getattr(s, "handlers", None) or ():
                walk(h.body, loops)

    walk(fn.body, frozenset())
    return out


def _before(first: ast.stmt, then: ast.stmt, order: dict) -> bool:
    """Whether ``first`` may run before ``then``: earlier in the source, or in a
    loop around both (a later iteration)."""
    a, b = order.get(id(first)), order.get(id(then))
    if a is None or b is None:
        return True
    return a[0] < b[0] or bool(a[1] & b[1])


def _given(fn: ast.FunctionDef, local: Any) -> list[tuple[ast.stmt, set[str]]]:
    """Each statement binding a container or object it gives local names' objects
    to (a literal, a build, an in-place write), with those names."""
    out: list[tuple[ast.stmt, set[str]]] = []
    for s in statements(fn.body):
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
            continue
        v, held = s.value, set()
        if isinstance(v, (ast.List, ast.Tuple, ast.Dict, ast.Set)):
            held = _names(v)
        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
            f, args = v.func.id, v.args
            if f == "_ad_fcall" and len(args) > 1 and isinstance(args[0], ast.Name):
                f, args = args[0].id, args[2:]  # a call in a generated pushforward
            if f in _BUILDS:
                held = set().union(*map(_names, args))
            elif f in IN_PLACE_HELPERS:
                held = set().union(*map(_names, args[1:]))
        held = {n for n in held if n != s.targets[0].id and local(n)}
        if held:
            out.append((s, held))
    return out


def _upstream(name: str, sources: dict[str, set[str]]) -> set[str]:
    """The names ``sources`` leads to from ``name``, at any remove."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for src in sources.get(todo.pop(), ()):
            if src not in seen and src != name:
                seen.add(src)
                todo.append(src)
    return seen


def bound_before(fn: ast.FunctionDef) -> dict[int, frozenset[str]]:
    """For each statement of ``fn`` (by id): the names certainly bound when it runs
    (the parameters, and what the statements before it in its block and in the
    blocks around it bind; a loop's target in its body)."""
    out: dict[int, frozenset[str]] = {}

    def walk(body: list[ast.stmt], bound: set[str]) -> None:
        bound = set(bound)
        for s in body:
            out[id(s)] = frozenset(bound)
            if isinstance(s, ast.For):
                walk(s.body, bound | _names(s.target))
            for field in ("body", "orelse", "finalbody") if not isinstance(s, ast.For) else ():
                inner = getattr(s, field, None)
                if isinstance(inner, list) and not isinstance(s, ast.FunctionDef):
                    walk(inner, bound)
            if isinstance(s, ast.For):
                walk(s.orelse, bound)
            for h in getattr(s, "handlers", None) or ():
                walk(h.body, bound)
            if isinstance(s, ast.Assign):
                bound |= _names(s.targets[0])
            elif isinstance(s, ast.FunctionDef):
                bound.add(s.name)

    walk(fn.body, set(param_names(fn)))
    return out


def _pushforward_follow(s: ast.stmt) -> bool:
    """``t = _ad_fcall(_ad_follow, ...)``: a follow in a generated pushforward."""
    if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
        return False
    v = s.value
    return (
        isinstance(v.func, ast.Name)
        and v.func.id == "_ad_fcall"
        and bool(v.args)
        and isinstance(v.args[0], ast.Name)
        and v.args[0].id == "_ad_follow"
    )


def _names(e: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}


def follow_before_writes(
    fn: ast.FunctionDef,
    names: dict[str, set[str]],
    active: set[str],
    plain: frozenset[str],
    calls: Any,
) -> ast.FunctionDef:
    """``name = _ad_follow(name)`` before each in-place write of a value that carries
    a derivative into an object ``name`` shares with another name (``aliases``), and
    after it, and after each call ``name`` is handed to, the names bound by then that
    share its object: their reads from there on (a whole list's, ``sum(L)``) go to
    the store, where the write takes them."""

    bound = bound_before(fn)

    def follows(s: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        written = sorted(set(written_in_place(s, active, plain)) & names.keys())
        handed = set(calls.handed(s)[1]) & names.keys()
        after = set().union(*(names[n] for n in {*written, *handed}))
        after = sorted(after & bound.get(id(s), frozenset()))
        return [follow_call(n, n, s.lineno) for n in written], [
            follow_call(n, n, s.lineno) for n in after
        ]

    return around(fn, follows)


def follow_call(target: str, source: str, line: int) -> ast.Assign:
    call = ast.Call(ast.Name("_ad_follow", ast.Load()), [ast.Name(source, ast.Load())], [])
    return at(ast.Assign([ast.Name(target, ast.Store())], at(call, line)), line)


def around(fn: ast.FunctionDef, insert: Any) -> ast.FunctionDef:
    """A copy of ``fn`` with the statements ``insert(s)`` gives, ``(before, after)``,
    around each statement ``s`` of its body and nested blocks (not nested functions)."""

    def rewrite(body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in body:
            before, after = insert(s)
            if not isinstance(s, ast.FunctionDef):
                for field in ("body", "orelse", "finalbody"):
                    inner = getattr(s, field, None)
                    if isinstance(inner, list):
                        setattr(s, field, rewrite(inner))
                for h in getattr(s, "handlers", None) or ():
                    h.body = rewrite(h.body)
            out += [*before, s, *after]
        return out

    return with_body(fn, rewrite(list(fn.body)))


def with_body(fn: ast.FunctionDef, body: list[ast.stmt]) -> ast.FunctionDef:
    """A copy of ``fn`` with another body."""
    new = ast.FunctionDef(**{k: getattr(fn, k) for k in fn._fields})
    new.lineno, new.col_offset = fn.lineno, fn.col_offset
    new.body = body
    return new
