"""Rules for ``numpy.fft``: every transform, ``fftshift``/``ifftshift`` and the frequencies.

Every transform is real-linear in its input for fixed ``n``/``s``, ``axis``/
``axes`` and ``norm``, so the frule applies the transform to the tangent and
the pullback applies the adjoint with respect to the real inner product
``Re<a, b> = Re Σ conj(a) b`` (ChainRules' convention: a complex number is a
pair of reals). Optional arguments work positionally and by keyword; they get
``NoTangent()``; ``out=`` is refused. The multi-axis transforms are numpy's
sequences of one-axis transforms, and so are their adjoints, run backwards.

The adjoints, one axis of length ``m`` transformed at length ``n``:

* ``fft`` ↔ ``ifft``: the adjoint of ``fft`` with ``norm`` is ``ifft`` with the
  *dual* norm (``"backward"`` ↔ ``"forward"``, ``"ortho"`` unchanged): both are
  ``c·F`` and ``c·F^H`` with the same scale ``c``.
* Zero-padding (``n > m``) and truncation (``n < m``) are adjoint to each
  other: the cotangent is cut or zero-padded back to length ``m``.
* ``rfft`` keeps bins ``0..n//2`` of the full transform, so its adjoint is
  ``Re(c·F^H ȳ_padded)``; ``irfft`` with the dual norm computes it after the
  bins it counts twice (``1..(n-1)//2``, all but DC and, for even ``n``,
  Nyquist) are halved.
* ``irfft`` reads the input as the first half of a Hermitian spectrum; bins
  ``1..(n-1)//2`` appear twice, DC and even-``n`` Nyquist once with their
  imaginary parts ignored. Its adjoint is ``rfft`` (dual norm) with those bins
  doubled; the DC and Nyquist cotangents come out real, so the ignored
  imaginary parts get derivative zero. Input bins past ``n//2`` are unused and
  get zero.
* ``hfft(a) = irfft(conj(a))`` and ``ihfft(x) = conj(rfft(x))`` with the norm
  swapped; ``conj`` is its own adjoint.
* ``fftshift`` and ``ifftshift`` are rolls, adjoint to each other.

``fftfreq(n, d)`` and ``rfftfreq(n, d)`` are ``k/(n·d)``: ``n`` gets
``NoTangent()``, a positional ``d`` the derivative ``-y/d`` (it is a spacing a
model may fit).

Dtypes follow numpy: float32 input gives complex64 output (``irfft``/``hfft``:
float32), and cotangents are projected back to the input's dtype.

>>> import numpy as np
>>> from rulescore import rrule
>>> y, pb = rrule(np.fft.rfft, np.array([1.0, 2.0, 3.0, 4.0]))
>>> pb(np.array([1.0, 0.0, 0.0]))[1]   # the DC bin is the sum of the inputs
array([1., 1., 1., 1.])
>>> pb(np.array([0.0, 1.0, 0.0]))[1]   # Re of bin 1 is x0 - x2
array([ 1.,  0., -1.,  0.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from rulescore import NoTangent, ZeroTangent, frule, rrule, unthunk

from ._numpy_reductions import bind_options
from ._util import asarray, is_zero, project, unbroadcast

__all__ = []

_ONE_AXIS = ("n", "axis", "norm", "out")
_MANY_AXES = ("s", "axes", "norm", "out")
# The norm whose scale makes the inverse transform the adjoint (numpy's _swap_direction).
_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}

# One step of a plan: (operation, axis, input length, transform length n).
Step = tuple[str, int, int, int]


def _options(name: str, names: tuple, args: tuple, kwargs: dict) -> dict:
    """The optional arguments by name; ``out=`` (positional too) is refused by name."""
    out = kwargs.get("out", args[3] if len(args) > 3 else None)
    if out is not None:
        raise TypeError(
            f"the rule for numpy.fft.{name} does not support out=: the AD cannot see a "
            "write into an existing array.\nTo fix: write y = numpy.fft."
            f"{name}(x, ...) and use y."
        )
    return bind_options(getattr(np.fft, name), names, args, kwargs)


def _resize(a: np.ndarray, axis: int, m: int) -> np.ndarray:
    """``a`` cut or zero-padded to length ``m`` along ``axis`` (numpy's ``n`` handling)."""
    k = a.shape[axis]
    if k == m:
        return a
    if k > m:
        return a[(slice(None),) * axis + (slice(0, m),)]
    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, m - k)
    return np.pad(a, widths)


def _twice(n: int, axis: int, ndim: int) -> tuple:
    """The index of the bins a length-``n`` real spectrum holds twice: ``1..(n-1)//2``."""
    return (
        (slice(None),) * axis + (slice(1, (n - 1) // 2 + 1),) + (slice(None),) * (ndim - axis - 1)
    )


def _fft_adjoint(g: np.ndarray, axis: int, m: int, n: int, norm: Any) -> np.ndarray:
    return _resize(np.fft.ifft(g, axis=axis, norm=_DUAL[norm]), axis, m)


def _ifft_adjoint(g: np.ndarray, axis: int, m: int, n: int, norm: Any) -> np.ndarray:
    return _resize(np.fft.fft(g, axis=axis, norm=_DUAL[norm]), axis, m)


def _rfft_adjoint(g: np.ndarray, axis: int, m: int, n: int, norm: Any) -> np.ndarray:
    w = np.array(g, dtype=np.result_type(g, np.float32))  # a copy: ȳ is not ours to change
    w[_twice(n, axis, w.ndim)] *= 0.5
    return _resize(np.fft.irfft(w, n, axis=axis, norm=_DUAL[norm]), axis, m)


def _irfft_adjoint(g: np.ndarray, axis: int, m: int, n: int, norm: Any) -> np.ndarray:
    z = np.fft.rfft(np.real(g), n, axis=axis, norm=_DUAL[norm])
    z[_twice(n, axis, z.ndim)] *= 2
    return _resize(z, axis, m)


_ADJOINTS: dict[str, Callable] = {
    "fft": _fft_adjoint,
    "ifft": _ifft_adjoint,
    "rfft": _rfft_adjoint,
    "irfft": _irfft_adjoint,
}


def _walk(shape: tuple, ops: list) -> list[Step]:
    """The steps of ``ops`` = [(operation, axis, n or None)], with each input length."""
    shape = list(shape)
    steps = []
    for op, axis, n in ops:
        axis = normalize_axis_index(axis, len(shape))
        m = shape[axis]
        if n is None:  # the one-axis default
            n = (m - 1) * 2 if op == "irfft" else m
        steps.append((op, axis, m, n))
        shape[axis] = n // 2 + 1 if op == "rfft" else n
    return steps


def _cook(shape: tuple, s: Any, axes: Any, invreal: bool) -> tuple[list, list]:
    """``s`` and ``axes`` completed as numpy's ``_cook_nd_args`` does (no warnings)."""
    if axes is None:
        axes = range(len(shape)) if s is None else range(-len(s), 0)
    axes = [normalize_axis_index(a, len(shape)) for a in axes]
    if s is None:
        s = [shape[a] for a in axes]
        if invreal:
            s[-1] = (shape[axes[-1]] - 1) * 2
    return [shape[a] if v == -1 else v for v, a in zip(s, axes)], axes


def _one_axis(op: str) -> Callable:
    def plan(shape: tuple, opts: dict) -> list[Step]:
        return _walk(shape, [(op, opts.get("axis", -1), opts.get("n"))])

    return plan


def _complex_nd(op: str, default_axes: Any) -> Callable:
    def plan(shape: tuple, opts: dict) -> list[Step]:
        s, axes = _cook(shape, opts.get("s"), opts.get("axes", default_axes), False)
        return _walk(shape, [(op, a, v) for v, a in zip(s[::-1], axes[::-1])])

    return plan


def _rfft_nd(default_axes: Any) -> Callable:
    def plan(shape: tuple, opts: dict) -> list[Step]:
        s, axes = _cook(shape, opts.get("s"), opts.get("axes", default_axes), False)
        ops = [("rfft", axes[-1], s[-1])]
        ops += [("fft", a, v) for v, a in zip(s[-2::-1], axes[-2::-1])]
        return _walk(shape, ops)

    return plan


def _irfft_nd(default_axes: Any) -> Callable:
    def plan(shape: tuple, opts: dict) -> list[Step]:
        s, axes = _cook(shape, opts.get("s"), opts.get("axes", default_axes), True)
        ops = [("ifft", a, v) for v, a in zip(s[:-1], axes[:-1])]
        return _walk(shape, [*ops, ("irfft", axes[-1], s[-1])])

    return plan


# name -> (plan, optional argument names, conj of the input, conj of the output, swap norm)
_TRANSFORMS: dict[str, tuple] = {
    "fft": (_one_axis("fft"), _ONE_AXIS, False, False, False),
    "ifft": (_one_axis("ifft"), _ONE_AXIS, False, False, False),
    "rfft": (_one_axis("rfft"), _ONE_AXIS, False, False, False),
    "irfft": (_one_axis("irfft"), _ONE_AXIS, False, False, False),
    "hfft": (_one_axis("irfft"), _ONE_AXIS, True, False, True),
    "ihfft": (_one_axis("rfft"), _ONE_AXIS, False, True, True),
    "fft2": (_complex_nd("fft", (-2, -1)), _MANY_AXES, False, False, False),
    "ifft2": (_complex_nd("ifft", (-2, -1)), _MANY_AXES, False, False, False),
    "fftn": (_complex_nd("fft", None), _MANY_AXES, False, False, False),
    "ifftn": (_complex_nd("ifft", None), _MANY_AXES, False, False, False),
    "rfft2": (_rfft_nd((-2, -1)), _MANY_AXES, False, False, False),
    "rfftn": (_rfft_nd(None), _MANY_AXES, False, False, False),
    "irfft2": (_irfft_nd((-2, -1)), _MANY_AXES, False, False, False),
    "irfftn": (_irfft_nd(None), _MANY_AXES, False, False, False),
}


def _transform_rules(name: str) -> tuple[Callable, Callable]:
    """The rrule and frule of ``numpy.fft.<name>``."""
    f = getattr(np.fft, name)
    plan, names, conj_in, conj_out, swap = _TRANSFORMS[name]

    def transform_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        opts = _options(name, names, args, kwargs)
        rest = (NoTangent(),) * len(args)  # for n/s, axis/axes, norm passed positionally
        Ω = f(x, *args, **kwargs)
        norm = opts.get("norm")
        norm = _DUAL[norm] if swap else norm
        steps = plan(np.shape(x), opts)

        def transform_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), ZeroTangent(), *rest)
            g = asarray(ȳ)
            if conj_out:
                g = np.conj(g)
            for op, axis, m, n in reversed(steps):
                g = _ADJOINTS[op](g, axis, m, n, norm)
            if conj_in:
                g = np.conj(g)
            return (NoTangent(), project(x, g), *rest)

        transform_pullback.__name__ = transform_pullback.__qualname__ = f"{name}_pullback"
        return Ω, transform_pullback

    def transform_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        k = len(args) // 2
        ẋ, x, extra = unthunk(args[0]), args[k], args[k + 1 :]
        _options(name, names, extra, kwargs)
        Ω = f(x, *extra, **kwargs)
        if is_zero(ẋ):
            return Ω, ZeroTangent()
        return Ω, project(Ω, f(project(x, ẋ), *extra, **kwargs))  # linear: J·ẋ = f(ẋ)

    transform_rrule.__doc__ = f"rrule of ``np.fft.{name}``: its adjoint (see the module)."
    transform_frule.__doc__ = f"frule of ``np.fft.{name}``: the transform of the tangent."
    for rule, kind in ((transform_rrule, "rrule"), (transform_frule, "frule")):
        rule.__name__ = rule.__qualname__ = f"{name}_{kind}"
    return transform_rrule, transform_frule


def _shift_rules(f: Callable, adjoint: Callable) -> tuple[Callable, Callable]:
    """The rules of ``fftshift``/``ifftshift``: a roll, pulled back by the opposite roll."""

    def shift_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        rest = (NoTangent(),) * len(args)  # for axes passed positionally
        Ω = f(x, *args, **kwargs)

        def shift_pullback(ȳ: Any) -> tuple:
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), ZeroTangent(), *rest)
            return (NoTangent(), project(x, adjoint(ȳ, *args, **kwargs)), *rest)

        shift_pullback.__name__ = shift_pullback.__qualname__ = f"{f.__name__}_pullback"
        return Ω, shift_pullback

    def shift_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        k = len(args) // 2
        ẋ, x, extra = unthunk(args[0]), args[k], args[k + 1 :]
        Ω = f(x, *extra, **kwargs)
        if is_zero(ẋ):
            return Ω, ZeroTangent()
        return Ω, project(Ω, f(ẋ, *extra, **kwargs))

    shift_rrule.__doc__ = f"rrule of ``np.fft.{f.__name__}``: ``{adjoint.__name__}`` of ȳ."
    shift_frule.__doc__ = f"frule of ``np.fft.{f.__name__}``: the tangent shifted alike."
    return shift_rrule, shift_frule


def _freq_rules(f: Callable) -> tuple[Callable, Callable]:
    """The rules of ``fftfreq``/``rfftfreq``: ``n`` is a count, ``∂y/∂d = -y/d``."""

    def freq_rrule(n: Any, *args: Any, **kwargs: Any) -> Any:
        Ω = f(n, *args, **kwargs)
        # d by keyword (or the default) is a constant; device, if positional, is no number.
        rest = (NoTangent(),) * (len(args) - 1)

        def freq_pullback(ȳ: Any) -> tuple:
            if not args:
                return (NoTangent(), NoTangent())
            ȳ = unthunk(ȳ)
            if is_zero(ȳ):
                return (NoTangent(), NoTangent(), ZeroTangent(), *rest)
            d = args[0]
            return (NoTangent(), NoTangent(), unbroadcast(d, -np.real(ȳ) * Ω / d), *rest)

        freq_pullback.__name__ = freq_pullback.__qualname__ = f"{f.__name__}_pullback"
        return Ω, freq_pullback

    def freq_frule(ḟ: Any, *args: Any, **kwargs: Any) -> Any:
        k = len(args) // 2
        Ω = f(*args[k:], **kwargs)
        ḋ = unthunk(args[1]) if k > 1 else ZeroTangent()
        if is_zero(ḋ):
            return Ω, ZeroTangent()
        return Ω, project(Ω, -Ω * ḋ / args[k + 1])

    freq_rrule.__doc__ = f"rrule of ``np.fft.{f.__name__}``: ``n`` a count, ``d`` gets -Σȳy/d."
    freq_frule.__doc__ = f"frule of ``np.fft.{f.__name__}``: ẏ = -y ḋ/d."
    return freq_rrule, freq_frule


def _register(f: Callable, rules: tuple[Callable, Callable]) -> None:
    rrule.register(f)(rules[0])
    frule.register(f)(rules[1])


for _name in _TRANSFORMS:
    _register(getattr(np.fft, _name), _transform_rules(_name))
_register(np.fft.fftshift, _shift_rules(np.fft.fftshift, np.fft.ifftshift))
_register(np.fft.ifftshift, _shift_rules(np.fft.ifftshift, np.fft.fftshift))
_register(np.fft.fftfreq, _freq_rules(np.fft.fftfreq))
_register(np.fft.rfftfreq, _freq_rules(np.fft.rfftfreq))
