"""Third derivatives through every combination of forward and reverse levels.

Issue 20: in-place updates of arrays that carry a derivative (``out[1] = t``
after ``out[0] = t``, ``acc *= 2``, ``acc += t``, ``out[[0]] *= 2``, a fill
loop), a second ``list.append``, and the linear algebra rules that build their
tangents with keywords (``slogdet``, ``eigh``, ``svd``, ``qr``) or call
``frule_via_ad`` with keywords (``cholesky``). Each case is checked against a
hand-derived third derivative and a central difference of the second. The
fresh-process cases (a cache warmed by an earlier call must not decide the
outcome) run in a subprocess.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ad


def _d(f, x):
    return ad.jvp(f, (x,), (1.0,))[1]


def _g(f, x):
    return ad.gradient(f, x)[0]


_MODES = {"D": _d, "G": _g}
_COMBOS = ["".join(c) for c in itertools.product("DG", repeat=3)]

_X = np.array([[2.0, 0.3], [0.1, 1.5]])
_S = np.array([[2.0, 0.3], [0.3, 1.5]])
_W = np.array([[1.0, 0.5], [2.0, 3.0]])
_E = np.array([[0.0, 1.0], [1.0, 0.5]])


def setitem_twice(t):
    out = np.zeros(2)
    out[0] = t
    out[1] = t
    return np.sum(out**4)  # 2 t⁴


def imul(t):
    acc = np.zeros(2) + t
    acc *= 2.0
    return np.sum(acc**4)  # 32 t⁴


def iadd_fresh(t):
    acc = np.zeros(2)
    acc += t
    return np.sum(acc**4)  # 2 t⁴


def fill_loop(t):
    a = np.zeros(3)
    for i in range(3):
        a[i] = t ** (i + 1)
    return np.sum(a * a)  # t² + t⁴ + t⁶


def fancy_imul(t):
    out = np.zeros(2) + t
    out[[0]] *= 2.0
    return np.sum(out**4)  # 17 t⁴


def float32_setitem(t):
    out = np.zeros(3, dtype=np.float32)
    out[1] = t
    out[2] = 2.0 * t
    return np.sum(out.astype(np.float64) ** 3)  # 9 t³


def logdet(t):
    return np.linalg.slogdet(_X + t * np.eye(2))[1]


def eigh_values(t):
    return np.sum(np.linalg.eigh(_S + t * _E)[0] ** 3)


def eigh_vector(t):
    w, v = np.linalg.eigh(_S + t * _E)
    return w[1] * np.abs(v[0, 1])


def svd_full(t):
    u, s, vt = np.linalg.svd(_X + t * _W)
    return np.sum(s**3) + np.abs(u[0, 0])


def qr_full(t):
    q, r = np.linalg.qr(_X + t * _W)
    return np.sum(r * _W) + q[1, 0] ** 2


def cholesky(t):
    return np.sum(np.linalg.cholesky(_S + t * np.eye(2)) * _W)


def _logdet_third(t):
    xi = np.linalg.inv(_X + t * np.eye(2))
    return 2.0 * np.trace(xi @ xi @ xi)  # d³/dt³ log det(X + t I)


_T = 0.3
#: (function, its hand-derived third derivative at _T, or None: central differences only)
_CASES = [
    (setitem_twice, 48 * _T),
    (imul, 768 * _T),
    (iadd_fresh, 48 * _T),
    (fill_loop, 24 * _T + 120 * _T**3),
    (fancy_imul, 408 * _T),
    (float32_setitem, 54.0),
    (logdet, _logdet_third(_T)),
    (eigh_values, None),
    (eigh_vector, None),
    (svd_full, None),
    (qr_full, None),
    (cholesky, None),
]


def _second(f, t):
    return _g(lambda s: _g(f, s), t)


def _central_third(f, t, h=1e-4):
    return (_second(f, t + h) - _second(f, t - h)) / (2 * h)


@pytest.mark.parametrize("combo", _COMBOS)
@pytest.mark.parametrize(("f", "expected"), _CASES, ids=[c[0].__name__ for c in _CASES])
def test_third_derivative_every_combination(f, expected, combo):
    a, b, c = (_MODES[k] for k in combo)
    got = a(lambda u: b(lambda v: c(f, v), u), _T)
    fd = _central_third(f, _T)
    # float32 entries make the differences of second derivatives noisy (~1e-4)
    assert got == pytest.approx(fd, rel=1e-3 if f is float32_setitem else 1e-5, abs=1e-6)
    if expected is not None:
        assert got == pytest.approx(expected, rel=1e-9)


def test_third_order_through_hessian_and_hvp():
    """jvp(hvp) and gradient(hessian) of f = Σ xᵢ⁴ (H = diag(12 xᵢ²)), written in place."""

    def f(x):
        out = np.zeros(2)
        out[0] = x[0]
        out[1] = x[1]
        out *= 1.0
        return np.sum(out**4)

    x = np.array([0.3, -0.2])
    v = np.array([1.0, 0.5])
    # d/dt of hvp(x + t v, v) = 24 xᵢ vᵢ²
    hvp_dot = ad.jvp(lambda y: ad.hvp(f, (y,), (v,))[0], (x,), (v,))[1]
    np.testing.assert_allclose(hvp_dot, 24 * x * v**2, rtol=1e-10)
    # ∇ trace(hessian) = 24 x
    grad_tr = ad.gradient(lambda y: np.trace(ad.hessian(f, y)), x)[0]
    np.testing.assert_allclose(grad_tr, 24 * x, rtol=1e-10)


_FRESH = """
import numpy as np
import ad
D = lambda f, x: ad.jvp(f, (x,), (1.0,))[1]
G = lambda f, x: ad.gradient(f, x)[0]
S = np.array([[2.0, 0.3], [0.3, 1.5]])
W = np.array([[1.0, 0.0], [2.0, 3.0]])
def f(t):
    return np.sum(np.linalg.cholesky(S + t * np.eye(2)) * W)
{body}
"""


@pytest.mark.parametrize("combo", ["DDG", "GGD", "DGD", "DDD"])
def test_cholesky_third_order_first_call_in_a_fresh_process(combo, tmp_path):
    """The first nested call in a process must not depend on what ran before it
    (``frule_via_ad`` with keywords once went through the runtime's own dispatch,
    differentiated as source, whose outcome depended on the transform cache)."""
    a, b, c = combo
    body = f"print(float({a}(lambda u: {b}(lambda v: {c}(f, v), u), 0.0)))"
    out = _run(_FRESH.format(body=body), tmp_path)
    assert float(out) == pytest.approx(0.5092789055811544, rel=1e-9)


def test_eigh_hessian_in_a_fresh_process(tmp_path):
    """np.finfo(...).tiny (a cached_property that writes the finfo on first read)
    carries no derivative: the rule that reads it is differentiated again."""
    script = """
    import numpy as np
    import ad
    def f(x):
        m = np.array([[2.0, 0.0], [0.0, 1.0]]) + np.outer(x, x)
        w, v = np.linalg.eigh(m)
        return w[1]
    x = np.array([0.3, -0.2])
    h = ad.hessian(f, x)
    np.finfo(np.float64).tiny
    print(float(np.abs(h - ad.hessian_reverse(f, x)).max()), float(h[0, 0]))
    """
    diff, h00 = _run(textwrap.dedent(script), tmp_path).split()
    assert float(diff) < 1e-12
    assert float(h00) == pytest.approx(2.044831454910595, rel=1e-9)


def test_machine_limits_are_derivative_free():
    from ad.runtime.library_code import derivative_free

    assert derivative_free(np.finfo(np.float32))
    assert derivative_free(np.iinfo(np.int64))

    def f(x):
        return x * np.finfo(x.dtype).tiny / np.finfo(x.dtype).eps

    x = np.array([1.0, 2.0])
    scale = np.finfo(np.float64).tiny / np.finfo(np.float64).eps
    np.testing.assert_allclose(ad.gradient(lambda y: np.sum(f(y)), x)[0], [scale, scale])
    np.testing.assert_allclose(ad.jvp(f, (x,), (np.ones(2),))[1], [scale, scale])


def _run(code: str, tmp_path) -> str:
    """Run ``code`` as a script file (the AD reads its source) in a new interpreter."""
    script = tmp_path / "fresh_third_order.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()
