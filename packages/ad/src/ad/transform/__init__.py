"""The source transform, as an ordered list of passes over the stdlib ``ast``.

source -> protocols -> fence -> desugar -> anf -> inlining -> holders -> activity -> reverse (and fuse, which it calls on
each block outside loops) -> codegen, cached per code
object (and per whether the closure's captured variables are differentiated).
Forward mode shares the front (``front``: up to activity) and replaces
reverse with ``forward`` (``forward_transformed``, its own cache).
Each pass is a module whose docstring states its output form.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import gc
import threading
import types
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ad.transform._nodes import NO_VALUE, loaded_ids
from ad.transform.activity import NONDIFF_BUILTINS, active_names, param_names, read_and_stored
from ad.transform.anf import normalize
from ad.transform.bindings import REVERSE, library_entry
from ad.transform.codegen import compile_primal, factory_module, used_names
from ad.transform.compiled import Compiled, signature_of
from ad.transform.desugar import desugar
from ad.transform.fence import check_supported
from ad.transform.holders import follow_holders
from ad.transform.inlining import check_guards_after, guards_hold, has_rules, inline_helpers
from ad.transform.protocols import explicit_protocols
from ad.transform.reverse import generate
from ad.transform.source import constant_freevars, get_source, mark_derived, register_generated
from ad.transform.writers import spelled_as_rebinding
from rulescore import frule, rrule

_RULE_TABLE = rrule.table._rules

__all__ = [
    "Front",
    "check_guards_after",
    "Transformed",
    "adjoint_source",
    "forward_transformed",
    "front",
    "pure_transformed",
    "transformed",
]


Transformed = Compiled  # the reverse pipeline's product


class _Slot:
    """The transforms of one code object: reverse, pure and forward, by the key
    of the variant (closure active, ``as_init``, inactive parameters; ``(key,
    False)`` for the general form of an inlined one). A slot is found by the
    code's ``id`` and holds the code only weakly: when the code object goes (a
    function built by ``exec``, a notebook cell run again, a module reloaded),
    its slot and every transform in it go too. Each entry is published whole,
    with one dict assignment, once built."""

    __slots__ = ("forward", "pure", "ref", "reverse")

    def __init__(self, ref: weakref.ref) -> None:
        self.ref = ref
        self.reverse: dict[Any, Any] = {}
        self.pure: dict[Any, Any] = {}
        self.forward: dict[Any, Any] = {}


#: ``id(code)`` -> its ``_Slot``. The hit path is two dict lookups and a call of
#: the slot's weak reference (the code at that id is the one the slot is for);
#: the slot leaves with its code (``_dropper``), before the id can be reused.
_SLOTS: dict[int, _Slot] = {}

#: Held while a transform is built (the miss path only). Building is serialized:
#: a pass that kept state between calls could not mix two functions' trees, and
#: nothing here relies on the GIL to make a compound update atomic (ready for
#: free-threaded CPython, where dict reads and single assignments stay safe).
#: Re-entrant: building one transform may need another's (a pure transform).
_BUILD_LOCK = threading.RLock()


def _dropper(i: int, slots: dict = _SLOTS) -> Any:
    def drop(ref: weakref.ref) -> None:
        slot = slots.get(i)
        if slot is not None and slot.ref is ref:
            slots.pop(i, None)

    return drop


def _slot(code: types.CodeType) -> _Slot:
    """The slot of ``code``, made on first use (call with ``_BUILD_LOCK`` held)."""
    i = id(code)
    slot = _SLOTS.get(i)
    if slot is None or slot.ref() is not code:
        slot = _Slot(weakref.ref(code, _dropper(i)))
        _SLOTS[i] = slot
    return slot


def _cached(code: types.CodeType, kind: str, key: Any) -> Any:
    """The published transform of ``code`` for ``kind`` and ``key``, or None."""
    slot = _SLOTS.get(id(code))
    if slot is not None and slot.ref() is code:
        return getattr(slot, kind).get(key)
    return None


def _publish(code: types.CodeType, kind: str, key: Any, build: Any) -> Any:
    """Build the transform of ``code`` for ``kind``/``key`` unless another thread
    just did, and publish it; a build that raises publishes nothing (the next
    call tries again). An inlined helper that gained a rule while the transform
    was being built (``_forget_inlined`` ran before the entry was published)
    makes it stale: it is built again."""
    with _BUILD_LOCK:
        table = getattr(_slot(code), kind)
        entry = table.get(key)
        while entry is None:
            with _no_gc():
                entry = build()
            generated = getattr(entry, "code", None)
            if generated is not None:
                mark_derived(generated)  # the user's nested functions, compiled by ad
            table[key] = entry
            if getattr(entry, "guards", ()) and _stale(entry):
                table.pop(key, None)
                entry = None
        return entry


def _stale(entry: Any) -> bool:
    return any(has_rules(fn) for _, fn in entry.guards)


def transformed(
    f: types.FunctionType, closure_active: bool, as_init: bool | int = False, inactive: int = 0
) -> Transformed:
    """The cached transform of ``f``'s code (built on first use).

    ``as_init``: ``f`` is an ``__init__`` differentiated as a constructor: its
    output is ``self`` as the body leaves it (see ``returning_self``); an int
    ``n`` names the ``n``-th positional parameter instead (a setter updating
    its object in place: ``__setattr__``, a property's or descriptor's setter).
    ``inactive``: a bit mask of positional parameters whose arguments carry no
    derivative at this call (``_ad_rcall_masked``): they start inactive.
    """
    code = f.__code__
    if inactive:
        inactive &= (1 << code.co_argcount) - 1
    key = closure_active if not (as_init or inactive) else (closure_active, as_init, inactive)
    slot = _SLOTS.get(id(code))
    entry = slot.reverse.get(key) if slot is not None and slot.ref() is code else None
    if entry is None:
        entry = _publish(
            code,
            "reverse",
            key,
            # the standard library runs as plain Python
            lambda: (
                library_entry(f, "reverse", as_init) or _build(f, closure_active, as_init, inactive)
            ),
        )
    if entry.guards and not guards_hold(entry.guards, f.__globals__):
        # A helper's name no longer resolves to the function inlined: the general form.
        entry = _general(
            code, "reverse", key, lambda: _build(f, closure_active, as_init, inactive, False)
        )
    return entry


def _general(code: types.CodeType, kind: str, key: Any, build: Any) -> Any:
    """The transform built without inlining, cached beside the inlined one."""
    entry = _cached(code, kind, (key, False))
    if entry is None:
        entry = _publish(code, kind, (key, False), build)
    return entry


def _forget_inlined() -> None:
    """A rule registered for a helper inlined somewhere: that transform is stale
    (the rule wins), so it is built again at its next use. Called by the rule
    tables after each registration, without the build lock: it reads snapshots
    (``dict.copy`` is atomic) and removes an entry only if it is still there."""
    for slot in _SLOTS.copy().values():
        for table in (slot.reverse, slot.forward):
            for key, entry in table.copy().items():
                if entry.guards and _stale(entry) and table.get(key) is entry:
                    table.pop(key, None)


class _View:
    """One kind of transform across every live code object, keyed as
    ``(code, closure_active)`` or ``(code, closure_active, as_init, inactive)``
    (``(key, False)``: the general form): for tests and debugging. ``clear``
    forgets them (they are built again at their next use)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _items(self) -> list[tuple[Any, Any]]:
        out = []
        for slot in _SLOTS.copy().values():
            code = slot.ref()
            if code is None:
                continue
            for key, entry in getattr(slot, self.kind).copy().items():
                general = (
                    self.kind != "pure" and type(key) is tuple and len(key) == 2 and key[1] is False
                )
                inner = key[0] if general else key
                full = (code, *inner) if type(inner) is tuple else (code, inner)
                out.append(((full, False) if general else full, entry))
        return out

    def __iter__(self) -> Iterator[Any]:
        return iter([k for k, _ in self._items()])

    def __len__(self) -> int:
        return len(self._items())

    def items(self) -> list[tuple[Any, Any]]:
        return self._items()

    def __getitem__(self, full: tuple) -> Any:
        general = len(full) == 2 and full[1] is False and type(full[0]) is tuple
        inner = full[0] if general else full
        code, rest = inner[0], inner[1:]
        key = rest[0] if len(rest) == 1 else rest
        entry = _cached(code, self.kind, (key, False) if general else key)
        if entry is None:
            raise KeyError(full)
        return entry

    def clear(self) -> None:
        for slot in _SLOTS.copy().values():
            getattr(slot, self.kind).clear()


_CACHE = _View("reverse")
_PURE_CACHE = _View("pure")
_FWD_CACHE = _View("forward")


rrule.table.listeners.append(_forget_inlined)
frule.table.listeners.append(_forget_inlined)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a transform builds its trees: the
    passes allocate thousands of short-lived nodes (none in cycles) and collections
    triggered by them cost ~10% of the transform."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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


def front(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    inline: bool = True,
    star_calls: bool = False,
) -> Front:
    """source -> fence -> desugar -> anf -> inlining -> holders -> activity, shared
    by reverse and forward mode.

    The positional parameters at the set bits of ``inactive`` are no seeds.
    ``inline``: inline the small helpers ``f`` calls (see ``inlining``).
    ``star_calls``: keep ``f(a, *b)`` a call (see ``anf.normalize``)."""
    src = get_source(f)
    tree = check_supported(spelled_as_rebinding(explicit_protocols(src.tree, f), f), src.filename)
    anf = normalize(desugar(tree), src.filename, star_calls)
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
    guards: tuple = ()
    if inline and callees:
        anf, guards = inline_helpers(anf, f, callees)
        if guards:
            plain, callees, reads = _resolved_names(f, anf)
    followed, seeds = follow_holders(anf, seeds, plain, f, src.filename)
    if followed is not anf:
        anf, reads = followed, reads | {"_ad_follow", "_ad_unfollowed", "_ad_unfollowed_call"}
    active = active_names(anf, seeds, plain)
    return Front(anf, active, plain, src.filename, callees, reads, guards)


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


def _pipeline(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    pure: bool = False,
    inactive: int = 0,
    inline: bool = True,
) -> tuple[Front, ast.FunctionDef]:
    # The pure form (second order) is differentiated again: it calls its helpers.
    fr = front(f, closure_active, as_init, inactive, inline and not pure, not pure)
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
    )
    return fr, fwd


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


_CELLS: dict[str, types.CellType] = {}


def _helper_cells(helpers: dict[str, Any]) -> dict[str, types.CellType]:
    """One closure cell per runtime helper, shared by every generated function."""
    if len(_CELLS) != len(helpers):
        _CELLS.update({n: types.CellType(v) for n, v in helpers.items() if n not in _CELLS})
    return _CELLS


def _build(
    f: types.FunctionType,
    closure_active: bool,
    as_init: bool | int = False,
    inactive: int = 0,
    inline: bool = True,
) -> Transformed:
    fr, fwd = _pipeline(f, closure_active, as_init, inactive=inactive, inline=inline)
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
    )


def _reads_as_global(code: types.CodeType, names: dict[str, Any]) -> bool:
    """Whether ``code`` or a function defined in it reads one of ``names`` as a
    global (the factory bound it as no cell)."""
    if not names.keys().isdisjoint(code.co_names):
        return True
    return any(_reads_as_global(c, names) for c in _nested_codes(code))


def pure_transformed(
    f: types.FunctionType, closure_active: bool, as_init: bool | int = False
) -> Transformed:
    """The cached *pure* reverse transform of ``f``'s code (``reverse.generate``'s
    ``pure`` form), whose primal and adjoint are themselves differentiable: their
    trees are registered with ``source`` (reverse over reverse)."""
    code = f.__code__
    key = (closure_active, as_init)
    entry = _cached(code, "pure", key)
    if entry is None:
        entry = _publish(
            code,
            "pure",
            key,
            lambda: library_entry(f, "pure", as_init) or _build_pure(f, closure_active, as_init),
        )
    return entry


#: The prefix of the pure form's own names: apart from the runtime helpers'
#: (``_ad_rcall``...), none may collide with what differentiating it generates.
PURE_PREFIX = "_ar_"


def _build_pure(f: types.FunctionType, closure_active: bool, as_init: bool | int) -> Transformed:
    fr, fwd = _pipeline(f, closure_active, as_init, pure=True)
    anf, filename = fr.anf, fr.filename
    _rename_private(fwd, REVERSE)
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


def _rename_private(fn: ast.FunctionDef, helpers: dict[str, Any]) -> None:
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


def adjoint_source(f: types.FunctionType, closure_active: bool = False, pure: bool = False) -> str:
    """The generated primal and adjoint as Python source, with source line comments."""
    fr, fwd = _pipeline(f, closure_active, pure=pure)
    filename = fr.filename
    if pure:
        _rename_private(fwd, REVERSE)
    lines: list[str] = [f"# generated from {filename}"]
    for node in fwd.body:
        _annotate(node, lines, 0)
    used = sorted(used_names(fwd, REVERSE))
    header = f"def _ad_fwd({ast.unparse(fwd.args)}):"
    return "\n".join([lines[0], f"# helpers: {', '.join(used)}", header, *lines[1:]])


def _annotate(node: ast.stmt, out: list[str], depth: int) -> None:
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
            _annotate(child, out, depth + 1)
        orelse: Any = getattr(node, "orelse", [])
        if orelse:
            out.append(f"{pad}else:")
            for child in orelse:
                _annotate(child, out, depth + 1)
        return
    if isinstance(node, ast.Try):
        out.append(f"{pad}try:{comment}")
        for child in node.body:
            _annotate(child, out, depth + 1)
        for handler in node.handlers:
            head = ast.unparse(handler).splitlines()[0]
            out.append(f"{pad}{head}")
            for child in handler.body:
                _annotate(child, out, depth + 1)
        for label, block in (("else", node.orelse), ("finally", node.finalbody)):
            if block:
                out.append(f"{pad}{label}:")
                for child in block:
                    _annotate(child, out, depth + 1)
        return
    if isinstance(node, ast.With):
        out.append(f"{pad}{ast.unparse(node).splitlines()[0]}{comment}")
        for child in node.body:
            _annotate(child, out, depth + 1)
        return
    text = ast.unparse(node).splitlines()
    out.append(f"{pad}{text[0]}{comment}")
    out.extend(pad + t for t in text[1:])


def forward_transformed(
    f: types.FunctionType, closure_active: bool, as_init: bool | int = False
) -> Any:
    """The cached forward-mode (pushforward) transform of ``f``'s code
    (``as_init``: as in ``transformed``)."""
    from ad.transform.forward import build_forward

    code = f.__code__
    key = closure_active if not as_init else (closure_active, as_init)
    slot = _SLOTS.get(id(code))
    entry = slot.forward.get(key) if slot is not None and slot.ref() is code else None
    if entry is None:
        entry = _publish(
            code,
            "forward",
            key,
            lambda: (
                library_entry(f, "forward", as_init) or build_forward(f, closure_active, as_init)
            ),
        )
    if entry.guards and not guards_hold(entry.guards, f.__globals__):
        entry = _general(
            code, "forward", key, lambda: build_forward(f, closure_active, as_init, False)
        )
    return entry
