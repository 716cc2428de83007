"""Pass 2, fence: reject syntax the transform does not differentiate.

Output form: the input tree, unchanged, or an ``UnsupportedSyntaxError`` that
names the construct, the file and the line, and says what to do instead.
Nested ``def``/``lambda`` bodies are not checked here: they are transformed
on their own when called.
"""

from __future__ import annotations

import ast

from ..errors import UnsupportedSyntaxError

__all__ = ["check_supported"]

_REJECT: dict[type, str] = {
    ast.Yield: "`yield` (generators) cannot be differentiated; return a list instead",
    ast.YieldFrom: "`yield from` cannot be differentiated; return a list instead",
    ast.Await: "`await` cannot be differentiated; differentiate a synchronous function",
    ast.AsyncFor: "`async for` cannot be differentiated",
    ast.AsyncWith: "`async with` cannot be differentiated",
    ast.AsyncFunctionDef: "async functions cannot be differentiated",
    ast.Global: "`global` writes are not differentiated; pass the value in and return it",
    ast.Nonlocal: "`nonlocal` writes are not differentiated; return the new value instead",
    ast.Try: "`try` blocks are not differentiated; move the try/except outside the "
    "differentiated function, or wrap the code in a function with an rrule",
    ast.With: "`with` blocks are not differentiated; move the `with` outside the "
    "differentiated function",
    ast.ClassDef: "class definitions inside differentiated code are not supported; "
    "define the class at module level",
    ast.NamedExpr: "the walrus operator `:=` is not supported; use a separate assignment",
    ast.Delete: "`del` is not supported in differentiated code",
}
if hasattr(ast, "TryStar"):
    _REJECT[ast.TryStar] = _REJECT[ast.Try]
if hasattr(ast, "Match"):
    _REJECT[ast.Match] = "`match` statements are not supported; use if/elif"


class _Fence(ast.NodeVisitor):
    def __init__(self, filename: str, fname: str) -> None:
        self.filename = filename
        self.fname = fname

    def generic_visit(self, node: ast.AST) -> None:
        why = _REJECT.get(type(node))
        if why is not None:
            line = getattr(node, "lineno", "?")
            raise UnsupportedSyntaxError(
                f"{self.filename}:{line}: in {self.fname}: {why}.",
                self.filename,
                line if isinstance(line, int) else None,
            )
        super().generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # Nested functions are fenced when they themselves are differentiated.
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)


def check_supported(tree: ast.FunctionDef, filename: str) -> ast.FunctionDef:
    """Raise ``UnsupportedSyntaxError`` for the first unsupported construct in ``tree``."""
    fence = _Fence(filename, tree.name)
    for stmt in tree.body:
        fence.visit(stmt)
    return tree
