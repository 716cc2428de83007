"""Pass 1, source: find a Python function's definition as an ``ast.FunctionDef``.

Output form: a ``FunctionDef`` without decorators whose line numbers are the
ones in the user's file; a lambda becomes ``def <lambda>(...): return body``.
Several lambdas on one line are told apart by their arguments and, on Python
3.11+, by the column positions recorded in the code object. A lambda's lines
are parsed alone when they can be (completed as a fragment of an expression);
one in a statement's header (``for fn in (lambda w: ..., ...):``, a ``while``
or ``if`` test, a ``with`` item, a decorator) is found in the whole file.
"""

from __future__ import annotations
import __future__

import ast
import copy
import inspect
import linecache
import re
import textwrap
import types
import weakref
from dataclasses import dataclass
from typing import Any

from ad.errors import NoSourceError
from ad.transform.codegen import locate

__all__ = [
    "FunctionSource",
    "constant_freevars",
    "get_source",
    "mark_derived",
    "register_generated",
]


@dataclass(frozen=True)
class FunctionSource:
    """The parsed definition of a function, and where it came from."""

    tree: ast.FunctionDef
    filename: str
    name: str


# Code that the transform itself generated (a pushforward), by code object: its
# FunctionDef, file, and the free variables that are runtime helpers (constants).
# By ``id(code)`` -> a weak reference to it, and the entry: the entry leaves with
# its code. ``_GENERATED_BY_HASH`` finds an equal code object (the same tree
# compiled again: a generated function nested in a function ad transforms).
_GENERATED: dict[int, tuple[weakref.ref, tuple[ast.FunctionDef, str, frozenset[str]]]] = {}
_GENERATED_BY_HASH: dict[int, tuple[int, ...]] = {}


def _generated(code: types.CodeType) -> tuple[ast.FunctionDef, str, frozenset[str]] | None:
    hit = _GENERATED.get(id(code))
    if hit is not None and hit[0]() is code:
        return hit[1]
    for i in _GENERATED_BY_HASH.get(hash(code), ()):
        hit = _GENERATED.get(i)
        if hit is not None and hit[0]() == code:
            return hit[1]
    return None


def _unregister(
    i: int, h: int, generated: dict = _GENERATED, by_hash: dict = _GENERATED_BY_HASH
) -> Any:
    def forget(ref: weakref.ref) -> None:
        hit = generated.get(i)
        if hit is not None and hit[0] is ref:
            generated.pop(i, None)
            left = tuple(j for j in by_hash.get(h, ()) if j != i)
            if left:
                by_hash[h] = left
            else:
                by_hash.pop(h, None)

    return forget


#: Code objects the transform compiled from the user's own source: the functions
#: defined inside a transformed function (its generated code defines them from
#: the parsed tree). Their source is the file's by construction (``get_source``
#: does not check them again); by identity, weakly, as ``_GENERATED``.
_DERIVED: dict[int, weakref.ref] = {}


def _forget_derived(i: int, derived: dict = _DERIVED) -> Any:
    def forget(ref: weakref.ref) -> None:
        if derived.get(i) is ref:
            derived.pop(i, None)

    return forget


def mark_derived(code: types.CodeType) -> None:
    """Record the code objects nested in generated ``code`` (see ``_DERIVED``)."""
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            i = id(c)
            ref = _DERIVED.get(i)
            if ref is None or ref() is not c:
                _DERIVED[i] = weakref.ref(c, _forget_derived(i))
            mark_derived(c)


def _derived(code: types.CodeType) -> bool:
    ref = _DERIVED.get(id(code))
    return ref is not None and ref() is code


def register_generated(
    code: types.CodeType, tree: ast.FunctionDef, filename: str, helpers: frozenset[str]
) -> None:
    """Remember the tree ``code`` was compiled from, so that generated code can
    itself be differentiated (reverse mode over a pushforward: nested AD).

    The copy is located now, once: the passes that transform it again build on
    located input (see ``anf``)."""
    kept = _renamed_temporaries(copy.deepcopy(tree))
    locate(kept, kept.lineno)
    i, h = id(code), hash(code)
    _GENERATED[i] = (weakref.ref(code, _unregister(i, h)), (kept, filename, helpers))
    _GENERATED_BY_HASH[h] = (*_GENERATED_BY_HASH.get(h, ()), i)


_TEMPORARY = re.compile(r"_ad_(t|nl|ft)\d+")


def _renamed_temporaries(tree: ast.FunctionDef) -> ast.FunctionDef:
    """Rename the normaliser's temporaries (``_ad_t1``...) so that normalising the
    generated code again cannot mint a name it already uses."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and _TEMPORARY.fullmatch(node.id):
            node.id = "_ad_g" + node.id[3:]
        elif isinstance(node, ast.arg) and _TEMPORARY.fullmatch(node.arg):
            node.arg = "_ad_g" + node.arg[3:]
    return tree


def constant_freevars(code: types.CodeType) -> frozenset[str]:
    """The free variables of generated code that are runtime helpers, not user data."""
    entry = _generated(code)
    return entry[2] if entry is not None else frozenset()


def _no_source(code: types.CodeType, why: str) -> NoSourceError:
    where = f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
    if code.co_filename == "<stdin>":  # the plain prompt of Python < 3.13 (or a pipe)
        return NoSourceError(
            f"cannot differentiate {where}: {why}. Python's plain prompt keeps no source "
            "before 3.13, and the readline history does not hold this definition unchanged "
            "(readline drops the second of two equal consecutive lines, and the history "
            "may be off or trimmed).\nTo fix: use the prompt of Python 3.13+, IPython or "
            "Jupyter, which keep the source; or define the function in a file and import "
            "it; or register an rrule for it with rulescore."
        )
    return NoSourceError(
        f"cannot differentiate {where}: {why}.\nTo fix: define it in a file (code run "
        "by python -c, exec or eval keeps no source), or register an rrule for it with "
        "rulescore."
    )


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
    wanted = _shape(code)
    lo = max(1, total - _HISTORY_DEPTH)
    # The statement's last line: its code's (3.11+), or up to a few more where only
    # line starts are recorded (3.10: a closing bracket on a line of its own).
    last = _last_line(code) if hasattr(code, "co_positions") else _last_started_line(code)
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
            if any(_shape(c) == wanted for c in _codes(compiled)):
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
    """Parse the definition of ``fn``; raises NoSourceError when there is none."""
    code = fn.__code__
    generated = _generated(code)
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
        raise _no_source(code, "its source is not available")
    try:
        return _source_in(lines, fn, not (from_history or _derived(code)))
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
    raise _changed(code)


class _Mismatch(Exception):
    """The definition found in the source does not compile to the code run."""


def _changed(code: types.CodeType) -> NoSourceError:
    where = f"{code.co_filename}:{code.co_firstlineno}"
    return NoSourceError(
        f"cannot differentiate {code.co_name} ({where}): its source in {code.co_filename} "
        "is not the code Python is running. The file was edited after the function was "
        "compiled (a module changed on disk and not reloaded, or a function kept from "
        "before a reload), and ad never differentiates source that Python does not run.\n"
        "To fix: reload the module (importlib.reload(module), or IPython's %autoreload) "
        "and take the function from it again, or restart the interpreter; or undo the edit."
    )


def _source_in(lines: list[str], fn: types.FunctionType, check: bool) -> FunctionSource:
    """``fn``'s definition in ``lines``; with ``check``, raises ``_Mismatch`` unless it
    compiles to ``fn.__code__`` (``_belongs``)."""
    code = fn.__code__
    filename = code.co_filename
    block = _bounded_block(lines, code)
    parsed = _parse_block(block, code) if block is not None else None
    whole_file = False
    if parsed is None:
        try:
            block = inspect.getblock(lines[code.co_firstlineno - 1 :])
        except (IndexError, SyntaxError) as e:
            block = None
            if code.co_name != "<lambda>":
                if check:
                    raise _Mismatch from e  # perhaps other lines than the code's
                raise _no_source(code, f"its source could not be read ({e})") from e
        parsed = _parse_block(block, code) if block is not None else None
        if parsed is None and code.co_name == "<lambda>":
            # A lambda in a statement's header (a ``for``, ``while``, ``with`` or
            # ``if`` line, a decorator), which no piece of the file parses as
            # alone: find it in the whole file, parsed once.
            parsed = _parse_file(filename, lines)
            whole_file = True
        if parsed is None:
            if check:
                raise _Mismatch
            raise _no_source(code, "its source could not be parsed on its own")
    tree, dedent, extra = parsed
    if code.co_name == "<lambda>":
        node = _find_lambda(tree, code, dedent, extra)
        if check and not _belongs(lines, fn):
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
            **_NO_TYPE_PARAMS,
        )
        return FunctionSource(fdef, filename, "<lambda>")
    found = _find_def(tree, code)
    if found is not None:
        if check and not _belongs(lines, fn):
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
    raise _no_source(code, "its definition was not found in the source")


# --- does the source found belong to the code run? ------------------------------

#: The compiler flags of ``from __future__ import ...``, as ``co_flags`` keeps them.
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
del _feature


def _belongs(lines: list[str], fn: types.FunctionType) -> bool:
    """Whether ``lines`` (the source file, as linecache has it) is the source of
    ``fn.__code__``: compiled whole, as Python compiles a module, it has a code
    object of the same name and first line with the same bytecode, names,
    constants and positions. A module whose syntax tree an import hook rewrote
    (pytest's assertions) only has to keep the source's names and constants.
    Source that does not compile alone (a fragment, a notebook cell with
    top-level ``await``) is given the benefit of the doubt, as before this check."""
    code = fn.__code__
    found = _compiled_file(code.co_filename, lines, code.co_flags & _FUTURE_FLAGS)
    if found is None:
        return True
    candidates = found.get((code.co_name, code.co_firstlineno), ())
    if not candidates:
        return False
    mine = _shape(code)
    if any(_shape(c) == mine for c in candidates):
        return True
    if _plain_loader(fn.__globals__):
        return False
    own = _leaves(code)
    return any(_leaves(c) <= own for c in candidates)


#: The last file compiled by ``_belongs``: ``(filename, lines, flags, codes)``,
#: published whole (one assignment of a tuple).
_COMPILED: list = [(None, None, 0, None)]


def _compiled_file(filename: str, lines: list[str], flags: int) -> dict | None:
    """Every code object compiled from ``lines``, by ``(name, first line)``; None
    when they do not compile as a module."""
    last_name, last_lines, last_flags, codes = _COMPILED[0]
    if last_name == filename and last_lines is lines and last_flags == flags:
        return codes
    try:
        module = compile("".join(lines), filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, RecursionError):
        codes = None
    else:
        codes = {}
        todo = [module]
        while todo:
            c = todo.pop()
            for k in c.co_consts:
                if isinstance(k, types.CodeType):
                    codes.setdefault((k.co_name, k.co_firstlineno), []).append(k)
                    todo.append(k)
    _COMPILED[0] = (filename, lines, flags, codes)
    return codes


def _shape(code: types.CodeType) -> tuple:
    """``code``'s bytecode, names, arguments, constants and positions, with the code
    nested in it: what identifies the source a function was compiled from."""
    consts = tuple(
        _shape(c) if isinstance(c, types.CodeType) else (type(c), repr(c)) for c in code.co_consts
    )
    if hasattr(code, "co_positions"):
        where: tuple = tuple(code.co_positions())
    else:
        where = tuple(code.co_lines())
    return (
        code.co_name,
        code.co_firstlineno,
        code.co_code,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        consts,
        where,
    )


def _leaves(code: types.CodeType) -> set:
    """The names and the constants (other than code) of ``code`` and the code in it."""
    out: set = set(code.co_names) | set(code.co_varnames) | set(code.co_cellvars)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _leaves(c)
        else:
            out.add((type(c), repr(c)))
    return out


def _plain_loader(globals_: dict) -> bool:
    """Whether the module was compiled from its source as it is (no import hook
    that rewrites syntax trees): the standard loaders, or none (a notebook cell)."""
    loader = globals_.get("__loader__")
    if loader is None or "__file__" not in globals_:
        return True
    return type(loader).__module__ in (
        "importlib._bootstrap_external",
        "_frozen_importlib_external",
        "importlib.machinery",
    )


#: ``type_params=[]`` where ``ast.FunctionDef`` has the field (3.12+).
_NO_TYPE_PARAMS: dict[str, Any] = (
    {"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}
)

#: The last file parsed whole (``_parse_file``): its name, its lines, its tree,
#: published whole (one assignment of a tuple: threads never see a mix).
_FILE: list = [(None, None, None)]


def _parse_file(filename: str, lines: list[str]) -> tuple[ast.Module, int, int] | None:
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


def _parse_block(block: list[str], code: types.CodeType) -> tuple[ast.Module, int, int] | None:
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


def _last_line(code: types.CodeType) -> int:
    """The last source line of ``code`` and of the functions defined inside it."""
    positions = code.co_positions()  # type: ignore[attr-defined]  # 3.11+: callers check
    last = max((end for _l, end, _c, _e in positions if end is not None), default=0)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            last = max(last, _last_line(c))
    return last


def _bounded_block(lines: list[str], code: types.CodeType) -> list[str] | None:
    """A function's lines, bounded by the code object's own positions (Python 3.11+):
    cheaper than tokenizing from its first line to find where the block ends. A
    lambda's lines may be a fragment of a statement (``_parse`` completes it).
    None where positions are missing: the caller tokenizes."""
    if not hasattr(code, "co_positions"):
        return None
    last = _last_line(code)
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


def _find_def(tree: ast.AST, code: types.CodeType) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
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


def _find_lambda(tree: ast.AST, code: types.CodeType, dedent: int, extra: int) -> ast.Lambda:
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
        raise _no_source(code, "several lambdas on its line look the same; give it a name with def")
    raise _no_source(code, "the lambda was not found in its source line")
