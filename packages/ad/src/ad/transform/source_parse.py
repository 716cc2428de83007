"""Parse a function's lines and find in them the ``def`` or lambda of its code.

``bounded_block`` takes a function's lines by its code object's positions,
``parse_block`` parses them with the file's line numbers (completing a
lambda's fragment of an expression), ``parse_file`` parses the whole file (a
lambda in a statement's header). ``find_def`` and ``find_lambda`` pick the node
that compiled to the code object: by name and first line, then for a lambda by
its parameters and the positions of its instructions.
"""

from __future__ import annotations

import ast
import textwrap
import types
from typing import Any

from ad.transform.source_errors import no_source

__all__ = [
    "NO_TYPE_PARAMS",
    "bounded_block",
    "find_def",
    "find_lambda",
    "last_line",
    "parse_block",
    "parse_file",
]

#: ``type_params=[]`` where ``ast.FunctionDef`` has the field (3.12+).
NO_TYPE_PARAMS: dict[str, Any] = (
    {"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}
)

#: The last file parsed whole (``parse_file``): its name, its lines, its tree,
#: published whole (one assignment of a tuple: threads never see a mix).
_FILE: list = [(None, None, None)]


def parse_file(filename: str, lines: list[str]) -> tuple[ast.Module, int, int] | None:
    """The whole file, parsed (columns as in the file: nothing dedented or
    prepended); None when it does not parse. The last one is kept: a file's
    lambdas in headers are usually transformed one after another."""
    last_name, last_lines, last_parsed = _FILE[0]
    if last_name == filename and last_lines is lines:
        return last_parsed
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    parsed = (tree, 0, 0)
    _FILE[0] = (filename, lines, parsed)
    return parsed


#: Up to this many lines above a function, its block is parsed behind blank lines.
_MAX_PAD = 5000


def parse_block(block: list[str], code: types.CodeType) -> tuple[ast.Module, int, int] | None:
    """The parsed block, with the file's line numbers; the columns every line lost
    to dedenting; and the characters put in front of the block's first line (a
    parsed column is the file's, less the first, plus the second on that line)."""
    raw = "".join(block)
    text = textwrap.dedent(raw)
    # Columns in the code object are relative to the file; dedenting shifted them.
    dedent = (len(raw) - len(raw.lstrip(" \t"))) - (len(text) - len(text.lstrip(" \t")))
    # Blank lines in front give every node its line in the file as it is parsed,
    # cheaper than ``ast.increment_lineno`` walking the tree afterwards, unless
    # there are very many of them (each costs ~20 ns to parse).
    offset = code.co_firstlineno - 1
    pad = offset if offset <= _MAX_PAD else 0
    parsed = _parse(text, code.co_name == "<lambda>", pad)
    if parsed is None:
        return None
    tree, extra = parsed
    if pad != offset:
        ast.increment_lineno(tree, offset)
    return tree, dedent, extra


def last_line(code: types.CodeType) -> int:
    """The last source line of ``code`` and of the functions defined inside it."""
    positions = code.co_positions()  # type: ignore[attr-defined]  # 3.11+: callers check
    last = max((end for _l, end, _c, _e in positions if end is not None), default=0)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            last = max(last, last_line(c))
    return last


def bounded_block(lines: list[str], code: types.CodeType) -> list[str] | None:
    """A function's lines, bounded by the code object's own positions (Python 3.11+):
    cheaper than tokenizing from its first line to find where the block ends. A
    lambda's lines may be a fragment of a statement (``_parse`` completes it).
    None where positions are missing: the caller tokenizes."""
    if not hasattr(code, "co_positions"):
        return None
    last = last_line(code)
    first = code.co_firstlineno
    if last < first or last > len(lines):
        return None
    return lines[first - 1 : last]


def _parse(text: str, fragment: bool, offset: int) -> tuple[ast.Module, int] | None:
    """The parsed block, its lines numbered from ``offset + 1``, and how many
    characters were prepended to its first line (None: it does not parse). Only a
    lambda's block (``fragment``) may be a piece of a larger expression; a ``def``
    block parses whole or not at all."""
    pad = "\n" * offset
    try:
        return ast.parse(pad + text), 0
    except SyntaxError:
        if not fragment:
            return None
    # A lambda inside a larger expression: the block may be an unbalanced
    # fragment. Try growing prefixes of the first logical lines.
    lines = text.splitlines(keepends=True)
    for n in range(len(lines), 0, -1):
        chunk = "".join(lines[:n]).rstrip()
        candidates = (
            (chunk, 0),
            (chunk.rstrip(",;:"), 0),
            ("(" + chunk + ")", 1),
            ("{" + chunk.rstrip(",") + "}", 1),  # an entry of a dict display
            ("_(" + chunk.rstrip(",") + ")", 2),  # arguments of a call, keywords included
        )
        for candidate, extra in candidates:
            try:
                return ast.parse(pad + candidate), extra
            except SyntaxError:
                continue
    return None


def find_def(tree: ast.AST, code: types.CodeType) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The ``def`` that compiled to ``code``: the one of its name that starts on its
    first line (its first decorator's line, if any), never merely the first one of
    that name (a function redefined, or nested functions of the same name)."""
    top = (getattr(tree, "body", None) or [None])[0]  # the block parsed is the def's, usually
    if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) and _starts(top, code):
        return top
    named = [
        n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name
    ]
    for n in named:
        if _starts(n, code):
            return n
    return named[0] if len(named) == 1 else None


def _starts(node: ast.FunctionDef | ast.AsyncFunctionDef, code: types.CodeType) -> bool:
    """Whether ``node`` is named as ``code`` and starts on its first line (its first
    decorator's, if any)."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return node.name == code.co_name and first == code.co_firstlineno


def _code_signature(code: types.CodeType) -> tuple:
    """What a lambda compiles to, independent of where its names resolve."""
    consts = tuple(c for c in code.co_consts if not isinstance(c, types.CodeType))
    return consts, frozenset(code.co_names) | frozenset(code.co_freevars)


def _same_code(node: ast.Lambda, code: types.CodeType) -> bool:
    try:
        module = compile(ast.fix_missing_locations(ast.Expression(body=node)), "<lambda>", "eval")
    except (SyntaxError, ValueError, TypeError):
        return True
    inner = next((c for c in module.co_consts if isinstance(c, types.CodeType)), None)
    return inner is not None and _code_signature(inner) == _code_signature(code)


def _positions(code: types.CodeType) -> frozenset[tuple[int, int, int, int]]:
    """Where ``code``'s real instructions are (RESUME and friends have no span)."""
    return frozenset(
        (line, col, end, endcol)
        for line, end, col, endcol in code.co_positions()  # type: ignore[attr-defined]  # 3.11+
        if line is not None
        and end is not None
        and col is not None
        and endcol is not None
        and (end, endcol) > (line, col)
    )


def _compiled_positions(node: ast.Lambda) -> frozenset[tuple[int, int, int, int]] | None:
    """The positions of what ``node`` compiles to, in the parsed tree's columns."""
    try:
        module = compile(ast.Expression(body=node), "<lambda>", "eval")
    except (SyntaxError, ValueError, TypeError):
        return None
    inner = next((c for c in module.co_consts if isinstance(c, types.CodeType)), None)
    return _positions(inner) if inner is not None else None


def find_lambda(tree: ast.AST, code: types.CodeType, dedent: int, extra: int) -> ast.Lambda:
    """The lambda that compiled to ``code``: among those on its first line, told
    apart by parameter names, then by the positions its instructions carry
    (Python 3.11+: the candidate that compiles to the same positions), never by
    a name or by the first match (nested lambdas share their line and often their
    parameter names)."""
    first_line = code.co_firstlineno
    argnames = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first_line]
    same_args = [
        n
        for n in lambdas
        if tuple(a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs) == argnames
    ]
    if len(same_args) == 1:
        return same_args[0]
    candidates = same_args or lambdas
    if hasattr(code, "co_positions") and len(candidates) > 1:
        # The code's positions in the parsed tree's columns: dedenting shifted
        # every line, the fragment's completion (``_parse``) only the first.
        own = frozenset(
            (
                line,
                col - dedent + (extra if line == first_line else 0),
                end,
                endcol - dedent + (extra if end == first_line else 0),
            )
            for line, col, end, endcol in _positions(code)
        )
        scored = []
        for n in candidates:
            theirs = _compiled_positions(n)
            if theirs is not None:
                scored.append((len(own ^ theirs), n))
        if scored:
            best = min(s for s, _n in scored)
            matched = [n for s, n in scored if s == best]
            if len(matched) == 1 and best < len(own):
                return matched[0]
    if len(candidates) > 1:
        # No column positions (Python 3.10): compare what each candidate compiles to.
        candidates = [n for n in candidates if _same_code(n, code)] or candidates
    if candidates:
        if len(candidates) == 1:
            return candidates[0]
        raise no_source(code, "several lambdas on its line look the same; give it a name with def")
    raise no_source(code, "the lambda was not found in its source line")
