"""The base of pass 3 (``anf``): its vocabulary, and the normaliser's state and node builders.

``BINOPS`` and ``UNARYOPS``: the helpers operators become (``_ad_op_<name>``,
whose runtime tables ``ad.runtime.helpers`` builds from these);
``ITEM_UPDATE``: the mark of an augmented item write. ``Normalizer`` holds the
state of one function's normalisation (temporaries, the current line, the
local names) and builds its nodes; ``anf_expressions``, ``anf_control`` and
``anf`` (the statements) extend it.
"""

from __future__ import annotations

import ast
from typing import TypeVar

from ad.errors import UnsupportedSyntaxError

__all__ = [
    "BINOPS",
    "IN_PLACE_HELPERS",
    "ITEM_UPDATE",
    "PLAIN_EXPRS",
    "UNARYOPS",
    "Normalizer",
    "at",
    "is_atom",
]

#: Set on the ``_ad_iop_<op>(t, v)`` call of ``a[i] op= v`` (or ``o.a op= v``):
#: the source text of the target and the container's name (``"a[i]"``, ``"a"``),
#: ``t`` being the target's current value.
ITEM_UPDATE = "_ad_item_update"
#: The helpers the ANF and protocols passes emit for a write into their first
#: argument in place: ``x[i] = v``, ``o.a = v``, ``xs.append(v)``,
#: ``object.__setattr__(o, k, v)``, ``o.__dict__[k] = v`` and ``del x[i]``. Each statement
#: ``o = helper(o, ...)`` rebinds the name it writes through; the later passes
#: (guards, holders, inlining, tracking) know a write by this set.
IN_PLACE_HELPERS = frozenset(
    [
        "_ad_setitem",
        "_ad_setattr",
        "_ad_append",
        "_ad_setattr_object",
        "_ad_setdict",
        "_ad_delitem",
    ]
)

BINOPS: dict[type, str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.BitOr: "or_",
    ast.BitXor: "xor",
    ast.BitAnd: "and_",
}
UNARYOPS: dict[type, str] = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert"}

PLAIN_EXPRS = (ast.Compare, ast.JoinedStr, ast.Lambda, ast.Constant)


_LOAD, _STORE = ast.Load(), ast.Store()  # shared, as the parser shares them
_N = TypeVar("_N", bound=ast.AST)


def at(node: _N, line: int) -> _N:
    """``node``, located at ``line`` (column 0)."""
    node.lineno = line  # type: ignore[attr-defined]
    node.col_offset = 0  # type: ignore[attr-defined]
    return node


def is_atom(e: ast.expr) -> bool:
    return isinstance(e, (ast.Name, ast.Constant))


class Normalizer:
    """One function's normalisation: its state, and the nodes every part builds.
    The methods that flatten expressions (``atom``, ``expr``...) and statements
    (``stmts``, ``assign_target``...) are those of ``anf._Normalizer``."""

    def __init__(self, filename: str, fname: str, local_names: set[str] | None = None) -> None:
        self.filename = filename
        self.fname = fname
        self.locals = local_names if local_names is not None else set()
        #: the local names at the root of a nested item write (``a`` of a.b[i] = v)
        self.written_roots: set[str] = set()
        self.counter = 0
        self.lineno = 0
        #: Whether the function has a walrus anywhere; and the names the walruses
        #: of the statement being normalised bind (see ``atom``).
        self.has_walrus = False
        self.walrus: frozenset[str] = frozenset()
        #: Keep positional calls with ``*`` as calls (``normalize``'s ``star_calls``).
        self.star_calls = False

    # --- helpers --------------------------------------------------------

    def fresh(self) -> str:
        self.counter += 1
        return f"_ad_t{self.counter}"

    def new(self, node: _N) -> _N:
        """``node``, located at the statement being normalised."""
        return at(node, self.lineno)

    def name(self, id_: str, ctx: ast.expr_context = _LOAD) -> ast.Name:
        return at(ast.Name(id_, ctx), self.lineno)

    def error(self, node: ast.AST, what: str) -> UnsupportedSyntaxError:
        line = getattr(node, "lineno", self.lineno)
        return UnsupportedSyntaxError(
            f"{self.filename}:{line}: in {self.fname}: {what}", self.filename, line
        )

    def assign(self, target: str | ast.expr, value: ast.expr) -> ast.Assign:
        tgt = self.name(target, _STORE) if isinstance(target, str) else target
        return ast.Assign([tgt], value, lineno=self.lineno, col_offset=0)

    def bind(self, value: ast.expr, out: list[ast.stmt]) -> ast.Name:
        t = self.fresh()
        out.append(self.assign(t, value))
        return self.name(t)

    def local_root(self, e: ast.expr) -> bool:
        """Whether ``e`` is a name, or an attribute or item chain from a local name."""
        if isinstance(e, ast.Name):
            return True
        while isinstance(e, (ast.Attribute, ast.Subscript)):
            e = e.value
        return isinstance(e, ast.Name) and e.id in self.locals

    def followed_container(self, obj: ast.expr, where: ast.AST, out: list[ast.stmt]) -> ast.Name:
        """The container ``obj`` (``a.b``, ``a[i]``, ``self.items``) reads out of a
        local ``a``, about to be written in place (``a.b[i] = v``, ``a[i][j] = v``,
        ``self.items.append(v)``): bound to a fresh name, followed by identity
        (``ad.runtime.rules_objects.follow_written``); ``a`` carries the derivative
        (``written_roots``: activity seeds) and is followed from here, so reads
        through it see the write (``ad.runtime.state``)."""
        root = obj
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in self.locals):
            raise self.error(
                where,
                "a write into a container nested in a captured or global variable, or "
                "in a call's result, is not supported; bind the container to a local "
                "name first (d = G['a']; d['b'] = v) and pass G in as an argument",
            )
        self.written_roots.add(root.id)
        out.append(self.assign(root.id, self.helper_call("_ad_follow", [self.name(root.id)])))
        held = self.atom(obj, out)
        t = self.fresh()
        self.locals.add(t)
        site = self.new(ast.Constant(f"{self.filename}:{self.lineno}"))
        out.append(self.assign(t, self.helper_call("_ad_follow_written", [held, site])))
        return self.name(t)

    def container_target(self, name: str) -> str:
        """Where a write into container ``name`` rebinds: the name itself when it
        is a local variable; for a captured or global container, a temporary
        ``_ad_nl<k>`` (rebinding it would make the name local). reverse refuses
        to differentiate a derivative-carrying value written that way."""
        if name in self.locals:
            return name
        self.counter += 1
        return f"_ad_nl{self.counter}"

    def helper_call(self, helper: str, args: list[ast.expr]) -> ast.Call:
        return self.new(ast.Call(self.name(helper), args, []))
