"""Arithmetic on Python floats, inlined in the generated primal and adjoint.

For ``t = a * b`` (and +, -, /, unary -, ``a ** n``) the reverse pass emits
the operation itself behind a type test, keeping on the tape what the adjoint
needs (None, or a tuple of operands) instead of a pullback closure; the
adjoint reads it back. Other operand types go through ``_ad_fasti_<op>``,
which may also return a tape entry (same-shape float arrays) or a pullback.
"""

from __future__ import annotations

import ast

from ._nodes import assign as _assign
from ._nodes import call as _call
from ._nodes import name as _n

__all__ = ["inline_adjoint", "inline_op"]

_INLINE_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div, "pow": ast.Pow}


def _float_operand(a: ast.expr) -> ast.expr | None:
    """The test that operand ``a`` is a Python float (None: statically a number)."""
    if isinstance(a, ast.Constant):
        return None
    return ast.Compare(left=_call("type", a), ops=[ast.Is()], comparators=[_n("_ad_float")])


def inline_op(value: ast.Call, target: ast.expr) -> tuple | None:
    """(condition, value, tape entry) for arithmetic to inline on Python floats, or None.

    The tape entry holds what the adjoint needs: None for add, sub and neg;
    ``(b, a)`` for mul; ``(a, b)`` for truediv; ``(a,)`` for ``a ** n`` with a
    constant integer ``n >= 1``.
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
    distinct = list({ast.dump(a): a for a in args}.values())  # x * x tests x once
    tests = [t for t in (_float_operand(a) for a in distinct) if t is not None]
    flag = ast.Attribute(value=_n("_ad_F"), attr=op, ctx=ast.Load())
    cond = ast.BoolOp(op=ast.And(), values=[flag, *tests])
    if op == "neg":
        return cond, ast.UnaryOp(op=ast.USub(), operand=args[0]), ast.Constant(None)
    expr = ast.BinOp(left=args[0], op=_INLINE_OPS[op](), right=args[1])
    tape: ast.expr = ast.Constant(None)
    if op == "mul":
        tape = ast.Tuple(elts=[args[1], args[0]], ctx=ast.Load())
    elif op == "truediv":
        tape = ast.Tuple(elts=[args[0], args[1]], ctx=ast.Load())
    elif op == "pow":
        tape = ast.Tuple(elts=[args[0]], ctx=ast.Load())
    return cond, expr, tape


def _tape(i: int) -> ast.expr:
    return ast.Subscript(value=_n("_ad_p"), slice=ast.Constant(i), ctx=ast.Load())


def _inline_gradient(op: str, i: int, seed: ast.expr, args: list[ast.expr]) -> ast.expr:
    """The cotangent of operand ``i`` (1-based) of an inlined op, from the tape."""
    if op == "add":
        return seed
    if op == "sub":
        return seed if i == 1 else ast.UnaryOp(op=ast.USub(), operand=seed)
    if op == "neg":
        return ast.UnaryOp(op=ast.USub(), operand=seed)
    if op == "mul":
        return ast.BinOp(left=seed, op=ast.Mult(), right=_tape(i - 1))
    if op == "truediv":
        # ∂a = ȳ / b,  ∂b = -ȳ a / b²
        quotient = ast.BinOp(left=seed, op=ast.Div(), right=_tape(1))
        if i == 1:
            return quotient
        ratio = ast.BinOp(left=_tape(0), op=ast.Div(), right=_tape(1))
        return ast.UnaryOp(
            op=ast.USub(), operand=ast.BinOp(left=quotient, op=ast.Mult(), right=ratio)
        )
    # pow, constant integer n: ∂a = ȳ n a**(n-1); the exponent gets no cotangent
    n = args[1].value  # type: ignore[attr-defined]
    if i == 2:
        return _n("_ad_NoTangent")
    power = (
        _tape(0) if n == 2 else ast.BinOp(left=_tape(0), op=ast.Pow(), right=ast.Constant(n - 1))
    )
    scaled = (
        ast.BinOp(left=ast.Constant(n), op=ast.Mult(), right=power) if n != 1 else ast.Constant(1)
    )
    return ast.BinOp(left=seed, op=ast.Mult(), right=scaled)


def inline_adjoint(
    op: str, seed: ast.expr, used: set[int], call_stmt: ast.stmt, args: list[ast.expr], line: int
) -> ast.stmt:
    """The adjoint of an inlinable op: partials from the tape, else the pullback."""
    body = [_assign(f"_ad_g{i}", _inline_gradient(op, i, seed, args), line) for i in sorted(used)]
    if op in ("add", "sub", "neg"):
        test: ast.expr = ast.Compare(
            left=_n("_ad_p"), ops=[ast.Is()], comparators=[ast.Constant(None)]
        )
    else:
        test = ast.Compare(
            left=_call("type", _n("_ad_p")), ops=[ast.Is()], comparators=[_n("_ad_tuple")]
        )
    return ast.If(
        test=test, body=body or [ast.Pass()], orelse=[call_stmt], lineno=line, col_offset=0
    )
