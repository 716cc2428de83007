"""Memory: ad's caches keep nothing alive that the program dropped (issue 25).

Functions made by the thousand (notebook cells, ``exec``, code generators) and
classes made per call (``dataclasses.make_dataclass``) are differentiated and
dropped: their functions, code objects, closures and classes must go (weak
keys), or at most a bounded number of the latest stay (bounded dispatch caches).
``AD_MEMORY_FUNCTIONS=N`` sets how many functions (``tox -e stress``: 10000), and
``AD_MEMORY_CLOSURES`` how many fresh closures (2000; ``tox -e stress``: 100000)."""

import dataclasses
import gc
import linecache
import os
import tracemalloc
import weakref

import numpy as np
import pytest

import ad

N_FUNCTIONS = int(os.environ.get("AD_MEMORY_FUNCTIONS", "900"))
N_CLASSES = int(os.environ.get("AD_MEMORY_CLASSES", "10000"))
N_CLOSURES = int(os.environ.get("AD_MEMORY_CLOSURES", "2000"))
#: The most classes the bounded dispatch caches may hold at once (see
#: ``ad.runtime.reverse._DISPATCH_BOUND``, ``rulescore._dispatch._CACHE_BOUND``, ``Tangent``).
BOUND = 1024


def _fresh_function(i):
    """A new function with its own file (as a notebook cell has), and that file's name."""
    name = f"<ad-memory-{i}>"
    src = f"def cell_{i}(x, y):\n    z = x * y + {i % 7}.5 * x\n    return z * z - y\n"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    namespace: dict = {}
    exec(compile(src, name, "exec"), namespace)
    return namespace[f"cell_{i}"], name


def _differentiate_and_drop(start, stop, refs=None):
    for i in range(start, stop):
        f, name = _fresh_function(i)
        gx, gy = ad.gradient(f, 1.5, 0.5)
        z = 1.5 * 0.5 + (i % 7 + 0.5) * 1.5
        assert gx == pytest.approx(2 * z * (0.5 + i % 7 + 0.5))
        if refs is not None:
            refs.append((weakref.ref(f), weakref.ref(f.__code__)))
        del f
        del linecache.cache[name]


def test_distinct_functions_are_not_kept():
    refs: list = []
    _differentiate_and_drop(0, N_FUNCTIONS, refs)
    gc.collect()
    functions = sum(f() is not None for f, _ in refs)
    codes = sum(c() is not None for _, c in refs)
    # At most the latest few stay: ``transform.compiled._RECENT_BOUND`` functions
    # (made by exec: their namespace holds them) and their code. Before issue 25:
    # every one of them.
    assert functions <= 128, f"{functions} of {len(refs)} dropped functions stay alive"
    assert codes <= 128, f"{codes} of {len(refs)} dropped code objects stay alive"


def test_memory_stays_flat_over_distinct_functions():
    _differentiate_and_drop(0, 100)  # warm: imports, first-use tables
    gc.collect()
    tracemalloc.start()
    try:
        _differentiate_and_drop(100, 100 + N_FUNCTIONS // 3)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        _differentiate_and_drop(100 + N_FUNCTIONS // 3, 100 + N_FUNCTIONS)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    n = N_FUNCTIONS - N_FUNCTIONS // 3
    per_function = (after - before) / n
    # Before issue 25: about 7 KB per function. Bounded tables keyed by file name
    # (each function here has its own file, as notebook cells do) hold up to ~1000
    # names at any time: noise of a few hundred bytes per function.
    assert per_function < 1000, f"{per_function:.0f} bytes retained per dropped function"


def use(cls, x):
    p = cls(x, 2.0 * x)
    return p.a * p.b + p.a


def test_classes_made_per_call_are_not_kept():
    refs = []
    for i in range(N_CLASSES):
        cls = dataclasses.make_dataclass(f"P{i}", [("a", float), ("b", float)])
        (_, g) = ad.gradient(use, cls, 1.5)
        assert g == pytest.approx(4 * 1.5 + 1.0)
        refs.append(weakref.ref(cls))
        del cls
    gc.collect()
    alive = sum(r() is not None for r in refs)
    # Bounded caches keep at most the latest classes they saw; never all of them.
    assert alive <= BOUND + 16, f"{alive} of {N_CLASSES} classes made per call stay alive"


def test_a_fresh_closure_per_call_stays_flat():
    def make(c):
        def f(x):
            return x * c + c

        return f

    for k in range(200):  # warm
        ad.gradient(make(float(k)), 1.0)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(N_CLOSURES):
            (g,) = ad.gradient(make(float(k)), 1.0)
            assert g == float(k)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    per = (after - before) / N_CLOSURES
    assert per < 50, f"{per:.0f} bytes per closure"


def test_a_captured_array_does_not_outlive_its_function():
    big = np.ones(1_000_000)  # 8 MB
    kept = weakref.ref(big)

    def make(a):
        def f(x):
            return np.sum(a * x)

        return f

    f = make(big)
    del big
    (g,) = ad.gradient(f, 2.0)
    assert g == pytest.approx(1_000_000.0)
    y, dy = ad.jvp(f, (2.0,), (1.0,))
    assert dy == pytest.approx(1_000_000.0)
    del f, g, y, dy
    gc.collect()
    assert kept() is None, "the array captured by a dropped function is still alive"
