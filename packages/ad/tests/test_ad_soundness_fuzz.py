"""Soundness fuzzer: random small Python/numpy programs that alias and mutate.

Each program is a function ``f(x)`` or ``f(x, y)`` of floats and float64 arrays
of shape (3,) or (2, 3), written from a grammar of what users write: views
(slices, ``.T``, ``reshape``, ``ravel``, rows of a matrix), ``np.asarray``,
plain copies of names, tuple unpacking, helpers that return their argument,
arrays held in lists, dicts and object attributes and written through a second
name, in-place updates (``+=``, item assignment, ``out=``) through any of
those, methods calling ``super()``, a ``@property``, lambdas, and ordinary
arithmetic. The program is written to a file (the transform reads source),
imported, and run as plain Python first; one that fails, overflows or gives a
nan is discarded.

The rule checked, in reverse mode (``ad.withgradient``), forward mode
(``ad.jvp``) and second order (``ad.hessian``): the AD may *refuse* a program
by raising an ``ad.ADError`` (``MutationError``, ``UnsupportedSyntaxError``,
``NoRuleError``, ...). If it returns, its value is what Python computes, its
derivatives match central differences of the plain function (on fresh copies
of the inputs, since programs may mutate them), and the caller's arrays are
left as they were. Any other exception is a failure.

``AD_FUZZ_EXAMPLES`` sets the total number of programs (default 520, split
over the three tests); ``tox -e fuzz`` runs 10000.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import ad

# --------------------------------------------------------------------------
# Settings

TOTAL_EXAMPLES = int(os.environ.get("AD_FUZZ_EXAMPLES", "520"))
SHARES = {"reverse": 0.5, "forward": 0.3, "second": 0.2}


def _settings(mode):
    return settings(
        max_examples=max(1, round(TOTAL_EXAMPLES * SHARES[mode])),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
        ],
    )


#: ``np.multiply(z, c, out=z)`` with a differentiated ``z``: the rules refuse
#: ``out=`` with a TypeError naming it (rules cannot raise ad's errors), a refusal.


# --------------------------------------------------------------------------
# Program generation

PRELUDE = """\
import numpy as np


class Box:
    def __init__(self, v):
        self.v = v


class Base:
    def __init__(self, s):
        self.s = s

    def apply(self, t):
        return t * self.s


class Child(Base):
    def __init__(self, s):
        super().__init__(s * 0.5)
        self.bias = 0.25

    def apply(self, t):
        return super().apply(t) + self.bias * t

    @property
    def scale(self):
        return self.s + 1.0


def ident(t):
    return t


def push(lst, t):
    lst.append(t)


"""

ARG_SHAPES = [(), (3,), (2, 3)]


def const(draw):
    return f"{draw(st.floats(0.25, 1.75)):.3f}"


class Gen:
    """The state of one program under construction: the names in scope with
    the shapes of what they hold (``()`` for a number), the containers (records
    shared by every name of the same container, so writes through a second
    name are tracked) and the objects."""

    def __init__(self, draw, nargs, shapes):
        self.draw = draw
        self.names = {}  # name -> (shape, is_array)
        self.lists = {}  # name -> list record: [shape, ...]
        self.dicts = {}  # name -> dict record: {key: shape}
        self.boxes = {}  # name -> box record: {"v": shape}
        self.objs = []
        self.counter = itertools.count()
        self.lines = []
        self.indent = 1
        self.in_loop = False
        for name, shape in zip("xy"[:nargs], shapes):
            self.names[name] = (shape, shape != ())

    def fresh(self, prefix="v"):
        return f"{prefix}{next(self.counter)}"

    def emit(self, line):
        self.lines.append("    " * self.indent + line)

    # -- picking names ------------------------------------------------------

    def pick(self, pred=lambda shape, is_array: True):
        pool = sorted(n for n, (s, a) in self.names.items() if pred(s, a))
        if not pool:
            return None
        return self.draw(st.sampled_from(pool))

    def shape_of(self, name):
        return self.names[name][0]

    # -- expressions --------------------------------------------------------

    def atom(self, shape):
        """An expression of ``shape`` or a number (broadcasts)."""
        d = self.draw
        options = ["const"]
        same = [n for n, (s, _) in self.names.items() if s == shape]
        scal = [n for n, (s, _) in self.names.items() if s == ()]
        arrs = [n for n, (s, a) in self.names.items() if a]
        if same:
            options += ["same"] * 4
        if scal:
            options += ["scalar"]
        if arrs:
            options += ["sumof"]
        if self.objs:
            options += ["prop"]
        cont = self.container_reads(shape)
        if cont:
            options += ["cont"]
        kind = d(st.sampled_from(options))
        if kind == "same":
            return d(st.sampled_from(sorted(same))), shape
        if kind == "scalar":
            return d(st.sampled_from(sorted(scal))), ()
        if kind == "sumof":
            return f"np.sum({d(st.sampled_from(sorted(arrs)))})", ()
        if kind == "prop":
            return f"{d(st.sampled_from(self.objs))}.scale", ()
        if kind == "cont":
            return d(st.sampled_from(cont))
        return const(d), ()

    def container_reads(self, shape):
        """Reads of container entries of ``shape`` or number: (text, shape)."""
        out = []
        for n, rec in sorted(self.lists.items()):
            for i, s in enumerate(rec):
                if s in (shape, ()):
                    out.append((f"{n}[{i}]", s))
        for n, rec in sorted(self.dicts.items()):
            for k, s in sorted(rec.items()):
                if s in (shape, ()):
                    out.append((f'{n}["{k}"]', s))
        for n, rec in sorted(self.boxes.items()):
            if rec["v"] in (shape, ()):
                out.append((f"{n}.v", rec["v"]))
        return out

    def expr(self, shape, depth=0):
        """(text, result shape): the result is ``shape`` or ``()``."""
        d = self.draw
        if depth >= 2:
            return self.atom(shape)
        kinds = ["atom", "bin", "bin", "call", "neg", "helper"]
        kind = d(st.sampled_from(kinds))
        if kind == "atom":
            return self.atom(shape)
        if kind == "neg":
            t, s = self.expr(shape, depth + 1)
            return f"(-{t})", s
        if kind == "bin":
            op = d(st.sampled_from(["+", "-", "*", "/"]))
            a, sa = self.expr(shape, depth + 1)
            if op == "/":
                b, sb = self.expr(shape, depth + 1)
                # a denominator at least 1 in size
                return f"({a} / (1.0 + {b} * {b}))", sa if sa != () else sb
            b, sb = self.expr(shape, depth + 1)
            return f"({a} {op} {b})", sa if sa != () else sb
        if kind == "call":
            fn = d(st.sampled_from(["np.sin", "np.tanh", "np.exp"]))
            t, s = self.expr(shape, depth + 1)
            if fn == "np.exp":
                return f"np.exp(0.5 * {t})", s
            return f"{fn}({t})", s
        # helpers: functions returning their argument, methods, lambdas
        opts = ["ident", "lambda", "nested_lambda"]
        if self.objs:
            opts.append("method")
        which = d(st.sampled_from(opts))
        t, s = self.expr(shape, depth + 1)
        if which == "ident":
            return f"ident({t})", s
        if which == "method":
            return f"{d(st.sampled_from(self.objs))}.apply({t})", s
        if which == "lambda":
            return f"(lambda t: t * {const(d)})({t})", s
        return f"(lambda x: (lambda x: x * {const(d)})(x + {const(d)}) * x)({t})", s

    def any_shape(self):
        shapes = sorted({s for s, _ in self.names.values()}, key=lambda s: (len(s), s))
        return self.draw(st.sampled_from(shapes))

    # -- statements ---------------------------------------------------------

    def statement(self):
        d = self.draw
        kinds = ["assign", "assign", "view", "view", "alias", "inplace", "inplace", "inplace"]
        kinds += ["container", "container", "read", "object"]
        kinds += ["sum_of_list", "slice_of_expr"]
        if not self.in_loop:
            kinds += ["loop"]
        kind = d(st.sampled_from(kinds))
        getattr(self, "st_" + kind)()

    def bind(self, name, shape, is_array):
        self.names[name] = (shape, is_array)

    def st_assign(self):
        shape = self.any_shape()
        t, s = self.expr(shape)
        name = self.fresh()
        self.emit(f"{name} = {t}")
        # an expression of only numbers is a number (or np.float64)
        self.bind(name, s, s != ())

    def st_view(self):
        d = self.draw
        a = self.pick(lambda s, arr: arr and len(s) >= 1)
        if a is None:
            return self.st_assign()
        shape = self.shape_of(a)
        opts = ["index"]
        if shape[0] >= 2:
            opts += ["tail", "head", "reverse"]
        if len(shape) == 2:
            opts += ["T", "ravel", "reshape"]
        else:
            opts += ["reshape"]
        kind = d(st.sampled_from(opts))
        name = self.fresh()
        if kind == "tail":
            text, new = f"{a}[1:]", (shape[0] - 1, *shape[1:])
        elif kind == "head":
            text, new = f"{a}[:2]", (2, *shape[1:])
        elif kind == "reverse":
            text, new = f"{a}[::-1]", shape
        elif kind == "index":
            text, new = f"{a}[0]", shape[1:]
        elif kind == "T":
            text, new = f"{a}.T", shape[::-1]
        elif kind == "ravel":
            text, new = f"{a}.ravel()", (int(np.prod(shape)),)
        else:
            size = int(np.prod(shape))
            targets = {6: [(6,), (3, 2), (2, 3)], 3: [(1, 3), (3,)], 4: [(2, 2), (4,)]}
            new = d(st.sampled_from(targets.get(size, [(size,)])))
            text = f"{a}.reshape({', '.join(map(str, new))})"
        self.emit(f"{name} = {text}")
        # a[0] of a vector is an np.float64, not an array
        self.bind(name, new, new != ())

    def st_alias(self):
        d = self.draw
        a = self.pick()
        shape, is_array = self.names[a]
        kind = d(st.sampled_from(["plain", "asarray", "ident", "unpack", "unpack2"]))
        if kind == "unpack" or kind == "unpack2":
            b = a if kind == "unpack" else self.pick()
            p, q = self.fresh(), self.fresh()
            self.emit(f"{p}, {q} = {a}, {b}")
            self.bind(p, shape, is_array)
            self.bind(q, *self.names[b])
            return
        name = self.fresh()
        if kind == "plain":
            self.emit(f"{name} = {a}")
        elif kind == "ident":
            self.emit(f"{name} = ident({a})")
        else:
            # np.asarray of a number is a 0-d array: updated in place, not rebound
            self.emit(f"{name} = np.asarray({a})")
        self.bind(name, shape, is_array)

    def inplace_targets(self):
        """Updatable places: (text, shape, is_array)."""
        out = [(n, s, a) for n, (s, a) in sorted(self.names.items())]
        for n, rec in sorted(self.lists.items()):
            for i, s in enumerate(rec):
                out.append((f"{n}[{i}]", s, s != ()))
        for n, rec in sorted(self.dicts.items()):
            for k, s in sorted(rec.items()):
                out.append((f'{n}["{k}"]', s, s != ()))
        for n, rec in sorted(self.boxes.items()):
            out.append((f"{n}.v", rec["v"], rec["v"] != ()))
        return out

    def st_inplace(self):
        d = self.draw
        target, shape, is_array = d(st.sampled_from(self.inplace_targets()))
        kinds = ["aug", "aug", "aug"]
        if is_array:
            kinds += ["item", "out"]
        kind = d(st.sampled_from(kinds))
        if kind == "aug":
            op = d(st.sampled_from(["+=", "-=", "*=", "/="]))
            if op == "/=":
                t, _ = self.expr((), 1)
                if is_array and d(st.booleans()):
                    t, _ = self.expr(shape, 1)
                self.emit(f"{target} /= 1.0 + {t} * {t}")
            elif op == "*=":
                t, _ = self.expr((), 1)
                self.emit(f"{target} *= np.tanh({t})")
            else:
                t, _ = self.expr(shape if is_array else (), 0)
                self.emit(f"{target} {op} {t}")
        elif kind == "item":
            idx = "0" if len(shape) == 1 or d(st.booleans()) else "0, 1"
            t, _ = self.expr((), 1)
            self.emit(f"{target}[{idx}] = {t}")
        else:
            self.emit(f"np.multiply({target}, {const(d)}, out={target})")

    def st_container(self):
        d = self.draw
        kinds = ["newlist", "newdict", "newbox"]
        if self.lists:
            kinds += ["append", "push", "listalias"]
        if self.dicts:
            kinds += ["dictwrite"]
        if self.boxes:
            kinds += ["boxwrite"]
        kind = d(st.sampled_from(kinds))
        if kind == "newlist":
            a, b = self.pick(), self.pick()
            name = self.fresh("l")
            self.emit(f"{name} = [{a}, {b}]")
            self.lists[name] = [self.shape_of(a), self.shape_of(b)]
        elif kind == "newdict":
            a = self.pick()
            t, s = self.expr(self.any_shape())
            name = self.fresh("d")
            self.emit(f'{name} = {{"k": {a}, "j": {t}}}')
            self.dicts[name] = {"k": self.shape_of(a), "j": s}
        elif kind == "newbox":
            a = self.pick()
            name = self.fresh("b")
            self.emit(f"{name} = Box({a})")
            self.boxes[name] = {"v": self.shape_of(a)}
        elif kind in ("append", "push"):
            lst = d(st.sampled_from(sorted(self.lists)))
            if d(st.booleans()):
                t = self.pick()
                s = self.shape_of(t)
            else:
                t, s = self.expr(self.any_shape())
            if kind == "append":
                self.emit(f"{lst}.append({t})")
            else:
                self.emit(f"push({lst}, {t})")
            self.lists[lst].append(s)
        elif kind == "listalias":
            lst = d(st.sampled_from(sorted(self.lists)))
            name = self.fresh("l")
            self.emit(f"{name} = {lst}")
            self.lists[name] = self.lists[lst]
        elif kind == "dictwrite":
            dct = d(st.sampled_from(sorted(self.dicts)))
            rec = self.dicts[dct]
            key = d(st.sampled_from(["k", "j"]))
            name = self.fresh("d")
            self.emit(f"{name} = {dct}")
            self.dicts[name] = rec
            t, s = self.expr(rec[key])
            if s != rec[key]:
                t = f'{t} + 0.0 * {dct}["{key}"]'
            self.emit(f'{name}["{key}"] = {t}')
        else:
            box = d(st.sampled_from(sorted(self.boxes)))
            rec = self.boxes[box]
            name = self.fresh("b")
            self.emit(f"{name} = {box}")
            self.boxes[name] = rec
            t, s = self.expr(rec["v"])
            if s != rec["v"]:
                t = f"{t} + 0.0 * {box}.v"
            self.emit(f"{name}.v = {t}")

    def st_read(self):
        d = self.draw
        reads = []
        for n, rec in sorted(self.lists.items()):
            reads += [(f"{n}[{i}]", s) for i, s in enumerate(rec)]
            reads += [(f"{n}[-1]", rec[-1])]
        for n, rec in sorted(self.dicts.items()):
            reads += [(f'{n}["{k}"]', s) for k, s in sorted(rec.items())]
        for n, rec in sorted(self.boxes.items()):
            reads += [(f"{n}.v", rec["v"])]
        if not reads:
            return self.st_container()
        text, shape = d(st.sampled_from(reads))
        name = self.fresh()
        self.emit(f"{name} = {text}")
        # what a number-valued entry holds may be a 0-d array: not indexed
        self.bind(name, shape, shape != ())

    def st_object(self):
        d = self.draw
        if not self.objs or d(st.booleans()):
            t, _ = self.expr((), 1)
            name = self.fresh("o")
            self.emit(f"{name} = Child(np.tanh({t}))")
            self.objs.append(name)
            return
        obj = d(st.sampled_from(self.objs))
        shape = self.any_shape()
        t, s = self.expr(shape, 1)
        name = self.fresh()
        if d(st.booleans()):
            self.emit(f"{name} = {obj}.apply({t})")
        else:
            self.emit(f"{name} = {obj}.scale * {t}")
        self.bind(name, s, s != ())

    def st_loop(self):
        d = self.draw
        m = self.pick(lambda s, arr: arr and len(s) >= 1)
        if m is None:
            return self.st_assign()
        shape = self.shape_of(m)
        row = self.fresh("row")
        acc = self.fresh("acc")
        self.emit(f"{acc} = 0.0")
        self.emit(f"for {row} in {m}:")
        self.indent += 1
        self.in_loop = True
        self.bind(row, shape[1:], len(shape) > 1)
        grown = []
        for _ in range(d(st.integers(1, 2))):
            kind = d(st.sampled_from(["acc", "rowupdate", "rowitem", "append", "other"]))
            if kind == "acc":
                fn = d(st.sampled_from(["np.sin", "np.tanh", ""]))
                self.emit(f"{acc} = {acc} + np.sum({fn}({row}))")
            elif kind == "rowupdate":
                op = d(st.sampled_from(["+=", "-=", "*="]))
                t, _ = self.expr((), 1)
                self.emit(f"{row} {op} {t}")
            elif kind == "rowitem" and len(shape) > 1:
                t, _ = self.expr((), 1)
                self.emit(f"{row}[0] = {t}")
            elif kind == "append" and self.lists:
                lst = d(st.sampled_from(sorted(self.lists)))
                self.emit(f"{lst}.append({row})")
                grown.append(self.lists[lst])
            else:
                # statements that keep every shape the same each iteration:
                # fresh names and in-place updates
                d(st.sampled_from([self.st_assign, self.st_inplace, self.st_view]))()
        # appended rows: the list grows by one entry per row
        for rec in grown:
            rec.extend([shape[1:]] * shape[0])
        self.in_loop = False
        self.indent -= 1
        self.bind(acc, (), False)

    def st_sum_of_list(self):
        d = self.draw
        fn = d(st.sampled_from(["np.sum", "np.mean"]))
        name = self.fresh()
        if d(st.booleans()):
            a = self.pick(lambda s, arr: arr)
            if a is not None:
                b = self.pick(lambda s, arr: s == self.shape_of(a))
                self.emit(f"{name} = {fn}([{a}, {b} * {const(d)}])")
                self.bind(name, (), False)
                return
        a, b = self.pick(), self.pick()
        self.emit(f"{name} = {fn}([np.sum({a}), np.sum({b}), {const(d)}])")
        self.bind(name, (), False)

    def st_slice_of_expr(self):
        a = self.pick(lambda s, arr: arr and len(s) >= 1 and s[0] >= 2)
        if a is None:
            return self.st_assign()
        shape = self.shape_of(a)
        t, _ = self.expr(shape, 1)
        name = self.fresh()
        self.emit(f"{name} = ({a} + {t})[1:]")
        self.bind(name, (shape[0] - 1, *shape[1:]), True)

    # -- the return ---------------------------------------------------------

    def ret(self):
        d = self.draw
        terms = []
        names = sorted(self.names)
        args = [n for n in ("x", "y") if n in self.names]
        others = [n for n in names if n not in args]
        chosen = args + (d(st.lists(st.sampled_from(others), max_size=4)) if others else [])
        reads = []
        for n, rec in sorted(self.lists.items()):
            reads += [f"{n}[{i}]" for i, s in enumerate(rec)]
        for n, rec in sorted(self.dicts.items()):
            reads += [f'{n}["{k}"]' for k in sorted(rec)]
        for n in sorted(self.boxes):
            reads.append(f"{n}.v")
        if reads:
            chosen += d(st.lists(st.sampled_from(sorted(set(reads))), max_size=3))
        for n in chosen:
            fn = d(st.sampled_from(["", "np.sin", "np.tanh"]))
            sq = d(st.booleans())
            inner = f"{fn}({n})" if fn else n
            terms.append(f"{const(d)} * np.sum({inner}{' * ' + n if sq else ''})")
        self.emit("return " + " + ".join(terms))


@st.composite
def program(draw, nargs=None):
    if nargs is None:
        nargs = draw(st.sampled_from([1, 2]))
    shapes = tuple(draw(st.sampled_from(ARG_SHAPES)) for _ in range(nargs))
    g = Gen(draw, nargs, shapes)
    for _ in range(draw(st.integers(2, 8))):
        g.statement()
    g.ret()
    params = ", ".join("xy"[:nargs])
    # the prelude (classes and helpers) is the same for every program
    return f"def f({params}):\n" + "\n".join(g.lines) + "\n", shapes


# --------------------------------------------------------------------------
# Running and checking

_counter = itertools.count()
REFUSED = object()


def load(source, tmp_path):
    path = tmp_path / f"fuzz_prog_{next(_counter)}.py"
    path.write_text(PRELUDE + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def make_args(shapes, seed):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        v = rng.uniform(0.2, 1.5, s) * rng.choice([-1.0, 1.0], s)
        out.append(float(v) if s == () else v)
    return out


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def plain(f, args, limit=1e6):
    """``f`` on fresh copies of ``args`` as a float; None where it fails,
    overflows or is not finite."""
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            y = f(*copies(args))
            y = float(y)
    except Exception:
        return None
    if not np.isfinite(y) or abs(y) > limit:
        return None
    return y


def checked_plain(f, args):
    y = plain(f, args, limit=np.inf)
    assert y is not None, "finite differences left the domain of the program"
    return y


def attempt(thunk):
    """Run the AD: its result, or REFUSED where it raised an ADError."""
    try:
        return thunk()
    except ad.ADError:
        return REFUSED
    except TypeError as e:
        if "does not support out=" in str(e):
            return REFUSED
        raise


def as_array(g, shape):
    if g is None:
        return np.zeros(shape)
    g = np.asarray(g, dtype=float)
    assert g.shape == shape, f"derivative of shape {g.shape} for an argument of shape {shape}"
    return g


def fd_gradient(f, args, h=1e-6):
    grads = []
    for i, a in enumerate(args):
        shape = np.shape(a)
        g = np.zeros(shape)
        for k in np.ndindex(shape):
            ap, am = copies(args), copies(args)
            if shape == ():
                ap[i], am[i] = a + h, a - h
            else:
                ap[i][k] += h
                am[i][k] -= h
            g[k] = (checked_plain(f, ap) - checked_plain(f, am)) / (2 * h)
        grads.append(g)
    return grads


def close(got, want, scale, rtol=1e-5, atol=1e-6):
    return np.allclose(got, want, rtol=rtol, atol=atol * (1.0 + scale))


def assert_inputs_untouched(args, saved):
    for a, s in zip(args, saved):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, s), f"the AD changed an input: {s} -> {a}"


def prepare(source, shapes, seed, tmp_path):
    note("# the helpers and classes of PRELUDE, then\n" + source)
    f = load(source, tmp_path)
    args = make_args(shapes, seed)
    y = plain(f, args)
    assume(y is not None)
    return f, args, y


def check_gradient(f, args, y, shapes):
    """withgradient against Python and central differences: True where it returned."""
    saved = copies(args)
    r = attempt(lambda: ad.withgradient(f, *args))
    assert_inputs_untouched(args, saved)
    if r is REFUSED:
        return False
    value, grads = r
    assert np.isclose(float(value), y, rtol=1e-9, atol=1e-12), (
        f"AD value {float(value)} != Python value {y}"
    )
    fd = fd_gradient(f, args)
    scale = abs(y) + max(float(np.max(np.abs(g), initial=0.0)) for g in fd)
    for g, want, s in zip(grads, fd, shapes):
        got = as_array(g, s)
        assert close(got, want, scale), f"gradient {got} != finite differences {want}"
    return True


@_settings("reverse")
@given(prog=program(), seed=st.integers(0, 2**16))
def test_reverse_mode_is_sound(tmp_path, prog, seed):
    source, shapes = prog
    f, args, y = prepare(source, shapes, seed, tmp_path)
    check_gradient(f, args, y, shapes)


@_settings("forward")
@given(prog=program(), seed=st.integers(0, 2**16))
def test_forward_mode_is_sound(tmp_path, prog, seed):
    source, shapes = prog
    f, args, y = prepare(source, shapes, seed, tmp_path)
    rng = np.random.default_rng(seed + 1)
    tangents = [float(rng.normal()) if s == () else rng.normal(size=s) for s in shapes]
    saved = copies(args)
    r = attempt(lambda: ad.jvp(f, tuple(args), tuple(copies(tangents))))
    assert_inputs_untouched(args, saved)
    if r is REFUSED:
        return
    value, dy = r
    assert np.isclose(float(value), y, rtol=1e-9, atol=1e-12), (
        f"AD value {float(value)} != Python value {y}"
    )
    dy = 0.0 if dy is None else float(dy)
    h = 1e-6
    ap = [a + h * t for a, t in zip(args, tangents)]
    am = [a - h * t for a, t in zip(args, tangents)]
    fp, fm = checked_plain(f, ap), checked_plain(f, am)
    want = (fp - fm) / (2 * h)
    scale = abs(y) + abs(want)
    assert close(dy, want, scale), f"jvp {dy} != finite differences {want}"


@_settings("second")
@given(prog=program(nargs=1), seed=st.integers(0, 2**16))
def test_second_order_is_sound(tmp_path, prog, seed):
    source, shapes = prog
    f, args, y = prepare(source, shapes, seed, tmp_path)
    (x,) = args
    if not check_gradient(f, args, y, shapes):
        return
    saved = copies(args)
    H = attempt(lambda: ad.hessian(f, x))
    assert_inputs_untouched(args, saved)
    if H is REFUSED:
        return
    n = int(np.prod(shapes[0]))
    H = np.asarray(H, dtype=float).reshape(n, n)
    # central differences of ad.gradient, column by column (x flattened)
    h = 1e-5
    cols = []
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        e = e.reshape(shapes[0])
        xp, xm = (x + e, x - e) if shapes[0] != () else (x + h, x - h)
        gp = attempt(lambda: ad.gradient(f, xp)[0])  # noqa: B023
        gm = attempt(lambda: ad.gradient(f, xm)[0])  # noqa: B023
        if gp is REFUSED or gm is REFUSED:
            pytest.fail("ad.gradient refused near a point where it succeeded")
        gp = as_array(gp, shapes[0]).reshape(-1)
        gm = as_array(gm, shapes[0]).reshape(-1)
        cols.append((gp - gm) / (2 * h))
    want = np.stack(cols, axis=1)
    scale = abs(y) + float(np.max(np.abs(want)))
    assert close(H, want, scale), f"hessian\n{H}\n!= finite differences of the gradient\n{want}"
