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
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ad.errors import UnsupportedSyntaxError
from ad.transform._nodes import (
    FAST_OPS,
    LOAD,
    NO_VALUE,
    STORE,
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
from ad.transform.activity import (
    all_nodes,
    capture_errors,
    free_names,
    loaded_names,
    param_names,
    rebinds,
    scope_bound,
    value_is_active,
    value_reads,
)
from ad.transform.codegen import mark_located
from ad.transform.fuse import REDUCTIONS, Region, emit, find_regions, module_attribute
from ad.transform.guards import (
    argument_write_guard,
    captured_write,
    local_names,
    ownership_guard,
    rebound_names,
    returned_names,
)
from ad.transform.inline import (
    arithmetic,
    fast_helper,
    inline_adjoint,
    inline_op,
    item_adjoint,
    item_read,
)
from ad.transform.simplify import simplify_adjoint
from ad.transform.tracking import Track, WriteMarks, tracked_block, try_or_with
from ad.transform.writers import in_place_form

__all__ = ["generate"]

_Name, _Call, _Tuple, _Compare = ast.Name, ast.Call, ast.Tuple, ast.Compare
_Constant = ast.Constant
_ISNOT, _OR, _DEL = ast.IsNot(), ast.Or(), ast.Del()
_ADD, _SUB, _MULT = ast.Add(), ast.Sub(), ast.Mult()


def _pass(line: int) -> ast.Pass:
    return at(ast.Pass(), line)


def _if_once(body: list[ast.stmt], orelse: list[ast.stmt], line: int) -> ast.If:
    """``if _ad_once: body else: orelse``: ``_ad_once`` is true when this call of the
    adjoint is its only one, so it may free the tape as it goes (see ``ad.runtime.reverse.claim``)."""
    return at(ast.If(_ln("_ad_once", line), body, orelse), line)


def _expect(var: str, line: int) -> ast.Assign:
    """``_ad_O.expect = var``: hand the once signal to the tape entry the adjoint is
    about to use (the pullback it calls next claims it, see ``ad.runtime.reverse.claim``)."""
    target = at(ast.Attribute(_ln("_ad_O", line), "expect", STORE), line)
    return _assign(target, _ln(var, line), line)


def _is_not_z(name: str, line: int) -> ast.expr:
    return at(_Compare(_ln(name, line), [_ISNOT], [_ln(Z, line)]), line)


def d(name: str) -> str:
    """The adjoint variable of ``name``."""
    return f"_ad_d_{name}"


def _store_copy(node: ast.expr, line: int) -> ast.expr:
    if isinstance(node, ast.Name):
        return _sn(node.id, line)
    return at(_Tuple([_store_copy(e, line) for e in node.elts], STORE), line)  # type: ignore[attr-defined]


def _increment(name: str, line: int) -> ast.AugAssign:
    return at(ast.AugAssign(_sn(name, line), _ADD, _const(1, line)), line)


def _with_trip_count(
    loop: ast.For | ast.While, count: str, body: list[ast.stmt], line: int
) -> list[ast.stmt]:
    """``count = 0`` and ``loop`` with ``count += 1`` first in its body."""
    loop.body = [_increment(count, line), *body]
    return [_assign(count, _const(0, line), line), loop]


def _names_in_target(t: ast.expr) -> list[str]:
    if type(t) is _Name:
        return [t.id]
    if type(t) is _Tuple and all(type(e) is _Name for e in t.elts):
        return [e.id for e in t.elts]  # type: ignore[attr-defined]
    return [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]


def _stmt_loads(s: ast.stmt) -> set[str]:
    """The names ``s`` reads; for an ANF assignment, its value's (see ``value_reads``)."""
    if type(s) is ast.Assign and type(s.targets[0]) is _Name:
        return value_reads(s.value)
    return loaded_names(s)


_INTO = {"_ad_fasti_add": "_ad_fasti_add_into", "_ad_fasti_sub": "_ad_fasti_sub_into"}


def _reuse_dying_operand(fwd: list[ast.stmt], dying: set[str], line: int) -> None:
    """In the primal of ``t = a + b`` (or ``-``) whose operand dies there, call the
    helper that may write the result into that operand's buffer
    (``_ad_fasti_add_into(a, b, k)``): add and sub keep no operand on the tape."""
    for st in fwd:
        if type(st) is not ast.If:
            continue
        for inner in st.orelse:
            value = getattr(inner, "value", None)
            if type(value) is not _Call or type(value.func) is not _Name:
                continue
            into = _INTO.get(value.func.id)
            if into is None or len(value.args) != 2:
                continue
            for k, a in enumerate(value.args, 1):
                if type(a) is _Name and a.id in dying:
                    value.func = _ln(into, line)
                    value.args = [*value.args, _const(k, line)]
                    return


def _load_counts(body: list[ast.stmt]) -> Counter:
    """How often each name is read in ``body``: an ANF call of atoms is read off its
    fields, anything else walked."""
    counts: Counter = Counter()
    for s in body:
        v = getattr(s, "value", None)
        if type(s) is ast.Assign and type(v) is _Call and type(v.func) is _Name:
            if all(type(a) is _Name or type(a) is _Constant for a in v.args) and not v.keywords:
                counts[v.func.id] += 1
                counts.update(a.id for a in v.args if type(a) is _Name)
                continue
        counts.update(
            n.id  # type: ignore[attr-defined]
            for n in all_nodes(s)
            if type(n) is _Name and type(n.ctx) is ast.Load  # type: ignore[attr-defined]
        )
    return counts


def _reduces(s: ast.stmt) -> bool:
    """Whether ``s`` binds a whole-array reduction (``np.sum``): a region may end there."""
    return module_attribute(getattr(s, "value", None)) in REDUCTIONS


#: Calls that can see a function's local variables by name.
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})


def _single_temporaries(
    body: list[ast.stmt], params: frozenset[str] | None = None, loads: Counter | None = None
) -> frozenset[str]:
    """ANF temporaries (``_ad_t<n>``) bound by exactly one assignment and read by
    no nested function or lambda: the primal may drop them after their last use.

    Given the function's ``params`` (and ``loads``, the names it reads): the user's
    local variables that are such too (not a parameter, not declared ``global`` or
    ``nonlocal``, and the function reads no name that sees locals), for a fused
    region, which computes a
    variable read only inside it without binding it (``r = out - y; sq = r ** 2;
    np.mean(sq)`` fuses as ``np.mean((out - y) ** 2)`` does)."""
    counts: dict[str, int] = {}
    captured: set[str] = set()
    users = params is not None
    stack = list(body)
    while stack:
        s = stack.pop()
        kind = type(s)
        if kind is ast.Global or kind is ast.Nonlocal:
            captured.update(s.names)
        if kind is ast.Assign:
            for t in s.targets:
                for n in [t] if type(t) is _Name else ast.walk(t):
                    if type(n) is _Name and (
                        n.id.startswith("_ad_t") or (users and not n.id.startswith("_ad_"))
                    ):
                        counts[n.id] = counts.get(n.id, 0) + (1 if type(t) is _Name else 2)
            if type(s.value) is ast.Lambda:
                captured |= loaded_names(s.value)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            captured |= loaded_names(s)
        elif kind is ast.For or kind is ast.While or kind is ast.If:
            if kind is ast.For:
                for n in ast.walk(s.target):
                    if type(n) is _Name:
                        counts[n.id] = counts.get(n.id, 0) + 2
            stack.extend(s.body)
            stack.extend(s.orelse)
        elif kind is ast.Try or kind is ast.With:
            return frozenset()  # not produced by anf; be conservative
    if users:
        if loads is None or not _INTROSPECTION.isdisjoint(loads):
            return _single_temporaries(body)
        captured |= params
    return frozenset(n for n, c in counts.items() if c == 1 and n not in captured)


@dataclass
class _Gen:
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
    pure: bool = False  # the differentiable form (see ``generate``)
    callees: frozenset[str] = frozenset()  # names of plain Python functions (inactive_mask)
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

    # --- tape ---------------------------------------------------------------

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"_ad_{base}{self.counter}"

    def record(
        self, var: str, depth: int, line: int, pullback: bool = False, signal: bool = True
    ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """Statements that keep ``var`` for the adjoint: (after its forward
        assignment, before its first backward use). A ``pullback`` entry, read
        by an adjoint running once, is freed and, unless ``signal`` is false,
        handed the once signal (see ``_if_once``); the adjoint reads it straight
        into ``_ad_p``. ``signal`` is false for the entries of the operators'
        fast paths (``_ad_fasti_*``): partials or rule pullbacks, never a
        generated adjoint, the only kind of pullback that claims the signal."""
        if depth == 0:
            return [], []
        stack, cursor = f"{var}_s", f"{var}_i"
        target = "_ad_p" if pullback else var
        self.stacks.append(stack)
        push = at(
            ast.Expr(
                at(
                    _Call(
                        at(ast.Attribute(_ln(stack, line), "append", LOAD), line),
                        [_ln(var, line)],
                        [],
                    ),
                    line,
                )
            ),
            line,
        )
        read = [
            at(ast.AugAssign(_sn(cursor, line), _SUB, _const(1, line)), line),
            _assign(
                target,
                at(ast.Subscript(_ln(stack, line), _ln(cursor, line), LOAD), line),
                line,
            ),
        ]
        # Run once (see ``ad.runtime.single_use``), the adjoint pops the entry instead: the same
        # entry (the reads are last-in first-out), no longer held by the stack.
        pop = at(_Call(at(ast.Attribute(_ln(stack, line), "pop", LOAD), line), [], []), line)
        if self.pure:
            return [push], read
        once = [_assign(target, pop, line)]
        if pullback and signal:
            once.append(_expect(target, line))
        return [push], [_if_once(once, read, line)]

    def is_active(self, e: ast.expr) -> bool:
        return bool(loaded_names(e) & self.active)

    def accumulate(
        self, name: str, value: ast.expr, line: int, into: list[tuple[list, int]] | None = None
    ) -> ast.stmt:
        """``_ad_d_name += value``, written ``_ad_d_name = value`` and listed in
        ``accumulations``: ``simplify_adjoint`` adds the zero test where it is needed.

        ``into``: ``value`` is a slot just written (``_ad_g1``), neither read nor
        written since but here, and these are the places of its store in the
        statements that write it (``(targets, index)``): where ``_ad_d_name`` is
        known to be zero, ``simplify_adjoint`` writes the adjoint there instead.
        """
        self.adjoints.add(name)
        st = _assign(d(name), value, line)
        self.accumulations[id(st)] = (st, into)
        return st

    def reset(self, names: list[str], line: int, depth: int = 1) -> list[ast.stmt]:
        """Set the adjoints of ``names`` (just handed on) to zero, dropping their
        references so that the adjoints they went to may be added into in place.

        At depth 0 the adjoint of a temporary bound once is never read again: it is
        deleted instead, a shorter statement (not in the pure form, which is
        differentiated again and may not ``del``)."""
        out: list[ast.stmt] = []
        active = self.active
        for name in names:
            if name in active:
                self.adjoints.add(name)
                if depth == 0 and name in self.releasable and not self.pure:
                    out.append(at(ast.Delete([at(_Name(d(name), _DEL), line)]), line))
                else:
                    out.append(_assign(d(name), _ln(Z, line), line))
        return out

    def inactive_mask(self, func: ast.expr, args: list[ast.expr]) -> int:
        """For a call of a name that resolved to a plain Python function (one of
        ``callees``), the bit mask of the positional arguments that carry no
        derivative (constants and inactive names); 0 for any other call.

        ``_ad_rcall_masked`` passes it on, so the callee's transform starts its
        activity analysis without those parameters: it neither computes nor keeps
        what only their cotangents would need (``Wx @ x`` in a loop over data
        rows keeps no thunk for ``x``)."""
        if self.pure or type(func) is not _Name or func.id not in self.callees:
            return 0
        active = self.active
        mask = 0
        for i, a in enumerate(args):
            if type(a) is _Constant or (type(a) is _Name and a.id not in active):
                mask |= 1 << i
        return mask

    def error(self, node: ast.AST, what: str) -> UnsupportedSyntaxError:
        line = getattr(node, "lineno", 0)
        return UnsupportedSyntaxError(
            f"{self.filename}:{line}: in {self.fname}: {what}", self.filename, line
        )

    # --- blocks ---------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], depth: int, tail: bool) -> tuple[list, list]:
        if self.track is not None and self.track.depth == depth:
            return tracked_block(self, stmts, depth)  # in a try or with, no loop between
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

    def release_dead(
        self,
        stmts: list[ast.stmt],
        fwds: list[list[ast.stmt]],
        outputs: list[tuple[int, str]],
        moved: dict[int, int],
    ) -> None:
        """Drop the primal's reference to each temporary after its last use.

        A temporary the tape needs is held by the tape; the others (an array
        ``x * y`` only summed later) would otherwise live until ``_ad_fwd``
        returns, raising peak memory. Only ANF temporaries bound once, in this
        block, and not read by a nested function are released. ``moved``: the
        statements of fused regions, by index, and where they run (the root).
        """
        names = {n for _, n in outputs}
        last: dict[str, int] = {}
        for j in range(len(stmts) - 1, -1, -1):
            hit = _stmt_loads(stmts[j]) & names
            for n in hit:
                if n not in last:
                    last[n] = moved.get(j, j)
            names -= hit
            if not names:
                break
        dead: dict[int, list[str]] = {}
        for i, n in outputs:
            j = last.get(n, i)
            if j >= i and type(stmts[j]) is not ast.Return:
                dead.setdefault(j, []).append(n)
        for j, ns in dead.items():
            line = getattr(stmts[j], "lineno", 0)
            targets = [at(_Name(n, _DEL), line) for n in ns]
            _reuse_dying_operand(fwds[j], set(ns), line)
            fwds[j].append(at(ast.Delete(targets), line))

    def regions(self, stmts: list[ast.stmt], depth: int) -> dict[int, Region]:
        """The fused regions among ``stmts`` (see ``fuse``), by statement index."""
        if depth or self.pure or not any(_reduces(s) for s in stmts):
            return {}
        if self.loads is None:
            self.loads = _load_counts(self.body)
        if self.fusible is None:
            self.fusible = _single_temporaries(self.body, self.params, self.loads)
        found = find_regions(stmts, self.fusible, self.active, self.loads)
        return {op.index: r for r in found for op in r.ops}

    def returns_only(self, name: str) -> bool:
        """Whether ``name`` is read only by the ``return`` that ends the function."""
        last = self.body[-1] if self.body else None
        value = getattr(last, "value", None)
        return (
            type(last) is ast.Return
            and type(value) is _Name
            and value.id == name  # type: ignore[attr-defined]
            and self.loads is not None
            and self.loads[name] == 1
            and self.frames[-1][0] is self.body
        )

    def fused(self, region: Region) -> tuple[list, list]:
        """The primal and adjoint of a fused region, at its root: the fused form when
        its test holds, else the members' own code (``region.fallback``), in order."""
        root = region.root
        line = root.line
        self.n_fused += 1
        flag = f"_ad_fz{self.n_fused}"
        fz = emit(region, self.active, self.n_fused, f"{self.filename}:{line}")
        for name in fz.reads:
            _ln(name, line)  # the factory binds the helpers the tree reads (see loaded_ids)
        members = {op.target for op in region.ops[:-1]}
        last = {a: k for k, op in enumerate(region.ops) for a in op.args if a in members}
        fallback_f: list[ast.stmt] = [_assign(flag, _const(False, line), line)]
        fallback_b: list[ast.stmt] = []
        for k, (f, b) in enumerate(region.fallback):
            dying = sorted(a for a, j in last.items() if j == k)
            if dying:
                at_line = region.ops[k].line
                _reuse_dying_operand(f, set(dying), at_line)
                f = [*f, at(ast.Delete([at(_Name(n, _DEL), at_line) for n in dying]), at_line)]
            fallback_f += f
            fallback_b[:0] = b
        fused_f = [_assign(flag, _const(True, line), line), *fz.forward]
        if self.returns_only(root.target):
            # Called by ``ad.gradient``, which does not return the value, the fused
            # primal computes only what the adjoint reads (``_ad_nv``, see ``generate``).
            self.elides = True
            skip = [_assign(root.target, _ln("_ad_NOVALUE", line), line)]
            fused_f.append(at(ast.If(_ln(NO_VALUE, line), skip, fz.value), line))
        else:
            fused_f += fz.value
        inner = list(fz.backward)
        for name, array in fz.cotangents:
            inner.append(self.accumulate(name, _ln(array, line), line))
            inner.append(_assign(array, _const(None, line), line))
        if fz.kept:
            self.dropped.extend(fz.kept)
            free = at(ast.Assign([_sn(n, line) for n in fz.kept], _const(None, line)), line)
            inner.append(_if_once([free], [], line))
        reset = self.reset([root.target], line, 0)
        if any(name == root.target for name, _ in fz.cotangents):  # s = s + np.sum(...)
            inner[len(fz.backward) : len(fz.backward)] = reset  # before the old s's
            reset = []
        fused_b = [at(ast.If(_is_not_z(d(root.target), line), inner, []), line), *reset]
        fwd = [at(ast.If(fz.guard, fused_f, fallback_f), line)]
        return fwd, [at(ast.If(_ln(flag, line), fused_b, fallback_b), line)]

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
            return try_or_with(self, s, depth, line)
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
        guard = argument_write_guard(
            value, self.active, self.params, self.mutable_params, self.filename, line
        )
        guard += ownership_guard(s, True, self.params, self.local, self.filename)
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

    def call(
        self, target: ast.expr, tnames: list[str], value: ast.Call, depth: int, line: int
    ) -> tuple[list, list]:
        stars = sum(1 << i for i, a in enumerate(value.args) if type(a) is ast.Starred)
        if (stars and value.keywords) or any(k.arg is None for k in value.keywords):
            raise self.error(
                value,
                "`*args`/`**kwargs` at a call whose arguments carry derivatives is not supported yet; pass the arguments explicitly",
            )
        active = self.active
        self.n_calls += 1
        pb = self.fresh("pb")
        inputs: list[tuple[int, str]] = []  # (index in the pullback's result, name)
        func = value.func
        if isinstance(func, ast.Name) and func.id in active:
            inputs.append((0, func.id))
        atoms = [a.value if type(a) is ast.Starred else a for a in value.args]
        for i, a in enumerate(atoms):
            if isinstance(a, ast.Name) and a.id in active:
                inputs.append((i + 1, a.id))
        n_results = 1 + len(value.args)
        kw_inputs = [
            (k.arg, k.value.id)
            for k in value.keywords
            if isinstance(k.value, ast.Name) and k.value.id in active
        ]
        inline = None if self.pure or stars else inline_op(value, target, line)
        read = (  # a key carrying a derivative (a rule's body at second order) is read plainly
            inline is None
            and not self.pure
            and all(idx == 1 for idx, _ in inputs)
            and item_read(value, target)
        )
        if stars:
            # f(a, *b): one call with the parts, the inactive ones as constants
            inactive = sum(
                1 << i
                for i, a in enumerate(atoms)
                if type(a) is _Constant or (type(a) is _Name and a.id not in active)
            )
            rcall = at(
                _Call(
                    _ln("_ad_rcall_star", line),
                    [_const(stars, line), _const(inactive, line), func, *atoms],
                    [],
                ),
                line,
            )
        elif inline is not None:
            # The adjoint handles tape entries (partials), so the helper may return
            # them instead of a pullback: it does for same-shape float arrays.
            rcall = at(_Call(_ln(fast_helper(func), line), value.args, []), line)
        elif read:
            # xs[i], d[k], o.w: a tape entry for plain lists, dicts, objects (ad.runtime.item_reads)
            rcall = at(_Call(_ln(read, line), value.args, []), line)
        elif value.keywords:
            rcall = at(
                _Call(
                    _ln("_ad_rcall_kw", line),
                    [
                        func,
                        at(_Tuple(value.args, LOAD), line),
                        at(
                            ast.Dict(
                                [_const(k.arg, line) for k in value.keywords],
                                [k.value for k in value.keywords],
                            ),
                            line,
                        ),
                    ],
                    [],
                ),
                line,
            )
            n_results += 1
        elif (
            not self.pure
            and isinstance(func, ast.Name)
            and func.id.startswith("_ad_op_")
            and func.id[7:] in FAST_OPS
        ):
            # Scalar arithmetic: a specialised call with an inline fast path.
            rcall = at(_Call(_ln("_ad_fast_" + func.id[7:], line), value.args, []), line)
        elif mask := self.inactive_mask(func, value.args):
            # A Python function given arguments that carry no derivative: its
            # transform treats those parameters as constants (see ``inactive_mask``).
            rcall = at(
                _Call(_ln("_ad_rcall_masked", line), [_const(mask, line), func, *value.args], []),
                line,
            )
        else:
            rcall = at(_Call(_ln("_ad_rcall", line), [func, *value.args], []), line)
        fwd: list[ast.stmt] = [
            _assign(
                at(_Tuple([_store_copy(target, line), _sn(pb, line)], STORE), line),
                rcall,
                line,
            )
        ]
        if inline is not None:
            # Python floats: compute in place and keep the partials, not a closure.
            cond, expr, partials = inline
            fwd = [
                at(
                    ast.If(
                        cond,
                        [
                            _assign(pb, partials, line),
                            _assign(_store_copy(target, line), expr, line),
                        ],
                        fwd,
                    ),
                    line,
                )
            ]
        lean = inline is not None or read  # the tape may hold a tuple, not a pullback
        push, pop = self.record(pb, depth, line, pullback=True, signal=not lean)
        fwd += push
        # Backward: seed, skip when the output's cotangent is zero.
        if len(tnames) == 1 and isinstance(target, ast.Name):
            seed: ast.expr = _ln(d(tnames[0]), line)
            test: ast.expr = _is_not_z(d(tnames[0]), line)
        else:
            seed = _call(
                "_ad_tuple_ct",
                *[_ln(d(t), line) if t in active else _ln(Z, line) for t in tnames],
                line=line,
            )
            live = [t for t in tnames if t in active]
            test = (
                at(ast.BoolOp(_OR, [_is_not_z(d(t), line) for t in live]), line)
                if len(live) > 1
                else _is_not_z(d(live[0]), line)
            )
        for t in tnames:
            if t in active:
                self.adjoints.add(t)
        # The result is unpacked directly: a pullback returning the wrong number
        # of cotangents fails the unpacking, which _ad_back turns into an error
        # naming the pullback (``_ad_p``) and the line.
        used = {idx for idx, _ in inputs}
        if kw_inputs:
            used.add(n_results - 1)
        slots = [_sn(f"_ad_g{i}" if i in used else "_ad_u", line) for i in range(n_results)]
        inner: list[ast.stmt] = [
            _assign("_ad_p", _ln(pb, line), line),
            _assign(
                at(_Tuple(slots, STORE), line),
                at(_Call(_ln("_ad_p", line), [seed], []), line),
                line,
            ),
        ]
        # Where each slot is written, for ``simplify_adjoint`` to write the adjoint there.
        writes: dict[str, list[tuple[list, int]]] = {}
        for i, slot in enumerate(slots):
            writes.setdefault(slot.id, []).append((slots, i))
        if inline is not None:
            op = arithmetic(func)
            inner[1], partials = inline_adjoint(op, seed, used, inner[1], value.args, line)  # type: ignore[arg-type]
            for st in partials:
                writes[st.targets[0].id].append((st.targets, 0))  # type: ignore[attr-defined]
        elif read and 1 in used:
            inner[1], partial = item_adjoint(seed, inner[1], line)
            writes["_ad_g1"].append((partial.targets, 0))
        if depth == 0 and self.pure:
            pass
        elif depth == 0:  # the closure's cell: freed here when run once (see ``record``)
            self.dropped.append(pb)
            drop: list[ast.stmt] = [_assign(pb, _const(None, line), line)]
            if not lean:  # a fast path's entry is never a generated adjoint
                drop.append(_expect("_ad_p", line))
            inner.insert(1, _if_once(drop, [], line))
        else:  # popped into _ad_p already
            del inner[0]
        inner += self.reset(tnames, line, depth)
        for k, (idx, name) in enumerate(inputs):
            slot = f"_ad_g{idx}"
            # Not into a target's adjoint: the reset between slot and accumulation.
            into = writes[slot] if name not in tnames else None
            inner.append(self.accumulate(name, _ln(slot, line), line, into))
            if any(other == name for _, other in inputs[k + 1 :]):
                # x * x: drop this slot's reference before the next accumulation into
                # the same adjoint, so that one may add in place (see _ad_acc).
                inner.append(_assign(f"_ad_g{idx}", _const(None, line), line))
        for kname, name in kw_inputs:
            got = _call(
                "_ad_kw_ct", _ln(f"_ad_g{n_results - 1}", line), _const(kname, line), line=line
            )
            inner.append(self.accumulate(name, got, line))
        # A pullback that wrote an object's field runs whatever its input (``ad.runtime.state``).
        held = _ln(pb if depth == 0 else "_ad_p", line)
        stateful = at(
            _Compare(
                at(_Call(_ln("_ad_type", line), [held], []), line),
                [ast.Is()],
                [_ln("_ad_Stateful", line)],
            ),
            line,
        )
        test = at(ast.BoolOp(_OR, [test, stateful]), line)
        bwd = [*pop, at(ast.If(test, inner, []), line)]
        return fwd, bwd

    def stored_after(self, depth: int) -> set[str] | None:
        """The names bound after the current statement in program order, or None
        inside a loop (where a later iteration may rebind anything)."""
        if depth > 0:
            return None
        out: set[str] = set()
        for stmts, i in self.frames:
            for later in stmts[i + 1 :]:
                out.update(rebinds(later))
        return out

    def closure_adjoint(
        self, name: str, node: ast.AST, line: int, stored_after: set[str] | None = None
    ) -> list[ast.stmt]:
        """Adjoint of defining a closure: its tangent's fields flow to captured names.

        ``stored_after``: for a def outside any loop, the names that statements
        after it bind; a captured name bound only before the def is safe, however
        often (the closure sees that value).
        """
        if name not in self.active:
            return []
        after = None if stored_after is None else frozenset(stored_after)
        captured, refused = capture_errors(name, node, self.active, self.rebound, after, True)
        if refused:  # a late capture, or a default that carries a derivative
            raise self.error(node, refused)
        recursive = name in free_names(node)
        self.closures[name] = [*captured, name] if recursive else captured
        late = set(captured) & self.bound_after()
        if late:
            self.pending[name] = late
        if recursive:
            return self.closure_flow({name}, line)
        self.adjoints.add(name)
        out: list[ast.stmt] = [
            _assign("_ad_g", _ln(d(name), line), line),
            _assign(d(name), _ln(Z, line), line),
        ]
        body = [
            self.accumulate(
                c, _call("_ad_field", _ln("_ad_g", line), _const(c, line), line=line), line
            )
            for c in captured
        ]
        if body:
            out.append(at(ast.If(_is_not_z("_ad_g", line), body, []), line))
        return out

    def bound_after(self) -> set[str]:
        """The names that the statements after the current one bind in this scope,
        in program order (in a loop: after it in the body, and after the loop)."""
        out: set[str] = set()
        for stmts, i in self.frames:
            for later in stmts[i + 1 :]:
                out |= scope_bound(later)
        return out

    def late_flow(self, s: ast.stmt) -> list[ast.stmt]:
        """Before the adjoint of ``s``: the cotangents of the closures that capture a
        name ``s`` binds, defined before it (``def a`` calling ``b``, defined below),
        handed to what they capture. The adjoint at ``def a`` comes too late: by then
        the adjoint of ``s`` has run."""
        bound = scope_bound(s)
        done = set()
        for name, late in list(self.pending.items()):
            if late & bound:
                done.add(name)
                late -= bound
                if not late:
                    del self.pending[name]
        if not done:
            return []
        return self.closure_flow(done | (bound & set(self.closures)), getattr(s, "lineno", 0))

    def closure_flow(self, members: set[str], line: int) -> list[ast.stmt]:
        """The cotangents of the closures ``members`` (and of every closure defined so
        far that captures one of them) handed to the variables they capture, until
        none is left: a closure calling itself, or two calling each other, hold each
        other's cotangents, nested as deep as the calls went (a finite tree)."""
        members = set(members)
        grown = True
        while grown:
            grown = False
            for name, captured in self.closures.items():
                if name not in members and members.intersection(captured):
                    members.add(name)
                    grown = True
        order = [m for m in self.closures if m in members]
        body: list[ast.stmt] = []
        for m in order:
            self.adjoints.add(m)
            body += [_assign("_ad_g", _ln(d(m), line), line), _assign(d(m), _ln(Z, line), line)]
            acc = [
                self.accumulate(
                    c, _call("_ad_field", _ln("_ad_g", line), _const(c, line), line=line), line
                )
                for c in self.closures[m]
            ]
            if acc:
                body.append(at(ast.If(_is_not_z("_ad_g", line), acc, []), line))
        # Loop while a member's cotangent is not zero (NoTangent: nothing to hand on).
        left = [
            at(
                ast.BoolOp(
                    ast.And(),
                    [
                        _is_not_z(d(m), line),
                        at(_Compare(_ln(d(m), line), [_ISNOT], [_ln("_ad_NoTangent", line)]), line),
                    ],
                ),
                line,
            )
            for m in order
        ]
        test = left[0] if len(left) == 1 else at(ast.BoolOp(_OR, left), line)
        return [at(ast.While(test, body, []), line)]

    def if_(self, s: ast.If, depth: int, tail: bool, line: int) -> tuple[list, list]:
        bf, bb = self.block(s.body, depth, tail)
        of, ob = self.block(s.orelse, depth, tail)
        if not bb and not ob:
            return [at(ast.If(s.test, bf or [_pass(line)], of), line)], []
        flag = self.fresh("br")
        push, pop = self.record(flag, depth, line)
        fwd_body = [_assign(flag, _const(True, line), line), *push, *bf]
        fwd_else = [_assign(flag, _const(False, line), line), *push, *of]
        fwd = [at(ast.If(s.test, fwd_body, fwd_else), line)]
        bwd = [
            *pop,
            at(ast.If(_ln(flag, line), bb or [_pass(line)], ob), line),
        ]
        return fwd, bwd

    def loop_adjoint(
        self, count: str, body_bwd: list[ast.stmt], depth: int, line: int, index: str | None = None
    ) -> list[ast.stmt]:
        target = _sn(index or "_ad_k", line)
        it = _call("_ad_range", _ln(count, line), line=line)
        if index is not None:
            it = _call("_ad_reversed", it, line=line)
        return [at(ast.For(target, it, body_bwd, []), line)]

    def for_(self, s: ast.For, depth: int, line: int) -> tuple[list, list]:
        of, ob = self.block(s.orelse, depth, False)
        tname = s.target.id  # type: ignore[attr-defined]
        if not self.is_active(s.iter):
            bf, bb = self.block(s.body, depth + 1, False)
            if not bb:
                return [
                    at(ast.For(s.target, s.iter, bf or [_pass(line)], []), line),
                    *of,
                ], ob
            count = self.fresh("n")
            push, pop = self.record(count, depth, line)
            loop = at(ast.For(s.target, s.iter, [], []), line)
            fwd = [
                *_with_trip_count(loop, count, bf, line),
                *push,
                *of,
            ]
            bwd = [
                *ob,
                *pop,
                *self.loop_adjoint(count, [*bb, *self.reset([tname], line)], depth, line),
            ]
            return fwd, bwd
        # An active iterable: materialise it as a list (with a pullback) and
        # index it, so each element's cotangent lands in its slot.
        seq, seqpb, idx, dseq = (
            self.fresh("seq"),
            self.fresh("pbseq"),
            self.fresh("i"),
            self.fresh("dseq"),
        )
        bf, bb = self.block(s.body, depth + 1, False)
        self.adjoints.add(tname)
        fwd = [
            _assign(
                at(_Tuple([_sn(seq, line), _sn(seqpb, line)], STORE), line),
                _call("_ad_rcall", _ln("_ad_aslist", line), s.iter, line=line),
                line,
            ),
        ]
        # The trip count, not len(seq): a break may end the loop early.
        count = self.fresh("n")
        fwd.append(_assign(count, _const(0, line), line))
        fwd.append(
            at(ast.For(_sn(tname, line), _ln(seq, line), [_increment(count, line), *bf], []), line)
        )
        push1, pop1 = self.record(seq, depth, line)
        push2, pop2 = self.record(seqpb, depth, line)
        push3, pop3 = self.record(count, depth, line)
        fwd += push1 + push2 + push3
        fwd += of
        elem_ct = [
            _assign(
                at(ast.Subscript(_ln(dseq, line), _ln(idx, line), STORE), line),
                _call(
                    "_ad_acc",
                    at(ast.Subscript(_ln(dseq, line), _ln(idx, line), LOAD), line),
                    _ln(d(tname), line),
                    line=line,
                ),
                line,
            ),
            _assign(d(tname), _ln(Z, line), line),
        ]
        loop = at(
            ast.For(
                _sn(idx, line),
                _call("_ad_reversed", _call("_ad_range", _ln(count, line), line=line), line=line),
                [*bb, *elem_ct],
                [],
            ),
            line,
        )
        after = [
            _assign(
                "_ad_c",
                at(_Call(_ln(seqpb, line), [_ln(dseq, line)], []), line),
                line,
            ),
        ]
        if isinstance(s.iter, ast.Name) and s.iter.id in self.active:
            after.append(
                self.accumulate(
                    s.iter.id,
                    at(ast.Subscript(_ln("_ad_c", line), _const(1, line), LOAD), line),
                    line,
                )
            )
        bwd = [
            *ob,
            *pop3,
            *pop2,
            *pop1,
            _assign(
                dseq,
                at(
                    ast.BinOp(
                        at(ast.List([_ln(Z, line)], LOAD), line),
                        _MULT,
                        _call("_ad_len", _ln(seq, line), line=line),
                    ),
                    line,
                ),
                line,
            ),
            loop,
            *after,
        ]
        return fwd, bwd

    def while_(self, s: ast.While, depth: int, line: int) -> tuple[list, list]:
        bf, bb = self.block(s.body, depth + 1, False)
        of, ob = self.block(s.orelse, depth, False)
        if not bb:
            return [
                at(ast.While(s.test, bf or [_pass(line)], []), line),
                *of,
            ], ob
        count = self.fresh("n")
        push, pop = self.record(count, depth, line)
        loop = at(ast.While(s.test, [], []), line)
        fwd = [
            *_with_trip_count(loop, count, bf, line),
            *push,
            *of,
        ]
        bwd = [*ob, *pop, *self.loop_adjoint(count, bb, depth, line)]
        return fwd, bwd


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
) -> ast.Module:
    """The module AST defining ``_ad_factory`` for the ANF function ``fn``.

    ``pure``: the form that is itself differentiated (reverse over reverse): every
    call goes through ``_ad_rcall`` (no inline float paths, no partials on the
    tape), the adjoint never frees its tape nor catches errors, the primal keeps
    its temporaries, and ``_ad_back`` is defined just before each ``return``,
    after every tape write, so its captured variables are final when it is made.

    ``callees``: the names that resolve to plain Python functions (no rules) when
    the transform runs; calls of them pass which arguments carry no derivative.
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
        releasable=_single_temporaries(fn.body),
        pure=pure,
        body=fn.body,
        callees=callees,
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
        body=[*stacks_init, *head_defs, *fwd_body],
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
