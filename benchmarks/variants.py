"""The style-variants benchmark: every workload in many equally natural spellings.

``python benchmarks/run.py --variants [workload ...]`` (or ``tox -e bench-variants``).
DESIGN.md's targets hold "for every natural spelling" of a workload: augmented
assignment or not, parameters as separate arrays, a tuple, list, dict, dataclass or
model object, the function passed directly or through a lambda, ``functools.partial``
or a closure, helpers or inline code, ``np.dot`` or ``@``, numpy scalars or floats,
float32 or float64. The spellings live in ``variants_scalar.py`` and
``variants_array.py``; this module runs them with the harness's timing, check and
table code and prints four tables:

1. per workload, every spelling: its median ``ad.gradient`` time, ×forward (its own
   forward pass), ×hand (the hand-written gradient on the same inputs), target, mark;
2. a summary per workload: min / median / max ×hand over the spellings, and how many
   meet the target;
3. µs per operation on scalar code, pattern by pattern (a multiply, ``r *= x``, a
   numpy scalar, a user helper, a dict read, ``list.append``, ``xs[i]``);
4. the first-call transform time of generated straight-line scalar functions of 50,
   200 and 1,000 lines.
"""

from __future__ import annotations

import argparse
import linecache
import math
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass

import harness
import numpy as np
from harness import (
    first_call,
    fmt_time,
    mark,
    measure,
    measure_interleaved,
    print_methods,
    run_method,
)
from workloads import WORKLOADS

import ad

__all__ = ["Variant", "run"]

BY_NAME = {w.name: w for w in WORKLOADS}
TOL = (1e-7, 1e-10)  # the harness's tolerance (rtol, atol relative to the largest entry)
TOL_FLOAT32 = (1e-3, 1e-4)


@dataclass(frozen=True)
class Variant:
    """One spelling of a workload.

    ``prepare(params, data)`` returns ``(fn, args)``: the function handed to
    ``ad.gradient`` and its differentiated arguments, in the spelling's own structure
    (a dict, a dataclass, a model object...). ``leaves(grad)`` flattens the result of
    ``ad.gradient(fn, *args)`` into one entry per workload parameter, in the order of
    the hand-written gradient. ``inputs(params, data)`` recasts the inputs first (to
    float32, to numpy scalars); the hand-written gradient then runs on the same inputs.
    ``hand`` replaces the workload's hand-written gradient (same signature).
    """

    workload: str
    name: str
    prepare: Callable
    leaves: Callable = tuple
    inputs: Callable | None = None
    hand: Callable | None = None


def baseline_prepare(workload: str) -> Callable:
    """The spelling of ``workloads.py``: its ``bind`` closure over the data."""
    return lambda params, data: (BY_NAME[workload].bind(*data), params)


def baseline(workload: str, name: str) -> Variant:
    return Variant(workload, name, baseline_prepare(workload))


def float32(params, data):
    def cast(v):
        return v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v

    return tuple(map(cast, params)), tuple(map(cast, data))


def np_scalars(params, data):
    return tuple(np.float64(p) for p in params), data


def first(n: int) -> Callable:
    """Leaves: the first ``n`` entries (the rest are data passed positionally)."""
    return lambda g: g[:n]


def attrs(*names: str) -> Callable:
    """Leaves of the cotangent of one object argument (a dataclass, a model)."""
    return lambda g: tuple(getattr(g[0], k) for k in names)


def keys(*names: str) -> Callable:
    """Leaves of the cotangent of one dict argument."""
    return lambda g: tuple(g[0][k] for k in names)


def all_variants() -> tuple[Variant, ...]:
    # Imported here: both modules import this one for Variant and the helpers.
    import variants_array
    import variants_scalar

    return variants_scalar.VARIANTS + variants_array.VARIANTS


def _dtype_note(grad_leaves, params) -> str | None:
    """A float32 input whose gradient comes back in another dtype."""
    for i, (g, p) in enumerate(zip(grad_leaves, params)):
        if getattr(p, "dtype", None) == np.float32 and np.result_type(g) != np.float32:
            return f"parameter {i}: gradient {np.result_type(g)} for a float32 input"
    return None


def tolerance(params) -> tuple[float, float]:
    return TOL_FLOAT32 if any(getattr(p, "dtype", None) == np.float32 for p in params) else TOL


def check_variant(v: Variant, seed: int = 0) -> None:
    """Raise AssertionError unless the spelling, at small sizes, computes the workload's
    value and ``ad.gradient`` of it matches the hand-written gradient (the smoke test)."""
    w = BY_NAME[v.workload]
    params, data = w.make(np.random.default_rng(seed), small=True)
    value = w.bind(*data)(*params)
    p, d = v.inputs(params, data) if v.inputs else (params, data)
    fn, fargs = v.prepare(p, d)
    rtol, atol = tolerance(p)
    np.testing.assert_allclose(fn(*fargs), value, rtol=rtol)
    harness.check(v.leaves(ad.gradient(fn, *fargs)), (v.hand or w.grad)(*p, *d), rtol, atol)


def run_variant(v: Variant, params, data, value, hand, hand_call, args) -> dict:
    """Check one spelling's value and gradient, then time it with the hand-written
    gradient (``hand_call``) and its own forward pass, their batches interleaved."""
    tol = tolerance(params)

    def call():
        return ad.gradient(fn, *fargs)

    try:
        fn, fargs = v.prepare(params, data)
        got = fn(*fargs)
        if not np.allclose(got, value, rtol=tol[0]):
            raise AssertionError(f"value {got} ≠ {value}")
        harness.check(v.leaves(call()), hand, *tol)
    except AssertionError as e:
        return {"method": v.name, "status": "wrong", "error": str(e), "spelling": True}
    except Exception as e:
        error = harness.first_line(e)
        return {"method": v.name, "status": "failed", "error": error, "spelling": True}
    timed = measure_interleaved(
        (call, hand_call, lambda: fn(*fargs)), args.batch_time, args.repeats
    )
    m = {"method": v.name, "status": "ok", "spelling": True, **timed[0]}
    m["hand_s"], m["forward_s"] = timed[1]["median_s"], timed[2]["median_s"]
    m["x_forward"] = m["median_s"] / m["forward_s"]
    m["x_hand"] = m["median_s"] / m["hand_s"]
    note = _dtype_note(v.leaves(call()), params)
    if note:
        m["note"] = note
    return m


def run_workload(w, variants, args) -> dict:
    params, data = w.make(np.random.default_rng(args.seed), args.small)
    loss = w.bind(*data)
    value = loss(*params)
    methods = [{"method": "forward", "status": "ok"}]
    hands = {}  # (inputs, hand) -> (gradient, its row): one row per kind of input

    def hand_for(inputs, hand_fn, p, d, label):
        key = (inputs, hand_fn)
        if key not in hands:
            hands[key] = (hand_fn(*p, *d), {"method": label, "status": "ok", "times": []})
            methods.append(hands[key][1])
        return hands[key], lambda: hand_fn(*p, *d)

    hand_for(None, w.grad, params, data, "hand-written")
    for v in variants:
        p, d = v.inputs(params, data) if v.inputs else (params, data)
        (hand, row), hand_call = hand_for(v.inputs, v.hand or w.grad, p, d, f"hand, {v.name}")
        m = run_variant(v, p, d, value, hand, hand_call, args)
        methods.append(m)
        if m["status"] == "ok":
            row["times"].append(m["hand_s"])
        elif not row["times"]:
            row["times"].append(measure(hand_call, args.batch_time, args.repeats)["median_s"])
    # Timed last, when the process is warm, as the hand-written rows are (the median of
    # their timings next to each spelling).
    methods[0]["median_s"] = measure(lambda: loss(*params), args.batch_time, args.repeats)[
        "median_s"
    ]
    for _, row in hands.values():
        row["median_s"] = statistics.median(row.pop("times"))
    base_hand = methods[1]["median_s"]
    for m in methods:
        if m["status"] == "ok" and "spelling" not in m:
            m["x_forward"] = m["median_s"] / methods[0]["median_s"]
            m["x_hand"] = m["median_s"] / base_hand
    return {"name": w.name, "target": w.target, "methods": methods}


def summarize(r: dict) -> dict:
    spellings = [m for m in r["methods"] if m.get("spelling")]
    ok = [m for m in spellings if m["status"] == "ok"]
    ratios = sorted(m["x_hand"] for m in ok)
    out = {
        "name": r["name"],
        "target": r["target"],
        "spellings": len(spellings),
        "ok": len(ok),
        "meet": sum(x <= r["target"] for x in ratios),
    }
    if ratios:
        worst = max(ok, key=lambda m: m["x_hand"])
        out |= {
            "min": ratios[0],
            "median": statistics.median(ratios),
            "max": ratios[-1],
            "worst": worst["method"],
        }
    return out


def print_summary(summaries: list[dict]) -> None:
    print(
        f"\n{'workload':<13} {'spellings':>9} {'ok':>3} {'min':>7} {'median':>7} {'max':>7} "
        f"{'target':>7} {'meet':>6}  slowest"
    )
    for s in summaries:
        if not s["ok"]:
            print(f"{s['name']:<13} {s['spellings']:>9} {0:>3}  (none ran)")
            continue
        print(
            f"{s['name']:<13} {s['spellings']:>9} {s['ok']:>3} {s['min']:>6.2f}× "
            f"{s['median']:>6.2f}× {s['max']:>6.2f}× {'≤' + format(s['target'], 'g') + '×':>7} "
            f"{str(s['meet']) + '/' + str(s['spellings']):>6}  {s['worst']}"
        )


def run_ops(args) -> list[dict]:
    """µs per operation of each scalar pattern: ``ad`` against the forward pass and,
    where one exists, the hand-written (forward-mode) gradient."""
    import variants_scalar

    return [op_row(*pattern, args) for pattern in variants_scalar.op_patterns(args.small)]


def op_row(label, fn, fargs, n_ops, expected, leaves, hand, args) -> dict:
    m = run_method(label, lambda: ad.gradient(fn, *fargs), leaves, expected, args)
    row = {"pattern": label, "ops": n_ops, "status": m["status"]}
    if m["status"] != "ok":
        return row | {"error": m["error"]}
    row["ad_s"] = m["median_s"]
    row["forward_s"] = measure(lambda: fn(*fargs), args.batch_time, args.repeats)["median_s"]
    if hand is not None:
        row["hand_s"] = measure(hand, args.batch_time, args.repeats)["median_s"]
    return row


def print_ops(rows: list[dict]) -> None:
    print(
        f"\n{'scalar pattern':<30} {'ops':>5} {'fwd/op':>7} {'ad/op':>7} "
        f"{'(ad−fwd)/op':>11} {'(ad−hand)/op':>12}   (µs)"
    )
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['pattern']:<30} {r['ops']:>5} {r['status'].upper()}  {r['error'][:80]}")
            continue
        n, us = r["ops"], 1e6
        hand = f"{(r['ad_s'] - r['hand_s']) / n * us:.3f}" if "hand_s" in r else "—"
        print(
            f"{r['pattern']:<30} {n:>5} {r['forward_s'] / n * us:>7.3f} {r['ad_s'] / n * us:>7.3f} "
            f"{(r['ad_s'] - r['forward_s']) / n * us:>11.3f} {hand:>12}"
        )


def straight_line(n_lines: int) -> types.FunctionType:
    """A generated straight-line scalar function of ``n_lines`` lines (``def`` and
    ``return`` included), three operations a line; its source is put in linecache as a
    file's would be, so ``ad`` reads it as any function's."""
    templates = (
        "v{i} = math.sin(v{a}) + 0.5 * v{b}",
        "v{i} = v{a} * math.cos(v{b}) - 0.25",
        "v{i} = math.tanh(v{a} - v{b}) * 1.5",
        "v{i} = 0.5 * v{a} + v{b} / (1.0 + v{a} * v{a})",
    )
    body = ["v0 = x * y", "v1 = math.exp(-x) + y"]
    for i in range(2, n_lines - 2):
        body.append(templates[i % len(templates)].format(i=i, a=i - 1, b=i - 2))
    name = f"straight_{n_lines}"
    lines = [f"def {name}(x, y):\n"] + [f"    {s}\n" for s in body]
    lines.append(f"    return v{len(body) - 1}\n")
    filename = f"<variants-{name}>"
    # An mtime of None keeps the entry through linecache.checkcache.
    linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    namespace = {"math": math, "__name__": "variants_generated"}
    exec(compile("".join(lines), filename, "exec"), namespace)
    return namespace[name]


def run_lengths(args) -> list[dict]:
    """First-call transform time of generated functions of growing length."""
    return [length_row(n, args) for n in ((10, 20) if args.small else (50, 200, 1000))]


def length_row(n_lines: int, args) -> dict:
    fn = straight_line(n_lines)
    params = (0.3, 0.7)
    # first_call re-makes the inputs "small" from a workload: these are already small.
    fake = types.SimpleNamespace(make=lambda rng, small: (params, ()), bind=lambda: fn)
    try:
        first, transform = first_call(fake, fn, params, args)
    except Exception as e:
        return {"lines": n_lines, "status": "failed", "error": harness.first_line(e)}
    return {
        "lines": n_lines,
        "status": "ok",
        "first_call_s": first,
        "transform_s": transform,
        "target_s": harness.TRANSFORM_TARGET_MS / 1000 * max(1.0, n_lines / 50),
    }


def print_lengths(rows: list[dict]) -> None:
    print(f"\n{'lines':>5} {'first call':>10} {'transform':>10} {'µs/line':>8} {'target':>8}")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['lines']:>5} FAILED  {r['error'][:90]}")
            continue
        t = r["transform_s"]
        if t is None:
            print(f"{r['lines']:>5} {fmt_time(r['first_call_s']):>10} {'n/a':>10}")
            continue
        print(
            f"{r['lines']:>5} {fmt_time(r['first_call_s']):>10} {fmt_time(t):>10} "
            f"{t / r['lines'] * 1e6:>8.0f} {'< ' + fmt_time(r['target_s']):>8} "
            f"{mark(t, r['target_s'])}"
        )


def run(args) -> int:
    """The ``--variants`` mode of ``run.py``: all four tables, then the JSON record.

    ``--small`` is a smoke run: tiny sizes and one short batch per timing (seconds, not
    the minutes that 85 spellings take at full precision)."""
    if args.small:
        args = argparse.Namespace(**{**vars(args), "batch_time": 1e-4, "repeats": 1})
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, single-threaded BLAS")
    started = time.perf_counter()
    variants = all_variants()
    results = []
    for w in WORKLOADS:
        if args.workloads and w.name not in args.workloads:
            continue
        print(f"  {w.name} ...", flush=True)
        results.append(run_workload(w, [v for v in variants if v.workload == w.name], args))
    record = {"workloads": results}
    print_methods(results, targeted=lambda m: m.get("spelling", False))
    for r in results:
        for m in r["methods"]:
            if "note" in m:
                print(f"note: {r['name']}, {m['method']}: {m['note']}")
    print(
        "\n×forward: the spelling's own forward pass; ×hand: the hand-written gradient on "
        "the same inputs (float32, numpy scalars: cast the same way), timed again right "
        "after each spelling; a hand row shows the median of those timings."
    )
    record["summary"] = [summarize(r) for r in results]
    print_summary(record["summary"])
    if not args.workloads:
        print("  scalar patterns ...", flush=True)
        record["ops"] = run_ops(args)
        print_ops(record["ops"])
        print("  transform by length ...", flush=True)
        record["lengths"] = run_lengths(args)
        print_lengths(record["lengths"])
    print(f"\ntotal {time.perf_counter() - started:.1f} s")
    if not args.no_json:
        harness.write_json(record, args, prefix="variants-")
    return 0
