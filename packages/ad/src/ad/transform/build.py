"""The build of a function's reverse transform: the front, ``reverse``, then codegen.

``build_reverse`` runs the whole reverse pipeline for a function and compiles
the factory of its primal (``_ad_fwd``), binding as closure cells the runtime
helpers the generated tree reads (``_CELLS``: one cell per helper, shared by
every generated function). ``build_pure`` builds the *pure* form, itself
differentiable (reverse over reverse): its generated names get ``PURE_PREFIX``
and its trees are registered with ``source_registry`` so that the pipeline can
read them again. ``cache`` calls these on a miss.
"""

from __future__ import annotations

import ast
import copy
import types
from typing import Any

from ad.transform._nodes import NO_VALUE, loaded_ids
from ad.transform.bindings import REVERSE
from ad.transform.codegen import compile_primal, factory_module
from ad.transform.compiled import Compiled, signature_of
from ad.transform.pipeline import Front, front
from ad.transform.reverse import generate
from ad.transform.source_registry import register_generated

__all__ = [
    "PURE_PREFIX",
    "Transformed",
    "build_pure",
    "build_reverse",
    "reverse_pipeline",
    "rename_private",
]

Transformed = Compiled  # the reverse pipeline's product

#: The prefix of the pure form's own names: apart from the runtime helpers'
#: (``_ad_rcall``...), none may collide with what differentiating it generates.
PURE_PREFIX = "_ar_"


def reverse_pipeline(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    pure: bool = False,
    inactive: int = 0,
    inline: bool = True,
    lengths: tuple = (),
) -> tuple[Front, ast.FunctionDef]:
    """The front of ``f`` and the primal ``reverse.generate`` makes of it."""
    # The pure form (second order) is differentiated again: it calls its helpers.
    fr = front(f, closure_active, as_init, inactive, inline and not pure, not pure, lengths)
    freevars = f.__code__.co_freevars
    fwd = generate(
        fr.anf,
        fr.active,
        freevars,
        closure_active,
        fr.filename,
        fr.plain,
        pure=pure,
        callees=fr.callees,
        scalars=fr.scalars,
    )
    return fr, fwd


_CELLS: dict[str, types.CellType] = {}


def _helper_cells(helpers: dict[str, Any]) -> dict[str, types.CellType]:
    """One closure cell per runtime helper, shared by every generated function."""
    if len(_CELLS) != len(helpers):
        _CELLS.update({n: types.CellType(v) for n, v in helpers.items() if n not in _CELLS})
    return _CELLS


def build_reverse(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    inline: bool = True,
    lengths: tuple = (),
) -> Transformed:
    """Run the whole reverse pipeline for ``f`` and compile the result (``inline``:
    with its small helpers inlined, see ``inlining``; ``lengths``: see
    ``captured_stars.unpack_captured``)."""
    fr, fwd = reverse_pipeline(
        f, closure_active, as_init, inactive=inactive, inline=inline, lengths=lengths
    )
    freevars = f.__code__.co_freevars
    # The factory binds the helpers the generated tree reads: names of the ANF body
    # it reuses, and those the generator built (``loaded_ids``), known without a
    # walk. Binding all ~80 would cost as much to compile as a small function.
    reads = fr.reads | loaded_ids()
    helpers = [n for n in REVERSE if n in reads and n not in freevars]
    code = compile_primal(factory_module(fwd, helpers + list(freevars)), fr.filename)
    if _reads_as_global(code, REVERSE):  # pragma: no cover - a name built another way
        cell_names = [n for n in REVERSE if n not in freevars] + list(freevars)
        code = compile_primal(factory_module(fwd, cell_names), fr.filename)
    elides = any(a.arg == NO_VALUE for a in fwd.args.kwonlyargs)
    return Compiled(
        code=code,
        helper_cells=_helper_cells(REVERSE),
        spec=signature_of(fr.anf),
        elides=elides,
        guards=fr.guards,
        starred=fr.starred,
    )


def _reads_as_global(code: types.CodeType, names: dict[str, Any]) -> bool:
    """Whether ``code`` or a function defined in it reads one of ``names`` as a
    global (the factory bound it as no cell)."""
    if not names.keys().isdisjoint(code.co_names):
        return True
    return any(_reads_as_global(c, names) for c in _nested_codes(code))


def build_pure(f: types.FunctionType, closure_active: bool, as_init: bool | int) -> Transformed:
    """The *pure* reverse transform of ``f`` (``reverse.generate``'s ``pure`` form),
    whose primal and adjoint are registered with ``source_registry``."""
    fr, fwd = reverse_pipeline(f, closure_active, as_init, pure=True)
    anf, filename = fr.anf, fr.filename
    rename_private(fwd, REVERSE)
    freevars = f.__code__.co_freevars
    cell_names = [n for n in REVERSE if n not in freevars] + list(freevars)
    pristine = copy.deepcopy(fwd)  # factory_module fills in locations in place
    module = factory_module(fwd, cell_names)
    code = compile_primal(module, filename)
    helpers = frozenset(REVERSE)
    register_generated(code, pristine, filename, helpers)
    backs = [c for c in _nested_codes(code) if c.co_name == PURE_PREFIX + "back"]
    trees = [n for n in _preorder_defs(pristine.body) if n.name == PURE_PREFIX + "back"]
    if len(backs) != len(trees):  # pragma: no cover - the compiler's order is fixed
        raise AssertionError("pure transform: adjoint definitions and code objects differ")
    for c, t in zip(backs, trees):
        register_generated(c, t, filename, helpers)
    return Compiled(code=code, helper_cells=_helper_cells(REVERSE), spec=signature_of(anf))


def rename_private(fn: ast.FunctionDef, helpers: dict[str, Any]) -> None:
    """Give the generated names in ``fn`` (all but the helpers') ``PURE_PREFIX``."""

    def fix(name: str) -> str:
        if name.startswith("_ad_") and name not in helpers:
            return PURE_PREFIX + name[4:]
        return name

    for node in ast.walk(fn):
        kind = type(node)
        if kind is ast.Name:
            node.id = fix(node.id)  # type: ignore[attr-defined]
        elif kind is ast.arg:
            node.arg = fix(node.arg)  # type: ignore[attr-defined]
        elif kind is ast.FunctionDef and node is not fn:
            node.name = fix(node.name)  # type: ignore[attr-defined]
        elif kind is ast.Nonlocal:
            node.names = [fix(n) for n in node.names]  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            node.name = fix(node.name)  # type: ignore[attr-defined]


def _nested_codes(code: types.CodeType) -> list[types.CodeType]:
    """The code objects defined directly in ``code``, in the compiler's order."""
    return [c for c in code.co_consts if isinstance(c, types.CodeType)]


def _preorder_defs(stmts: list[ast.stmt]) -> list[ast.FunctionDef]:
    """The defs directly in ``stmts`` (through if/for/while), in source order."""
    out: list[ast.FunctionDef] = []
    for s in stmts:
        if type(s) is ast.FunctionDef:
            out.append(s)
        elif type(s) in (ast.If, ast.For, ast.While):
            out += _preorder_defs(s.body)  # type: ignore[attr-defined]
            out += _preorder_defs(s.orelse)  # type: ignore[attr-defined]
    return out
