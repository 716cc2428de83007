"""``test_approx``: approximate equality of tangents, with a report naming the path.

Zeros equal zero-valued numbers and arrays; thunks are evaluated; a
``Tangent[tuple]`` equals a tuple with the same entries, a ``Tangent[dict]`` a
dict, and missing fields of a ``Tangent`` read as zero. Numbers and arrays are
compared as ``‖a - e‖ ≤ max(atol, rtol·max(‖a‖, ‖e‖))`` (2-norms, as Julia's
``isapprox``), after checking that shapes agree.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

import numpy as np

from rulescore import AbstractZero, Tangent, ZeroTangent, unthunk

from .errors import RuleTestFailure

__all__ = ["array_report", "close", "test_approx"]


def close(actual: Any, expected: Any, rtol: float, atol: float) -> bool:
    """Norm-wise closeness of two numeric arrays of the same shape (NaNs must match)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.dtype.kind not in "fciu" or e.dtype.kind not in "fciu":
        return a.shape == e.shape and bool(np.array_equal(a, e))
    na, ne = np.isnan(a), np.isnan(e)
    if na.any() or ne.any():
        if not np.array_equal(na, ne):
            return False
        a, e = a[~na], e[~ne]
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(e))):
        return bool(np.array_equal(a, e))
    diff = float(np.linalg.norm(np.ravel(a - e)))
    scale = max(float(np.linalg.norm(np.ravel(a))), float(np.linalg.norm(np.ravel(e))))
    return diff <= max(atol, rtol * scale)


def array_report(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    """Lines giving expected and actual values and the largest errors."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
    lines = [f"  expected: {_show(expected)}", f"  actual:   {_show(actual)}"]
    if err.size and np.all(np.isfinite(err)):
        where = np.unravel_index(int(np.argmax(err)), err.shape) if err.ndim else ()
        at = f" at index {tuple(int(i) for i in where)}" if err.ndim else ""
        norm_e = float(np.linalg.norm(np.ravel(e)))
        rel = float(np.linalg.norm(np.ravel(a - e))) / norm_e if norm_e else float("inf")
        lines.append(
            f"  max abs error {float(np.max(err)):.3g}{at}; relative error {rel:.3g} "
            f"(2-norm); rtol={rtol:g}, atol={atol:g}"
        )
    return "\n".join(lines)


def _show(x: Any) -> str:
    if isinstance(x, np.ndarray):
        body = np.array2string(x, precision=6, threshold=20, edgeitems=2)
        body = body.replace("\n", "\n            ")
        return f"{body}  (shape {x.shape}, dtype {x.dtype})"
    return f"{x!r}  ({type(x).__name__})"


def _entries(x: Any) -> dict | None:
    """The entries of a container or ``Tangent`` as a dict, or None for a leaf."""
    if isinstance(x, Tangent):
        b = x._backing
        return dict(b) if isinstance(b, dict) else dict(enumerate(b))
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return {k: getattr(x, k) for k in type(x)._fields}
    if isinstance(x, (tuple, list)):
        return dict(enumerate(x))
    if isinstance(x, dict):
        return dict(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    return None


def _is_number_like(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, numbers.Number))


def _sub(path: str, x: Any, k: Any) -> str:
    if (
        isinstance(k, str)
        and not isinstance(x, dict)
        and not (
            isinstance(x, Tangent) and isinstance(x._backing, dict) and type(x)._kind == "mapping"
        )
    ):
        return f"{path}.{k}"
    return f"{path}[{k!r}]"


def _compare(actual: Any, expected: Any, rtol: float, atol: float, path: str) -> None:
    __tracebackhide__ = True
    actual, expected = unthunk(actual), unthunk(expected)
    if isinstance(actual, AbstractZero) and isinstance(expected, AbstractZero):
        return
    if isinstance(actual, AbstractZero) or isinstance(expected, AbstractZero):
        other = expected if isinstance(actual, AbstractZero) else actual
        entries = _entries(other)
        if entries is not None:
            for k, v in entries.items():
                _compare(
                    ZeroTangent() if other is expected else v,
                    v if other is expected else ZeroTangent(),
                    rtol,
                    atol,
                    _sub(path, other, k),
                )
            return
        if _is_number_like(other) and not np.any(np.asarray(other)):
            return
        raise RuleTestFailure(
            f"{path}: expected {expected!r}, got {actual!r}", check="approx", path=path
        )
    ea, ee = _entries(actual), _entries(expected)
    if ea is not None or ee is not None:
        if ea is None or ee is None:
            raise RuleTestFailure(
                f"{path}: structures differ: expected {type(expected).__name__}, "
                f"got {type(actual).__name__}",
                check="approx",
                path=path,
            )
        if isinstance(actual, Tangent) and isinstance(expected, Tangent):
            pa, pe = type(actual).primal_type, type(expected).primal_type
            if pa is not pe:
                raise RuleTestFailure(
                    f"{path}: expected {type(expected).__name__}, got {type(actual).__name__}",
                    check="approx",
                    path=path,
                )
        z = ZeroTangent()
        for k in dict.fromkeys([*ee, *ea]):
            _compare(ea.get(k, z), ee.get(k, z), rtol, atol, _sub(path, expected, k))
        return
    if _is_number_like(actual) and _is_number_like(expected):
        sa, se = np.shape(actual), np.shape(expected)
        if sa != se:
            raise RuleTestFailure(
                f"{path}: shapes differ: expected {se}, got {sa}", check="approx", path=path
            )
        if not close(actual, expected, rtol, atol):
            raise RuleTestFailure(
                f"{path}: values differ\n{array_report(actual, expected, rtol, atol)}",
                check="approx",
                path=path,
            )
        return
    if actual != expected:
        raise RuleTestFailure(
            f"{path}: expected {expected!r}, got {actual!r}", check="approx", path=path
        )


def test_approx(
    actual: Any, expected: Any, rtol: float = 1e-9, atol: float = 1e-9, *, name: str = "value"
) -> None:
    """Assert that two tangents (or primals) are approximately equal.

    Raises :class:`rulestest.RuleTestFailure` naming the first differing path.

    >>> from rulescore import Thunk, ZeroTangent, Tangent
    >>> test_approx(Thunk(lambda: (1.0, 0.0)), Tangent[tuple](1.0, ZeroTangent()))
    >>> test_approx({"a": 1.0}, {"a": 1.5})
    Traceback (most recent call last):
    ...
    rulestest.errors.RuleTestFailure: value['a']: values differ
    ...

    See also: :func:`rulestest.test_rrule`.
    """
    __tracebackhide__ = True
    _compare(actual, expected, rtol, atol, name)


test_approx.__test__ = False  # type: ignore[attr-defined]
