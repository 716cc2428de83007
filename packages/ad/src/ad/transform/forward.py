"""Pass 5', forward: generate the pushforward function from the ANF body.

Input: an ANF ``FunctionDef`` (see ``anf``) and its active names. Output: a
``FunctionDef`` named ``_ad_fwd`` with the original signature plus two
keyword-only parameters, ``_ad_dt`` (the parameters' tangents, in signature
order) and ``_ad_df`` (the function's own tangent: its captured variables'),
returning ``(value, tangent)``.

Forward mode needs no tape: every active variable ``x`` gets a tangent
variable ``_ad_t_x`` that is updated right after it, so the control flow
(``if``, ``for``, ``while``, ``break``) is kept as it is. An active call
``t = f(a, b)`` becomes ``t, _ad_t_t = _ad_fcall(f, (ḟ, ȧ, ḃ), a, b)``; calls
with keywords go through ``_ad_fcall_gen``, float arithmetic through
``_ad_ffast_<op>(a, b, ȧ, ḃ)`` (an inline fast path); copies, tuple,
list and dict displays build their tangents inline; a loop over an active
iterable walks the elements and their tangents together (``_ad_fiter``).
Inactive statements are emitted as plain Python and set the tangents of
their active targets to ``_ad_Z`` (activity is flow-insensitive). Every
generated statement carries the line number of its source statement.
"""

from __future__ import annotations

import ast
import copy
import types
from collections.abc import Callable

from ad.errors import UnsupportedSyntaxError
from ad.transform._nodes import FAST_OPS, TYPE_PARAMS, Z, forget_shared, plain
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import name as _n
from ad.transform._nodes import tuple_ as _tuple
from ad.transform.activity import (
    bound_later,
    capture_errors,
    closure_contexts,
    loaded_names,
    param_names,
    scope_bound,
    value_is_active,
)
from ad.transform.bindings import FORWARD
from ad.transform.compiled import Compiled, signature_of
from ad.transform.guards import (
    active_write_guards,
    captured_write,
    local_names,
    original_arguments,
    rebound_names,
    rebound_parameters,
    returned_names,
)
from ad.transform.listing import annotate
from ad.transform.pipeline import front
from ad.transform.source_registry import register_generated
from ad.transform.tracking import WriteMarks, ad_error_handler, caught_check, guard_with_body
from ad.transform.writers import in_place_form

__all__ = ["build_forward", "generate_forward", "t"]


def t(name: str) -> str:
    """The tangent variable of ``name``."""
    return f"_ad_t_{name}"


def _const_tuple(values: list) -> ast.Tuple:
    return _tuple([ast.Constant(v) for v in values])


def _targets(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


class _Gen:
    def __init__(self, active: set[str], filename: str, fname: str, plain: frozenset[str]):
        self.active = active
        self.filename = filename
        self.fname = fname
        self.plain = plain
        self.counter = 0
        # Set by generate_forward: the same guards on shared objects as reverse mode.
        self.params: frozenset[str] = frozenset()
        self.mutable_params: frozenset[str] = frozenset()
        self.rebound_params: frozenset[str] = frozenset()  # see guards.rebound_parameters
        self.originals: set[str] = set()
        self.local: Callable[[], frozenset[str]] = frozenset
        self.marks: WriteMarks | None = None  # see ``tracking.WriteMarks``
        # Set by generate_forward: what closures see (see ``activity.closure_contexts``).
        self.rebound: frozenset[str] = frozenset()
        self.closures: dict[int, frozenset[str] | None] = {}
        # What closures capture that is bound after them (``activity.bound_later``);
        # the active closures defined so far with their captures; those still
        # waiting for a capture bound below them (see ``late_tangents``).
        self.later: dict[int, set[str]] = {}
        self.captures: dict[str, list[str]] = {}
        self.pending: dict[str, set[str]] = {}

    def fresh(self) -> str:
        self.counter += 1
        return f"_ad_ft{self.counter}"

    def tan(self, atom: ast.expr) -> ast.expr:
        """The tangent of an ANF atom: its tangent variable, or the zero."""
        if isinstance(atom, ast.Name) and atom.id in self.active:
            return _n(t(atom.id))
        return _n(Z)

    def zeros(self, names: list[str], line: int) -> list[ast.stmt]:
        return [_assign(t(x), _n(Z), line) for x in names if x in self.active]

    def error(self, node: ast.AST, what: str) -> UnsupportedSyntaxError:
        line = getattr(node, "lineno", 0)
        return UnsupportedSyntaxError(
            f"{self.filename}:{line}: in {self.fname}: {what}", self.filename, line
        )

    # --- statements ---------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
            if self.pending:
                out.extend(self.late_tangents(s))
        return out

    def late_tangents(self, s: ast.stmt) -> list[ast.stmt]:
        """After ``s``: the tangents of the closures that capture a name ``s`` binds,
        defined before it (``def a`` calling ``b``, defined below), taken again now
        that the name has its tangent, with those of every closure capturing one of
        them (callees first)."""
        bound = scope_bound(s)
        members = set()
        for name, late in list(self.pending.items()):
            if late & bound:
                members.add(name)
        if not members:
            return []
        for name in members:
            self.pending[name] -= bound
        grown = True
        while grown:
            grown = False
            for name, captured in self.captures.items():
                if name not in members and members.intersection(captured):
                    members.add(name)
                    grown = True
        order: list[str] = []
        line = getattr(s, "lineno", 0)

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in order:
                return
            if name in path:
                cycle = path[path.index(name) :]
                raise self.error(s, self.recursion_refused(cycle))
            for c in self.captures[name]:
                if c in members:
                    visit(c, (*path, name))
            order.append(name)

        for name in sorted(members):
            visit(name, ())
        for name in list(self.pending):
            if not self.pending[name]:
                del self.pending[name]
        return [self.take_tangent(name, line) for name in order]

    def recursion_refused(self, cycle: tuple[str, ...]) -> str:
        names = " and ".join(repr(n) for n in sorted(set(cycle)))
        outer = sorted({c for n in cycle for c in self.captures[n]} - set(self.captures))
        return (
            f"the nested functions {names} call each other and capture "
            f"{', '.join(map(repr, outer)) or 'variables'} that carry a derivative: forward "
            "mode takes a nested function's tangent where it is defined, and the calls "
            "between them would lose it. To fix: pass "
            f"{', '.join(outer) or 'those variables'} to them as arguments, or define them at "
            "module level, or differentiate in reverse mode (ad.gradient)"
        )

    def take_tangent(self, name: str, line: int) -> ast.stmt:
        captured = self.captures[name]
        waiting = self.pending.get(name, set())
        value = _call(
            "_ad_fn_tangent",
            _const_tuple(captured),
            _tuple([_n(Z) if c in waiting else _n(t(c)) for c in captured]),
        )
        return _assign(t(name), value, line)

    def stmt(self, s: ast.stmt) -> list[ast.stmt]:
        line = getattr(s, "lineno", 0)
        if isinstance(s, ast.Assign):
            return self.assign(s, line)
        if isinstance(s, ast.Return):
            value = _tuple([s.value, self.tan(s.value)])  # type: ignore[list-item]
            return [ast.Return(value=value, lineno=line, col_offset=0)]
        if isinstance(s, ast.If):
            body = self.block(s.body) or [ast.Pass()]
            return [
                ast.If(
                    test=s.test, body=body, orelse=self.block(s.orelse), lineno=line, col_offset=0
                )
            ]
        if isinstance(s, ast.While):
            body = self.block(s.body) or [ast.Pass()]
            orelse = self.block(s.orelse)
            return [ast.While(test=s.test, body=body, orelse=orelse, lineno=line, col_offset=0)]
        if isinstance(s, ast.For):
            return self.for_(s, line)
        if isinstance(s, ast.FunctionDef):
            return [s, *self.closure_tangent(s.name, s, line)]
        if isinstance(s, ast.Try):
            return [self.try_(s, line)]
        if isinstance(s, ast.With):
            return self.with_(s, line)
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in s.names]
            return [s, *self.zeros(names, line)]
        if isinstance(s, ast.Continue):
            raise self.error(s, "internal: `continue` should have been desugared")
        return [s]

    def try_(self, s: ast.Try, line: int) -> ast.Try:
        """A ``try`` as it is: a statement that raised set neither its value nor its
        tangent, so what ran is what the tangents say. ``ad.ADError`` is re-raised
        before the user's handlers (see ``tracking``)."""
        handlers = [ad_error_handler(line)] if s.handlers else []
        for h in s.handlers:
            body = [
                caught_check(h.lineno),
                *self.zeros([h.name] if h.name else [], h.lineno),
                *self.block(h.body),
            ]
            handlers.append(
                ast.ExceptHandler(
                    h.type, h.name, body or [ast.Pass()], lineno=h.lineno, col_offset=0
                )
            )
        final = self.block(s.finalbody)
        return ast.Try(
            body=self.block(s.body) or [ast.Pass()],
            handlers=handlers,
            orelse=self.block(s.orelse),
            finalbody=final if final or handlers else [ast.Pass()],
            lineno=line,
            col_offset=0,
        )

    def with_(self, s: ast.With, line: int) -> list[ast.stmt]:
        """A ``with`` as it is; its target (``__enter__``'s value) has no tangent."""
        target = s.items[0].optional_vars
        names = [target.id] if isinstance(target, ast.Name) else []
        body = [*self.zeros(names, line), *self.block(s.body)]
        return guard_with_body(s, body, self.fresh(), line)

    def for_(self, s: ast.For, line: int) -> list[ast.stmt]:
        name = s.target.id  # type: ignore[attr-defined]  # ANF: loop targets are names
        body = self.block(s.body)
        orelse = self.block(s.orelse)
        if not (loaded_names(s.iter) & self.active):
            body = [*self.zeros([name], line), *body]
            return [
                ast.For(
                    target=s.target,
                    iter=s.iter,
                    body=body or [ast.Pass()],
                    orelse=orelse,
                    lineno=line,
                    col_offset=0,
                )
            ]
        # An active iterable: walk the elements and their tangents together.
        target = _tuple([_n(name, True), _n(t(name), True)], store=True)
        it = _call("_ad_fiter", s.iter, self.tan(s.iter))
        return [
            ast.For(
                target=target,
                iter=it,
                body=body or [ast.Pass()],
                orelse=orelse,
                lineno=line,
                col_offset=0,
            )
        ]

    def closure_tangent(self, name: str, node: ast.AST, line: int) -> list[ast.stmt]:
        """A closure's tangent: the tangents of the active variables it captures."""
        if name not in self.active:
            return []
        # As in reverse mode: the tangent is taken when the closure is defined, so a
        # capture rebound later, or a default that carries a derivative, is refused.
        after = self.closures.get(id(node))
        captured, refused = capture_errors(name, node, self.active, self.rebound, after)
        if refused:
            raise self.error(node, refused)
        self.captures[name] = captured
        late = set(captured) & self.later.get(id(node), set())
        if late:  # not bound yet: its tangent joins once it is (``late_tangents``)
            self.pending[name] = late
        return [self.take_tangent(name, line)]

    def assign(self, s: ast.Assign, line: int) -> list[ast.stmt]:
        target = s.targets[0]
        names = _targets(target)
        value = s.value
        if not value_is_active(value, self.active, self.plain):
            return [plain(in_place_form(s)), *self.zeros(names, line)]
        if isinstance(value, ast.Lambda):
            return [s, *self.closure_tangent(names[0], value, line)]
        if isinstance(value, ast.Name):
            return [s, _assign(t(names[0]), self.tan(value), line)]
        if isinstance(value, (ast.Tuple, ast.List)):
            helper = "_ad_tan_tuple" if isinstance(value, ast.Tuple) else "_ad_tan_list"
            tangent = _call(helper, *[self.tan(e) for e in value.elts])
            return [s, _assign(t(names[0]), tangent, line)]
        if isinstance(value, ast.Dict):
            keys = _tuple(value.keys)  # type: ignore[arg-type]
            tangent = _call("_ad_tan_dict", keys, _tuple([self.tan(v) for v in value.values]))
            return [s, _assign(t(names[0]), tangent, line)]
        if not isinstance(value, ast.Call):
            raise self.error(s, f"cannot differentiate through {ast.unparse(value)!r}")
        refused = captured_write(names, value)
        if refused:
            raise self.error(s, refused)
        guards = active_write_guards(s, self, forward=True)
        marks = self.marks.after(value, line) if self.marks is not None else []
        return [*guards, *self.call(target, names, value, line), *marks]

    def call(self, target: ast.expr, names: list[str], value: ast.Call, line: int) -> list:
        func = value.func
        if isinstance(func, ast.Name) and func.id == "_ad_unpack" and not value.keywords:
            # Unpacking: the items and the entries of the source's tangent, without
            # dispatch (a user class's __iter__ pushed forward: ``runtime.forward.funpack``).
            src = value.args[0]
            unpacked = _call("_ad_funpack", src, self.tan(src), value.args[1])
            store = _tuple([_n(t(x), True) for x in names], store=True)
            return [_assign(_tuple([target, store], store=True), unpacked, line)]
        starred = any(isinstance(a, ast.Starred) for a in value.args)
        if value.keywords or starred:
            args = [a.value if isinstance(a, ast.Starred) else a for a in value.args]
            kws = value.keywords
            fcall = _call(
                "_ad_fcall_gen",
                func,
                self.tan(func),
                _tuple(args),
                _tuple([self.tan(a) for a in args]),
                _const_tuple([isinstance(a, ast.Starred) for a in value.args])
                if starred
                else ast.Constant(None),
                _const_tuple([k.arg for k in kws]),
                _tuple([k.value for k in kws]),
                _tuple([self.tan(k.value) for k in kws]),
            )
        elif isinstance(func, ast.Name) and func.id[7:] in FAST_OPS and func.id[:7] == "_ad_op_":
            # Float arithmetic: a specialised call with an inline fast path.
            tangents = [self.tan(a) for a in value.args]
            fcall = _call("_ad_ffast_" + func.id[7:], *value.args, *tangents)
        else:
            tangents = _tuple([self.tan(func), *[self.tan(a) for a in value.args]])
            fcall = _call("_ad_fcall", func, tangents, *value.args)
        if isinstance(target, ast.Name):
            pair = _tuple([_n(target.id, True), _n(t(target.id), True)], store=True)
            return [_assign(pair, fcall, line)]
        tmp = self.fresh()
        pair = _tuple([_store(target), _n(tmp, True)], store=True)
        store = _tuple([_n(t(x), True) for x in names], store=True)
        split = _call("_ad_split", _n(tmp), ast.Constant(len(names)))
        return [_assign(pair, fcall, line), _assign(store, split, line)]


def _store(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Name):
        return _n(node.id, True)
    return _tuple([_store(e) for e in node.elts], store=True)  # type: ignore[attr-defined]


def generate_forward(
    fn: ast.FunctionDef,
    active: set[str],
    freevars: tuple[str, ...],
    closure_active: bool,
    filename: str,
    plain: frozenset[str] = frozenset(),
) -> ast.FunctionDef:
    """The ``_ad_fwd`` pushforward ``FunctionDef`` for the ANF function ``fn``."""
    forget_shared()  # the located names ``guards`` builds are shared within this tree only
    gen = _Gen(active, filename, fn.name, plain)
    line = fn.lineno
    params = param_names(fn)
    gen.params = frozenset(params)
    gen.mutable_params = returned_names(fn)
    gen.rebound_params = rebound_parameters(fn)
    gen.local = local_names(fn)
    gen.marks = WriteMarks(fn)
    gen.rebound = rebound_names(fn)
    gen.closures = closure_contexts(fn.body)
    gen.later = bound_later(fn.body)
    prologue: list[ast.stmt] = []
    if params:
        store = _tuple([_n(t(p), True) for p in params], store=True)
        prologue.append(_assign(store, _n("_ad_dt"), line))
    if closure_active:
        for v in freevars:
            if v in active:
                prologue.append(
                    _assign(t(v), _call("_ad_field", _n("_ad_df"), ast.Constant(v)), line)
                )
    # A captured container the function writes into (see ``holders``) is active
    # with a zero tangent: the tangents of its items follow it by identity.
    outer = set(freevars) if closure_active else set()
    prologue += gen.zeros(sorted(active - gen.local() - gen.params - outer), line)
    body = gen.block(fn.body)
    prologue += original_arguments(gen.rebound_params, line)
    a = fn.args
    args = ast.arguments(
        posonlyargs=a.posonlyargs,
        args=a.args,
        vararg=a.vararg,
        kwonlyargs=[*a.kwonlyargs, ast.arg(arg="_ad_dt"), ast.arg(arg="_ad_df")],
        kw_defaults=[*a.kw_defaults, None, None],
        kwarg=a.kwarg,
        defaults=a.defaults,
    )
    return ast.FunctionDef(
        name="_ad_fwd",
        args=args,
        body=[*prologue, *body],
        decorator_list=[],
        returns=None,
        lineno=line,
        col_offset=0,
        **TYPE_PARAMS,
    )


def build_forward(
    f: types.FunctionType, closure_active: bool, as_init: bool | int = False, inline: bool = True
) -> Compiled:
    """Run the whole forward pipeline for ``f`` and compile the result (``inline``:
    with its small helpers inlined, see ``inlining``)."""
    from ad.transform.codegen import compile_primal, factory_module

    fr = front(f, closure_active, as_init, inline=inline)
    freevars = f.__code__.co_freevars
    fn = generate_forward(fr.anf, fr.active, freevars, closure_active, fr.filename, fr.plain)
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in FORWARD}
    cell_names = sorted(used - set(freevars)) + list(freevars)
    pristine = copy.deepcopy(fn)  # factory_module fills in locations in place
    module = factory_module(fn, cell_names)
    code = compile_primal(module, fr.filename)
    register_generated(code, pristine, fr.filename, frozenset(used))
    return Compiled(
        code=code,
        helper_cells={n: types.CellType(FORWARD[n]) for n in used},
        spec=signature_of(fr.anf),
        source=_readable(fn, fr.filename, used),
        guards=fr.guards,
    )


def _readable(fn: ast.FunctionDef, filename: str, used: set[str]) -> str:
    """The generated pushforward as source, each statement with its source line."""
    lines = [f"# generated from {filename}", f"# helpers: {', '.join(sorted(used))}"]
    lines.append(f"def _ad_fwd({ast.unparse(fn.args)}):")
    body: list[str] = []
    for node in fn.body:
        annotate(node, body, 0)
    return "\n".join(lines + body)
