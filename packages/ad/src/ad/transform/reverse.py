"""Pass 5, reverse: generate the primal and the adjoint from the ANF body.

Input: an ANF ``FunctionDef`` and its active names. Output: a module AST
defining ``_ad_factory()``, which returns ``_ad_fwd`` — a function with the
original signature returning ``(value, _ad_back)``. ``_ad_back(ȳ)`` returns
``(∂f, ∂param1, ..., ∂paramN)`` in signature order.

The adjoint mirrors the primal's control flow, reversed: an ``if`` records
which branch ran and the adjoint replays it; a loop counts its iterations
and the adjoint runs that many reversed iterations. Values the adjoint needs
(pullbacks, branch flags, trip counts) are locals of ``_ad_fwd`` read through
the closure; inside loops they are pushed on per-variable stacks, which the
adjoint reads back with a cursor (so ``_ad_back`` may be called many times).
Inactive statements are emitted unchanged. Every generated statement carries
the line number of the source statement it came from.

Here: ``generate``, and the generator's state with its blocks and statements
(``_Gen``). Its parts, the bases of ``_Gen``: ``reverse_tape`` (what the primal
keeps, the adjoint variables), ``reverse_calls``, ``reverse_control`` (``if``,
``for``, ``while``), ``reverse_closures``, ``reverse_regions`` (dead temporaries,
fused regions), ``tracking`` (``try`` and ``with``).
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ad.transform._nodes import (
    LOAD,
    NO_VALUE,
    TYPE_PARAMS,
    Z,
    at,
    forget_shared,
    plain,
)
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform._nodes import store as _sn
from ad.transform.activity import param_names, value_is_active
from ad.transform.codegen import mark_located
from ad.transform.guards import (
    active_write_guards,
    captured_write,
    local_names,
    original_arguments,
    ownership_guard,
    rebound_names,
    rebound_parameters,
    returned_names,
)
from ad.transform.reverse_calls import Calls
from ad.transform.reverse_closures import Closures
from ad.transform.reverse_control import ControlFlow
from ad.transform.reverse_regions import Regions, single_temporaries
from ad.transform.reverse_tape import Tape, d
from ad.transform.simplify import simplify_adjoint
from ad.transform.tracking import Track, Tracked, WriteMarks
from ad.transform.writers import in_place_form

__all__ = ["generate"]

_Name, _Call, _Tuple, _Compare = ast.Name, ast.Call, ast.Tuple, ast.Compare
_ISNOT = ast.IsNot()


def _names_in_target(t: ast.expr) -> list[str]:
    if type(t) is _Name:
        return [t.id]
    if type(t) is _Tuple and all(type(e) is _Name for e in t.elts):
        return [e.id for e in t.elts]  # type: ignore[attr-defined]
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


@dataclass
class _Gen(Tape, Calls, ControlFlow, Closures, Regions, Tracked):
    """The primal and adjoint of one function, generated block by block: each
    statement gives its primal statements and its adjoint's (run in reverse)."""

    active: set[str]
    filename: str
    fname: str
    plain_funcs: frozenset[str] = frozenset()
    rebound: frozenset[str] = frozenset()  # names bound more than once (or in a loop)
    params: frozenset[str] = frozenset()
    mutable_params: frozenset[str] = frozenset()  # parameters the function may mutate
    local: Callable[[], frozenset[str]] = frozenset  # names the function binds (lazily)
    releasable: frozenset[str] = frozenset()  # temporaries the primal may drop when dead
    fusible: frozenset[str] | None = None  # what a fused region may compute unbound (lazily)
    # ``reverse_regions.rebound_locals``: computed with ``fusible`` (not ``rebound``,
    # the closures' names bound more than once)
    rebound_locals: dict[str, int] = field(default_factory=dict)
    pure: bool = False  # the differentiable form (see ``generate``)
    callees: frozenset[str] = frozenset()  # names of plain Python functions (inactive_mask)
    scalars: dict[str, str] = field(default_factory=dict)  # see ``Calls.scalar_call``
    # parameters bound to other objects, and those whose entry object a write tests
    # (``guards.rebound_parameters``, ``original_arguments``)
    rebound_params: frozenset[str] = frozenset()
    originals: set[str] = field(default_factory=set)
    counter: int = 0
    n_calls: int = 0
    stacks: list[str] = field(default_factory=list)
    adjoints: set[str] = field(default_factory=set)
    dropped: list[str] = field(default_factory=list)  # tape names the adjoint frees once run
    accumulations: dict[int, tuple] = field(default_factory=dict)  # by id, see accumulate
    returns: list[ast.Return] = field(default_factory=list)  # pure form: each gets its _ad_back
    frames: list[list] = field(default_factory=list)  # (block, index) being generated
    body: list[ast.stmt] = field(default_factory=list)  # the ANF function's
    elides: bool = False  # a fused region may skip the value (see ``generate``)
    loads: Counter | None = None  # how often each name is read in ``body`` (see regions)
    n_fused: int = 0
    track: Track | None = None  # the blocks of a try/with being tracked (see ``tracking``)
    marks: WriteMarks | None = None  # writes an exception must not leave behind (``tracking``)
    # The active closures defined so far, each with the names it captures (itself
    # included when it calls itself); and those capturing a name bound only after
    # their definition, with the names still to come (see ``closure_flow``).
    closures: dict[str, list[str]] = field(default_factory=dict)
    pending: dict[str, set[str]] = field(default_factory=dict)

    # --- blocks and statements ------------------------------------------------

    def block(self, stmts: list[ast.stmt], depth: int, tail: bool) -> tuple[list, list]:
        if self.track is not None and self.track.depth == depth:
            return self.tracked_block(stmts, depth)  # in a try or with, no loop between
        fwds: list[list[ast.stmt]] = []
        chunks: list[list[ast.stmt]] = []
        outputs: list[tuple[int, str]] = []  # (index, temporary) from a call with a rule
        frame: list = [stmts, 0]
        self.frames.append(frame)
        regions = self.regions(stmts, depth)
        for i, s in enumerate(stmts):
            is_tail = tail and i == len(stmts) - 1
            if isinstance(s, ast.Return) and not is_tail:
                raise self.error(
                    s,
                    "`return` before the end of a loop body or block is not supported yet; assign the result and return it at the end",
                )
            n_calls = self.n_calls
            frame[1] = i
            f, b = self.stmt(s, depth, is_tail)
            region = regions.get(i)
            if region is not None:  # computed at the root, fused or not (see ``fused``)
                region.fallback.append((f, b))
                if i != region.root.index:
                    fwds.append([])
                    chunks.append([])
                    continue
                f, b = self.fused(region)
            if self.n_calls != n_calls and type(s) is ast.Assign:
                t = s.targets[0]
                if type(t) is _Name and t.id in self.releasable:
                    outputs.append((i, t.id))
            fwds.append(f)
            chunks.append(b)
        self.frames.pop()
        if outputs and not self.pure:
            moved = {i: r.root.index for i, r in regions.items()}
            self.release_dead(stmts, fwds, outputs, moved)
        fwd = [x for chunk in fwds for x in chunk]
        bwd = [x for chunk in reversed(chunks) for x in chunk]
        return fwd, bwd

    def stmt(self, s: ast.stmt, depth: int, tail: bool) -> tuple[list, list]:
        f, b = self.stmt_(s, depth, tail)
        if self.pending:
            b = [*self.late_flow(s), *b]
        return f, b

    def stmt_(self, s: ast.stmt, depth: int, tail: bool) -> tuple[list, list]:
        line = getattr(s, "lineno", 0)
        if isinstance(s, ast.Assign):
            return self.assign(s, depth, line)
        if isinstance(s, ast.Return):
            return self.ret(s, line)
        if isinstance(s, ast.If):
            return self.if_(s, depth, tail, line)
        if isinstance(s, ast.For):
            return self.for_(s, depth, line)
        if isinstance(s, ast.While):
            return self.while_(s, depth, line)
        if isinstance(s, ast.FunctionDef):
            return [s], self.closure_adjoint(s.name, s, line, self.stored_after(depth))
        if isinstance(s, (ast.Try, ast.With)):
            return self.try_or_with(s, depth, line)
        if isinstance(s, ast.Continue):
            raise self.error(s, "internal: `continue` should have been desugared")
        return [s], []

    def ret(self, s: ast.Return, line: int) -> tuple[list, list]:
        if getattr(s.value, "lineno", None) is None:  # from a pass after anf's locate
            s.value.lineno, s.value.col_offset = line, 0  # type: ignore[union-attr]
        fwd = [at(ast.Return(at(_Tuple([s.value, _ln("_ad_back", line)], LOAD), line)), line)]
        self.returns.append(fwd[0])
        v = s.value
        if isinstance(v, ast.Name) and v.id in self.active:
            return fwd, [self.accumulate(v.id, _ln("_ad_dy", line), line)]
        return fwd, []

    def assign(self, s: ast.Assign, depth: int, line: int) -> tuple[list, list]:
        target = s.targets[0]
        value = s.value
        tnames = _names_in_target(target)
        if not value_is_active(value, self.active, self.plain_funcs):
            # An undifferentiated write in place must not reach what the tape saved.
            own = ownership_guard(s, False, self.params, self.local, self.filename)
            return [*own, plain(in_place_form(s))], self.reset(tnames, line)
        guard = active_write_guards(s, self)
        refused = captured_write(tnames, value)
        if refused:
            raise self.error(s, refused)
        if isinstance(value, ast.Lambda):
            return [s], self.closure_adjoint(tnames[0], value, line, self.stored_after(depth))
        if isinstance(value, ast.Name):  # copy
            (t,) = tnames
            if t == value.id:
                return [s], []
            copy_ = _assign("_ad_g", _ln(d(t), line), line)
            b = [
                copy_,
                *self.reset([t], line),
                self.accumulate(value.id, _ln("_ad_g", line), line, [(copy_.targets, 0)]),
            ]
            return [s], b
        if isinstance(value, (ast.Tuple, ast.List)):
            helper = "_ad_mk_tuple" if isinstance(value, ast.Tuple) else "_ad_mk_list"
            value = at(_Call(_ln(helper, line), value.elts, []), line)
        elif isinstance(value, ast.Dict):
            keys = at(_Tuple(value.keys, LOAD), line)  # type: ignore[arg-type]
            value = at(_Call(_ln("_ad_mk_dict", line), [keys, *value.values], []), line)
        if not isinstance(value, ast.Call):
            raise self.error(s, f"cannot differentiate through {ast.unparse(value)!r}")
        fwd, bwd = self.call(target, tnames, value, depth, line)
        if self.marks is not None:
            fwd += self.marks.after(value, line)
        return guard + fwd, bwd


def generate(
    fn: ast.FunctionDef,
    active: set[str],
    freevars: tuple[str, ...],
    closure_active: bool,
    filename: str,
    plain_funcs: frozenset[str] = frozenset(),
    mutable_params: frozenset[str] = frozenset(),
    pure: bool = False,
    callees: frozenset[str] = frozenset(),
    scalars: dict[str, str] | None = None,
) -> ast.Module:
    """The module AST defining ``_ad_factory`` for the ANF function ``fn``.

    ``pure``: the form that is itself differentiated (reverse over reverse): every
    call goes through ``_ad_rcall`` (no inline float paths, no partials on the
    tape), the adjoint never frees its tape nor catches errors, the primal keeps
    its temporaries, and ``_ad_back`` is defined just before each ``return``,
    after every tape write, so its captured variables are final when it is made.

    ``callees``: the names that resolve to plain Python functions (no rules) when
    the transform runs; calls of them pass which arguments carry no derivative.
    ``scalars``: the names of builtin functions a call may compute inline on a float
    (``pipeline.scalar_function_key``).
    """
    forget_shared()
    gen = _Gen(
        active=active,
        filename=filename,
        fname=fn.name,
        plain_funcs=plain_funcs,
        rebound=rebound_names(fn),
        params=frozenset(param_names(fn)),
        mutable_params=mutable_params | returned_names(fn),
        local=local_names(fn),
        releasable=single_temporaries(fn.body),
        pure=pure,
        body=fn.body,
        callees=callees,
        scalars=scalars or {},
        rebound_params=rebound_parameters(fn),
    )
    gen.marks = WriteMarks(fn)
    fwd_body, bwd_body = gen.block(fn.body, 0, True)
    simplify_adjoint(
        bwd_body,
        {d(a) for a in gen.adjoints | set(param_names(fn))},
        gen.accumulations,
        release=not pure,
    )
    line = fn.lineno
    params = param_names(fn)
    # Adjoint entry: every adjoint starts at zero; stacks get their cursors.
    init: list[ast.stmt] = []
    adjoint_names = sorted(
        gen.adjoints
        | (set(params) & active)
        | (set(freevars) & active if closure_active else set())
    )
    if adjoint_names:
        init.append(at(ast.Assign([_sn(d(a), line) for a in adjoint_names], _ln(Z, line)), line))
    for stack in gen.stacks:
        init.append(_assign(stack[:-2] + "_i", _call("_ad_len", _ln(stack, line), line=line), line))
    # Whether this call is the adjoint's only one: claimed at entry (``ad.runtime.reverse.claim``),
    # by the token ``_ad_me``, a fresh list for each closure, which only it holds.
    has_tape = bool(gen.n_calls or gen.stacks) and not pure
    if has_tape:
        claimed = at(
            ast.BoolOp(
                ast.And(),
                [
                    at(
                        _Compare(
                            at(ast.Attribute(_ln("_ad_O", line), "expect", LOAD), line),
                            [_ISNOT],
                            [_const(None, line)],
                        ),
                        line,
                    ),
                    _call("_ad_claim", _ln("_ad_me", line), line=line),
                ],
            ),
            line,
        )
        init.insert(0, _assign("_ad_once", claimed, line))
    if closure_active and freevars:
        df: ast.expr = _call(
            "_ad_fn_tangent",
            at(_Tuple([_const(v, line) for v in freevars], LOAD), line),
            at(
                _Tuple([_ln(d(v), line) if v in active else _ln(Z, line) for v in freevars], LOAD),
                line,
            ),
            line=line,
        )
    else:
        df = _ln("_ad_NoTangent", line)
    result = at(
        _Tuple([df, *[_ln(d(p), line) if p in active else _ln(Z, line) for p in params]], LOAD),
        line,
    )
    back_args = [ast.arg(arg="_ad_dy", lineno=line, col_offset=0)]
    head: list[ast.stmt] = []
    if has_tape:
        back_args.append(ast.arg(arg="_ad_me", lineno=line, col_offset=0))
    if gen.dropped:
        head.append(at(ast.Nonlocal(sorted(set(gen.dropped))), line))
    if pure:
        body: list[ast.stmt] = [
            *init,
            *bwd_body,
            ast.Return(value=result, lineno=line, col_offset=0),
        ]
    else:
        body = [*head, _catching_unpack_errors([*init, *bwd_body], result, line)]
    back = ast.FunctionDef(
        name="_ad_back",
        args=ast.arguments(
            posonlyargs=[],
            args=back_args,
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[at(ast.List([], LOAD), line)] if has_tape else [],
        ),
        body=body,
        decorator_list=[],
        returns=None,
        lineno=line,
        col_offset=0,
        **TYPE_PARAMS,
    )
    stacks_init = [_assign(stack, at(ast.List([], LOAD), line), line) for stack in gen.stacks]
    if pure:
        fwd_body = _define_before_returns(fwd_body, back, {id(r) for r in gen.returns})
        head_defs: list[ast.stmt] = []
    else:
        head_defs = [back]
    args = fn.args
    if gen.elides:
        # ``_ad_fwd(..., _ad_nv=True)``: the caller (``ad.gradient``) does not need the
        # value; a fused region whose sum is returned then skips what only computes it.
        args = copy.copy(args)
        args.kwonlyargs = [*args.kwonlyargs, ast.arg(arg=NO_VALUE, lineno=line, col_offset=0)]
        args.kw_defaults = [*args.kw_defaults, _const(False, line)]
    fwd = ast.FunctionDef(
        name="_ad_fwd",
        args=args,
        body=[*original_arguments(gen.rebound_params, line), *stacks_init, *head_defs, *fwd_body],
        decorator_list=[],
        returns=None,
        lineno=line,
        col_offset=0,
        **TYPE_PARAMS,
    )
    # Every node above was built with its location, and ``fn`` (the ANF) is
    # located: codegen need not walk the tree to fill locations in.
    mark_located(fwd)
    return fwd


def _catching_unpack_errors(body: list[ast.stmt], result: ast.expr, line: int) -> ast.Try:
    """``try: body; return result`` turning a pullback's wrong number of
    cotangents (a failed unpacking) into an error naming it (``_ad_unpack_error``)."""
    return ast.Try(
        body=[*body, ast.Return(value=result, lineno=line, col_offset=0)],
        handlers=[
            ast.ExceptHandler(
                type=_ln("_ad_ValueError", line),
                name="_ad_e",
                body=[
                    ast.Raise(
                        exc=_call("_ad_unpack_error", _ln("_ad_e", line), line=line),
                        cause=None,
                        lineno=line,
                        col_offset=0,
                    )
                ],
                lineno=line,
                col_offset=0,
            )
        ],
        orelse=[],
        finalbody=[],
        lineno=line,
        col_offset=0,
    )


def _define_before_returns(
    stmts: list[ast.stmt], back: ast.FunctionDef, returns: set[int]
) -> list[ast.stmt]:
    """``stmts`` with a copy of ``back`` just before each generated ``return``."""
    out: list[ast.stmt] = []
    for s in stmts:
        if id(s) in returns:
            out.append(copy.deepcopy(back))
        elif type(s) is ast.If or type(s) is ast.For or type(s) is ast.While:
            s.body = _define_before_returns(s.body, back, returns)
            s.orelse = _define_before_returns(s.orelse, back, returns)
        out.append(s)
    return out
