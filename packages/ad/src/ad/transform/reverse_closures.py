"""The reverse generator's closures: a closure's cotangent flows to what it captures.

A part of ``reverse._Gen`` (``Closures``). The adjoint of defining an active
closure (a nested ``def`` or a lambda) hands the fields of its cotangent to
the adjoints of the variables it captures. A closure capturing a name bound
only after its definition gets that flow before the adjoint of the statement
that binds it (``late_flow``); closures that call themselves or each other
hand their cotangents on until none is left (``closure_flow``).
"""

from __future__ import annotations

import ast

from ad.transform._nodes import Z, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform.activity import capture_errors, free_names, rebinds, scope_bound
from ad.transform.reverse_tape import d
from ad.transform.reverse_tape import is_not_z as _is_not_z

__all__ = ["Closures"]

_Compare = ast.Compare
_ISNOT, _OR = ast.IsNot(), ast.Or()


class Closures:
    """Closures' adjoints, for ``reverse._Gen``."""

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
