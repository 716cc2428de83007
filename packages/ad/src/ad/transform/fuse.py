"""Pass 5a, fuse: elementwise regions summed to a number, differentiated at transform time.

A *region* is a set of ANF assignments of one block outside loops, such as
rosenbrock's ``np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)``::

    _ad_t7 = _ad_op_pow(_ad_t6, 2) ... _ad_t16 = _ad_op_add(_ad_t10, _ad_t15)
    _ad_t17 = _ad_t1(_ad_t16)          # _ad_t1 = np.sum: the root

whose temporaries are read by nothing but each other, and whose *root*, a
whole-array ``np.sum`` or ``np.mean`` (or ``.sum()``/``.mean()``), is its one result. Members are the
operators ``+ - * /`` and unary ``-``, ``a ** n`` (a constant integer ``n >= 2``;
``np.square(a)`` is ``a ** 2``),
the ufuncs of ``UFUNCS`` on one array, basic slices ``x[i:j]``, and ``s op= x`` of a
member ``s`` (``s = a * b; s += c``: each binding of a variable the block binds
several times is a member of its own, see ``find_regions``). A
linear combination of such sums (or of such means) is one region too, its root the
combination: ``np.sum(a) + np.sum(b)``, ``100.0 * np.sum(a)``, ``s = s + np.sum(a)
+ np.sum(b)`` (``_combined``; ``s`` must be a number).

``find_regions`` finds them; ``emit`` writes, for one region, a test and the two
halves of its fused form. The test (at the root) holds when the operands are float64
(or all float32) arrays whose shapes broadcast, Python floats or numpy scalars of
their dtype (``ad.runtime.fused_regions.fused_shape``), the functions are numpy's, and their rules
the built-in ones (``ad.runtime.scalar_paths.FLAGS.fused``). Then the primal is plain numpy at the
broadcast shape, writing into the buffers of temporaries that died when they have
that shape, and the adjoint is the one derived here, once: each
cotangent is kept as a term ``c · v · f1 · f2 / g1`` (``v`` the root's cotangent,
a float, ``c`` a constant), so constants fold and nothing is computed until an
input needs its array, of the broadcast shape, then summed to the input's own
(``ad.runtime.fused_regions.fused_fit``, as the per-operation rules do). Otherwise the members run
the per-operation path.

Here: what a region is (``Op``, ``Region``) and ``find_regions``. Its fused form:
``fuse_adjoint`` (the adjoint, derived as terms), ``fuse_emit`` (``emit``: the
test, the primal, the parsed statements).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field

__all__ = [
    "BINARY",
    "REDUCTIONS",
    "UFUNCS",
    "Op",
    "Region",
    "find_regions",
    "module_attribute",
    "real_name",
]

#: The numpy functions a region may call, by attribute name.
UFUNCS = ("sin", "cos", "exp", "log", "tanh", "sqrt")
REDUCTIONS = ("sum", "mean")
#: The binary operators a region may hold (``_ad_op_<name>``).
BINARY = ("add", "sub", "mul", "truediv")


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
    inplace: bool = False  # ``s op= x`` of a member ``s`` (see ``find_regions``)


@dataclass
class Region:
    # members in block order, then the root; with reductions combined (see
    # ``_combined``), the reductions and the combining operations are among the
    # members and the root is the last of those
    ops: list[Op]
    fallback: list[tuple[list, list]] = field(default_factory=list)  # per op: its code
    #: the names of a rebound variable's bindings (``s_ad_v1``...): the fused form's
    #: own, no name of the members' code (see ``find_regions``)
    versions: frozenset[str] = frozenset()

    @property
    def inplace(self) -> bool:
        """Whether a member is ``s op= x``: the region then computes at its operands'
        own shape alone, where numpy's in-place result has the shape of ``s``."""
        return any(op.inplace for op in self.ops)

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


def _atom(a: ast.expr, consts: dict[str, float], names: dict[str, str]) -> str | float | None:
    if type(a) is ast.Name:
        n = names.get(a.id, a.id)
        return consts.get(n, n)
    if type(a) is ast.Constant and type(a.value) in (int, float):
        return a.value
    return None


def _as_op(
    i: int, t: str, v: ast.Call, attrs: dict, consts: dict, slices: set, names: dict
) -> Op | None:
    fn = v.func.id  # type: ignore[attr-defined]
    args = [_atom(a, consts, names) for a in v.args]
    if any(a is None for a in args) or not any(type(a) is str for a in args):
        return None
    line = getattr(v, "lineno", 0)
    if fn.startswith("_ad_op_"):
        kind = fn[7:]
        if kind in BINARY and len(args) == 2:
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
    stmts: list[ast.stmt],
    temporaries: frozenset[str],
    active: set[str],
    loads: Counter,
    rebound: dict[str, int] | None = None,
) -> list[Region]:
    """The regions among ``stmts``, a block outside loops. ``temporaries``: the ANF
    temporaries bound once and captured by no nested function (the only members);
    ``loads``: how often each name is read in the whole function.

    ``rebound``: the user's variables bound by that many plain assignments
    (``reverse_regions.rebound_locals``). When all of them are statements of this
    block, each binding is a name of its own here (``s_ad_v0``, ``s_ad_v1``), and
    ``s op= x`` (``s = _ad_iop_op(s, x)``) of a binding that is a member is one too:
    numpy's in-place result is the out-of-place one when ``s`` is the region's own
    array of the region's shape (the test then requires every array operand to have
    it), and differentiated code updates arrays out of place anyway."""
    names, loads = _versions(stmts, rebound or {}, loads)
    versions = frozenset(v for m in names for v in m.values())
    temporaries = temporaries | versions
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
        reads = names[i]
        t = reads.get("", target.id)  # a rebound variable's binding: its own name,
        version = t != target.id  # which only an elementwise member may have
        stored.append(t)
        v = s.value  # type: ignore[attr-defined]
        kind = type(v)
        attr = module_attribute(v)
        if attr is not None:
            if t in temporaries and not version:
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
        if via is not None and not v.args and not version:  # ``x.sum()``: the root
            root = Op(i, t, attrs[fn], via.args, line=getattr(v, "lineno", 0))
            roots.append((root, barrier, via))
            sums.add(t)
            continue
        if t in temporaries and not version:
            if fn == "slice":
                slices.add(t)
                continue
            if fn == "_ad_op_neg" and len(v.args) == 1:
                a = v.args[0]
                if type(a) is ast.Constant and type(a.value) in (int, float):
                    consts[t] = -a.value
                    continue
        op = _as_op(i, t, v, attrs, consts, slices, reads)
        if op is None and fn.startswith("_ad_iop_") and fn[8:] in BINARY and len(v.args) == 2:
            first = _atom(v.args[0], consts, reads)
            # s op= x of a member s that is an array of its own (a view's write
            # reaches its base: ownership's to refuse, on the per-operation path)
            if first in members and t in versions and members[first].kind != "getitem":
                kind = fn[8:]
                other = _atom(v.args[1], consts, reads)
                if other is not None:
                    op = Op(i, t, kind, [first, other], line=getattr(v, "lineno", 0), inplace=True)
        if version and (op is None or op.kind in REDUCTIONS or _combines(op, sums)):
            if not fn.startswith("_ad_op_"):
                barrier = i  # as below
            continue
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
        elif t in temporaries and (t in active or (t in versions and real_name(t) in active)):
            members[t] = op
    regions = []
    taken: set[int] = set()  # reductions in regions that combine them
    for top, lo in reversed(combos):
        region = _combined(
            top, lo, combos, roots, members, temporaries, loads, stored, taken, versions
        )
        if region is not None and _closed(region.ops, versions):
            regions.append(region)
            for op in region.ops:
                members.pop(op.target, None)
    for root, lo, via in roots:
        if root.index in taken:
            continue
        ops = _grow([root], lo, members, loads, versions)
        # one operation saves a few microseconds a call, less than the millisecond or
        # so its fused form costs the transform
        if len(ops) < 2:
            continue
        if via is not None:  # the method's lookup runs at the root too (or not at all)
            ops = sorted([*ops, via], key=lambda op: op.index)
        if _movable(ops, root, stored) and _closed([*ops, root], versions):
            for op in ops:
                op.line = getattr(stmts[op.index], "lineno", 0)
                members.pop(op.target, None)
            regions.append(Region([*ops, root], versions=versions))
    return regions


_VERSION = "_ad_v"


def _closed(ops: list[Op], versions: frozenset[str]) -> bool:
    """Whether every binding of a rebound variable that ``ops`` read is one of them:
    such a binding's name exists in the fused form alone."""
    targets = {op.target for op in ops}
    return all(a in targets for op in ops for a in op.args if a in versions)


def real_name(version: str) -> str:
    """The variable a binding's own name (``s_ad_v1``) is of (``s``)."""
    return version.rsplit(_VERSION, 1)[0]


def _versions(
    stmts: list[ast.stmt], rebound: dict[str, int], loads: Counter
) -> tuple[list[dict[str, str]], Counter]:
    """Per statement of ``stmts``, the names its reads of rebound variables take (the
    binding each reads: ``{"s": "s_ad_v0"}``) and, under ``""``, the name its own
    binding takes; and ``loads`` with those names' reads counted (the last
    binding's, also those after this block). A variable gets names only when every
    binding of it is an assignment among ``stmts`` itself."""
    here: Counter = Counter()
    for s in stmts:
        if type(s) is ast.Assign and len(s.targets) == 1 and type(s.targets[0]) is ast.Name:
            here[s.targets[0].id] += 1
    named = {n for n, c in rebound.items() if here[n] == c}
    out: list[dict[str, str]] = [{} for _ in stmts]
    if not named:
        return out, loads
    loads = Counter(loads)
    count: Counter = Counter()  # bindings so far
    read_here: Counter = Counter()
    for i, s in enumerate(stmts):
        m = out[i]
        for node in ast.walk(s):
            if type(node) is ast.Name and type(node.ctx) is ast.Load and node.id in named:
                n = node.id
                read_here[n] += 1
                if count[n]:  # else a value from before the block: the variable's own
                    m[n] = f"{n}{_VERSION}{count[n] - 1}"
                    loads[m[n]] += 1
        if type(s) is ast.Assign and type(s.targets[0]) is ast.Name and s.targets[0].id in named:
            n = s.targets[0].id
            m[""] = f"{n}{_VERSION}{count[n]}"
            count[n] += 1
    for n in named:  # the last binding's reads after this block
        loads[f"{n}{_VERSION}{count[n] - 1}"] += loads[n] - read_here[n]
    return out, loads


def _grow(
    roots: list[Op],
    lo: int,
    members: dict[str, Op],
    loads: Counter,
    versions: frozenset[str] = frozenset(),
) -> list[Op]:
    """The members of the region of ``roots`` (reductions), in block order: those
    they reach through members after the barrier ``lo``, less those read anywhere
    else, and those reading a binding of a rebound variable (``versions``) that is
    no member. Empty when a root's operand is no member."""
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
        # s op= x needs s's own array: s a member too; and a rebound variable's
        # binding has its own name in the fused form alone: never an operand
        outside |= {
            n
            for n, op in found.items()
            if (op.inplace and op.args[0] not in found)
            or any(a in versions and a not in found for a in op.args)
        }
        # A view's array is sliced in the region's test, before any member is
        # computed (see ``fuse_emit._primal``): it must be an input, not a member.
        outside |= {n for n, op in found.items() if op.kind == "getitem" and op.args[0] in found}
        if not outside:
            break
        for n in outside:
            del found[n]
    if any(root.args[0] not in found or found[root.args[0]].index > root.index for root in roots):
        return []
    if any(a in versions and a not in found for r in roots for a in r.args):
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
    versions: frozenset[str] = frozenset(),
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
    grown = _grow(found, lo, members, loads, versions)
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
    return Region(ops, versions=versions)


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
