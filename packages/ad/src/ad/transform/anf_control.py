"""The part of pass 3 (``anf``) for ``try``, ``with``, the walrus operator and
the scope of a comprehension.

``try`` and ``with`` keep their shape with their blocks in A-normal form: the
generators differentiate them (see ``tracking``). A walrus ``(x := v)`` becomes
the assignment ``x = v`` where Python evaluates it (``Expressions.expr``); a
read of ``x`` earlier in the same statement is taken into a temporary, since
the walrus may rebind ``x`` before the statement uses that read
(``walrus_targets``, ``Expressions.atom``). A comprehension is lowered to a
loop in the function's scope, so the names it binds are renamed first: they
are its own, and must not overwrite the function's variables of the same name
(a walrus inside binds in the function, as in Python: it is not renamed).
"""

from __future__ import annotations

import ast
import copy
import re
from typing import TypeVar

from ad.transform.anf_base import Normalizer

__all__ = ["COMPREHENSION_NAME", "ControlForms", "renamed_names", "walrus_targets"]

_BLOCKS = frozenset(["body", "orelse", "handlers", "finalbody"])
_N = TypeVar("_N", bound=ast.AST)


def _pass(line: int) -> ast.Pass:
    return ast.Pass(lineno=line, col_offset=0)


class ControlForms(Normalizer):
    """``try``, ``with`` and a comprehension's scope, for ``anf._Normalizer``."""

    def normalize_try(self, s: ast.Try) -> ast.Try:
        """A ``try`` with its blocks normalised; an ``except`` clause's class is kept
        as written (Python evaluates it only when an exception arrives)."""
        line = s.lineno
        handlers = []
        for h in s.handlers:
            body = self.stmts(h.body) or [_pass(h.lineno)]
            handlers.append(
                ast.ExceptHandler(
                    type=h.type, name=h.name, body=body, lineno=h.lineno, col_offset=0
                )
            )
        body = self.stmts(s.body) or [_pass(line)]
        orelse = self.stmts(s.orelse)
        finalbody = self.stmts(s.finalbody)
        if not handlers and not finalbody:  # `finally: "text"` normalised to nothing
            finalbody = [_pass(line)]
        self.lineno = line
        return ast.Try(
            body=body,
            handlers=handlers,
            orelse=orelse,
            finalbody=finalbody,
            lineno=line,
            col_offset=0,
        )

    def normalize_with(self, s: ast.With, out: list[ast.stmt]) -> None:
        """``with <atom> [as <target>]: ...`` (``desugar`` left one item): the context
        manager is computed before it, its ``__enter__`` called as a differentiated
        call, and the target assigned from that value first thing in the body."""
        (item,) = s.items
        line = s.lineno
        ctx = self.atom(item.context_expr, out)
        # __enter__ as a differentiated call (``runtime.context_managers``): a user
        # class's carries the derivative of what built the manager to the target
        value = self.bind(self.helper_call("_ad_enter", [ctx]), out)
        managed = self.bind(self.helper_call("_ad_entered", [ctx, value]), out)
        first: list[ast.stmt] = []
        if item.optional_vars is not None:
            self.assign_target(item.optional_vars, value, first)
        body = first + self.stmts(s.body)
        self.lineno = line
        out.append(
            ast.With(
                items=[ast.withitem(context_expr=managed, optional_vars=None)],
                body=body or [_pass(line)],
                lineno=line,
                col_offset=0,
            )
        )

    def scoped_comprehension(self, e: ast.expr) -> ast.expr:
        """A copy of the comprehension ``e`` whose loop targets are fresh names
        (``_ad_c<n>_<name>``), read under them everywhere in it but its first
        iterable, which Python evaluates in the enclosing scope; ``e`` itself when it
        binds no name. A nested lambda's own parameters keep their names."""
        gens = e.generators  # type: ignore[attr-defined]
        bound = {n.id for g in gens for n in ast.walk(g.target) if type(n) is ast.Name}
        if not bound:
            return e
        self.counter += 1
        renamed = {name: f"_ad_c{self.counter}_{name}" for name in sorted(bound)}
        # A lambda in ``e`` captures its loop variables under these names; its
        # source, read back when it is called, reads them under its own
        # (``source.comprehension_names`` maps them back, by COMPREHENSION_NAME).
        new = copy.copy(e)
        first = copy.copy(gens[0])
        first.target = renamed_names(gens[0].target, renamed)
        first.ifs = [renamed_names(x, renamed) for x in gens[0].ifs]
        new.generators = [first, *[renamed_names(g, renamed) for g in gens[1:]]]  # type: ignore[attr-defined]
        for name in ("elt", "key", "value"):
            if hasattr(e, name):
                setattr(new, name, renamed_names(getattr(e, name), renamed))
        return new


#: A name ``scoped_comprehension`` gave a comprehension's loop variable; group 1
#: is the name it had (itself such a name in a nested comprehension).
COMPREHENSION_NAME = re.compile(r"_ad_c\d+_(.+)")


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


_FUNCTIONS = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)


def renamed_names(node: _N, renamed: dict[str, str]) -> _N:
    """A deep copy of ``node`` with the names in ``renamed`` renamed, except where a
    nested function's parameter of the same name hides them."""
    node = copy.deepcopy(node)
    stack: list[tuple[ast.AST, dict[str, str]]] = [(node, renamed)]
    while stack:
        n, names = stack.pop()
        if type(n) is ast.Name:
            n.id = names.get(n.id, n.id)  # type: ignore[attr-defined]
            continue
        if isinstance(n, _FUNCTIONS):
            a = n.args  # type: ignore[attr-defined]
            own = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
            inner = {k: v for k, v in names.items() if k not in own}
            for d in [*a.defaults, *(d for d in a.kw_defaults if d is not None)]:
                stack.append((d, names))  # evaluated outside the function
            body = n.body if type(n.body) is list else [n.body]  # type: ignore[attr-defined]
            stack.extend((b, inner) for b in body)
            continue
        for name in n._fields:
            v = getattr(n, name, None)
            if type(v) is list:
                stack.extend((x, names) for x in v if isinstance(x, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append((v, names))
    return node
