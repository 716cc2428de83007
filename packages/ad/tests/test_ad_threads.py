"""Threads: many threads differentiating functions nobody has differentiated yet,
at the same time, with gradient, jvp, hessian and hessian_reverse mixed and rules
registered meanwhile (issue 25). Every result is checked against finite
differences; afterwards every function is differentiated again, single-threaded:
a transform that failed under threads must not have stayed cached.

``AD_THREADS_FUNCTIONS=N`` differentiates N functions per thread (``tox -e
stress`` runs more); the default keeps this module to a few seconds."""

import importlib.util
import os
import sys
import threading
import uuid

import numpy as np
import pytest

import ad
from rulescore import NoTangent, frule, rrule

THREADS = 8
PER_THREAD = int(os.environ.get("AD_THREADS_FUNCTIONS", "10"))

# One module of fresh functions (a new file: its code objects are new to ad).
# ``sq_k`` are small helpers that get inlined into their callers; the rule
# thread registers correct rules for some of them while they are in use.
_TEMPLATE = """
import math

def sq_{k}(v):
    return v * v

def poly_{k}(x):
    r = 1.0
    for i in range(3):
        r = r * x + {a} * i
    return r + sq_{k}(x) * {b}

def trig_{k}(x):
    y = math.sin({a} * x) * math.cos(x) + sq_{k}(x)
    if x > 0:
        y = y + math.exp(-x * {b})
    return y / (1.0 + sq_{k}(x))

def closure_{k}(x):
    c = {b}
    def inner(t):
        return t * c + math.tanh(t)
    return inner(x) * inner(2.0 * x)

def both_{k}(x, y):
    return sq_{k}(x) * y + math.log1p(x * x) * {a} - y / (1.0 + x * x)
"""


def _module(tmp_path, n):
    name = f"g25_threads_{uuid.uuid4().hex}"
    src = "\n".join(
        _TEMPLATE.format(k=k, a=0.3 + 0.1 * (k % 7), b=1.1 + 0.05 * k) for k in range(n)
    )
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def _fd2(f, x, h=1e-4):
    return (f(x + h) - 2 * f(x) + f(x - h)) / (h * h)


def _check(mod, k, mode, x):
    """One derivative of one of the functions of index ``k``, against finite
    differences (raises AssertionError with what differed)."""
    fns = [getattr(mod, f"{p}_{k}") for p in ("poly", "trig", "closure")]
    both = getattr(mod, f"both_{k}")
    for f in fns:
        if mode == "gradient":
            (g,) = ad.gradient(f, x)
            np.testing.assert_allclose(g, _fd(f, x), rtol=1e-6, atol=1e-7, err_msg=f.__name__)
        elif mode == "jvp":
            y, dy = ad.jvp(f, (x,), (0.5,))
            assert y == pytest.approx(f(x), rel=1e-12), f.__name__
            np.testing.assert_allclose(dy, 0.5 * _fd(f, x), rtol=1e-6, atol=1e-7)
        elif mode == "hessian":
            h = ad.hessian(f, x)
            np.testing.assert_allclose(h, _fd2(f, x), rtol=1e-4, atol=1e-4, err_msg=f.__name__)
        else:
            h = ad.hessian_reverse(f, x)
            np.testing.assert_allclose(h, _fd2(f, x), rtol=1e-4, atol=1e-4, err_msg=f.__name__)
    if mode == "gradient":
        gx, gy = ad.gradient(both, x, 0.7)
        np.testing.assert_allclose(gx, _fd(lambda v: both(v, 0.7), x), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(gy, _fd(lambda v: both(x, v), 0.7), rtol=1e-6, atol=1e-7)


MODES = ("gradient", "jvp", "hessian", "hessian_reverse")


def _square_rules(helper):
    """Correct rules for ``helper(v) = v * v``."""

    @rrule.register(helper)
    def _(v: float):
        return helper(v), lambda ȳ: (NoTangent(), 2.0 * v * ȳ)

    @frule.register(helper)
    def _(ḟ, v̇, v: float):
        return helper(v), 2.0 * v * v̇


def _register_rules(mod, ks, stop, errors):
    """Register rules while the other threads differentiate: for fresh functions
    (every registration clears dispatch caches and revisits the transforms), and
    correct ones for helpers inlined in functions under way."""
    try:
        i = 0
        while not stop.is_set() or i < 4:

            def fresh(v):
                return v

            @rrule.register(fresh)
            def _(v: float):
                return v, lambda ȳ: (NoTangent(), ȳ)

            if i < len(ks):
                _square_rules(getattr(mod, f"sq_{ks[i]}"))

            i += 1
            stop.wait(0.002)
    except BaseException as e:  # pragma: no cover - reported below
        errors.append(e)


def _run_threads(mod, n_threads, per_thread, shared):
    barrier = threading.Barrier(n_threads + 1)
    errors: list = []
    stop = threading.Event()

    def work(t):
        try:
            barrier.wait()
            ks = list(range(t * per_thread, (t + 1) * per_thread)) + shared
            for j, k in enumerate(ks):
                mode = MODES[(t + j) % len(MODES)]
                _check(mod, k, mode, 0.4 + 0.05 * (k % 5))
        except BaseException as e:
            errors.append((t, e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    rules_thread = threading.Thread(
        target=_register_rules,
        args=(mod, [0, 3, n_threads * per_thread + 1], stop, errors),
    )
    for th in threads:
        th.start()
    rules_thread.start()
    barrier.wait()
    for th in threads:
        th.join(300)
    stop.set()
    rules_thread.join(60)
    return errors


def test_threads_differentiate_new_functions_at_once(tmp_path):
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: races show up quickly
    try:
        shared = [THREADS * PER_THREAD, THREADS * PER_THREAD + 1]
        mod = _module(tmp_path, THREADS * PER_THREAD + 2)
        errors = _run_threads(mod, THREADS, PER_THREAD, shared)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    # Single-threaded afterwards, every mode of every function: nothing broken
    # stayed cached.
    for k in range(THREADS * PER_THREAD + 2):
        for mode in MODES:
            _check(mod, k, mode, 0.9)


def test_transform_that_failed_is_not_cached(tmp_path, monkeypatch):
    """A transform that raised (here: made to fail once) publishes nothing: the
    next call transforms again and succeeds."""
    from ad.transform import cache

    mod = _module(tmp_path, 1)
    real = cache.build_reverse
    calls = []

    def failing_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("transient failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(cache, "build_reverse", failing_once)
    with pytest.raises(RuntimeError, match="transient failure"):
        ad.gradient(mod.poly_0, 0.5)
    (g,) = ad.gradient(mod.poly_0, 0.5)
    assert g == pytest.approx(_fd(mod.poly_0, 0.5), rel=1e-6)
    assert len(calls) >= 2


def test_many_threads_one_new_function(tmp_path):
    """Every thread asks for the same new transform at once: one is built and all
    results are right."""
    mod = _module(tmp_path, 1)
    barrier = threading.Barrier(THREADS)
    out: list = []

    def work():
        barrier.wait()
        out.append(ad.gradient(mod.trig_0, 0.3)[0])

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert len(out) == THREADS
    np.testing.assert_allclose(out, _fd(mod.trig_0, 0.3), rtol=1e-6)


def test_nodes_are_per_thread():
    """The generating passes' shared leaves (``_nodes``) belong to one thread."""
    from ad.transform import _nodes

    _nodes.forget_shared()
    mine = _nodes.load("x", 3)
    seen: list = []

    def other():
        _nodes.forget_shared()
        seen.append(_nodes.load("x", 3))
        seen.append(_nodes.loaded_ids())

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert seen[0] is not mine
    assert _nodes.load("x", 3) is mine
    assert "x" in seen[1]
