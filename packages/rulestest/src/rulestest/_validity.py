"""Is ``dx`` a valid tangent of the primal ``x``? Type, shape, dtype, real vs complex.

A valid tangent is a fixed point of ``ProjectTo(x)`` (up to Python-float
subclasses such as ``np.float64``), so rules that project every cotangent pass.
Each problem is reported with the path into the structure and a hint.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from rulescore import AbstractZero, CotangentError, NoTangent, ProjectTo, Tangent, unthunk

from ._to_vec import StructureMismatch, _Entries, layout

__all__ = ["describe", "tangent_problems"]


def describe(x: Any) -> str:
    """A short description of a value: its type, and shape and dtype for arrays."""
    x = unthunk(x)
    if isinstance(x, np.ndarray):
        return f"ndarray of shape {x.shape} and dtype {x.dtype}"
    if isinstance(x, np.generic):
        return f"numpy scalar {type(x).__name__}"
    if isinstance(x, (AbstractZero, Tangent)):
        return repr(x) if isinstance(x, AbstractZero) else type(x).__name__
    if isinstance(x, (tuple, list, dict)):
        return f"{type(x).__name__} of length {len(x)}"
    return type(x).__name__


def _has_no_tangent(x: Any) -> bool:
    try:
        return ProjectTo(x)(1.0) is NoTangent()
    except Exception:
        return False


def tangent_problems(x: Any, dx: Any, path: str) -> list[str]:
    """Every reason why ``dx`` is not a valid tangent of ``x`` (empty if it is)."""
    dx = unthunk(dx)
    if isinstance(dx, AbstractZero):
        return []
    if _has_no_tangent(x):
        return [
            f"{path}: the primal is a {describe(x)}, which has no tangent, so its tangent must be "
            f"NoTangent(); got {describe(dx)} {_short(dx)}"
        ]
    node = layout(x)
    if isinstance(node, _Entries) and not isinstance(x, Tangent):
        return _container_problems(node, x, dx, path)
    if isinstance(x, (numbers.Number, np.ndarray, np.generic)):
        return _leaf_problems(x, dx, path)
    return []


def _container_problems(node: _Entries, x: Any, dx: Any, path: str) -> list[str]:
    if node.kind == "fields" and not isinstance(dx, Tangent):
        return [
            f"{path}: the tangent of a {type(x).__name__} must be a Tangent[{type(x).__name__}], "
            f"got {describe(dx)}.\n  To fix: return Tangent[{type(x).__name__}](field=...) "
            "or ProjectTo(x)(dx)."
        ]
    try:
        get = node._tangent_entries(dx, path)
    except StructureMismatch as e:
        return [f"{e.path}: tangent structure does not match the primal: {e.message}"]
    problems: list[str] = []
    for k, child in zip(node.keys, node.children):
        problems.extend(tangent_problems(child.primal, get(k), node.subpath(path, k)))
    return problems


def _short(x: Any) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def _leaf_problems(x: Any, dx: Any, path: str) -> list[str]:
    fix = "  To fix: project the cotangent with ProjectTo(x)(dx) before returning it."
    if not isinstance(dx, (numbers.Number, np.ndarray, np.generic)) or isinstance(dx, bool):
        return [f"{path}: expected a number or array for a {describe(x)}, got {describe(dx)}"]
    x_shape, dx_shape = np.shape(x), np.shape(dx)
    if x_shape != dx_shape:
        hint = ""
        try:
            if np.broadcast_shapes(x_shape, dx_shape) == dx_shape:
                hint = (
                    "\n  The cotangent has the shape of a broadcast result: sum it over the "
                    "broadcast dimensions (a forgotten unbroadcast?)."
                )
        except ValueError:
            pass
        return [
            f"{path}: the tangent has shape {dx_shape} but the primal has shape {x_shape} "
            f"(primal: {describe(x)}; tangent: {describe(dx)}){hint}\n{fix}"
        ]
    x_complex = np.iscomplexobj(x)
    if np.iscomplexobj(dx) and not x_complex:
        return [
            f"{path}: complex tangent ({describe(dx)}) for a real primal ({describe(x)}); "
            f"the tangent of a real number is real.\n{fix}"
        ]
    if isinstance(x, (int, float, complex)) and not isinstance(x, np.generic):
        want = complex if x_complex else float
        if not isinstance(dx, want):
            return [
                f"{path}: the tangent of a Python {type(x).__name__} must be a Python "
                f"{want.__name__}, got {describe(dx)} {_short(dx)}\n{fix}"
            ]
    elif isinstance(dx, (float, complex)) and not isinstance(dx, np.generic):
        # A Python float for a float64 numpy scalar (what numpy returns for Python
        # scalar inputs) loses nothing; accept it, like np.float64 for a float.
        want = complex if x_complex else float
        if isinstance(x, np.ndarray):
            return [
                f"{path}: the tangent of a {describe(x)} must be an ndarray, got a Python "
                f"{type(dx).__name__}\n{fix}"
            ]
        if x.dtype != np.dtype(want):
            return [
                f"{path}: tangent dtype {want.__name__} (a Python {type(dx).__name__}) for a "
                f"primal of dtype {x.dtype}; a tangent keeps its primal's precision\n{fix}"
            ]
    else:
        want_dtype = (
            np.dtype(np.float64) if np.asarray(x).dtype.kind in "iu" else np.asarray(x).dtype
        )
        if not isinstance(dx, (np.ndarray, np.generic)) or dx.dtype != want_dtype:
            got = dx.dtype if isinstance(dx, (np.ndarray, np.generic)) else type(dx).__name__
            return [
                f"{path}: tangent dtype {got} for a primal of dtype {np.asarray(x).dtype} "
                f"(expected {want_dtype}; a tangent keeps its primal's precision)\n{fix}"
            ]
        if isinstance(x, np.ndarray) != isinstance(dx, np.ndarray):
            return [
                f"{path}: the tangent of a {describe(x)} must be "
                f"{'an ndarray' if isinstance(x, np.ndarray) else 'a numpy scalar'}, "
                f"got {describe(dx)}\n{fix}"
            ]
    try:
        ProjectTo(x)(dx)
    except CotangentError as e:
        return [f"{path}: ProjectTo rejects the tangent: {e}"]
    return []
