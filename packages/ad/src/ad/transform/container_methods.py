"""Pass 1d, container methods: the structural methods of lists and dicts that
write their receiver, spelled as the item reads and writes the AD follows.

``xs.pop(i)`` changes the *object* ``xs``; the AD follows writes by the
rebinding of the name written through (``anf_base.IN_PLACE_HELPERS``: the
ownership and argument guards judge each as they judge ``xs[i] = v`` and
``xs.append(v)``). So a call statement (alone, as the value of one assignment,
or returned) whose receiver is a name the function binds or receives becomes,
its arguments evaluated once and in order::

    _ad_cm1 = i
    if _ad_type(xs) is list:
        v = xs[_ad_cm1]
        del xs[_ad_cm1]                  # xs = _ad_delitem(xs, _ad_cm1)
    else:
        v = xs.pop(_ad_cm1)              # anything else: as written

The spellings, each Python's documented equivalent: on a list ``pop`` (a read
and ``del``), ``insert`` (an append, then the entries after ``i`` move up one),
``extend`` (an append per entry), ``remove`` (``del`` at the first equal entry),
``reverse`` and ``sort`` (each entry written from ``xs[::-1]`` or ``sorted``:
the derivative is the permutation) and ``clear`` (``del xs[:]``); on a dict
``pop`` (with or without a default), ``setdefault``, ``update`` (from a dict
or keywords) and ``clear``.
"""

from __future__ import annotations

import ast
import copy
import itertools
import types
from typing import Any

from ad.transform.writers import rewrite_statements

__all__ = ["spelled_as_item_writes"]

_LIST = {"pop", "insert", "extend", "remove", "reverse", "sort", "clear"}
_DICT = {"pop", "setdefault", "update", "clear"}
#: The builtins the spellings name.
_BUILTINS = frozenset(["list", "dict", "sorted"])


def spelled_as_item_writes(tree: ast.FunctionDef, f: types.FunctionType) -> ast.FunctionDef:
    """``tree`` (edited in place) with each list or dict method call statement on a
    local name spelled as item reads and writes (see the module docstring)."""
    code = f.__code__
    local = set(code.co_varnames) | set(code.co_cellvars)
    if _BUILTINS & (local | set(code.co_freevars) | set(f.__globals__)):
        return tree  # a builtin the spellings call is shadowed: all as written
    counter = itertools.count(1)
    return rewrite_statements(tree, lambda s: _rewritten(s, local, counter))


def _rewritten(s: ast.stmt, local: set[str], counter: Any) -> list[ast.stmt] | None:
    """The statements ``s`` becomes, or None where it stays as written."""
    target: ast.expr | None = None
    if isinstance(s, ast.Expr):
        e = s.value
    elif isinstance(s, ast.Assign) and len(s.targets) == 1:
        e, target = s.value, s.targets[0]
    elif isinstance(s, ast.Return) and s.value is not None:
        e, target = s.value, ast.Name("_ad_cmr", ast.Store())
    else:
        return None
    if not (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Attribute)
        and isinstance(e.func.value, ast.Name)
        and e.func.value.id in local
        and e.func.attr in _LIST | _DICT
        and not any(isinstance(a, ast.Starred) for a in e.args)
        and not any(k.arg is None for k in e.keywords)
    ):
        return None
    name, method = e.func.value.id, e.func.attr
    b = _Builder(s, counter)
    args = [b.temp(a) for a in e.args]
    kwargs = {k.arg: b.temp(k.value) for k in e.keywords}
    call = ast.Call(
        ast.Attribute(b.load(name), method, ast.Load()),
        [b.load(a) for a in args],
        [ast.keyword(k, b.load(v)) for k, v in kwargs.items()],
    )
    fallback: list[ast.stmt] = [b.result(target, call)]
    branches = []
    if method in _LIST:
        spelled = _list_spelling(b, name, method, args, kwargs, target)
        if spelled is not None:
            branches.append(("list", spelled))
    if method in _DICT:
        spelled = _dict_spelling(b, name, method, args, kwargs, target)
        if spelled is not None:
            branches.append(("dict", spelled))
    if not branches:
        return None
    chain = fallback
    for kind, body in reversed(branches):
        test = ast.Compare(
            ast.Call(b.load("_ad_type"), [b.load(name)], []), [ast.Is()], [b.load(kind)]
        )
        chain = [ast.If(test, body, chain)]
    out = b.pre + chain
    if isinstance(s, ast.Return):
        out.append(ast.Return(b.load("_ad_cmr")))
    return [ast.fix_missing_locations(ast.copy_location(x, s)) for x in _located(out, s)]


def _located(stmts: list[ast.stmt], like: ast.stmt) -> list[ast.stmt]:
    """``stmts``, every node at ``like``'s line."""
    for x in stmts:
        for n in ast.walk(x):
            if "lineno" in n._attributes:
                ast.copy_location(n, like)
    return stmts


class _Builder:
    """The temporaries of one rewritten statement, evaluated before the test."""

    def __init__(self, s: ast.stmt, counter: Any) -> None:
        self.s, self.counter, self.pre = s, counter, []  # type: list[ast.stmt]

    def fresh(self) -> str:
        return f"_ad_cm{next(self.counter)}"

    def temp(self, e: ast.expr) -> str:
        t = self.fresh()
        self.pre.append(ast.Assign([ast.Name(t, ast.Store())], e))
        return t

    @staticmethod
    def load(name: str) -> ast.Name:
        return ast.Name(name, ast.Load())

    def result(self, target: ast.expr | None, value: ast.expr) -> ast.stmt:
        """``target = value``, or ``value`` as a statement."""
        if target is None:
            return ast.Expr(value)
        return ast.Assign([copy.deepcopy(target)], value)

    def item(self, name: str, key: ast.expr) -> ast.Subscript:
        return ast.Subscript(self.load(name), key, ast.Load())

    def delete(self, name: str, key: ast.expr) -> ast.Delete:
        return ast.Delete([ast.Subscript(self.load(name), key, ast.Del())])

    def setitem(self, name: str, key: ast.expr, value: ast.expr) -> ast.Assign:
        return ast.Assign([ast.Subscript(self.load(name), key, ast.Store())], value)

    def call(self, fn: str, *args: ast.expr, **kw: ast.expr) -> ast.Call:
        return ast.Call(self.load(fn), list(args), [ast.keyword(k, v) for k, v in kw.items()])


def _const(v: Any) -> ast.Constant:
    return ast.Constant(v)


def _list_spelling(
    b: _Builder,
    xs: str,
    method: str,
    args: list[str],
    kwargs: dict[str | None, str],
    target: ast.expr | None,
) -> list[ast.stmt] | None:
    """The statements ``xs.<method>(...)`` is on a list, or None (as written)."""
    load, n = b.load, len(args)
    if method == "pop" and n <= 1 and not kwargs:
        key: ast.expr = load(args[0]) if args else _const(-1)
        out: list[ast.stmt] = []
        if target is not None:
            out.append(b.result(target, b.item(xs, key)))
        return [*out, b.delete(xs, copy.deepcopy(key))]
    if method == "insert" and n == 2 and not kwargs:
        # the position list.insert clamps i to: len(range(len(xs))[:i])
        k, j = b.fresh(), b.fresh()
        length = b.call("_ad_len", load(xs))
        clamp = b.call(
            "_ad_len",
            ast.Subscript(b.call("_ad_range", length), ast.Slice(None, load(args[0])), ast.Load()),
        )
        shift = ast.For(
            ast.Name(j, ast.Store()),
            b.call(
                "_ad_range",
                ast.BinOp(b.call("_ad_len", load(xs)), ast.Sub(), _const(1)),
                load(k),
                _const(-1),
            ),
            [b.setitem(xs, load(j), b.item(xs, ast.BinOp(load(j), ast.Sub(), _const(1))))],
            [],
        )
        return [
            ast.Assign([ast.Name(k, ast.Store())], clamp),
            ast.Expr(ast.Call(ast.Attribute(load(xs), "append", ast.Load()), [load(args[1])], [])),
            shift,
            b.setitem(xs, load(k), load(args[1])),
        ] + _none(b, target)
    if method == "extend" and n == 1 and not kwargs:
        # appended one by one (of a copy: xs.extend(xs) doubles xs once)
        j = b.fresh()
        appends = ast.For(
            ast.Name(j, ast.Store()),
            b.call("list", load(args[0])),
            [ast.Expr(ast.Call(ast.Attribute(load(xs), "append", ast.Load()), [load(j)], []))],
            [],
        )
        return [appends] + _none(b, target)
    if method == "clear" and not args and not kwargs:
        return [b.delete(xs, ast.Slice())] + _none(b, target)
    if method == "remove" and n == 1 and not kwargs:
        # the first entry that is the value or equals it (list.remove's test)
        k = b.fresh()
        entry = b.item(xs, load(k))
        found = ast.BoolOp(
            ast.Or(),
            [
                ast.Compare(entry, [ast.Is()], [load(args[0])]),
                ast.Compare(copy.deepcopy(entry), [ast.Eq()], [load(args[0])]),
            ],
        )
        missing = ast.Raise(b.call("_ad_ValueError", _const("list.remove(x): x not in list")))
        search = ast.For(
            ast.Name(k, ast.Store()),
            b.call("_ad_range", b.call("_ad_len", load(xs))),
            [ast.If(found, [ast.Break()], [])],
            [missing],
        )
        return [search, b.delete(xs, load(k))] + _none(b, target)
    if method in ("reverse", "sort"):
        if method == "reverse" and (args or kwargs):
            return None
        if method == "sort" and (args or set(kwargs) - {"key", "reverse"}):
            return None
        t, j = b.fresh(), b.fresh()
        if method == "reverse":
            new: ast.expr = ast.Subscript(load(xs), ast.Slice(None, None, _const(-1)), ast.Load())
        else:
            new = b.call("sorted", load(xs), **{str(k): load(v) for k, v in kwargs.items()})
        copy_back = ast.For(
            ast.Name(j, ast.Store()),
            b.call("_ad_range", b.call("_ad_len", load(xs))),
            [b.setitem(xs, load(j), b.item(t, load(j)))],
            [],
        )
        return [ast.Assign([ast.Name(t, ast.Store())], new), copy_back] + _none(b, target)
    return None


def _dict_spelling(
    b: _Builder,
    d: str,
    method: str,
    args: list[str],
    kwargs: dict[str | None, str],
    target: ast.expr | None,
) -> list[ast.stmt] | None:
    """The statements ``d.<method>(...)`` is on a dict, or None (as written)."""
    load, n = b.load, len(args)
    if method == "pop" and n in (1, 2) and not kwargs:
        k = load(args[0])
        taken: list[ast.stmt] = []
        if target is not None:
            taken.append(b.result(target, b.item(d, k)))
        taken.append(b.delete(d, load(args[0])))
        if n == 1:
            return taken
        absent = [b.result(target, load(args[1]))] if target is not None else [ast.Pass()]
        return [ast.If(ast.Compare(load(args[0]), [ast.In()], [load(d)]), taken, absent)]
    if method == "setdefault" and n in (1, 2) and not kwargs:
        default = load(args[1]) if n == 2 else _const(None)
        out: list[ast.stmt] = [
            ast.If(
                ast.Compare(load(args[0]), [ast.NotIn()], [load(d)]),
                [b.setitem(d, load(args[0]), default)],
                [],
            )
        ]
        if target is not None:
            out.append(b.result(target, b.item(d, load(args[0]))))
        return out
    if method == "update" and n <= 1:
        out = []
        if args:  # from a dict (anything else: as written)
            k = b.fresh()
            copy_in = ast.For(
                ast.Name(k, ast.Store()),
                load(args[0]),
                [b.setitem(d, load(k), b.item(args[0], load(k)))],
                [],
            )
            test = ast.Compare(b.call("_ad_type", load(args[0])), [ast.Is()], [load("dict")])
            fallback = ast.Expr(
                ast.Call(ast.Attribute(load(d), "update", ast.Load()), [load(args[0])], [])
            )
            out.append(ast.If(test, [copy_in], [fallback]))
        out += [b.setitem(d, _const(k), load(v)) for k, v in kwargs.items()]
        return out + _none(b, target)
    if method == "clear" and not args and not kwargs:
        k = b.fresh()
        keys = b.call("list", load(d))
        return [ast.For(ast.Name(k, ast.Store()), keys, [b.delete(d, load(k))], [])] + _none(
            b, target
        )
    return None


def _none(b: _Builder, target: ast.expr | None) -> list[ast.stmt]:
    """``target = None`` (the method's value), where the result is bound."""
    return [] if target is None else [b.result(target, _const(None))]
