"""The errors of pass 1 (``source``): a function whose source ad cannot read.

``no_source``: there is none (code run by ``python -c``, ``exec`` or ``eval``,
a definition typed at Python's plain prompt that its history does not hold
unchanged) or it does not parse; ``changed``: the source found is not the code
Python runs (the file was edited after the function was compiled). Each says
what to do instead.
"""

from __future__ import annotations

import types

from ad.errors import NoSourceError

__all__ = ["changed", "no_source"]


def no_source(code: types.CodeType, why: str) -> NoSourceError:
    where = f"{code.co_name} ({code.co_filename}:{code.co_firstlineno})"
    if code.co_filename == "<stdin>":  # the plain prompt of Python < 3.13 (or a pipe)
        return NoSourceError(
            f"cannot differentiate {where}: {why}. Python's plain prompt keeps no source "
            "before 3.13, and the readline history does not hold this definition unchanged "
            "(readline drops the second of two equal consecutive lines, and the history "
            "may be off or trimmed).\nTo fix: use the prompt of Python 3.13+, IPython or "
            "Jupyter, which keep the source; or define the function in a file and import "
            "it; or register an rrule for it with rulescore."
        )
    return NoSourceError(
        f"cannot differentiate {where}: {why}.\nTo fix: define it in a file (code run "
        "by python -c, exec or eval keeps no source), or register an rrule for it with "
        "rulescore."
    )


def changed(code: types.CodeType) -> NoSourceError:
    where = f"{code.co_filename}:{code.co_firstlineno}"
    return NoSourceError(
        f"cannot differentiate {code.co_name} ({where}): its source in {code.co_filename} "
        "is not the code Python is running. The file was edited after the function was "
        "compiled (a module changed on disk and not reloaded, or a function kept from "
        "before a reload), and ad never differentiates source that Python does not run.\n"
        "To fix: reload the module (importlib.reload(module), or IPython's %autoreload) "
        "and take the function from it again, or restart the interpreter; or undo the edit."
    )
