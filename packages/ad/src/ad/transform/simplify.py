"""A peephole pass over the generated adjoint: statically known zeros.

The generator writes each accumulation into an adjoint as ``X = V`` and lists
it in ``accumulations``. This pass gives it its zero test, ``X = V if X is
_ad_Z else _ad_acc(X, V)``, unless ``X`` is statically known to be zero there
(the first accumulation after it was set to zero), where ``X = V`` is exact.
There, when ``V`` is a slot just written (``_ad_u, _ad_g1 = _ad_p(ȳ)``), the
slot's writes target ``X`` itself and the copy goes: ``_ad_u, X = _ad_p(ȳ)``.

The adjoint's statements are the generator's own fresh nodes, so the pass
rewrites them in place instead of copying the (large) tree.
"""

from __future__ import annotations

import ast

from ._nodes import Z, at
from ._nodes import assign as _assign
from ._nodes import call as _call
from ._nodes import const as _const
from ._nodes import load as _ln
from ._nodes import store as _sn
from .activity import all_nodes, stored_names

_Assign, _Name, _Tuple, _If = ast.Assign, ast.Name, ast.Tuple, ast.If
_IS = ast.Is()

__all__ = ["simplify_adjoint", "with_zero_test"]


def _assigned(st: ast.stmt) -> set[str]:
    """The names ``st`` binds."""
    if type(st) is _Assign:  # the common case: read the targets only
        out: set[str] = set()
        for t in st.targets:
            if type(t) is _Name:
                out.add(t.id)
            elif type(t) is _Tuple and all(type(e) is _Name for e in t.elts):
                out.update(e.id for e in t.elts)  # type: ignore[attr-defined]
            else:
                out.update(n.id for n in all_nodes(t) if type(n) is _Name)
        return out
    return set(stored_names(st))


def _assigned_in(stmts: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for st in stmts:
        out |= _assigned(st)
    return out


def _releases(stmts: list[ast.stmt], i: int, slot: str) -> bool:
    """Whether ``stmts[i]`` is ``slot = None`` (the generator's own release, ``x * x``)."""
    if i >= len(stmts):
        return False
    st = stmts[i]
    if type(st) is not _Assign or type(st.value) is not ast.Constant or st.value.value is not None:  # type: ignore[attr-defined]
        return False
    t = st.targets  # type: ignore[attr-defined]
    return len(t) == 1 and type(t[0]) is _Name and t[0].id == slot


def with_zero_test(st: ast.Assign) -> ast.Assign:
    """``X = V`` made ``X = V if X is _ad_Z else _ad_acc(X, V)`` (in place)."""
    line = st.lineno
    dn = st.targets[0].id  # type: ignore[attr-defined]
    value = st.value
    test = at(ast.Compare(_ln(dn, line), [_IS], [_ln(Z, line)]), line)
    st.value = at(ast.IfExp(test, value, _call("_ad_acc", _ln(dn, line), value, line=line)), line)
    return st


def simplify_adjoint(
    stmts: list[ast.stmt], zero: set[str], accumulations: dict[int, tuple], release: bool = True
) -> set[str]:
    """Give each accumulation in ``stmts`` its zero test, unless its adjoint is
    statically known to be zero.

    ``accumulations`` maps the ``id`` of each accumulation ``X = V`` to the
    statement and the places where the slot ``V`` is written, or None (see
    ``reverse._Gen.accumulate``). ``zero`` holds the adjoint variables known to
    be ``_ad_Z`` on entry; the result is the set known on exit. ``stmts`` is
    rewritten in place.

    ``release``: a slot added with a zero test is set to None right after, so the
    array it held (now inside the adjoint, or added into it in place) is not kept
    alive by the slot until some later block happens to reuse its name.
    """
    zero = set(zero)
    out: list[ast.stmt] = []
    for i, st in enumerate(stmts):
        kind = type(st)
        if kind is _Assign:
            targets = st.targets  # type: ignore[attr-defined]
            acc = accumulations.get(id(st))
            if acc is not None:
                name = targets[0].id
                if name not in zero:
                    out.append(with_zero_test(st))  # type: ignore[arg-type]
                    value = st.value.body  # type: ignore[attr-defined]
                    if (
                        release
                        and type(value) is _Name
                        and value.id.startswith("_ad_g")
                        and not _releases(stmts, i + 1, value.id)
                    ):
                        out.append(_assign(value.id, _const(None, st.lineno), st.lineno))
                    continue
                zero.discard(name)
                if acc[1] is None:
                    out.append(st)
                    continue
                store = _sn(name, st.lineno)
                for place, i in acc[1]:
                    place[i] = store
                continue
            out.append(st)
            value = st.value  # type: ignore[attr-defined]
            if type(value) is _Name and value.id == Z:
                zero.update(t.id for t in targets if type(t) is _Name)
            elif len(targets) == 1 and type(targets[0]) is _Name:
                zero.discard(targets[0].id)  # _assigned(st), the common case
            else:
                zero -= _assigned(st)
            continue
        out.append(st)
        if kind is _If:
            test = st.test  # type: ignore[attr-defined]
            if type(test) is _Name and test.id == "_ad_once":
                continue  # tape bookkeeping of a single-use adjoint: it assigns no adjoint
            z1 = simplify_adjoint(st.body, zero, accumulations, release)  # type: ignore[attr-defined]
            if st.orelse:  # type: ignore[attr-defined]
                zero = z1 & simplify_adjoint(st.orelse, zero, accumulations, release)  # type: ignore[attr-defined]
            else:
                zero &= z1
        elif kind is ast.For or kind is ast.While:
            zero -= _assigned_in(st.body)  # type: ignore[attr-defined]
            simplify_adjoint(st.body, zero, accumulations, release)  # type: ignore[attr-defined]
        else:
            zero -= _assigned(st)
    if out != stmts:  # statements dropped or added (compared by identity)
        stmts[:] = out
    return zero
