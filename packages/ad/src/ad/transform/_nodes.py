"""Small constructors of AST nodes, and names shared by the generating passes.

The generating passes build very many nodes, so these constructors pass the
fields positionally and share the ``Load``/``Store`` contexts. Given a
``line``, a node is built with its location (``lineno`` = ``line``,
``col_offset`` = 0): what ``codegen`` would otherwise fill in by walking the
finished tree (a located tree skips that walk, see ``codegen.factory_module``).
``at`` locates any freshly built node: ``at(ast.If(test, body, orelse), line)``
costs a third less than passing the location as keyword arguments.
"""

from __future__ import annotations

import ast
import threading
from typing import TypeVar

from ad.transform.anf_base import BINOPS

__all__ = [
    "BINOP_NODES",
    "FAST_OPS",
    "LOAD",
    "NO_VALUE",
    "STORE",
    "TYPE_PARAMS",
    "Z",
    "assign",
    "at",
    "call",
    "const",
    "forget_shared",
    "load",
    "loaded_ids",
    "name",
    "plain",
    "store",
    "tuple_",
]

#: The name the generated code uses for ``ZeroTangent()``.
Z = "_ad_Z"
#: The generated primal's keyword-only parameter: its caller (``ad.gradient``)
#: needs no value (see ``reverse._Gen.fused``; ``ad.runtime.reverse_functions.call_function`` passes it).
NO_VALUE = "_ad_nv"
#: Operators with an inline fast path for Python numbers (``_ad_fast_<op>``).
FAST_OPS = frozenset(["add", "sub", "mul", "truediv", "pow", "neg"])
BINOP_NODES = {v: k for k, v in BINOPS.items()}
TYPE_PARAMS = {"type_params": []} if hasattr(ast.FunctionDef, "type_params") else {}
#: Shared expression contexts (the parser shares them too).
LOAD, STORE = ast.Load(), ast.Store()

_Name, _Assign, _Call, _Tuple, _Constant = ast.Name, ast.Assign, ast.Call, ast.Tuple, ast.Constant
_N = TypeVar("_N", bound=ast.AST)


#: Located names and constants of the reverse pass, shared within one generated
#: tree (``forget_shared`` starts a new set): the tree becomes a DAG, which
#: ``compile`` accepts, and no pass mutates these leaves. They are per thread
#: (``threading.local``): two threads transforming at once, or a pure transform
#: renaming its names (``build.rename_private``), never share a node, and nothing here
#: relies on the GIL (free-threaded CPython: each thread has its own dicts).
class _Shared(threading.local):
    def __init__(self) -> None:
        self.loads: dict[tuple[str, int], ast.Name] = {}
        self.stores: dict[tuple[str, int], ast.Name] = {}
        self.consts: dict[tuple[type, object, int], ast.Constant] = {}


_SHARED = _Shared()


def at(node: _N, line: int) -> _N:
    """``node``, located at ``line`` (column 0)."""
    node.lineno = line  # type: ignore[attr-defined]
    node.col_offset = 0  # type: ignore[attr-defined]
    return node


def load(id_: str, line: int) -> ast.Name:
    """A located load of ``id_``."""
    key = (id_, line)
    loads = _SHARED.loads
    node = loads.get(key)
    if node is None:
        node = loads[key] = at(_Name(id_, LOAD), line)
    return node


def store(id_: str, line: int) -> ast.Name:
    """A located store to ``id_``."""
    key = (id_, line)
    stores = _SHARED.stores
    node = stores.get(key)
    if node is None:
        node = stores[key] = at(_Name(id_, STORE), line)
    return node


def const(value: object, line: int) -> ast.Constant:
    """A located constant (None, a bool, an int or a str: ``type`` keeps 1 and True apart)."""
    key = (type(value), value, line)
    consts = _SHARED.consts
    node = consts.get(key)
    if node is None:
        node = consts[key] = at(_Constant(value), line)
    return node


def forget_shared() -> None:
    """Start a new generated tree (in this thread): fresh shared names and constants.

    New dicts rather than cleared ones: a tree built before keeps its nodes."""
    shared = _SHARED
    shared.loads, shared.stores, shared.consts = {}, {}, {}


def loaded_ids() -> set[str]:
    """The names read by the nodes ``load`` (and ``call``) built for the current
    tree: with the names of the input it reuses, every name the tree reads."""
    return {id_ for id_, _line in _SHARED.loads}


def name(id_: str, store: bool = False, line: int | None = None) -> ast.Name:
    if line is None:
        return _Name(id_, STORE if store else LOAD)
    return at(_Name(id_, STORE if store else LOAD), line)


def assign(target: str | ast.expr, value: ast.expr, line: int) -> ast.Assign:
    """``target = value`` at ``line``; a string target is a located name."""
    if type(target) is str:
        target = at(_Name(target, STORE), line)
    return at(_Assign([target], value), line)


def call(fn: str, *args: ast.expr, line: int | None = None) -> ast.Call:
    if line is None:
        return _Call(_Name(fn, LOAD), list(args), [])
    return at(_Call(load(fn, line), list(args), []), line)


def tuple_(elts: list[ast.expr], store: bool = False, line: int | None = None) -> ast.Tuple:
    if line is None:
        return _Tuple(elts, STORE if store else LOAD)
    return at(_Tuple(elts, STORE if store else LOAD), line)


def plain(s: ast.Assign) -> ast.Assign:
    """An inactive statement as ordinary syntax: helper calls back to operators."""
    v = s.value
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and not v.keywords:
        fn, args = v.func.id, v.args
        line = s.lineno
        new: ast.expr | None = None
        if fn == "_ad_op_getitem" and len(args) == 2:
            new = at(ast.Subscript(args[0], args[1], LOAD), line)
        elif fn.startswith("_ad_op_") and len(args) == 2 and fn[7:] in BINOP_NODES:
            new = at(ast.BinOp(args[0], BINOP_NODES[fn[7:]](), args[1]), line)
        elif fn == "_ad_getattr" and len(args) == 2 and isinstance(args[1], ast.Constant):
            new = at(ast.Attribute(args[0], args[1].value, LOAD), line)
        if new is not None:
            return at(ast.Assign(s.targets, new), line)
    return s
