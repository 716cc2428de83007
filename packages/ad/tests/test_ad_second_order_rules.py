"""Every rule to second order, in every mode combination (issue 20).

For each differentiable function of ``rules.inventory()`` (inputs in
``second_order_cases``), the output is reduced to a real scalar ``s`` by a
fixed random projection with a quadratic term (so that second derivatives also
flow through the rule's pullback with respect to its cotangent), and a
Hessian-vector product ``H v`` of ``s`` is computed four ways:

* ``rev-rev``: ``gradient`` of ``<gradient(s), v>`` (reverse over reverse);
* ``fwd-rev``: ``jvp`` of ``gradient(s)`` along ``v`` (forward over reverse);
* ``rev-fwd``: ``gradient`` of ``jvp(s, v)`` (reverse over forward);
* ``fwd-fwd``: ``jvp`` of ``jvp(s, v)`` along ``w``, giving ``<w, H v>``;

and checked against central differences (4 points) of the first-order
``gradient`` along ``v``, in float64 and, where the function supports it,
complex128 (complex numbers as pairs of reals: ``gradient`` is
``∂s/∂re + i ∂s/∂im``).

The default run checks a sample: every ``SAMPLE_EVERY``-th function, float64,
one mode combination each (rotating). ``AD_SECOND_ORDER=full`` (the
``second-order`` tox env) runs every function, dtype and mode.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np
import pytest
from second_order_cases import CASES, EXCLUDED, Case

import ad
import rules
from rulescore import rrule

FULL = os.environ.get("AD_SECOND_ORDER", "") == "full"
MODES = ("rev-rev", "fwd-rev", "rev-fwd", "fwd-fwd")
SAMPLE_EVERY = 8
STEP = 1e-3


def _nondifferentiable(f: Any) -> bool:
    """Whether every rule registered for ``f`` is a ``non_differentiable`` one."""
    rs = [r for r in rrule.table.rules_for(f) if not r.opt_out]
    return bool(rs) and all(
        getattr(r.impl, "__name__", "").startswith("nondiff_rrule_") for r in rs
    )


INVENTORY = {f"{e.module}.{e.name}": e for e in rules.inventory()}
NONDIFFERENTIABLE = {k for k, e in INVENTORY.items() if _nondifferentiable(e.function)}

#: Combinations that fail for a reason inside ``ad`` (not in a rule): (key, mode,
#: dtype) with ``None`` for any; skipped with the reason so the list stays visible.
AD_GAPS: dict[tuple[str, str | None, str | None], str] = {}


def _gap(key: str, mode: str, dtype: str) -> str | None:
    for k in ((key, mode, dtype), (key, mode, None), (key, None, dtype), (key, None, None)):
        if k in AD_GAPS:
            return AD_GAPS[k]
    return None


# ---------------------------------------------------------------- the scalar reduction


def _weights(y: Any, rng: np.random.Generator, quadratic: bool) -> Any:
    """A projection mirroring ``y``: for each float or complex leaf an array stacking the
    linear and quadratic weights; ``None`` for integer or boolean leaves."""
    if isinstance(y, (tuple, list)):
        return tuple(_weights(v, rng, quadratic) for v in y)
    a = np.asarray(y)
    if a.dtype.kind not in "fc":
        return None
    w = rng.standard_normal((2, *a.shape))
    if a.dtype.kind == "c":
        w = w + 1j * rng.standard_normal((2, *a.shape))
    if not quadratic:
        w[1] = 0.0
    return w


def _reduce(y: Any, w: Any) -> Any:
    """``Σ re(w₀ y) + re(w₁ y²)`` over the leaves (differentiated by ad)."""
    if w is None:
        return 0.0
    if isinstance(w, tuple):
        s = 0.0
        for i in range(len(w)):
            if w[i] is not None:
                s = s + _reduce(y[i], w[i])
        return s
    if np.iscomplexobj(w):
        return np.sum(np.real(y * w[0])) + np.sum(np.real(y * y * w[1]))
    return np.sum(y * w[0]) + np.sum(y * y * w[1])


def _inner(gs: tuple, vs: tuple) -> Any:
    """The real inner product of two tuples of tangents (complex: as pairs of reals)."""
    s = 0.0
    for g, v in zip(gs, vs):
        if g is not None:
            if np.iscomplexobj(v):
                s = s + np.sum(np.real(np.conj(g) * v))
            else:
                s = s + np.sum(g * v)
    return s


# ---------------------------------------------------------------- problems


class Problem:
    """One function at one dtype: its scalar ``s``, point, directions and reference."""

    def __init__(self, key: str, dtype: str, case: Case | None = None) -> None:
        case = CASES[key] if case is None else case
        self.case = case
        xs = case.args if dtype == "float64" else case.cargs
        self.xs = tuple(xs)
        rng = np.random.default_rng(_seed(key))
        fn = case.fn
        w = _weights(fn(*self.xs), rng, case.quadratic)

        def s(*xs: Any) -> Any:
            return _reduce(fn(*xs), w)

        self.s = s
        self.vs = tuple(_direction(x, rng, case.symmetric) for x in self.xs)
        self.ws = tuple(_direction(x, rng, case.symmetric) for x in self.xs)

    @functools.cached_property
    def reference(self) -> tuple:
        """Central differences (4 points) of the first-order gradient along ``v``."""
        h = STEP

        def g(t: float) -> tuple:
            xs = tuple(_shift(x, v, t) for x, v in zip(self.xs, self.vs))
            return _flat(ad.gradient(self.s, *xs), self.xs)

        return (8 * (g(h) - g(-h)) - (g(2 * h) - g(-2 * h))) / (12 * h), g(0.0)

    def hvp(self, mode: str) -> np.ndarray:
        s, xs, vs = self.s, self.xs, self.vs
        if mode == "rev-rev":
            out = ad.gradient(lambda *x: _inner(ad.gradient(s, *x), vs), *xs)
        elif mode == "fwd-rev":
            out = ad.jvp(lambda *x: ad.gradient(s, *x), xs, vs)[1]
        elif mode == "rev-fwd":
            out = ad.gradient(lambda *x: ad.jvp(s, x, vs)[1], *xs)
        else:
            raise ValueError(mode)
        return _flat(out, xs)

    def wHv(self) -> Any:
        s, xs, vs = self.s, self.xs, self.vs
        return ad.jvp(lambda *x: ad.jvp(s, x, vs)[1], xs, self.ws)[1]


def _seed(key: str) -> int:
    return sum(ord(c) * (i + 1) for i, c in enumerate(key)) % 2**32


def _direction(x: Any, rng: np.random.Generator, symmetric: bool = False) -> Any:
    a = np.asarray(x)
    d = rng.standard_normal(a.shape)
    if a.dtype.kind == "c":
        d = d + 1j * rng.standard_normal(a.shape)
    if symmetric and a.ndim == 2 and a.shape[0] == a.shape[1]:
        d = (d + d.conj().T) / 2
    if isinstance(x, (float, complex)):
        return d.item()
    return d


def _shift(x: Any, v: Any, t: float) -> Any:
    y = x + t * v
    return type(x)(y) if isinstance(x, (float, complex)) else y


def _flat(gs: Any, xs: tuple) -> np.ndarray:
    """The tangents of ``xs`` as one complex vector (``None``/zeros as zeros)."""
    if not isinstance(gs, tuple):
        gs = (gs,)
    parts = []
    for g, x in zip(gs, xs, strict=True):
        shape = np.shape(x)
        if g is None or not isinstance(g, (int, float, complex, np.ndarray, np.generic)):
            parts.append(np.zeros(int(np.prod(shape))))
        else:
            parts.append(np.broadcast_to(np.asarray(g), shape).ravel())
    return np.concatenate([p.astype(complex) for p in parts])


@functools.cache
def problem(key: str, dtype: str) -> Problem:
    return Problem(key, dtype)


# ---------------------------------------------------------------- parameters


#: numpy's deprecation warnings of the deprecated names that still have rules.
_MARKS = {
    "numpy.row_stack": pytest.mark.filterwarnings(
        "ignore:`row_stack` alias is deprecated:DeprecationWarning"
    ),
}


def _param(key: str, dtype: str, mode: str) -> Any:
    marks = [_MARKS[key]] if key in _MARKS else []
    return pytest.param(key, dtype, mode, id=f"{key}-{dtype}-{mode}", marks=marks)


def _params() -> list:
    keys = sorted(CASES)
    if FULL:
        return [
            _param(key, dtype, mode)
            for key in keys
            for dtype in (("float64", "complex128") if CASES[key].cargs else ("float64",))
            for mode in MODES
        ]
    return [
        _param(key, "float64", MODES[i % len(MODES)]) for i, key in enumerate(keys[::SAMPLE_EVERY])
    ]


@pytest.mark.parametrize("key, dtype, mode", _params())
def test_hessian_vector_product_matches_differences_of_the_gradient(key, dtype, mode):
    reason = _gap(key, mode, dtype)
    if reason:
        pytest.skip(reason)
    p = problem(key, dtype)
    ref, g0 = p.reference
    scale = max(
        1.0, float(np.max(np.abs(ref), initial=0.0)), float(np.max(np.abs(g0), initial=0.0))
    )
    tol = p.case.tol
    if mode == "fwd-fwd":
        out = p.wHv()
        got = 0.0 if out is None else complex(np.asarray(out).item())
        want = np.real(np.vdot(_flat(p.ws, p.xs), ref))
        assert abs(got - want) <= tol * scale * max(1.0, np.sum(np.abs(_flat(p.ws, p.xs)))), (
            got,
            want,
        )
        return
    got = p.hvp(mode)
    np.testing.assert_allclose(
        got, ref, rtol=tol, atol=tol * scale, err_msg=f"{key} {dtype} {mode}"
    )


def test_every_inventory_function_is_covered_or_excluded():
    """No silent omissions: each differentiable function has a case or a reason."""
    missing = sorted(set(INVENTORY) - NONDIFFERENTIABLE - set(CASES) - set(EXCLUDED))
    assert not missing, f"no second-order case or exclusion for: {missing}"
    both = sorted(set(CASES) & set(EXCLUDED))
    assert not both, f"both covered and excluded: {both}"
    stale = sorted((set(CASES) | set(EXCLUDED)) - set(INVENTORY))
    assert not stale, f"not in rules.inventory(): {stale}"
    assert not set(CASES) & NONDIFFERENTIABLE
