"""The source transform, as an ordered list of passes over the stdlib ``ast``.

source -> protocols -> writers -> fence -> desugar -> anf -> inlining -> holders -> activity
-> reverse (and fuse, which it calls on each block outside loops) -> codegen,
cached per code object (and per whether the closure's captured variables are
differentiated). Forward mode shares the front (``front``: up to activity) and
replaces reverse with ``forward`` (``forward_transformed``, its own cache).
Each pass is a module whose docstring states its output form.

The modules that run the passes: ``pipeline`` (the shared front), ``build``
(the reverse pipeline, compiled), ``cache`` (each code object's transforms,
built on first use), ``listing`` (the generated code as source). The passes'
own parts: ``source_registry``, ``source_parse``, ``source_belongs`` and
``source_errors`` (source); ``anf_base``, ``anf_expressions`` and
``anf_control`` (anf); ``reverse_tape``, ``reverse_calls``,
``reverse_control``, ``reverse_closures`` and ``reverse_regions`` (reverse);
``fuse_adjoint`` and ``fuse_emit`` (fuse).
"""

from __future__ import annotations

from ad.transform.build import PURE_PREFIX, Transformed
from ad.transform.cache import forward_transformed, pure_transformed, star_lengths, transformed
from ad.transform.inline_guards import check_guards_after
from ad.transform.listing import adjoint_source
from ad.transform.pipeline import Front, front

__all__ = [
    "PURE_PREFIX",
    "Front",
    "Transformed",
    "adjoint_source",
    "check_guards_after",
    "forward_transformed",
    "front",
    "pure_transformed",
    "star_lengths",
    "transformed",
]
