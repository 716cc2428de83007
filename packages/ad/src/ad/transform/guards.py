"""Guards on writes into objects the transformed function may share with others.

Used by the reverse and forward generators: a write that Python would make
visible through another name (an argument, a plain copy, a late-bound
closure variable) and that the AD cannot follow is refused with a clear error
instead of a silently wrong derivative.
"""

from __future__ import annotations

import ast

from ._nodes import call as _call

__all__ = ["copied_names", "rebound_names", "returned_names", "shared_object_guards"]

_MUTATORS = frozenset(["_ad_setitem", "_ad_setattr", "_ad_append"])


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
    site = ast.Constant(f"{filename}:{line}")
    if fn.startswith("_ad_iop_") and (first.id in params or first.id in aliased):
        check = _call("_ad_shared_update", first, value.args[1], ast.Constant(first.id), site)
    elif (
        fn in _MUTATORS
        and first.id in params
        and first.id not in mutable_params
        and isinstance(last, ast.Name)
        and last.id in active
    ):
        check = _call("_ad_argument_write", last, ast.Constant(first.id), site)
    else:
        return []
    return [ast.Expr(value=check, lineno=line, col_offset=0)]


def copied_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names on either side of a plain copy ``a = b``: they may share one object."""
    out = set()
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
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
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            out.add(node.value.id)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "_ad_retv"
            and isinstance(node.value, ast.Name)
        ):
            out.add(node.value.id)
    return frozenset(out)


def rebound_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names bound more than once in ``fn``'s own scope, counting a binding
    inside a loop (or as a loop target) as several."""
    counts: dict[str, int] = {}

    def visit(stmts: list[ast.stmt], weight: int) -> None:
        for st in stmts:
            if isinstance(st, (ast.For, ast.While)):
                if isinstance(st, ast.For):
                    for n in ast.walk(st.target):
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
                for n in ast.walk(st):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        counts[n.id] = counts.get(n.id, 0) + weight

    visit(fn.body, 1)
    return frozenset(n for n, c in counts.items() if c > 1)
