"""A Griffe extension: show the ``>>>`` examples of docstrings as code blocks.

The four packages' docstrings hold plain doctest blocks (run by
``pytest --doctest-modules``), which Markdown would render as paragraphs, reading
``Tangent[Point](x=1.0)`` as a link. This wraps each block (its ``>>>`` and
``...`` lines and the expected output up to a blank line) in a ``pycon`` fence
when the API reference is built; the sources stay as they are.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Return ``text`` with each doctest block outside a fence wrapped in a ``pycon`` fence.

    >>> fence_doctests("Adds.\\n\\n>>> 1 + 1\\n2\\n\\nMore.").splitlines()
    ['Adds.', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'More.']
    """
    out: list[str] = []
    lines = text.splitlines()
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the doctest blocks of every docstring the API reference renders."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
