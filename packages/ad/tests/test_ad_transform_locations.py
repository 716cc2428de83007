"""The transform builds every generated node with its location, so codegen skips the
walk that used to fill them in: the locations built must be exactly the ones that
walk gives (each node its own, else its nearest located ancestor's line). Also a
~50-line function with loops, branches and containers as a transform smoke test
(the benchmark times its transform; nothing here is timed)."""

import ast
import importlib
import math
import types

import numpy as np
import pytest

import ad

source = importlib.import_module("ad.transform.source")
fence = importlib.import_module("ad.transform.fence")
desugar = importlib.import_module("ad.transform.desugar")
anf = importlib.import_module("ad.transform.anf")
activity = importlib.import_module("ad.transform.activity")
reverse = importlib.import_module("ad.transform.reverse")
codegen = importlib.import_module("ad.transform.codegen")


def fifty_lines(x, y, w):
    """Loops, branches, containers, a closure, attributes, slices, break and continue."""
    total = 0.0
    acc = []
    scale = {"a": 1.5, "b": -0.5}
    for i in range(3):
        t = x * (i + 1.0)
        if i % 2 == 0:
            t = t + math.sin(y) * scale["a"]
        else:
            t = t - math.cos(y) * scale["b"]
        acc.append(t)
        total += t * t
    a, b = (x, y)
    k = 0
    while k < 5:
        a = a * 0.9 + b * 0.1
        k += 1
        if k > 2:
            break
    vals = [v * 2.0 for v in acc if v > -100.0]
    s = sum(vals)
    z = np.tanh(w * a)
    m = np.mean((z[1:] - z[:-1]) ** 2) + np.sum(z) * b
    if s > 0 and m < 10.0:
        r = m + s / (1.0 + abs(s))
    elif s < -1000:
        r = m
    else:
        r = m - s
    d = {"x": x, "y": y}
    d["z"] = d["x"] * d["y"]
    q = d["z"] ** 2 + (d["x"] if x > 0 else -d["x"])
    g = lambda u: u * y + 1.0  # noqa: E731
    h = g(q) / (2.0 + q * q)
    out = total + r + h
    for j, v in enumerate(acc):
        if j == 1:
            continue
        out = out + v * 0.01
    lst = [math.exp(-0.5 * x * x) / len(acc), out]
    lst[0] *= 2.0
    res = lst[0] + lst[1] - np.dot(w, w) * 0.001
    if res < -1e9:
        return -res
    return res + np.sum(
        w * x,
        axis=0,
    )


def early_exits(x, n):
    r = x
    for i in range(n):
        if i == 3:
            continue
        r = r * x if i % 2 else r + x
        if r > 1e6:
            return r
    while n > 0:
        n -= 1
        r = r or x
    return r


def closures_and_kwargs(x, xs):
    def scaled(u, k=2.0):
        return u * k * x

    parts = {i: scaled(v, k=1.5) for i, v in enumerate(xs)}
    total = 0.0
    for v in xs:
        total = total + v
    first, *rest = xs
    return sum(parts.values()) + max(total, first) + len(rest)


CASES = [
    (fifty_lines, (0.7, 0.3, np.linspace(0.1, 1.0, 8))),
    (early_exits, (1.1, 6)),
    (closures_and_kwargs, (0.5, [1.0, 2.0, 3.0])),
]


def _generate(f):
    """The generated module and the ids of the nodes parsed from the user's source."""
    from ad.runtime.helpers import HELPERS

    src = source.get_source(f)
    user = {id(n) for n in ast.walk(src.tree)}
    tree = fence.check_supported(src.tree, src.filename)
    norm = anf.normalize(desugar.desugar(tree), src.filename)
    active = activity.active_names(norm, set(activity.param_names(norm)))
    fwd = reverse.generate(norm, active, (), False, src.filename)
    module = codegen.factory_module(fwd, list(HELPERS))
    return src, user, fwd, module


def _digest(c):
    if isinstance(c, types.CodeType):
        return (
            c.co_code,
            c.co_names,
            c.co_varnames,
            c.co_freevars,
            c.co_cellvars,
            c.co_linetable,
            getattr(c, "co_exceptiontable", None),  # Python 3.11+
            tuple(c.co_positions()) if hasattr(c, "co_positions") else tuple(c.co_lines()),
            tuple(_digest(k) for k in c.co_consts),
        )
    return (type(c), repr(c))


@pytest.mark.parametrize("f", [c[0] for c in CASES], ids=lambda f: f.__name__)
def test_generated_tree_is_located(f):
    _src, _user, fwd, module = _generate(f)
    assert getattr(fwd, "_ad_located", False)
    missing = [
        type(n).__name__
        for n in ast.walk(module)
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None
    ]
    assert missing == []


def _generated_location(n):
    """A node located by the transform, not by the parser: built with a line only,
    or given a zero-width location at column 0 (a copy of a user node, as
    ``anf`` makes for a ``while`` test, keeps the parser's)."""
    if not isinstance(n, (ast.expr, ast.arg, ast.keyword, ast.Pass)):
        return False
    d = n.__dict__
    return "end_lineno" not in d or (d.get("col_offset") == 0 == d.get("end_col_offset"))


@pytest.mark.parametrize("f", [c[0] for c in CASES], ids=lambda f: f.__name__)
def test_built_locations_are_the_inherited_ones(f):
    """Strip the location of every generated expression (and ``pass``) and let codegen
    fill them in by walking the tree, as it did before: the compiled code (bytecode,
    line table, positions) must be the same."""
    from ad.runtime.helpers import HELPERS

    src, user, fwd, module = _generate(f)
    fast = codegen.compile_primal(module, src.filename)
    for n in ast.walk(module):
        if id(n) not in user and _generated_location(n):
            for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
                if attr in n.__dict__:
                    delattr(n, attr)
    del fwd._ad_located
    slow = codegen.compile_primal(codegen.factory_module(fwd, list(HELPERS)), src.filename)
    assert _digest(fast) == _digest(slow)


def test_compile_falls_back_when_a_node_lacks_its_location():
    src, _user, fwd, module = _generate(early_exits)
    want = _digest(codegen.compile_primal(module, src.filename))
    src, _user, fwd, module = _generate(early_exits)
    victim = next(n for n in ast.walk(fwd) if isinstance(n, ast.Compare))
    del victim.lineno, victim.col_offset
    assert _digest(codegen.compile_primal(module, src.filename)) == want


@pytest.mark.parametrize("f", [c[0] for c in CASES], ids=lambda f: f.__name__)
def test_fast_walks_match_ast_walk(f):
    _src, _user, fwd, _module = _generate(f)
    for node in [fwd, *fwd.body]:
        want = list(ast.walk(node))
        got = activity.all_nodes(node)
        assert sorted(map(id, got)) == sorted(map(id, want))
        stores = [n.id for n in want if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        assert sorted(activity.stored_names(node)) == sorted(stores)


def test_fifty_lines_gradient(check_grad):
    f, args = CASES[0]
    check_grad(f, *args)


def test_other_cases_gradient():
    h = 1e-6
    want = (early_exits(1.1 + h, 6) - early_exits(1.1 - h, 6)) / (2 * h)
    assert ad.gradient(early_exits, 1.1, 6)[0] == pytest.approx(want, rel=1e-6)
    got = ad.gradient(closures_and_kwargs, 0.5, [1.0, 2.0, 3.0])
    want_x = sum(v * 1.5 for v in [1.0, 2.0, 3.0])
    assert got[0] == pytest.approx(want_x)


def loop_over(x, xs):
    s = x
    for v in xs:  # the line an error in the loop header must name
        s = s * v
        s = s + 1.0
    return s


def test_an_error_in_a_for_header_names_the_for_line():
    import traceback

    for_line = loop_over.__code__.co_firstlineno + 2
    with pytest.raises(TypeError) as info:
        ad.gradient(loop_over, 1.0, 5)
    assert f"{__file__}:{for_line}" in str(info.value)
    frames = [f for f in traceback.extract_tb(info.tb) if f.filename == __file__]
    assert frames[-1].lineno == for_line
