"""Rules for ``np.einsum``: any subscripts, explicit or implicit, with ellipses.

``einsum`` is linear in each operand. The cotangent of operand ``k`` is an
einsum of the output cotangent with the conjugates of the other operands,
whose output subscripts are operand ``k``'s. Three cases need more than that:

* a letter repeated within operand ``k`` (``"ii->i"``, ``"ii"``) reads a
  diagonal: the cotangent is computed over the distinct letters and written
  onto that diagonal of a zero array;
* a letter found in operand ``k`` only (``"ij->i"``) was summed: the
  cotangent is constant along it (broadcast);
* a letter of size 1 in operand ``k`` but larger elsewhere was broadcast: the
  cotangent is summed along it.

Both the ``einsum("ij,jk->ik", a, b)`` and the interleaved
``einsum(a, [0, 1], b, [1, 2], [0, 2])`` forms are supported; the operands get
thunked cotangents, subscripts get ``NoTangent()``. ``optimize=`` is passed on
to the einsums of the pullback. Not supported: ``out=`` (in-place output).
"""

from __future__ import annotations

import functools
import string
from typing import Any

import numpy as np

from rulescore import (
    AbstractZero,
    NoTangent,
    Thunk,
    ZeroTangent,
    frule,
    is_duck_array,
    rrule,
    unthunk,
)

from ._numpy_linear import conj, dense, match_output, project_nested, scatter_zeros
from ._util import asarray

__all__ = ["parse_einsum"]

_NO = NoTangent()
_LETTERS = string.ascii_letters


def _sublist_to_str(sub: Any) -> str:
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sub)


def _split_call(args: tuple) -> tuple:
    """``(subscripts, operand positions)`` of an einsum call in either form."""
    if isinstance(args[0], str):
        return args[0], list(range(1, len(args)))
    positions = list(range(0, len(args) - 1, 2))
    subs = ",".join(_sublist_to_str(args[p + 1]) for p in positions)
    if len(args) % 2:
        subs += "->" + _sublist_to_str(args[-1])
    return subs, positions


def parse_einsum(subscripts: str, shapes: list) -> tuple:
    """Explicit, ellipsis-free subscripts: ``(input specs, output spec)``.

    Ellipses become fresh letters, right-aligned as numpy broadcasts them; an
    implicit output is the letters used once, in ASCII order, after the
    ellipsis dimensions.

    >>> parse_einsum("ij,jk", [(2, 3), (3, 4)])
    (['ij', 'jk'], 'ik')
    >>> parse_einsum("...i->...", [(5, 2, 3)])
    (['YZi'], 'YZ')
    """
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, out = subscripts.partition("->")
    specs = lhs.split(",")
    used = set(subscripts) - set(".,->")
    fresh = [c for c in reversed(_LETTERS) if c not in used]
    ranks = [len(shape) - len(s.replace("...", "")) for s, shape in zip(specs, shapes)]
    ellipsis = "".join(sorted(fresh[: max([0, *ranks])]))
    specs = [s.replace("...", ellipsis[len(ellipsis) - r :]) for s, r in zip(specs, ranks)]
    if not arrow:
        letters = lhs.replace(",", "").replace("...", "")
        out = "..." + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return specs, out.replace("...", ellipsis)


def _einsum_grad(k: int, specs: list, out: str, ops: list, ȳ: Any, kw: dict) -> np.ndarray:
    x = asarray(ops[k])
    spec = specs[k]
    sizes: dict[str, int] = {}
    for s, op in zip(specs, ops):
        for c, n in zip(s, np.shape(op)):
            sizes[c] = max(sizes.get(c, 1), n)
    own = dict(zip(spec, x.shape))
    other_specs = [s for j, s in enumerate(specs) if j != k] + [out]
    other_ops = [conj(asarray(o)) for j, o in enumerate(ops) if j != k] + [asarray(ȳ)]
    elsewhere = set("".join(other_specs))
    distinct = "".join(dict.fromkeys(spec))
    # Letters summed in operand k alone are left out (broadcast back below), and so
    # are letters operand k broadcast from size 1 (einsum sums them for us).
    kept = "".join(c for c in distinct if c in elsewhere and own[c] == sizes[c])
    G = np.einsum(",".join(other_specs) + "->" + kept, *other_ops, **kw)
    # Unit axes for the letters left out; a kept letter may also be of size 1 in G
    # when every other operand broadcast it: broadcast_to restores both.
    dims = dict(zip(kept, G.shape))
    G = G.reshape([dims.get(c, 1) for c in distinct])
    target = tuple(own[c] for c in distinct)
    if G.shape != target:
        G = np.broadcast_to(G, target)
    if distinct == spec:
        return G if is_duck_array(G) or G.flags.writeable else np.array(G)
    dx = scatter_zeros(x, G)
    where = {
        c: np.arange(own[c]).reshape([-1 if d == c else 1 for d in distinct]) for c in distinct
    }
    dx[tuple(where[c] for c in spec)] = G  # the diagonal the repeated letters read
    return dx


@rrule.register(np.einsum)
def _(*args: Any, **kw: Any) -> Any:
    y = np.einsum(*args, **kw)
    subscripts, positions = _split_call(args)
    ops = [args[p] for p in positions]
    specs, out = parse_einsum(subscripts, [np.shape(o) for o in ops])
    grad_kw = {k: v for k, v in kw.items() if k == "optimize"}

    def einsum_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        cotangents: list[Any] = [_NO] * (len(args) + 1)
        for k, p in enumerate(positions):
            if isinstance(ȳ, AbstractZero):
                cotangents[p + 1] = ZeroTangent()
                continue
            dx = Thunk(functools.partial(_einsum_grad, k, specs, out, ops, ȳ, grad_kw))
            cotangents[p + 1] = project_nested(ops[k], dx)
        return tuple(cotangents)

    return y, einsum_pullback


@frule.register(np.einsum)
def _(ḟ: Any, *tangents_and_args: Any, **kw: Any) -> Any:
    n = len(tangents_and_args) // 2
    tangents, args = tangents_and_args[:n], tangents_and_args[n:]
    y = np.einsum(*args, **kw)
    _, positions = _split_call(args)
    ẏ: Any = ZeroTangent()
    for p in positions:
        ṫ = unthunk(tangents[p])
        if isinstance(ṫ, AbstractZero):
            continue
        swapped = list(args)
        swapped[p] = dense(ṫ, args[p])
        ẏ = ẏ + np.einsum(*swapped, **kw)
    return y, match_output(y, ẏ)
