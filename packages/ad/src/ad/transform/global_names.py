"""Pass 1b, global names: lower the ``global`` statement to local variables.

Output form: the input tree (edited in place) with no ``global`` statement at its
own level. A name declared ``global`` and only read needs nothing: it reads the
module's binding as any free name does. A name declared ``global`` and written is
a local variable of the function from here, bound at the start to the module's
value (``_ad_global_get``), so that its derivative flows along it to the reads
after a write, as along any variable; each write also rebinds the module's name
at once (``_ad_global_set``, run as plain Python), as Python does, so code that
runs after reads the new value. Nested functions are transformed on their own.

>>> import ad
>>> scale = 1.0
>>> def f(x):
...     global scale
...     scale = 2.0 * x
...     return scale * x        # 2x^2
>>> ad.gradient(f, 3.0), scale
((12.0,), 6.0)
"""

from __future__ import annotations

import ast
import dis
import types
from typing import Any

from ad.errors import UnsupportedSyntaxError
from ad.transform._nodes import at
from ad.transform.activity import param_names, read_and_stored
from ad.transform.aliases import around
from ad.transform.writers import rewrite_statements

__all__ = ["GUARD_HELPERS", "guard_globals", "lower_globals"]

#: the runtime helpers ``guard_globals`` adds (``ad.runtime.constant_reads``)
GUARD_HELPERS = frozenset(["_ad_global_set_active", "_ad_unfollowed_global"])
#: by id of a module's globals: (the globals, the names functions of it declare
#: ``global`` and write), filled as they are transformed
_REBOUND: dict[int, tuple[dict, set[str]]] = {}
#: by code object: the global names its bytecode rebinds (bounded)
_STORES: dict[types.CodeType, frozenset[str]] = {}

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def lower_globals(tree: ast.FunctionDef, filename: str, module: dict) -> ast.FunctionDef:
    """``tree`` (of a function of ``module``, its globals) with its ``global``
    statements lowered (see the module)."""
    declared = {n for s in _own_nodes(tree.body) if type(s) is ast.Global for n in s.names}
    if not declared:
        return tree
    written = declared & _bound_names(tree.body, filename, tree.name, declared)
    if written:
        _REBOUND.setdefault(id(module), (module, set()))[1].update(written)
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


def guard_globals(
    fn: ast.FunctionDef, active: set[str], f: types.FunctionType, filename: str
) -> tuple[ast.FunctionDef, bool]:
    """``fn`` (ANF, after activity) with each rebinding of a global to a value that
    carries a derivative noted in the pass (``_ad_global_set_active``), and a check
    (``_ad_unfollowed_global``) before each statement reading, as a constant, a
    global that a function of the module rebinds; whether it changed."""
    read, stored = read_and_stored(fn)
    local = stored | set(param_names(fn)) | set(f.__code__.co_freevars)
    module = f.__globals__
    names = {n for n in read - local if n in module and _rebound(module, n)}
    changed = False

    def insert(s: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        nonlocal changed
        v = getattr(s, "value", None)
        if (
            type(s) is ast.Assign
            and type(v) is ast.Call
            and type(v.func) is ast.Name
            and v.func.id == "_ad_global_set"
            and type(v.args[1]) is ast.Name
            and v.args[1].id in active
        ):
            v.func.id = "_ad_global_set_active"
            changed = True
        if not names or isinstance(s, ast.FunctionDef):
            return [], []
        compound = isinstance(s, (ast.If, ast.For, ast.While, ast.Try, ast.With))
        reads = read_and_stored(_header(s) if compound else s)[0] & names
        changed = changed or bool(reads)
        return [_guard(n, f"{filename}:{s.lineno}", fn.name, s.lineno) for n in sorted(reads)], []

    out = around(fn, insert)
    return (out, True) if changed else (fn, False)


def _guard(name: str, site: str, fname: str, line: int) -> ast.stmt:
    args: list[ast.expr] = [ast.Constant(name), ast.Constant(site), ast.Constant(fname)]
    call = ast.Call(ast.Name("_ad_unfollowed_global", ast.Load()), args, [])
    return at(ast.Assign([ast.Name("_ad_guard", ast.Store())], call), line)


def _header(s: ast.stmt) -> Any:
    """The part of a compound statement evaluated before its blocks."""
    if isinstance(s, (ast.If, ast.While)):
        return s.test
    if isinstance(s, ast.For):
        return s.iter
    if isinstance(s, ast.With):
        return ast.Tuple([i.context_expr for i in s.items], ast.Load())
    return ast.Constant(None)


def _rebound(module: dict, name: str) -> bool:
    """Whether a function of ``module`` declares ``name`` global and writes it: one
    transformed already, or one whose bytecode rebinds it (not transformed yet)."""
    known = _REBOUND.get(id(module))
    if known is not None and known[0] is module and name in known[1]:
        return True
    for v in list(module.values()):
        code = getattr(v, "__code__", None)
        if type(v) is types.FunctionType and name in code.co_names and name in _stores(code):
            return True
    return False


def _stores(code: types.CodeType) -> frozenset[str]:
    """The global names ``code`` rebinds (``STORE_GLOBAL``)."""
    try:
        return _STORES[code]
    except KeyError:
        pass
    if len(_STORES) >= 4096:
        _STORES.clear()
    out = _STORES[code] = frozenset(
        i.argval for i in dis.get_instructions(code) if i.opname == "STORE_GLOBAL"
    )
    return out
