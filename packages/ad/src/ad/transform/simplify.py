"""A peephole pass over the generated adjoint: statically known zeros.

The first accumulation into an adjoint after it was set to zero needs no
zero test: ``X = V if X is _ad_Z else _ad_acc(X, V)`` becomes ``X = V``.
"""

from __future__ import annotations

import ast

from ._nodes import Z
from .activity import all_nodes, stored_names

_Assign, _Name, _Tuple, _IfExp = ast.Assign, ast.Name, ast.Tuple, ast.IfExp

__all__ = ["simplify_adjoint"]


def _assigned(stmts: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for st in stmts:
        if type(st) is _Assign:  # the common case: read the targets only
            for t in st.targets:
                if type(t) is _Name:
                    out.add(t.id)
                elif type(t) is _Tuple and all(type(e) is _Name for e in t.elts):
                    out.update(e.id for e in t.elts)  # type: ignore[attr-defined]
                else:
                    out.update(n.id for n in all_nodes(t) if type(n) is _Name)
            continue
        out.update(stored_names(st))
    return out


def _is_accumulate(st: ast.stmt) -> bool:
    """``X = V if X is _ad_Z else _ad_acc(X, V)``, as ``_Gen.accumulate`` writes it."""
    if not (isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name)):
        return False
    v = st.value
    return (
        isinstance(v, ast.IfExp)
        and isinstance(v.test, ast.Compare)
        and isinstance(v.test.left, ast.Name)
        and v.test.left.id == st.targets[0].id
        and isinstance(v.test.ops[0], ast.Is)
    )


def simplify_adjoint(stmts: list[ast.stmt], zero: set[str]) -> tuple[list[ast.stmt], set[str]]:
    """Drop zero tests that are statically known: the first accumulation into an
    adjoint after it was set to zero becomes a plain assignment.

    ``zero`` holds the adjoint variables known to be ``_ad_Z`` on entry; the
    result is the rewritten block and the set known on exit.
    """
    zero = set(zero)
    out: list[ast.stmt] = []
    for st in stmts:
        if type(st) is _Assign:
            targets = st.targets
            kind = type(st.value)
            if kind is _Name and st.value.id == Z:  # type: ignore[attr-defined]
                out.append(st)
                zero |= {t.id for t in targets if isinstance(t, ast.Name)}
                continue
            if kind is _IfExp and _is_accumulate(st) and targets[0].id in zero:  # type: ignore[attr-defined]
                name = st.targets[0].id  # type: ignore[attr-defined]
                out.append(
                    ast.Assign(
                        targets=st.targets, value=st.value.body, lineno=st.lineno, col_offset=0
                    )
                )  # type: ignore[attr-defined]
                zero.discard(name)
                continue
            out.append(st)
            if len(targets) == 1 and type(targets[0]) is _Name:
                zero.discard(targets[0].id)  # _assigned([st]), the common case
            else:
                zero -= _assigned([st])
        elif isinstance(st, ast.If):
            test = st.test
            if type(test) is _Name and test.id == "_ad_once":  # type: ignore[attr-defined]
                # tape bookkeeping of a single-use adjoint: it assigns no adjoint
                out.append(st)
                continue
            body, z1 = simplify_adjoint(st.body, zero)
            orelse, z2 = simplify_adjoint(st.orelse, zero)
            out.append(
                ast.If(test=st.test, body=body, orelse=orelse, lineno=st.lineno, col_offset=0)
            )
            zero = z1 & (z2 if st.orelse else zero)
        elif isinstance(st, (ast.For, ast.While)):
            inside = zero - _assigned(st.body)
            body, _ = simplify_adjoint(st.body, inside)
            new = (
                ast.For(
                    target=st.target,
                    iter=st.iter,
                    body=body,
                    orelse=[],
                    lineno=st.lineno,
                    col_offset=0,
                )
                if isinstance(st, ast.For)
                else ast.While(test=st.test, body=body, orelse=[], lineno=st.lineno, col_offset=0)
            )
            out.append(new)
            zero = inside
        else:
            out.append(st)
            zero -= _assigned([st])
    return out, zero
