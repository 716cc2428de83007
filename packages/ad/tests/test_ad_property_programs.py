"""Property test: random small programs, ad.gradient against finite differences.

Programs come from a grammar of assignments, arithmetic, calls of math
functions, ``if``, ``for`` and ``while``. Each is written to a file (the
transform reads source) and imported; its gradient in both arguments is
compared with central differences. Conditions compare the arguments with
constants at a margin from the sampled points, so no finite-difference step
crosses a branch boundary.
"""

import importlib.util
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad

VARS = ["x", "y", "v0", "v1", "v2"]
_counter = itertools.count()


@st.composite
def expr(draw, depth=0, lib="math"):
    atoms = st.sampled_from(VARS) | st.floats(0.5, 2.0).map(lambda c: f"{c:.3f}")
    if depth >= 2:
        return draw(atoms)
    kind = draw(st.sampled_from(["atom", "bin", "call", "neg"]))
    if kind == "atom":
        return draw(atoms)
    if kind == "bin":
        op = draw(st.sampled_from(["+", "-", "*"]))
        return f"({draw(expr(depth + 1, lib))} {op} {draw(expr(depth + 1, lib))})"
    if kind == "neg":
        return f"(-{draw(expr(depth + 1, lib))})"
    fn = draw(st.sampled_from([f"{lib}.sin", f"{lib}.cos", f"{lib}.tanh", "helper"]))
    return f"{fn}({draw(expr(depth + 1, lib))})"


@st.composite
def block(draw, indent, depth=0, lib="math"):
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["assign", "assign", "if", "for", "while", "aug"]))
        pad = "    " * indent
        target = draw(st.sampled_from(["v0", "v1", "v2"]))
        if kind == "assign" or depth >= 2:
            lines.append(f"{pad}{target} = {lib}.tanh({draw(expr(lib=lib))})")
        elif kind == "aug":
            lines.append(f"{pad}{target} *= 0.5")
            lines.append(f"{pad}{target} += {lib}.sin({draw(expr(lib=lib))})")
        elif kind == "if":
            arg = draw(st.sampled_from(["x", "y"])) + ("[0]" if lib == "np" else "")
            lines.append(f"{pad}if {arg} > 0.0:")
            lines += draw(block(indent + 1, depth + 1, lib))
            lines.append(f"{pad}else:")
            lines += draw(block(indent + 1, depth + 1, lib))
        elif kind == "for":
            n = draw(st.integers(0, 3))
            lines.append(f"{pad}for i{depth} in range({n}):")
            lines += draw(block(indent + 1, depth + 1, lib))
        else:
            n = draw(st.integers(1, 3))
            lines.append(f"{pad}k{depth} = 0")
            lines.append(f"{pad}while k{depth} < {n}:")
            lines += draw(block(indent + 1, depth + 1, lib))
            lines.append(f"{pad}    k{depth} += 1")
    return lines


@st.composite
def program(draw, lib="math"):
    body = draw(block(1, lib=lib))
    ret = draw(expr(lib=lib))
    result = f"{ret} + v0 * v1 + v2"
    return "\n".join(
        [
            "import math",
            "import numpy as np",
            "",
            "def helper(t):",
            f"    return t * {lib}.cos(t) + 0.5 * t",
            "",
            "def f(x, y):",
            # fresh objects: ``v0 = x`` would alias an array argument, and
            # ``v0 *= ...`` then updates it in place (refused by the AD)
            f"    v0 = x{' * 1.0' if lib == 'np' else ''}",
            f"    v1 = y{' * 1.0' if lib == 'np' else ''}",
            "    v2 = 0.25",
            *body,
            f"    return {'np.sum(' + result + ')' if lib == 'np' else result}",
            "",
        ]
    )


def load(source, tmp_path):
    path = tmp_path / f"prog_{next(_counter)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


sign = st.sampled_from([-1.0, 1.0])
magnitude = st.floats(0.2, 1.5)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=program(), sx=sign, mx=magnitude, sy=sign, my=magnitude)
def test_random_programs_match_finite_differences(tmp_path, source, sx, mx, sy, my):
    f = load(source, tmp_path)
    x, y = sx * mx, sy * my
    gx, gy = ad.gradient(f, x, y)
    h = 1e-6
    fx = (f(x + h, y) - f(x - h, y)) / (2 * h)
    fy = (f(x, y + h) - f(x, y - h)) / (2 * h)
    got = (0.0 if gx is None else gx, 0.0 if gy is None else gy)
    assert got[0] == pytest.approx(fx, rel=1e-5, abs=1e-6), source
    assert got[1] == pytest.approx(fy, rel=1e-5, abs=1e-6), source
    assert math.isfinite(got[0]) and math.isfinite(got[1])


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=program(lib="np"), seed=st.integers(0, 2**16))
def test_random_numpy_programs_match_finite_differences(tmp_path, source, seed):
    """The same grammar over arrays of shape (3,), summed at the end."""
    f = load(source, tmp_path)
    rng = np.random.default_rng(seed)
    # the first entries (the branch conditions) stay away from 0
    x = rng.uniform(0.2, 1.5, 3) * rng.choice([-1.0, 1.0])
    y = rng.uniform(0.2, 1.5, 3) * rng.choice([-1.0, 1.0])
    gx, gy = ad.gradient(f, x, y)
    h = 1e-6
    for g, which in ((gx, 0), (gy, 1)):
        g = np.zeros(3) if g is None else g
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            args_p = [x, y]
            args_m = [x, y]
            args_p[which] = args_p[which] + e
            args_m[which] = args_m[which] - e
            fd = (f(*args_p) - f(*args_m)) / (2 * h)
            assert g[k] == pytest.approx(fd, rel=1e-5, abs=1e-6), source


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=program(lib="np"), seed=st.integers(0, 2**16))
def test_random_numpy_programs_on_large_arrays_match_directional_differences(
    tmp_path, source, seed
):
    """The numpy grammar on arrays large enough (300 entries) for a whole-array sum's
    cotangent to be ``uniform`` and for products under it to hand on read-only views
    of their factors: the gradient's inner product with random directions against
    central differences along them, and the inputs left untouched."""
    f = load(source, tmp_path)
    rng = np.random.default_rng(seed)
    n = 300
    x = rng.uniform(0.2, 1.5, n) * rng.choice([-1.0, 1.0])
    y = rng.uniform(0.2, 1.5, n) * rng.choice([-1.0, 1.0])
    x0, y0 = x.copy(), y.copy()
    gx, gy = ad.gradient(f, x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)
    h = 1e-6
    for _ in range(2):
        u, w = rng.normal(size=n), rng.normal(size=n)
        fd = (f(x + h * u, y + h * w) - f(x - h * u, y - h * w)) / (2 * h)
        got = (0.0 if gx is None else gx @ u) + (0.0 if gy is None else gy @ w)
        assert got == pytest.approx(fd, rel=1e-5, abs=1e-5), source
    for g in (gx, gy):
        assert g is None or (g.flags.writeable and g.flags.owndata)
