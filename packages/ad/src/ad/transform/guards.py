"""Guards on writes into objects the transformed function may share with others.

Used by the reverse and forward generators: a write that Python would make
visible through another name (an argument, a plain copy, a late-bound
closure variable) and that the AD cannot follow is refused with a clear error
instead of a silently wrong derivative.
"""

from __future__ import annotations

import ast

from ._nodes import at
from ._nodes import call as _call
from .activity import all_nodes, stored_names

__all__ = ["copied_names", "rebound_names", "returned_names", "shared_object_guards"]

_MUTATORS = frozenset(["_ad_setitem", "_ad_setattr", "_ad_append"])
_Assign, _Return, _If, _For, _While = ast.Assign, ast.Return, ast.If, ast.For, ast.While
_Name, _Store, _Constant, _Call = ast.Name, ast.Store, ast.Constant, ast.Call
_Tuple, _List, _Dict, _Compare, _UnaryOp = ast.Tuple, ast.List, ast.Dict, ast.Compare, ast.UnaryOp


def shared_object_guards(
    value: ast.expr,
    active: set[str],
    params: frozenset[str],
    mutable_params: frozenset[str],
    aliased: frozenset[str],
    filename: str,
    line: int,
) -> list[ast.stmt]:
    """Run-time checks before a write into an object that others may share.

    * ``x op= y`` updates an array in place in Python, so every name bound to
      it sees the change, while the AD computes ``x op y`` out of place. Where
      ``x`` may be shared (an argument, or bound by a plain copy) that would
      silently change the program: ``_ad_shared_update`` refuses arrays.
    * ``arg[k] = v`` (or ``.append``, attribute writes) into an argument the
      function does not return: the caller would not see the change in the
      backward pass; ``_ad_argument_write`` refuses a value that may carry a
      derivative.
    """
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.args):
        return []
    fn, first, last = value.func.id, value.args[0], value.args[-1]
    if not isinstance(first, ast.Name):
        return []
    if fn.startswith("_ad_iop_") and (first.id in params or first.id in aliased):
        check = _call(
            "_ad_shared_update",
            first,
            value.args[1],
            at(ast.Constant(first.id), line),
            at(ast.Constant(f"{filename}:{line}"), line),
            line=line,
        )
    elif (
        fn in _MUTATORS
        and first.id in params
        and first.id not in mutable_params
        and isinstance(last, ast.Name)
        and last.id in active
    ):
        check = _call(
            "_ad_argument_write",
            last,
            at(ast.Constant(first.id), line),
            at(ast.Constant(f"{filename}:{line}"), line),
            line=line,
        )
    else:
        return []
    return [ast.Expr(value=check, lineno=line, col_offset=0)]


def _statements(body: list[ast.stmt], out: list[ast.AST]) -> list[ast.AST]:
    """Every statement in ``body``, nested ones included (an expression holds
    none, so only compound statements are opened); for a nested ``def`` and
    any statement ANF does not produce, every node inside it."""
    for st in body:
        kind = type(st)
        if kind is _Assign or kind is _Return:
            out.append(st)
        elif kind is _If or kind is _For or kind is _While:
            out.append(st)
            _statements(st.body, out)  # type: ignore[attr-defined]
            _statements(st.orelse, out)  # type: ignore[attr-defined]
        else:
            out.extend(all_nodes(st))
    return out


def copied_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names on either side of a plain copy ``a = b``: they may share one object."""
    out = set()
    for node in _statements(fn.body, []):
        if (
            type(node) is _Assign
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
        ):
            out.add(node.targets[0].id)
            out.add(node.value.id)
    return frozenset(out)


def returned_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names the function returns: a parameter it mutates and returns is fine,
    the caller rebinds it (``buf = fill(buf, v)``)."""
    out = set()
    for node in _statements(fn.body, []):
        if type(node) is _Return and isinstance(node.value, ast.Name):
            out.add(node.value.id)
        elif (
            type(node) is _Assign
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "_ad_retv"
            and isinstance(node.value, ast.Name)
        ):
            out.add(node.value.id)
    return frozenset(out)


def _atom_stores(nodes: list) -> list[str] | None:
    """The names written by a list of atoms (none, in ANF), or None if one is not an atom."""
    out = []
    for x in nodes:
        kind = type(x)
        if kind is _Name:
            if type(x.ctx) is _Store:
                out.append(x.id)
        elif kind is not _Constant and x is not None:
            return None
    return out


def _assign_stores(st: ast.Assign) -> list[str]:
    """``stored_names(st)`` for an ANF assignment, without walking its atoms."""
    v = st.value
    kind = type(v)
    if kind is _Call:
        children = [v.func, *v.args, *[k.value for k in v.keywords]]
    elif kind is _Tuple or kind is _List:
        children = v.elts
    elif kind is _Dict:
        children = [*v.keys, *v.values]
    elif kind is _Compare:
        children = [v.left, *v.comparators]
    elif kind is _UnaryOp:
        children = [v.operand]
    else:
        children = [v]
    found = _atom_stores(children)
    if found is None:
        return stored_names(st)
    for t in st.targets:
        if type(t) is _Name:
            if type(t.ctx) is _Store:
                found.append(t.id)
        elif type(t) is _Tuple and all(type(e) is _Name for e in t.elts):
            found.extend(e.id for e in t.elts if type(e.ctx) is _Store)  # type: ignore[attr-defined]
        else:
            found.extend(stored_names(t))
    return found


def rebound_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names bound more than once in ``fn``'s own scope, counting a binding
    inside a loop (or as a loop target) as several."""
    counts: dict[str, int] = {}

    def visit(stmts: list[ast.stmt], weight: int) -> None:
        for st in stmts:
            if isinstance(st, (ast.For, ast.While)):
                if isinstance(st, ast.For):
                    for n in all_nodes(st.target):
                        if isinstance(n, ast.Name):
                            counts[n.id] = counts.get(n.id, 0) + 2
                visit(st.body, 2)
                visit(st.orelse, weight)
            elif isinstance(st, ast.If):
                visit(st.body, weight)
                visit(st.orelse, weight)
            elif isinstance(st, ast.FunctionDef):
                counts[st.name] = counts.get(st.name, 0) + weight
            else:
                for name in _assign_stores(st) if type(st) is _Assign else stored_names(st):
                    counts[name] = counts.get(name, 0) + weight

    visit(fn.body, 1)
    return frozenset(n for n, c in counts.items() if c > 1)
