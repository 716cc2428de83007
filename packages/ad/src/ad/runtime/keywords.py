"""Keyword arguments of calls that a rule answers.

Rules give keyword arguments no derivative (ChainRules' convention), so a call
such as ``np.average(x, weights=w)`` or ``np.trapezoid(y, x=t)`` would lose the
derivative through ``w`` or ``t``. When the function's signature lets such a
keyword be passed by position, both modes make the call positionally
(``np.average(x, None, w)``), filling the parameters in between with their
defaults, and the rule's derivative for that position is the keyword's. A
keyword that cannot move (keyword-only, or a builtin without a signature)
keeps a not-implemented derivative, which raises only if it is used.

>>> import numpy as np
>>> args, kwargs, names = keywords_as_positions(np.average, (np.ones(2),), {"weights": np.ones(2)})
>>> len(args), kwargs, names
(3, {}, (None, 'weights'))
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from ad.runtime.tracebacks import function_name
from ad.transform.holders import stateful

__all__ = ["keyword_reason", "keywords_as_positions", "maybe_differentiable"]

_EMPTY = inspect.Parameter.empty
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_PARAMS: dict[Any, tuple | None] = {}
_PARAMS_BOUND = 2048


def maybe_differentiable(v: Any) -> bool:
    """Whether a keyword argument's value may carry a derivative a rule drops: a float
    or complex number, a float or complex array or numpy scalar, a user object, or a
    list, tuple or dict holding one (``weights=[a, b]``). A function passed by keyword
    (``sorted(xs, key=...)``) is not: rules use it to choose, not to compute.

    >>> maybe_differentiable([1, 2.5]), maybe_differentiable(abs), maybe_differentiable(3)
    (True, False, False)
    """
    if isinstance(v, (float, complex)):
        return True
    if stateful(v) and not callable(v):  # a user object (sum(objs, start=P(a)))
        return True
    if isinstance(v, (list, tuple)):
        return any(maybe_differentiable(e) for e in v)
    if isinstance(v, dict):
        return any(maybe_differentiable(e) for e in v.values())
    np = sys.modules.get("numpy")
    return (
        np is not None
        and isinstance(v, (np.ndarray, np.inexact))
        and getattr(v, "dtype", None) is not None
        and v.dtype.kind in "fc"
    )


def keywords_as_positions(f: Any, args: tuple, kwargs: dict) -> tuple | None:
    """``(args2, kwargs2, names)``: the call ``f(*args, **kwargs)`` with each keyword
    that may carry a derivative passed by position, or ``None`` when none can move.
    ``names`` names the keyword at each added position (``None``: a default)."""
    if not any(maybe_differentiable(v) for v in kwargs.values()):
        return None  # the usual keyword call (axis=0, dtype=...): nothing to move
    params = _positional_params(f)
    if params is None:
        return None
    back: dict = {}  # a parameter's name -> the keyword the caller used for it
    for k, name in _aliases(f).items():  # np.clip(x, min=lo): keyword-only aliases
        if k in kwargs and name not in kwargs:
            back[name] = k
    if back:
        kwargs = {**{n: kwargs[k] for n, k in back.items()}, **kwargs}
    where = {name: i for i, (name, _) in enumerate(params)}
    last = max((where.get(k, -1) for k, v in kwargs.items() if maybe_differentiable(v)), default=-1)
    if last < len(args):
        return None
    extra: list = []
    names: list = []
    moved: set[str] = set()
    for name, default in params[len(args) : last + 1]:
        if name in kwargs:
            extra.append(kwargs[name])
            names.append(back.get(name, name))
            moved.update((name, back.get(name, name)))
        elif default is not _EMPTY:
            extra.append(default)
            names.append(None)
        else:
            return None
    rest = {k: v for k, v in kwargs.items() if k not in moved}
    return (*args, *extra), rest, tuple(names)


def _aliases(f: Any) -> dict:
    """Keyword-only names a function takes for its positional parameters."""
    np = sys.modules.get("numpy")
    if np is not None and f is np.clip:
        return {"min": "a_min", "max": "a_max"}
    return {}


def _positional_params(f: Any) -> tuple | None:
    """``(name, default)`` of ``f``'s leading parameters that can be passed by position."""
    try:
        return _PARAMS[f]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return None
    params: Any
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        params = None
    else:
        params = []
        for p in sig.parameters.values():
            if p.kind not in _POSITIONAL:
                break
            params.append((p.name, p.default))
        params = tuple(params)
    if len(_PARAMS) >= _PARAMS_BOUND:  # bounded: callables made per call leave
        _PARAMS.clear()
    _PARAMS[f] = params
    return params


def keyword_reason(f: Any, names: list, rule: str, site: str) -> str:
    """Why the derivative through keyword arguments ``names`` of ``f`` is missing."""
    called = f" (called at {site})" if site else ""
    which = ", ".join(repr(k) for k in names)
    return (
        f"{function_name(f)}{called} has {rule}, and rules give no derivative for keyword "
        f"argument {which}, which ad cannot pass by position (keyword-only).\n"
        "To fix: compute that argument's contribution outside the call, or define the "
        f"function in Python without a rule (or give its rule a positional parameter)"
    )
