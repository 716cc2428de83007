"""Small constructors of AST nodes, and names shared by the generating passes."""

from __future__ import annotations

import ast

from .anf import BINOPS

__all__ = [
    "BINOP_NODES",
    "FAST_OPS",
    "TYPE_PARAMS",
    "Z",
    "assign",
    "call",
    "name",
    "plain",
    "tuple_",
]

#: The name the generated code uses for ``ZeroTangent()``.
Z = "_ad_Z"
#: Operators with an inline fast path for Python numbers (``_ad_fast_<op>``).
FAST_OPS = frozenset(["add", "sub", "mul", "truediv", "pow", "neg"])
BINOP_NODES = {v: k for k, v in BINOPS.items()}
TYPE_PARAMS = {"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}


def name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def assign(target: str | ast.expr, value: ast.expr, line: int) -> ast.Assign:
    tgt = name(target, True) if isinstance(target, str) else target
    return ast.Assign(targets=[tgt], value=value, lineno=line, col_offset=0)


def call(fn: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=name(fn), args=list(args), keywords=[])


def tuple_(elts: list[ast.expr], store: bool = False) -> ast.Tuple:
    return ast.Tuple(elts=elts, ctx=ast.Store() if store else ast.Load())


def plain(s: ast.Assign) -> ast.Assign:
    """An inactive statement as ordinary syntax: helper calls back to operators."""
    v = s.value
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and not v.keywords:
        fn, args = v.func.id, v.args
        new: ast.expr | None = None
        if fn == "_ad_op_getitem" and len(args) == 2:
            new = ast.Subscript(value=args[0], slice=args[1], ctx=ast.Load())
        elif fn.startswith("_ad_op_") and len(args) == 2 and fn[7:] in BINOP_NODES:
            new = ast.BinOp(left=args[0], op=BINOP_NODES[fn[7:]](), right=args[1])
        elif fn == "_ad_getattr" and len(args) == 2 and isinstance(args[1], ast.Constant):
            new = ast.Attribute(value=args[0], attr=args[1].value, ctx=ast.Load())
        if new is not None:
            return ast.Assign(targets=s.targets, value=new, lineno=s.lineno, col_offset=0)
    return s
