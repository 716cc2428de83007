"""The reverse generator's temporaries: dropped when dead, or fused into regions.

A part of ``reverse._Gen`` (``Regions``). The primal drops its reference to an
ANF temporary after its last use (``release_dead``), so an array only summed
later does not live until ``_ad_fwd`` returns; and a block outside loops may
hold fused elementwise regions (``regions``, see ``fuse``), whose primal and
adjoint ``fused`` writes at the region's root, with the members' own code as
the fallback. ``single_temporaries`` finds the names both may drop.
"""

from __future__ import annotations

import ast
from collections import Counter

from ad.transform._nodes import NO_VALUE, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform._nodes import store as _sn
from ad.transform.activity import all_nodes, loaded_names, value_reads
from ad.transform.fuse import REDUCTIONS, Region, find_regions, module_attribute, real_name
from ad.transform.fuse_emit import emit
from ad.transform.reverse_tape import d
from ad.transform.reverse_tape import if_once as _if_once
from ad.transform.reverse_tape import is_not_z as _is_not_z

__all__ = ["Regions", "single_temporaries"]

_Name, _Call, _Constant = ast.Name, ast.Call, ast.Constant
_DEL = ast.Del()


def _stmt_loads(s: ast.stmt) -> set[str]:
    """The names ``s`` reads; for an ANF assignment, its value's (see ``value_reads``)."""
    if type(s) is ast.Assign and type(s.targets[0]) is _Name:
        return value_reads(s.value)
    return loaded_names(s)


_INTO = {"_ad_fasti_add": "_ad_fasti_add_into", "_ad_fasti_sub": "_ad_fasti_sub_into"}


def _reuse_dying_operand(fwd: list[ast.stmt], dying: set[str], line: int) -> None:
    """In the primal of ``t = a + b`` (or ``-``) whose operand dies there, call the
    helper that may write the result into that operand's buffer
    (``_ad_fasti_add_into(a, b, k)``): add and sub keep no operand on the tape."""
    for st in fwd:
        if type(st) is not ast.If:
            continue
        for inner in st.orelse:
            value = getattr(inner, "value", None)
            if type(value) is not _Call or type(value.func) is not _Name:
                continue
            into = _INTO.get(value.func.id)
            if into is None or len(value.args) != 2:
                continue
            for k, a in enumerate(value.args, 1):
                if type(a) is _Name and a.id in dying:
                    value.func = _ln(into, line)
                    value.args = [*value.args, _const(k, line)]
                    return


def _load_counts(body: list[ast.stmt]) -> Counter:
    """How often each name is read in ``body``: an ANF call of atoms is read off its
    fields, anything else walked."""
    counts: Counter = Counter()
    for s in body:
        v = getattr(s, "value", None)
        if type(s) is ast.Assign and type(v) is _Call and type(v.func) is _Name:
            if all(type(a) is _Name or type(a) is _Constant for a in v.args) and not v.keywords:
                counts[v.func.id] += 1
                counts.update(a.id for a in v.args if type(a) is _Name)
                continue
        counts.update(
            n.id  # type: ignore[attr-defined]
            for n in all_nodes(s)
            if type(n) is _Name and type(n.ctx) is ast.Load  # type: ignore[attr-defined]
        )
    return counts


def _reduces(s: ast.stmt) -> bool:
    """Whether ``s`` binds a whole-array reduction (``np.sum``): a region may end there."""
    return module_attribute(getattr(s, "value", None)) in REDUCTIONS


#: Calls that can see a function's local variables by name.
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})


def single_temporaries(
    body: list[ast.stmt], params: frozenset[str] | None = None, loads: Counter | None = None
) -> frozenset[str]:
    """ANF temporaries (``_ad_t<n>``) bound by exactly one assignment and read by
    no nested function or lambda: the primal may drop them after their last use.

    Given the function's ``params`` (and ``loads``, the names it reads): the user's
    local variables that are such too (not a parameter, not declared ``global`` or
    ``nonlocal``, and the function reads no name that sees locals), for a fused
    region, which computes a
    variable read only inside it without binding it (``r = out - y; sq = r ** 2;
    np.mean(sq)`` fuses as ``np.mean((out - y) ** 2)`` does)."""
    found = _bindings(body, params, loads)
    if found is None:
        return single_temporaries(body) if params is not None else frozenset()
    plain, other, captured = found
    return frozenset(n for n, c in plain.items() if c == 1 and n not in other | captured)


def rebound_locals(body: list[ast.stmt], params: frozenset[str], loads: Counter) -> dict[str, int]:
    """The user's local variables bound by two or more plain assignments and in no
    other way, under ``single_temporaries``' conditions otherwise (``s = a * b; s +=
    c`` binds ``s`` twice): a fused region may take each binding as a member of its
    own (see ``fuse.find_regions``)."""
    found = _bindings(body, params, loads)
    if found is None:
        return {}
    plain, other, captured = found
    # a local an inlined helper lets go of (``out_ad1 = None``, see ``inlining``)
    # keeps its one computed binding as before: a region reaching back to it also
    # takes in the bias added there, slower than its own path on small arrays
    released = {
        t.id
        for s in ast.walk(ast.Module(body, []))
        if type(s) is ast.Assign and type(s.value) is ast.Constant and s.value.value is None
        for t in s.targets
        if type(t) is _Name
    }
    return {
        n: c
        for n, c in plain.items()
        if c >= 2 and not n.startswith("_ad_") and n not in other | captured | released
    }


def _bindings(
    body: list[ast.stmt], params: frozenset[str] | None, loads: Counter | None
) -> tuple[dict[str, int], set[str], set[str]] | None:
    """For ``body``'s temporaries (and its user locals, given ``params``): how many
    plain assignments bind each, those bound another way too (unpacking, a loop),
    and the names nested functions capture or the function declares global (the
    parameters among them); None where it cannot tell (a ``try``, or a read of a
    name that sees locals)."""
    plain: dict[str, int] = {}
    other: set[str] = set()
    captured: set[str] = set()
    users = params is not None
    stack = list(body)
    while stack:
        s = stack.pop()
        kind = type(s)
        if kind is ast.Global or kind is ast.Nonlocal:
            captured.update(s.names)
        if kind is ast.Assign:
            for t in s.targets:
                for n in [t] if type(t) is _Name else ast.walk(t):
                    if type(n) is _Name and (
                        n.id.startswith("_ad_t") or (users and not n.id.startswith("_ad_"))
                    ):
                        if type(t) is _Name:
                            plain[n.id] = plain.get(n.id, 0) + 1
                        else:
                            other.add(n.id)
            if type(s.value) is ast.Lambda:
                captured |= loaded_names(s.value)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            captured |= loaded_names(s)
        elif kind is ast.For or kind is ast.While or kind is ast.If:
            if kind is ast.For:
                other.update(n.id for n in ast.walk(s.target) if type(n) is _Name)
            stack.extend(s.body)
            stack.extend(s.orelse)
        elif kind is ast.Try or kind is ast.With:
            return None  # not produced by anf; be conservative
    if users:
        if loads is None or not _INTROSPECTION.isdisjoint(loads):
            return None
        captured |= params  # type: ignore[operator]
    return plain, other, captured


class Regions:
    """Dead temporaries and fused regions, for ``reverse._Gen``."""

    def release_dead(
        self,
        stmts: list[ast.stmt],
        fwds: list[list[ast.stmt]],
        outputs: list[tuple[int, str]],
        moved: dict[int, int],
    ) -> None:
        """Drop the primal's reference to each temporary after its last use.

        A temporary the tape needs is held by the tape; the others (an array
        ``x * y`` only summed later) would otherwise live until ``_ad_fwd``
        returns, raising peak memory. Only ANF temporaries bound once, in this
        block, and not read by a nested function are released. ``moved``: the
        statements of fused regions, by index, and where they run (the root).
        """
        names = {n for _, n in outputs}
        last: dict[str, int] = {}
        for j in range(len(stmts) - 1, -1, -1):
            hit = _stmt_loads(stmts[j]) & names
            for n in hit:
                if n not in last:
                    last[n] = moved.get(j, j)
            names -= hit
            if not names:
                break
        dead: dict[int, list[str]] = {}
        for i, n in outputs:
            j = last.get(n, i)
            if j >= i and type(stmts[j]) is not ast.Return:
                dead.setdefault(j, []).append(n)
        for j, ns in dead.items():
            line = getattr(stmts[j], "lineno", 0)
            targets = [at(_Name(n, _DEL), line) for n in ns]
            _reuse_dying_operand(fwds[j], set(ns), line)
            fwds[j].append(at(ast.Delete(targets), line))

    def regions(self, stmts: list[ast.stmt], depth: int) -> dict[int, Region]:
        """The fused regions among ``stmts`` (see ``fuse``), by statement index."""
        if depth or self.pure or not any(_reduces(s) for s in stmts):
            return {}
        self.read_counts()
        if self.fusible is None:
            self.fusible = single_temporaries(self.body, self.params, self.loads)
            self.rebound_locals = rebound_locals(self.body, self.params, self.loads)
        found = find_regions(stmts, self.fusible, self.active, self.loads, self.rebound_locals)
        return {op.index: r for r in found for op in r.ops}

    def read_counts(self) -> Counter:
        """How often the function reads each name (computed once)."""
        if self.loads is None:
            self.loads = _load_counts(self.body)
        return self.loads

    def returns_only(self, name: str) -> bool:
        """Whether ``name`` is read only by the ``return`` that ends the function."""
        last = self.body[-1] if self.body else None
        value = getattr(last, "value", None)
        return (
            type(last) is ast.Return
            and type(value) is _Name
            and value.id == name  # type: ignore[attr-defined]
            and self.loads is not None
            and self.loads[name] == 1
            and self.frames[-1][0] is self.body
        )

    def fused(self, region: Region) -> tuple[list, list]:
        """The primal and adjoint of a fused region, at its root: the fused form when
        its test holds, else the members' own code (``region.fallback``), in order."""
        root = region.root
        line = root.line
        self.n_fused += 1
        flag = f"_ad_fz{self.n_fused}"
        active = self.active
        if region.versions:  # a rebound variable's bindings, active as it is
            active = active | {v for v in region.versions if real_name(v) in active}
        fz = emit(region, active, self.n_fused, f"{self.filename}:{line}")
        for name in fz.reads:
            _ln(name, line)  # the factory binds the helpers the tree reads (see loaded_ids)
        members = {op.target for op in region.ops[:-1]}
        last = {a: k for k, op in enumerate(region.ops) for a in op.args if a in members}
        fallback_f: list[ast.stmt] = [_assign(flag, _const(False, line), line)]
        fallback_b: list[ast.stmt] = []
        for k, (f, b) in enumerate(region.fallback):
            # a rebound variable's bindings are named in the fused form alone
            dying = sorted(a for a, j in last.items() if j == k and a not in region.versions)
            if dying:
                at_line = region.ops[k].line
                _reuse_dying_operand(f, set(dying), at_line)
                f = [*f, at(ast.Delete([at(_Name(n, _DEL), at_line) for n in dying]), at_line)]
            fallback_f += f
            fallback_b[:0] = b
        fused_f = [_assign(flag, _const(True, line), line), *fz.forward]
        if self.returns_only(root.target):
            # Called by ``ad.gradient``, which does not return the value, the fused
            # primal computes only what the adjoint reads (``_ad_nv``, see ``generate``).
            self.elides = True
            skip = [_assign(root.target, _ln("_ad_NOVALUE", line), line)]
            fused_f.append(at(ast.If(_ln(NO_VALUE, line), skip, fz.value), line))
        else:
            fused_f += fz.value
        inner = list(fz.backward)
        for name, array in fz.cotangents:
            inner.append(self.accumulate(name, _ln(array, line), line))
            inner.append(_assign(array, _const(None, line), line))
        if fz.kept:
            self.dropped.extend(fz.kept)
            free = at(ast.Assign([_sn(n, line) for n in fz.kept], _const(None, line)), line)
            inner.append(_if_once([free], [], line))
        reset = self.reset([root.target], line, 0)
        if any(name == root.target for name, _ in fz.cotangents):  # s = s + np.sum(...)
            inner[len(fz.backward) : len(fz.backward)] = reset  # before the old s's
            reset = []
        fused_b = [at(ast.If(_is_not_z(d(root.target), line), inner, []), line), *reset]
        fwd = [at(ast.If(fz.guard, fused_f, fallback_f), line)]
        return fwd, [at(ast.If(_ln(flag, line), fused_b, fallback_b), line)]
