"""Guards on writes into objects the transformed function may share with others.

Used by the reverse and forward generators: a write that Python would make
visible through another name (an argument, a plain copy, a late-bound
closure variable) and that the AD cannot follow is refused with a clear error
instead of a silently wrong derivative.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ad.transform._nodes import at
from ad.transform._nodes import call as _call
from ad.transform.activity import all_nodes, param_names, stored_names
from ad.transform.anf_base import IN_PLACE_HELPERS, ITEM_UPDATE
from ad.transform.writers import WRITER_PREFIX

__all__ = [
    "ORIGINAL",
    "active_write_guards",
    "argument_write_guard",
    "local_names",
    "original_arguments",
    "ownership_guard",
    "rebound_names",
    "rebound_parameters",
    "returned_names",
]

_Assign, _Return, _If, _For, _While = ast.Assign, ast.Return, ast.If, ast.For, ast.While
_Name, _Store, _Constant, _Call = ast.Name, ast.Store, ast.Constant, ast.Call
_Tuple, _List, _Dict, _Compare, _UnaryOp = ast.Tuple, ast.List, ast.Dict, ast.Compare, ast.UnaryOp


def ownership_guard(
    s: ast.Assign,
    active: bool,
    params: frozenset[str],
    local: Callable[[], frozenset[str]],
    filename: str,
    forward: bool = False,
    originals: set[str] | frozenset[str] = frozenset(),
) -> list[ast.stmt]:
    """``x = _ad_own(x, "x", site, active)`` before a statement that writes
    into the object bound to the local ``x`` in place: ``x op= y``
    (``_ad_iop_*``), an item, attribute or ``append`` write, or a call with
    ``out=x`` (``local()``: the names the function binds).

    ``_ad_own`` (``ad.runtime.ownership``) refuses the write when something the user
    can observe holds that object too, and gives an undifferentiated write a
    copy when the tape does. A differentiated write into a parameter's
    container is ``argument_write_guard``'s to judge (the caller may rebind
    it: ``buf = fill(buf, v)``), as long as the parameter holds the argument:
    one in ``originals`` (``argument_write_guard``) may hold another object by
    then (``x = x.copy()``), which is judged as a local's is. The AD's own
    temporaries need no guard.
    """
    value, line = s.value, s.lineno
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return []
    fn = value.func.id
    first = value.args[0] if value.args else None
    item = getattr(value, ITEM_UPDATE, None)
    if item is not None and isinstance(first, ast.Name):
        # ``a[i] op= v``: the element is updated in place, and stored back into ``a``.
        label, container = item
        return [_own(first.id, label, container, active, filename, line, forward=forward)]
    arrays_only = False
    if fn.startswith("_ad_iop_") or fn in IN_PLACE_HELPERS or fn.startswith(WRITER_PREFIX):
        target = s.targets[0]
        if not (
            isinstance(first, ast.Name) and isinstance(target, ast.Name) and target.id == first.id
        ):
            return []
        name = first.id
        # A parameter's container may be written (argument_write_guard judges
        # that), but an array the caller passed is the caller's too.
        arrays_only: bool | ast.expr = (
            (fn in IN_PLACE_HELPERS or fn.startswith(WRITER_PREFIX)) and active and name in params
        )
        if arrays_only and name in originals:  # only while it holds the argument
            arrays_only = at(
                _Compare(
                    at(ast.Name(name, ast.Load()), line),
                    [ast.Is()],
                    [at(ast.Name(ORIGINAL + name, ast.Load()), line)],
                ),
                line,
            )
    else:
        out = [k.value for k in value.keywords if k.arg == "out"]
        if not (out and isinstance(out[0], ast.Name) and out[0].id in local()):
            return []
        name = out[0].id
    if name.startswith("_ad_"):
        return []
    return [_own(name, name, None, active, filename, line, arrays_only, forward)]


def _own(
    name: str,
    label: str,
    within: str | None,
    active: bool,
    filename: str,
    line: int,
    arrays_only: bool | ast.expr = False,
    forward: bool = False,
) -> ast.stmt:
    """``name = _ad_own(name, label, site, active[, within, name[, arrays_only]])``
    (``forward=True`` in forward-mode code)."""
    args: list[ast.expr] = [
        at(ast.Name(id=name, ctx=ast.Load()), line),
        at(ast.Constant(label), line),
        at(ast.Constant(f"{filename}:{line}"), line),
        at(ast.Constant(active), line),
    ]
    if within is not None or arrays_only is not False:
        container = ast.Name(id=within, ctx=ast.Load()) if within else ast.Constant(None)
        args += [at(container, line), at(ast.Constant(name), line)]
    if arrays_only is not False:
        args.append(
            arrays_only if isinstance(arrays_only, ast.expr) else at(ast.Constant(True), line)
        )
    store = at(ast.Name(id=name, ctx=ast.Store()), line)
    call = _call("_ad_own", *args, line=line)
    if forward:
        call.keywords.append(ast.keyword("forward", at(ast.Constant(True), line)))
    return at(ast.Assign(targets=[store], value=call), line)


def captured_write(targets: list[str], value: ast.expr) -> str:
    """Why an active write into a captured or global container (anf binds its
    result to an ``_ad_nl`` name) is refused; "" for any other assignment."""
    if not (targets and targets[0].startswith("_ad_nl")):
        return ""
    container = "?"
    if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name):
        container = value.args[0].id
    return (
        f"a value that carries a derivative is written into {container!r}, which is not a "
        "local variable of this function (it is captured or global): its derivative "
        "would be lost. To fix: build the container inside the function, or pass it in "
        "and return it"
    )


def local_names(fn: ast.FunctionDef) -> Callable[[], frozenset[str]]:
    """``ownership_guard``'s ``local``: the names ``fn`` binds, found on first use."""
    found: list[frozenset[str]] = []

    def local() -> frozenset[str]:
        if not found:
            found.append(frozenset(stored_names(fn)))
        return found[0]

    return local


def argument_write_guard(
    value: ast.expr,
    active: set[str],
    params: frozenset[str],
    mutable_params: frozenset[str],
    filename: str,
    line: int,
    forward: bool = False,
    rebound: frozenset[str] = frozenset(),
    originals: set[str] | None = None,
) -> list[ast.stmt]:
    """``arg[k] = v`` (or ``.append``, attribute writes) into an argument the
    function does not return: the caller would not see the change in the
    backward pass; ``_ad_argument_write`` refuses a value that may carry a
    derivative. For a parameter in ``rebound`` (``rebound_parameters``) it
    compares with the argument, ``_ad_arg_<name>`` (``original_arguments``), and
    adds the name to ``originals``: the primal binds it at entry."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.args):
        return []
    fn, first, last = value.func.id, value.args[0], value.args[-1]
    if (
        fn in IN_PLACE_HELPERS
        and isinstance(first, ast.Name)
        and first.id in params
        and first.id not in mutable_params
        and (
            (fn == "_ad_delitem" and first.id in active)  # any key: ``del xs[0]`` too
            or (isinstance(last, ast.Name) and last.id in active)
        )
    ):
        # ``del xs[i]`` moves the entries after i: judged by what the container holds
        args = [
            first if fn == "_ad_delitem" else last,
            at(ast.Constant(first.id), line),
            at(ast.Constant(f"{filename}:{line}"), line),
            at(ast.Name(id=first.id, ctx=ast.Load()), line),
            at(ast.Constant(forward), line),
        ]
        if first.id in rebound and originals is not None:  # ``x = x.copy()``: still the argument?
            args.append(at(ast.Name(id=ORIGINAL + first.id, ctx=ast.Load()), line))
            originals.add(first.id)
        check = _call("_ad_argument_write", *args, line=line)
        return [ast.Expr(value=check, lineno=line, col_offset=0)]
    return []


def active_write_guards(s: ast.Assign, gen: Any, forward: bool = False) -> list[ast.stmt]:
    """``argument_write_guard`` then ``ownership_guard`` for the differentiated
    statement ``s``, with the reverse or forward generator ``gen``'s facts
    (``active``, ``params``, ``mutable_params``, ``rebound_params``, the set
    ``originals`` it fills, ``local``, ``filename``)."""
    line = s.lineno
    guards = argument_write_guard(
        s.value,
        gen.active,
        gen.params,
        gen.mutable_params,
        gen.filename,
        line,
        forward,
        gen.rebound_params,
        gen.originals,
    )
    return guards + ownership_guard(
        s, True, gen.params, gen.local, gen.filename, forward, gen.originals
    )


#: ``_ad_arg_x``: the object the parameter ``x`` held at entry (``original_arguments``)
ORIGINAL = "_ad_arg_"


def rebound_parameters(fn: ast.FunctionDef) -> frozenset[str]:
    """The parameters of the ANF function ``fn`` that its body binds to another
    object (``x = x.copy()``, ``xs = list(xs)``), not counting its writes into
    them (``x = _ad_setitem(x, i, v)``): ``argument_write_guard`` then tests at
    run time whether the object written is still the argument."""
    params = set(param_names(fn))
    found: set[str] = set()
    for node in all_nodes(fn):
        if type(node) is ast.For:
            found.update(n.id for n in all_nodes(node.target) if type(n) is _Name)
        if type(node) is not _Assign:
            continue
        v = node.value
        writes = (
            type(v) is _Call
            and type(v.func) is _Name
            and (v.func.id in IN_PLACE_HELPERS or v.func.id.startswith(("_ad_iop_", WRITER_PREFIX)))
        )
        if not writes:
            found.update(_assign_stores(node))
    return frozenset(found & params)


def original_arguments(names: set[str] | frozenset[str], line: int) -> list[ast.stmt]:
    """``_ad_arg_x = x`` for each of ``names`` (``rebound_parameters``), at the primal's
    entry: the argument, for a write's test (``argument_write_guard``) and for
    ``ad.runtime.ownership``, which tells the call's arguments from what the
    parameter holds later."""
    return [
        at(
            ast.Assign(
                [at(ast.Name(ORIGINAL + n, ast.Store()), line)], at(ast.Name(n, ast.Load()), line)
            ),
            line,
        )
        for n in sorted(names)
    ]


def _statements(body: list[ast.stmt], out: list[ast.AST]) -> list[ast.AST]:
    """Every statement in ``body``, nested ones included (an expression holds
    none, so only compound statements are opened); for a nested ``def`` and
    any statement ANF does not produce, every node inside it."""
    for st in body:
        kind = type(st)
        if kind is _Assign or kind is _Return:
            out.append(st)
        elif kind is _If or kind is _For or kind is _While:
            out.append(st)
            _statements(st.body, out)  # type: ignore[attr-defined]
            _statements(st.orelse, out)  # type: ignore[attr-defined]
        else:
            out.extend(all_nodes(st))
    return out


def returned_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names the function returns, alone or as entries of a returned tuple or list
    (``return loss, x``): a parameter it mutates and returns is fine, the caller
    rebinds it (``buf = fill(buf, v)``)."""
    out = set()
    built: dict[str, list[str]] = {}  # ``t = (a, x)``: the names a temporary holds
    for node in _statements(fn.body, []):
        if type(node) is _Return and isinstance(node.value, ast.Name):
            out.add(node.value.id)
        elif type(node) is _Assign and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
            if target == "_ad_retv" and isinstance(value, ast.Name):
                out.add(value.id)
            elif type(value) is _Tuple or type(value) is _List:
                built[target] = [e.id for e in value.elts if type(e) is _Name]
    for name in list(out):
        out.update(built.get(name, ()))
    return frozenset(out)


def _atom_stores(nodes: list) -> list[str] | None:
    """The names written by a list of atoms (none, in ANF), or None if one is not an atom."""
    out = []
    for x in nodes:
        kind = type(x)
        if kind is _Name:
            if type(x.ctx) is _Store:
                out.append(x.id)
        elif kind is not _Constant and x is not None:
            return None
    return out


def _assign_stores(st: ast.Assign) -> list[str]:
    """``stored_names(st)`` for an ANF assignment, without walking its atoms."""
    v = st.value
    kind = type(v)
    if kind is _Call:
        children = [v.func, *v.args, *[k.value for k in v.keywords]]
    elif kind is _Tuple or kind is _List:
        children = v.elts
    elif kind is _Dict:
        children = [*v.keys, *v.values]
    elif kind is _Compare:
        children = [v.left, *v.comparators]
    elif kind is _UnaryOp:
        children = [v.operand]
    else:
        children = [v]
    found = _atom_stores(children)
    if found is None:
        return stored_names(st)
    for t in st.targets:
        if type(t) is _Name:
            if type(t.ctx) is _Store:
                found.append(t.id)
        elif type(t) is _Tuple and all(type(e) is _Name for e in t.elts):
            found.extend(e.id for e in t.elts if type(e.ctx) is _Store)  # type: ignore[attr-defined]
        else:
            found.extend(stored_names(t))
    return found


def rebound_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names bound more than once in ``fn``'s own scope, counting a binding
    inside a loop (or as a loop target) as several."""
    counts: dict[str, int] = {}

    def visit(stmts: list[ast.stmt], weight: int) -> None:
        for st in stmts:
            if isinstance(st, (ast.For, ast.While)):
                if isinstance(st, ast.For):
                    for n in all_nodes(st.target):
                        if isinstance(n, ast.Name):
                            counts[n.id] = counts.get(n.id, 0) + 2
                visit(st.body, 2)
                visit(st.orelse, weight)
            elif isinstance(st, ast.If):
                visit(st.body, weight)
                visit(st.orelse, weight)
            elif isinstance(st, ast.FunctionDef):
                counts[st.name] = counts.get(st.name, 0) + weight
            else:
                for name in _assign_stores(st) if type(st) is _Assign else stored_names(st):
                    counts[name] = counts.get(name, 0) + weight

    visit(fn.body, 1)
    return frozenset(n for n, c in counts.items() if c > 1)
