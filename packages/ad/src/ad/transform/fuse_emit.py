"""Emit a fused region: its test, its primal and its adjoint, parsed once.

Part of pass 5a (``fuse``). ``emit`` returns a region's ``Fused`` form: the
test that takes the fused path (numpy's functions and the built-in rules,
float arrays whose shapes broadcast), the primal as plain numpy at the
broadcast shape (members the adjoint reads first, writing into the buffers of
temporaries that died), and the adjoint ``fuse_adjoint`` derived; the adjoint's
new arrays take the primal's dead buffers when it runs once.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from itertools import pairwise

from ad.transform.fuse import BINARY, Op, Region
from ad.transform.fuse_adjoint import Emitter, number

__all__ = ["Fused", "emit"]

_NAME = re.compile(r"\b_ad_z\w+")
_READ = re.compile(r"\b_ad_\w+")
_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "truediv": "/"}
_UFUNC_OF = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide"}


@dataclass
class Fused:
    """A region's fused form (see ``emit``)."""

    guard: ast.expr
    forward: list[ast.stmt]  # computes the members the adjoint reads
    value: list[ast.stmt]  # computes the others and the root's target
    backward: list[ast.stmt]  # from ``_ad_v``: the inputs' cotangent arrays
    cotangents: list[tuple[str, str]]  # (input, the local holding its cotangent)
    kept: list[str]  # the forward's locals the backward reads
    reads: frozenset[str]  # the generated names it reads (the runtime helpers among them)


def emit(region: Region, active: set[str], key: int, site: str) -> Fused:
    """The fused form of ``region``; ``key`` makes its names unique in the function."""
    em = Emitter(region, active, key)
    root = region.root
    d = f"_ad_d_{root.target}"
    lines = [f"_ad_v = {d} if _ad_type({d}) is _ad_float else _ad_fused_seed({d}, {site!r})"]
    if region.reductions[0].kind == "mean":
        n = em.size
        if em.leaves:  # their cotangents are the root's, not a mean's
            lines.append("_ad_w = _ad_v")
        lines.append(f"_ad_v = _ad_v / {n} if {n} else 0.0")
    cotangents = em.backward()
    lines += em.lines
    line = root.line
    read = set(_NAME.findall("\n".join(lines)))
    aliases = [*em.aliases.values(), *em.fit_aliases.values()]
    kept = [n for n in [*aliases, *map(em.z, em.member)] if n in read]
    owned = {
        em.z(t): em.is_full(em.deps.get(t, 0))
        for t, op in em.member.items()
        if op.kind not in ("getitem", "method") and em.z(t) in read
    }
    _reuse_when_once(lines, owned, em.empty)
    read = set(_NAME.findall("\n".join(lines)))
    kept += [n for n in (em.shape, em.dtype, em.mask, em.size, em.same) if n in read]
    forward, value, guard = _primal(em, set(kept))
    # one parse: the primal's statements, the test (an expression statement) and the
    # adjoint's, each on its line (the last two on the root's)
    source = [*forward, *value, (f"({guard})", line), *[(src, line) for src in lines]]
    body = _parse_at(source)
    n, m = len(forward), len(forward) + len(value)
    return Fused(
        reads=frozenset(_READ.findall("\n".join(src for src, _ in source))),
        guard=body[m].value,  # type: ignore[attr-defined]
        forward=body[:n],
        value=body[n:m],
        backward=body[m + 1 :],
        cotangents=cotangents,
        kept=kept,
    )


def _primal(em: Emitter, kept: set[str]) -> tuple[list, list, str]:
    """The fused primal's statements (source, its member's line): those that compute
    what the adjoint reads, and those that only compute the value; and the test."""
    region, key = em.region, em.key
    ops = em.elementwise  # ``x.sum``: at the root; the reductions and so on: after
    root = region.root
    reductions = region.reductions
    member = em.member
    views = em.views
    view_names = {op.target for op in views}
    slices = {op.args[1]: None for op in views}
    funcs = {op.func: op.attr or op.kind for op in region.ops if op.func}
    tests = ["_ad_FLAGS.fused", *(f"{f} is _ad_np.{k}" for f, k in funcs.items())]
    tests += [f"_ad_type({s}) is _ad_slice" for s in slices]
    # an array is sliced only when it is one (a list's slice is a list)
    tests += [f"_ad_type({a}) is _ad_ndarray" for a in em.sliced]
    # the views are taken in the test; ``_ad_fused_shape`` checks the operands' types
    # and dtypes and finds the shape the region computes at (see its doc)
    operands = [
        f"({em.z(a)} := {em.view[a].args[0]}[{em.view[a].args[1]}])" if a in em.view else a
        for a in em.operands
    ]
    tests.append(f"(_ad_zS{key} := _ad_fused_shape({em.full}, {', '.join(operands)})) is not None")
    if region.inplace:  # s op= x: no operand broadcast to a larger shape (numpy's error)
        for a in em.operands:
            z = em.z(a) if a in em.view else a
            tests.append(f"(_ad_type({z}) is not _ad_ndarray or {z}.shape == _ad_zS{key}[0])")
    for a in em.leaves:  # a number (an array would make the root one)
        tests.append(
            f"(_ad_type({a}) is _ad_float or _ad_type({a}) is _ad_int or _ad_type({a}) is _ad_np.float64"
            f" or _ad_type({a}) is _ad_np.float32)"
        )
    if len(reductions) > 1:  # each reduces an array of the region's shape (v is theirs)
        full = [em.is_full(em.deps[r.args[0]], f"_ad_zS{key}[2]") for r in reductions]
        tests += ["False"] if None in full else [t for t in full if t]
    stmts: list[tuple[str, int]] = [
        (f"{em.shape}, {em.dtype}, {em.mask}, {em.size}, {em.same} = _ad_zS{key}", root.line)
    ]
    stmts += [(f"{z} = {a}", root.line) for a, z in em.aliases.items() if z in kept]
    for a, z in em.fit_aliases.items():
        if z not in kept:
            continue
        full = em.is_full(em.bit[a])
        stmts.append((f"{z} = None if {full} else {a}" if full else f"{z} = {a}", root.line))
    # The members the adjoint reads, and those they read, first: the rest only
    # compute the value, which ``ad.gradient`` does not need (see ``Fused.value``).
    needed: set[str] = set()
    for op in reversed(ops):
        if op.target in needed or em.z(op.target) in kept:
            needed.add(op.target)
            needed.update(a for a in op.args if type(a) is str and a in member)
    computed = [op for op in ops if op.kind != "getitem"]
    order = [op for op in computed if op.target in needed]
    order += [op for op in computed if op.target not in needed]
    last_use: dict[str, int] = {}
    for k, op in enumerate([*order, *reductions]):
        for a in op.args:
            if type(a) is str and a in member:
                last_use[a] = k
    value: list[tuple[str, int]] = []
    pool: list[str] = []
    for k, op in enumerate(order):
        if op.target not in needed and k and not value:
            # the part the adjoint needs ends by deleting its dead members (below):
            # their buffers are no longer free to the value's part
            pool = []
        z = em.z(op.target)
        args = [em.z(a) if type(a) is str else number(a) for a in op.args]
        dying = [
            em.z(a)
            for a in dict.fromkeys(op.args)
            if type(a) is str
            and a in member
            and a not in view_names
            and last_use[a] == k
            and em.z(a) not in kept
        ]
        # a buffer that has the region's shape (see ``Emitter.is_full``) takes the
        # result; one of another shape might not hold it, one of numbers is no buffer
        dying = [b for b in dying if em.is_full(em.deps[em.member_of[b]]) is not None]
        pool = [b for b in pool if em.is_full(em.deps[em.member_of[b]]) is not None]
        buffers = pool + dying
        out = buffers.pop(0) if buffers else None
        pool = buffers
        expr = _op_expr(op, args, out)
        if out is not None:
            full = [em.is_full(em.deps[em.member_of[out]])]
            if out not in dying:  # from the pool: the result must have the shape too
                full.append(em.is_full(em.deps[op.target]))
            if None in full:
                expr = _op_expr(op, args, None)
            elif any(full):
                expr = f"{expr} if {' and '.join(t for t in full if t)} else {_op_expr(op, args, None)}"
        (stmts if op.target in needed else value).append((f"{z} = {expr}", op.line))
    # What the rules compute (see ``ad.runtime.lean_rules._lean_reduction``): np.add.reduce, as
    # np.sum does, and for the mean its division, as np.mean does (with its warning
    # and NaN for an empty array).
    # Then what combines them: the user's own operations on those numbers.
    for op in region.scalars:
        target = root.target if op is root else em.z(op.target)
        args = [em.z(a) if type(a) is str else number(a) for a in op.args]
        if op.kind == "mean":
            n = em.size
            mean = f"{op.func}({args[0]})" if op.func else f"{args[0]}.mean()"
            # np.float64 (np.float32) divided by an int: the same type, as np.mean's
            total = f"_ad_np.add.reduce({args[0]}, None) / {n} if {n} else {mean}"
        elif op.kind == "sum":
            total = f"_ad_np.add.reduce({args[0]}, None)"
        else:
            total = _op_expr(op, args, None)
        value.append((f"{target} = {total}", op.line))
    # A member the adjoint needs may also be read by the value's part, which runs after.
    read_later = {a for op in [*computed, *reductions] if op.target not in needed for a in op.args}
    for part, for_adjoint in ((stmts, True), (value, False)):
        dead = [
            em.z(op.target)
            for op in ops
            if (op.target in needed) == for_adjoint
            and em.z(op.target) not in kept
            and not (for_adjoint and op.target in read_later)
        ]
        if dead:
            part.append((f"del {', '.join(dict.fromkeys(dead))}", root.line))
    return stmts, value, " and ".join(tests)


def _op_expr(op: Op, args: list[str], out: str | None) -> str:
    kind = op.kind
    if kind in BINARY:
        if out is None:
            return f"{args[0]} {_OPERATOR[kind]} {args[1]}"
        return f"_ad_np.{_UFUNC_OF[kind]}({args[0]}, {args[1]}, out={out})"
    if kind == "neg":
        return f"-{args[0]}" if out is None else f"_ad_np.negative({args[0]}, out={out})"
    if kind == "pow":
        if out is None:
            return f"{args[0]} ** {args[1]}"
        if args[1] == "2":
            return f"_ad_np.square({args[0]}, out={out})"
        return f"_ad_np.power({args[0]}, {args[1]}, out={out})"
    return f"{op.func}({args[0]})" if out is None else f"{op.func}({args[0]}, out={out})"


def _reuse_when_once(lines: list[str], owned: dict[str, str | None], empty: str) -> None:
    """Let the adjoint's new arrays (``out=empty``) take the buffers of the primal's
    arrays it read for the last time, when it runs once (``_ad_once``): they are the
    region's own, and a second run would read them again. ``owned``: those arrays,
    each with the test that it has the region's shape (``fuse_adjoint.Emitter.is_full``),
    as a new array has. ``lines`` is rewritten in place."""
    last: dict[str, int] = {}
    for i, src in enumerate(lines):
        for n in _NAME.findall(src):
            last[n] = i
    free = [n for n, full in owned.items() if n in last and full is not None]
    fresh = f"out={empty})"
    for i, src in enumerate(lines):
        if not src.endswith(fresh) or src.count("out=") != 1:
            continue
        dead = [n for n in free if last[n] <= i]
        if dead:
            n = dead[0]
            free.remove(n)
            test = f"_ad_once and {owned[n]}" if owned[n] else "_ad_once"
            lines[i] = f"{src[: -len(fresh)]}out={n} if {test} else {empty})"


def _parse_at(stmts: list[tuple[str, int]]) -> list[ast.stmt]:
    """The simple statements ``stmts`` (source, line) parsed with their lines: in one
    parse, placed on those lines of the source (``;`` between those of one line)."""
    if any(b[1] < a[1] for a, b in pairwise(stmts)):  # pragma: no cover
        # not met: a region's members are the temporaries of one statement, one line
        return [_located(ast.parse(src).body[0], ln) for src, ln in stmts]
    parts: list[str] = []
    at = 1
    for src, ln in stmts:
        if parts and ln == at:
            parts.append("; ")
        else:
            parts.append("\n" * (ln - at))
            at = ln
        parts.append(src)
    return ast.parse("".join(parts)).body


def _located(node: ast.AST, line: int) -> ast.AST:  # pragma: no cover - see _parse_at
    for n in ast.walk(node):
        if "lineno" in n._attributes:
            n.lineno = n.end_lineno = line  # type: ignore[attr-defined]
            n.col_offset = n.end_col_offset = 0  # type: ignore[attr-defined]
    return node
