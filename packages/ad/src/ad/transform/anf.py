"""Pass 3, anf: flatten a function body to A-normal form.

Output form (a new ``FunctionDef``; the input is not modified). Atoms are
``Name`` or ``Constant`` nodes. Every statement is one of:

* ``t = f(a, *b, k=c)``            a call; ``f`` and the arguments are atoms
* ``t = a``                        a copy
* ``t = (a, b)`` / ``[a, b]`` / ``{k: v}``   a display of atoms
* ``a, b = _ad_unpack(t, 2)``      unpacking, always through ``_ad_unpack``
* ``t = <plain>``                  an expression whose value has no derivative
  (comparisons, ``not``, f-strings, lambdas, constants of any shape)
* ``return a``
* ``if <plain>: ... else: ...``, ``for t in a: ...``, ``while <plain>: ...``
* ``try: ... except <as written> [as e]: ... else: ... finally: ...`` and
  ``with a [as t]: ...`` (one item, see ``desugar``), their blocks in this form
* nested ``def``; ``assert``, ``raise``, ``import``, ``pass`` kept as they are.

Operators become calls of the helpers ``_ad_op_<name>`` (``operator.<name>``);
attribute reads become ``_ad_getattr(obj, "name")`` and subscripts
``_ad_op_getitem(obj, index)``. Writes into containers and objects rebind the
container: ``d[k] = v`` becomes ``d = _ad_setitem(d, k, v)``; ``o.a = v``
becomes ``o = _ad_setattr(o, "a", v)``; ``x += y`` becomes
``x = _ad_iop_add(x, y)``; ``lst.append(v)`` becomes ``lst = _ad_append(lst, v)``.
Conditional expressions and ``and``/``or`` used as values become ``if``
statements; a walrus ``(x := v)`` becomes ``x = v`` where Python evaluates it.
Line numbers of the source statement are kept on every output statement, and
every node has a location (a new node has the line of the statement it is in).
"""

from __future__ import annotations

import ast
import copy
from typing import TypeVar

from ad.errors import UnsupportedSyntaxError
from ad.transform.anf_control import (
    normalize_try,
    normalize_with,
    scoped_comprehension,
    walrus_targets,
)

__all__ = ["BINOPS", "ITEM_UPDATE", "UNARYOPS", "normalize"]

#: Set on the ``_ad_iop_<op>(t, v)`` call of ``a[i] op= v`` (or ``o.a op= v``):
#: the source text of the target and the container's name (``"a[i]"``, ``"a"``),
#: ``t`` being the target's current value.
ITEM_UPDATE = "_ad_item_update"

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


def _at(node: _N, line: int) -> _N:
    """``node``, located at ``line`` (column 0)."""
    node.lineno = line  # type: ignore[attr-defined]
    node.col_offset = 0  # type: ignore[attr-defined]
    return node


def _is_atom(e: ast.expr) -> bool:
    return isinstance(e, (ast.Name, ast.Constant))


class _Normalizer:
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
        return _at(node, self.lineno)

    def name(self, id_: str, ctx: ast.expr_context = _LOAD) -> ast.Name:
        return _at(ast.Name(id_, ctx), self.lineno)

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

    # --- expressions ------------------------------------------------------

    def atom(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        """Flatten ``e``, appending statements to ``out``; return an atom.

        A name that a walrus of the same statement binds is read into a
        temporary: Python reads its value here, and the walrus may rebind it
        before the statement uses the atom (``f(x, (x := g(x)))``)."""
        if _is_atom(e):
            if self.walrus and type(e) is ast.Name and e.id in self.walrus:
                return self.bind(e, out)
            return e
        value = self.expr(e, out)
        if _is_atom(value):
            return value
        return self.bind(value, out)

    def expr(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        """Flatten ``e`` to one ANF right-hand side (not necessarily an atom)."""
        if _is_atom(e):
            return e
        if isinstance(e, ast.BinOp):
            op = BINOPS[type(e.op)]
            left = self.atom(e.left, out)
            right = self.atom(e.right, out)
            return self.helper_call(f"_ad_op_{op}", [left, right])
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Not):
                return self.new(ast.UnaryOp(op=ast.Not(), operand=self.atom(e.operand, out)))
            return self.helper_call(f"_ad_op_{UNARYOPS[type(e.op)]}", [self.atom(e.operand, out)])
        if isinstance(e, ast.Call):
            return self.call(e, out)
        if isinstance(e, ast.Attribute):
            return self.helper_call(
                "_ad_getattr", [self.atom(e.value, out), self.new(ast.Constant(e.attr))]
            )
        if isinstance(e, ast.Subscript):
            obj = self.atom(e.value, out)
            return self.helper_call("_ad_op_getitem", [obj, self.index(e.slice, out)])
        if isinstance(e, (ast.Tuple, ast.List)):
            if any(isinstance(x, ast.Starred) for x in e.elts):
                return self.starred_display(e, out)
            kind = ast.Tuple if isinstance(e, ast.Tuple) else ast.List
            return self.new(kind(elts=[self.atom(x, out) for x in e.elts], ctx=ast.Load()))
        if isinstance(e, ast.Dict):
            if any(k is None for k in e.keys):
                return self.merged_dict(e, out)
            keys = [self.atom(k, out) for k in e.keys]  # type: ignore[arg-type]
            return self.new(ast.Dict(keys=keys, values=[self.atom(v, out) for v in e.values]))
        if isinstance(e, ast.Set):
            return self.helper_call(
                "set",
                [self.new(ast.List(elts=[self.atom(x, out) for x in e.elts], ctx=ast.Load()))],
            )
        if isinstance(e, ast.Compare):
            left = self.atom(e.left, out)
            comps = [self.atom(c, out) for c in e.comparators]
            return self.new(ast.Compare(left=left, ops=e.ops, comparators=comps))
        if isinstance(e, ast.IfExp):
            t = self.fresh()
            test = self.atom(e.test, out)
            body: list[ast.stmt] = []
            body.append(self.assign(t, self.expr(e.body, body)))
            orelse: list[ast.stmt] = []
            orelse.append(self.assign(t, self.expr(e.orelse, orelse)))
            out.append(
                ast.If(test=test, body=body, orelse=orelse, lineno=self.lineno, col_offset=0)
            )
            return self.name(t)
        if isinstance(e, ast.BoolOp):
            return self.boolop(e, out)
        if isinstance(e, (ast.JoinedStr, ast.Lambda)):
            return e
        if isinstance(e, ast.Slice):
            return self.index(e, out)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return self.comprehension(e, out)
        if isinstance(e, ast.NamedExpr):
            # (x := v): bind x, and the value is v's atom (a temporary, or a constant):
            # a later walrus in the statement may rebind x before the value is used.
            value = self.atom(e.value, out)
            out.append(self.assign(e.target.id, value))
            return value
        if isinstance(e, ast.Starred):
            raise self.error(e, "a starred expression is only supported in calls and displays")
        raise self.error(e, f"{type(e).__name__} expressions are not supported")

    def index(self, s: ast.expr, out: list[ast.stmt]) -> ast.expr:
        if isinstance(s, ast.Slice):
            parts = [
                self.atom(p, out) if p is not None else self.new(ast.Constant(None))
                for p in (s.lower, s.upper, s.step)
            ]
            return self.bind(self.helper_call("slice", parts), out)
        if isinstance(s, ast.Tuple):
            elts = [self.index(x, out) for x in s.elts]
            return self.bind(self.new(ast.Tuple(elts=elts, ctx=ast.Load())), out)
        return self.atom(s, out)

    def boolop(self, e: ast.BoolOp, out: list[ast.stmt]) -> ast.expr:
        # a and b  ->  t = a; if t: t = b     (a or b: if not t: t = b)
        t = self.fresh()
        out.append(self.assign(t, self.expr(e.values[0], out)))
        rest = e.values[1:]
        if not rest:
            return self.name(t)
        body: list[ast.stmt] = []
        rest_expr = rest[0] if len(rest) == 1 else ast.BoolOp(op=e.op, values=rest)
        body.append(self.assign(t, self.expr(rest_expr, body)))
        test: ast.expr = self.name(t)
        if isinstance(e.op, ast.Or):
            test = self.new(ast.UnaryOp(op=ast.Not(), operand=self.name(t)))
        out.append(ast.If(test=test, body=body, orelse=[], lineno=self.lineno, col_offset=0))
        return self.name(t)

    def starred_display(self, e: ast.Tuple | ast.List, out: list[ast.stmt]) -> ast.expr:
        # (a, *b, c) -> _ad_concat((a,), b, (c,)) with the display's kind
        parts: list[ast.expr] = []
        run: list[ast.expr] = []
        for x in e.elts:
            if isinstance(x, ast.Starred):
                if run:
                    parts.append(self.bind(self.new(ast.Tuple(elts=run, ctx=ast.Load())), out))
                    run = []
                parts.append(self.atom(x.value, out))
            else:
                run.append(self.atom(x, out))
        if run:
            parts.append(self.bind(self.new(ast.Tuple(elts=run, ctx=ast.Load())), out))
        helper = "_ad_concat_tuple" if isinstance(e, ast.Tuple) else "_ad_concat_list"
        return self.helper_call(helper, parts)

    def call(self, e: ast.Call, out: list[ast.stmt]) -> ast.expr:
        func = self.atom(e.func, out)
        if (  # next(<genexpr>[, default]): the generator runs to its first item only
            type(e.func) is ast.Name
            and e.func.id == "next"
            and 1 <= len(e.args) <= 2
            and not e.keywords
            and isinstance(e.args[0], ast.GeneratorExp)
        ):
            default = [self.atom(a, out) for a in e.args[1:]]
            first = self.comprehension(e.args[0], out, first=True)
            return self.helper_call(
                "_ad_next_or" if default else "_ad_next", [func, first, *default]
            )
        if self.star_calls and not e.keywords:
            # f(a, *b) kept as a call (first-order reverse mode: ``_ad_rcall_star``)
            args = [
                self.new(ast.Starred(self.atom(a.value, out), ast.Load()))
                if isinstance(a, ast.Starred)
                else self.atom(a, out)
                for a in e.args
            ]
            return self.new(ast.Call(func=func, args=args, keywords=[]))
        if any(isinstance(a, ast.Starred) for a in e.args) or any(
            k.arg is None for k in e.keywords
        ):
            return self.splat_call(func, e, out)
        args = [self.atom(a, out) for a in e.args]
        keywords = [
            self.new(ast.keyword(arg=k.arg, value=self.atom(k.value, out))) for k in e.keywords
        ]
        return self.new(ast.Call(func=func, args=args, keywords=keywords))

    def splat_call(self, func: ast.expr, e: ast.Call, out: list[ast.stmt]) -> ast.expr:
        """f(a, *b, k=v, **d) -> _ad_apply(f, _ad_concat_tuple((a,), b), _ad_merge_kw({'k': v}, d))."""
        args = self.atom(
            self.starred_display(self.new(ast.Tuple(elts=e.args, ctx=ast.Load())), out), out
        )
        parts: list[ast.expr] = []
        named: list[ast.keyword] = []
        for k in e.keywords:
            if k.arg is None:
                if named:
                    parts.append(self.bind(self.named_dict(named, out), out))
                    named = []
                parts.append(self.atom(k.value, out))
            else:
                named.append(k)
        if named or not parts:
            parts.append(self.bind(self.named_dict(named, out), out))
        kw = (
            parts[0] if len(parts) == 1 else self.bind(self.helper_call("_ad_merge_kw", parts), out)
        )
        return self.helper_call("_ad_apply", [func, args, kw])

    def merged_dict(self, e: ast.Dict, out: list[ast.stmt]) -> ast.expr:
        """``{**a, "k": v, **b}`` -> ``_ad_merge_dicts(a, {"k": v}, b)``."""
        parts: list[ast.expr] = []
        keys: list[ast.expr] = []
        values: list[ast.expr] = []
        for k, v in zip(e.keys, e.values):
            if k is None:
                if keys:
                    parts.append(self.bind(self.new(ast.Dict(keys=keys, values=values)), out))
                    keys, values = [], []
                parts.append(self.atom(v, out))
            else:
                keys.append(self.atom(k, out))
                values.append(self.atom(v, out))
        if keys:
            parts.append(self.bind(self.new(ast.Dict(keys=keys, values=values)), out))
        return self.helper_call("_ad_merge_dicts", parts)

    def named_dict(self, named: list[ast.keyword], out: list[ast.stmt]) -> ast.Dict:
        keys: list[ast.expr | None] = [self.new(ast.Constant(k.arg)) for k in named]
        return self.new(ast.Dict(keys=keys, values=[self.atom(k.value, out) for k in named]))

    def comprehension(self, e: ast.expr, out: list[ast.stmt], first: bool = False) -> ast.expr:
        """[elt for x in it if c] -> an explicit loop building a list (or set, dict);
        the names it binds are its own (``scoped_comprehension``). ``first``: a
        generator expression ``next`` reads, so the loops stop after one item."""
        e = scoped_comprehension(self, e)
        acc = self.fresh()
        found = self.fresh() if first else ""
        if first:
            out.append(self.assign(found, self.new(ast.Constant(False))))
        if isinstance(e, ast.DictComp):
            out.append(self.assign(acc, self.new(ast.Dict(keys=[], values=[]))))
        else:
            out.append(self.assign(acc, self.new(ast.List(elts=[], ctx=ast.Load()))))
        gens = e.generators  # type: ignore[attr-defined]
        if any(g.is_async for g in gens):
            raise self.error(
                e,
                "async comprehensions cannot be differentiated. To fix: collect the values "
                "first and use a plain comprehension over them",
            )

        def build(i: int) -> list[ast.stmt]:
            body: list[ast.stmt] = []
            if i == len(gens):
                if isinstance(e, ast.DictComp):
                    k = self.atom(e.key, body)
                    v = self.atom(e.value, body)
                    body.append(
                        self.assign(acc, self.helper_call("_ad_setitem", [self.name(acc), k, v]))
                    )
                else:
                    v = self.atom(e.elt, body)  # type: ignore[attr-defined]
                    body.append(
                        self.assign(acc, self.helper_call("_ad_append", [self.name(acc), v]))
                    )
                    if first:
                        body.append(self.assign(found, self.new(ast.Constant(True))))
                return body
            g = gens[i]
            inner = build(i + 1)
            for cond in reversed(g.ifs):
                test_stmts: list[ast.stmt] = []
                test = self.atom(cond, test_stmts)
                inner = [
                    *test_stmts,
                    ast.If(test=test, body=inner, orelse=[], lineno=self.lineno, col_offset=0),
                ]
            if first:  # the form desugar gives a break: `if <flag>: break`, last
                stop = [ast.Break(lineno=self.lineno, col_offset=0)]
                inner.append(
                    ast.If(
                        test=self.name(found),
                        body=stop,
                        orelse=[],
                        lineno=self.lineno,
                        col_offset=0,
                    )
                )
            it_stmts: list[ast.stmt] = []
            it = self.atom(g.iter, it_stmts)
            loop = self.for_loop(g.target, it, inner)
            return [*it_stmts, *loop]

        out.extend(build(0))
        if isinstance(e, ast.SetComp):
            return self.helper_call("set", [self.name(acc)])
        return self.name(acc)

    # --- statements -------------------------------------------------------

    def for_loop(self, target: ast.expr, it: ast.expr, body: list[ast.stmt]) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            return [
                ast.For(
                    target=self.name(target.id, ast.Store()),
                    iter=it,
                    body=body,
                    orelse=[],
                    lineno=self.lineno,
                    col_offset=0,
                )
            ]
        t = self.fresh()
        unpack: list[ast.stmt] = []
        self.assign_target(target, self.name(t), unpack)
        return [
            ast.For(
                target=self.name(t, ast.Store()),
                iter=it,
                body=unpack + body,
                orelse=[],
                lineno=self.lineno,
                col_offset=0,
            )
        ]

    def assign_target(self, target: ast.expr, value: ast.expr, out: list[ast.stmt]) -> None:
        """Assign the flattened right-hand side ``value`` to an arbitrary target."""
        if isinstance(target, ast.Name):
            out.append(self.assign(target.id, value))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            src = value if _is_atom(value) else self.bind(value, out)
            n = len(target.elts)
            star = [i for i, x in enumerate(target.elts) if isinstance(x, ast.Starred)]
            if star:
                (i,) = star
                call = self.helper_call(
                    "_ad_unpack_star",
                    [src, self.new(ast.Constant(i)), self.new(ast.Constant(n - i - 1))],
                )
            else:
                call = self.helper_call("_ad_unpack", [src, self.new(ast.Constant(n))])
            names: list[ast.expr] = []
            nested: list[tuple[ast.expr, str]] = []
            for x in target.elts:
                x = x.value if isinstance(x, ast.Starred) else x
                if isinstance(x, ast.Name):
                    names.append(self.name(x.id, ast.Store()))
                else:
                    t = self.fresh()
                    names.append(self.name(t, ast.Store()))
                    nested.append((x, t))
            out.append(self.assign(self.new(ast.Tuple(elts=names, ctx=ast.Store())), call))
            for x, t in nested:
                self.assign_target(x, self.name(t), out)
            return
        if isinstance(target, ast.Subscript):
            obj = target.value
            if not isinstance(obj, ast.Name):
                obj = self.followed_container(obj, target, out)
            idx = self.index(target.slice, out)
            v = value if _is_atom(value) else self.bind(value, out)
            out.append(
                self.assign(
                    self.container_target(obj.id),
                    self.helper_call("_ad_setitem", [self.name(obj.id), idx, v]),
                )
            )
            return
        if isinstance(target, ast.Attribute):
            obj = target.value
            if not isinstance(obj, ast.Name):
                raise self.error(
                    target,
                    "assignment to a nested attribute (a.b.c = v) is not supported; assign to a local name first",
                )
            v = value if _is_atom(value) else self.bind(value, out)
            out.append(
                self.assign(
                    self.container_target(obj.id),
                    self.helper_call(
                        "_ad_setattr", [self.name(obj.id), self.new(ast.Constant(target.attr)), v]
                    ),
                )
            )
            return
        raise self.error(target, f"assignment to {type(target).__name__} is not supported")

    def stmts(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in body:
            self.lineno = getattr(s, "lineno", self.lineno)
            self.stmt(s, out)
        return out

    def stmt(self, s: ast.stmt, out: list[ast.stmt]) -> None:
        if self.has_walrus:
            self.walrus = walrus_targets(s)
        if isinstance(s, ast.Assign):
            value = self.expr(s.value, out)
            first, *others = s.targets
            if others:  # a = b = value
                value = value if _is_atom(value) else self.bind(value, out)
            self.assign_target(first, value, out)
            for t in others:
                self.assign_target(t, value, out)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign_target(s.target, self.expr(s.value, out), out)
        elif isinstance(s, ast.AugAssign):
            op = BINOPS[type(s.op)]
            if isinstance(s.target, ast.Name):
                rhs = self.atom(s.value, out)
                out.append(
                    self.assign(
                        s.target.id,
                        self.helper_call(f"_ad_iop_{op}", [self.name(s.target.id), rhs]),
                    )
                )
            else:
                load = copy.deepcopy(s.target)
                _set_load(load)
                # Python: t = a[i]; t = t.__iadd__(v); a[i] = t. The update may
                # change the element in place: the generators guard it (ITEM_UPDATE).
                current = self.atom(load, out)
                rhs = self.atom(s.value, out)
                update = self.helper_call(f"_ad_iop_{op}", [current, rhs])
                container = s.target.value  # type: ignore[attr-defined]
                if isinstance(container, ast.Name):
                    setattr(update, ITEM_UPDATE, (ast.unparse(s.target), container.id))
                self.assign_target(s.target, self.bind(update, out), out)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # docstring or bare constant
            if _is_append(s.value) and self.local_root(s.value.func.value):  # type: ignore[attr-defined]
                call = s.value
                receiver = call.func.value  # type: ignore[attr-defined]
                if not isinstance(receiver, ast.Name):  # self.items.append(v)
                    receiver = self.followed_container(receiver, call, out)
                lst = receiver.id
                v = self.atom(call.args[0], out)
                out.append(
                    self.assign(
                        self.container_target(lst),
                        self.helper_call("_ad_append", [self.name(lst), v]),
                    )
                )
                return
            self.atom(s.value, out)
        elif isinstance(s, ast.Return):
            value = self.new(ast.Constant(None)) if s.value is None else self.atom(s.value, out)
            out.append(ast.Return(value=value, lineno=self.lineno, col_offset=0))
        elif isinstance(s, ast.If):
            test = self.atom(s.test, out)
            out.append(
                ast.If(
                    test=test,
                    body=self.stmts(s.body) or [_at(ast.Pass(), s.lineno)],
                    orelse=self.stmts(s.orelse),
                    lineno=s.lineno,
                    col_offset=0,
                )
            )
        elif isinstance(s, ast.For):
            it = self.atom(s.iter, out)
            body = self.stmts(s.body)
            # The loop (its target, its unpacking) sits on the `for` line, not
            # on the body's last line, where the body left ``self.lineno``.
            last, self.lineno = self.lineno, s.lineno
            loop = self.for_loop(s.target, it, body)
            self.lineno = last
            loop[-1].orelse = self.stmts(s.orelse)  # type: ignore[attr-defined]
            out.extend(loop)
        elif isinstance(s, ast.While):
            # The test is recomputed before each iteration: its statements run
            # before the loop and again at the end of the body.
            pre: list[ast.stmt] = []
            test = self.atom(s.test, pre)
            body = self.stmts(s.body)
            again = copy.deepcopy(pre)
            out.extend(pre)
            out.append(
                ast.While(
                    test=test,
                    body=body + again,
                    orelse=self.stmts(s.orelse),
                    lineno=s.lineno,
                    col_offset=0,
                )
            )
        elif isinstance(s, ast.Try):
            out.append(normalize_try(self, s))
        elif isinstance(s, ast.With):
            normalize_with(self, s, out)
        elif isinstance(
            s,
            (
                ast.Break,
                ast.Continue,
                ast.Pass,
                ast.Assert,
                ast.Raise,
                ast.Import,
                ast.ImportFrom,
                ast.FunctionDef,
            ),
        ):
            out.append(s)
        else:
            raise self.error(s, f"{type(s).__name__} statements are not supported")


def _local_names(fn: ast.FunctionDef) -> tuple[set[str], bool]:
    """Names bound in ``fn``'s own scope (parameters, assignments, loop targets, defs,
    walrus targets, ``except ... as`` names); and whether it has a walrus."""
    has_walrus = False
    a = fn.args
    names = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # its body is another scope
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.NamedExpr):
            has_walrus = True
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(al.asname or al.name).split(".")[0] for al in node.names}
        for field in node._fields:  # ast.iter_child_nodes, inline
            v = getattr(node, field, None)
            if type(v) is list:
                stack.extend([x for x in v if isinstance(x, ast.AST)])
            elif isinstance(v, ast.AST):
                stack.append(v)
    return names, has_walrus


def _always_returns(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _is_append(e: ast.expr) -> bool:
    return (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Attribute)
        and e.func.attr == "append"
        and isinstance(e.func.value, (ast.Name, ast.Attribute, ast.Subscript))
        and len(e.args) == 1
        and not e.keywords
        and not isinstance(e.args[0], ast.Starred)
    )


def _set_load(node: ast.AST) -> None:
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()  # type: ignore[attr-defined]


def normalize(tree: ast.FunctionDef, filename: str, star_calls: bool = False) -> ast.FunctionDef:
    """Return the A-normal form of ``tree`` (a new tree; ``tree`` is not modified).

    Leaf expressions (names, constants, operators) may be shared with the input.
    ``star_calls``: a call with ``*`` arguments and no keywords stays a call, its
    arguments atoms or ``Starred`` atoms (first-order reverse mode calls it with
    ``_ad_rcall_star``); otherwise it becomes ``_ad_apply`` of a built tuple.
    """
    tree = copy.copy(tree)
    local, has_walrus = _local_names(tree)
    norm = _Normalizer(filename, tree.name, local)
    norm.has_walrus = has_walrus
    norm.star_calls = star_calls
    norm.lineno = tree.lineno
    body = norm.stmts(tree.body)
    if not _always_returns(body):
        none = _at(ast.Constant(None), norm.lineno)
        body.append(ast.Return(value=none, lineno=norm.lineno, col_offset=0))
    tree.body = body
    tree.written_roots = frozenset(norm.written_roots)  # type: ignore[attr-defined]
    return tree
