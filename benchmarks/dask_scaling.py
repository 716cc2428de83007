"""The elementwise workload beyond memory: ad.gradient on dask arrays.

``loss(x) = sum(sin(x) * x + exp(-x²))`` (the elementwise workload of
``workloads.py``) at 10⁸ entries on a ``dask.distributed.LocalCluster``: the
forward value, ad's gradient and the hand-written gradient are each computed by
the cluster (each summed there, not gathered), and the figures are gradient time
÷ forward time and ÷ hand-written time. Beside it, the same ratio with numpy at
a size numpy holds comfortably (10⁷ entries by default). ad builds the
gradient's graph without computing anything; the cluster computes it.

    python benchmarks/dask_scaling.py [--n 100000000] [--numpy-n 10000000]
        [--chunk 5000000] [--workers 2] [--repeats 3]

Needs ``dask[distributed]``; not part of ``run.py`` (it takes minutes, and memory).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import ad


def loss(x: Any) -> Any:
    return np.sum(np.sin(x) * x + np.exp(-x * x))


def hand_gradient(x: Any) -> Any:
    """The gradient of ``loss`` written out: the baseline ad's gradient is held to."""
    return np.sin(x) + x * np.cos(x) - 2 * x * np.exp(-x * x)


def _best(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def dask_ratio(n: int, chunk: int, workers: int, repeats: int) -> dict:
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True) as cluster:
        with Client(cluster):
            x = da.random.default_rng(0).uniform(0.5, 1.5, n, chunks=chunk)
            t = time.perf_counter()
            (g,) = ad.gradient(loss, x)  # builds the graph only
            build = time.perf_counter() - t
            forward = _best(lambda: loss(x).compute(), repeats)
            # the gradient is reduced on the cluster, as the loss is (not gathered here)
            gradient = _best(lambda: ad.gradient(loss, x)[0].sum().compute(), repeats)
            hand = _best(lambda: hand_gradient(x).sum().compute(), repeats)
            # the same check as the other workloads: the gradient is the hand-written one
            assert np.allclose(*dask.compute(g[:1000], hand_gradient(x[:1000])))
    return {"n": n, "forward": forward, "gradient": gradient, "hand": hand, "build": build}


def numpy_ratio(n: int, repeats: int) -> dict:
    x = np.random.default_rng(0).uniform(0.5, 1.5, n)
    forward = _best(lambda: loss(x), repeats)
    gradient = _best(lambda: ad.gradient(loss, x), repeats)
    hand = _best(lambda: hand_gradient(x), repeats)
    return {"n": n, "forward": forward, "gradient": gradient, "hand": hand}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10**8)
    p.add_argument("--numpy-n", type=int, default=10**7)
    p.add_argument("--chunk", type=int, default=5 * 10**6)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    rows = [
        ("numpy", numpy_ratio(a.numpy_n, a.repeats)),
        (
            f"dask, LocalCluster({a.workers} workers)",
            dask_ratio(a.n, a.chunk, a.workers, a.repeats),
        ),
    ]
    print("| arrays | entries | forward s | gradient s | hand-written s | ÷ forward | ÷ hand |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(
            f"| {name} | {r['n']:.0e} | {r['forward']:.3f} | {r['gradient']:.3f} | "
            f"{r['hand']:.3f} | {r['gradient'] / r['forward']:.2f} | "
            f"{r['gradient'] / r['hand']:.2f} |"
        )
    print(f"\nad.gradient built the dask graph in {rows[1][1]['build'] * 1e3:.1f} ms (no compute).")


if __name__ == "__main__":
    main()
