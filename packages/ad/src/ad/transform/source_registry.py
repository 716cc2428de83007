"""The trees of the code the transform generated, kept so it can be read again.

Reverse mode over a pushforward (nested AD) differentiates generated code,
which has no source file: ``register_generated`` keeps the tree a code object
was compiled from, and ``source.get_source`` returns it (``generated_tree``).
``mark_derived`` records the functions a transformed function defines, compiled
by ad from the user's own source: their source is the file's by construction.
Both are held by the code object's identity, weakly: an entry leaves with its
code.
"""

from __future__ import annotations

import ast
import copy
import re
import types
import weakref
from typing import Any

from ad.transform.codegen import locate

__all__ = [
    "constant_freevars",
    "generated_tree",
    "is_derived",
    "mark_derived",
    "register_generated",
]


# Code that the transform itself generated (a pushforward), by code object: its
# FunctionDef, file, and the free variables that are runtime helpers (constants).
# By ``id(code)`` -> a weak reference to it, and the entry: the entry leaves with
# its code. ``_GENERATED_BY_HASH`` finds an equal code object (the same tree
# compiled again: a generated function nested in a function ad transforms).
_GENERATED: dict[int, tuple[weakref.ref, tuple[ast.FunctionDef, str, frozenset[str]]]] = {}
_GENERATED_BY_HASH: dict[int, tuple[int, ...]] = {}


def generated_tree(code: types.CodeType) -> tuple[ast.FunctionDef, str, frozenset[str]] | None:
    hit = _GENERATED.get(id(code))
    if hit is not None and hit[0]() is code:
        return hit[1]
    for i in _GENERATED_BY_HASH.get(hash(code), ()):
        hit = _GENERATED.get(i)
        if hit is not None and hit[0]() == code:
            return hit[1]
    return None


def _unregister(
    i: int, h: int, generated: dict = _GENERATED, by_hash: dict = _GENERATED_BY_HASH
) -> Any:
    def forget(ref: weakref.ref) -> None:
        hit = generated.get(i)
        if hit is not None and hit[0] is ref:
            generated.pop(i, None)
            left = tuple(j for j in by_hash.get(h, ()) if j != i)
            if left:
                by_hash[h] = left
            else:
                by_hash.pop(h, None)

    return forget


#: Code objects the transform compiled from the user's own source: the functions
#: defined inside a transformed function (its generated code defines them from
#: the parsed tree). Their source is the file's by construction (``get_source``
#: does not check them again); by identity, weakly, as ``_GENERATED``.
_DERIVED: dict[int, weakref.ref] = {}


def _forget_derived(i: int, derived: dict = _DERIVED) -> Any:
    def forget(ref: weakref.ref) -> None:
        if derived.get(i) is ref:
            derived.pop(i, None)

    return forget


def mark_derived(code: types.CodeType) -> None:
    """Record the code objects nested in generated ``code`` (see ``_DERIVED``)."""
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            i = id(c)
            ref = _DERIVED.get(i)
            if ref is None or ref() is not c:
                _DERIVED[i] = weakref.ref(c, _forget_derived(i))
            mark_derived(c)


def is_derived(code: types.CodeType) -> bool:
    ref = _DERIVED.get(id(code))
    return ref is not None and ref() is code


def register_generated(
    code: types.CodeType, tree: ast.FunctionDef, filename: str, helpers: frozenset[str]
) -> None:
    """Remember the tree ``code`` was compiled from, so that generated code can
    itself be differentiated (reverse mode over a pushforward: nested AD).

    The copy is located now, once: the passes that transform it again build on
    located input (see ``anf``)."""
    kept = _renamed_temporaries(copy.deepcopy(tree))
    locate(kept, kept.lineno)
    i, h = id(code), hash(code)
    _GENERATED[i] = (weakref.ref(code, _unregister(i, h)), (kept, filename, helpers))
    _GENERATED_BY_HASH[h] = (*_GENERATED_BY_HASH.get(h, ()), i)


_TEMPORARY = re.compile(r"_ad_(t|nl|ft)\d+")


def _renamed_temporaries(tree: ast.FunctionDef) -> ast.FunctionDef:
    """Rename the normaliser's temporaries (``_ad_t1``...) so that normalising the
    generated code again cannot mint a name it already uses."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and _TEMPORARY.fullmatch(node.id):
            node.id = "_ad_g" + node.id[3:]
        elif isinstance(node, ast.arg) and _TEMPORARY.fullmatch(node.arg):
            node.arg = "_ad_g" + node.arg[3:]
    return tree


def constant_freevars(code: types.CodeType) -> frozenset[str]:
    """The free variables of generated code that are runtime helpers, not user data."""
    entry = generated_tree(code)
    return entry[2] if entry is not None else frozenset()
