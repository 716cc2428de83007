"""Run the benchmark suite: ``python benchmarks/run.py`` (or ``tox -e bench``).

``--help`` lists the options (a subset of workloads, ``--small``, ``--profile NAME``).
The work is in ``harness.py``; this entry point only pins BLAS to one thread first.
"""

import os
import sys

# Single-threaded BLAS, set before numpy is first imported: the ratios compare
# Python-level overhead, and DESIGN.md's peer numbers were taken this way.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

from harness import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
