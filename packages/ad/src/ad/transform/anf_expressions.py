"""The part of pass 3 (``anf``) that flattens expressions to atoms.

Operators become calls of ``_ad_op_<name>``, attribute reads and subscripts
calls of ``_ad_getattr`` and ``_ad_op_getitem``; ``and``/``or`` and
conditional expressions become ``if`` statements; a call's ``*``/``**``
arguments are built as a tuple and a dict (or kept, ``star_calls``); a
comprehension becomes a loop in the function's scope (its names renamed, see
``anf_control``). Each method appends the statements it needs to ``out`` and
returns an atom or one ANF right-hand side.
"""

from __future__ import annotations

import ast

from ad.transform.anf_base import BINOPS, UNARYOPS, is_atom
from ad.transform.container_methods import ContainerMethods

__all__ = ["Expressions"]


class Expressions(ContainerMethods):
    """Expressions, for ``anf._Normalizer``."""

    def atom(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        """Flatten ``e``, appending statements to ``out``; return an atom.

        A name that a walrus of the same statement binds is read into a
        temporary: Python reads its value here, and the walrus may rebind it
        before the statement uses the atom (``f(x, (x := g(x)))``)."""
        if is_atom(e):
            if self.walrus and type(e) is ast.Name and e.id in self.walrus:
                return self.bind(e, out)
            return e
        value = self.expr(e, out)
        if is_atom(value):
            return value
        return self.bind(value, out)

    def expr(self, e: ast.expr, out: list[ast.stmt]) -> ast.expr:
        """Flatten ``e`` to one ANF right-hand side (not necessarily an atom)."""
        if is_atom(e):
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
        spelled = self.container_call(e, out)  # xs.pop(), d.setdefault(k, v), ...
        if spelled is not None:
            return spelled
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
        e = self.scoped_comprehension(e)
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
