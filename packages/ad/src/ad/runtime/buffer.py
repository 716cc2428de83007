"""``Buffer``: an array you may write into while differentiating.

numpy arrays may not be mutated in differentiated code (a pullback may have
saved them). A ``Buffer`` is filled by item assignment and then turned into
an ndarray by ``copy()``, which freezes it. Under the AD its writes are
differentiated functionally: the transform rebinds ``buf`` after every
``buf[k] = v``, and the cotangent flowing back along those bindings is a
``BufferTangent`` — the gradient with respect to the whole contents, tagged
with the buffer version it belongs to. A write's pullback hands the written
region to the value and zeroes it (it was overwritten); a read adds into it.
The tag catches writes the AD could not see (made inside a function that
did not return the buffer) instead of silently dropping their gradient.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ad.errors import CotangentShapeError, MutationError
from ad.runtime.config import ADConfig
from ad.runtime.rules_item_writes import setitem
from rules.extension import unbroadcast
from rulescore import AbstractZero, NoTangent, ZeroTangent, frule, rrule, unthunk

__all__ = ["Buffer", "BufferTangent"]

_NO = NoTangent()
_Z = ZeroTangent()


class Buffer:
    """A buffer with ``x``'s dtype and the given shape (default: ``x``'s shape).

    It starts filled with zeros (``x``'s values are not copied and get no
    gradient). Index it like an array to write (``buf[i] = v``,
    ``buf[:, j] = row``) and to read (reads return copies); gradients flow
    from the written values to the arrays read out. ``buf.copy()`` returns
    the contents as an ndarray without copying them and freezes the
    buffer: writing again raises ``MutationError``. A buffer is not an array:
    arithmetic and numpy functions on it raise; use ``copy()`` first.

    >>> import numpy as np, ad
    >>> def vstack(xs):
    ...     buf = ad.Buffer(xs, len(xs), 5)
    ...     for i in range(5):
    ...         buf[:, i] = xs
    ...     return buf.copy()
    >>> vstack([1, 2, 3])
    array([[1, 1, 1, 1, 1],
           [2, 2, 2, 2, 2],
           [3, 3, 3, 3, 3]])
    >>> ad.gradient(lambda x: np.sum(vstack(x)), [1, 2, 3])   # a list gets a list
    ([5.0, 5.0, 5.0],)
    """

    __slots__ = ("_data", "_frozen", "_version", "dtype", "ndim", "shape", "size")
    __array_ufunc__ = None  # numpy ufuncs refuse it instead of treating it as an object
    _ad_keeps_its_writes = True  # not followed by identity (``transform.holders.stateful``)

    def __init__(self, x: Any, *shape: Any) -> None:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        dtype = x.dtype if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x).dtype
        if not shape:
            shape = np.shape(x)
        self._data = np.zeros(shape, dtype=dtype)
        self._frozen = False
        self._version = 0
        self.shape = self._data.shape
        self.dtype = self._data.dtype
        self.ndim = self._data.ndim
        self.size = self._data.size

    def __setitem__(self, key: Any, value: Any) -> None:
        if self._frozen:
            raise MutationError(
                "cannot write into an ad.Buffer after copy(): copy() froze it and its contents "
                "are now the array copy() returned.\n"
                "To fix: create a new ad.Buffer for new contents."
            )
        self._data[key] = value
        self._version += 1

    def __getitem__(self, key: Any) -> Any:
        return self._data[key].copy()

    def __len__(self) -> int:
        return len(self._data)

    def copy(self) -> np.ndarray:
        """The contents as an ndarray (not copied); the buffer is frozen from now on."""
        self._frozen = True
        return self._data

    @property
    def frozen(self) -> bool:
        """Whether ``copy()`` has been called."""
        return self._frozen

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(
            "an ad.Buffer is not an array.\nTo fix: call buf.copy() to get its contents as an "
            "ndarray (this freezes the buffer)."
        )

    def __repr__(self) -> str:
        state = ", frozen" if self._frozen else ""
        return f"Buffer({self._data!r}{state})"


class BufferTangent:
    """The cotangent of a ``Buffer``: a dense gradient and the version it belongs to."""

    __slots__ = ("dense", "version")
    __array_ufunc__ = None  # ndarray + BufferTangent defers to __radd__

    def __init__(self, dense: np.ndarray, version: int) -> None:
        self.dense = dense
        self.version = version

    @property
    def shape(self) -> tuple:
        return self.dense.shape

    def __add__(self, other: Any) -> Any:
        other = unthunk(other)
        if isinstance(other, AbstractZero):
            return self
        if isinstance(other, BufferTangent):
            if other.version != self.version:
                raise MutationError(_lost_writes(self.version, other.version))
            return BufferTangent(self.dense + other.dense, self.version)
        if isinstance(other, np.ndarray):
            return BufferTangent(self.dense + other, self.version)
        return NotImplemented

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"BufferTangent({self.dense!r}, version={self.version})"


def _grad_dtype(buf: Buffer) -> np.dtype:
    return buf.dtype if buf.dtype.kind in "fc" else np.dtype(np.float64)


def _lost_writes(expected: int, got: int) -> str:
    return (
        f"the derivative of ad.Buffer writes was lost: the AD reached a use of the buffer after "
        f"{expected} writes with the derivative for its state after {got}. Writes "
        "made inside a function whose result does not carry the buffer back are invisible to "
        "the AD.\n"
        "To fix: return the buffer from the function that writes into it and rebind it "
        "(buf = fill(buf, ...))."
    )


def _dense(ȳ: Any, buf: Buffer, version: int) -> np.ndarray:
    """The dense gradient of ``buf``'s contents at ``version`` from its cotangent."""
    if isinstance(ȳ, BufferTangent):
        if ȳ.version != version:
            raise MutationError(_lost_writes(version, ȳ.version))
        return ȳ.dense
    if isinstance(ȳ, np.ndarray) and ȳ.shape == buf.shape:
        return ȳ
    raise CotangentShapeError(
        f"the cotangent of an ad.Buffer of shape {buf.shape} must be an array of that shape, "
        f"got {type(ȳ).__name__}{f' of shape {ȳ.shape}' if hasattr(ȳ, 'shape') else ''}"
    )


@rrule.register(Buffer, config=ADConfig)
def _(config: Any, x: Any, *shape: Any) -> Any:
    buf = Buffer(x, *shape)
    n = len(shape)

    def buffer_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if not isinstance(ȳ, AbstractZero):
            _dense(ȳ, buf, 0)  # only checks that no write went unseen
        return (_NO, _NO, *([_NO] * n))

    return buf, buffer_pullback


@rrule.register(setitem, config=ADConfig)
def _(config: Any, buf: Buffer, key: Any, value: Any) -> Any:
    after = buf._version + 1
    buf[key] = value

    def buffer_setitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO, _Z)
        dense = _dense(ȳ, buf, after)
        dvalue = unbroadcast(value, dense[key])
        rest = dense.copy()  # ȳ may be shared: never write into it
        rest[key] = 0
        return (_NO, BufferTangent(rest, after - 1), _NO, dvalue)

    return buf, buffer_setitem_pullback


@rrule.register(operator.getitem, config=ADConfig)
def _(config: Any, buf: Buffer, key: Any) -> Any:
    version = buf._version
    y = buf[key]

    def buffer_getitem_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ, _NO)
        dense = np.zeros(buf.shape, dtype=_grad_dtype(buf))
        np.add.at(dense, key, ȳ)
        return (_NO, BufferTangent(dense, version), _NO)

    return y, buffer_getitem_pullback


@rrule.register(Buffer.copy, config=ADConfig)
def _(config: Any, buf: Buffer) -> Any:
    version = buf._version
    y = buf.copy()

    def buffer_copy_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, ȳ)
        dense = np.asarray(ȳ, dtype=np.result_type(_grad_dtype(buf), np.asarray(ȳ).dtype))
        if dense.shape != buf.shape:
            dense = np.broadcast_to(dense, buf.shape)
        return (_NO, BufferTangent(dense, version))

    return y, buffer_copy_pullback


# --- forward mode: a buffer's tangent is the tangent of its contents ------------


def _tangent_dense(ḃ: Any, buf: Buffer, version: int) -> np.ndarray | None:
    ḃ = unthunk(ḃ)
    if isinstance(ḃ, AbstractZero):
        return None
    if isinstance(ḃ, BufferTangent) and ḃ.version != version:
        raise MutationError(_lost_writes(version, ḃ.version))
    return ḃ.dense if isinstance(ḃ, BufferTangent) else np.asarray(ḃ)


@frule.register(Buffer, config=ADConfig)
def _(config: Any, ḟ: Any, *args: Any) -> Any:
    n = len(args) // 2
    return Buffer(*args[n:]), _Z


@frule.register(setitem, config=ADConfig)
def _(config: Any, ḟ: Any, ḃ: Any, k̇: Any, v̇: Any, buf: Buffer, key: Any, value: Any) -> Any:
    dense = _tangent_dense(ḃ, buf, buf._version)
    buf[key] = value
    v̇ = unthunk(v̇)
    if dense is None and isinstance(v̇, AbstractZero):
        return buf, _Z
    dense = np.zeros(buf.shape, dtype=_grad_dtype(buf)) if dense is None else dense.copy()
    dense[key] = 0 if isinstance(v̇, AbstractZero) else v̇
    return buf, BufferTangent(dense, buf._version)


@frule.register(operator.getitem, config=ADConfig)
def _(config: Any, ḟ: Any, ḃ: Any, k̇: Any, buf: Buffer, key: Any) -> Any:
    dense = _tangent_dense(ḃ, buf, buf._version)
    return buf[key], _Z if dense is None else dense[key].copy()


@frule.register(Buffer.copy, config=ADConfig)
def _(config: Any, ḟ: Any, ḃ: Any, buf: Buffer) -> Any:
    dense = _tangent_dense(ḃ, buf, buf._version)
    return buf.copy(), _Z if dense is None else dense
