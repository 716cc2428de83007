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


def _reject(node: ast.AST, filename: str, fname: str) -> UnsupportedSyntaxError:
    line = getattr(node, "lineno", "?")
    return UnsupportedSyntaxError(
        f"{filename}:{line}: in {fname}: {_REJECT[type(node)]}.",
        filename,
        line if isinstance(line, int) else None,
    )


def check_supported(tree: ast.FunctionDef, filename: str) -> ast.FunctionDef:
    """Raise ``UnsupportedSyntaxError`` for the first unsupported construct in ``tree``.

    An explicit stack over ``_fields`` (``ast.NodeVisitor`` is several times
    slower); a nested ``def`` or ``lambda`` contributes only its defaults.
    """
    reject = _REJECT
    stack: list[ast.AST] = list(reversed(tree.body))
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind in reject:
            raise _reject(node, filename, tree.name)
        if kind is ast.FunctionDef or kind is ast.Lambda:
            args = node.args  # type: ignore[attr-defined]
            for d in reversed([*args.defaults, *(d for d in args.kw_defaults if d is not None)]):
                push(d)
            continue
        children: list[ast.AST] = []
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                children.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                children.append(value)
        stack.extend(reversed(children))
    return tree
