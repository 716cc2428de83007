"""Smoke test of the benchmark workloads (``<repo>/benchmarks/workloads.py``), small sizes.

Each workload runs once: its hand-written gradient is checked against central
differences along a random direction, and ``ad.gradient`` against the hand-written
gradient. Each spelling of ``benchmarks/variants*.py`` is checked the same way against
its workload, and the variants runner runs once with no time to speak of. The timing
itself is ``tox -e bench``, never part of the test suite.
"""

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import ad

WORKLOADS_PATH = Path(__file__).resolve().parents[3] / "benchmarks" / "workloads.py"


def _load_workloads():
    spec = importlib.util.spec_from_file_location("ad_bench_workloads", WORKLOADS_PATH)
    module = importlib.util.module_from_spec(spec)
    # dataclasses look the defining module up in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


WORKLOADS = _load_workloads().WORKLOADS


def _inputs(w, seed=0):
    params, data = w.make(np.random.default_rng(seed), small=True)
    return params, data


def _direction(w, params, rng):
    directions = []
    for i, p in enumerate(params):
        v = rng.standard_normal(np.shape(p))
        if i in w.symmetric:
            # Only symmetric perturbations are meaningful: the function reads one triangle.
            v = v + v.T
        directions.append(v if np.ndim(p) else float(v))
    return directions


@pytest.mark.parametrize("w", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_hand_written_gradient_matches_finite_differences(w):
    params, data = _inputs(w)
    loss = w.bind(*data)
    vs = _direction(w, params, np.random.default_rng(1))
    h = 1e-6
    plus = loss(*[p + h * v for p, v in zip(params, vs)])
    minus = loss(*[p - h * v for p, v in zip(params, vs)])
    numeric = (plus - minus) / (2 * h)
    analytic = sum(np.sum(g * v) for g, v in zip(w.grad(*params, *data), vs))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("w", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_ad_gradient_matches_hand_written(w):
    params, data = _inputs(w)
    got = ad.gradient(w.bind(*data), *params)
    want = w.grad(*params, *data)
    assert len(got) == len(want)
    for i, (g, expected) in enumerate(zip(got, want)):
        assert g is not None, f"no gradient for parameter {i}"
        np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12, err_msg=f"parameter {i}")


def _load_variants():
    # variants.py imports harness.py and workloads.py by name, as run.py does.
    sys.path.insert(0, str(WORKLOADS_PATH.parent))
    import variants

    return variants


VARIANTS = _load_variants()


@pytest.mark.parametrize(
    "v", VARIANTS.all_variants(), ids=lambda v: f"{v.workload}: {v.name}".replace(" ", "_")
)
def test_spelling_matches_its_workload(v):
    VARIANTS.check_variant(v)


def test_variants_runner_smoke(capsys):
    # --small times one short batch of each: the tables, not the figures, are checked.
    args = argparse.Namespace(workloads=[], small=True, seed=0, no_json=True)
    assert VARIANTS.run(args) == 0
    out = capsys.readouterr().out
    assert "FAILED" not in out and "WRONG" not in out, out
