"""Pass 6, codegen: compile the generated primal into a code object.

Input: the ``_ad_fwd`` ``FunctionDef`` from ``reverse``. Output: the code
object of ``_ad_fwd`` compiled inside a factory scope that binds the runtime
helpers and the original function's free variables, so the generated code
reads both as closure cells (fast ``LOAD_DEREF``), reads globals from the
original function's module, and reports the user's file and line numbers in
tracebacks.
"""

from __future__ import annotations

import ast
import types

__all__ = ["compile_primal", "factory_module", "locate", "mark_located"]

#: Set on a generated ``FunctionDef`` whose every node already has its location.
_LOCATED = "_ad_located"


def mark_located(fn: ast.FunctionDef) -> None:
    """Record that every node of ``fn`` was built with its location: the one
    ``locate`` would give it (its own, else its nearest located ancestor's)."""
    setattr(fn, _LOCATED, True)


def factory_module(fwd: ast.FunctionDef, cell_names: list[str]) -> ast.Module:
    """``def _ad_factory(): <cells> = None; <fwd>; return _ad_fwd``.

    Every node gets a location; a ``fwd`` marked by ``mark_located`` is not walked.
    """
    line = fwd.lineno
    store, load = ast.Store(), ast.Load()
    body: list[ast.stmt] = []
    if cell_names:
        targets: list[ast.expr] = []
        for n in cell_names:  # ~80 names: positional fields, then the location (cheaper)
            target = ast.Name(n, store)
            target.lineno, target.col_offset = line, 0
            targets.append(target)
        body.append(
            ast.Assign(
                targets=targets,
                value=ast.Constant(None, lineno=line, col_offset=0),
                lineno=line,
                col_offset=0,
            )
        )
    body.append(fwd)
    body.append(
        ast.Return(
            value=ast.Name("_ad_fwd", load, lineno=line, col_offset=0), lineno=line, col_offset=0
        )
    )
    factory = ast.FunctionDef(
        name="_ad_factory",
        args=ast.arguments(
            posonlyargs=[],
            args=[],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        ),
        body=body,
        decorator_list=[],
        returns=None,
        lineno=line,
        col_offset=0,
        **({"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}),
    )
    module = ast.Module(body=[factory], type_ignores=[])
    if not getattr(fwd, _LOCATED, False):
        locate(fwd, line)
    return module


_Name = ast.Name
_AST = ast.AST


def locate(root: ast.AST, line: int) -> None:
    """Give every node a valid location, inheriting its parent's line.

    One iterative pass over ``_fields``: ``ast.fix_missing_locations`` plus a
    range check would walk the (large) generated tree twice, more slowly.
    """
    stack = [(root, line)]
    pop, push = stack.pop, stack.append
    while stack:
        node, ln = pop()
        if "lineno" in node._attributes:
            own = getattr(node, "lineno", None)
            if own is None:
                node.lineno = node.end_lineno = ln
                node.col_offset = node.end_col_offset = 0
            else:
                ln = own
                end = getattr(node, "end_lineno", None)
                if end is None or end < own:
                    node.end_lineno = own
                    node.end_col_offset = node.col_offset
                elif end == own and (getattr(node, "end_col_offset", None) or 0) < node.col_offset:
                    node.end_col_offset = node.col_offset
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, _AST):
                        push((item, ln))
            elif isinstance(value, _AST):
                push((value, ln))


def used_names(root: ast.AST, candidates: dict) -> set[str]:
    """The names in ``candidates`` that ``root`` reads."""
    return {n.id for n in ast.walk(root) if type(n) is _Name and n.id in candidates}


def compile_primal(module: ast.Module, filename: str) -> types.CodeType:
    """The code object of ``_ad_fwd`` inside the compiled factory module."""
    try:
        code = compile(module, filename, "exec", dont_inherit=True)
    except (TypeError, ValueError):
        # A node built without its location (or with an invalid one) although
        # its tree was marked located: fill locations in the slow way, retry.
        factory_def = module.body[0]
        locate(module, factory_def.lineno)  # type: ignore[attr-defined]
        code = compile(module, filename, "exec", dont_inherit=True)
    factory = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return next(
        c for c in factory.co_consts if isinstance(c, types.CodeType) and c.co_name == "_ad_fwd"
    )
