"""pytest plugin (entry point ``pytest11``): render ``RuleTestFailure`` as a short report.

A failing rule check raises :class:`rulestest.RuleTestFailure` whose message is
already the whole report. With the default traceback style (``auto`` or
``short``) the plugin replaces pytest's traceback by that report followed by
the calling line of the test module; its first line is what the short test
summary shows. ``--tb=long`` or ``--tb=native`` keep pytest's usual output,
for debugging the rule's own code.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from .errors import RuleTestFailure

_KEEP_STYLES = ("long", "native", "line", "no")


def _call_site(item: pytest.Item, excinfo: pytest.ExceptionInfo) -> str:
    """The source line and ``path:line: in test_name`` of the deepest frame in the test file."""
    path = getattr(item, "path", None)
    for entry in reversed(excinfo.traceback):
        if path is not None and str(entry.path) == str(path):
            source = str(entry.statement).strip() if entry.statement else ""
            first = source.splitlines()[0] if source else ""
            where = os.path.relpath(entry.path, item.config.invocation_params.dir)
            return f"    {first}\n{where}:{entry.lineno + 1}: in {entry.name}"
    return item.nodeid


# Old-style wrapper: works with every pytest >= 7 (new-style needs pluggy >= 1.2).
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if (
        report.failed
        and excinfo is not None
        and excinfo.errisinstance(RuleTestFailure)
        and item.config.getoption("tbstyle", "auto") not in _KEEP_STYLES
    ):
        # The first line is the one pytest's short summary shows.
        report.longrepr = f"RuleTestFailure: {excinfo.value}\n\n{_call_site(item, excinfo)}"
