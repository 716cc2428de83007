"""The reverse generator's tape: what the primal keeps for the adjoint, and the adjoints.

A part of ``reverse._Gen`` (its base, ``Tape``): ``record`` keeps a value for
the adjoint (a local of ``_ad_fwd`` read through the closure, or inside a loop
an entry pushed on a per-variable stack that the adjoint reads back with a
cursor, or pops when it runs once); ``accumulate`` adds into an adjoint
variable (``d(name)``) and ``reset`` zeroes one handed on. The statements
that hand the once signal on (``if_once``, ``expect``) live here too.
"""

from __future__ import annotations

import ast

from ad.errors import UnsupportedSyntaxError
from ad.transform._nodes import LOAD, STORE, Z, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform._nodes import store as _sn
from ad.transform.activity import loaded_names

__all__ = ["Tape", "d", "expect", "if_once", "is_not_z"]

_Name, _Call, _Compare = ast.Name, ast.Call, ast.Compare
_ISNOT, _DEL, _SUB = ast.IsNot(), ast.Del(), ast.Sub()


def if_once(body: list[ast.stmt], orelse: list[ast.stmt], line: int) -> ast.If:
    """``if _ad_once: body else: orelse``: ``_ad_once`` is true when this call of the
    adjoint is its only one, so it may free the tape as it goes (see ``ad.runtime.reverse.claim``)."""
    return at(ast.If(_ln("_ad_once", line), body, orelse), line)


def expect(var: str, line: int) -> ast.Assign:
    """``_ad_O.expect = var``: hand the once signal to the tape entry the adjoint is
    about to use (the pullback it calls next claims it, see ``ad.runtime.reverse.claim``)."""
    target = at(ast.Attribute(_ln("_ad_O", line), "expect", STORE), line)
    return _assign(target, _ln(var, line), line)


def is_not_z(name: str, line: int) -> ast.expr:
    return at(_Compare(_ln(name, line), [_ISNOT], [_ln(Z, line)]), line)


def d(name: str) -> str:
    """The adjoint variable of ``name``."""
    return f"_ad_d_{name}"


class Tape:
    """The tape and the adjoint variables of ``reverse._Gen`` (which holds the state
    these methods read: ``active``, ``stacks``, ``adjoints``, ``pure``...)."""

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"_ad_{base}{self.counter}"

    def record(
        self, var: str, depth: int, line: int, pullback: bool = False, signal: bool = True
    ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """Statements that keep ``var`` for the adjoint: (after its forward
        assignment, before its first backward use). A ``pullback`` entry, read
        by an adjoint running once, is freed and, unless ``signal`` is false,
        handed the once signal (see ``if_once``); the adjoint reads it straight
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
            once.append(expect(target, line))
        return [push], [if_once(once, read, line)]

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

    def error(self, node: ast.AST, what: str) -> UnsupportedSyntaxError:
        line = getattr(node, "lineno", 0)
        return UnsupportedSyntaxError(
            f"{self.filename}:{line}: in {self.fname}: {what}", self.filename, line
        )
