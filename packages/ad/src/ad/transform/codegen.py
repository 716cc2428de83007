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

__all__ = ["compile_primal", "factory_module"]


def factory_module(fwd: ast.FunctionDef, cell_names: list[str]) -> ast.Module:
    """``def _ad_factory(): <cells> = None; <fwd>; return _ad_fwd``."""
    line = fwd.lineno
    body: list[ast.stmt] = []
    if cell_names:
        body.append(
            ast.Assign(
                targets=[ast.Name(id=n, ctx=ast.Store()) for n in cell_names],
                value=ast.Constant(None),
                lineno=line,
                col_offset=0,
            )
        )
    body.append(fwd)
    body.append(ast.Return(value=ast.Name(id="_ad_fwd", ctx=ast.Load()), lineno=line, col_offset=0))
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
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    for node in ast.walk(module):
        # Generated nodes carry only a start line; make every range valid.
        if hasattr(node, "lineno"):
            if getattr(node, "end_lineno", None) is None or node.end_lineno < node.lineno:
                node.end_lineno = node.lineno
                node.end_col_offset = node.col_offset
            elif node.end_lineno == node.lineno and (node.end_col_offset or 0) < node.col_offset:
                node.end_col_offset = node.col_offset
    return module


def compile_primal(module: ast.Module, filename: str) -> types.CodeType:
    """The code object of ``_ad_fwd`` inside the compiled factory module."""
    code = compile(module, filename, "exec", dont_inherit=True)
    factory = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return next(
        c for c in factory.co_consts if isinstance(c, types.CodeType) and c.co_name == "_ad_fwd"
    )
