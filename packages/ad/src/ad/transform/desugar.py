"""Pass 3a, desugar: remove early ``return``, ``continue`` and mid-body ``break``;
lower ``match`` to ``if`` statements (see ``patterns``).

Output form (a new tree): returns appear only as the function's last
statement or at the end of the branches of a final ``if``; ``continue`` is
gone; ``break`` appears only as ``if <flags>: break``, the last statement of a
loop body. What ran is recorded in plain boolean flags (``_ad_done``,
``_ad_brkN``, ``_ad_cntN``) and the statements after a possible exit are
guarded by ``if not <flags>:`` — so every statement the adjoint replays was
really executed, and the adjoint's control flow mirrors the primal's.
``try`` and ``with`` keep their shape (an exit inside sets its flag, so the
``finally`` block and the context manager's ``__exit__`` still run); a
``with`` of several items becomes nested ``with`` statements of one each.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from ad.transform.patterns import lower_match

__all__ = ["desugar"]

_MATCH = getattr(ast, "Match", None)

_RET, _DONE, _RETV = "ret", "_ad_done", "_ad_retv"


@dataclass
class _Loop:
    brk: str
    cnt: str
    used_brk: bool = False
    used_cnt: bool = False


def _name(id_: str, line: int, store: bool = False) -> ast.Name:
    """A name located at ``line``: every node this pass builds has its location
    (anf passes them on, and nothing after walks the tree to fill one in)."""
    return ast.Name(id_, ast.Store() if store else ast.Load(), lineno=line, col_offset=0)


def _const(value: object, line: int) -> ast.Constant:
    return ast.Constant(value, lineno=line, col_offset=0)


def _set(flag: str, value: bool, line: int) -> ast.Assign:
    return ast.Assign(
        targets=[_name(flag, line, True)], value=_const(value, line), lineno=line, col_offset=0
    )


def _any(flags: list[str], line: int) -> ast.expr:
    if len(flags) == 1:
        return _name(flags[0], line)
    values: list[ast.expr] = [_name(f, line) for f in flags]
    return ast.BoolOp(ast.Or(), values, lineno=line, col_offset=0)


def _not(operand: ast.expr, line: int) -> ast.expr:
    return ast.UnaryOp(ast.Not(), operand, lineno=line, col_offset=0)


def _tail_returns_only(body: list[ast.stmt]) -> bool:
    """True when every return is in tail position (last stmt, or ends of a final if)."""
    for i, s in enumerate(body):
        last = i == len(body) - 1
        if isinstance(s, ast.Return):
            if not last:
                return False
        elif isinstance(s, ast.If) and last:
            if not (_tail_returns_only(s.body) and _tail_returns_only(s.orelse)):
                return False
        elif _has(s, ast.Return):
            return False
    return True


_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ClassDef)
_AST = ast.AST


def _has(node: ast.AST, kind: type) -> bool:
    """Whether ``node`` contains a ``kind`` node outside nested scopes."""
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        n = pop()
        if isinstance(n, kind):
            return True
        for field in n._fields:
            v = getattr(n, field, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, _AST) and not isinstance(x, _SCOPES):
                        push(x)
            elif isinstance(v, _AST) and not isinstance(v, _SCOPES):
                push(v)
    return False


class _Desugar:
    def __init__(self, convert_returns: bool) -> None:
        self.convert_returns = convert_returns
        self.loops: list[_Loop] = []
        self.counter = 0

    def block(self, stmts: list[ast.stmt]) -> tuple[list[ast.stmt], set[str]]:
        """Rewrite a block; return it and the exits it may take ('ret', flags)."""
        out: list[ast.stmt] = []
        for i, s in enumerate(stmts):
            new, exits = self.stmt(s)
            out.extend(new)
            if exits:
                rest = stmts[i + 1 :]
                if "!" in exits:  # unconditional exit: the rest is dead code
                    return out, exits - {"!"}
                if rest:
                    rest_out, rest_exits = self.block(rest)
                    if rest_out:
                        line = getattr(rest[0], "lineno", 0)
                        test = _not(_any(sorted(self.flags(exits)), line), line)
                        out.append(
                            ast.If(test=test, body=rest_out, orelse=[], lineno=line, col_offset=0)
                        )
                    exits = exits | rest_exits
                return out, exits
        return out, set()

    def flags(self, exits: set[str]) -> set[str]:
        return {(_DONE if e == _RET else e) for e in exits}

    def stmt(self, s: ast.stmt) -> tuple[list[ast.stmt], set[str]]:
        line = getattr(s, "lineno", 0)
        if isinstance(s, ast.Return) and self.convert_returns:
            value = s.value if s.value is not None else _const(None, line)
            assign = ast.Assign(
                targets=[_name(_RETV, line, True)], value=value, lineno=line, col_offset=0
            )
            return [assign, _set(_DONE, True, line)], {_RET, "!"}
        if isinstance(s, ast.Break):
            loop = self.loops[-1]
            loop.used_brk = True
            return [_set(loop.brk, True, line)], {loop.brk, "!"}
        if isinstance(s, ast.Continue):
            loop = self.loops[-1]
            loop.used_cnt = True
            return [_set(loop.cnt, True, line)], {loop.cnt, "!"}
        if isinstance(s, ast.If):
            body, e1 = self.block(s.body)
            orelse, e2 = self.block(s.orelse)
            new = ast.If(
                test=s.test,
                body=body or [ast.Pass(lineno=line, col_offset=0)],
                orelse=orelse,
                lineno=line,
                col_offset=0,
            )
            exits = e1 | e2
            return [new], exits
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, line)
        if isinstance(s, ast.Try):
            return self.try_(s, line)
        if isinstance(s, ast.With):
            return self.with_(s, line)
        if _MATCH is not None and isinstance(s, _MATCH):
            # if/elif tests and bindings (``patterns``), then desugared as any code.
            self.counter += 1
            return self.block(lower_match(s, f"_ad_m{self.counter}"))
        return [s], set()

    def try_(self, s: ast.Try, line: int) -> tuple[list[ast.stmt], set[str]]:
        """A ``try`` keeps its shape; its blocks lose their exits. ``else`` runs only
        when the body ran to its end, not when it returned or left the loop: it is
        guarded by the body's flags. (``fence`` refuses exits from ``finally``.)"""
        body, exits = self.block(s.body)
        body_flags = sorted(self.flags(exits - {"!"}))
        handlers: list[ast.ExceptHandler] = []
        body_always_exits = "!" in exits
        every_handler_exits = True
        for h in s.handlers:
            hbody, hexits = self.block(h.body)
            every_handler_exits = every_handler_exits and "!" in hexits
            exits |= hexits
            new_h = copy.copy(h)
            new_h.body = hbody or [ast.Pass(lineno=h.lineno, col_offset=0)]
            handlers.append(new_h)
        orelse, else_exits = self.block(s.orelse)
        if orelse and body_flags:
            test = _not(_any(body_flags, line), line)
            orelse = [ast.If(test=test, body=orelse, orelse=[], lineno=line, col_offset=0)]
        finalbody, _ = self.block(s.finalbody)
        new = copy.copy(s)
        new.body = body or [ast.Pass(lineno=line, col_offset=0)]
        new.handlers = handlers
        new.orelse = orelse
        new.finalbody = finalbody
        exits = (exits | else_exits) - {"!"}
        # The statement always exits when its body does and no handler goes on.
        if body_always_exits and every_handler_exits:
            exits.add("!")
        return [new], exits

    def with_(self, s: ast.With, line: int) -> tuple[list[ast.stmt], set[str]]:
        """``with a, b: ...`` as ``with a: with b: ...`` (``b`` is evaluated after
        ``a`` is entered). A context manager may suppress an exception of the
        body and go on after the ``with``: an exit inside is never unconditional."""
        body_src = s.body
        if len(s.items) > 1:
            inner = copy.copy(s)
            inner.items = s.items[1:]
            inner.lineno = getattr(s.items[1].context_expr, "lineno", line)
            body_src = [inner]
        body, exits = self.block(body_src)
        new = copy.copy(s)
        new.items = s.items[:1]
        new.body = body or [ast.Pass(lineno=line, col_offset=0)]
        return [new], exits - {"!"}

    def loop(self, s: ast.For | ast.While, line: int) -> tuple[list[ast.stmt], set[str]]:
        self.counter += 1
        loop = _Loop(brk=f"_ad_brk{self.counter}", cnt=f"_ad_cnt{self.counter}")
        self.loops.append(loop)
        body, exits = self.block(s.body)
        self.loops.pop()
        ret = _RET in exits
        pre: list[ast.stmt] = []
        if loop.used_cnt:
            body = [_set(loop.cnt, False, line), *body]
        stop = ([loop.brk] if loop.used_brk else []) + ([_DONE] if ret else [])
        if stop:
            body.append(
                ast.If(
                    test=_any(stop, line),
                    body=[ast.Break(lineno=line, col_offset=0)],
                    orelse=[],
                    lineno=line,
                    col_offset=0,
                )
            )
        if loop.used_brk:
            pre.append(_set(loop.brk, False, line))
        orelse, else_exits = self.block(s.orelse)
        new = copy.copy(s)
        new.body = body or [ast.Pass(lineno=line, col_offset=0)]
        new.orelse = []
        out = [*pre, new]
        if orelse:
            if stop:
                test = _not(_any(stop, line), line)
                out.append(ast.If(test=test, body=orelse, orelse=[], lineno=line, col_offset=0))
            else:
                out.extend(orelse)
        return out, ({_RET} if ret else set()) | else_exits


def desugar(fn: ast.FunctionDef) -> ast.FunctionDef:
    """Return a copy of ``fn`` without early returns, ``continue`` or mid-body ``break``.

    Unchanged statements are shared with the input, never modified.
    """
    fn = copy.copy(fn)
    convert = not _tail_returns_only(fn.body)
    d = _Desugar(convert)
    body, _exits = d.block(fn.body)
    line = fn.lineno
    if convert:
        body = [
            ast.Assign(
                targets=[_name(_RETV, line, True)],
                value=_const(None, line),
                lineno=line,
                col_offset=0,
            ),
            _set(_DONE, False, line),
            *body,
            ast.Return(value=_name(_RETV, line), lineno=line, col_offset=0),
        ]
    fn.body = body
    return fn
