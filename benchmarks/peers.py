"""The peer ADs the benchmark compares against, when installed: autograd, JAX, PyTorch.

None of them is a dependency: `available()` tries each import and returns the peers it
found (and why the others are missing). A peer runs the very same workload source as
``ad``: `load_workloads` loads ``workloads.py`` again as a fresh module whose ``np`` and
``math`` globals are rebound to the peer's array namespace, so every helper the loss
calls sees the peer's functions. Each `Peer.prepare` returns a zero-argument callable
computing the gradient (synchronised, for JAX) and a function converting its result to
a tuple of numpy arrays, so the check and the timing are separate.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np

__all__ = ["Peer", "available", "load_workloads"]

WORKLOADS_PATH = Path(__file__).with_name("workloads.py")

# The ``math`` functions the workloads call, and their numpy-style names.
MATH_NAMES = {
    "sin": "sin",
    "cos": "cos",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "tanh": "tanh",
    "atan": "arctan",
    "cosh": "cosh",
}


@dataclass(frozen=True)
class Peer:
    """An AD to compare against: ``prepare(index, params, data) -> (call, to_numpy)``."""

    name: str
    version: str
    prepare: Callable


def load_workloads(module_name: str, np_like=np, math_like=math) -> ModuleType:
    """``workloads.py`` loaded as a new module, with ``np`` and ``math`` rebound."""
    spec = importlib.util.spec_from_file_location(module_name, WORKLOADS_PATH)
    module = importlib.util.module_from_spec(spec)
    # dataclasses look the defining module up in sys.modules.
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    module.np = np_like
    module.math = math_like
    return module


def _math_from(xp, wrap=lambda fn: fn) -> SimpleNamespace:
    funcs = {name: wrap(getattr(xp, xp_name)) for name, xp_name in MATH_NAMES.items()}
    return SimpleNamespace(pi=math.pi, e=math.e, **funcs)


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _as_numpy(values) -> tuple:
    return tuple(np.asarray(v, dtype=float) for v in values)


def _autograd() -> list[Peer]:
    import autograd
    import autograd.numpy as anp

    module = load_workloads("bench_workloads_autograd", anp, _math_from(anp))

    def prepare(index, params, data):
        loss = module.WORKLOADS[index].bind(*data)
        grad = autograd.grad(lambda ps: loss(*ps))

        def call():
            return grad(tuple(params))

        return call, _as_numpy

    return [Peer("autograd", _version("autograd"), prepare)]


def _jax() -> list[Peer]:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    module = load_workloads("bench_workloads_jax", jnp, _math_from(jnp))

    def convert(values):
        return tuple(jnp.asarray(v) if isinstance(v, np.ndarray) else v for v in values)

    def make(jit):
        def prepare(index, params, data):
            loss = module.WORKLOADS[index].bind(*convert(data))
            grad = jax.grad(loss, argnums=tuple(range(len(params))))
            if jit:
                grad = jax.jit(grad)
            args = convert(params)

            def call():
                return jax.block_until_ready(grad(*args))

            return call, _as_numpy

        return prepare

    return [
        Peer("jax eager", _version("jax"), make(jit=False)),
        Peer("jax jit", _version("jax"), make(jit=True)),
    ]


def _torch() -> list[Peer]:
    import torch

    torch.set_num_threads(1)
    f64 = torch.float64

    def tensor(v):
        return torch.as_tensor(v, dtype=f64)

    def numbers_too(fn):
        # ``math.log(2 * math.pi)`` passes a float; torch functions want tensors.
        def call(v):
            return fn(tensor(v))

        return call

    def reduction(fn):
        def call(x, axis=None, keepdims=False):
            if axis is None:
                return fn(x)
            return fn(x, dim=axis, keepdim=keepdims)

        return call

    def maximum(a, b):
        return torch.maximum(tensor(a), tensor(b))

    def zeros(shape):
        return torch.zeros(shape, dtype=f64)

    np_like = SimpleNamespace(
        sin=torch.sin,
        cos=torch.cos,
        exp=torch.exp,
        log=torch.log,
        tanh=torch.tanh,
        maximum=maximum,
        max=reduction(torch.amax),
        sum=reduction(torch.sum),
        mean=reduction(torch.mean),
        zeros=zeros,
        diagonal=torch.diagonal,
        linalg=SimpleNamespace(cholesky=torch.linalg.cholesky, solve=torch.linalg.solve),
    )
    module = load_workloads("bench_workloads_torch", np_like, _math_from(torch, numbers_too))

    def prepare(index, params, data):
        tdata = tuple(torch.from_numpy(d) if isinstance(d, np.ndarray) else d for d in data)
        loss = module.WORKLOADS[index].bind(*tdata)
        leaves = tuple(tensor(p).requires_grad_(True) for p in params)

        def call():
            return torch.autograd.grad(loss(*leaves), leaves)

        def to_numpy(grads):
            return tuple(g.detach().numpy() for g in grads)

        return call, to_numpy

    return [Peer("torch eager", _version("torch"), prepare)]


def available() -> tuple[list[Peer], dict[str, str]]:
    """The installed peers, and for each missing one the reason (its import error)."""
    found, missing = [], {}
    for name, load in (("autograd", _autograd), ("jax", _jax), ("torch", _torch)):
        try:
            found.extend(load())
        except Exception as e:  # ImportError, or a broken install: skip that peer
            missing[name] = f"{type(e).__name__}: {e}"
    return found, missing
