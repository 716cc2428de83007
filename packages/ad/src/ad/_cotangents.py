"""Small helpers shared by ad's structural rules: container cotangents."""

from __future__ import annotations

import sys
from typing import Any

from rulescore import AbstractZero, NoTangent, Tangent, ZeroTangent, unthunk

from .errors import CotangentShapeError

_Z = ZeroTangent()
_NO = NoTangent()

__all__ = ["entries", "from_list_ct", "np_module", "zero_like"]


def np_module() -> Any:
    return sys.modules.get("numpy")


def entries(ȳ: Any, n: int, what: str) -> tuple:
    """The entry cotangents of a tuple/list cotangent (zeros expand to n zeros)."""
    ȳ = unthunk(ȳ)
    if isinstance(ȳ, AbstractZero):
        return (_Z,) * n
    if isinstance(ȳ, Tangent):
        ȳ = ȳ._backing if isinstance(ȳ._backing, tuple) else tuple(ȳ)
    if not isinstance(ȳ, (tuple, list)) or len(ȳ) != n:
        raise CotangentShapeError(
            f"the cotangent of {what} must have {n} entries, got {type(ȳ).__name__}"
            f"{f' of length {len(ȳ)}' if hasattr(ȳ, '__len__') else ''}"
        )
    return tuple(ȳ)


def zero_like(x: Any) -> Any:
    np = np_module()
    if np is not None and isinstance(x, np.ndarray):
        return np.zeros_like(
            x, dtype=np.result_type(x.dtype, np.float64) if x.dtype.kind in "iub" else x.dtype
        )
    return 0.0


def from_list_ct(src: Any, cts: list) -> Any:
    """Cotangent of ``src`` from the cotangents of ``list(src)``'s entries."""
    if all(isinstance(c, AbstractZero) for c in cts):
        return _Z
    if type(src) is list:
        return list(cts)
    if isinstance(src, tuple):
        return tuple(cts)
    np = np_module()
    if np is not None and isinstance(src, np.ndarray):
        rows = [
            zero_like(src[i]) if isinstance(c, AbstractZero) else unthunk(c)
            for i, c in enumerate(cts)
        ]
        return np.stack([np.asarray(r) for r in rows]).astype(
            np.result_type(src.dtype, np.float64) if src.dtype.kind in "iub" else src.dtype,
            copy=False,
        )
    if isinstance(src, dict):
        return _NO  # iterating a dict yields its keys
    if isinstance(src, range):
        return _NO
    return list(cts)
