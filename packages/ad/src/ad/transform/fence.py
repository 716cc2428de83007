"""Pass 2, fence: reject syntax the transform does not differentiate.

Output form: the input tree, unchanged, or an ``UnsupportedSyntaxError`` that
names the construct, the file and the line, and says what to do instead.
Nested ``def``/``lambda`` bodies are not checked here: they are transformed
on their own when called. ``try``, ``with``, ``match`` and the walrus pass
(``desugar``, ``anf`` and ``tracking`` handle them), except a ``return``,
``break`` or ``continue`` leaving a ``finally`` block, which discards the
exception in flight.
"""

from __future__ import annotations

import ast

from ad.errors import UnsupportedSyntaxError

__all__ = ["check_supported"]

_REJECT: dict[type, str] = {
    ast.Yield: "`yield` (generators) cannot be differentiated. To fix: collect the values "
    "in a list and return it, or give the generator's consumer an rrule",
    ast.YieldFrom: "`yield from` cannot be differentiated. To fix: collect the values in a "
    "list and return it, or give the generator's consumer an rrule",
    ast.Await: "`await` cannot be differentiated. To fix: await outside the "
    "differentiated function and differentiate a synchronous one",
    ast.AsyncFor: "`async for` cannot be differentiated. To fix: collect the values first "
    "and loop over them with a plain `for` in a synchronous function",
    ast.AsyncWith: "`async with` cannot be differentiated. To fix: use a plain `with` in a "
    "synchronous function",
    ast.AsyncFunctionDef: "async functions cannot be differentiated. To fix: differentiate "
    "a plain def",
    ast.Nonlocal: "`nonlocal` writes are not differentiated; return the new value instead",
    ast.ClassDef: "class definitions inside differentiated code are not supported; "
    "define the class at module level",
    ast.Delete: "`del` of a name or an attribute is not supported in differentiated code "
    "(`del xs[i]`, `del xs[a:b]` and `del d[k]` are). To fix: rebind the name "
    "(x = None) or leave it",
}
if hasattr(ast, "TryStar"):
    _REJECT[ast.TryStar] = (
        "`try`/`except*` (exception groups) is not differentiated. To fix: catch the "
        "group with a plain `except ExceptionGroup`, or move the try outside the "
        "differentiated function"
    )

#: What a ``return``, ``break`` or ``continue`` leaving a ``finally`` block would do.
_FINALLY_EXIT = (
    "`{what}` in a `finally` block discards the exception being raised (and any "
    "return value), which the derivative cannot follow. To fix: assign the result "
    "in the finally block and {fix} after the try statement"
)


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
        if kind in reject and not (
            kind is ast.Delete and all(type(t) is ast.Subscript for t in node.targets)  # type: ignore[attr-defined]
        ):
            raise _reject(node, filename, tree.name)
        if kind is ast.Try and node.finalbody:  # type: ignore[attr-defined]
            _check_finally(node.finalbody, filename, tree.name)  # type: ignore[attr-defined]
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


def _check_finally(body: list[ast.stmt], filename: str, fname: str) -> None:
    """Refuse a ``return``, ``break`` or ``continue`` that leaves a ``finally`` block
    (one inside a loop of the block belongs to that loop, one in a nested def to it)."""
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in body]
    while stack:
        node, in_loop = stack.pop()
        kind = type(node)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
            continue
        what = None
        if kind is ast.Return:
            what, fix = "return", "return it"
        elif kind in (ast.Break, ast.Continue) and not in_loop:
            what = "break" if kind is ast.Break else "continue"
            fix = f"{what}"
        if what is not None:
            line = getattr(node, "lineno", None)
            msg = _FINALLY_EXIT.format(what=what, fix=fix)
            raise UnsupportedSyntaxError(f"{filename}:{line}: in {fname}: {msg}.", filename, line)
        is_loop = kind is ast.For or kind is ast.While
        for child in ast.iter_child_nodes(node):
            # A loop's ``else`` is not inside the loop: a break there leaves what
            # the loop itself is in.
            in_else = is_loop and any(child is x for x in node.orelse)  # type: ignore[attr-defined]
            stack.append((child, in_loop or (is_loop and not in_else)))
