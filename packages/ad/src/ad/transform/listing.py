"""The generated code as Python source, each statement marked with its source line.

``adjoint_source`` shows what the reverse pipeline generates for a function
(``ad.code_adjoint`` prints it): the primal ``_ad_fwd`` with its adjoint
``_ad_back``, and the runtime helpers they read. ``annotate`` writes one
statement with its ``# line N`` comment; forward mode uses it for the
pushforward's source.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from ad.transform.bindings import REVERSE
from ad.transform.build import PURE_PREFIX, rename_private, reverse_pipeline
from ad.transform.codegen import used_names

__all__ = ["adjoint_source", "annotate"]


def adjoint_source(
    f: types.FunctionType, closure_active: bool = False, pure: bool = False, lengths: tuple = ()
) -> str:
    """The generated primal and adjoint as Python source, with source line comments
    (``lengths``: of the tuples ``f`` unpacks by ``*``, see ``cache.star_lengths``)."""
    fr, fwd = reverse_pipeline(f, closure_active, pure=pure, lengths=lengths)
    filename = fr.filename
    if pure:
        rename_private(fwd, REVERSE)
    lines: list[str] = [f"# generated from {filename}"]
    for node in fwd.body:
        annotate(node, lines, 0)
    used = sorted(used_names(fwd, REVERSE))
    header = f"def _ad_fwd({ast.unparse(fwd.args)}):"
    return "\n".join([lines[0], f"# helpers: {', '.join(used)}", header, *lines[1:]])


def annotate(node: ast.stmt, out: list[str], depth: int) -> None:
    """Unparse ``node`` at indent ``depth + 1`` with '# line N' comments."""
    pad = "    " * (depth + 1)
    line = getattr(node, "lineno", None)
    comment = f"  # line {line}" if line else ""
    if isinstance(node, (ast.If, ast.For, ast.While, ast.FunctionDef)) and not (
        isinstance(node, ast.FunctionDef) and node.name not in ("_ad_back", PURE_PREFIX + "back")
    ):
        head = ast.unparse(node).splitlines()[0]
        out.append(f"{pad}{head}{comment}")
        for child in node.body:
            annotate(child, out, depth + 1)
        orelse: Any = getattr(node, "orelse", [])
        if orelse:
            out.append(f"{pad}else:")
            for child in orelse:
                annotate(child, out, depth + 1)
        return
    if isinstance(node, ast.Try):
        out.append(f"{pad}try:{comment}")
        for child in node.body:
            annotate(child, out, depth + 1)
        for handler in node.handlers:
            head = ast.unparse(handler).splitlines()[0]
            out.append(f"{pad}{head}")
            for child in handler.body:
                annotate(child, out, depth + 1)
        for label, block in (("else", node.orelse), ("finally", node.finalbody)):
            if block:
                out.append(f"{pad}{label}:")
                for child in block:
                    annotate(child, out, depth + 1)
        return
    if isinstance(node, ast.With):
        out.append(f"{pad}{ast.unparse(node).splitlines()[0]}{comment}")
        for child in node.body:
            annotate(child, out, depth + 1)
        return
    text = ast.unparse(node).splitlines()
    out.append(f"{pad}{text[0]}{comment}")
    out.extend(pad + t for t in text[1:])
