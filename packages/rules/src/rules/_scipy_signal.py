"""Rules for scipy.signal's ``convolve``, ``correlate``, ``fftconvolve`` and ``oaconvolve``.

Any dimension, modes ``full``, ``same`` and ``valid``, any ``method``. The
convolution is bilinear: ``ẏ = conv(ȧ, v) + conv(a, v̇)`` in the same mode. Every
mode is a fixed slice of the full convolution (``same`` centred on ``in1``,
``valid`` at offset ``min(Na, Nv) - 1``), so the pullback pads ȳ back to the full
shape and correlates: ``ā = correlate(ȳ_full, v, 'valid')``, ``v̄ =
correlate(ȳ_full, a, 'valid')`` (scipy's ``correlate`` conjugates its second
argument: the ChainRules convention ``ȳ·conj(∂y/∂a)`` for complex inputs).
``correlate(a, v)`` is ``convolve(a, conj(flip(v)))``. ``fftconvolve`` and
``oaconvolve`` with ``axes=`` (a batched convolution) have no rule here.
Loaded when scipy.signal is imported.

>>> import numpy as np, scipy.signal
>>> from rulescore import rrule
>>> y, pb = rrule(scipy.signal.convolve, np.array([1.0, 2.0]), np.array([1.0, 1.0, 1.0]))
>>> pb(np.ones(4))[1:]
(array([3., 3.]), array([3., 3., 3.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_elementwise import no_ufunc_kwargs
from ._util import is_zero, project

__all__: list[str] = []


def _mode(f: Any, args: tuple, kwargs: dict) -> str:
    """The mode, checking the other options (``method`` is free; ``axes`` is not)."""
    names = (
        ("mode", "method")
        if f in (scipy.signal.convolve, scipy.signal.correlate)
        else ("mode", "axes")
    )
    opts = {**dict(zip(names, args)), **kwargs}
    if opts.get("axes") is not None:
        no_ufunc_kwargs(f, {"axes": opts["axes"]})
    return opts.get("mode", "full")


def _full_slice(mode: str, sa: tuple, sv: tuple) -> tuple:
    """Where the ``mode`` result sits in the full convolution, per axis."""
    out = []
    for na, nv in zip(sa, sv):
        full = na + nv - 1
        if mode == "full":
            out.append(slice(0, full))
        elif mode == "same":
            start = (full - na) // 2
            out.append(slice(start, start + na))
        else:
            start = min(na, nv) - 1
            out.append(slice(start, start + abs(na - nv) + 1))
    return tuple(out)


def _conv_pullback(a: Any, v: Any, mode: str, ȳ: Any) -> tuple:
    a, v = np.asarray(a), np.asarray(v)
    full = np.zeros(tuple(p + q - 1 for p, q in zip(a.shape, v.shape)), np.result_type(a, v, ȳ))
    full[_full_slice(mode, a.shape, v.shape)] = ȳ
    da = scipy.signal.correlate(full, v, mode="valid")
    dv = scipy.signal.correlate(full, a, mode="valid")
    return da, dv


def _register_convolution(f: Any, flip: bool) -> None:
    def other(v: Any) -> Any:
        """The kernel actually convolved: ``conj(flip(v))`` for correlate."""
        return np.conj(np.flip(v)) if flip else v

    def conv_rrule(a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(a, v, *args, **kwargs)
        mode = _mode(f, args, kwargs)
        rest = (NoTangent(),) * len(args)

        def conv_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), ZeroTangent(), ZeroTangent(), *rest)
            da, dw = _conv_pullback(a, other(v), mode, ȳ)
            dv = np.conj(np.flip(dw)) if flip else dw
            return (NoTangent(), project(a, da), project(v, dv), *rest)

        return y, conv_pullback

    def conv_frule(ḟ: Any, *rest: Any, **kwargs: Any) -> Any:
        n = len(rest) // 2
        ȧ, v̇, a, v, args = rest[0], rest[1], rest[n], rest[n + 1], rest[n + 2 :]
        y = f(a, v, *args, **kwargs)
        mode = _mode(f, args, kwargs)
        ȧ, v̇ = unthunk(ȧ), unthunk(v̇)
        ẏ: Any = ZeroTangent()
        if not is_zero(ȧ):
            ẏ = scipy.signal.convolve(ȧ, other(v), mode=mode)
        if not is_zero(v̇):
            ẏ = ẏ + scipy.signal.convolve(a, other(v̇), mode=mode)
        return y, ẏ if is_zero(ẏ) else project(y, ẏ)

    name = f.__name__
    conv_rrule.__name__ = conv_rrule.__qualname__ = f"{name}_rrule"
    conv_frule.__name__ = conv_frule.__qualname__ = f"{name}_frule"
    conv_rrule.__doc__ = f"rrule of ``scipy.signal.{name}`` (see the module docstring)."
    conv_frule.__doc__ = f"frule of ``scipy.signal.{name}``."
    rrule.register(f)(conv_rrule)
    frule.register(f)(conv_frule)


_register_convolution(scipy.signal.convolve, False)
_register_convolution(scipy.signal.fftconvolve, False)
_register_convolution(scipy.signal.oaconvolve, False)
_register_convolution(scipy.signal.correlate, True)
