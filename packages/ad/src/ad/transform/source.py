"""Pass 1, source: find a Python function's definition as an ``ast.FunctionDef``.

Output form: a ``FunctionDef`` without decorators whose line numbers are the
ones in the user's file; a lambda becomes ``def <lambda>(...): return body``.
Several lambdas on one line are told apart by their arguments and, on Python
3.11+, by the column positions recorded in the code object. A lambda's lines
are parsed alone when they can be (completed as a fragment of an expression);
one in a statement's header (``for fn in (lambda w: ..., ...):``, a ``while``
or ``if`` test, a ``with`` item, a decorator) is found in the whole file.

Here: ``get_source``, and the statements typed at Python's plain prompt, read
back from its history. Its parts: ``source_parse`` (parse the lines, find the
``def`` or lambda), ``source_belongs`` (check that the source compiles to the
code run), ``source_registry`` (the trees of generated code, which has no
file), ``source_errors``.
"""

from __future__ import annotations

import ast
import copy
import inspect
import linecache
import types
from dataclasses import dataclass
from typing import Any

from ad.transform.anf_control import COMPREHENSION_NAME, renamed_names
from ad.transform.source_belongs import belongs, shape
from ad.transform.source_errors import changed, no_source
from ad.transform.source_parse import (
    NO_TYPE_PARAMS,
    bounded_block,
    find_def,
    find_lambda,
    last_line,
    parse_block,
    parse_file,
)
from ad.transform.source_registry import generated_tree, is_derived

__all__ = ["FunctionSource", "get_source"]


@dataclass(frozen=True)
class FunctionSource:
    """The parsed definition of a function, and where it came from."""

    tree: ast.FunctionDef
    filename: str
    name: str


#: How many lines of readline history are searched for a function typed at the
#: plain prompt (``<stdin>``), newest first.
_HISTORY_DEPTH = 2000


def _history_lines(code: types.CodeType) -> list[str]:
    """The statement typed at the plain interactive prompt (file ``<stdin>``, whose
    source Python < 3.13 does not keep) that compiled to ``code``, read back from
    the readline history; ``[]`` when none is found. Each interactive statement is
    compiled on its own, numbered from line 1, so ``code``'s lines are lines of
    that statement. A candidate (consecutive history lines, newest first) counts
    only if compiling it gives a code object equal to ``code`` in its bytecode,
    names, constants, arguments and positions: a redefinition, an edited line or
    a line readline dropped (it keeps one of two equal consecutive lines) never
    passes, and then ad refuses rather than differentiate other source."""
    try:
        import readline
    except ImportError:
        return []
    total = readline.get_current_history_length()
    if total <= 0:
        return []
    wanted = shape(code)
    lo = max(1, total - _HISTORY_DEPTH)
    # The statement's last line: its code's (3.11+), or up to a few more where only
    # line starts are recorded (3.10: a closing bracket on a line of its own).
    last = last_line(code) if hasattr(code, "co_positions") else _last_started_line(code)
    sizes = [last] if hasattr(code, "co_positions") else [last, last + 1, last + 2]
    for start in range(total, lo - 1, -1):
        for n in sizes:
            if start + n - 1 > total:
                continue
            items = [readline.get_history_item(i) for i in range(start, start + n)]
            if any(item is None for item in items):
                continue
            lines = [item + "\n" for item in items]
            try:  # the blank line that ends a compound statement is not in the history
                compiled = compile("".join(lines) + "\n", "<stdin>", "single", dont_inherit=True)
            except (SyntaxError, ValueError, OverflowError):
                continue
            if any(shape(c) == wanted for c in _codes(compiled)):
                return lines
    return []


def _last_started_line(code: types.CodeType) -> int:
    """The last line on which ``code`` or a code nested in it starts an instruction."""
    last = max((line for _s, _e, line in code.co_lines() if line is not None), default=0)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            last = max(last, _last_started_line(c))
    return max(last, code.co_firstlineno)


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object nested in it."""
    out = [code]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out.extend(_codes(c))
    return out


def get_source(fn: types.FunctionType) -> FunctionSource:
    """Parse the definition of ``fn``; raises NoSourceError when there is none. A
    lambda made inside a comprehension of generated code reads that
    comprehension's loop variables under their generated names, as its closure
    holds them (``comprehension_names``)."""
    found = _get_source(fn)
    names = comprehension_names(fn.__code__)
    if not names:
        return found
    tree = renamed_names(found.tree, names)
    return FunctionSource(tree, found.filename, found.name)


def comprehension_names(code: types.CodeType) -> dict[str, str]:
    """``{name in the source: name in the closure}`` for the loop variables of
    comprehensions of generated code that ``code`` captures: ``anf_control``
    renamed them (``_ad_c<n>_<name>``, nested comprehensions repeating the
    prefix), and the user's source, which ``get_source`` reads, has the old name.
    Inside the comprehension, that name can mean nothing but its loop variable."""
    out: dict[str, str] = {}
    for free in code.co_freevars:
        name = free
        while (m := COMPREHENSION_NAME.fullmatch(name)) is not None:
            name = m.group(1)
        if name != free and name not in code.co_freevars:
            out[name] = free
    return out


def _get_source(fn: types.FunctionType) -> FunctionSource:
    """``get_source`` before the comprehensions' names are mapped back."""
    code = fn.__code__
    generated = generated_tree(code)
    if generated is not None:
        kept, kept_file, _helpers = generated
        return FunctionSource(copy.deepcopy(kept), kept_file, kept.name)
    filename = code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    from_history = False
    if not lines and filename == "<stdin>":
        lines = _history_lines(code)  # checked against ``code`` already
        from_history = True
    if not lines:
        raise no_source(code, "its source is not available")
    try:
        return _source_in(lines, fn, not (from_history or is_derived(code)))
    except _Mismatch:
        pass
    # The lines linecache kept are not this code's: a module reloaded from a file
    # edited since they were read. Read the file again (entries of notebook cells
    # and of ``__loader__``s are kept as they are).
    linecache.checkcache(filename)
    fresh = linecache.getlines(filename, fn.__globals__)
    if fresh and fresh != lines:
        try:
            return _source_in(fresh, fn, True)
        except _Mismatch:
            pass
    raise changed(code)


class _Mismatch(Exception):
    """The definition found in the source does not compile to the code run."""


def _source_in(lines: list[str], fn: types.FunctionType, check: bool) -> FunctionSource:
    """``fn``'s definition in ``lines``; with ``check``, raises ``_Mismatch`` unless it
    compiles to ``fn.__code__`` (``belongs``)."""
    code = fn.__code__
    filename = code.co_filename
    block = bounded_block(lines, code)
    parsed = parse_block(block, code) if block is not None else None
    whole_file = False
    if parsed is None:
        try:
            block = inspect.getblock(lines[code.co_firstlineno - 1 :])
        except (IndexError, SyntaxError) as e:
            block = None
            if code.co_name != "<lambda>":
                if check:
                    raise _Mismatch from e  # perhaps other lines than the code's
                raise no_source(code, f"its source could not be read ({e})") from e
        parsed = parse_block(block, code) if block is not None else None
        if parsed is None and code.co_name == "<lambda>":
            # A lambda in a statement's header (a ``for``, ``while``, ``with`` or
            # ``if`` line, a decorator), which no piece of the file parses as
            # alone: find it in the whole file, parsed once.
            parsed = parse_file(filename, lines)
            whole_file = True
        if parsed is None:
            if check:
                raise _Mismatch
            raise no_source(code, "its source could not be parsed on its own")
    tree, dedent, extra = parsed
    if code.co_name == "<lambda>":
        node = find_lambda(tree, code, dedent, extra)
        if check and not belongs(lines, fn):
            raise _Mismatch
        if whole_file:
            node = copy.deepcopy(node)  # the cached file's tree stays as parsed
        # Located like the lambda: the only new nodes are these two.
        where: dict[str, Any] = {
            "lineno": node.lineno,
            "col_offset": node.col_offset,
            "end_lineno": node.end_lineno,
            "end_col_offset": node.end_col_offset,
        }
        fdef = ast.FunctionDef(
            name="<lambda>",
            args=node.args,
            body=[ast.Return(value=node.body, **where)],
            decorator_list=[],
            returns=None,
            type_comment=None,
            **where,
            **NO_TYPE_PARAMS,
        )
        return FunctionSource(fdef, filename, "<lambda>")
    found = find_def(tree, code)
    if found is not None:
        if check and not belongs(lines, fn):
            raise _Mismatch
        if isinstance(found, ast.AsyncFunctionDef):
            from ad.errors import UnsupportedSyntaxError

            raise UnsupportedSyntaxError(
                f"{filename}:{found.lineno}: cannot differentiate async function "
                f"{found.name!r}.\nTo fix: differentiate a plain def.",
                filename,
                found.lineno,
            )
        found.decorator_list = []
        return FunctionSource(found, filename, found.name)
    if check:
        raise _Mismatch
    raise no_source(code, "its definition was not found in the source")
