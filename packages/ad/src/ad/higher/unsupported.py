"""Refusing a call nested differentiation cannot follow, at the user's line.

``_unsupported(what, fix)`` is the ``NoRuleError`` the nested rules raise
(reverse over forward, forward over forward, reverse over reverse), naming the
line of the user's code that led there (``user_site``): at depth, the frames
being differentiated include rules' bodies, ad's own kernels and library
source, so the line named is the innermost one outside ad, rulescore, rules,
the standard library and installed packages.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ad.errors import NoRuleError
from ad.runtime.library_code import _in_stdlib
from ad.runtime.reverse import call_site

__all__ = ["user_site"]


def _unsupported(what: str, fix: str) -> NoRuleError:
    """The error for a call nested differentiation cannot follow, with the user's line
    that led to it (``user_site``)."""
    site = user_site()
    where = f" (at {site})" if site else ""
    return NoRuleError(f"nested differentiation: {what}{where}.\nTo fix: {fix}.")


def _own_dirs() -> tuple[str, ...]:
    """The directories of ad, rulescore and rules: code there is not the user's."""
    import rulescore

    ad_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    dirs = [ad_dir, os.path.dirname(os.path.realpath(rulescore.__file__ or ""))]
    rules = sys.modules.get("rules")
    if rules is not None and getattr(rules, "__file__", None):
        dirs.append(os.path.dirname(os.path.realpath(rules.__file__)))
    return tuple(d + os.sep for d in dirs)


def _library_file(filename: str, own: tuple[str, ...]) -> bool:
    if filename.startswith("<frozen ") or filename.startswith(own):
        return True
    path = os.path.realpath(filename)
    return (
        path.startswith(own)
        or f"{os.sep}site-packages{os.sep}" in path
        or f"{os.sep}dist-packages{os.sep}" in path
        or _in_stdlib(path)
    )


def user_site() -> str:
    """file:line of the innermost differentiated frame of the user's code. At depth,
    the frames being differentiated include rules' bodies, ad's own kernels and
    library source (numpy's Python functions): the line to name is the user's that
    led there, the innermost one outside ad, rulescore, rules, the standard library
    and installed packages; else the innermost differentiated frame."""
    own = _own_dirs()
    frame: Any = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name in ("_ad_fwd", "_ad_back") and not _library_file(code.co_filename, own):
            return f"{code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return call_site()


def _traceback_site(e: BaseException) -> str:
    """file:line of the innermost differentiated frame of the user's code in ``e``'s
    traceback (the frames between where it was caught and where it was raised)."""
    own = _own_dirs()
    site = ""
    tb = e.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in ("_ad_fwd", "_ad_back") and not _library_file(code.co_filename, own):
            site = f"{code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return site


def reverse_over_reverse_refusal(name: str, e: BaseException) -> BaseException | None:
    """The error ``name`` (``hessian_reverse``) raises for ``e``, a refusal met while
    reverse mode differentiated a gradient's adjoint and the rules' pullbacks: the
    same class, naming the user's line that led there and the fix that applies to
    it, ``ad.hessian``; None for an error of another kind, or one that already
    names the user's code alone (a first-order refusal, which ``ad.hessian`` would
    meet as well). A refusal raised inside ad's or a rule's code would otherwise
    name that code and suggest changing it."""
    from ad.errors import MutationError

    if not isinstance(e, (NoRuleError, MutationError)):
        return None
    msg = str(e)
    own = _own_dirs()
    if "reverse over reverse" not in msg and not any(d in msg for d in own):
        return None
    site = _traceback_site(e)
    what = msg.split("\nTo fix:", 1)[0].removeprefix("nested differentiation: ")
    where = f" (from {site})" if site else ""
    new = type(e)(
        f"{name} (reverse over reverse) cannot differentiate this function{where}: it met "
        f"{what}\nTo fix: use ad.hessian (forward over reverse), which gives the same "
        "matrix and differentiates every rule's pullback it needs in forward mode."
    )
    return new
