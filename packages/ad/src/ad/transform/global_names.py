"""Pass 1b, global names: lower the ``global`` statement to local variables.

Output form: the input tree (edited in place) with no ``global`` statement at its
own level. A name declared ``global`` and only read needs nothing: it reads the
module's binding as any free name does. A name declared ``global`` and written is
a local variable of the function from here, bound at the start to the module's
value (``_ad_global_get``); each write also rebinds the module's name at once
(``_ad_global_set``, run as plain Python), as Python does, so code that runs
after reads the new value. A rebinding to a value that carries a derivative is
refused, naming the line (``refuse_active_globals``, after activity): the AD
follows no module's names. Nested functions are transformed on their own.

>>> import ad
>>> calls = 0
>>> def f(x):
...     global calls
...     calls += 1               # a counter: plain Python
...     return x * x
>>> ad.gradient(f, 3.0), calls
((6.0,), 1)
"""

from __future__ import annotations

import ast

from ad.errors import UnsupportedSyntaxError
from ad.transform._nodes import at
from ad.transform.activity import statements, value_is_active
from ad.transform.writers import rewrite_statements

__all__ = ["lower_globals", "refuse_active_globals"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def lower_globals(tree: ast.FunctionDef, filename: str) -> ast.FunctionDef:
    """``tree`` with its ``global``
    statements lowered (see the module)."""
    declared = {n for s in _own_nodes(tree.body) if type(s) is ast.Global for n in s.names}
    if not declared:
        return tree
    written = declared & _bound_names(tree.body, filename, tree.name, declared)
    tree = rewrite_statements(tree, lambda s: _lowered(s, written))
    if written:
        line = tree.body[0].lineno if tree.body else tree.lineno
        starts = [_helper_assign(n, "_ad_global_get", line, value=False) for n in sorted(written)]
        tree.body = starts + tree.body
    return tree


def _lowered(s: ast.stmt, written: set[str]) -> list[ast.stmt] | None:
    """``s`` with its writes of ``written`` names mirrored to the module; a
    ``global`` statement dropped (a ``pass`` keeps a block non-empty)."""
    if type(s) is ast.Global:
        return [at(ast.Pass(), s.lineno)]
    if type(s) in (ast.For, ast.With):
        names = _target_names([s.target] if type(s) is ast.For else s.items)  # type: ignore[attr-defined]
        mirror = [_helper_assign(n, "_ad_global_set", s.lineno) for n in sorted(names & written)]
        if mirror:
            s.body = mirror + s.body  # type: ignore[attr-defined]
        return None
    if type(s) in (ast.Assign, ast.AugAssign, ast.AnnAssign):
        targets = s.targets if type(s) is ast.Assign else [s.target]  # type: ignore[attr-defined]
        names = _target_names(targets) & written
        if type(s) is ast.AnnAssign and s.value is None:  # type: ignore[attr-defined]
            return None
        if names:
            return [s] + [_helper_assign(n, "_ad_global_set", s.lineno) for n in sorted(names)]
    return None


def _helper_assign(name: str, helper: str, line: int, value: bool = True) -> ast.stmt:
    """``name = _ad_global_get('name')`` or ``_ad_guard = _ad_global_set('name', name)``."""
    args: list[ast.expr] = [ast.Constant(name)]
    if value:
        args.append(ast.Name(name, ast.Load()))
    call = ast.Call(ast.Name(helper, ast.Load()), args, [])
    target = "_ad_guard" if value else name
    return at(ast.Assign([ast.Name(target, ast.Store())], call), line)


def _own_nodes(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``body``, not those inside nested functions, lambdas and classes."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, _SCOPES):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def _target_names(targets: list) -> set[str]:
    """The plain names that assignment targets (or ``with`` items) bind."""
    out: set[str] = set()
    for t in targets:
        if type(t) is ast.withitem:
            t = t.optional_vars
        if t is None:
            continue
        for n in ast.walk(t):
            if type(n) is ast.Name and type(n.ctx) is ast.Store:
                out.add(n.id)
    return out


def _bound_names(body: list[ast.stmt], filename: str, fname: str, declared: set[str]) -> set[str]:
    """The ``declared`` names ``body`` binds; an ``UnsupportedSyntaxError`` for one
    bound other than by an assignment, a ``for`` target or a ``with ... as``."""
    out: set[str] = set()
    for node in _own_nodes(body):
        kind = type(node)
        if kind is ast.Name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            out.add(node.id)  # type: ignore[attr-defined]
            continue
        names: set[str] = set()
        if kind is ast.NamedExpr:
            names = {node.target.id}  # type: ignore[attr-defined]
        elif kind in (ast.Import, ast.ImportFrom):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            names = {node.name}  # type: ignore[attr-defined]
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            names = {node.name}  # type: ignore[attr-defined]
        elif kind.__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None):
            names = {node.name}  # type: ignore[attr-defined]
        bad = names & declared
        if bad:
            line = getattr(node, "lineno", None)
            raise UnsupportedSyntaxError(
                f"{filename}:{line}: in {fname}: the global name {sorted(bad)[0]!r} is bound "
                f"here by a {kind.__name__} in differentiated code, which is not supported "
                "(an assignment, a `for` target or `with ... as` is). To fix: bind a local "
                "name here and assign it to the global one.",
                filename,
                line,
            )
    return out & declared


def refuse_active_globals(
    fn: ast.FunctionDef, active: set[str], plain: frozenset[str], filename: str
) -> None:
    """Raise ``UnsupportedSyntaxError`` naming the line where ``fn`` (ANF, after
    activity) rebinds a name it declares ``global`` to a value that carries a
    derivative: the AD follows no module's names (DESIGN: a clear error). One that
    carries none (a counter, a flag, a cache of constants) is plain Python."""
    last: dict[str, ast.expr] = {}  # each name's latest assigned value, in program order
    for s in statements(fn.body):
        if type(s) is not ast.Assign:
            continue
        v = s.value
        if type(s.targets[0]) is ast.Name:
            last[s.targets[0].id] = v
        if not (
            type(v) is ast.Call
            and type(v.func) is ast.Name
            and v.func.id == "_ad_global_set"
            and type(v.args[1]) is ast.Name
        ):
            continue
        name = v.args[1].id
        value = last.get(name)
        if name in active and (value is None or value_is_active(value, active, plain)):
            raise UnsupportedSyntaxError(
                f"{filename}:{s.lineno}: in {fn.name}: the global {name!r} (a `global` "
                "statement) is rebound here to a value that carries a derivative, which the "
                "AD does not follow into the module. To fix: keep it in a local variable, or "
                "return it and pass it as an argument to the code that reads it.",
                filename,
                s.lineno,
            )
