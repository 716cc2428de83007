"""Source that matches the code being run (issue 25): ad parses a function's
source from its file; when that file was edited after the module was imported,
the source is not the code Python runs. ad then uses the lines linecache kept
from before the edit if they match, or raises a clear error; after
``importlib.reload`` it transforms the new code from the new file."""

import importlib
import linecache
import os
import sys
import uuid

import pytest

import ad
from ad.errors import NoSourceError

V1 = """\
import math


def f(x):
    return x * x + 2.0 * x


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return self.w * math.sin(x)


g = lambda x: 3.0 * x * x  # noqa: E731
"""

# The same functions changed: other bodies, other constants (same line numbers).
V2 = """\
import math


def f(x):
    return x * x * x + 2.0 * x


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return self.w * math.cos(x)


g = lambda x: 5.0 * x * x  # noqa: E731
"""

# The definitions moved down by two lines, bodies unchanged.
V1_MOVED = "# a comment\n# another\n" + V1


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A fresh module written from ``V1`` and imported; ``write(text)`` edits it."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"g25_source_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(V1)
    importlib.invalidate_caches()
    mod = importlib.import_module(name)
    stamp = [os.stat(path).st_mtime_ns]

    def write(text):
        path.write_text(text)
        stamp[0] += 2_000_000_000  # a later mtime, whatever the clock's resolution
        os.utime(path, ns=(stamp[0], stamp[0]))

    yield mod, path, write
    sys.modules.pop(name, None)
    linecache.checkcache(str(path))


def _first_derivatives(mod):
    return (
        ad.gradient(mod.f, 3.0)[0],
        ad.gradient(lambda x: mod.Model(2.0).loss(x), 0.5)[0],
        ad.gradient(mod.g, 2.0)[0],
    )


def test_edited_on_disk_after_import_is_a_clear_error(module):
    mod, path, write = module
    write(V2)
    linecache.checkcache(str(path))  # as a traceback printed meanwhile would
    for fn, args in ((mod.f, (3.0,)), (mod.g, (2.0,))):
        with pytest.raises(NoSourceError) as info:
            ad.gradient(fn, *args)
        message = str(info.value)
        assert str(path) in message
        assert "not the code Python is running" in message
        assert "importlib.reload" in message
    with pytest.raises(NoSourceError, match="loss"):
        ad.gradient(lambda x: mod.Model(2.0).loss(x), 0.5)
    with pytest.raises(NoSourceError, match="not the code Python is running"):
        ad.jvp(mod.f, (3.0,), (1.0,))


def test_edited_on_disk_with_the_old_lines_still_cached_is_right(module):
    mod, path, write = module
    linecache.getlines(str(path))  # linecache read the file before the edit
    write(V2)
    # ad uses the lines that compiled to the code Python runs: V1's.
    assert _first_derivatives(mod) == pytest.approx((6.0 + 2.0, 2.0 * 0.8775825618903728, 12.0))


def test_definitions_moved_in_the_file_are_an_error_not_another_function(module):
    mod, path, write = module
    write(V1_MOVED)
    linecache.checkcache(str(path))
    with pytest.raises(NoSourceError, match="not the code Python is running"):
        ad.gradient(mod.f, 3.0)


def test_reload_transforms_the_new_code(module):
    mod, path, write = module
    old_f = mod.f
    assert _first_derivatives(mod) == pytest.approx((8.0, 2.0 * 0.8775825618903728, 12.0))
    write(V2)
    importlib.reload(mod)  # linecache still holds V1's lines: ad must notice
    assert mod.f is not old_f
    assert _first_derivatives(mod) == pytest.approx((3 * 9.0 + 2.0, -2.0 * 0.479425538604203, 20.0))
    # The function kept from before the reload still runs V1's code, and its
    # transform (made from V1's source) is still right.
    assert ad.gradient(old_f, 3.0)[0] == pytest.approx(8.0)


def test_reload_without_changes_keeps_working(module):
    mod, _path, _write = module
    first = _first_derivatives(mod)
    importlib.reload(mod)
    assert _first_derivatives(mod) == pytest.approx(first)


def test_the_check_accepts_every_function_of_this_file():
    """Functions of a test module (rewritten by pytest's assertion rewriting) and
    nested functions still differentiate."""

    def nested(x):
        assert x > 0, "positive"
        return x * x

    assert ad.gradient(nested, 3.0)[0] == pytest.approx(6.0)
    assert ad.gradient(_module_level_with_assert, 2.0)[0] == pytest.approx(3.0)


def _module_level_with_assert(x):
    assert x == x
    return 3.0 * x
