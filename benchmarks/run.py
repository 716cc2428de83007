"""Run the benchmark suite: ``python benchmarks/run.py`` (or ``tox -e bench``).

``--help`` lists the options (a subset of workloads, ``--small``, ``--profile NAME``).
The work is in ``harness.py``; this entry point only pins BLAS to one thread first.
``--hvp`` measures Hessian-vector products instead (``hvp.py``, its own ``--help``).
"""

import os
import sys

# Single-threaded BLAS, set before numpy is first imported: the ratios compare
# Python-level overhead, and DESIGN.md's peer numbers were taken this way.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

from harness import main  # noqa: E402


def run_hvp(argv: list[str]) -> int:
    """``--hvp``: ``ad.hvp`` against ``ad.gradient`` on the array workloads (hvp.py)."""
    import hvp

    return hvp.main([a for a in argv if a != "--hvp"])


if __name__ == "__main__":
    sys.exit(run_hvp(sys.argv[1:]) if "--hvp" in sys.argv[1:] else main())
