"""Pass 5a, fuse: elementwise regions summed to a number, differentiated at transform time.

A *region* is a set of ANF assignments of one block outside loops, such as
rosenbrock's ``np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)``::

    _ad_t7 = _ad_op_pow(_ad_t6, 2) ... _ad_t16 = _ad_op_add(_ad_t10, _ad_t15)
    _ad_t17 = _ad_t1(_ad_t16)          # _ad_t1 = np.sum: the root

whose temporaries are read by nothing but each other, and whose *root*, a
whole-array ``np.sum`` or ``np.mean`` (or ``.sum()``/``.mean()``), is its one result. Members are the
operators ``+ - * /`` and unary ``-``, ``a ** n`` (a constant integer ``n >= 2``;
``np.square(a)`` is ``a ** 2``),
the ufuncs of ``ad._fused.UFUNCS`` on one array, and basic slices ``x[i:j]``.

``find_regions`` finds them; ``emit`` writes, for one region, a test and the two
halves of its fused form. The test (at the root) holds when the inputs are float64
(or all float32) arrays of one shape, the functions are numpy's, and their rules the built-in ones
(``ad._fast.FLAGS.fused``). Then the primal is plain numpy, writing into the buffers of
temporaries that died, and the adjoint is the one derived here, once: each
cotangent is kept as a term ``c · v · f1 · f2 / g1`` (``v`` the root's cotangent,
a float, ``c`` a constant), so constants fold and nothing is computed until an
input needs its array. Otherwise the members run the per-operation path.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

from .._fused import REDUCTIONS, UFUNCS

__all__ = ["Fused", "Region", "emit", "find_regions", "module_attribute"]

_BINARY = ("add", "sub", "mul", "truediv")
_NAME = re.compile(r"\b_ad_z\w+")
_READ = re.compile(r"\b_ad_\w+")
_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "truediv": "/"}
_UFUNC_OF = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide"}


@dataclass
class Op:
    """One member (or the root) of a region: ``target = kind(*args)``."""

    index: int  # in the block
    target: str
    kind: str  # add sub mul truediv neg pow getitem, a ufunc, sum/mean (the root), or
    # method: ``t = x.sum``, the lookup of a root ``t()``, run at the root when not fused
    args: list  # names, or numbers; getitem: [array, slice temporary]
    func: str = ""  # a ufunc or root: the name bound to ``np.<kind>`` ("": a method)
    line: int = 0
    attr: str = ""  # the numpy function ``func`` names when not ``np.<kind>`` (np.square)


@dataclass
class Region:
    ops: list[Op]  # members in block order, then the root
    fallback: list[tuple[list, list]] = field(default_factory=list)  # per op: its code

    @property
    def root(self) -> Op:
        return self.ops[-1]


def number(c: float) -> str:
    """A number as source that names nothing of the user's: ``repr`` writes infinity
    and NaN as the names ``inf`` and ``nan``, which the user's module may bind.

    >>> number(0.5), number(float("inf")), number(-float("inf")), number(float("nan"))
    ('0.5', '_ad_np.inf', '(-_ad_np.inf)', '_ad_np.nan')
    """
    if c != c:
        return "_ad_np.nan"
    if c in (float("inf"), -float("inf")):
        return "_ad_np.inf" if c > 0 else "(-_ad_np.inf)"
    return repr(c)


def _atom(a: ast.expr, consts: dict[str, float]) -> str | float | None:
    if type(a) is ast.Name:
        return consts.get(a.id, a.id)
    if type(a) is ast.Constant and type(a.value) in (int, float):
        return a.value
    return None


def _as_op(i: int, t: str, v: ast.Call, attrs: dict, consts: dict, slices: set) -> Op | None:
    fn = v.func.id  # type: ignore[attr-defined]
    args = [_atom(a, consts) for a in v.args]
    if any(a is None for a in args) or not any(type(a) is str for a in args):
        return None
    line = getattr(v, "lineno", 0)
    if fn.startswith("_ad_op_"):
        kind = fn[7:]
        if kind in _BINARY and len(args) == 2:
            if kind == "truediv" and args[1] == 0:  # not folded: numpy's inf and warning
                return None
            return Op(i, t, kind, args, line=line)
        if kind == "neg" and len(args) == 1:
            return Op(i, t, kind, args, line=line)
        if kind == "pow" and len(args) == 2 and type(args[0]) is str:
            n = args[1]
            if type(n) is int and n >= 2:
                return Op(i, t, kind, args, line=line)
        if kind == "getitem" and len(args) == 2 and args[1] in slices:
            return Op(i, t, kind, args, line=line)
        return None
    attr = attrs.get(fn)
    if attr is not None and len(args) == 1 and (attr in UFUNCS or attr in REDUCTIONS):
        return Op(i, t, attr, args, func=fn, line=line)
    if attr == "square" and len(args) == 1 and type(args[0]) is str:  # x ** 2, as numpy has it
        return Op(i, t, "pow", [args[0], 2], func=fn, line=line, attr=attr)
    return None


def module_attribute(v: ast.expr) -> str | None:
    """``attr`` for the ANF form of ``name.attr`` (``_ad_getattr(name, 'attr')``)."""
    if type(v) is ast.Call and type(v.func) is ast.Name and v.func.id == "_ad_getattr":
        args = v.args
        if len(args) == 2 and type(args[0]) is ast.Name and type(args[1]) is ast.Constant:
            return args[1].value if type(args[1].value) is str else None
    return None


def find_regions(
    stmts: list[ast.stmt], temporaries: frozenset[str], active: set[str], loads: Counter
) -> list[Region]:
    """The regions among ``stmts``, a block outside loops. ``temporaries``: the ANF
    temporaries bound once and captured by no nested function (the only members);
    ``loads``: how often each name is read in the whole function."""
    attrs: dict[str, str] = {}  # temporaries bound to ``<module>.<attr>``
    consts: dict[str, float] = {}  # temporaries bound to ``-<number>``
    slices: set[str] = set()
    members: dict[str, Op] = {}
    methods: dict[str, Op] = {}  # temporaries bound to ``x.sum``/``x.mean``
    roots: list[tuple[Op, int, Op | None]] = []  # the last barrier before, the method
    stored: list[str | None] = []  # what each statement binds (None: a barrier)
    barrier = -1
    for i, s in enumerate(stmts):
        target = s.targets[0] if type(s) is ast.Assign and len(s.targets) == 1 else None
        if type(target) is not ast.Name:
            barrier = i
            stored.append(None)
            continue
        t = target.id
        stored.append(t)
        v = s.value  # type: ignore[attr-defined]
        kind = type(v)
        attr = module_attribute(v)
        if attr is not None:
            if t in temporaries:
                attrs[t] = attr
                if attr in REDUCTIONS:  # perhaps ``x.sum`` of a member x, called next
                    methods[t] = Op(i, t, "method", [v.args[0].id])
            continue
        if kind is ast.Constant or kind is ast.Name:
            continue
        if kind is not ast.Call or type(v.func) is not ast.Name or v.keywords:
            barrier = i
            continue
        fn = v.func.id
        via = methods.get(fn)
        if via is not None and not v.args:  # ``x.sum()``: the root, through ``via``
            root = Op(i, t, attrs[fn], via.args, line=getattr(v, "lineno", 0))
            roots.append((root, barrier, via))
            continue
        if t in temporaries:
            if fn == "slice":
                slices.add(t)
                continue
            if fn == "_ad_op_neg" and len(v.args) == 1:
                a = v.args[0]
                if type(a) is ast.Constant and type(a.value) in (int, float):
                    consts[t] = -a.value
                    continue
        op = _as_op(i, t, v, attrs, consts, slices)
        if op is None:
            # Members run at the root, after the statements between them: only an
            # operator (``_ad_op_*``), which changes no array, may be one of those. Any
            # other call might write into an array a member before it reads.
            if not fn.startswith("_ad_op_"):
                barrier = i
        elif op.kind in REDUCTIONS:
            roots.append((op, barrier, None))
        elif t in temporaries and t in active:
            members[t] = op
    regions = []
    for root, lo, via in roots:
        ops = _grow(root, lo, members, loads)
        # one operation saves a few microseconds a call, less than the millisecond or
        # so its fused form costs the transform
        if len(ops) < 2:
            continue
        if via is not None:  # the method's lookup runs at the root too (or not at all)
            ops = sorted([*ops, via], key=lambda op: op.index)
        if _movable(ops, root, stored):
            for op in ops:
                op.line = getattr(stmts[op.index], "lineno", 0)
                members.pop(op.target, None)
            regions.append(Region([*ops, root]))
    return regions


def _grow(root: Op, lo: int, members: dict[str, Op], loads: Counter) -> list[Op]:
    """The members of ``root``'s region, in block order: those it reaches through
    members after the barrier ``lo``, less those read anywhere else."""
    found: dict[str, Op] = {}
    stack = [a for a in root.args if type(a) is str]
    while stack:
        name = stack.pop()
        op = members.get(name)
        if op is None or name in found or not lo < op.index < root.index:
            continue
        found[name] = op
        stack.extend(a for a in op.args if type(a) is str)
    while True:
        inside = Counter(a for op in [*found.values(), root] for a in op.args if type(a) is str)
        outside = {n for n in found if inside[n] != loads[n]}
        # A view's array is sliced in the region's test, before any member is
        # computed (see ``_primal``): it must be an input, not a member.
        outside |= {n for n, op in found.items() if op.kind == "getitem" and op.args[0] in found}
        if not outside:
            break
        for n in outside:
            del found[n]
    if root.args[0] not in found:
        return []
    return sorted(found.values(), key=lambda op: op.index)


def _movable(ops: list[Op], root: Op, stored: list[str | None]) -> bool:
    """Whether the members may all run at the root: no statement between the first
    of them and the root binds a name that a member before it reads (its value
    would change before the root reads it). Barriers are behind the first already."""
    read: set[str] = set()
    mine = {op.index: op for op in ops}
    for j in range(ops[0].index, root.index):
        op = mine.get(j)
        if op is not None:
            read.update(a for a in op.args if type(a) is str)
        elif stored[j] is None or stored[j] in read:
            return False
    return True


# --- the fused form -----------------------------------------------------------


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


_Term = tuple  # (coefficient, ((array name, ±1), ...)): every term also carries v


class _Emitter:
    """Derives a region's adjoint as terms and writes the lines that compute it."""

    def __init__(self, region: Region, active: set[str], key: int) -> None:
        self.region = region
        self.active = active
        self.key = key
        self.member = {op.target: op for op in region.ops[:-1]}
        self.aliases: dict[str, str] = {}  # input -> the forward's alias for the backward
        self.lines: list[str] = []
        self.pending: dict[str, tuple[str, str]] = {}  # derived name -> (kind, operand)
        self.count = 0
        self.scratch = f"_ad_zs{key}"
        self.scratch_made = False
        # x * y computed by the primal, by its (adjoint) factor names: a cotangent
        # that is that product reads it instead of computing it again
        self.products: dict[frozenset, str] = {}

    def z(self, name: str) -> str:
        """The fused primal's name for the value of member ``name``, else ``name``."""
        if name in self.member:
            return f"_ad_z{self.key}_{name[4:] if name.startswith('_ad_') else name}"
        return name

    def ref(self, name: str) -> str:
        """The name the adjoint reads ``name``'s value by (kept from the primal)."""
        if name in self.member:
            return self.z(name)
        alias = self.aliases.get(name)
        if alias is None:
            alias = self.aliases[name] = f"_ad_z{self.key}_i{len(self.aliases)}"
        return alias

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"_ad_{base}{self.key}_{self.count}"

    def derive(self, kind: str, name: str) -> str:
        """A factor computed by the adjoint from ``name``'s value (``cos(x)``...)."""
        out = self.fresh("zd")
        self.pending[out] = (kind, self.ref(name))
        return out

    # --- the adjoint, symbolically ---------------------------------------

    def backward(self) -> list[tuple[str, str]]:
        """The adjoint's lines (in ``lines``), and the local holding each active
        input's cotangent array."""
        cot: dict[str, list[_Term]] = {}
        scatter: dict[str, list[tuple[str, list[_Term]]]] = {}
        active = self.active
        for op in self.region.ops[:-1]:
            if op.kind == "mul" and all(type(a) is str for a in op.args):
                key = frozenset(self.ref(a) for a in op.args)
                if len(key) == 2:
                    self.products.setdefault(key, op.target)

        def push(a: object, terms: list[_Term]) -> None:
            if type(a) is str and a in active:
                cot.setdefault(a, []).extend(terms)

        root = self.region.root
        cot[root.args[0]] = [(1.0, ())]
        for op in reversed(self.region.ops[:-1]):
            terms = _merged(cot.pop(op.target, []))
            if not terms:
                continue
            args = op.args
            fan_out = sum(1 for x in args if type(x) is str and x in active) > 1
            # computed once when read by more than one term: a sum, or a product that
            # goes to two operands (a factor computed by the adjoint is used up once)
            if len(terms) > 1 or (
                fan_out and (len(terms[0][1]) > 1 or any(f in self.pending for f, _ in terms[0][1]))
            ):
                terms = [(1.0, ((self.shared(terms), 1),))] if any(t[1] for t in terms) else terms
            a = args[0]
            kind = op.kind
            if kind == "add":
                push(a, terms)
                push(args[1], terms)
            elif kind == "sub":
                push(a, terms)
                push(args[1], _scaled(terms, -1.0))
            elif kind == "neg":
                push(a, _scaled(terms, -1.0))
            elif kind == "mul":
                b = args[1]
                if a in active:
                    push(a, self.times(terms, b, 1))
                if b in active:
                    push(b, self.times(terms, a, 1))
            elif kind == "truediv":
                b = args[1]
                if a in active:
                    push(a, self.times(terms, b, -1))
                if b in active:  # ∂b = -c · out / b
                    out = self.times(self.times(terms, op.target, 1), b, -1)
                    push(b, _scaled(out, -1.0))
            elif kind == "pow":
                n = args[1]
                if n == 2:
                    push(a, _scaled(self.times(terms, a, 1), 2.0))
                else:
                    push(a, _scaled(_with(terms, self.derive(str(n - 1), a), 1), float(n)))
            elif kind == "getitem":
                if a in active:
                    scatter.setdefault(a, []).append((args[1], terms))
            elif kind == "sin":
                push(a, _with(terms, self.derive("cos", a), 1))
            elif kind == "cos":
                push(a, _scaled(_with(terms, self.derive("sin", a), 1), -1.0))
            elif kind == "exp":
                push(a, self.times(terms, op.target, 1))
            elif kind == "log":
                push(a, self.times(terms, a, -1))
            elif kind == "tanh":
                push(a, _with(terms, self.derive("tanh", op.target), 1))
            elif kind == "sqrt":
                push(a, _scaled(self.times(terms, op.target, -1), 0.5))
            else:  # pragma: no cover - find_regions admits no other kind
                raise AssertionError(kind)
        out = []
        for name in sorted(set(cot) | set(scatter), key=self._order):
            out.append((name, self.input_array(name, _merged(cot.get(name, [])), scatter)))
        return out

    def _order(self, name: str) -> int:
        """Inputs in the order the primal first reads them."""
        return next(op.index for op in self.region.ops if name in op.args)

    def times(self, terms: list[_Term], f: object, power: int) -> list[_Term]:
        """``terms`` times ``f ** power``: a number folds into the coefficients, and so
        does the constant of a member ``f = k * a`` (or ``-a``, ``a / k``): the factor
        is ``a`` (``-0.5 * x * x`` reads x twice, and its two terms merge)."""
        if type(f) is not str:
            return _scaled(terms, float(f) if power == 1 else 1.0 / float(f))  # type: ignore[arg-type]
        k = 1.0
        while True:
            op = self.member.get(f)
            if op is None or op.kind not in ("mul", "neg", "truediv"):
                break
            a, b = (op.args + [None])[:2]
            if op.kind == "neg":
                k, f = -k, a
            elif op.kind == "truediv" and type(a) is str and type(b) is not str:
                k, f = k / b, a
            elif op.kind == "mul" and (type(a) is str) != (type(b) is str):
                k, f = (k * b, a) if type(a) is str else (k * a, b)
            else:
                break
        k = k if power == 1 else 1.0 / k
        return _with(_scaled(terms, k) if k != 1.0 else terms, self.ref(f), power)

    # --- materializing ----------------------------------------------------

    def shared(self, terms: list[_Term]) -> str:
        """A local holding ``Σ terms`` without v: a member's cotangent read by more than
        one term. The primal's own ``x * y`` when it is that product."""
        if len(terms) == 1:
            c, fs = terms[0]
            if c == 1.0 and len(fs) == 2 and fs[0][1] == fs[1][1] == 1:
                target = self.products.get(frozenset(f for f, _ in fs))
                if target is not None:
                    return self.z(target)
        name = self.fresh("zc")
        self.sum_into(name, terms, with_v=False)
        return name

    def sum_into(self, name: str, terms: list[_Term], with_v: bool) -> None:
        """Lines computing ``Σ terms`` (times v if ``with_v``) into a fresh array ``name``;
        at least one term has factors."""
        arrays = [t for t in terms if t[1]]
        # first the term whose product, as the fresh array, saves most over adding it
        first = min(arrays, key=lambda t: self.cost(t) - self.cost(t, added=True))
        arrays.remove(first)
        arrays.insert(0, first)
        numbers = sum(c for c, fs in terms if not fs)
        if len(arrays) == 1 and not numbers:
            self.product_into(name, arrays[0], fresh=True, with_v=with_v)
            return
        self.product_into(name, arrays[0], fresh=True)
        for t in arrays[1:]:
            self.add_into(name, t)
        if numbers:
            self.lines.append(f"{name} += {number(numbers)}")
        if with_v:
            self.scaled_by_v(name)

    def product_into(self, name: str, term: _Term, fresh: bool, with_v: bool = False) -> None:
        """Lines computing ``c · f1 · f2 / g1`` (times v if ``with_v``) into ``name``: a
        new array when ``fresh``, else into the existing array ``name`` (the scratch)."""
        c, fs = term
        scale = None  # the number to multiply by, as source
        if with_v:
            scale = "_ad_v" if c == 1.0 else f"({number(c)} * _ad_v)"
        elif c != 1.0:
            scale = number(c)
        lines = self.lines
        pos = [f for f, p in fs if p == 1]
        neg = [f for f, p in fs if p == -1]
        derived = [f for f in pos if f in self.pending]
        out = "" if fresh else f", out={name}"
        if derived:  # computed into the buffer, then the rest in place
            first = derived[0]
            pos.remove(first)
            kind, r = self.pending.pop(first)
            if kind == "cos" or kind == "sin":
                lines.append(f"{name} = _ad_np.{kind}({r}{out})")
            elif kind == "tanh":  # 1 - tanh²
                lines.append(f"{name} = _ad_np.square({r}{out})")
                lines.append(f"_ad_np.subtract(1.0, {name}, out={name})")
            else:  # r ** (n - 1)
                lines.append(f"{name} = _ad_np.power({r}, {kind}{out})")
            if scale is not None:
                lines.append(f"{name} *= {scale}") if c != 1.0 else self.scaled_by_v(name)
        elif pos:
            if scale is not None and not (c == 1.0 and len(pos) > 1):
                lines.append(f"{name} = _ad_np.multiply({scale}, {pos[0]}{out})")
                del pos[0]
            elif len(pos) > 1:  # c is 1: v (usually 1 too) after, if at all
                lines.append(f"{name} = _ad_np.multiply({pos[0]}, {pos[1]}{out})")
                del pos[:2]
                if with_v:
                    self.scaled_by_v(name)
            else:
                lines.append(
                    f"{name} = _ad_np.copy({pos[0]})" if fresh else f"{name}[...] = {pos[0]}"
                )
                del pos[0]
        else:
            lines.append(f"{name} = _ad_np.divide({scale or '1.0'}, {neg[0]}{out})")
            del neg[0]
        for f in pos:
            if f in self.pending:  # a second derived factor: into its own array
                kind, r = self.pending.pop(f)
                tmp = self.fresh("zd")
                self.pending[tmp] = (kind, r)
                self.product_into(tmp, (1.0, ((tmp, 1),)), fresh=True)
                f = tmp
            lines.append(f"{name} *= {f}")
        lines.extend(f"{name} /= {f}" for f in neg)

    def cost(self, term: _Term, added: bool = False) -> int:
        """The array passes ``product_into`` (or, ``added``, ``add_into``) takes."""
        c, fs = term
        if added:
            if not fs:
                return 1
            if abs(c) == 1.0:
                if len(fs) == 1 and fs[0][1] == 1 and fs[0][0] not in self.pending:
                    return 1
                c = 1.0
            return self.cost((c, fs)) + 1
        derived = [f for f, _ in fs if f in self.pending]
        if derived:
            return len(fs) + (c != 1.0) + (self.pending[derived[0]][0] == "tanh")
        pos = sum(1 for _, p in fs if p == 1)
        return len(fs) - (c == 1.0 and pos > 1)

    def add_into(self, name: str, term: _Term) -> None:
        """Lines adding ``term`` (without v) into the array ``name``; a coefficient of
        -1 subtracts instead."""
        c, fs = term
        if not fs:
            self.lines.append(f"{name} += {number(c)}")
            return
        sign = "+"
        if c == -1.0:
            sign, c = "-", 1.0
        if c == 1.0 and len(fs) == 1 and fs[0][1] == 1 and fs[0][0] not in self.pending:
            self.lines.append(f"{name} {sign}= {fs[0][0]}")
        else:
            w = self.scratch
            self.product_into(w, (c, fs), fresh=not self.scratch_made)
            self.scratch_made = True
            self.lines.append(f"{name} {sign}= {w}")

    def scaled_by_v(self, name: str) -> None:
        self.lines.append(f"_ad_v == 1.0 or _ad_np.multiply({name}, _ad_v, out={name})")

    def input_array(self, name: str, terms: list[_Term], scatter: dict) -> str:
        """The local holding input ``name``'s cotangent array, an array of its own."""
        g = self.fresh("zg")
        parts = scatter.get(name, [])
        if not parts and not any(fs for _, fs in terms):
            total = sum(c for c, _ in terms)
            ref = self.ref(name)
            self.lines.append(
                f"{g} = _ad_np.full({ref}.shape, {number(total)} * _ad_v, dtype={ref}.dtype)"
            )
            return g
        if parts:
            self.lines.append(f"{g} = _ad_np.zeros_like({self.ref(name)})")
            for t in terms:
                self.add_into(g, t)
            for s, ts in parts:
                view = self.fresh("zv")
                self.lines.append(f"{view} = {g}[{s}]")
                for t in _merged(ts):
                    self.add_into(view, t)
            self.scaled_by_v(g)
        else:
            self.sum_into(g, terms, with_v=True)
        return g


def _merged(terms: list[_Term]) -> list[_Term]:
    """``terms`` with those of the same factors added up."""
    if len(terms) < 2:
        return terms
    out: dict[tuple, float] = {}
    for c, fs in terms:
        out[fs] = out.get(fs, 0.0) + c
    return [(c, fs) for fs, c in out.items()]


def _scaled(terms: list[_Term], k: float) -> list[_Term]:
    return [(c * k, fs) for c, fs in terms]


def _with(terms: list[_Term], f: str, power: int) -> list[_Term]:
    return [(c, tuple(sorted((*fs, (f, power))))) for c, fs in terms]


def emit(region: Region, active: set[str], key: int, site: str) -> Fused:
    """The fused form of ``region``; ``key`` makes its names unique in the function."""
    em = _Emitter(region, active, key)
    root = region.root
    d = f"_ad_d_{root.target}"
    lines = [f"_ad_v = {d} if type({d}) is float else _ad_fused_seed({d}, {site!r})"]
    if root.kind == "mean":
        n = f"_ad_z{key}_n"
        lines.append(f"_ad_v = _ad_v / {n} if {n} else 0.0")
    cotangents = em.backward()
    lines += em.lines
    line = root.line
    read = set(_NAME.findall("\n".join(lines)))
    kept = [n for n in [*em.aliases.values(), *map(em.z, em.member)] if n in read]
    owned = [em.z(t) for t, op in em.member.items() if op.kind != "getitem" and em.z(t) in read]
    _reuse_when_once(lines, owned)
    if root.kind == "mean":
        kept.append(f"_ad_z{key}_n")
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


def _primal(em: _Emitter, kept: set[str]) -> tuple[list, list, str]:
    """The fused primal's statements (source, its member's line): those that compute
    what the adjoint reads, and those that only compute the value; and the test."""
    region, key = em.region, em.key
    ops = [op for op in region.ops[:-1] if op.kind != "method"]  # x.sum: at the root
    root = region.root
    member = em.member
    views = [op for op in ops if op.kind == "getitem"]
    view_names = {op.target for op in views}
    inputs: dict[str, None] = {}
    for op in ops:
        for a in op.args[:1] if op.kind == "getitem" else op.args:
            if type(a) is str and a not in member:
                inputs[a] = None
    slices = {op.args[1]: None for op in views}
    funcs = {op.func: op.attr or op.kind for op in region.ops if op.func}
    tests = ["_ad_FLAGS.fused", *(f"{f} is _ad_np.{k}" for f, k in funcs.items())]
    first = None  # every input has the first one's dtype, float64 or float32
    for a in inputs:
        if first is None:
            first = a
            dtype = f"({a}.dtype is _ad_f64 or {a}.dtype is _ad_f32)"
        else:
            dtype = f"{a}.dtype is {first}.dtype"
        tests.append(f"type({a}) is _ad_ndarray and {dtype}")
    tests += [f"type({s}) is _ad_slice" for s in slices]
    direct = [a for a in inputs if _direct(a, ops)]
    if direct:  # not 0-d: numpy's operations on those return numbers, not arrays
        tests.append(f"{direct[0]}.ndim")
    shapes = [f"{a}.shape" for a in direct]
    stmts: list[tuple[str, int]] = []
    if len(shapes) + len(views) > 1:
        shapes += [f"({em.z(op.target)} := {op.args[0]}[{op.args[1]}]).shape" for op in views]
        tests.append(" == ".join(shapes))
    else:
        stmts += [(f"{em.z(op.target)} = {op.args[0]}[{op.args[1]}]", op.line) for op in views]
    stmts += [(f"{z} = {a}", root.line) for a, z in em.aliases.items() if z in kept]
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
    for k, op in enumerate([*order, root]):
        for a in op.args:
            if type(a) is str and a in member:
                last_use[a] = k
    value: list[tuple[str, int]] = []
    pool: list[str] = []
    for k, op in enumerate(order):
        if op.target not in needed and stmts and not value:
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
        buffers = pool + dying
        out = buffers.pop(0) if buffers else None
        pool = buffers
        (stmts if op.target in needed else value).append(
            (f"{z} = {_op_expr(op, args, out)}", op.line)
        )
    # What the rules compute (see ``ad._fast._lean_reduction``): np.add.reduce, as
    # np.sum does, and for the mean its division, as np.mean does (with its warning
    # and NaN for an empty array).
    arg = em.z(root.args[0])
    if root.kind == "mean":
        n = f"_ad_z{key}_n"
        first = direct[0] if direct else em.z(views[0].target)
        stmts.append((f"{n} = {first}.size", root.line))
        mean = f"{root.func}({arg})" if root.func else f"{arg}.mean()"
        # np.float64 (np.float32) divided by an int: the same type, as np.mean's
        total = f"_ad_np.add.reduce({arg}, None) / {n} if {n} else {mean}"
    else:
        total = f"_ad_np.add.reduce({arg}, None)"
    value.append((f"{root.target} = {total}", root.line))
    # A member the adjoint needs may also be read by the value's part, which runs after.
    read_later = {a for op in [*computed, root] if op.target not in needed for a in op.args}
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


def _direct(a: str, ops: list[Op]) -> bool:
    """Whether input ``a`` is an operand of an elementwise member (not only sliced)."""
    return any(a in op.args for op in ops if op.kind != "getitem")


def _op_expr(op: Op, args: list[str], out: str | None) -> str:
    kind = op.kind
    if kind in _BINARY:
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


_FRESH = re.compile(r"^(\w+) = _ad_np\.(multiply|divide|cos|sin|square|power)\((.*)\)$")


def _reuse_when_once(lines: list[str], owned: list[str]) -> None:
    """Let the adjoint's new arrays take the buffers of the primal's arrays it read for
    the last time, when it runs once (``_ad_once``): they are the region's own, and
    a second run would read them again. ``lines`` is rewritten in place."""
    last: dict[str, int] = {}
    for i, src in enumerate(lines):
        for n in _NAME.findall(src):
            last[n] = i
    free = [n for n in owned if n in last]
    for i, src in enumerate(lines):
        m = _FRESH.match(src)
        if m is None or "out=" in src:
            continue
        dead = [n for n in free if last[n] <= i]
        if dead:
            free.remove(dead[0])
            lines[i] = f"{m[1]} = _ad_np.{m[2]}({m[3]}, out={dead[0]} if _ad_once else None)"


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
