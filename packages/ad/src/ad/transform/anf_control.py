"""The part of pass 3 (``anf``) for ``try``, ``with`` and the walrus operator.

``try`` and ``with`` keep their shape with their blocks in A-normal form: the
generators differentiate them (see ``tracking``). A walrus ``(x := v)`` becomes
the assignment ``x = v`` where Python evaluates it (``_Normalizer.expr``); a
read of ``x`` earlier in the same statement is taken into a temporary, since
the walrus may rebind ``x`` before the statement uses that read
(``walrus_targets``, ``_Normalizer.atom``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .anf import _Normalizer

__all__ = ["normalize_try", "normalize_with", "walrus_targets"]

_BLOCKS = frozenset(["body", "orelse", "handlers", "finalbody"])


def _pass(line: int) -> ast.Pass:
    return ast.Pass(lineno=line, col_offset=0)


def normalize_try(norm: _Normalizer, s: ast.Try) -> ast.Try:
    """A ``try`` with its blocks normalised; an ``except`` clause's class is kept
    as written (Python evaluates it only when an exception arrives)."""
    line = s.lineno
    handlers = []
    for h in s.handlers:
        body = norm.stmts(h.body) or [_pass(h.lineno)]
        handlers.append(
            ast.ExceptHandler(type=h.type, name=h.name, body=body, lineno=h.lineno, col_offset=0)
        )
    body = norm.stmts(s.body) or [_pass(line)]
    orelse = norm.stmts(s.orelse)
    finalbody = norm.stmts(s.finalbody)
    if not handlers and not finalbody:  # `finally: "text"` normalised to nothing
        finalbody = [_pass(line)]
    norm.lineno = line
    return ast.Try(
        body=body, handlers=handlers, orelse=orelse, finalbody=finalbody, lineno=line, col_offset=0
    )


def normalize_with(norm: _Normalizer, s: ast.With, out: list[ast.stmt]) -> None:
    """``with <atom> [as <name>]: ...`` (``desugar`` left one item): the context
    manager is computed before it; a target other than a name is assigned from a
    temporary first thing in the body."""
    (item,) = s.items
    line = s.lineno
    ctx = norm.atom(item.context_expr, out)
    target = item.optional_vars
    first: list[ast.stmt] = []
    var: ast.expr | None = None
    if isinstance(target, ast.Name):
        var = norm.name(target.id, ast.Store())
    elif target is not None:
        t = norm.fresh()
        var = norm.name(t, ast.Store())
        norm.assign_target(target, norm.name(t), first)
    body = first + norm.stmts(s.body)
    norm.lineno = line
    out.append(
        ast.With(
            items=[ast.withitem(context_expr=ctx, optional_vars=var)],
            body=body or [_pass(line)],
            lineno=line,
            col_offset=0,
        )
    )


def walrus_targets(s: ast.stmt) -> frozenset[str]:
    """The names the walruses in ``s``'s own expressions bind: not those of the
    statements nested in it, nor of nested functions and lambdas; those of its
    comprehensions, which bind in the function's scope."""
    found: set[str] = set()
    stack: list[ast.AST] = []
    for name in s._fields:
        if name in _BLOCKS:
            continue
        v = getattr(s, name, None)
        if type(v) is list:
            stack.extend(x for x in v if isinstance(x, ast.AST))
        elif isinstance(v, ast.AST):
            stack.append(v)
    while stack:
        n = stack.pop()
        if type(n) is ast.NamedExpr:
            found.add(n.target.id)  # type: ignore[attr-defined]
        elif isinstance(n, (ast.Lambda, ast.FunctionDef)):
            continue
        for name in n._fields:
            v = getattr(n, name, None)
            if type(v) is list:
                stack.extend(x for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append(v)
    return frozenset(found)
