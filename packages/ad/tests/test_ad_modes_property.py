"""Property test: every combination of modes agrees, at second and third order.

Random small programs of one float ``x`` (float and small-array arithmetic, math and
numpy functions from a table, a helper function, augmented assignment, a loop, a
list built and read, a tiny object with a method) are written to a file (the
transform reads source) and imported. For each, the second derivative is taken by
all four pairs of modes (forward over forward, forward over reverse, reverse over
forward, reverse over reverse) and the third by all eight triples: every
combination must agree with the others, and with central differences of the
derivative one order lower.

Deterministic (``derandomize``); ``AD_MODES_EXAMPLES`` sets the number of programs
(the ``stress`` tox env runs more).
"""

import importlib.util
import itertools
import os

import pytest
from ad_testing import D_f, D_r
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("AD_MODES_EXAMPLES", "8"))
MODES = {"f": D_f, "r": D_r}
PAIRS = ["".join(p) for p in itertools.product("fr", repeat=2)]
TRIPLES = ["".join(p) for p in itertools.product("fr", repeat=3)]
_counter = itertools.count()

SCALAR_FNS = ["math.sin", "math.cos", "math.tanh", "np.sin", "np.tanh", "helper"]
ARRAY_FNS = ["np.sin", "np.cos", "np.tanh"]
SCALARS = ["x", "v0", "v1", "v2"]


@st.composite
def expr(draw, depth=0):
    """A float expression of the scalar variables."""
    atoms = st.sampled_from(SCALARS) | st.floats(0.3, 1.5).map(lambda c: f"{c:.3f}")
    if depth >= 2:
        return draw(atoms)
    kind = draw(st.sampled_from(["atom", "bin", "bin", "call", "pow"]))
    if kind == "atom":
        return draw(atoms)
    if kind == "bin":
        op = draw(st.sampled_from(["+", "-", "*"]))
        return f"({draw(expr(depth + 1))} {op} {draw(expr(depth + 1))})"
    if kind == "pow":
        return f"({draw(expr(depth + 1))} ** {draw(st.sampled_from([2, 3]))})"
    return f"{draw(st.sampled_from(SCALAR_FNS))}({draw(expr(depth + 1))})"


@st.composite
def statements(draw, depth=0):
    """One to three statements, each over the scalars ``v0..v2`` and the array ``a``."""
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        # "object" (a method of a module-level object) joins the draw when the known
        # gaps (test_objects_every_mode_combination_agrees) are closed
        kind = draw(st.sampled_from(["assign", "aug", "array", "loop", "list", "helper"]))
        target = draw(st.sampled_from(["v0", "v1", "v2"]))
        if kind == "assign" or (kind == "loop" and depth >= 1):
            lines.append(f"{target} = math.tanh({draw(expr())})")
        elif kind == "aug":
            lines.append(f"{target} *= 0.5")
            lines.append(f"{target} += np.tanh({draw(expr())})")
        elif kind == "array":
            fn = draw(st.sampled_from(ARRAY_FNS))
            lines.append(f"a = {fn}(a) * {draw(expr())} + {target} * K")
            lines.append(f"{target} = math.tanh(float(np.sum(a * K)))")
        elif kind == "loop":
            n = draw(st.integers(1, 3))
            lines.append(f"for i in range({n}):")
            lines += ["    " + line for line in draw(statements(depth + 1))]
        elif kind == "list":
            # (built by display and concatenation: lst.append at third order is
            # refused by ownership checking for now, a known limitation)
            lines.append(f"lst = [{draw(expr())}, {draw(expr())}]")
            lines.append(f"lst = lst + [{target} * lst[0]]")
            lines.append(f"{target} = math.tanh(lst[1] * lst[2] + lst[0])")
        elif kind == "object":
            # (an object made outside: constructing a class at third order is not
            # followed yet, a known limitation)
            lines.append(f"{target} = math.tanh(SCALE.apply({draw(expr())}))")
        else:
            lines.append(f"{target} = 0.5 * helper({draw(expr())})")
    return lines


@st.composite
def program(draw):
    body = draw(statements())
    ret = draw(expr())
    return "\n".join(
        [
            "import math",
            "import numpy as np",
            "",
            "K = np.array([0.5, -0.3, 0.8])",
            "",
            "",
            "def helper(t):",
            f"    return t * {draw(st.sampled_from(['math.cos', 'np.sin']))}(t) + 0.5 * t",
            "",
            "",
            "class Scale:",
            "    def __init__(self, k):",
            "        self.k = k",
            "",
            "    def apply(self, t):",
            "        return self.k * t + math.sin(t)",
            "",
            "",
            "SCALE = Scale(0.7)",
            "",
            "",
            "def f(x):",
            "    v0 = x",
            "    v1 = 0.5 * x",
            "    v2 = 0.25",
            "    a = x * K",
            *("    " + line for line in body),
            f"    return {ret} + v0 * v1 + v2 + float(np.sum(np.sin(a) * a))",
            "",
        ]
    )


def load(source, tmp_path):
    path = tmp_path / f"modes_prog_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def nth(modes, f, x):
    """The derivative of ``f`` at ``x`` taken by ``modes``, outer first."""
    if not modes:
        return f(x)
    return float(MODES[modes[0]](lambda y: nth(modes[1:], f, y), x))


def check_order(f, x, combos, source):
    """Every combination in ``combos`` agrees, and with central differences of the
    derivative one order lower (taken by forward mode)."""
    got = {m: nth(m, f, x) for m in combos}
    first = got[combos[0]]
    scale = max(1.0, abs(first))
    for m, v in got.items():
        assert v == pytest.approx(first, rel=1e-9, abs=1e-9 * scale), (m, got, source)
    lower = "f" * (len(combos[0]) - 1)
    h = 1e-5
    fd = (nth(lower, f, x + h) - nth(lower, f, x - h)) / (2 * h)
    assert first == pytest.approx(fd, rel=1e-5, abs=1e-5 * scale), (fd, got, source)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=program(), x=st.floats(-1.2, 1.2))
def test_every_mode_combination_agrees(tmp_path, source, x):
    f = load(source, tmp_path)
    check_order(f, x, PAIRS, source)
    check_order(f, x, TRIPLES, source)


SCALE_SOURCE = """
import math


class Scale:
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return self.k * t + math.sin(t)


SCALE = Scale(0.7)


def method_of_global(x):
    return math.tanh(SCALE.apply(x))


def made_inside(x):
    s = Scale(x)
    return math.tanh(s.apply(x))
"""


def load_scale(tmp_path):
    path = tmp_path / f"modes_scale_{next(_counter)}.py"
    path.write_text(SCALE_SOURCE)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name, combos",
    [
        ("method_of_global", TRIPLES),
        pytest.param(
            "made_inside",
            PAIRS,
            marks=pytest.mark.xfail(
                strict=True,
                reason="known gap: forward over forward does not follow an object's fields "
                "(a clear error at the user's line: test_ad_nested_in_place.py)",
            ),
        ),
    ],
)
def test_objects_every_mode_combination_agrees(tmp_path, name, combos):
    f = getattr(load_scale(tmp_path), name)
    check_order(f, 0.3, combos, SCALE_SOURCE)
