"""Pass 4b, obtained holders: containers got from a call, compared around later calls.

Input: an ANF ``FunctionDef`` after ``holders``. Output: the same function where
each active call of user code that a local name obtained from another call
(``add, store = make()``, ``cache = get_cache()``) is in scope of is bracketed::

    _ad_ob = _ad_obtained_entries(add, store)
    _ad_t3 = add(_ad_t2)
    _ad_guard = _ad_obtained_unchanged(_ad_ob, 'file.py:12', add, store)

Such a container is neither built here (``holders`` follows those by identity
around the calls handed them) nor captured or global (``holders`` reads those
through a followed alias), yet the call may reach it by itself: a closure that
the same factory made writes it. First order follows that write by identity;
nested differentiation follows containers along variables only, so a write of
a value carrying a derivative is refused there (``ad.runtime.obtained_holders``),
never read as a constant (a silent zero). A name is in scope of a call when an
assignment before it, in its block or an enclosing one, binds it.

>>> import ast
>>> from ad.transform.anf import normalize
>>> src = "def f(x):\\n    add, store = make()\\n    add(x * x)\\n    return store['acc']"
>>> fn = normalize(ast.parse(src).body[0], "<doc>")
>>> out = check_obtained(fn, {"x"}, frozenset(), lambda x: x, "<doc>")
>>> [s.value.func.id for s in out.body if isinstance(s, ast.Assign)
...  and isinstance(s.value, ast.Call) and "obtained" in s.value.func.id]
['_ad_obtained_entries', '_ad_obtained_unchanged']
"""

from __future__ import annotations

import ast
import types
from typing import Any

from ad.transform._nodes import at
from ad.transform.activity import (
    active_names,
    param_names,
    read_and_stored,
    statements,
    value_is_active,
)
from ad.transform.aliases import with_body
from ad.transform.callee_writes import library
from ad.transform.fuse import module_attribute
from ad.transform.holders import LOCAL, _user_value, name_resolver

__all__ = ["HELPER_NAMES", "check_obtained"]

#: the runtime helpers the bracket calls (``ad.runtime.obtained_holders``)
HELPER_NAMES = frozenset(["_ad_obtained_entries", "_ad_obtained_unchanged"])
#: the prefix of the generated functions the pipeline reads again at higher orders
#: (``_ad_fwd``, the pure form's ``_ar_fwd``, a nested pushforward's ``_a1_...``)
_GENERATED = ("_ad_", "_ar_", "_a1_", "_a2_", "_a3_")


def check_obtained(
    fn: ast.FunctionDef, seeds: set[str], plain: frozenset[str], f: Any, filename: str
) -> ast.FunctionDef:
    """``fn`` (the ANF body of ``f``) with its active calls of user code bracketed by a
    comparison of the containers its obtained names hold (see the module); ``fn``
    itself if none is."""
    if fn.name.startswith(_GENERATED):
        return fn
    resolve = name_resolver(f, set(param_names(fn)) | read_and_stored(fn)[1])
    user = _UserCalls(fn, plain, resolve)
    obtained = _obtained(fn, user)
    if not obtained:
        return fn
    active = active_names(fn, seeds, plain)

    def bracketed(s: ast.stmt, bound: set[str]) -> tuple[list, list]:
        names = sorted((bound & obtained) - _bound_by(s))
        if not names or not user.calls(s) or not value_is_active(s.value, active, plain):
            return [], []
        site = ast.Constant(f"{filename}:{s.lineno}")
        loads = [ast.Name(n, ast.Load()) for n in names]
        before = _assign("_ad_ob", "_ad_obtained_entries", loads, s.lineno)
        args = [ast.Name("_ad_ob", ast.Load()), site, *loads]
        return [before], [_assign("_ad_guard", "_ad_obtained_unchanged", args, s.lineno)]

    def rewrite(body: list[ast.stmt], bound: set[str]) -> list[ast.stmt]:
        bound = set(bound)
        out: list[ast.stmt] = []
        for s in body:
            before, after = bracketed(s, bound)
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = bound | (_bound_by(s) if isinstance(s, ast.For) else set())
                for field in ("body", "orelse", "finalbody"):
                    block = getattr(s, field, None)
                    if isinstance(block, list):
                        setattr(s, field, rewrite(block, inner))
                for h in getattr(s, "handlers", None) or ():
                    h.body = rewrite(h.body, bound)
            out += [*before, s, *after]
            if isinstance(s, ast.Assign):
                bound |= _bound_by(s)
        return out

    new = rewrite([*fn.body], set())
    return with_body(fn, new) if len(new) != len(fn.body) or new != fn.body else fn


def _obtained(fn: ast.FunctionDef, user: _UserCalls) -> set[str]:
    """The local names bound to what a call of user code by its name returned, or to
    an item unpacked from it (``add, store = make()`` in ANF: a temporary, then its
    unpack)."""
    params = set(param_names(fn))
    found: set[str] = set()
    grown = True
    while grown:
        grown = False
        for s in statements(fn.body):
            if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
                continue
            func, args = s.value.func, s.value.args
            first = args[0] if args else None
            unpacked = (
                isinstance(func, ast.Name)
                and func.id == "_ad_unpack"
                and isinstance(first, ast.Name)
                and first.id in found
            )
            # a method's result (``(x * y).sum()``, a temporary bound to an attribute
            # called) is not counted: a factory is called by its name
            by_name = isinstance(func, ast.Name) and func.id not in user.attributes
            if unpacked or (by_name and user.calls(s)):
                new = _bound_by(s) - params - found
                if new:
                    found |= new
                    grown = True
    return found


class _UserCalls:
    """Which statements of an ANF body call code of the user's: not the AD's helpers,
    nor a library's function (a global ``np.sum``, bound to a temporary first)."""

    def __init__(self, fn: ast.FunctionDef, plain: frozenset[str], resolve: Any) -> None:
        self.plain, self.resolve = plain, resolve
        self.attributes: dict[str, tuple[str, str]] = {}  # temporary -> (name, attr)
        for s in statements(fn.body):
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
                attr = module_attribute(s.value)
                if attr is not None:
                    owner = s.value.args[0].id  # type: ignore[attr-defined]
                    self.attributes[s.targets[0].id] = (owner, attr)

    def calls(self, s: ast.stmt) -> bool:
        """Whether ``s`` assigns the result of a call of user code."""
        if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
            return False
        func = s.value.func
        if not isinstance(func, ast.Name) or not _user_value(func.id) or func.id in self.plain:
            return False
        value = self.resolve(func.id)
        if value is LOCAL and func.id in self.attributes:  # ``t = mod.f`` then ``t(...)``
            owner, attr = self.attributes[func.id]
            module = self.resolve(owner)
            if isinstance(module, types.ModuleType):
                value = getattr(module, attr, None)
        return not library(value)


def _bound_by(s: ast.stmt) -> set[str]:
    """The plain names an assignment (or a ``for`` loop's target) binds."""
    targets = s.targets if isinstance(s, ast.Assign) else [getattr(s, "target", None)]
    out = set()
    for t in targets:
        for node in ast.walk(t) if t is not None else ():
            if isinstance(node, ast.Name):
                out.add(node.id)
    return out


def _assign(target: str, helper: str, args: list[ast.expr], line: int) -> ast.Assign:
    call = at(ast.Call(ast.Name(helper, ast.Load()), args, []), line)
    return at(ast.Assign([ast.Name(target, ast.Store())], call), line)
