"""User-level utilities, after Zygote's: gradient hooks, checkpointing, reflection.

``hook``, ``showgrad`` and ``checkpoint`` are plain functions whose custom
backward pass is an ``rrule`` registered under ``ADConfig``: differentiated
code calls them through the AD's dispatch, so the rule runs instead of the
function. ``dropgrad`` is ``non_differentiable``. ``isderiving`` and
``nestlevel`` take no arguments, so differentiated code calls them as plain
Python (nothing flows into them); they look at the call stack for the AD's
entry points instead.
"""

from __future__ import annotations

import linecache
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from ad.api import gradient as _api
from ad.api.user_results import to_user
from ad.errors import NoRuleError
from ad.runtime.config import ADConfig
from ad.runtime.nested_kernels import reverse_over_forward
from ad.runtime.state import nested
from ad.runtime.tracebacks import call_site
from rulescore import (
    AbstractZero,
    NoTangent,
    ZeroTangent,
    frule,
    ignore_derivatives,
    non_differentiable,
    rrule,
    unthunk,
)

__all__ = [
    "checkpoint",
    "dropgrad",
    "hook",
    "ignore_derivatives",
    "isderiving",
    "nestlevel",
    "showgrad",
]

T = TypeVar("T")
_NO = NoTangent()
_Z = ZeroTangent()


# --- hooks --------------------------------------------------------------------


def hook(fn: Callable[[Any], Any], x: T) -> T:
    """Return ``x``; when differentiated, apply ``fn`` to the gradient flowing back into ``x``.

    ``fn`` receives the cotangent as ``gradient`` would report it (a float,
    an array, a tuple...) and returns the one to pass on (``None`` for
    none). It is called only when a gradient reaches this use of ``x``. Use
    it to clip, scale or inspect gradients.

    >>> import ad
    >>> ad.gradient(lambda a, b: ad.hook(lambda g: -g, a) * b, 2.0, 3.0)
    (-3.0, 2.0)

    See also: showgrad, dropgrad.
    """
    return x


@rrule.register(hook, config=ADConfig)
def _(config: Any, fn: Any, x: Any) -> Any:
    if nested():  # the hooked gradient differentiated again: fn is not followed there
        raise NoRuleError(
            f"{call_site()}: ad.hook inside a derivative that is itself differentiated "
            "(hessian, a gradient of a gradient, jvp of a gradient): the change fn makes "
            "to the gradient is not differentiated there, so the result would be wrong.\n"
            "To fix: take the higher derivative of the function without the hook, or "
            "apply fn to the gradient ad.gradient returns and differentiate that."
        )

    def hook_pullback(ȳ: Any) -> tuple:
        ȳ = unthunk(ȳ)
        if isinstance(ȳ, AbstractZero):
            return (_NO, _NO, ȳ)
        out = fn(to_user(ȳ))
        return (_NO, _NO, _Z if out is None else out)

    return x, hook_pullback


def showgrad(x: T) -> T:
    """Return ``x``; when differentiated, print the gradient about to accumulate into ``x``.

    The line reads ``∂(name) = value``, where ``name`` is the argument's
    source text (``showgrad(a)`` shows ``a``), or the name of a variable
    holding it, or its ``repr``. The gradient shown is the one flowing back
    through *this use* of ``x``, not the total; nothing is printed when no
    gradient reaches it.

    >>> import ad
    >>> ad.gradient(lambda a, b: ad.showgrad(a) * b, 2.0, 3.0)
    ∂(a) = 3.0
    (3.0, 2.0)

    See also: hook.
    """
    return x


@rrule.register(showgrad, config=ADConfig)
def _(config: Any, x: Any) -> Any:
    label = _label(x)

    def showgrad_pullback(ȳ: Any) -> tuple:
        print(f"∂({label}) = {to_user(ȳ)!r}")
        return (_NO, ȳ)

    return x, showgrad_pullback


@frule.register(hook)
def _(ḣ: Any, ḟn: Any, ẋ: Any, fn: Any, x: Any) -> Any:
    return x, ẋ


@frule.register(showgrad)
def _(ḣ: Any, ẋ: Any, x: Any) -> Any:
    return x, ẋ


_CALL = re.compile(r"\bshowgrad\s*\(")


def _label(x: Any) -> str:
    """How ``showgrad`` names its argument: source text, a variable name, or a repr."""
    frame: Any = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "_ad_fwd":
        frame = frame.f_back
    if frame is not None:
        text = _argument_text(frame.f_code.co_filename, frame.f_lineno)
        if text:
            return text
        for name, v in frame.f_locals.items():
            if v is x and not name.startswith("_ad_"):
                return name
    r = repr(x)
    return r if len(r) <= 40 else r[:37] + "..."


def _argument_text(filename: str, lineno: int) -> str | None:
    """The text inside ``showgrad(...)`` on a source line, if it occurs there once."""
    line = linecache.getline(filename, lineno)
    starts = list(_CALL.finditer(line))
    if len(starts) != 1:
        return None
    text = line + "".join(linecache.getline(filename, lineno + k) for k in range(1, 6))
    i = starts[0].end()
    depth = 1
    for j in range(i, len(text)):
        c = text[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return " ".join(text[i:j].split()) or None
    return None


def dropgrad(x: T) -> T:
    """Return ``x`` with no gradient flowing back through this use of it.

    >>> import ad
    >>> ad.gradient(lambda a, b: ad.dropgrad(a) * b, 2.0, 3.0)
    (None, 2.0)

    See also: ignore_derivatives, hook.
    """
    return x


non_differentiable(dropgrad)


# --- checkpointing ------------------------------------------------------------


def checkpoint(f: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``f(*args, **kwargs)``, recomputed in the backward pass instead of remembered.

    When differentiated, the forward pass runs ``f`` as plain Python and
    keeps none of its intermediate values; the backward pass runs ``f``
    again under the AD to get its pullback. This trades compute for memory.
    Side effects in ``f`` therefore happen twice, and ``f`` must compute the
    same thing both times (do not mutate its arguments in between).
    Arguments passed by keyword get no gradient.

    >>> import math, ad
    >>> def loud_sin(x):
    ...     print("forward at", x)
    ...     return math.sin(x)
    >>> ad.gradient(lambda x: ad.checkpoint(loud_sin, x), 1.0)
    forward at 1.0
    forward at 1.0
    (0.5403023058681398,)
    """
    return f(*args, **kwargs)


@rrule.register(checkpoint, config=ADConfig)
def _(config: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(*args, **kwargs)

    def checkpoint_pullback(ȳ: Any) -> tuple:
        _, pb = _rerun(config, f, args, kwargs)
        return (_NO, *pb(ȳ))

    return y, checkpoint_pullback


def _rerun(config: Any, f: Any, args: tuple, kwargs: dict) -> tuple[Any, Callable]:
    # An entry point of the AD: ``nestlevel`` counts frames of this function.
    return config.rrule_via_ad(f, *args, **kwargs)


# --- reflection ---------------------------------------------------------------


def _entry_codes() -> dict:
    """Code objects of the functions that start a differentiation, and how many levels
    each stands for: reverse over forward (nested differentiation re-running a
    function in its pullback) is two."""
    fns = [getattr(_api, name, None) for name in ("_top_call", "_pullback")]
    levels = {fn.__code__: 1 for fn in [*fns, _rerun] if fn is not None}
    levels[reverse_over_forward.__code__] = 2
    return levels


_ENTRIES = _entry_codes()


def nestlevel() -> int:
    """How many differentiations are running around this call: 0 outside any.

    Inside a function being differentiated by ``ad.gradient`` (or
    ``withgradient``, ``pullback``, ``jacobian``, ``ad._pullback``, or the
    backward re-run of a ``checkpoint``) it is 1; inside a differentiation
    started from within one, 2; and so on. Only the running forward pass
    counts: a pullback called after ``ad.pullback`` returned is at level 0.

    >>> import ad
    >>> def f(x):
    ...     print(ad.nestlevel(), "levels of nesting")
    ...     return x
    >>> f(1.0)
    0 levels of nesting
    1.0
    >>> ad.gradient(f, 1.0)
    1 levels of nesting
    (1.0,)

    See also: isderiving.
    """
    entries = _ENTRIES
    n = 0
    frame: Any = sys._getframe(1)
    while frame is not None:
        n += entries.get(frame.f_code, 0)
        frame = frame.f_back
    return n


def isderiving() -> bool:
    """Whether this call runs inside a function being differentiated by ad.

    >>> import ad
    >>> def f(x):
    ...     return x * 2.0 if ad.isderiving() else -1.0
    >>> f(3.0), ad.gradient(f, 3.0)
    (-1.0, (2.0,))

    See also: nestlevel.
    """
    entries = _ENTRIES
    frame: Any = sys._getframe(1)
    while frame is not None:
        if frame.f_code in entries:
            return True
        frame = frame.f_back
    return False


non_differentiable(isderiving)
non_differentiable(nestlevel)
