"""Pass 1b, protocols: spell out the Python object protocol calls whose effect
the transform cannot see in their usual spelling.

Output form (the same tree, edited in place; nested scopes untouched):

* zero-argument ``super()`` becomes ``super(__class__, <first parameter>)``, so
  that the instance the super object stands for is read by name (its
  derivative flows through the call; ``__class__`` is the method's own cell);
* ``super(...).__init__(...)`` as a statement becomes
  ``<instance> = _ad_super_init(super(...), ...)``: the base class's
  ``__init__`` is differentiated as a constructor of the instance;
* ``setattr(o, k, v)``, ``object.__setattr__(o, k, v)`` and
  ``o.__dict__[k] = v`` as statements become ``o = _ad_setattr(o, k, v)``
  (``_ad_setattr_object``, ``_ad_setdict``): the write rebinds ``o``, like
  ``o.k = v``; ``getattr(o, k)`` and ``object.__getattribute__(o, k)`` become
  ``_ad_getattr(o, k)`` and ``_ad_getattr_object(o, k)``.

A name is rewritten only where it is the builtin (not bound by the function,
its closure or its module).
"""

from __future__ import annotations

import ast
import builtins
import types

__all__ = ["explicit_protocols"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NAMES = ("super", "setattr", "getattr", "object")


def explicit_protocols(tree: ast.FunctionDef, f: types.FunctionType) -> ast.FunctionDef:
    code = f.__code__
    names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars)
    if names.isdisjoint(_NAMES) and "__dict__" not in names:
        return tree  # the usual case: nothing to rewrite
    local = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    builtin = {
        n
        for n in _NAMES
        if n not in local and f.__globals__.get(n, getattr(builtins, n)) is getattr(builtins, n)
    }
    a = tree.args
    params = a.posonlyargs + a.args
    first = params[0].arg if params else None
    zero_arg_super = "__class__" in code.co_freevars and first is not None and "super" in builtin
    _Rewriter(builtin, first if zero_arg_super else None).visit_body(tree)
    return tree


def _is_builtin_call(e: ast.AST, name: str, builtin: set[str]) -> bool:
    return (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Name)
        and e.func.id == name
        and name in builtin
    )


def _is_object_method(e: ast.AST, method: str, builtin: set[str], n: int) -> bool:
    """``object.<method>(...)`` with ``n`` positional arguments and no keywords."""
    return (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Attribute)
        and e.func.attr == method
        and isinstance(e.func.value, ast.Name)
        and e.func.value.id == "object"
        and "object" in builtin
        and len(e.args) == n
        and not e.keywords
        and not any(isinstance(x, ast.Starred) for x in e.args)
    )


class _Rewriter(ast.NodeTransformer):
    def __init__(self, builtin: set[str], first: str | None) -> None:
        self.builtin = builtin
        self.first = first  # the instance for zero-argument super(), if any

    def visit_body(self, fn: ast.FunctionDef) -> None:
        fn.body = [self.visit(s) for s in fn.body]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, _SCOPES):
            return node  # nested scopes are differentiated on their own
        return super().generic_visit(node)

    def _helper(self, name: str, args: list[ast.expr], like: ast.AST, kw=()) -> ast.Call:
        call = ast.Call(ast.Name(name, ast.Load()), args, list(kw))
        ast.copy_location(call.func, like)
        return ast.copy_location(call, like)

    def _rebind(self, target: ast.Name, value: ast.expr, like: ast.stmt) -> ast.stmt:
        store = ast.copy_location(ast.Name(target.id, ast.Store()), like)
        return ast.copy_location(ast.Assign(targets=[store], value=value), like)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = super().generic_visit(node)  # type: ignore[assignment]
        if _is_builtin_call(node, "super", self.builtin) and not node.args and not node.keywords:
            if self.first is not None:
                node.args = [
                    ast.copy_location(ast.Name("__class__", ast.Load()), node),
                    ast.copy_location(ast.Name(self.first, ast.Load()), node),
                ]
            return node
        if (
            _is_builtin_call(node, "getattr", self.builtin)
            and len(node.args) == 2
            and not node.keywords
            and not any(isinstance(x, ast.Starred) for x in node.args)
        ):
            return self._helper("_ad_getattr", node.args, node)
        if _is_object_method(node, "__getattribute__", self.builtin, 2):
            return self._helper("_ad_getattr_object", node.args, node)
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        node = super().generic_visit(node)  # type: ignore[assignment]
        e = node.value
        if not isinstance(e, ast.Call) or any(isinstance(x, ast.Starred) for x in e.args):
            return node
        target = e.args[0] if e.args else None
        if isinstance(target, ast.Name) and not e.keywords and len(e.args) == 3:
            if _is_builtin_call(e, "setattr", self.builtin):
                return self._rebind(target, self._helper("_ad_setattr", e.args, e), node)
            if _is_object_method(e, "__setattr__", self.builtin, 3):
                return self._rebind(target, self._helper("_ad_setattr_object", e.args, e), node)
        f = e.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "__init__"
            and _is_builtin_call(f.value, "super", self.builtin)
            and len(f.value.args) == 2  # type: ignore[attr-defined]
            and isinstance(f.value.args[1], ast.Name)  # type: ignore[attr-defined]
        ):
            instance = f.value.args[1]  # type: ignore[attr-defined]
            call = self._helper("_ad_super_init", [f.value, *e.args], e, e.keywords)
            return self._rebind(instance, call, node)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        node = super().generic_visit(node)  # type: ignore[assignment]
        if len(node.targets) != 1:
            return node
        t = node.targets[0]
        if (
            isinstance(t, ast.Subscript)
            and isinstance(t.value, ast.Attribute)
            and t.value.attr == "__dict__"
            and isinstance(t.value.value, ast.Name)
            and not isinstance(t.slice, ast.Slice)
        ):
            obj = ast.copy_location(ast.Name(t.value.value.id, ast.Load()), t)
            call = self._helper("_ad_setdict", [obj, t.slice, node.value], node)
            return self._rebind(obj, call, node)
        return node
