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
``x = _ad_iop_add(x, y)``; ``lst.append(v)`` becomes ``lst = _ad_append(lst, v)``;
``del a[i]`` becomes ``a = _ad_delitem(a, i)``; ``xs.pop()``, ``d.setdefault(k, v)``
and the other methods that write a list or dict are spelled as item reads and
writes, wherever they stand (``container_methods``).
Conditional expressions and ``and``/``or`` used as values become ``if``
statements; a walrus ``(x := v)`` becomes ``x = v`` where Python evaluates it.
Line numbers of the source statement are kept on every output statement, and
every node has a location (a new node has the line of the statement it is in).

Here: ``normalize`` and the statements (``_Normalizer``). Its parts, the bases
of ``_Normalizer``: ``anf_base`` (the operators' helper names, the state and
node builders), ``anf_expressions``, ``anf_control`` (``try``, ``with``, the
walrus, a comprehension's scope).
"""

from __future__ import annotations

import ast
import copy

from ad.transform.anf_base import BINOPS, ITEM_UPDATE, at, is_atom
from ad.transform.anf_control import ControlForms, walrus_targets
from ad.transform.anf_expressions import Expressions

__all__ = ["normalize"]


class _Normalizer(Expressions, ControlForms):
    """Flattens one function: the statements here, the rest in its bases."""

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
            src = value if is_atom(value) else self.bind(value, out)
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
            v = value if is_atom(value) else self.bind(value, out)
            out.append(
                self.assign(
                    self.container_target(obj.id),
                    self.helper_call("_ad_setitem", [self.name(obj.id), idx, v]),
                )
            )
            return
        if isinstance(target, ast.Attribute):
            obj = target.value
            if not isinstance(obj, ast.Name):  # a.b.c = v: into the object a.b, followed
                obj = self.followed_container(obj, target, out)
            v = value if is_atom(value) else self.bind(value, out)
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
                value = value if is_atom(value) else self.bind(value, out)
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
            if self.container_call(s.value, out, bind=False) is not None:
                return  # xs.pop(), its value unused
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
                    body=self.stmts(s.body) or [at(ast.Pass(), s.lineno)],
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
        elif isinstance(s, ast.Delete):  # del a[i], del a[i:j], del d[k] (fence refuses others)
            for t in s.targets:
                assert isinstance(t, ast.Subscript)
                obj = t.value
                if not isinstance(obj, ast.Name):  # del self.items[0]: into the object, followed
                    obj = self.followed_container(obj, t, out)
                idx = self.index(t.slice, out)
                call = self.helper_call("_ad_delitem", [self.name(obj.id), idx])
                out.append(self.assign(self.container_target(obj.id), call))
        elif isinstance(s, ast.Try):
            out.append(self.normalize_try(s))
        elif isinstance(s, ast.With):
            self.normalize_with(s, out)
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


def normalize(
    tree: ast.FunctionDef, filename: str, star_calls: bool = False, methods: bool = True
) -> ast.FunctionDef:
    """Return the A-normal form of ``tree`` (a new tree; ``tree`` is not modified).

    Leaf expressions (names, constants, operators) may be shared with the input.
    ``star_calls``: a call with ``*`` arguments and no keywords stays a call, its
    arguments atoms or ``Starred`` atoms (first-order reverse mode calls it with
    ``_ad_rcall_star``); otherwise it becomes ``_ad_apply`` of a built tuple.
    ``methods``: spell the container methods that write their receiver as item
    writes (``container_methods``; ``methods_spelled`` says whether it may).
    """
    tree = copy.copy(tree)
    local, has_walrus = _local_names(tree)
    norm = _Normalizer(filename, tree.name, local)
    norm.has_walrus = has_walrus
    norm.star_calls = star_calls
    norm.methods = methods
    norm.lineno = tree.lineno
    body = norm.stmts(tree.body)
    if not _always_returns(body):
        none = at(ast.Constant(None), norm.lineno)
        body.append(ast.Return(value=none, lineno=norm.lineno, col_offset=0))
    tree.body = body
    tree.written_roots = frozenset(norm.written_roots)  # type: ignore[attr-defined]
    return tree
