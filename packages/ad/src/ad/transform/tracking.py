"""Reverse mode's ``try`` and ``with``: the adjoint replays exactly what ran.

An exception may leave a ``try`` body (or a ``with`` body whose context
manager suppresses it) after any statement, so the generator *tracks* these
blocks: each keeps a progress variable ``_ad_pg<n>``, the number of its
statements with an adjoint that finished, and the adjoint runs the adjoint of
statement ``k`` only under ``if _ad_pg<n> >= k``. A compound statement (``if``,
a nested ``try`` or ``with``) counts as soon as it starts: its own blocks are
tracked, so they say how far they got. A statement that raised recorded
nothing (its value and tape entry are assigned together, the tape push comes
after), so it is skipped whole. A loop an exception leaves part-way has pushed
part of an iteration on its stacks, which the adjoint cannot replay: its
progress is ``-k`` while it runs, and the adjoint raises
``UnsupportedSyntaxError`` naming it instead of a wrong derivative, unless
nothing the loop computed reaches the result (see ``_unfinished``).

A ``try`` records which handler ran in ``_ad_h<n>`` (0: none, so the ``else``
block ran); the adjoint runs that handler's adjoint (or the else block's)
between the ``finally`` block's and the body's.

The blocks tracked together are those with no loop between them and the
outermost ``try``/``with`` (the *root*): an exception can leave the root's
body from any of them with the others part-way. The root starts all their
variables at 0 before it runs and, inside a loop, pushes them on the tape
after it, once, whatever ran (an exception that leaves the root leaves the
enclosing loop too: an enclosing ``try`` sees that loop unfinished). The
root's own handlers, ``else`` and ``finally`` are not tracked: an exception
from them leaves the root, and so the function or an enclosing loop.

``ad.ADError`` (no rule, an in-place write the derivative cannot follow...)
must not be taken for the user's exception: a ``try`` re-raises it before its
handlers, and a ``with`` re-raises it after a context manager suppressed it.
Nor may the code go on after an exception left a differentiated function
that had written into an object its caller may hold: that write's derivative
is lost with the function's frame. Such a function marks its frame after the
write (``WriteMarks``), and each handler first looks for the mark along the
exception's traceback (``_ad_caught``, see ``ad.runtime.control``).

Forward mode needs none of the tracking (each statement updates its value and
its tangent together), only the last two guards (``forward``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ad.transform._nodes import Z, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform.activity import param_names, stored_names
from ad.transform.anf_base import IN_PLACE_HELPERS

__all__ = [
    "Track",
    "Tracked",
    "WriteMarks",
    "ad_error_handler",
    "caught_check",
    "guard_with_body",
]

_GTE, _EQ, _ISNOT = ast.GtE(), ast.Eq(), ast.IsNot()


def d(name: str) -> str:
    """The adjoint variable of ``name`` (``reverse.d``)."""
    return f"_ad_d_{name}"


@dataclass
class Track:
    """The blocks tracked together (see the module docstring)."""

    depth: int  # the loop depth of the root and of every tracked block
    vars: list[str] = field(default_factory=list)  # progress and handler variables
    owners: list[tuple[str, int]] = field(default_factory=list)  # ("try"/"with", line)


def _compare(name: str, op: ast.cmpop, value: int, line: int) -> ast.expr:
    return at(ast.Compare(_ln(name, line), [op], [_const(value, line)]), line)


def _pass(line: int) -> ast.stmt:
    return at(ast.Pass(), line)


def ad_error_handler(line: int) -> ast.ExceptHandler:
    """``except _ad_guarded(): raise``: the first handler of a differentiated ``try``
    (an ``ad.ADError`` that says the derivative cannot be computed, see
    ``ad.runtime.control.guarded``)."""
    raise_ = at(ast.Raise(None, None), line)
    kind = _call("_ad_guarded", line=line)
    return at(ast.ExceptHandler(kind, None, [raise_]), line)  # type: ignore[return-value]


def caught_check(line: int) -> ast.stmt:
    """``_ad_caught()``: first in each differentiated ``except`` block (see ``ad.runtime.control``)."""
    return at(ast.Expr(_call("_ad_caught", line=line)), line)


def guard_with_body(s: ast.With, body: list[ast.stmt], keep: str, line: int) -> list[ast.stmt]:
    """``s`` with ``body``, where an exception the context manager suppresses
    (``contextlib.suppress(Exception)``) is re-raised after it when it says the
    derivative is wrong (an ``ad.ADError``, see ``ad.runtime.control.escaping``)::

        keep = None
        with ...:
            try: body
            except BaseException: keep = _ad_escaping(); raise
        if keep is not None: raise keep
    """
    handler = at(
        ast.ExceptHandler(
            _ln("BaseException", line),
            None,
            [
                _assign(keep, _call("_ad_escaping", line=line), line),
                at(ast.Raise(None, None), line),
            ],
        ),
        line,
    )
    guarded = at(ast.Try(body or [_pass(line)], [handler], [], []), line)
    new = at(ast.With(s.items, [guarded]), line)
    check = at(
        ast.If(
            at(ast.Compare(_ln(keep, line), [_ISNOT], [_const(None, line)]), line),
            [at(ast.Raise(_ln(keep, line), None), line)],
            [],
        ),
        line,
    )
    return [_assign(keep, _const(None, line), line), new, check]


class Tracked:
    """``try`` and ``with``, for ``reverse._Gen`` (a base of it): the tracked blocks,
    and the statements themselves."""

    def tracked_block(self, stmts: list[ast.stmt], depth: int) -> tuple[list, list]:
        """``_Gen.block`` for a tracked block: progress after each statement with an
        adjoint, each adjoint guarded by it (no fused regions: they record at once)."""
        track = self.track
        assert track is not None
        frame: list = [stmts, 0]
        self.frames.append(frame)
        fwd: list[ast.stmt] = []
        chunks: list[tuple[int, list[ast.stmt], int]] = []
        checks: list[ast.stmt] = []
        pg = ""
        for i, s in enumerate(stmts):
            frame[1] = i
            n_stacks = len(self.stacks)
            f, b = self.stmt(s, depth, False)
            if not b:
                fwd += f
                continue
            if not pg:
                pg = self.fresh("pg")
                track.vars.append(pg)
            k = len(chunks) + 1
            line = getattr(s, "lineno", 0)
            kind = type(s)
            if kind is ast.With:
                # Started once __enter__ returned (its target is bound): first in the body.
                for node in f:
                    if type(node) is ast.With:
                        node.body.insert(0, _assign(pg, _const(k, line), line))
                fwd += f
            elif kind is ast.If or kind is ast.Try:
                fwd += [_assign(pg, _const(k, line), line), *f]
            elif kind is ast.For or kind is ast.While:
                fwd += [_assign(pg, _const(-k, line), line), *f, _assign(pg, _const(k, line), line)]
                stop = self._unfinished(s, self.stacks[n_stacks:], line)
                checks.append(at(ast.If(_compare(pg, _EQ, -k, line), stop, []), line))
            else:
                fwd += [*f, _assign(pg, _const(k, line), line)]
            chunks.append((k, b, line))
        self.frames.pop()
        bwd = list(checks)
        for k, b, line in reversed(chunks):
            bwd.append(at(ast.If(_compare(pg, _GTE, k, line), b, []), line))
        return fwd, bwd

    def _unfinished(
        self, loop: ast.For | ast.While, stacks: list[str], line: int
    ) -> list[ast.stmt]:
        """The adjoint of a loop an exception left part-way: an error, unless nothing
        the loop computed reaches the result. That is known outside loops (depth 0),
        where the loop's tape entries are its own: no cotangent reached a variable it
        assigned (``except ...: ys = []`` after ``ys = [f(v) for v in xs]``), and none
        of its entries must run without one (``ad.runtime.control.stateful_in``); the adjoint
        then skips it."""
        raise_ = self._raise_unfinished(line)
        if self.track is None or self.track.depth:
            return [raise_]
        assigned = sorted(
            {n for n in stored_names(loop) if n in self.active and n in self.adjoints}
        )
        tests: list[ast.expr] = [
            at(ast.Compare(_ln(d(n), line), [_ISNOT], [_ln(Z, line)]), line) for n in assigned
        ]
        if stacks:
            tests.append(_call("_ad_stateful_in", *[_ln(st, line) for st in stacks], line=line))
        if not tests:
            return [_pass(line)]
        test = tests[0] if len(tests) == 1 else at(ast.BoolOp(ast.Or(), tests), line)
        return [at(ast.If(test, [raise_], []), line)]

    def _raise_unfinished(self, line: int) -> ast.stmt:
        """``raise`` the error of a loop an exception left part-way (see the docstring)."""
        kind, where = self.track.owners[-1] if self.track and self.track.owners else ("try", line)
        how = (
            f"and the `try` at line {where} (or one around it) caught it"
            if kind == "try"
            else f"and the context manager of the `with` at line {where} suppressed it"
        )
        msg = (
            f"{self.filename}:{line}: in {self.fname}: an exception left this loop after part of "
            f"it had run, {how}, and what the loop computed is used after; the derivative "
            "cannot replay part of a loop. To fix: put the try/except inside the loop body "
            "(each iteration then finishes or fails whole), or test for the failing case "
            "before the loop instead of catching the exception"
        )
        if self.track is not None and self.track.depth:
            msg += " (or move the try out of the loop around it)"
        error = _call(
            "_ad_unfinished_loop",
            _const(msg, line),
            _const(self.filename, line),
            _const(line, line),
            line=line,
        )
        return at(ast.Raise(error, None), line)

    def _handler_var(self, track: Track, needed: bool) -> str:
        if not needed:
            return ""
        h = self.fresh("h")
        track.vars.append(h)
        return h

    def try_or_with(self, s: ast.Try | ast.With, depth: int, line: int) -> tuple[list, list]:
        """The primal and the adjoint of a ``try`` or ``with`` statement."""
        outer = self.track
        nested = outer is not None and outer.depth == depth
        track = outer if nested else Track(depth)
        assert track is not None
        is_with = type(s) is ast.With
        track.owners.append(("with" if is_with else "try", line))
        self.track = track
        try:
            if is_with:
                fwd, bwd = self._tracked_with(s, depth, line)  # type: ignore[arg-type]
            else:
                fwd, bwd = self._tracked_try(s, depth, line, nested, outer)  # type: ignore[arg-type]
        finally:
            track.owners.pop()
            self.track = outer
        if nested:
            return fwd, bwd
        # The root: every tracked variable starts at 0, and is kept once per run.
        if track.vars:
            zero = at(
                ast.Assign(
                    [at(ast.Name(v, ast.Store()), line) for v in track.vars], _const(0, line)
                ),
                line,
            )
            fwd = [zero, *fwd]
        pops: list[ast.stmt] = []
        for v in track.vars:
            push, pop = self.record(v, depth, line)
            fwd += push
            pops += pop
        return fwd, [*pops, *bwd]

    def _tracked_with(self, s: ast.With, depth: int, line: int) -> tuple[list, list]:
        bf, bb = self.block(s.body, depth, False)
        fwd = guard_with_body(s, bf, self.fresh("we"), line)
        target = s.items[0].optional_vars
        names = [target.id] if isinstance(target, ast.Name) else []
        # The target was bound (from __enter__, no derivative) before the body ran.
        return fwd, [*bb, *self.reset(names, line)]

    def _tracked_try(
        self, s: ast.Try, depth: int, line: int, nested: bool, outer: Track | None
    ) -> tuple[list, list]:
        track = self.track
        assert track is not None
        # What runs after the body: closures defined in it see those bindings.
        later: list[ast.stmt] = [_pass(line), *[x for h in s.handlers for x in h.body]]
        later += [*s.orelse, *s.finalbody]
        self.frames.append([later, 0])
        bf, bb = self.block(s.body, depth, False)
        self.frames.pop()
        if not nested:  # the root's handlers, else and finally are not tracked
            self.track = outer
        self.frames.append([[_pass(line), *s.finalbody], 0])
        handled = []
        for h in s.handlers:
            hf, hb = self.block(h.body, depth, False)
            if h.name:  # bound when the handler started
                hb = [*hb, *self.reset([h.name], h.lineno)]
            handled.append((h, hf, hb))
        of, ob = self.block(s.orelse, depth, False)
        self.frames.pop()
        ff, fb = self.block(s.finalbody, depth, False)
        self.track = track
        h_var = self._handler_var(track, bool(ob) or any(hb for _, _, hb in handled))
        handlers: list[ast.ExceptHandler] = [ad_error_handler(line)] if handled else []
        for i, (h, hf, _hb) in enumerate(handled, 1):
            hl = h.lineno
            body = [caught_check(hl), *([_assign(h_var, _const(i, hl), hl)] if h_var else []), *hf]
            handlers.append(at(ast.ExceptHandler(h.type, h.name, body or [_pass(hl)]), hl))  # type: ignore[arg-type]
        node = at(
            ast.Try(
                bf or [_pass(line)],
                handlers,
                of,
                ff if (ff or handlers) else [_pass(line)],
            ),
            line,
        )
        # Adjoint: finally, then the handler that ran (or else), then the body.
        chain: list[ast.stmt] = []
        cases = [(0, ob, line)] + [(i, hb, h.lineno) for i, (h, _hf, hb) in enumerate(handled, 1)]
        for i, b, hl in reversed(cases):
            if b:
                chain = [at(ast.If(_compare(h_var, _EQ, i, hl), b, chain), hl)]
        return [node], [*fb, *chain, *bb]


_DISPLAYS = (ast.List, ast.Dict, ast.Set)


class WriteMarks:
    """``_ad_wrote = "<function>"`` after each differentiated write into a container
    or object the function did not create itself (a parameter, a value a call
    returned...): an exception leaving the function after that write leaves the
    caller a changed object whose derivative is lost with the function's frame;
    ``ad.runtime.control.caught`` finds the mark there and refuses to go on."""

    def __init__(self, fn: ast.FunctionDef) -> None:
        self.fn = fn
        self.fname = fn.name
        self._fresh: frozenset[str] | None = None

    def fresh(self) -> frozenset[str]:
        """The names every binding of which is a new display (``[]``, ``{}``) or a
        write into the name itself (``out = _ad_append(out, v)``); not a parameter."""
        if self._fresh is None:
            fresh: set[str] = set()
            other: set[str] = set(param_names(self.fn))
            stack: list[ast.AST] = list(self.fn.body)
            while stack:
                node = stack.pop()
                kind = type(node)
                if kind is ast.FunctionDef or kind is ast.Lambda:
                    other.add(getattr(node, "name", ""))
                    continue
                if kind is ast.Assign and type(node.targets[0]) is ast.Name:  # type: ignore[attr-defined]
                    name = node.targets[0].id  # type: ignore[attr-defined]
                    v = node.value  # type: ignore[attr-defined]
                    own = (
                        type(v) is ast.Call
                        and type(v.func) is ast.Name
                        and v.func.id in IN_PLACE_HELPERS
                        and v.args
                        and type(v.args[0]) is ast.Name
                        and v.args[0].id == name
                    )
                    (fresh if isinstance(v, _DISPLAYS) or own else other).add(name)
                    stack.append(v)
                    continue
                if kind is ast.Name and type(node.ctx) is ast.Store:  # type: ignore[attr-defined]
                    other.add(node.id)  # type: ignore[attr-defined]
                for field_ in node._fields:
                    v = getattr(node, field_, None)
                    if type(v) is list:
                        stack.extend(x for x in v if isinstance(x, ast.AST))
                    elif isinstance(v, ast.AST):
                        stack.append(v)
            self._fresh = frozenset(fresh - other)
        return self._fresh

    def after(self, value: ast.expr, line: int) -> list[ast.stmt]:
        """The mark after the differentiated statement computing ``value``, if it
        is a write into what the function did not create."""
        if type(value) is not ast.Call or type(value.func) is not ast.Name:  # type: ignore[attr-defined]
            return []
        if value.func.id not in IN_PLACE_HELPERS or not value.args:  # type: ignore[attr-defined]
            return []
        first = value.args[0]  # type: ignore[attr-defined]
        if type(first) is ast.Name and first.id in self.fresh():
            return []
        return [_assign("_ad_wrote", _const(self.fname, line), line)]
