"""A peephole pass over the generated adjoint: statically known zeros.

The generator writes each accumulation into an adjoint as ``X = V`` and lists
it in ``accumulations``. This pass makes it an addition, ``X = _ad_acc(X, V)``
(which returns ``V`` itself when ``X`` is zero; in a loop, where ``X`` is often
zero again at each iteration, ``X = V if X is _ad_Z else _ad_acc(X, V)`` saves
that call), unless ``X`` is statically known to be zero there (the first
accumulation after it was set to zero), where ``X = V`` is exact.
There, when ``V`` is a slot just written (``_ad_u, _ad_g1 = _ad_p(ȳ)``), the
slot's writes target ``X`` itself and the copy goes: ``_ad_u, X = _ad_p(ȳ)``.

The adjoint's statements are the generator's own fresh nodes, so the pass
rewrites them in place instead of copying the (large) tree.
"""

from __future__ import annotations

import ast

from ad.transform._nodes import Z, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform._nodes import store as _sn
from ad.transform.activity import all_nodes, stored_names

_Assign, _Name, _Tuple, _If = ast.Assign, ast.Name, ast.Tuple, ast.If
_IS = ast.Is()

__all__ = ["added", "simplify_adjoint"]


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


def _release(out: list[ast.stmt], stmts: list[ast.stmt], i: int, value: ast.expr) -> None:
    """After ``stmts[i]`` handed the slot ``value`` (``_ad_g1``) to an adjoint, ``slot =
    None``, unless the generator released it already: the adjoint is then the only
    holder, so the next pullback may add into it or give it up in place."""
    if (
        type(value) is _Name
        and value.id.startswith("_ad_g")
        and not _releases(stmts, i + 1, value.id)
    ):
        out.append(_assign(value.id, _const(None, value.lineno), value.lineno))


def added(st: ast.Assign, zero_test: bool) -> ast.Assign:
    """``X = V`` made ``X = _ad_acc(X, V)``, or with ``zero_test``
    ``X = V if X is _ad_Z else _ad_acc(X, V)`` (in place). Outside loops there is
    no test: ``X`` has most often received a cotangent already there, and the
    test would double the nodes that the transform and ``compile`` pay for."""
    line = st.lineno
    dn = st.targets[0].id  # type: ignore[attr-defined]
    value = st.value
    total = _call("_ad_acc", _ln(dn, line), value, line=line)
    if zero_test:
        test = at(ast.Compare(_ln(dn, line), [_IS], [_ln(Z, line)]), line)
        total = at(ast.IfExp(test, value, total), line)  # type: ignore[assignment]
    st.value = total
    return st


def _added_value(value: ast.expr) -> ast.expr:
    """``V`` in the value ``added`` wrote."""
    return value.body if type(value) is ast.IfExp else value.args[1]  # type: ignore[attr-defined]


class _Zeros:
    """The adjoint names known to be zero, with a journal of changes, so that each
    branch of an ``if`` is walked on the one set and undone after (copying the set
    at every ``if`` made the pass quadratic in the function's length)."""

    __slots__ = ("journal", "names")

    def __init__(self, names: set[str]) -> None:
        self.names = set(names)
        self.journal: list[tuple[str, bool]] = []  # (name, was it zero before)

    def add(self, name: str) -> None:
        if name not in self.names:
            self.names.add(name)
            self.journal.append((name, False))

    def discard(self, name: str) -> None:
        if name in self.names:
            self.names.discard(name)
            self.journal.append((name, True))

    def undo(self, mark: int) -> dict[str, bool]:
        """Undo the changes since ``mark``; the names they touched, each with
        whether it was zero before the undo (at the end of the walked branch)."""
        journal, names = self.journal, self.names
        end: dict[str, bool] = {}
        while len(journal) > mark:
            name, was = journal.pop()
            end.setdefault(name, name in names)  # the latest change is popped first
            if was:
                names.add(name)
            else:
                names.discard(name)
        return end

    def meet(self, *ends: dict[str, bool]) -> None:
        """Zero after paths that ended as ``ends`` (undone, so the set is as on
        entry; an empty end is a path that changed nothing): zero at the end of each."""
        names = self.names
        for name in set().union(*ends):
            now = name in names
            if all(end.get(name, now) for end in ends):
                self.add(name)
            else:
                self.discard(name)


def simplify_adjoint(
    stmts: list[ast.stmt],
    zero: set[str],
    accumulations: dict[int, tuple],
    release: bool = True,
) -> set[str]:
    """Make each accumulation in ``stmts`` an addition, unless its adjoint is
    statically known to be zero.

    ``accumulations`` maps the ``id`` of each accumulation ``X = V`` to the
    statement and the places where the slot ``V`` is written, or None (see
    ``reverse._Gen.accumulate``). ``zero`` holds the adjoint variables known to
    be ``_ad_Z`` on entry; the result is the set known on exit. ``stmts`` is
    rewritten in place.

    ``release``: a slot added into an adjoint is set to None right after, so the
    array it held (now inside the adjoint, or added into it in place) is not kept
    alive by the slot until some later block happens to reuse its name.
    """
    zeros = _Zeros(zero)
    _simplify(stmts, zeros, accumulations, release, False)
    return zeros.names


def _simplify(
    stmts: list[ast.stmt],
    zero: _Zeros,
    accumulations: dict[int, tuple],
    release: bool,
    in_loop: bool,
) -> None:
    """``simplify_adjoint`` on a block; ``in_loop``: the block is (in) a loop body
    (see ``added``)."""
    out: list[ast.stmt] = []
    for i, st in enumerate(stmts):
        kind = type(st)
        if kind is _Assign:
            targets = st.targets  # type: ignore[attr-defined]
            acc = accumulations.get(id(st))
            if acc is not None:
                name = targets[0].id
                if name not in zero.names:
                    out.append(added(st, in_loop))  # type: ignore[arg-type]
                    if release:
                        _release(out, stmts, i, _added_value(st.value))  # type: ignore[attr-defined]
                    continue
                zero.discard(name)
                if acc[1] is None:
                    out.append(st)
                    if release:  # X = slot: a list cotangent held twice is not given up
                        _release(out, stmts, i, st.value)  # type: ignore[attr-defined]
                    continue
                store = _sn(name, st.lineno)
                for place, j in acc[1]:
                    place[j] = store
                continue
            out.append(st)
            value = st.value  # type: ignore[attr-defined]
            if type(value) is _Name and value.id == Z:
                for t in targets:
                    if type(t) is _Name:
                        zero.add(t.id)
            elif len(targets) == 1 and type(targets[0]) is _Name:
                zero.discard(targets[0].id)  # _assigned(st), the common case
            else:
                for name in _assigned(st):
                    zero.discard(name)
            continue
        out.append(st)
        if kind is _If:
            test = st.test  # type: ignore[attr-defined]
            if type(test) is _Name and test.id == "_ad_once":
                continue  # tape bookkeeping of a single-use adjoint: it assigns no adjoint
            mark = len(zero.journal)
            _simplify(st.body, zero, accumulations, release, in_loop)  # type: ignore[attr-defined]
            end = zero.undo(mark)
            if st.orelse:  # type: ignore[attr-defined]
                _simplify(st.orelse, zero, accumulations, release, in_loop)  # type: ignore[attr-defined]
                zero.meet(end, zero.undo(mark))
            else:  # the path around the body: the entry's state
                zero.meet(end, {})
        elif kind is ast.For or kind is ast.While:
            for name in _assigned_in(st.body):  # type: ignore[attr-defined]
                zero.discard(name)
            mark = len(zero.journal)
            _simplify(st.body, zero, accumulations, release, True)  # type: ignore[attr-defined]
            zero.undo(mark)
        else:
            for name in _assigned(st):
                zero.discard(name)
    if out != stmts:  # statements dropped or added (compared by identity)
        stmts[:] = out
