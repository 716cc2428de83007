"""Hessian-vector products on the array workloads: ``python benchmarks/run.py --hvp``.

For each array workload (``mlp_small``, ``mlp_large``, ``gauss_logpdf``,
``elementwise``, ``rosenbrock``), in one process: ``ad.hvp(loss, params, v)``
along a random direction ``v`` (symmetric where the parameter is), checked first
against central differences of ``ad.gradient`` along ``v`` (the best of three step sizes), then timed against
``ad.gradient`` with interleaved batches (``harness.measure_interleaved``). The
ratio ``hvp ÷ gradient`` is what JAX's ``jvp`` of ``grad`` costs about 2-3× of.
"""

from __future__ import annotations

import argparse
import functools
import sys

import numpy as np
from harness import measure_interleaved
from workloads import WORKLOADS

import ad

ARRAY_WORKLOADS = ("mlp_small", "mlp_large", "gauss_logpdf", "elementwise", "rosenbrock")


def direction(rng: np.random.Generator, params: tuple, symmetric: tuple) -> tuple:
    """A random unit-scale direction shaped like ``params`` (symmetric where asked)."""
    out = []
    for i, p in enumerate(params):
        v = rng.standard_normal(np.shape(p))
        if i in symmetric:
            v = 0.5 * (v + v.T)
        out.append(v)
    return tuple(out)


def fd_hvp(loss, params: tuple, v: tuple, eps: float) -> tuple:
    """``(∇f(p + εv) − ∇f(p − εv)) / 2ε``: the Hessian times ``v`` by differences."""
    plus = ad.gradient(loss, *(p + eps * d for p, d in zip(params, v)))
    minus = ad.gradient(loss, *(p - eps * d for p, d in zip(params, v)))
    return tuple((a - b) / (2 * eps) for a, b in zip(plus, minus))


def rel_error(got: tuple, want: tuple) -> float:
    """The largest error of ``got`` relative to the largest entry of each of ``want``."""
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if g is None:
            raise AssertionError(f"no Hessian-vector product for parameter {i}")
        scale = max(float(np.max(np.abs(w))), 1e-300)
        worst = max(worst, float(np.max(np.abs(np.asarray(g) - w))) / scale)
    return worst


def run(args: argparse.Namespace) -> int:
    names = args.workloads or ARRAY_WORKLOADS
    unknown = set(names) - set(ARRAY_WORKLOADS)
    if unknown:
        print(f"--hvp runs the array workloads {ARRAY_WORKLOADS}; not {sorted(unknown)}")
        return 2
    print(f"numpy {np.__version__}, single-threaded BLAS; ad.hvp ÷ ad.gradient, same run")
    print(f"{'workload':<14} {'gradient':>11} {'hvp':>11} {'hvp÷grad':>9} {'fd check':>9}")
    failed = 0
    for w in WORKLOADS:
        if w.name not in names:
            continue
        rng = np.random.default_rng(args.seed)
        params, data = w.make(rng, small=args.small)
        loss = w.bind(*data)
        v = direction(rng, params, w.symmetric)
        try:
            hv = ad.hvp(loss, params, v)
            # The best of a few steps: a ReLU kink within ε of a pre-activation
            # (mlp_large has one 3e-6 from zero) spoils one step size's differences.
            errs = [rel_error(hv, fd_hvp(loss, params, v, eps)) for eps in (1e-6, 1e-7, 1e-8)]
            err = min(errs)
            if err > 1e-4:
                raise AssertionError(f"relative error {err:.2e} against differences")
        except Exception as e:  # a broken workload is reported, the others still run
            print(f"{w.name:<14} FAILED {type(e).__name__}: {str(e).splitlines()[0]}")
            failed += 1
            continue
        t_grad, t_hvp = measure_interleaved(
            (
                functools.partial(ad.gradient, loss, *params),
                functools.partial(ad.hvp, loss, params, v),
            ),
            args.batch_time,
            args.repeats,
        )
        g, h = t_grad["median_s"], t_hvp["median_s"]
        print(f"{w.name:<14} {g * 1e3:>9.3f}ms {h * 1e3:>9.3f}ms {h / g:>8.2f}× {err:>9.1e}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help=f"names to run (default: {ARRAY_WORKLOADS})")
    parser.add_argument("--batch-time", type=float, default=0.08, help="seconds per timed batch")
    parser.add_argument("--repeats", type=int, default=7, help="batches per method (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small", action="store_true", help="tiny sizes (a smoke run)")
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
