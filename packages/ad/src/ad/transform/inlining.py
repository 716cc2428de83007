"""Inline small helper functions into their caller, guarded by the helpers' identity.

Input and output: a function in ANF (``anf``). A statement ``t = helper(a, b)``
whose ``helper`` is a global name of the caller that resolves, now, to a plain
Python function of the same module (no rule, no closure, the same globals)
with a short body that writes nothing it did not build itself, becomes the
helper's own ANF body, its locals renamed apart and its parameters replaced
by the arguments::

    def mul(a, b):                        r = mul(r, x)
        return a * b                 ->   r = _ad_op_mul(r, x)

So a helper costs what the same operations written inline cost: every later
pass (activity, fusion, the float fast paths) sees through the call, in both
modes. The transform is specialised on the functions the helpers' names
resolve to when it is built: ``guards`` lists ``(name, function)`` (and what
each body was built from, see ``inline_guards``), and the transform is used only
while every name still resolves to its function (a rebound global gets the
general transform, which calls whatever it finds; see ``transform.transformed``).

What is inlined (everything else stays a call, differentiated as before):

* a call with positional and keyword arguments only (no ``*``/``**``), to
  a function with positional parameters (defaults that are constants may be
  left out), no ``*args``/``**kwargs``/keyword-only parameters;
* a body with no nested function, lambda or class, no ``global``/``nonlocal``,
  ``try``/``with``, ``yield``/``await``, no read of ``super``, ``locals``,
  ``vars``, ``globals``, ``eval``, ``exec`` or ``__class__``;
* whose writes (item and attribute assignment, ``append``, ``x op= y``,
  ``out=``) only go into containers and numbers it built itself (``[]``, a
  literal, an arithmetic result): a helper that writes into an argument or a
  global stays a call, so what its caller may observe is unchanged;
* at most ``MAX_STATEMENTS`` statements (four times as many for the call whose
  value the caller returns, at its top level: a wrapper such as ``lambda q:
  loss(*q)`` or ``def f(p): return loss(p["w"], p["b"])`` costs nothing then),
  helpers inside helpers to depth ``MAX_DEPTH``, never a function into itself.

The helper's locals are renamed ``<name>_ad<k>`` (the AD's own temporaries
keep their ``_ad_t`` prefix) and set to ``None`` after the inlined body, so
that, as when the helper's frame ends, they hold nothing the caller's
in-place updates would see as another holder.
"""

from __future__ import annotations

import ast
import builtins
import copy
import types
import weakref
from typing import Any

from ad.transform.activity import param_names, read_and_stored
from ad.transform.anf import normalize
from ad.transform.anf_base import IN_PLACE_HELPERS
from ad.transform.container_methods import methods_spelled
from ad.transform.desugar import desugar
from ad.transform.fence import check_supported
from ad.transform.inline_guards import Body, guarded
from ad.transform.protocols import explicit_protocols
from ad.transform.source import get_source
from ad.transform.writers import WRITER_PREFIX, spelled_as_rebinding
from rulescore import frule, rrule

__all__ = [
    "ENABLED",
    "MAX_DEPTH",
    "MAX_STATEMENTS",
    "has_rules",
    "inline_helpers",
]

#: Inline at all (tests of the call machinery switch it off; see ``ad.transform``).
ENABLED = [True]

#: A helper's ANF body longer than this stays a call (transform time and code size).
MAX_STATEMENTS = 40
#: Helpers called by inlined helpers are inlined to this depth.
MAX_DEPTH = 3

_RULES = rrule.table._rules
_FRULES = frule.table._rules
_FORBIDDEN_NAMES = frozenset(
    ["super", "locals", "vars", "globals", "eval", "exec", "__class__", "breakpoint"]
)
_FORBIDDEN_NODES = (
    ast.Lambda,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Global,
    ast.Nonlocal,
    ast.Try,
    ast.With,
    ast.AsyncWith,
    ast.AsyncFor,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
    ast.Delete,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.NamedExpr,
    ast.Starred,
)
if hasattr(ast, "TryStar"):
    _FORBIDDEN_NODES += (ast.TryStar,)
if hasattr(ast, "Match"):
    _FORBIDDEN_NODES += (ast.Match,)
#: ANF's writes into the object its first argument names.
#: Method names that change their object: a helper calling one on an object it
#: did not build stays a call.
_MUTATORS = frozenset(
    [
        "append",
        "extend",
        "insert",
        "pop",
        "popitem",
        "remove",
        "clear",
        "update",
        "setdefault",
        "sort",
        "reverse",
        "fill",
        "put",
        "resize",
        "itemset",
        "setflags",
        "partition",
        "add",
        "discard",
        "__setitem__",
        "__delitem__",
        "__setattr__",
    ]
)
_FRESH_VALUES = (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.Constant, ast.JoinedStr)

#: A helper's code -> its ANF (None: it cannot be inlined). Weak keys: a helper
#: that is gone (a module reloaded, a function built by ``exec``) leaves nothing.
#: Only the transform (under its lock) reads and writes it.
_ANF: weakref.WeakKeyDictionary[types.CodeType, ast.FunctionDef | None] = (
    weakref.WeakKeyDictionary()
)
_UNKNOWN = object()


def has_rules(fn: Any) -> bool:
    """Whether ``fn`` has an rrule or frule (a helper with one is never inlined)."""
    return fn in _RULES or fn in _FRULES


def inline_helpers(
    anf: ast.FunctionDef,
    f: types.FunctionType,
    callees: frozenset[str],
    attributes: dict[str, tuple[str, str]] | None = None,
) -> tuple[ast.FunctionDef, tuple]:
    """``anf`` (the ANF of ``f``) with its calls of ``callees`` inlined where they
    qualify (see the module), and the guards ``((name, function), ...)``.
    ``attributes``: the temporaries bound to ``module.function`` (a global
    ``module``), by name: ``(module, function)``; their calls qualify too."""
    if not (callees or attributes) or not ENABLED[0]:
        return anf, ()
    inliner = _Inliner(f, anf, attributes or {})
    body = inliner.block(anf.body, (f.__code__,))
    if not inliner.guards:
        return anf, ()
    new = copy.copy(anf)
    new.body = body
    return new, tuple(inliner.guards.items())


class _Inliner:
    def __init__(
        self, f: types.FunctionType, anf: ast.FunctionDef, attributes: dict[str, tuple[str, str]]
    ) -> None:
        self.f = f
        self.globals = f.__globals__
        # ``module.helper`` of a module whose attributes the caller sets itself
        # (``mylib.sq = cube``; ``setattr``) stays a call: Python reads it anew
        written = _attribute_writes(anf)
        self.attributes = {t: key for t, key in attributes.items() if key[0] not in written}
        self.filename = f.__code__.co_filename
        read, stored = read_and_stored(anf)
        #: names the caller binds or captures: a helper's global of the same name
        #: would resolve differently in the caller
        self.taken = stored | set(param_names(anf)) | set(f.__code__.co_freevars)
        self.taken |= set(f.__code__.co_cellvars)
        self.names = read | self.taken
        self.guards: dict[str, Any] = {}
        self.budget = 4 * MAX_STATEMENTS
        self.k = 0

    def block(self, body: list[ast.stmt], stack: tuple) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, s in enumerate(body):
            kind = type(s)
            if kind is ast.Assign:
                inlined = self.call(s, stack, _returned(s, body[i + 1 : i + 2]))
                if inlined is not None:
                    out.extend(inlined)
                    continue
            elif kind is ast.If or kind is ast.For or kind is ast.While:
                s = copy.copy(s)
                s.body = self.block(s.body, stack)
                s.orelse = self.block(s.orelse, stack)
            out.append(s)
        return out

    def call(self, s: ast.Assign, stack: tuple, tail: bool = False) -> list[ast.stmt] | None:
        """``s`` inlined, or None (``tail``: ``s`` is ``t = helper(...)`` followed by
        ``return t``, so the helper runs at most once a call of the caller)."""
        value = s.value
        if not (
            len(s.targets) == 1
            and type(s.targets[0]) is ast.Name
            and type(value) is ast.Call
            and type(value.func) is ast.Name
        ):
            return None
        name = value.func.id
        key: Any = self.attributes.get(name)
        if key is not None:  # ``module.helper(...)``
            fn = guarded(key, self.f)
        elif name in self.taken or name.startswith("_ad_"):
            return None
        else:
            key, fn = name, self.globals.get(name)
        if type(fn) is not types.FunctionType or len(stack) > MAX_DEPTH:
            return None
        if fn.__code__ in stack or fn.__closure__:
            return None
        if has_rules(fn):
            return None  # a rule wins, in either mode
        helper = helper_anf(fn)
        if helper is None or self.budget < _size(helper):
            return None
        if _size(helper) > MAX_STATEMENTS and not (tail and len(stack) == 1):
            return None  # a long body is inlined only as the tail of a wrapper
        if fn.__code__.co_filename != self.filename and any(
            isinstance(n, (ast.Raise, ast.Assert)) for n in ast.walk(helper)
        ):
            return None  # inlined, its errors would name the caller's line, not its own
        bound = _bind(helper, fn, value)
        if bound is None:
            return None
        read, stored = read_and_stored(helper)
        params = set(param_names(helper))
        free = read - stored - params
        if free & self.taken:
            return None  # the helper's global is a local of the caller
        shared = self._shared_globals(fn, free)
        if shared is None:
            return None
        self.k += 1
        suffix = f"_ad{self.k}"
        renames = {n: _fresh(n, suffix, self.names) for n in stored - set(bound)}
        renames.update({p: _fresh(p, suffix, self.names) for p in set(bound) & stored})
        self.names |= set(renames.values())
        line = s.lineno
        # A helper of the same file keeps its lines (tracebacks, call sites); one
        # from elsewhere (exec'd into the module's globals) is placed at the call.
        at = None if fn.__code__.co_filename == self.filename else line
        body = copy.deepcopy(helper.body)
        ret = body.pop()
        if type(ret) is not ast.Return or ret.value is None:
            return None
        substitute = {p: a for p, a in bound.items() if p not in stored}
        body = [_rename(st, renames, substitute, at) for st in body]
        result = _rename(ret.value, renames, substitute, line)
        prologue = [
            _located(ast.Assign([ast.Name(renames[p], ast.Store())], copy.copy(a)), line)
            for p, a in bound.items()
            if p in stored
        ]
        target = s.targets[0].id
        body = prologue + body
        if (
            body
            and type(result) is ast.Name
            and type(body[-1]) is ast.Assign
            and len(body[-1].targets) == 1
            and type(body[-1].targets[0]) is ast.Name
            and body[-1].targets[0].id == result.id
            and result.id not in read_and_stored(ast.Module(body[:-1], []))[0]
            and _assigned_once(result.id, body)
        ):
            # ``t = <expr>; return t``: assign the caller's target directly
            last = body.pop()
            body.append(_located(ast.Assign([ast.Name(target, ast.Store())], last.value), line))
        else:
            body.append(_located(ast.Assign([ast.Name(target, ast.Store())], result), line))
        # Nested helpers: the inlined body is the caller's code now.
        self.budget -= _size(helper)
        self.guards[key] = fn
        self.guards[Body(fn, "__code__")] = fn.__code__
        self.guards[Body(fn, "__defaults__")] = fn.__defaults__
        self.guards.update(shared)
        body = self.block(body, (*stack, fn.__code__))
        # As the helper's frame would end: its locals let go of what they hold.
        stored_now = read_and_stored(ast.Module(body, []))[1]
        dead = sorted(
            n
            for n in renames.values()
            if n in stored_now
            and n != target
            and not (n.startswith("_ad_t") and _assigned_once(n, body))
        )
        body.extend(
            _located(ast.Assign([ast.Name(n, ast.Store())], ast.Constant(None)), line) for n in dead
        )
        return body

    def _shared_globals(self, fn: types.FunctionType, free: set[str]) -> dict | None:
        """For a helper of another module: the guards under which its body reads,
        in the caller, what it reads in its own module; None when it cannot. Each
        global it reads must be a module or a builtin that the caller's globals
        resolve to as well (``np``, ``math``, ``abs``), by the same name: an
        inlined body reads the caller's globals. A helper of the caller's own
        module needs none."""
        theirs = fn.__globals__
        if theirs is self.globals:
            return {}
        guards: dict[Any, Any] = {}
        for n in free:
            if n.startswith("_ad_"):
                continue  # the runtime's helpers, bound by the transform
            value = theirs.get(n, _UNKNOWN)
            if value is _UNKNOWN:
                value = getattr(builtins, n, _UNKNOWN)
                if value is _UNKNOWN or self.globals.get(n, value) is not value:
                    return None
                guards[n] = guards[(fn, n)] = None  # a builtin, shadowed by neither
            elif type(value) is types.ModuleType and self.globals.get(n) is value:
                guards[n] = guards[(fn, n)] = value
            else:
                return None
        return guards


def _attribute_writes(anf: ast.FunctionDef) -> set[str]:
    """The names whose attributes ``anf`` sets (``_ad_setattr(name, ...)``, a call of
    ``setattr(name, ...)``)."""
    out = set()
    for node in ast.walk(anf):
        if type(node) is ast.Call and type(node.func) is ast.Name and node.args:
            first = node.args[0]
            if node.func.id in ("_ad_setattr", "setattr") and type(first) is ast.Name:
                out.add(first.id)
    return out


def helper_anf(fn: types.FunctionType) -> ast.FunctionDef | None:
    """The ANF of ``fn`` if it can be inlined (cached per code object), else None."""
    code = fn.__code__
    known = _ANF.get(code, _UNKNOWN)
    if known is not _UNKNOWN:
        return known  # type: ignore[return-value]
    out = None
    if not (code.co_flags & 0x0C or code.co_kwonlyargcount) and (  # *args, **kwargs
        not code.co_flags & 0x2A0  # generator, coroutine, async generator
    ):
        try:
            src = get_source(fn)
            tree = explicit_protocols(src.tree, fn)
            tree = spelled_as_rebinding(tree, fn)
            tree = check_supported(tree, src.filename)
            anf = normalize(desugar(tree), src.filename, methods=methods_spelled(fn))
        except Exception:  # no source, unsupported syntax: it stays a call
            anf = None
        if anf is not None and _size(anf) <= 4 * MAX_STATEMENTS and _pure(anf, fn.__globals__):
            out = anf
    _ANF[code] = out
    return out


def _returned(s: ast.Assign, after: list[ast.stmt]) -> bool:
    """Whether ``after`` (the statement following ``s``) returns what ``s`` binds."""
    return (
        len(after) == 1
        and type(after[0]) is ast.Return
        and type(after[0].value) is ast.Name
        and type(s.targets[0]) is ast.Name
        and after[0].value.id == s.targets[0].id
    )


def _size(fn: ast.AST) -> int:
    return sum(isinstance(n, ast.stmt) for n in ast.walk(fn)) - 1


def _pure(fn: ast.FunctionDef, globals_: dict) -> bool:
    """Whether ``fn``'s ANF body qualifies: no forbidden construct, and writes
    only into what it built (see the module)."""
    fresh = _fresh_names(fn)
    read, stored = read_and_stored(fn)
    modules = {
        n for n in read - stored if isinstance(globals_.get(n), types.ModuleType)
    }  # ``np.add`` is a function, not a method changing ``np``
    fresh |= modules
    for node in ast.walk(fn):
        if node is fn:
            continue
        if isinstance(node, _FORBIDDEN_NODES):
            return False
        kind = type(node)
        if kind is ast.Name and node.id in _FORBIDDEN_NAMES:
            return False
        if kind is ast.AugAssign:
            return False
        if kind is ast.Assign:
            for t in node.targets:
                if type(t) is not ast.Name and not (
                    type(t) is ast.Tuple and all(type(e) is ast.Name for e in t.elts)
                ):
                    return False
        if kind is ast.Call:
            if any(k.arg == "out" for k in node.keywords):
                return False
            func = node.func
            if type(func) is ast.Name:
                writes = func.id in IN_PLACE_HELPERS or func.id.startswith(
                    ("_ad_iop_", WRITER_PREFIX)
                )
                if writes:
                    first = node.args[0] if node.args else None
                    if not (type(first) is ast.Name and first.id in fresh):
                        return False
                elif func.id == "_ad_getattr" and len(node.args) == 2:
                    attr, obj = node.args[1], node.args[0]
                    if (
                        type(attr) is ast.Constant
                        and attr.value in _MUTATORS
                        and not (type(obj) is ast.Name and obj.id in fresh)
                    ):
                        return False
            elif type(func) is ast.Attribute and func.attr in _MUTATORS:
                return False
        if kind is ast.Attribute and node.attr in _MUTATORS and type(node.ctx) is ast.Load:
            obj = node.value
            if not (type(obj) is ast.Name and obj.id in fresh):
                return False
    return True


def _fresh_names(fn: ast.FunctionDef) -> set[str]:
    """Locals of ``fn`` bound only to objects it built: literals, arithmetic
    results (``_ad_op_*``), or writes into themselves."""
    params = set(param_names(fn))
    values: dict[str, list[ast.expr]] = {}
    for node in ast.walk(fn):
        if type(node) is ast.Assign:
            for t in node.targets:
                if type(t) is ast.Name:
                    values.setdefault(t.id, []).append(node.value)
                else:
                    for e in ast.walk(t):
                        if type(e) is ast.Name:
                            values.setdefault(e.id, []).append(t)  # unpacked: not fresh
        elif type(node) is ast.For:
            for e in ast.walk(node.target):
                if type(e) is ast.Name:
                    values.setdefault(e.id, []).append(node.target)
    fresh = set()
    for name, vs in values.items():
        if name in params:
            continue
        if all(_builds(v, name) for v in vs):
            fresh.add(name)
    return fresh


def _builds(v: ast.expr, name: str) -> bool:
    if isinstance(v, _FRESH_VALUES):
        return True
    if type(v) is ast.Call and type(v.func) is ast.Name:
        fn = v.func.id
        if fn.startswith("_ad_op_"):
            return True
        if fn in IN_PLACE_HELPERS or fn.startswith(("_ad_iop_", WRITER_PREFIX)):
            return bool(v.args) and type(v.args[0]) is ast.Name and v.args[0].id == name
    return False


def _bind(helper: ast.FunctionDef, fn: types.FunctionType, call: ast.Call) -> dict | None:
    """Parameter -> argument expression (an atom), or None where the call does not
    bind plainly (``*``/``**``, unknown keywords, a non-constant default)."""
    a = helper.args
    if a.vararg or a.kwarg or a.kwonlyargs:
        return None
    params = [p.arg for p in a.posonlyargs + a.args]
    if len(call.args) > len(params) or any(type(x) is ast.Starred for x in call.args):
        return None
    bound: dict[str, ast.expr] = dict(zip(params, call.args))
    posonly = {p.arg for p in a.posonlyargs}
    for k in call.keywords:
        if k.arg is None or k.arg not in params or k.arg in bound or k.arg in posonly:
            return None
        bound[k.arg] = k.value
    defaults = fn.__defaults__ or ()
    first_default = len(params) - len(defaults)
    for i, p in enumerate(params):
        if p in bound:
            continue
        if i < first_default:
            return None
        d = defaults[i - first_default]
        if not (d is None or type(d) in (bool, int, float, str)):
            return None
        bound[p] = ast.Constant(d)
    for x in bound.values():
        if type(x) not in (ast.Name, ast.Constant):
            return None
    return bound


def _fresh(name: str, suffix: str, taken: set[str]) -> str:
    out = name + suffix
    while out in taken:
        out += "_"
    return out


def _assigned_once(name: str, body: list[ast.stmt]) -> bool:
    """Bound by exactly one plain assignment, outside any loop."""
    count = 0
    for s in body:
        for node in ast.walk(s):
            if type(node) is ast.Name and type(node.ctx) is ast.Store and node.id == name:
                if type(s) is not ast.Assign:
                    return False
                count += 1
    return count == 1


class _Renamer(ast.NodeTransformer):
    def __init__(self, renames: dict, substitute: dict) -> None:
        self.renames = renames
        self.substitute = substitute

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if type(node.ctx) is ast.Load and node.id in self.substitute:
            return copy.copy(self.substitute[node.id])
        new = self.renames.get(node.id)
        if new is not None:
            node.id = new
        return node


def _rename(node: Any, renames: dict, substitute: dict, line: int | None) -> Any:
    """``node`` with the helper's names renamed and its parameters substituted,
    moved to ``line`` unless None."""
    return _located(_Renamer(renames, substitute).visit(node), line)


def _located(node: Any, line: int | None) -> Any:
    if line is None:
        return node
    for n in ast.walk(node):
        if "lineno" in n._attributes:
            n.lineno = n.end_lineno = line
            n.col_offset = n.end_col_offset = 0
    return node
