"""The front of the pipeline, shared by reverse and forward mode: source to activity.

``front`` runs source -> protocols -> fence -> captured stars -> desugar -> anf ->
inlining -> holders -> obtained holders -> activity on one function and returns a
``Front``: the ANF body, the
names that may carry a derivative, and what the names it reads resolve to now
(plain builtins, plain Python functions without rules). The reverse pass
(``build``) and the forward pass (``forward``) generate code from it.
"""

from __future__ import annotations

import ast
import builtins
import copy
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ad.transform.activity import NONDIFF_BUILTINS, active_names, param_names, read_and_stored
from ad.transform.alias_groups import aliased_seeds
from ad.transform.anf import normalize
from ad.transform.captured_stars import starred_parameters, unpack_captured
from ad.transform.container_methods import methods_spelled
from ad.transform.desugar import desugar
from ad.transform.fence import check_supported
from ad.transform.fuse import module_attribute
from ad.transform.global_names import lower_globals, refuse_active_globals
from ad.transform.holders import follow_holders
from ad.transform.inlining import ENABLED, inline_helpers
from ad.transform.obtained_holders import check_obtained
from ad.transform.protocols import explicit_protocols
from ad.transform.source import get_source
from ad.transform.source_registry import constant_freevars
from ad.transform.writers import spelled_as_rebinding
from rulescore import rrule

__all__ = ["Front", "front", "returning_self"]

_RULE_TABLE = rrule.table._rules


@dataclass(frozen=True)
class Front:
    """The shared front of the pipeline: ANF body, active names, plain builtins, the
    names of plain Python functions it calls (see ``reverse.generate``), and every
    name the ANF body reads."""

    anf: ast.FunctionDef
    active: set[str]
    plain: frozenset[str]
    filename: str
    callees: frozenset[str] = frozenset()
    reads: frozenset[str] = frozenset()
    #: ``((name, function), ...)``: the helpers inlined (see ``inlining``)
    guards: tuple = ()
    #: the parameters unpacked by ``*`` (``captured_stars.starred_parameters``)
    starred: tuple = ()
    #: ``{name: key}``: the names of builtin functions with rules that a call may
    #: compute inline on a float (see ``scalar_function_key``)
    scalars: dict = field(default_factory=dict)


def front(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    inline: bool = True,
    star_calls: bool = False,
    lengths: tuple = (),
) -> Front:
    """source -> fence -> desugar -> anf -> inlining -> holders -> activity, shared
    by reverse and forward mode.

    The positional parameters at the set bits of ``inactive`` are no seeds.
    ``inline``: inline the small helpers ``f`` calls (see ``inlining``).
    ``star_calls``: keep ``f(a, *b)`` a call (see ``anf.normalize``).
    ``lengths``: the lengths of the tuples that parameters unpacked by ``*`` hold
    at this call (see ``captured_stars.unpack_captured``)."""
    src = get_source(f)
    tree = spelled_as_rebinding(explicit_protocols(src.tree, f), f)
    tree = check_supported(lower_globals(tree, src.filename), src.filename)
    star_guards: tuple = ()
    starred = ()
    if inline and ENABLED[0]:  # ``f(w, *data)`` of a captured tuple: an ordinary call
        starred = starred_parameters(tree)
        tree, star_guards = unpack_captured(tree, f, lengths)
    anf = normalize(desugar(tree), src.filename, star_calls, methods_spelled(f))
    written_roots = anf.written_roots  # type: ignore[attr-defined]
    if as_init:
        anf = returning_self(anf, int(as_init) - 1)
    freevars = f.__code__.co_freevars
    if closure_active:
        # Runtime helpers that generated code reads are constants, not user data.
        freevars = tuple(v for v in freevars if v not in constant_freevars(f.__code__))
    seeds = set(param_names(anf)) | (set(freevars) if closure_active else set())
    if inactive:
        a = anf.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        seeds -= {name for i, name in enumerate(positional) if inactive >> i & 1}
    seeds |= written_roots  # a.b[i] = v: what a holds may carry a derivative from here
    plain, callees, reads = _resolved_names(f, anf)
    attributes = _module_functions(f, anf)
    guards: tuple = ()
    if inline and (callees or attributes):
        anf, guards = inline_helpers(anf, f, callees, attributes)
        if guards:
            plain, callees, reads = _resolved_names(f, anf)
            attributes = _module_functions(f, anf)
    guards += star_guards
    followed, seeds = follow_holders(anf, seeds, plain, f, src.filename)
    followed = check_obtained(followed, seeds, plain, f, src.filename)
    if followed is not anf:
        anf, reads = (
            followed,
            reads
            | {
                "_ad_follow",
                "_ad_unfollowed",
                "_ad_unfollowed_call",
                "_ad_holder_print",
                "_ad_follow_after",
                "_ad_obtained_entries",
                "_ad_obtained_unchanged",
            },
        )
    seeds = aliased_seeds(anf, seeds, plain, f)
    active = active_names(anf, seeds, plain)
    refuse_active_globals(anf, active, plain, src.filename)
    callees |= attributes.keys()
    scalars = _scalar_functions(f, anf)
    return Front(anf, active, plain, src.filename, callees, reads, guards, starred, scalars)


def returning_self(fn: ast.FunctionDef, index: int = 0) -> ast.FunctionDef:
    """A copy of an ANF ``__init__`` whose every ``return`` returns ``self``
    (its first parameter): a constructor's output is the object it built.
    ``index``: another positional parameter is the output (a descriptor's
    ``__set__(self, obj, value)`` updates its second)."""
    a = fn.args
    first = (a.posonlyargs + a.args)[index].arg

    def rewrite(stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in stmts:
            if isinstance(st, ast.Return):
                name = ast.Name(id=first, ctx=ast.Load(), lineno=st.lineno, col_offset=0)
                out.append(ast.Return(value=name, lineno=st.lineno, col_offset=0))
            elif isinstance(st, (ast.If, ast.For, ast.While)):
                new = copy.copy(st)
                new.body = rewrite(st.body)
                new.orelse = rewrite(st.orelse)
                out.append(new)
            else:
                out.append(st)
        return out

    new = copy.copy(fn)
    new.body = rewrite(fn.body)
    return new


def _module_functions(f: types.FunctionType, anf: ast.FunctionDef) -> dict[str, tuple[str, str]]:
    """The temporaries ``t = module.name`` of ``anf`` whose ``module`` (a global
    name) holds, now, a plain Python function without rules there, as
    ``{t: (module, name)}``: a call of ``t`` is a call of a Python function, as
    one of a global name is. It may be inlined (``inlining``, under a guard), and
    ``reverse_calls.Calls.inactive_mask`` applies (which only ever saves work: a
    name that resolves to something else at run time is called as any callable is)."""
    found = {}
    for node in _assignments(anf.body):
        target, v = node.targets[0], node.value
        if type(target) is not ast.Name or not target.id.startswith("_ad_t"):
            continue
        attr = module_attribute(v)
        if attr is None:
            continue
        owner = v.args[0].id  # type: ignore[attr-defined]
        module = f.__globals__.get(owner)
        if type(module) is types.ModuleType:
            value = getattr(module, attr, None)
            if type(value) is types.FunctionType and value not in _RULE_TABLE:
                found[target.id] = (owner, attr)
    if found:  # a module name the function binds itself is no global there
        taken = set(param_names(anf)) | read_and_stored(anf)[1] | set(f.__code__.co_freevars)
        found = {t: key for t, key in found.items() if key[0] not in taken}
    return found


def scalar_function_key(fn: Any) -> str | None:
    """``"math__sin"`` for a builtin function of a module that has rules
    (``math.sin``): the generated code may compute a call of it on one float
    inline, while ``_ad_SF.math__sin`` is ``fn`` (the runtime's
    ``scalar_paths.SCALAR_FUNCTIONS`` says whether its rule allows that)."""
    if type(fn) is not types.BuiltinFunctionType or type(fn.__self__) is not types.ModuleType:
        return None
    module, name = fn.__module__, fn.__name__
    if not (module and module.isidentifier() and name.isidentifier()):
        return None
    if "__" in module or "__" in name or fn not in _RULE_TABLE:
        return None
    return f"{module}__{name}"


def _scalar_functions(f: types.FunctionType, anf: ast.FunctionDef) -> dict[str, str]:
    """``{name: key}`` (see ``scalar_function_key``) for the temporaries ``t =
    module.name`` of ``anf`` and the global names it calls, as they resolve now:
    the generated code tests at run time that they still do."""
    found: dict[str, str] = {}
    g = f.__globals__
    for node in _assignments(anf.body):
        target, v = node.targets[0], node.value
        attr = module_attribute(v)
        if attr is not None and type(target) is ast.Name and target.id.startswith("_ad_t"):
            module = g.get(v.args[0].id)  # type: ignore[attr-defined]
            if type(module) is types.ModuleType:
                key = scalar_function_key(getattr(module, attr, None))
                if key is not None:
                    found[target.id] = key
        elif type(v) is ast.Call and type(v.func) is ast.Name and len(v.args) == 1:
            name = v.func.id
            key = scalar_function_key(g.get(name))
            if key is not None:
                found[name] = key
    if found:  # a name the function binds itself is none of these
        taken = set(param_names(anf)) | read_and_stored(anf)[1] | set(f.__code__.co_freevars)
        found = {n: key for n, key in found.items() if n.startswith("_ad_t") or n not in taken}
    return found


def _assignments(stmts: list[ast.stmt]) -> Iterator[ast.Assign]:
    """The single-target assignments among ``stmts`` and the blocks nested in them
    (not in nested functions)."""
    for s in stmts:
        kind = type(s)
        if kind is ast.Assign:
            if len(s.targets) == 1:  # type: ignore[attr-defined]
                yield s  # type: ignore[misc]
        elif kind not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            for field in ("body", "orelse", "finalbody"):
                yield from _assignments(getattr(s, field, ()))
            for h in getattr(s, "handlers", ()):
                yield from _assignments(h.body)


def _resolved_names(
    f: types.FunctionType, anf: ast.FunctionDef
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names ``anf`` reads but never binds that resolve, now, to non-differentiable
    builtins, and to plain Python functions without rules (globals or captured); and
    every name ``anf`` reads."""
    read, assigned = read_and_stored(anf)
    assigned |= set(param_names(anf))
    freevars = f.__code__.co_freevars
    cells = dict(zip(freevars, f.__closure__ or ()))
    plain, callees = set(), set()
    for name in read - assigned:
        if name in cells:
            try:
                value = cells[name].cell_contents
            except ValueError:  # an empty cell
                continue
        elif name in NONDIFF_BUILTINS:
            value = f.__globals__.get(name, getattr(builtins, name, None))
            if value is getattr(builtins, name, None):
                plain.add(name)
            continue
        else:
            value = f.__globals__.get(name)
        if type(value) is types.FunctionType and value not in _RULE_TABLE:
            callees.add(name)
    return frozenset(plain), frozenset(callees), frozenset(read)
