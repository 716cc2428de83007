"""Arithmetic on Python floats, inlined in the generated primal and adjoint.

For ``t = a * b`` (and +, -, /, unary -, ``a ** n``) the reverse pass emits
the operation itself behind a type test, keeping on the tape what the adjoint
needs (None, or a tuple of operands) instead of a pullback closure; the
adjoint reads it back. Other operand types go through ``_ad_fasti_<op>``,
which may also return a tape entry (same-shape float arrays) or a pullback;
for mul and ``a ** n`` the adjoint hands those to ``ad.runtime.inline_arithmetic``.

A call ``t = f(x)`` of a builtin scalar function with a ``scalar_rule``
(``math.sin``, ``math.exp``...) is inlined the same way (``scalar_call``): on a
float, while ``f`` is still the function whose rule allows it, the call itself
and its partial on the tape, ``∂x = ȳ·partial`` in the adjoint::

    if _ad_t1 is _ad_SF.math__sin and _ad_type(x) is _ad_float:
        t = _ad_t1(x)
        _ad_pb1 = _ad_SF.d_math__sin(x, t)
    else:
        t, _ad_pb1 = _ad_rcall(_ad_t1, x)
"""

from __future__ import annotations

import ast

from ad.transform._nodes import LOAD, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln

__all__ = [
    "arithmetic",
    "fast_helper",
    "inline_adjoint",
    "inline_op",
    "item_adjoint",
    "item_read",
    "scalar_adjoint",
    "scalar_call",
]

_INLINE_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div, "pow": ast.Pow}
_Name, _Constant, _BinOp, _Compare = ast.Name, ast.Constant, ast.BinOp, ast.Compare
_IS, _USUB, _MULT, _DIV, _POW = ast.Is(), ast.USub(), ast.Mult(), ast.Div(), ast.Pow()
_OPS = {k: v() for k, v in _INLINE_OPS.items()}


def _key(a: ast.expr) -> object:
    """What ``ast.dump(a)`` tells apart, for an atom, more cheaply."""
    if type(a) is _Name:
        return (a.id, type(a.ctx))
    if type(a) is _Constant:
        return (repr(a.value), a.kind)
    return ast.dump(a)


def _float_test(op: str, operands: list[ast.expr], line: int) -> ast.expr:
    """``type(a) is _ad_FP.op [is type(b)]``: the operands (one or two, none a
    constant) are Python floats and the float path of ``op`` is valid (see
    ``ad.runtime.inline_arithmetic.FLOAT_PATHS``)."""
    kind = at(ast.Attribute(_ln("_ad_FP", line), op, LOAD), line)
    types = [_call("_ad_type", a, line=line) for a in operands]
    return at(_Compare(types[0], [_IS] * len(types), [kind, *types[1:]]), line)


def arithmetic(func: ast.expr) -> str | None:
    """The operator ``func`` calls (``"mul"``) for ``_ad_op_mul`` and the in-place
    ``_ad_iop_mul``, else None. On the numbers and arrays the fast helper takes
    (``_ad_fasti_iop_mul``: Python numbers, arrays keeping their shape and dtype,
    after ``ad.runtime.ownership``), ``x *= y`` is the same program as ``x = x * y``."""
    if type(func) is not _Name:
        return None
    name = func.id  # type: ignore[attr-defined]
    if name.startswith("_ad_op_"):
        return name[7:]
    if name.startswith("_ad_iop_") and name[8:] in _INLINE_OPS:
        return name[8:]
    return None


def fast_helper(func: ast.Name) -> str:
    """The helper that computes ``func``'s operator on arrays with a tape entry."""
    op = arithmetic(func)
    return ("_ad_fasti_iop_" if func.id.startswith("_ad_iop_") else "_ad_fasti_") + str(op)


def inline_op(value: ast.Call, target: ast.expr, line: int) -> tuple | None:
    """(condition, value, tape entry) for arithmetic to inline on Python floats, or None.

    The tape entry holds what the adjoint needs: None for add, sub and neg;
    ``(b, a)`` for mul; ``(a, b)`` for truediv; ``(a,)`` for ``a ** n`` with a
    constant integer ``n >= 1``. Every new node has location ``line``.
    """
    func = value.func
    op = arithmetic(func)
    if op is None or value.keywords:
        return None
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
    # x * x tests x once; a constant is statically a number
    distinct = {_key(a): a for a in args if type(a) is not _Constant}
    cond = _float_test(op, list(distinct.values()), line)
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


def inline_adjoint(
    op: str, seed: ast.expr, used: set[int], call_stmt: ast.Assign, args: list[ast.expr], line: int
) -> tuple[ast.stmt, list[ast.Assign]]:
    """The adjoint of an inlinable op: partials from the tape, else the pullback;
    and the assignments in it that write a gradient slot ``_ad_g<i>`` from the tape.

    ``call_stmt`` is the general path, ``<slots> = _ad_p(seed)``. For mul and
    ``a ** n`` it calls ``_ad_mul_adjoint``/``_ad_pow_adjoint`` instead (see
    ``ad.runtime.inline_arithmetic``), which also read a list tape (float arrays, see ``ad.runtime.array_arithmetic``).
    """
    order = sorted(used)
    body = [_assign(f"_ad_g{i}", _inline_gradient(op, i, seed, args, line), line) for i in order]
    if op in ("add", "sub", "neg"):
        test: ast.expr = at(_Compare(_ln("_ad_p", line), [_IS], [_const(None, line)]), line)
    else:
        test = at(
            _Compare(
                _call("_ad_type", _ln("_ad_p", line), line=line), [_IS], [_ln("_ad_tuple", line)]
            ),
            line,
        )
    if order and op == "mul":
        mask = sum(1 << (i - 1) for i in order)  # bit 1: ∂a, bit 2: ∂b
        call_stmt.value = _call(
            "_ad_mul_adjoint", _ln("_ad_p", line), seed, _const(mask, line), line=line
        )
    elif order and op == "pow":
        n = args[1]
        call_stmt.value = _call("_ad_pow_adjoint", _ln("_ad_p", line), seed, n, line=line)
    return at(ast.If(test, body or [at(ast.Pass(), line)], [call_stmt]), line), body


_READS = {"_ad_op_getitem": "_ad_read_item", "_ad_getattr": "_ad_read_attr"}


def item_read(value: ast.Call, target: ast.expr) -> str | None:
    """For ``target = value`` an item read ``obj[key]`` (``_ad_op_getitem``) or a
    field read ``obj.name`` (``_ad_getattr``), the helper that reads it for the lean
    tape of ``ad.runtime.item_reads``; else None."""
    func = value.func
    if type(func) is not _Name or value.keywords or len(value.args) != 2:
        return None
    if not isinstance(target, ast.Name):
        return None
    return _READS.get(func.id)  # type: ignore[attr-defined]


def item_adjoint(seed: ast.expr, call_stmt: ast.Assign, line: int) -> tuple[ast.stmt, ast.Assign]:
    """The adjoint of an item read: ``_ad_g1 = _ad_item_ct(_ad_p, seed)`` when the
    tape holds a tuple (``ad.runtime.item_reads``), else ``call_stmt``, the pullback's call;
    and that assignment (it writes the container's gradient slot)."""
    partial = _assign("_ad_g1", _call("_ad_item_ct", _ln("_ad_p", line), seed, line=line), line)
    test = at(
        _Compare(_call("_ad_type", _ln("_ad_p", line), line=line), [_IS], [_ln("_ad_tuple", line)]),
        line,
    )
    return at(ast.If(test, [partial], [call_stmt]), line), partial


def scalar_call(
    key: str, func: ast.expr, x: ast.expr, target: str, pb: str, general: list, line: int
) -> ast.If:
    """``target = func(x)`` of the builtin scalar function ``key`` names
    (``pipeline.scalar_function_key``): inline on a float, else ``general`` (the
    dispatched call). ``ad.runtime.scalar_paths.SCALAR_FUNCTIONS`` holds the
    function while its rule is the one whose partials it also holds."""
    table = _ln("_ad_SF", line)
    cond = at(
        ast.BoolOp(
            ast.And(),
            [
                at(_Compare(func, [_IS], [at(ast.Attribute(table, key, LOAD), line)]), line),
                at(
                    _Compare(_call("_ad_type", x, line=line), [_IS], [_ln("_ad_float", line)]), line
                ),
            ],
        ),
        line,
    )
    partial = at(ast.Attribute(table, "d_" + key, LOAD), line)
    body = [
        _assign(target, at(ast.Call(func, [x], []), line), line),
        _assign(pb, at(ast.Call(partial, [x, _ln(target, line)], []), line), line),
    ]
    return at(ast.If(cond, body, general), line)


def scalar_adjoint(seed: ast.expr, call_stmt: ast.Assign, line: int) -> tuple[ast.stmt, ast.Assign]:
    """The adjoint of ``scalar_call``: ``_ad_g1 = seed * _ad_p`` when the tape holds a
    float partial, else ``call_stmt`` calling ``_ad_scalar_adjoint`` (a pullback, or
    a partial of another type); and the assignment that writes the gradient slot."""
    p = _ln("_ad_p", line)
    partial = _assign("_ad_g1", at(_BinOp(seed, _MULT, p), line), line)
    test = at(_Compare(_call("_ad_type", p, line=line), [_IS], [_ln("_ad_float", line)]), line)
    call_stmt.value = _call("_ad_scalar_adjoint", p, seed, line=line)
    return at(ast.If(test, [partial], [call_stmt]), line), partial
