"""Part of pass 3 (``anf``), container methods: the structural methods of lists
and dicts that write their receiver, spelled as the item reads and writes the
AD follows, wherever the call stands in an expression.

``xs.pop(i)`` changes the *object* ``xs``; the AD follows writes by the
rebinding of the name written through (``anf_base.IN_PLACE_HELPERS``: the
ownership and argument guards judge each as they judge ``xs[i] = v`` and
``xs.append(v)``). The normaliser meets the call as one step of flattening its
expression (``s + st.pop()``, ``f(xs.pop(0), xs.pop())``, a loop's test, a
comprehension's element, ``return xs.pop() ** 2 + d.pop("k")``), after what
Python evaluates before it and before what it evaluates after, the receiver and
then the arguments made atoms; the call becomes::

    if _ad_type(xs) is list:
        _ad_cm1 = xs[i]
        del xs[i]                        # xs = _ad_delitem(xs, i)
    else:
        _ad_cm1 = xs.pop(i)              # anything else: as written

and the expression reads ``_ad_cm1``. A receiver read out of an object or a
container of a local name (``self.items.pop()``, ``state["hist"].pop(0)``,
``obj.d.setdefault(k, v)``) is the container itself, followed by identity as
for ``self.items.append(v)`` (``anf_base.followed_container``): the write is
seen through every holder.

The spellings, each Python's documented equivalent: on a list ``pop`` (a read
and ``del``), ``insert`` (an append, then the entries after ``i`` move up one),
``extend`` (an append per entry), ``remove`` (``del`` at the first equal entry),
``reverse`` and ``sort`` (each entry written from ``xs[::-1]`` or ``sorted``:
the derivative is the permutation) and ``clear`` (``del xs[:]``); on a dict
``pop`` (with or without a default), ``popitem`` (the last key, LIFO),
``setdefault``, ``update`` (from a dict or keywords) and ``clear``.
"""

from __future__ import annotations

import ast
import copy
import re
import types
from collections.abc import Callable

from ad.transform.anf_base import Normalizer, at

__all__ = ["ContainerMethods", "methods_spelled"]

#: ``{method: (positional counts, keywords allowed)}`` of each spelling
#: (``True``: any keyword names)
_LIST: dict[str, tuple[tuple[int, ...], frozenset[str] | bool]] = {
    "pop": ((0, 1), frozenset()),
    "insert": ((2,), frozenset()),
    "extend": ((1,), frozenset()),
    "remove": ((1,), frozenset()),
    "reverse": ((0,), frozenset()),
    "sort": ((0,), frozenset(["key", "reverse"])),
    "clear": ((0,), frozenset()),
}
_DICT: dict[str, tuple[tuple[int, ...], frozenset[str] | bool]] = {
    "pop": ((1, 2), frozenset()),
    "popitem": ((0,), frozenset()),
    "setdefault": ((1, 2), frozenset()),
    "update": ((0, 1), True),
    "clear": ((0,), frozenset()),
}
#: The builtins the spellings name.
_BUILTINS = frozenset(["list", "dict", "sorted"])
#: A comprehension's own name (``anf_control.scoped_comprehension``).
_RENAMED = re.compile(r"_ad_c\d+_.+")
#: Set on the call a spelling keeps as written (its ``else``): not spelled again.
_AS_WRITTEN = "_ad_as_written"


def methods_spelled(f: types.FunctionType) -> bool:
    """Whether ``f``'s container method calls may be spelled: no builtin the
    spellings call is shadowed (else all run as written)."""
    code = f.__code__
    names = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    return not (_BUILTINS & (names | set(f.__globals__)))


def _kinds(method: str, n: int, keywords: set[str]) -> list[str]:
    """The receiver kinds (``"list"``, ``"dict"``) with a spelling of this call."""
    out = []
    for kind, table in (("list", _LIST), ("dict", _DICT)):
        shape = table.get(method)
        if shape is None or n not in shape[0]:
            continue
        if shape[1] is True or keywords <= shape[1]:  # type: ignore[operator]
            out.append(kind)
    return out


class ContainerMethods(Normalizer):
    """Container method calls, for ``anf._Normalizer`` (see the module)."""

    #: whether to spell them (``methods_spelled``); set by ``anf.normalize``
    methods = True

    def container_call(
        self, e: ast.expr, out: list[ast.stmt], bind: bool = True
    ) -> ast.expr | None:
        """The atom holding the value of the container method call ``e``, its
        statements appended to ``out``; None (nothing appended) where ``e`` is no
        such call on a local list or dict, or one without a spelling. ``bind``
        False: the value is not used (a constant comes back)."""
        if not (
            self.methods
            and type(e) is ast.Call
            and type(e.func) is ast.Attribute
            and not getattr(e, _AS_WRITTEN, False)
            and not any(isinstance(a, ast.Starred) for a in e.args)
            and not any(k.arg is None for k in e.keywords)
        ):
            return None
        method, recv = e.func.attr, e.func.value
        kinds = _kinds(method, len(e.args), {str(k.arg) for k in e.keywords})
        root = recv
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if not (kinds and type(root) is ast.Name and self._local(root.id)):
            return None
        if root.id in self.walrus:  # rebound by a walrus of this statement
            return None
        held = root.id
        if root is not recv:  # self.items.pop(): the container, followed from its root
            self.written_roots.add(held)
            out.append(self.assign(held, self.helper_call("_ad_follow", [self.name(held)])))
            held = self.atom(recv, out).id  # type: ignore[attr-defined]
        args = [self.atom(a, out) for a in e.args]
        kwargs = {str(k.arg): self.atom(k.value, out) for k in e.keywords}
        result = self._temp() if bind else None
        b = _Builder(self._temp)
        call = ast.Call(
            ast.Attribute(b.load(held), method, ast.Load()),
            [copy.deepcopy(a) for a in args],
            [ast.keyword(k, copy.deepcopy(v)) for k, v in kwargs.items()],
        )
        setattr(call, _AS_WRITTEN, True)
        chain: list[ast.stmt] = [b.result(result, call)]
        for kind in reversed(kinds):
            xs, body = held, []
            if root is not recv:
                xs = self.fresh()
                self.locals.add(xs)
                site = ast.Constant(f"{self.filename}:{self.lineno}")
                written = b.call("_ad_follow_written", b.load(held), site)
                body.append(ast.Assign([ast.Name(xs, ast.Store())], written))
            spell = _list_spelling if kind == "list" else _dict_spelling
            body += spell(b, xs, method, args, kwargs, result)
            test = ast.Compare(b.call("_ad_type", b.load(held)), [ast.Is()], [b.load(kind)])
            chain = [ast.If(test, body, chain)]
        line, walrus = self.lineno, self.walrus
        for s in chain:
            for node in ast.walk(s):
                if "lineno" in node._attributes:
                    at(node, line)
        out.extend(self.stmts(chain))
        self.lineno, self.walrus = line, walrus
        return ast.Constant(None) if result is None else self.name(result)

    def _local(self, name: str) -> bool:
        """A name of this function's scope (a comprehension's, renamed, included)."""
        return name in self.locals or _RENAMED.fullmatch(name) is not None

    def _temp(self) -> str:
        """A fresh local name the spellings bind (``_ad_cm<n>``)."""
        self.counter += 1
        name = f"_ad_cm{self.counter}"
        self.locals.add(name)
        return name


class _Builder:
    """The nodes of one spelling (source form, normalised after)."""

    def __init__(self, fresh: Callable[[], str]) -> None:
        self.fresh = fresh

    @staticmethod
    def load(name: str) -> ast.Name:
        return ast.Name(name, ast.Load())

    @staticmethod
    def arg(a: ast.expr) -> ast.expr:
        """An atom argument, as a new node."""
        return copy.deepcopy(a)

    def result(self, target: str | None, value: ast.expr) -> ast.stmt:
        """``target = value``, or ``value`` as a statement."""
        if target is None:
            return ast.Expr(value)
        return ast.Assign([ast.Name(target, ast.Store())], value)

    def item(self, name: str, key: ast.expr) -> ast.Subscript:
        return ast.Subscript(self.load(name), key, ast.Load())

    def delete(self, name: str, key: ast.expr) -> ast.Delete:
        return ast.Delete([ast.Subscript(self.load(name), key, ast.Del())])

    def setitem(self, name: str, key: ast.expr, value: ast.expr) -> ast.Assign:
        return ast.Assign([ast.Subscript(self.load(name), key, ast.Store())], value)

    def call(self, fn: str, *args: ast.expr, **kw: ast.expr) -> ast.Call:
        return ast.Call(self.load(fn), list(args), [ast.keyword(k, v) for k, v in kw.items()])

    def append(self, name: str, value: ast.expr) -> ast.Expr:
        return ast.Expr(ast.Call(ast.Attribute(self.load(name), "append", ast.Load()), [value], []))

    def none(self, target: str | None) -> list[ast.stmt]:
        """``target = None`` (the method's value), where the result is bound."""
        return [] if target is None else [self.result(target, ast.Constant(None))]


def _list_spelling(
    b: _Builder,
    xs: str,
    method: str,
    args: list[ast.expr],
    kwargs: dict[str, ast.expr],
    target: str | None,
) -> list[ast.stmt]:
    """The statements ``xs.<method>(...)`` is on a list (``_kinds`` allows it)."""
    load, arg = b.load, b.arg
    if method == "pop":
        key = arg(args[0]) if args else ast.Constant(-1)
        out: list[ast.stmt] = []
        if target is not None:
            out.append(b.result(target, b.item(xs, key)))
        return [*out, b.delete(xs, copy.deepcopy(key))]
    if method == "insert":
        # the position list.insert clamps i to: len(range(len(xs))[:i])
        k, j = b.fresh(), b.fresh()
        length = b.call("_ad_len", load(xs))
        clamp = b.call(
            "_ad_len",
            ast.Subscript(b.call("_ad_range", length), ast.Slice(None, arg(args[0])), ast.Load()),
        )
        shift = ast.For(
            ast.Name(j, ast.Store()),
            b.call(
                "_ad_range",
                ast.BinOp(b.call("_ad_len", load(xs)), ast.Sub(), ast.Constant(1)),
                load(k),
                ast.Constant(-1),
            ),
            [b.setitem(xs, load(j), b.item(xs, ast.BinOp(load(j), ast.Sub(), ast.Constant(1))))],
            [],
        )
        return [
            ast.Assign([ast.Name(k, ast.Store())], clamp),
            b.append(xs, arg(args[1])),
            shift,
            b.setitem(xs, load(k), arg(args[1])),
            *b.none(target),
        ]
    if method == "extend":
        # appended one by one (of a copy: xs.extend(xs) doubles xs once)
        j = b.fresh()
        appends = ast.For(
            ast.Name(j, ast.Store()), b.call("list", arg(args[0])), [b.append(xs, load(j))], []
        )
        return [appends, *b.none(target)]
    if method == "clear":
        return [b.delete(xs, ast.Slice()), *b.none(target)]
    if method == "remove":
        # the first entry that is the value or equals it (list.remove's test); no
        # ``break``: the normaliser runs after ``desugar``
        k, j, v = b.fresh(), b.fresh(), b.fresh()  # v: a name (``is`` of a literal warns)
        entry = b.item(xs, load(j))
        found = ast.BoolOp(
            ast.Or(),
            [
                ast.Compare(entry, [ast.Is()], [load(v)]),
                ast.Compare(copy.deepcopy(entry), [ast.Eq()], [load(v)]),
            ],
        )
        unset = ast.Compare(load(k), [ast.Lt()], [ast.Constant(0)])
        search = ast.For(
            ast.Name(j, ast.Store()),
            b.call("_ad_range", b.call("_ad_len", load(xs))),
            [ast.If(unset, [ast.If(found, [b.result(k, load(j))], [])], [])],
            [],
        )
        missing = ast.Raise(b.call("_ad_ValueError", ast.Constant("list.remove(x): x not in list")))
        return [
            b.result(v, arg(args[0])),
            b.result(k, ast.Constant(-1)),
            search,
            ast.If(copy.deepcopy(unset), [missing], []),
            b.delete(xs, load(k)),
            *b.none(target),
        ]
    # reverse, sort
    t, j = b.fresh(), b.fresh()
    if method == "reverse":
        new: ast.expr = ast.Subscript(load(xs), ast.Slice(None, None, ast.Constant(-1)), ast.Load())
    else:
        new = b.call("sorted", load(xs), **{k: arg(v) for k, v in kwargs.items()})
    copy_back = ast.For(
        ast.Name(j, ast.Store()),
        b.call("_ad_range", b.call("_ad_len", load(xs))),
        [b.setitem(xs, load(j), b.item(t, load(j)))],
        [],
    )
    return [ast.Assign([ast.Name(t, ast.Store())], new), copy_back, *b.none(target)]


def _dict_spelling(
    b: _Builder,
    d: str,
    method: str,
    args: list[ast.expr],
    kwargs: dict[str, ast.expr],
    target: str | None,
) -> list[ast.stmt]:
    """The statements ``d.<method>(...)`` is on a dict (``_kinds`` allows it)."""
    load, arg, n = b.load, b.arg, len(args)
    if method == "pop":
        taken: list[ast.stmt] = []
        if target is not None:
            taken.append(b.result(target, b.item(d, arg(args[0]))))
        taken.append(b.delete(d, arg(args[0])))
        if n == 1:
            return taken
        absent = [b.result(target, arg(args[1]))] if target is not None else [ast.Pass()]
        return [ast.If(ast.Compare(arg(args[0]), [ast.In()], [load(d)]), taken, absent)]
    if method == "popitem":
        # the last key inserted (LIFO), then as pop
        k = b.fresh()
        out: list[ast.stmt] = [
            ast.Assign([ast.Name(k, ast.Store())], b.call("_ad_last_key", load(d)))
        ]
        if target is not None:
            pair = ast.Tuple([load(k), b.item(d, load(k))], ast.Load())
            out.append(b.result(target, pair))
        return [*out, b.delete(d, load(k))]
    if method == "setdefault":
        default = arg(args[1]) if n == 2 else ast.Constant(None)
        out = [
            ast.If(
                ast.Compare(arg(args[0]), [ast.NotIn()], [load(d)]),
                [b.setitem(d, arg(args[0]), default)],
                [],
            )
        ]
        if target is not None:
            out.append(b.result(target, b.item(d, arg(args[0]))))
        return out
    if method == "update":
        out = []
        if args:  # from a dict (anything else: as written)
            k = b.fresh()
            copy_in = ast.For(
                ast.Name(k, ast.Store()),
                arg(args[0]),
                [b.setitem(d, load(k), ast.Subscript(arg(args[0]), load(k), ast.Load()))],
                [],
            )
            test = ast.Compare(b.call("_ad_type", arg(args[0])), [ast.Is()], [load("dict")])
            as_written = ast.Call(ast.Attribute(load(d), "update", ast.Load()), [arg(args[0])], [])
            setattr(as_written, _AS_WRITTEN, True)
            out.append(ast.If(test, [copy_in], [ast.Expr(as_written)]))
        out += [b.setitem(d, ast.Constant(k), arg(v)) for k, v in kwargs.items()]
        return out + b.none(target)
    # clear
    k = b.fresh()
    keys = b.call("list", load(d))
    return [ast.For(ast.Name(k, ast.Store()), keys, [b.delete(d, load(k))], []), *b.none(target)]
