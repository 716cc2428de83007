"""Pass 4a, holders: containers and objects the pass must follow by identity.

Input: an ANF ``FunctionDef`` and the activity seeds. Output: the same function
with ``_ad_follow`` calls inserted, and the seeds grown by the names they bind.

A write into a dict, list or user object is seen through every name that
holds it. Variables carry a derivative only along the names the analysis
knows, so ``ad.runtime.state`` follows such an object by identity instead, from the
point ``follow`` marks it. This pass marks:

* a captured or global container or object the function writes a value that
  carries a derivative into (``D["x"] = x``, ``L.append(x)``, ``cfg.w = w``):
  it is read through a local alias ``_ad_cap_<name> = _ad_follow(<name>)``
  from the function's start, and written through it, so its reads here are
  differentiated and the writes happen to the object itself;
* a container or object the function builds (``{}``, ``[]``, ``dict()``,
  ``list()``, a user class) and hands to code that may write into it (its
  own method, ``a.add(x)``; a Python function, ``fill(d, x)``) in a call that
  carries a derivative: ``a = _ad_follow(a)`` before that call and after it,
  and ``a`` is active, so what the callee writes reaches its reads here (the
  second follow sends the cotangent of the reads after the call, which flows
  along ``a``, to the store before the callee's pullback runs).

>>> import ad
>>> D = {}
>>> def f(x):
...     D["x"] = x
...     return D["x"] * D["x"]
>>> ad.gradient(f, 5.0), D["x"]
((10.0,), 5.0)
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import re
import types
from typing import Any

from ad.transform._nodes import at
from ad.transform.activity import (
    active_names,
    definition_reads,
    free_names,
    param_names,
    read_and_stored,
    statements,
    value_is_active,
)
from ad.transform.aliases import (
    aliased_writes,
    around,
    follow_before_writes,
    follow_call,
    with_body,
)
from ad.transform.anf_base import IN_PLACE_HELPERS
from ad.transform.callee_writes import called_functions, callees, library, written_by
from rulescore import AbstractZero, Tangent

__all__ = [
    "CAPTURED_WRITTEN",
    "LOCAL",
    "UNBOUND",
    "follow_holders",
    "holder",
    "name_resolver",
    "stateful",
]

# --- values the pass can follow by identity -------------------------------------

_STATEFUL: dict[type, bool] = {}
#: modules whose objects are never followed by identity (arrays are written through
#: their own operations, which ``ad.runtime.ownership`` guards)
_PLAIN_MODULES = ("builtins", "numpy", "dask", "cupy")


def stateful(obj: Any) -> bool:
    """Whether ``obj`` is an instance of a user class whose fields can be written
    (not a tuple, a frozen dataclass (unless its ``__post_init__`` writes it), a class, a function, a tangent, numpy's, nor
    a class keeping its own account of its writes, as ``ad.Buffer`` does: it says
    so with a true class attribute ``_ad_keeps_its_writes``)."""
    cls = type(obj)
    try:
        return _STATEFUL[cls]
    except KeyError:
        pass
    out = not (
        cls.__module__.split(".")[0] in _PLAIN_MODULES
        or getattr(cls, "_ad_keeps_its_writes", False)
        or issubclass(
            cls, (tuple, type, Tangent, AbstractZero, types.FunctionType, types.ModuleType)
        )
        or (
            dataclasses.is_dataclass(cls)
            and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
            and not hasattr(cls, "__post_init__")  # which writes the object it builds
        )
    )
    if len(_STATEFUL) >= 1024:  # bounded: classes made per call leave
        _STATEFUL.clear()
    _STATEFUL[cls] = out
    return out


def holder(obj: Any) -> bool:
    """Whether the pass can follow ``obj`` by identity: a dict, a list, or a user object."""
    return isinstance(obj, (dict, list)) or stateful(obj)


#: captured or global holders some transformed function writes (by id, held):
#: every function reading one reads it through a followed alias (``holders``)
CAPTURED_WRITTEN: dict[int, Any] = {}


_CONSTRUCTORS = frozenset(["dict", "list"])


def follow_holders(
    fn: ast.FunctionDef,
    seeds: set[str],
    plain: frozenset[str],
    f: types.FunctionType,
    filename: str,
) -> tuple[ast.FunctionDef, set[str]]:
    """``fn`` with its holders followed (see the module), and the grown seeds."""
    seeds = set(seeds)
    read, stored = read_and_stored(fn)
    resolve = _resolver(fn, f, stored)
    free_done: set[str] = set()
    local_done: set[str] = set()
    holders = _free_holders(read, resolve)
    # Captured holders that some function writes into, or that a function this one
    # calls may write (it may not have run yet): read through an alias here too.
    called = callees(read, resolve)
    free = {
        n
        for n, v in holders.items()
        if CAPTURED_WRITTEN.get(id(v)) is v or written_by(v, called, 3, set())
    }
    alias_done: set[str] = set()
    for _ in range(4):  # following makes names active, which can activate more calls
        active = active_names(fn, seeds, plain)
        found, local = _to_follow(fn, active, plain, resolve)
        calls = _Calls(active, plain, resolve)
        read_from, sources = aliased_writes(
            fn,
            active,
            plain,
            lambda n: resolve(n) is LOCAL,
            functools.partial(_written_by_call, calls=calls),
        )
        new = {n: v for n, v in read_from.items() if n not in alias_done}
        grown = bool(new or sources - seeds)
        if new:
            fn = follow_before_writes(fn, new, active, plain, calls)
            local |= new.keys()  # and where it is handed to a call that may write it
            alias_done |= new.keys()
        seeds |= sources
        free = (free | found) - free_done
        local -= local_done
        if not free and not local and not grown:
            break
        if free:
            fn = _alias_free(fn, free)
            for n in free:
                value = resolve(n)
                CAPTURED_WRITTEN[id(value)] = value
            free_done |= free
            seeds |= free | {_alias(n) for n in free}
            free = set()
        if local:
            fn = _follow_before_calls(fn, local, active, plain, resolve)
            local_done |= local
            seeds |= local
    if free_done:
        # A function this one calls may write a captured holder too, reaching it by
        # itself: its alias is followed again around such calls, as a local holder
        # handed to one is, so the reads after see the writes (and their derivative).
        fn = _follow_around_writing_calls(
            fn,
            {_alias(n): resolve(n) for n in free_done},
            active_names(fn, seeds, plain),
            plain,
            resolve,
            filename,
        )
    if free_done or local_done:
        active = active_names(fn, seeds, plain)
    reads = {n: v for n, v in holders.items() if n not in free_done}
    # Local names a nested function captures: it may write a value that carries a
    # derivative into what they hold (``def add(v): acc.append(v)``), which it then
    # follows by identity; reads here, along the variable, would miss it.
    for n in _captured_locals(fn, resolve) - local_done:
        reads.setdefault(n, None)
    classes = {n for n in read if isinstance(resolve(n), type) and not library(resolve(n))}
    return _guard_reads(fn, reads, _Calls(active, plain, resolve), filename, classes), seeds


def _captured_locals(fn: ast.FunctionDef, resolve: Any) -> set[str]:
    """The local names that the functions and lambdas defined in ``fn`` capture."""
    return set().union(*_closures(fn, resolve).values())


def _closures(fn: ast.FunctionDef, resolve: Any) -> dict[str, set[str]]:
    """Each function or lambda defined in ``fn``, by the name it is bound to: the
    local names it captures (under ``""`` for one bound to no plain name)."""
    out: dict[str, set[str]] = {}
    for s in statements(fn.body):
        node: ast.AST | None = None
        name = None
        if isinstance(s, ast.FunctionDef):
            node, name = s, s.name
        elif isinstance(s, ast.Assign) and isinstance(s.value, ast.Lambda):
            node = s.value
            if isinstance(s.targets[0], ast.Name):
                name = s.targets[0].id
        if node is not None:
            captured = {n for n in free_names(node) if resolve(n) is LOCAL}
            out.setdefault(name or "", set()).update(captured)
    return out


def _free_holders(read: set[str], resolve: Any) -> dict[str, Any]:
    """The captured or global names of ``read`` that hold a dict, list or user object."""
    out = {}
    for name in read:
        value = resolve(name)
        if value is not LOCAL and value is not UNBOUND and holder(value):
            out[name] = value
    return out


def _guard_reads(
    fn: ast.FunctionDef,
    names: dict[str, Any],
    calls: _Calls,
    filename: str,
    classes: frozenset[str] | set[str] = frozenset(),
) -> ast.FunctionDef:
    """Before each statement reading one of ``names`` as a constant, a check that
    no write of this differentiation put a derivative into it (``unfollowed``);
    before each call of a Python function run as plain Python, the same check
    for what that function reads (``unfollowed_call``). After each read of an
    attribute of a user class named in ``classes`` (``A.hist``, a list every
    instance shares, which a method may have written through ``self.hist``),
    the same check of the value read."""

    params = set(param_names(fn))

    def guard(helper: str, obj: str, name: str | None, line: int) -> ast.stmt:
        if helper == "_ad_unfollowed" and obj in params:
            # A parameter is never followed here: a write by identity elsewhere (a
            # closure's, a callee's) that this read would miss is refused, so the
            # check runs as plain Python (``activity``), not differentiated.
            helper = "_ad_unfollowed_parameter"
        consts = (name, f"{filename}:{line}", fn.name) if name else (f"{filename}:{line}", fn.name)
        args = [ast.Name(obj, ast.Load())] + [ast.Constant(c) for c in consts]
        call = at(ast.Call(ast.Name(helper, ast.Load()), args, []), line)
        return at(ast.Assign([ast.Name("_ad_guard", ast.Store())], call), line)

    def guards(s: ast.stmt) -> list[ast.stmt]:
        out = []
        if names:
            compound = isinstance(s, (ast.If, ast.For, ast.While, ast.Try, ast.FunctionDef))
            if type(s) is ast.Assign and type(s.value) is ast.Lambda:
                # Its body runs when it is called (a name it reads may be bound later).
                reads = definition_reads(s.value)
            else:
                reads = read_and_stored(_header(s) if compound else s)[0]
            out = [guard("_ad_unfollowed", n, n, s.lineno) for n in sorted(reads & names.keys())]
        callee = calls.plain_callee(s)
        if callee is not None:
            out.append(guard("_ad_unfollowed_call", callee, None, s.lineno))
        return out

    def class_attribute_guards(s: ast.stmt) -> list[ast.stmt]:
        read = _class_attribute_read(s, classes)
        if read is None:
            return []
        target, what = read
        return [guard("_ad_unfollowed", target, what, s.lineno)]

    return around(fn, lambda s: (guards(s), class_attribute_guards(s)))


def _class_attribute_read(
    s: ast.stmt, classes: frozenset[str] | set[str]
) -> tuple[str, str] | None:
    """(the name bound, ``"A.attr"``) when ``s`` reads an attribute of a class named
    in ``classes`` (``t = _ad_getattr(A, 'attr')``); else None."""
    if not (classes and type(s) is ast.Assign and isinstance(s.targets[0], ast.Name)):
        return None
    v = s.value
    if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and len(v.args) == 2):
        return None
    owner, attr = v.args
    if (
        v.func.id == "_ad_getattr"
        and isinstance(owner, ast.Name)
        and owner.id in classes
        and isinstance(attr, ast.Constant)
    ):
        return s.targets[0].id, f"{owner.id}.{attr.value}"
    return None


def _header(s: ast.stmt) -> ast.AST:
    """The part of a compound statement evaluated before its blocks."""
    if isinstance(s, (ast.If, ast.While)):
        return s.test
    if isinstance(s, ast.For):
        return s.iter
    return ast.Constant(None)


def _alias(name: str) -> str:
    return f"_ad_cap_{name}"


def _resolver(fn: ast.FunctionDef, f: types.FunctionType, stored: set[str]) -> Any:
    """``resolve(name)``: what a name the function does not bind holds now
    (``LOCAL`` for a local name, ``UNBOUND`` for one that resolves to nothing)."""
    return name_resolver(f, set(param_names(fn)) | stored)


def name_resolver(f: types.FunctionType, local: set[str]) -> Any:
    """``resolve(name)``: what ``name`` holds now in ``f``'s closure, globals or
    builtins; ``LOCAL`` for a name in ``local`` (``f`` binds it), ``UNBOUND`` for
    one that resolves to nothing (an empty cell, a missing global)."""
    cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))

    def resolve(name: str) -> Any:
        if name in local:
            return LOCAL
        if name in cells:
            try:
                return cells[name].cell_contents
            except ValueError:  # an empty cell
                return UNBOUND
        if name in f.__globals__:
            return f.__globals__[name]
        return getattr(builtins, name, UNBOUND)

    return resolve


LOCAL = object()
UNBOUND = object()


class _Calls:
    """What each statement of an ANF body hands to code that may write into it."""

    def __init__(
        self,
        active: set[str],
        plain: frozenset[str],
        resolve: Any,
        closures: dict[str, set[str]] | None = None,
    ) -> None:
        self.active, self.plain, self.resolve = active, plain, resolve
        self.receivers: dict[str, str] = {}  # a temporary bound to a method -> its object
        # a nested function's name -> the local names it captures (``_closures``)
        self.closures = closures or {}

    def _captured(self, call: ast.Call) -> list[str]:
        """The local names captured by the nested functions ``call`` calls or hands
        on (``key(v)``, ``sorted(xs, key=key)``, ``map(g, xs)``): the function may
        write into what they hold, as a method writes its object."""
        if not self.closures:
            return []
        named = [call.func, *call.args, *(k.value for k in call.keywords)]
        out: list[str] = []
        for a in named:
            if isinstance(a, ast.Name) and a.id in self.closures:
                out += sorted(self.closures[a.id])
        return out

    def handed(self, s: ast.stmt) -> tuple[str | None, list[str]]:
        """(the captured holder ``s`` writes into, or None; the names ``s``
        hands to a call that may write them), for an active call."""
        if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
            return None, []
        call, target = s.value, s.targets[0]
        func = call.func
        if not isinstance(func, ast.Name):
            return None, []
        first = call.args[0] if call.args else None
        if func.id == "_ad_getattr" and isinstance(first, ast.Name):
            # a module's function (math.sin) writes nothing of ours: no receiver
            if isinstance(target, ast.Name) and not isinstance(
                self.resolve(first.id), types.ModuleType
            ):
                self.receivers[target.id] = first.id
            return None, []
        if not value_is_active(call, self.active, self.plain):
            return None, []
        captured = self._captured(call)
        if captured:
            return None, captured + _names(call.args)
        if func.id in IN_PLACE_HELPERS:
            if isinstance(first, ast.Name) and self.resolve(first.id) is not LOCAL:
                return first.id, []
            return None, []
        if func.id in self.receivers:  # a method: it may write its object
            return None, [self.receivers[func.id]] + _names(call.args)
        if self.resolve(func.id) is LOCAL and _user_value(func.id):
            # a local callable (a name or a temporary): an object's __call__ may write it
            return None, [func.id, *_names(call.args)]
        if func.id.startswith("_ad_") or func.id in self.plain or library(self.resolve(func.id)):
            return None, []  # the AD's helpers and library functions write nothing of ours
        return None, _names(call.args)

    def may_write_globals(self, s: ast.stmt) -> bool:
        """Whether ``s`` is an active call that may run code writing a holder it
        reaches by itself (a global, a capture): any call but the AD's follows and
        in-place writes, since a library call may run a function it is handed, at
        once (``sorted(xs, key=k)``) or later (``list(map(k, xs))``)."""
        if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
            return False
        func = s.value.func
        if isinstance(func, ast.Name) and (
            func.id == "_ad_follow" or func.id in IN_PLACE_HELPERS or func.id in self.plain
        ):
            return False
        return value_is_active(s.value, self.active, self.plain)

    def plain_callee(self, s: ast.stmt) -> str | None:
        """The Python function (or method) that ``s`` calls as plain Python, if any."""
        if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
            return None
        func = s.value.func
        if not isinstance(func, ast.Name) or value_is_active(s.value, self.active, self.plain):
            return None
        if func.id in self.receivers:
            return func.id
        found = self.resolve(func.id)
        if isinstance(found, types.FunctionType) and not library(found):
            return func.id
        return None


def _written_by_call(s: ast.stmt, calls: _Calls) -> list[str]:
    """The local names an active call ``s`` may write into, for ``aliases``: a
    method's object, or what a Python function of the user's is given."""
    names = calls.handed(s)[1]
    if not names:
        return []
    func = s.value.func.id  # type: ignore[attr-defined]
    if func in calls.receivers:
        return names[:1]
    found = calls.resolve(func)
    return names if isinstance(found, types.FunctionType) and not library(found) else []


def _user_value(name: str) -> bool:
    """Whether the local ``name`` holds a value of the user's program: a variable, an
    ANF temporary (``_ad_t3``) or a comprehension's renamed one, not the AD's own."""
    return not name.startswith("_ad_") or _TEMPORARY.fullmatch(name) is not None


_TEMPORARY = re.compile(r"_ad_(t\d+|c\d+_\w+)")


def _names(args: list[ast.expr]) -> list[str]:
    return [a.id for a in args if isinstance(a, ast.Name)]


def _to_follow(
    fn: ast.FunctionDef, active: set[str], plain: frozenset[str], resolve: Any
) -> tuple[set[str], set[str]]:
    """The free and the local holders ``fn`` writes or hands to a writing call."""
    builds = _holder_builds(fn, resolve)
    calls = _Calls(active, plain, resolve, _closures(fn, resolve))
    free: set[str] = set()
    local: set[str] = set()
    for s in statements(fn.body):
        written, handed = calls.handed(s)
        for name in [written] + handed if written else handed:
            found = resolve(name)
            if name.startswith("_ad_cap_"):
                local.add(name)  # a captured holder's alias: followed already
            elif found is LOCAL:
                if name in builds:
                    local.add(name)
            elif found is not UNBOUND and holder(found):
                free.add(name)
    return free, local


def _holder_builds(fn: ast.FunctionDef, resolve: Any) -> set[str]:
    """Local names some assignment binds to a new dict, list or user object."""
    out: set[str] = set()
    for s in statements(fn.body):
        if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)):
            continue
        v = s.value
        if isinstance(v, (ast.Dict, ast.List)):
            out.add(s.targets[0].id)
        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
            if v.func.id in ("_ad_mk_list", "_ad_mk_dict") or (
                v.func.id in _CONSTRUCTORS and resolve(v.func.id) in (dict, list)
            ):
                out.add(s.targets[0].id)
            else:
                cls = resolve(v.func.id)
                if isinstance(cls, type) and not library(cls):
                    out.add(s.targets[0].id)
    # A conditional expression (``seen = [] if c else {}``) builds into a temporary
    # in each branch (``anf``), which the name is then bound to: built there too.
    copies = [
        (s.targets[0].id, s.value.id)
        for s in statements(fn.body)
        if isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Name)
        and isinstance(s.value, ast.Name)
        and s.value.id.startswith("_ad_t")
    ]
    grown = True
    while grown:
        grown = False
        for target, source in copies:
            if source in out and target not in out:
                out.add(target)
                grown = True
    return out


def _alias_free(fn: ast.FunctionDef, names: set[str]) -> ast.FunctionDef:
    """Read and write each captured holder in ``names`` through a local alias."""
    line = fn.body[0].lineno if fn.body else fn.lineno

    class Rename(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
            return node  # a nested function captures the name itself

        visit_Lambda = visit_FunctionDef  # type: ignore[assignment]

        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in names and isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Name(_alias(node.id), ast.Load()), node)
            return node

        def visit_Assign(self, node: ast.Assign) -> ast.AST:
            self.generic_visit(node)
            v = node.value
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Name)
                and v.func.id in IN_PLACE_HELPERS
                and isinstance(v.args[0], ast.Name)
                and v.args[0].id in {_alias(n) for n in names}
            ):  # a write into the holder rebinds its alias, as a local container's
                node.targets = [ast.copy_location(ast.Name(v.args[0].id, ast.Store()), node)]
            return node

    rename = Rename()
    body = [rename.visit(s) for s in fn.body]
    return with_body(fn, [follow_call(_alias(n), n, line) for n in sorted(names)] + body)


def _follow_before_calls(
    fn: ast.FunctionDef, names: set[str], active: set[str], plain: frozenset[str], resolve: Any
) -> ast.FunctionDef:
    """``name = _ad_follow(name)`` before each active call that hands ``name``
    (as an argument, as a method's object, or captured by a nested function the
    call receives) to code that may write it."""
    calls = _Calls(active, plain, resolve, _closures(fn, resolve))

    def follows(s: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        handed = sorted(set(calls.handed(s)[1]) & names)
        # Again after: reads along the variable from there on go to the pass's
        # store before the call's pullback runs (its writes take them).
        return ([follow_call(n, n, s.lineno) for n in handed],) * 2

    return around(fn, follows)


def _follow_around_writing_calls(
    fn: ast.FunctionDef,
    holders: dict[str, Any],
    active: set[str],
    plain: frozenset[str],
    resolve: Any,
    filename: str,
) -> ast.FunctionDef:
    """``alias = _ad_follow(alias)`` around each active call of code that may write
    the captured holders ``holders`` (alias -> holder) stand for
    (``_Calls.may_write_globals``); where the call is of a Python function that
    may write one (``_written_by``), its contents are compared after the call
    under nested differentiation (``rules_objects.follow_after``)."""
    calls = _Calls(active, plain, resolve, _closures(fn, resolve))

    def follows(s: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        if not calls.may_write_globals(s):
            return [], []
        site = ast.Constant(f"{filename}:{s.lineno}")
        before, after = [], []
        writers = called_functions(s.value, resolve)  # type: ignore[attr-defined]
        for a in sorted(holders):
            if not written_by(holders[a], writers, 3, set()):
                before.append(follow_call(a, a, s.lineno))
                after.append(follow_call(a, a, s.lineno))
                continue
            # the holder's contents before the call, compared after it under nested
            # differentiation, which follows no holder (``rules_objects.follow_after``)
            printed = f"_ad_hp_{a}"
            before += [
                follow_call(a, a, s.lineno),
                _helper_assign(printed, "_ad_holder_print", [ast.Name(a, ast.Load())], s.lineno),
            ]
            args = [ast.Name(a, ast.Load()), ast.Name(printed, ast.Load()), site]
            after.append(_helper_assign(a, "_ad_follow_after", args, s.lineno))
        return before, after

    return around(fn, follows)


def _helper_assign(target: str, helper: str, args: list[ast.expr], line: int) -> ast.Assign:
    call = at(ast.Call(ast.Name(helper, ast.Load()), args, []), line)
    return at(ast.Assign([ast.Name(target, ast.Store())], call), line)
