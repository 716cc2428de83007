"""The benchmark harness behind ``run.py``: timing, checks, memory, tables, JSON.

For each workload in ``workloads.py``, in one process: the forward pass, the
hand-written numpy gradient, ``ad.gradient`` and every installed peer (autograd, JAX
eager and jit, PyTorch eager). Each method's gradient is first checked against the
hand-written one; a method that raises or disagrees is reported, not timed. Times are
medians over repeated batches whose size adapts to the call's cost (as ``timeit``
does), shown as ratios to the forward pass and to the hand-written gradient, next to
DESIGN.md's targets. Also measured: the first ``ad.gradient`` call after clearing the
transform cache, peak memory of one gradient call (tracemalloc, ``ad`` against
hand-written), and on scalar workloads the overhead per primitive operation.
Results go to the terminal and to ``benchmarks/results/<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import inspect
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import peers
from workloads import WORKLOADS

import ad

HERE = Path(__file__).resolve().parent

TRANSFORM_TARGET_MS = 5.0  # per function of up to 50 lines (DESIGN.md)
MEMORY_TARGET = 1.5  # peak memory of ad's gradient call ÷ the hand-written one's


def measure(fn, batch_time: float, repeats: int) -> dict:
    """Median seconds per call of ``fn``: batches sized to last ``batch_time`` each."""
    return measure_interleaved((fn,), batch_time, repeats)[0]


def measure_interleaved(fns, batch_time: float, repeats: int) -> list[dict]:
    """``measure`` of several functions whose batches take turns, so that a change in
    the load of a shared machine falls on all of them alike and their ratios hold."""
    numbers, samples = [], []
    for fn in fns:
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                fn()
            elapsed = time.perf_counter() - start
            if elapsed >= batch_time:
                break
            # Grow like timeit.autorange, aiming straight at the batch time once known.
            number = max(number * 2, int(number * batch_time / max(elapsed, 1e-9)))
        numbers.append(number)
        samples.append([elapsed / number])
    for _ in range(repeats - 1):
        for fn, number, times in zip(fns, numbers, samples):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - start) / number)
    return [
        {"median_s": statistics.median(times), "number": number, "repeats": repeats}
        for number, times in zip(numbers, samples)
    ]


def peak_memory(fn) -> int:
    """Peak bytes allocated (above what was live before) during one call of ``fn``."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - base


def check(got, want, rtol: float = 1e-7, atol: float = 1e-10) -> None:
    """Raise AssertionError unless ``got`` matches the hand-written gradient ``want``
    (``atol`` is relative to the largest entry of each gradient)."""
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} gradients, expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g is None:
            raise AssertionError(f"no gradient for parameter {i}")
        g, w = np.asarray(g, dtype=float), np.asarray(w, dtype=float)
        if g.shape != w.shape:
            raise AssertionError(f"parameter {i}: shape {g.shape}, expected {w.shape}")
        scale = float(np.max(np.abs(w))) if w.size else 1.0
        if not np.allclose(g, w, rtol=rtol, atol=atol * scale):
            diff = float(np.max(np.abs(g - w)))
            raise AssertionError(f"parameter {i}: max |diff| {diff:.3g} (max |grad| {scale:.3g})")


def first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def clear_transform_cache() -> bool:
    transform = getattr(ad, "transform", None)
    # ``ad.transform.cache._CACHE``; ``ad.transform._CACHE`` before the cache had its module
    cache = getattr(getattr(transform, "cache", None), "_CACHE", None)
    if cache is None:
        cache = getattr(transform, "_CACHE", None)
    if cache is None:
        return False
    cache.clear()
    return True


TRANSFORM_SAMPLES = 5


def first_call(w, loss, params, args) -> tuple[float, float | None]:
    """Seconds of the first ``ad.gradient`` call after clearing the transform cache, and
    of the transform alone (None if the cache could not be cleared).

    The transform alone is a first call minus a warm call, both measured on the
    workload's small inputs (the transform depends on the code, not the sizes), so the
    noise of a large call does not swamp it: the median over ``TRANSFORM_SAMPLES``
    first calls, each after clearing the cache, since one sample on a busy machine
    may read twice the rest.
    """
    clear_transform_cache()
    start = time.perf_counter()
    ad.gradient(loss, *params)
    first = time.perf_counter() - start
    small_params, small_data = w.make(np.random.default_rng(args.seed), small=True)
    small_loss = w.bind(*small_data)
    firsts = []
    for _ in range(TRANSFORM_SAMPLES):
        if not clear_transform_cache():
            return first, None
        start = time.perf_counter()
        ad.gradient(small_loss, *small_params)
        firsts.append(time.perf_counter() - start)
    warm = measure(lambda: ad.gradient(small_loss, *small_params), 0.01, 5)["median_s"]
    return first, max(statistics.median(firsts) - warm, 0.0)


def source_lines(*fns) -> int:
    total = 0
    for fn in fns:
        try:
            total += len(inspect.getsource(fn).splitlines())
        except (OSError, TypeError):
            pass
    return total


def run_method(name, call, to_numpy, hand, args, tol=(1e-7, 1e-10)) -> dict:
    """Check one method's gradient, then time it; never raises."""
    try:
        check(to_numpy(call()), hand, *tol)
    except AssertionError as e:
        return {"method": name, "status": "wrong", "error": str(e)}
    except Exception as e:
        return {"method": name, "status": "failed", "error": first_line(e)}
    return {"method": name, "status": "ok", **measure(call, args.batch_time, args.repeats)}


def run_workload(index, w, installed, args) -> dict:
    rng = np.random.default_rng(args.seed)
    params, data = w.make(rng, args.small)
    loss = w.bind(*data)
    hand = w.grad(*params, *data)
    out = {"name": w.name, "target": w.target, "n_ops": w.n_ops if not args.small else None}
    methods = [
        {
            "method": "forward",
            "status": "ok",
            **measure(lambda: loss(*params), args.batch_time, args.repeats),
        },
        {
            "method": "hand-written",
            "status": "ok",
            **measure(lambda: w.grad(*params, *data), args.batch_time, args.repeats),
        },
    ]

    def ad_call():
        return ad.gradient(loss, *params)

    ad_result = run_method("ad", ad_call, tuple, hand, args)
    methods.append(ad_result)
    if ad_result["status"] == "ok":
        out["first_call_s"], out["transform_s"] = first_call(w, loss, params, args)
    for peer in installed:
        try:
            call, to_numpy = peer.prepare(index, params, data)
        except Exception as e:
            methods.append({"method": peer.name, "status": "failed", "error": first_line(e)})
            continue
        methods.append(run_method(peer.name, call, to_numpy, hand, args))

    fwd, hnd = methods[0]["median_s"], methods[1]["median_s"]
    for m in methods:
        if m["status"] == "ok":
            m["x_forward"] = m["median_s"] / fwd
            m["x_hand"] = m["median_s"] / hnd
    out["methods"] = methods
    if ad_result["status"] == "ok":
        lines = source_lines(loss, w.f)
        out["source_lines"] = lines
        out["transform_target_s"] = TRANSFORM_TARGET_MS / 1000 * max(1.0, lines / 50)
        out["memory_ad"] = peak_memory(ad_call)
        out["memory_hand"] = peak_memory(lambda: w.grad(*params, *data))
        out["memory_ratio"] = out["memory_ad"] / max(out["memory_hand"], 1)
        if out["n_ops"]:
            out["overhead_per_op_us"] = (ad_result["median_s"] - hnd) / out["n_ops"] * 1e6
    return out


def fmt_time(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def fmt_bytes(b: int) -> str:
    for unit, scale in (("MB", 2**20), ("kB", 2**10)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b} B"


def mark(value, target) -> str:
    return "pass" if value <= target else "MISS"


def print_methods(results: list[dict], targeted=lambda m: m["method"] == "ad") -> None:
    """One row per method of each workload: median time, ×forward, ×hand, and for the
    methods ``targeted`` selects, the workload's target and a pass/MISS mark."""
    width = max([13] + [len(m["method"]) for r in results for m in r["methods"]])
    print(
        f"\n{'workload':<13} {'method':<{width}} {'median':>10} {'×forward':>9} {'×hand':>8}  target"
    )
    for r in results:
        for i, m in enumerate(r["methods"]):
            name = r["name"] if i == 0 else ""
            if m["status"] != "ok":
                print(
                    f"{name:<13} {m['method']:<{width}} {m['status'].upper():>10}  "
                    f"{m['error'][:100]}"
                )
                continue
            target = ""
            if targeted(m):
                target = f"≤ {r['target']:g}×  {mark(m['x_hand'], r['target'])}"
            print(
                f"{name:<13} {m['method']:<{width}} {fmt_time(m['median_s']):>10} "
                f"{m['x_forward']:>8.2f}× {m['x_hand']:>7.2f}×  {target}"
            )


def print_tables(results: list[dict]) -> None:
    print_methods(results)
    print(
        f"\n{'workload':<13} {'ad/hand':>8} {'target':>7} {'':4}  {'first call':>10} "
        f"{'transform':>10} {'lines':>5} {'':4}  {'mem ad':>8} {'mem hand':>8} {'ratio':>6} {'':4}"
        f"  {'µs/op':>6}"
    )
    for r in results:
        a = r["methods"][2]
        if a["status"] != "ok":
            print(f"{r['name']:<13} {'ad ' + a['status'].upper():>8}  {a['error'][:90]}")
            continue
        t = r["transform_s"]
        transform = "n/a" if t is None else fmt_time(t)
        t_mark = "" if t is None else mark(t, r["transform_target_s"])
        per_op = f"{r['overhead_per_op_us']:.2f}" if "overhead_per_op_us" in r else ""
        print(
            f"{r['name']:<13} {a['x_hand']:>7.2f}× {'≤' + format(r['target'], 'g') + '×':>7} "
            f"{mark(a['x_hand'], r['target']):4}  {fmt_time(r['first_call_s']):>10} "
            f"{transform:>10} {r['source_lines']:>5} {t_mark:4}  {fmt_bytes(r['memory_ad']):>8} "
            f"{fmt_bytes(r['memory_hand']):>8} {r['memory_ratio']:>5.2f}× "
            f"{mark(r['memory_ratio'], MEMORY_TARGET):4}  {per_op:>6}"
        )
    print(
        f"\ntargets: ad/hand as above; transform < {TRANSFORM_TARGET_MS:g} ms per function of "
        f"≤ 50 lines (transform = first call − warm call, on small inputs); peak memory ≤ "
        f"{MEMORY_TARGET}× "
        "hand-written; µs/op = (ad − hand-written) ÷ primitive operations."
    )


def environment(installed, missing) -> dict:
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "blas_threads": {
            v: os.environ.get(v)
            for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        },
        "peers": {p.name: p.version for p in installed},
        "peers_missing": missing,
    }


def profile(name: str, args) -> None:
    """Print the top 15 functions by own time of ``ad.gradient`` on one workload."""
    w = next(w for w in WORKLOADS if w.name == name)
    params, data = w.make(np.random.default_rng(args.seed), args.small)
    loss = w.bind(*data)
    ad.gradient(loss, *params)
    number = measure(lambda: ad.gradient(loss, *params), 0.5, 1)["number"]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(number):
        ad.gradient(loss, *params)
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("tottime").print_stats(15)
    print(f"\n== cProfile of ad.gradient on {name}, {number} calls ==")
    print(stream.getvalue())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help="names to run (default: all)")
    parser.add_argument("--batch-time", type=float, default=0.08, help="seconds per timed batch")
    parser.add_argument("--repeats", type=int, default=7, help="batches per method (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--small",
        action="store_true",
        help="tiny sizes (a smoke run; with --variants, one short batch a timing too)",
    )
    parser.add_argument("--no-peers", action="store_true", help="skip autograd/JAX/PyTorch")
    parser.add_argument("--no-json", action="store_true", help="do not write results JSON")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="measure every spelling of each workload instead (variants.py)",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="WORKLOAD",
        help="print a cProfile of ad.gradient on WORKLOAD instead",
    )
    args = parser.parse_args(argv)

    if args.profile:
        for name in args.profile:
            profile(name, args)
        return 0
    known = {w.name for w in WORKLOADS}
    unknown = set(args.workloads) - known
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(known)}")
    if args.variants:
        import variants  # only this mode needs the spellings

        return variants.run(args)
    installed, missing = ([], {}) if args.no_peers else peers.available()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, single-threaded BLAS")
    print("peers: " + (", ".join(f"{p.name} {p.version}" for p in installed) or "none"))
    if missing:
        print("not installed: " + ", ".join(missing))

    started = time.perf_counter()
    results = []
    for index, w in enumerate(WORKLOADS):
        if args.workloads and w.name not in args.workloads:
            continue
        print(f"  {w.name} ...", flush=True)
        results.append(run_workload(index, w, installed, args))
    print_tables(results)
    print(f"\ntotal {time.perf_counter() - started:.1f} s")

    if not args.no_json:
        write_json(results, args, installed, missing)
    return 0


def write_json(results, args, installed=(), missing=None, prefix: str = "") -> None:
    """Write ``results`` with the environment to ``results/<prefix><timestamp>.json``."""
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    path = out_dir / f"{prefix}{time.strftime('%Y%m%dT%H%M%S')}.json"
    record = {
        "environment": environment(installed, missing or {}),
        "args": vars(args),
        "results": results,
    }
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path.relative_to(HERE.parent)}")
