"""The reverse generator's calls: ``t = f(a, b)`` with its pullback on the tape.

A part of ``reverse._Gen`` (``Calls``). The primal calls the runtime's
dispatch (``_ad_rcall`` and its specialised forms: keywords, ``*`` arguments,
arguments that carry no derivative, scalar arithmetic, item reads, the inline
float paths of ``inline``) and records the pullback it returns; the adjoint
calls it with the output's cotangent, when that is not zero, and accumulates
what it returns into the arguments' adjoints.
"""

from __future__ import annotations

import ast

from ad.transform._nodes import FAST_OPS, LOAD, NO_VALUE, STORE, Z, at
from ad.transform._nodes import assign as _assign
from ad.transform._nodes import call as _call
from ad.transform._nodes import const as _const
from ad.transform._nodes import load as _ln
from ad.transform._nodes import store as _sn
from ad.transform.inline import (
    arithmetic,
    fast_helper,
    inline_adjoint,
    inline_op,
    item_adjoint,
    item_read,
    scalar_adjoint,
    scalar_call,
)
from ad.transform.reverse_tape import d
from ad.transform.reverse_tape import expect as _expect
from ad.transform.reverse_tape import if_once as _if_once
from ad.transform.reverse_tape import is_not_z as _is_not_z

__all__ = ["Calls"]

_Name, _Call, _Tuple, _Compare = ast.Name, ast.Call, ast.Tuple, ast.Compare
_Constant = ast.Constant
_OR = ast.Or()


def _store_copy(node: ast.expr, line: int) -> ast.expr:
    if isinstance(node, ast.Name):
        return _sn(node.id, line)
    return at(_Tuple([_store_copy(e, line) for e in node.elts], STORE), line)  # type: ignore[attr-defined]


class Calls:
    """Calls and their pullbacks, for ``reverse._Gen``."""

    def inactive_mask(self, func: ast.expr, args: list[ast.expr]) -> int:
        """For a call of a name that resolved to a plain Python function (one of
        ``callees``), the bit mask of the positional arguments that carry no
        derivative (constants and inactive names); 0 for any other call.

        ``_ad_rcall_masked`` passes it on, so the callee's transform starts its
        activity analysis without those parameters: it neither computes nor keeps
        what only their cotangents would need (``Wx @ x`` in a loop over data
        rows keeps no thunk for ``x``)."""
        if self.pure or type(func) is not _Name or func.id not in self.callees:
            return 0
        active = self.active
        mask = 0
        for i, a in enumerate(args):
            if type(a) is _Constant or (type(a) is _Name and a.id not in active):
                mask |= 1 << i
        return mask

    def scalar_key(
        self, func: ast.expr, args: list[ast.expr], target: ast.expr, inputs: list
    ) -> str | None:
        """For ``t = f(x)`` whose ``f`` resolved to a builtin scalar function
        (``scalars``, see ``pipeline.scalar_function_key``) and whose ``x`` alone
        carries a derivative, the key the inline float path tests; else None."""
        if self.pure or type(func) is not _Name or len(args) != 1 or type(target) is not _Name:
            return None
        x = args[0]
        if type(x) is not _Name or x.id == target.id or inputs != [(1, x.id)]:
            return None
        return self.scalars.get(func.id)

    def tail_call(self, target: ast.expr) -> bool:
        """Whether the call binding ``target`` gives the value the function returns and
        nothing else reads (``t = g(x); return t``), in first-order reverse mode."""
        if self.pure or type(target) is not _Name:
            return False
        self.read_counts()
        return self.returns_only(target.id)

    def call(
        self, target: ast.expr, tnames: list[str], value: ast.Call, depth: int, line: int
    ) -> tuple[list, list]:
        stars = sum(1 << i for i, a in enumerate(value.args) if type(a) is ast.Starred)
        if (stars and value.keywords) or any(k.arg is None for k in value.keywords):
            raise self.error(
                value,
                "`*args`/`**kwargs` at a call whose arguments carry derivatives is not supported yet; pass the arguments explicitly",
            )
        active = self.active
        self.n_calls += 1
        pb = self.fresh("pb")
        inputs: list[tuple[int, str]] = []  # (index in the pullback's result, name)
        func = value.func
        if isinstance(func, ast.Name) and func.id in active:
            inputs.append((0, func.id))
        atoms = [a.value if type(a) is ast.Starred else a for a in value.args]
        for i, a in enumerate(atoms):
            if isinstance(a, ast.Name) and a.id in active:
                inputs.append((i + 1, a.id))
        n_results = 1 + len(value.args)
        kw_inputs = [
            (k.arg, k.value.id)
            for k in value.keywords
            if isinstance(k.value, ast.Name) and k.value.id in active
        ]
        inline = None if self.pure or stars else inline_op(value, target, line)
        read = (  # a key carrying a derivative (a rule's body at second order) is read plainly
            inline is None
            and not self.pure
            and all(idx == 1 for idx, _ in inputs)
            and item_read(value, target)
        )
        scalar = (
            self.scalar_key(func, value.args, target, inputs)
            if inline is None and not read and not stars and not value.keywords
            else None
        )
        if stars:
            # f(a, *b): one call with the parts, the inactive ones as constants
            inactive = sum(
                1 << i
                for i, a in enumerate(atoms)
                if type(a) is _Constant or (type(a) is _Name and a.id not in active)
            )
            head = [_const(stars, line), _const(inactive, line), func, *atoms]
            if self.tail_call(target):  # the value only passes through (see below)
                self.elides = True
                rcall = at(
                    _Call(_ln("_ad_rcall_star_tail", line), [_ln(NO_VALUE, line), *head], []), line
                )
            else:
                rcall = at(_Call(_ln("_ad_rcall_star", line), head, []), line)
        elif inline is not None:
            # The adjoint handles tape entries (partials), so the helper may return
            # them instead of a pullback: it does for same-shape float arrays.
            rcall = at(_Call(_ln(fast_helper(func), line), value.args, []), line)
        elif read:
            # xs[i], d[k], o.w: a tape entry for plain lists, dicts, objects (ad.runtime.item_reads)
            rcall = at(_Call(_ln(read, line), value.args, []), line)
        elif value.keywords:
            rcall = at(
                _Call(
                    _ln("_ad_rcall_kw", line),
                    [
                        func,
                        at(_Tuple(value.args, LOAD), line),
                        at(
                            ast.Dict(
                                [_const(k.arg, line) for k in value.keywords],
                                [k.value for k in value.keywords],
                            ),
                            line,
                        ),
                    ],
                    [],
                ),
                line,
            )
            n_results += 1
        elif (
            not self.pure
            and isinstance(func, ast.Name)
            and func.id.startswith("_ad_op_")
            and func.id[7:] in FAST_OPS
        ):
            # Scalar arithmetic: a specialised call with an inline fast path.
            rcall = at(_Call(_ln("_ad_fast_" + func.id[7:], line), value.args, []), line)
        elif self.tail_call(target) and type(func) is _Name and func.id in self.callees:
            # ``return g(...)`` of a Python function: the value only passes through; a
            # caller that needs none (``ad.gradient``) asks ``g`` for none either
            # (``_ad_nv``). A builtin's call (``math.sin``) stays ``_ad_rcall``.
            self.elides = True
            mask = self.inactive_mask(func, value.args)
            rcall = at(
                _Call(
                    _ln("_ad_rcall_tail", line),
                    [_ln(NO_VALUE, line), _const(mask, line), func, *value.args],
                    [],
                ),
                line,
            )
        elif mask := self.inactive_mask(func, value.args):
            # A Python function given arguments that carry no derivative: its
            # transform treats those parameters as constants (see ``inactive_mask``).
            rcall = at(
                _Call(_ln("_ad_rcall_masked", line), [_const(mask, line), func, *value.args], []),
                line,
            )
        else:
            rcall = at(_Call(_ln("_ad_rcall", line), [func, *value.args], []), line)
        fwd: list[ast.stmt] = [
            _assign(
                at(_Tuple([_store_copy(target, line), _sn(pb, line)], STORE), line),
                rcall,
                line,
            )
        ]
        if inline is not None:
            # Python floats: compute in place and keep the partials, not a closure.
            cond, expr, partials = inline
            fwd = [
                at(
                    ast.If(
                        cond,
                        [
                            _assign(pb, partials, line),
                            _assign(_store_copy(target, line), expr, line),
                        ],
                        fwd,
                    ),
                    line,
                )
            ]
        elif scalar is not None:  # math.sin(x) of a float: the partial on the tape
            fwd = [scalar_call(scalar, func, value.args[0], target.id, pb, fwd, line)]  # type: ignore[attr-defined]
        # the tape may hold a tuple or a float, not a pullback
        lean = inline is not None or read or scalar is not None
        push, pop = self.record(pb, depth, line, pullback=True, signal=not lean)
        fwd += push
        # Backward: seed, skip when the output's cotangent is zero.
        if len(tnames) == 1 and isinstance(target, ast.Name):
            seed: ast.expr = _ln(d(tnames[0]), line)
            test: ast.expr = _is_not_z(d(tnames[0]), line)
        else:
            seed = _call(
                "_ad_tuple_ct",
                *[_ln(d(t), line) if t in active else _ln(Z, line) for t in tnames],
                line=line,
            )
            live = [t for t in tnames if t in active]
            test = (
                at(ast.BoolOp(_OR, [_is_not_z(d(t), line) for t in live]), line)
                if len(live) > 1
                else _is_not_z(d(live[0]), line)
            )
        for t in tnames:
            if t in active:
                self.adjoints.add(t)
        # The result is unpacked directly: a pullback returning the wrong number
        # of cotangents fails the unpacking, which _ad_back turns into an error
        # naming the pullback (``_ad_p``) and the line.
        used = {idx for idx, _ in inputs}
        if kw_inputs:
            used.add(n_results - 1)
        slots = [_sn(f"_ad_g{i}" if i in used else "_ad_u", line) for i in range(n_results)]
        inner: list[ast.stmt] = [
            _assign("_ad_p", _ln(pb, line), line),
            _assign(
                at(_Tuple(slots, STORE), line),
                at(_Call(_ln("_ad_p", line), [seed], []), line),
                line,
            ),
        ]
        # Where each slot is written, for ``simplify_adjoint`` to write the adjoint there.
        writes: dict[str, list[tuple[list, int]]] = {}
        for i, slot in enumerate(slots):
            writes.setdefault(slot.id, []).append((slots, i))
        if inline is not None:
            op = arithmetic(func)
            inner[1], partials = inline_adjoint(op, seed, used, inner[1], value.args, line)  # type: ignore[arg-type]
            for st in partials:
                writes[st.targets[0].id].append((st.targets, 0))  # type: ignore[attr-defined]
        elif read and 1 in used:
            inner[1], partial = item_adjoint(seed, inner[1], line)
            writes["_ad_g1"].append((partial.targets, 0))
        elif scalar is not None:
            inner[1], partial = scalar_adjoint(seed, inner[1], line)
            writes["_ad_g1"].append((partial.targets, 0))
        if depth == 0 and self.pure:
            pass
        elif depth == 0:  # the closure's cell: freed here when run once (see ``record``)
            self.dropped.append(pb)
            drop: list[ast.stmt] = [_assign(pb, _const(None, line), line)]
            if not lean:  # a fast path's entry is never a generated adjoint
                drop.append(_expect("_ad_p", line))
            inner.insert(1, _if_once(drop, [], line))
        else:  # popped into _ad_p already
            del inner[0]
        inner += self.reset(tnames, line, depth)
        for k, (idx, name) in enumerate(inputs):
            slot = f"_ad_g{idx}"
            # Not into a target's adjoint: the reset between slot and accumulation.
            into = writes[slot] if name not in tnames else None
            inner.append(self.accumulate(name, _ln(slot, line), line, into))
            if any(other == name for _, other in inputs[k + 1 :]):
                # x * x: drop this slot's reference before the next accumulation into
                # the same adjoint, so that one may add in place (see _ad_acc).
                inner.append(_assign(f"_ad_g{idx}", _const(None, line), line))
        for kname, name in kw_inputs:
            got = _call(
                "_ad_kw_ct", _ln(f"_ad_g{n_results - 1}", line), _const(kname, line), line=line
            )
            inner.append(self.accumulate(name, got, line))
        # A pullback that wrote an object's field runs whatever its input (``ad.runtime.state``).
        held = _ln(pb if depth == 0 else "_ad_p", line)
        stateful = at(
            _Compare(
                at(_Call(_ln("_ad_type", line), [held], []), line),
                [ast.Is()],
                [_ln("_ad_Stateful", line)],
            ),
            line,
        )
        test = at(ast.BoolOp(_OR, [test, stateful]), line)
        bwd = [*pop, at(ast.If(test, inner, []), line)]
        return fwd, bwd
