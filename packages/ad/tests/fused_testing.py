"""What the fused-region tests share: switching the fused path off, refusing the
per-operation path, and defining a function in a file (the transform reads source)."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import textwrap

from ad.runtime.scalar_paths import FLAGS
from ad.transform.build import _CELLS

_counter = itertools.count()

#: The helpers the per-operation path calls for a region's operations.
PER_OPERATION = (
    "_ad_fasti_add",
    "_ad_fasti_add_into",
    "_ad_fasti_sub",
    "_ad_fasti_sub_into",
    "_ad_fasti_mul",
    "_ad_fasti_truediv",
    "_ad_fasti_pow",
    "_ad_rcall",
)


@contextlib.contextmanager
def per_operation():
    """Run the per-operation path: what every region falls back to."""
    FLAGS.fused = False
    try:
        yield
    finally:
        FLAGS.fused = True


@contextlib.contextmanager
def fallback_refused(*helpers):
    """Make the per-operation ``helpers`` (all of ``PER_OPERATION`` when none are
    named) raise, so only the fused path can succeed."""

    def refuse(*args, **kwargs):
        raise AssertionError("the per-operation path ran")

    saved = {h: _CELLS[h].cell_contents for h in helpers or PER_OPERATION if h in _CELLS}
    try:
        for h in saved:
            _CELLS[h].cell_contents = refuse
        yield
    finally:
        for h, v in saved.items():
            _CELLS[h].cell_contents = v


def load(source, tmp_path):
    """A function ``f`` defined by ``source`` in a file (the transform reads source)."""
    path = tmp_path / f"fused_{next(_counter)}.py"
    path.write_text("import numpy as np\n\n" + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f
