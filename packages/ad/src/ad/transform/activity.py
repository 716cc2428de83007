"""Pass 4, activity: which variables can carry a derivative.

Input: an ANF ``FunctionDef`` (see ``anf``). Output: the set of *active*
names — those whose value may depend on a differentiated input (the
parameters, and with ``closure_active`` the captured variables). A statement
none of whose inputs is active runs as plain Python in the generated primal:
no rule lookup, no pullback, no tape. The analysis is flow-insensitive and
iterated to a fixed point, so loops are covered.
"""

from __future__ import annotations

import ast

__all__ = [
    "active_names",
    "all_nodes",
    "loaded_names",
    "param_names",
    "read_and_stored",
    "stored_names",
    "value_is_active",
    "value_reads",
]

#: Builtins whose results never carry a derivative; a call of one (when the
#: name really is the builtin) runs as plain Python and its result is inactive.
NONDIFF_BUILTINS = frozenset(
    [
        "range",
        "len",
        "isinstance",
        "issubclass",
        "type",
        "id",
        "bool",
        "str",
        "repr",
        "hash",
        "print",
        "int",
        "callable",
        "hasattr",
        "ord",
        "chr",
        "format",
    ]
)


_Name, _Load, _Store, _AST = ast.Name, ast.Load, ast.Store, ast.AST
_Call, _Constant = ast.Call, ast.Constant

#: Attributes that describe an array or object rather than hold its values.
NONDIFF_ATTRIBUTES = frozenset(["shape", "ndim", "dtype", "size", "__class__", "__name__"])


def _never_active(value: ast.expr, plain_funcs: frozenset[str]) -> bool:
    """An ANF right-hand side that carries no derivative whatever its inputs."""
    if isinstance(value, (ast.Compare, ast.JoinedStr, ast.Constant)):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in plain_funcs
    )


def value_is_active(value: ast.expr, active: set[str], plain_funcs: frozenset[str]) -> bool:
    """Whether an ANF right-hand side can carry a derivative."""
    if _never_active(value, plain_funcs):
        return False
    return not active.isdisjoint(value_reads(value))


def value_reads(value: ast.expr) -> set[str]:
    """``loaded_names(value)`` for an ANF right-hand side: a call of atoms, the
    common case, is read off its fields without a walk."""
    kind = type(value)
    if kind is _Name:
        return {value.id}  # type: ignore[attr-defined]
    if kind is _Call and type(value.func) is _Name:  # type: ignore[attr-defined]
        out = {value.func.id}  # type: ignore[attr-defined]
        for a in value.args:  # type: ignore[attr-defined]
            ka = type(a)
            if ka is _Name:
                out.add(a.id)
            elif ka is not _Constant:
                return loaded_names(value)
        for k in value.keywords:  # type: ignore[attr-defined]
            ka = type(k.value)
            if ka is _Name:
                out.add(k.value.id)
            elif ka is not _Constant:
                return loaded_names(value)
        return out
    return loaded_names(value)


def param_names(fn: ast.FunctionDef) -> list[str]:
    """Parameter names in signature order: positional, *args, keyword-only, **kwargs."""
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return names


def loaded_names(node: ast.AST) -> set[str]:
    """Every name read anywhere inside ``node`` (nested functions included)."""
    return read_and_stored(node)[0]


def all_nodes(node: ast.AST) -> list[ast.AST]:
    """Every node inside ``node`` (itself included), in no particular order:
    ``ast.walk`` without its generators, for the analyses that build sets."""
    out = [node]
    i = 0
    append = out.append
    while i < len(out):
        n = out[i]
        i += 1
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, _AST):
                        append(x)
            elif isinstance(v, _AST):
                append(v)
    return out


def read_and_stored(node: ast.AST) -> tuple[set[str], set[str]]:
    """The names read and the names written anywhere inside ``node`` (nested
    functions included), in one walk.

    An explicit stack over ``_fields``: this runs for every statement of every
    transformed function, and ``ast.walk`` is several times slower.
    """
    read: set[str] = set()
    stored: set[str] = set()
    stack = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    while stack:
        n = pop()
        if type(n) is _Name:
            ctx = type(n.ctx)
            if ctx is _Load:
                read.add(n.id)
            elif ctx is _Store:
                stored.add(n.id)
            continue
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                extend([x for x in v if isinstance(x, _AST)])
            elif isinstance(v, _AST):
                push(v)
    return read, stored


def stored_names(node: ast.AST) -> list[str]:
    """Every name written anywhere inside ``node`` (with repeats, in no particular order)."""
    return [n.id for n in all_nodes(node) if type(n) is _Name and type(n.ctx) is _Store]


def _targets(t: ast.expr) -> list[str]:
    if type(t) is _Name:
        return [t.id]
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


def _walk_stmts(body: list[ast.stmt]):
    for s in body:
        yield s
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list) and not isinstance(s, ast.FunctionDef):
                yield from _walk_stmts(inner)


def active_names(
    fn: ast.FunctionDef, seeds: set[str], plain_funcs: frozenset[str] = frozenset()
) -> set[str]:
    """The names that may carry a derivative, starting from ``seeds``."""
    # Each statement reduces to (names it reads that could activate it, names
    # it binds); the fixed point then iterates over these small sets only.
    edges: list[tuple[set[str], list[str]]] = []
    for s in _walk_stmts(fn.body):
        if isinstance(s, ast.Assign):
            value = s.value
            # value_is_active(value, <everything>, plain_funcs), reading the names once
            if _never_active(value, plain_funcs):
                continue
            reads = value_reads(value)
            if reads:
                edges.append((reads, _targets(s.targets[0])))
        elif isinstance(s, ast.For):
            edges.append((loaded_names(s.iter), _targets(s.target)))
        elif isinstance(s, ast.FunctionDef):
            edges.append((loaded_names(s), [s.name]))
    active = set(seeds)
    changed = True
    while changed:
        changed = False
        for reads, binds in edges:
            if reads & active:
                for name in binds:
                    if name not in active:
                        active.add(name)
                        changed = True
    return active
