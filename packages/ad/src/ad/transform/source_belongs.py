"""Does the source found belong to the code run? Compile it and compare.

``source`` finds a function's definition in the lines ``linecache`` holds for
its file; ``belongs`` checks that those lines compile to the function's code
object (bytecode, names, constants and positions, as ``shape`` sees them):
ad never differentiates source that Python does not run.
"""

from __future__ import annotations
import __future__

import types

__all__ = ["belongs", "shape"]

#: The compiler flags of ``from __future__ import ...``, as ``co_flags`` keeps them.
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
del _feature


def belongs(lines: list[str], fn: types.FunctionType) -> bool:
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
    mine = shape(code)
    if any(shape(c) == mine for c in candidates):
        return True
    if _plain_loader(fn.__globals__):
        return False
    own = _leaves(code)
    return any(_leaves(c) <= own for c in candidates)


#: The last file compiled by ``belongs``: ``(filename, lines, flags, codes)``,
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


def shape(code: types.CodeType) -> tuple:
    """``code``'s bytecode, names, arguments, constants and positions, with the code
    nested in it: what identifies the source a function was compiled from."""
    consts = tuple(
        shape(c) if isinstance(c, types.CodeType) else (type(c), repr(c)) for c in code.co_consts
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
