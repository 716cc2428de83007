"""Pass 5a, fuse: elementwise regions summed to a number, differentiated at transform time.

A *region* is a set of ANF assignments of one block outside loops, such as
rosenbrock's ``np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)``::

    _ad_t7 = _ad_op_pow(_ad_t6, 2) ... _ad_t16 = _ad_op_add(_ad_t10, _ad_t15)
    _ad_t17 = _ad_t1(_ad_t16)          # _ad_t1 = np.sum: the root

whose temporaries are read by nothing but each other, and whose *root*, a
whole-array ``np.sum`` or ``np.mean`` (or ``.sum()``/``.mean()``), is its one result. Members are the
operators ``+ - * /`` and unary ``-``, ``a ** n`` (a constant integer ``n >= 2``;
``np.square(a)`` is ``a ** 2``),
the ufuncs of ``UFUNCS`` on one array, and basic slices ``x[i:j]``. A
linear combination of such sums (or of such means) is one region too, its root the
combination: ``np.sum(a) + np.sum(b)``, ``100.0 * np.sum(a)``, ``s = s + np.sum(a)
+ np.sum(b)`` (``_combined``; ``s`` must be a number).

``find_regions`` finds them; ``emit`` writes, for one region, a test and the two
halves of its fused form. The test (at the root) holds when the operands are float64
(or all float32) arrays whose shapes broadcast, Python floats or numpy scalars of
their dtype (``ad.runtime.fused_regions.fused_shape``), the functions are numpy's, and their rules
the built-in ones (``ad.runtime.lean_rules.FLAGS.fused``). Then the primal is plain numpy at the
broadcast shape, writing into the buffers of temporaries that died when they have
that shape, and the adjoint is the one derived here, once: each
cotangent is kept as a term ``c · v · f1 · f2 / g1`` (``v`` the root's cotangent,
a float, ``c`` a constant), so constants fold and nothing is computed until an
input needs its array, of the broadcast shape, then summed to the input's own
(``ad.runtime.fused_regions.fused_fit``, as the per-operation rules do). Otherwise the members run
the per-operation path.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

__all__ = ["REDUCTIONS", "UFUNCS", "Fused", "Region", "emit", "find_regions", "module_attribute"]

#: The numpy functions a region may call, by attribute name.
UFUNCS = ("sin", "cos", "exp", "log", "tanh", "sqrt")
REDUCTIONS = ("sum", "mean")

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
    combines: bool = False  # an operation on reductions (see ``_combined``), not arrays


@dataclass
class Region:
    # members in block order, then the root; with reductions combined (see
    # ``_combined``), the reductions and the combining operations are among the
    # members and the root is the last of those
    ops: list[Op]
    fallback: list[tuple[list, list]] = field(default_factory=list)  # per op: its code

    @property
    def root(self) -> Op:
        return self.ops[-1]

    @property
    def reductions(self) -> list[Op]:
        return [op for op in self.ops if op.kind in REDUCTIONS]

    @property
    def scalars(self) -> list[Op]:
        """The reductions and what combines them: numbers, computed for the value only."""
        return [op for op in self.ops if op.combines or op.kind in REDUCTIONS]


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
    sums: set[str] = set()  # the reductions' targets and those of what combines them
    combos: list[tuple[Op, int]] = []  # what combines them, and its last barrier before
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
            sums.add(t)
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
        if op is not None and _combines(op, sums):
            combos.append((op, barrier))
            sums.add(t)
            continue
        if op is None:
            # Members run at the root, after the statements between them: only an
            # operator (``_ad_op_*``), which changes no array, may be one of those. Any
            # other call might write into an array a member before it reads.
            if not fn.startswith("_ad_op_"):
                barrier = i
        elif op.kind in REDUCTIONS:
            roots.append((op, barrier, None))
            sums.add(t)
        elif t in temporaries and t in active:
            members[t] = op
    regions = []
    taken: set[int] = set()  # reductions in regions that combine them
    for top, lo in reversed(combos):
        region = _combined(top, lo, combos, roots, members, temporaries, loads, stored, taken)
        if region is not None:
            regions.append(region)
            for op in region.ops:
                members.pop(op.target, None)
    for root, lo, via in roots:
        if root.index in taken:
            continue
        ops = _grow([root], lo, members, loads)
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


def _grow(roots: list[Op], lo: int, members: dict[str, Op], loads: Counter) -> list[Op]:
    """The members of the region of ``roots`` (reductions), in block order: those
    they reach through members after the barrier ``lo``, less those read anywhere
    else. Empty when a root's operand is no member."""
    found: dict[str, Op] = {}
    last = roots[-1].index
    stack = [a for root in roots for a in root.args if type(a) is str]
    while stack:
        name = stack.pop()
        op = members.get(name)
        if op is None or name in found or not lo < op.index < last:
            continue
        found[name] = op
        stack.extend(a for a in op.args if type(a) is str)
    while True:
        inside = Counter(a for op in [*found.values(), *roots] for a in op.args if type(a) is str)
        outside = {n for n in found if inside[n] != loads[n]}
        # A view's array is sliced in the region's test, before any member is
        # computed (see ``_primal``): it must be an input, not a member.
        outside |= {n for n, op in found.items() if op.kind == "getitem" and op.args[0] in found}
        if not outside:
            break
        for n in outside:
            del found[n]
    if any(root.args[0] not in found or found[root.args[0]].index > root.index for root in roots):
        return []
    return sorted(found.values(), key=lambda op: op.index)


def _combines(op: Op, sums: set[str]) -> bool:
    """Whether ``op`` is a linear combination of reductions (``sums``) and numbers:
    ``a + b``, ``a - b``, ``-a``, ``c * a``, ``a / c``; ``s + a`` and ``s - a`` also
    with another value ``s`` (its test requires a number: ``s = s + np.sum(...)``;
    an array there, ``np.sum(a) + y``, takes the per-operation path)."""
    names = [a for a in op.args if type(a) is str]
    if not any(a in sums for a in names):
        return False
    kind = op.kind
    if kind in ("add", "sub"):
        return True
    if any(a not in sums for a in names):
        return False
    if kind == "neg":
        return True
    if kind == "mul":
        return len(names) == 1
    return kind == "truediv" and type(op.args[0]) is str and type(op.args[1]) is not str


def _combined(
    top: Op,
    lo: int,
    combos: list[tuple[Op, int]],
    roots: list[tuple[Op, int, Op | None]],
    members: dict[str, Op],
    temporaries: frozenset[str],
    loads: Counter,
    stored: list[str | None],
    taken: set[int],
) -> Region | None:
    """The region whose root is ``top``, a linear combination of reductions (``np.sum(a)
    + np.sum(b)``, ``100.0 * np.sum(a)``): the reductions and the combinations it
    reads, each a temporary it alone reads, and the reductions' members; any other
    value it reads is an operand its test requires to be a number. None when
    ``top`` is read by such a combination itself, mixes sums and means, or its
    reductions share no operand read the same way (arrays of unrelated shapes: one
    test that fails would take the per-operation path for them all)."""
    combo = {op.target: op for op, _ in combos}
    if top.index in taken or (
        top.target in temporaries
        and loads[top.target] == 1
        and any(op.index > top.index and top.target in op.args for op in combo.values())
    ):
        return None  # part of a larger one
    by_target = {root.target: (root, via) for root, _, via in roots}
    ops: list[Op] = [top]
    combining = [top]
    found: list[Op] = []
    stack = [a for a in top.args if type(a) is str]
    while stack:
        a = stack.pop()
        if a not in temporaries or loads[a] != 1 or (a not in combo and a not in by_target):
            continue  # a number computed before: ``s`` of ``s + np.sum(...)``
        if a in combo:
            ops.append(combo[a])
            combining.append(combo[a])
            stack.extend(x for x in combo[a].args if type(x) is str)
        elif a in by_target:
            root, via = by_target[a]
            if root.index in taken or root.index <= lo:
                return None
            found.append(root)
            ops += [root] if via is None else [root, via]
    if any(op.index <= lo for op in ops) or len({r.kind for r in found}) != 1:
        return None
    found.sort(key=lambda op: op.index)
    grown = _grow(found, lo, members, loads)
    if not grown or len(grown) + len(ops) < 3:
        return None
    if len(found) > 1:
        inputs = [_operands(root.args[0], grown) for root in found]
        if any(not (a & inputs[0]) for a in inputs[1:]):
            return None
    ops = sorted([*grown, *ops], key=lambda op: op.index)
    if not _movable(ops, top, stored):
        return None
    for op in ops:
        taken.add(op.index)
    for op in combining:
        op.combines = True
    return Region(ops)


def _operands(name: str, members: list[Op]) -> set[str]:
    """The names that are no members among those ``name``'s value is computed from, a
    view's array as ``x[]``."""
    by = {op.target: op for op in members}
    out: set[str] = set()
    stack = [name]
    while stack:
        n = stack.pop()
        op = by.get(n)
        if op is None:
            out.add(n)
        elif op.kind == "getitem":
            out.add(f"{op.args[0]}[]")
        else:
            stack.extend(a for a in op.args if type(a) is str)
    return out


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
        self.member_of = {self.z(t): t for t in self.member}
        self.aliases: dict[str, str] = {}  # input -> the forward's alias for the backward
        self.fit_aliases: dict[str, str] = {}  # input -> the same, to shape its cotangent
        self.lines: list[str] = []
        self.pending: dict[str, tuple[str, str]] = {}  # derived name -> (kind, operand)
        self.count = 0
        self.scratch = f"_ad_zs{key}"
        self.scratch_made = False
        # x * y computed by the primal, by its (adjoint) factor names: a cotangent
        # that is that product reads it instead of computing it again
        self.products: dict[frozenset, str] = {}
        # What the region's test hands ``_ad_fused_shape``, in order: the views
        # (``x[i:j]``) and the sliced arrays also read whole, which must have the
        # region's shape (the cotangents are scattered into them), then the other
        # operands. ``bit``: each one's bit in the mask; ``deps``: a member's, the
        # bits of the operands it is computed from (it has the region's shape when
        # one of those has).
        scalars = region.scalars
        ops = [op for op in region.ops if op.kind != "method" and op not in scalars]
        self.elementwise = ops
        views = [op for op in ops if op.kind == "getitem"]
        sliced = {op.args[0]: None for op in views}
        direct: dict[str, None] = {}
        for op in ops:
            if op.kind != "getitem":
                for a in op.args:
                    if type(a) is str and a not in self.member:
                        direct[a] = None
        self.views = views
        self.view = {op.target: op for op in views}
        self.sliced = list(sliced)
        self.operands = [
            *(op.target for op in views),
            *(a for a in direct if a in sliced),
            *(a for a in direct if a not in sliced),
        ]
        self.full = len(views) + sum(1 for a in direct if a in sliced)
        self.bit = {a: 1 << i for i, a in enumerate(self.operands)}
        self.deps: dict[str, int] = {}
        for op in ops:
            if op.kind == "getitem":
                self.deps[op.target] = self.bit[op.target]
            else:
                bits = 0
                for a in op.args:
                    if type(a) is str:
                        bits |= self.deps.get(a, 0) or self.bit.get(a, 0)
                self.deps[op.target] = bits
        # the values a combination of reductions reads besides them: numbers (``s``
        # of ``s = s + np.sum(...)``, bound again by the root)
        bound = {op.target: op.index for op in region.ops}
        self.leaves = list(
            dict.fromkeys(
                a
                for op in scalars
                if op.combines
                for a in op.args
                if type(a) is str and not bound.get(a, op.index) < op.index
            )
        )
        k = key
        self.shape, self.dtype = f"_ad_zsh{k}", f"_ad_zdt{k}"
        self.mask, self.size = f"_ad_zm{k}", f"_ad_zn{k}"
        # all operands arrays of the region's shape: so is every member, and every
        # product of them numpy makes; else a new array is made of that shape first
        self.same = f"_ad_zq{k}"
        self.alloc = f"_ad_np.empty({self.shape}, {self.dtype})"
        self.empty = f"None if {self.same} else {self.alloc}"

    def is_full(self, bits: int, mask: str = "") -> str | None:
        """The test that a value computed from the operands ``bits`` has the region's
        shape: "" when it always has (from an operand that must), None when it may
        never have (from numbers alone). ``mask``: where the test reads the mask."""
        if not bits:
            return None
        if bits & ((1 << self.full) - 1) or len(self.operands) == 1:
            return ""  # one operand, an array: the shape is its own
        return f"{mask or self.mask} & {bits}"

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
        cot[root.target] = [(1.0, ())]
        for op in reversed(self.region.ops):
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
            if kind in REDUCTIONS:  # a mean's 1/n is in v (all are means, or all sums)
                push(a, terms)
            elif kind == "add":
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
        # a new array has the region's shape: every operand broadcasts into it in place
        out = f", out={self.empty}" if fresh else f", out={name}"
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
                # a copy of a factor (of the region's shape when all operands have it)
                copy = f"_ad_np.copy({pos[0]}) if {self.same} else "
                lines.append(
                    f"{name} = {copy}_ad_np.positive({pos[0]}, out={self.alloc})"
                    if fresh
                    else f"{name}[...] = {pos[0]}"
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

    def shaped(self, name: str) -> str:
        """The name the adjoint reads input ``name`` by to give its cotangent its shape:
        None when it has the region's, so that the tape keeps no array for that."""
        alias = self.aliases.get(name) or self.fit_aliases.get(name)  # kept anyway, or
        if alias is None:
            alias = self.fit_aliases[name] = f"_ad_z{self.key}_f{len(self.fit_aliases)}"
        return alias

    def scaled_by_v(self, name: str) -> None:
        self.lines.append(f"_ad_v == 1.0 or _ad_np.multiply({name}, _ad_v, out={name})")

    def input_array(self, name: str, terms: list[_Term], scatter: dict) -> str:
        """The local holding input ``name``'s cotangent array, an array of its own."""
        g = self.fresh("zg")
        if name in self.leaves:  # a number: its cotangent is one
            v = "_ad_w" if self.region.reductions[0].kind == "mean" else "_ad_v"
            c = f"{number(sum(c for c, _ in terms))} * {v}"
            ref = self.ref(name)
            self.lines.append(
                f"{g} = {c} if _ad_type({ref}) is _ad_float else _ad_fused_fit({ref}, {c})"
            )
            return g
        parts = scatter.get(name, [])
        full = None if parts else self.is_full(self.bit[name])
        if not parts and not any(fs for _, fs in terms):
            c = f"{number(sum(c for c, _ in terms))} * _ad_v"
            if full == "":
                self.lines.append(f"{g} = _ad_np.full({self.shape}, {c}, dtype={self.dtype})")
            else:
                x = self.shaped(name)
                self.lines.append(
                    f"{g} = _ad_fused_full({x}, {c}, {self.shape}, {self.size}, {self.dtype})"
                )
            return g
        if parts:  # an array of the region's shape, or the array of its views
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
            self.sum_into(g, terms, with_v=True)  # of the region's shape
            if full != "":  # summed over the axes it was broadcast along
                fit = f"_ad_fused_fit({self.shaped(name)}, {g})"
                self.lines.append(f"{g} = {g} if {full} else {fit}" if full else f"{g} = {fit}")
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


def _primal(em: _Emitter, kept: set[str]) -> tuple[list, list, str]:
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
        # a buffer that has the region's shape (see ``_Emitter.is_full``) takes the
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


def _reuse_when_once(lines: list[str], owned: dict[str, str | None], empty: str) -> None:
    """Let the adjoint's new arrays (``out=empty``) take the buffers of the primal's
    arrays it read for the last time, when it runs once (``_ad_once``): they are the
    region's own, and a second run would read them again. ``owned``: those arrays,
    each with the test that it has the region's shape (``fuse._Emitter.is_full``),
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
