"""The reverse generator's ``if``, ``for`` and ``while``: the adjoint replays them.

A part of ``reverse._Gen`` (``ControlFlow``). An ``if`` records which branch
ran and the adjoint runs that branch's adjoint; a loop counts its iterations
and the adjoint runs that many reversed iterations. A loop over an active
iterable materialises it as a list with a pullback and indexes it, so each
element's cotangent lands in its slot. (``try`` and ``with``: ``tracking``.)
"""

from __future__ import annotations

import ast

from ad.transform._nodes import LOAD, STORE, Z, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform._nodes import store as _sn
from ad.transform.reverse_tape import d

__all__ = ["ControlFlow"]

_Call, _Tuple = ast.Call, ast.Tuple
_ADD, _MULT = ast.Add(), ast.Mult()


def _pass(line: int) -> ast.Pass:
    return at(ast.Pass(), line)


def _increment(name: str, line: int) -> ast.AugAssign:
    return at(ast.AugAssign(_sn(name, line), _ADD, _const(1, line)), line)


def _with_trip_count(
    loop: ast.For | ast.While, count: str, body: list[ast.stmt], line: int
) -> list[ast.stmt]:
    """``count = 0`` and ``loop`` with ``count += 1`` first in its body."""
    loop.body = [_increment(count, line), *body]
    return [_assign(count, _const(0, line), line), loop]


class ControlFlow:
    """Branches and loops, for ``reverse._Gen``."""

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
