"""A function's pushforward, generated to be differentiated again.

Forward over forward pushes the outer tangents through the pushforward that
forward mode generated for a Python function, read as source. That copy has
its own names: every generated name (the runtime helpers' too) gets a prefix
that no name in the tree starts with, so that the outer transform's names
cannot collide with the inner's, and the outer transform reads calls of the
helpers as calls, not as its own constructs. Its tree is registered with
``transform.source`` and the result cached per code object. Like the first-order
transforms (``transform.cache``), it is specialised on the helpers it inlined:
it is used only while their names still resolve to them (its ``guards``), else
the general form, built without inlining, is (which calls whatever the names
hold at run time).
"""

from __future__ import annotations

import ast
import copy
import types

__all__ = ["nested_pushforward"]


_NESTED: dict[tuple, tuple] = {}


def _prefix(tree: ast.AST) -> str:
    """A prefix for generated names that no name in ``tree`` starts with."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    k = 1
    while any(n.startswith((f"_a{k}_", f"_ad_q{k}_")) for n in names):
        k += 1
    return f"_a{k}_"


def nested_pushforward(f: types.FunctionType, closure_active: bool) -> tuple:
    """``(gen, spec, dt, df)``: ``f``'s pushforward as forward mode generates it, its
    private names renamed so that it can be differentiated again (its source tree
    is registered), bound to ``f``; ``dt``/``df`` name its keyword-only tangent
    parameters, ``spec`` is ``f``'s signature."""
    from ad.transform.inline_guards import guards_hold

    key = (f.__code__, closure_active)
    entry = _NESTED.get(key)
    if entry is None:
        entry = _NESTED[key] = _build(f, closure_active)
    if entry[0].guards and not guards_hold(entry[0].guards, f):
        # A name it inlined a helper for, or resolved at build time, holds another
        # object now: the general form, which calls what the names hold.
        general = (*key, False)
        entry = _NESTED.get(general)
        if entry is None:
            entry = _NESTED[general] = _build(f, closure_active, inline=False)
    compiled, dt, df = entry
    return compiled.instantiate(f), compiled.spec, dt, df


def _build(f: types.FunctionType, closure_active: bool, inline: bool = True) -> tuple:
    """``(compiled, dt, df)`` for ``nested_pushforward`` (``inline``: with the small
    helpers ``f`` calls inlined, under guards)."""
    from ad.runtime.helpers import FORWARD_HELPERS
    from ad.transform import front
    from ad.transform.codegen import compile_primal, factory_module
    from ad.transform.compiled import Compiled, signature_of
    from ad.transform.forward import generate_forward
    from ad.transform.source_registry import register_generated

    fr = front(f, closure_active, inline=inline)
    freevars = f.__code__.co_freevars
    fn = generate_forward(fr.anf, fr.active, freevars, closure_active, fr.filename, fr.plain)
    fn = copy.deepcopy(fn)  # renamed in place below: it may share nodes with cached trees
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in FORWARD_HELPERS}
    prefix = _prefix(fn)
    keep = set(freevars)

    # Every generated name gets a prefix of its own, the helpers' too: a second
    # transform reads this code as user code, and must see calls of captured
    # functions where it would read its own helpers' names as its own constructs
    # (``_ad_unpack``). Helpers keep ``_ad_`` in front: they write nothing a caller
    # reads (see ``transform.holders``).
    helper_prefix = "_ad_q" + prefix[2:]

    def fix(name: str) -> str:
        if not name.startswith("_ad_") or name in keep:
            return name
        return (helper_prefix if name in FORWARD_HELPERS else prefix) + name[4:]

    seen: set[int] = set()  # a node may appear twice in the tree: rename it once
    for node in ast.walk(fn):
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ast.Name):
            node.id = fix(node.id)
        elif isinstance(node, ast.arg):
            node.arg = fix(node.arg)
        elif isinstance(node, ast.FunctionDef) and node is not fn:
            node.name = fix(node.name)
    helpers = {fix(n): FORWARD_HELPERS[n] for n in used}
    cell_names = sorted(set(helpers) - set(freevars)) + list(freevars)
    pristine = copy.deepcopy(fn)
    module = factory_module(fn, cell_names)
    code = compile_primal(module, fr.filename)
    register_generated(code, pristine, fr.filename, frozenset(helpers))
    compiled = Compiled(
        code=code,
        helper_cells={n: types.CellType(v) for n, v in helpers.items()},
        spec=signature_of(fr.anf),
        guards=fr.guards,
    )
    return compiled, prefix + "dt", prefix + "df"
