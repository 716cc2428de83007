"""The adjoint of a fused region, derived symbolically as terms, then written as lines.

Part of pass 5a (``fuse``). ``Emitter.backward`` walks the region's
operations from the root back: each cotangent is a list of terms
``c · v · f1 · f2 / g1`` (``v`` the root's cotangent, a float; ``c`` a
constant), so constants fold and two terms of the same factors merge; then it
writes the numpy lines that compute each active input's cotangent array, into
fresh arrays of the region's shape, summed to the input's own shape where it
was broadcast. ``fuse_emit`` builds the region's test and primal around them.
"""

from __future__ import annotations

from ad.transform.fuse import REDUCTIONS, Region

__all__ = ["Emitter", "number"]


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


_Term = tuple  # (coefficient, ((array name, ±1), ...)): every term also carries v


class Emitter:
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
