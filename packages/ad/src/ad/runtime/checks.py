"""Run-time checks the generated code calls: writes into arguments, and
pullbacks that return the wrong number of cotangents."""

from __future__ import annotations

from typing import Any

import numpy as np

from ad.errors import ADError, CotangentShapeError, CotangentWriteError, MutationError
from ad.runtime.state import followed

_ndarray = np.ndarray
_ARGUMENT: Any = object()  # ``argument_write``'s default: the object is the argument

__all__ = ["argument_write", "unpack_error"]


def argument_write(
    value: Any,
    container: str,
    site: str,
    obj: Any = None,
    forward: bool = False,
    original: Any = _ARGUMENT,
) -> None:
    """Refuse writing a number or array into an argument the function does not
    return, unless it is a user object, whose fields this pass follows by
    identity (``ad.runtime.state``; ``forward``: the write is in forward-mode code).
    ``original``: the argument, for a parameter the function may have bound to
    another object (``x = x.copy()``): a write into that one is no argument's."""
    if original is not _ARGUMENT and obj is not original:
        return
    if _carries_derivative(value) and not followed(obj, forward):
        what = (
            "deletes from"
            if value is obj and obj is not None
            else f"writes a {type(value).__name__} into"
        )
        raise MutationError(
            f"{site}: the function {what} its argument "
            f"{container!r} and does not return it: the caller would not see that change in "
            "the backward pass, so the derivative would be lost.\n"
            "To fix: build a new container (d = {**d, k: v}, lst = lst + [v]) and return "
            f"it, or return {container!r} and rebind it in the caller."
        )


def _carries_derivative(v: Any, depth: int = 0) -> bool:
    if type(v) in (float, complex):
        return True
    if isinstance(v, (tuple, list)) and depth < 3:
        return any(_carries_derivative(x, depth + 1) for x in v)
    dtype = getattr(v, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") in "fc"


def unpack_error(e: ValueError) -> BaseException:
    """Turn a failed unpacking of a pullback's result in ``_ad_back`` into a clear error.

    Any other ValueError is returned unchanged, to be re-raised.
    """
    if isinstance(e, ADError):
        return e  # made clear already, by an inner adjoint
    msg = str(e)
    if "read-only" in msg:
        return _write_error(e, msg)
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code.co_name != "_ad_back" or "values to unpack" not in msg:
        return e
    frame = tb.tb_frame
    pb = frame.f_locals.get("_ad_p")
    name = getattr(pb, "__qualname__", None) or repr(pb)
    err = CotangentShapeError(
        f"the pullback {name} (called at {frame.f_code.co_filename}:{tb.tb_lineno}) returned "
        f"the wrong number of cotangents ({msg}): it must return one for the function, then "
        "one per positional argument.\n"
        "To fix: make the rule's pullback return (∂f, ∂arg1, ..., ∂argN)."
    )
    err.__suppress_context__ = True
    return err


def _write_error(e: ValueError, msg: str) -> BaseException:
    """numpy's "... is read-only", raised under a pullback that ``_ad_back`` called:
    the pullback wrote into its cotangent. Anything else is returned unchanged."""
    tb = e.__traceback__
    if tb is None or tb.tb_frame.f_code.co_name != "_ad_back" or tb.tb_next is None:
        return e
    back, call_line = tb.tb_frame, tb.tb_lineno
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    writer = getattr(code, "co_qualname", code.co_name)
    err = CotangentWriteError(
        f"the pullback called at {back.f_code.co_filename}:{call_line} wrote into the "
        f"cotangent it received, in {writer} at {code.co_filename}:{tb.tb_lineno} ({msg}): "
        "a cotangent may be read-only (a whole-array sum's is one number for every entry) "
        "or shared with another input.\n"
        "To fix: compute a new array in the pullback (ȳ = ȳ * 2, not ȳ *= 2)."
    )
    err.__cause__ = e
    return err
