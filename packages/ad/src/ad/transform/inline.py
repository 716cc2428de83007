"""Arithmetic on Python floats, inlined in the generated primal and adjoint.

For ``t = a * b`` (and +, -, /, unary -, ``a ** n``) the reverse pass emits
the operation itself behind a type test, keeping on the tape what the adjoint
needs (None, or a tuple of operands) instead of a pullback closure; the
adjoint reads it back. Other operand types go through ``_ad_fasti_<op>``,
which may also return a tape entry (same-shape float arrays) or a pullback.
"""

from __future__ import annotations

import ast

from ._nodes import LOAD, at
from ._nodes import assign as _assign
from ._nodes import call as _call
from ._nodes import const as _const
from ._nodes import load as _ln

__all__ = ["inline_adjoint", "inline_op"]

_INLINE_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div, "pow": ast.Pow}
_Name, _Constant, _BinOp, _Compare = ast.Name, ast.Constant, ast.BinOp, ast.Compare
_IS, _AND, _USUB, _MULT, _DIV, _POW = (
    ast.Is(),
    ast.And(),
    ast.USub(),
    ast.Mult(),
    ast.Div(),
    ast.Pow(),
)
_OPS = {k: v() for k, v in _INLINE_OPS.items()}


def _key(a: ast.expr) -> object:
    """What ``ast.dump(a)`` tells apart, for an atom, more cheaply."""
    if type(a) is _Name:
        return (a.id, type(a.ctx))
    if type(a) is _Constant:
        return (repr(a.value), a.kind)
    return ast.dump(a)


def _float_operand(a: ast.expr, line: int) -> ast.expr | None:
    """The test that operand ``a`` is a Python float (None: statically a number)."""
    if isinstance(a, ast.Constant):
        return None
    return at(_Compare(_call("type", a, line=line), [_IS], [_ln("_ad_float", line)]), line)


def inline_op(value: ast.Call, target: ast.expr, line: int) -> tuple | None:
    """(condition, value, tape entry) for arithmetic to inline on Python floats, or None.

    The tape entry holds what the adjoint needs: None for add, sub and neg;
    ``(b, a)`` for mul; ``(a, b)`` for truediv; ``(a,)`` for ``a ** n`` with a
    constant integer ``n >= 1``. Every new node has location ``line``.
    """
    func = value.func
    if not (isinstance(func, ast.Name) and func.id.startswith("_ad_op_")) or value.keywords:
        return None
    op = func.id[7:]
    if not isinstance(target, ast.Name) or not (op in _INLINE_OPS or op == "neg"):
        return None
    args = value.args
    if any(isinstance(a, ast.Constant) and type(a.value) not in (int, float) for a in args):
        return None
    if all(isinstance(a, ast.Constant) for a in args):
        return None
    if op == "pow" and not (
        isinstance(args[1], ast.Constant) and type(args[1].value) is int and args[1].value >= 1
    ):
        return None
    distinct = list({_key(a): a for a in args}.values())  # x * x tests x once
    tests = [t for t in (_float_operand(a, line) for a in distinct) if t is not None]
    flag = at(ast.Attribute(_ln("_ad_F", line), op, LOAD), line)
    cond = at(ast.BoolOp(_AND, [flag, *tests]), line)
    if op == "neg":
        return (
            cond,
            at(ast.UnaryOp(_USUB, args[0]), line),
            _const(None, line),
        )
    expr = at(_BinOp(args[0], _OPS[op], args[1]), line)
    tape: ast.expr = _const(None, line)
    if op == "mul":
        tape = at(ast.Tuple([args[1], args[0]], LOAD), line)
    elif op == "truediv":
        tape = at(ast.Tuple([args[0], args[1]], LOAD), line)
    elif op == "pow":
        tape = at(ast.Tuple([args[0]], LOAD), line)
    return cond, expr, tape


def _tape(i: int, line: int) -> ast.expr:
    return at(ast.Subscript(_ln("_ad_p", line), _const(i, line), LOAD), line)


def _inline_gradient(op: str, i: int, seed: ast.expr, args: list[ast.expr], line: int) -> ast.expr:
    """The cotangent of operand ``i`` (1-based) of an inlined op, from the tape."""
    if op == "add":
        return seed
    if op == "sub":
        return seed if i == 1 else at(ast.UnaryOp(_USUB, seed), line)
    if op == "neg":
        return at(ast.UnaryOp(_USUB, seed), line)
    if op == "mul":
        return at(_BinOp(seed, _MULT, _tape(i - 1, line)), line)
    if op == "truediv":
        # ∂a = ȳ / b,  ∂b = -ȳ a / b²
        quotient = at(_BinOp(seed, _DIV, _tape(1, line)), line)
        if i == 1:
            return quotient
        ratio = at(_BinOp(_tape(0, line), _DIV, _tape(1, line)), line)
        return at(ast.UnaryOp(_USUB, at(_BinOp(quotient, _MULT, ratio), line)), line)
    # pow, constant integer n: ∂a = ȳ n a**(n-1); the exponent gets no cotangent
    n = args[1].value  # type: ignore[attr-defined]
    if i == 2:
        return _ln("_ad_NoTangent", line)
    power = (
        _tape(0, line) if n == 2 else at(_BinOp(_tape(0, line), _POW, _const(n - 1, line)), line)
    )
    scaled = at(_BinOp(_const(n, line), _MULT, power), line) if n != 1 else _const(1, line)
    return at(_BinOp(seed, _MULT, scaled), line)


def _array_gradient(op: str, i: int, seed: ast.expr, args: list[ast.expr], line: int) -> ast.expr:
    """The cotangent of operand ``i`` of an array mul or ``a ** n`` from a list tape,
    as its last product: ``_ad_imul`` may write it into a dead buffer (same values)."""
    if op == "mul":
        return _call("_ad_imul", seed, _tape(i - 1, line), line=line)
    n = args[1].value  # type: ignore[attr-defined]
    if i == 2:
        return _ln("_ad_NoTangent", line)
    if n == 1:
        return _inline_gradient(op, i, seed, args, line)
    power = (
        _tape(0, line) if n == 2 else at(_BinOp(_tape(0, line), _POW, _const(n - 1, line)), line)
    )
    scaled = at(_BinOp(_const(n, line), _MULT, power), line)
    return _call("_ad_imul", seed, scaled, line=line)


def inline_adjoint(
    op: str, seed: ast.expr, used: set[int], call_stmt: ast.stmt, args: list[ast.expr], line: int
) -> tuple[ast.stmt, list[ast.Assign]]:
    """The adjoint of an inlinable op: partials from the tape, else the pullback;
    and the assignments in it that write a gradient slot ``_ad_g<i>`` from the tape.

    For mul and ``a ** n``, a list tape (float arrays, see ``_fast``) gets its own
    branch, whose last product may reuse a dead buffer."""
    order = sorted(used)
    body = [_assign(f"_ad_g{i}", _inline_gradient(op, i, seed, args, line), line) for i in order]
    if op in ("add", "sub", "neg"):
        test: ast.expr = at(_Compare(_ln("_ad_p", line), [_IS], [_const(None, line)]), line)
    else:
        test = at(
            _Compare(_call("type", _ln("_ad_p", line), line=line), [_IS], [_ln("_ad_tuple", line)]),
            line,
        )
    orelse = [call_stmt]
    writes = list(body)
    if order and (op == "mul" or op == "pow"):
        last = _assign(f"_ad_g{order[-1]}", _array_gradient(op, order[-1], seed, args, line), line)
        writes.append(last)
        list_test = at(
            _Compare(_call("type", _ln("_ad_p", line), line=line), [_IS], [_ln("_ad_list", line)]),
            line,
        )
        orelse = [at(ast.If(list_test, [*body[:-1], last], orelse), line)]
    return at(ast.If(test, body or [at(ast.Pass(), line)], orelse), line), writes
