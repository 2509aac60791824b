"""The patches of Textual's private parts (inspector/tui/textual_fixes.py) are bounded: this
fails when the installed Textual is not a release they were tested with, when one no longer
applies (what it relies on is gone or changed), when one is no longer needed (Textual fixed
it), and when a patched method is not ours any more."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import textual
from textual._styles_cache import StylesCache
from textual.app import App
from textual.screen import Screen

from inspector.tui import textual_fixes

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
PATCHES = {"footer_watchers", "styles_cache", "screen_resize", "new_screen_css",
           "screen_resume"}


def test_every_patch_applies_to_the_installed_textual():
    status = dict(textual_fixes.STATUS)
    assert status.pop("version", None) is None, textual.__version__
    assert set(status) == PATCHES, status
    assert all(why is None for why in status.values()), status
    # and the methods in place are ours (a later import did not undo them)
    assert getattr(StylesCache.get_inner_outer, "keyed_by_colours", False)
    assert getattr(Screen._screen_resized, "at_current_size", False)
    assert getattr(App._load_screen_css, "marks_new_screens", False)
    assert getattr(Screen._on_screen_resume, "restyles_on_change", False)


def test_a_patch_that_cannot_apply_says_why():
    class Gone:
        pass
    assert textual_fixes._private(Gone, "_screen_resized") == "Gone._screen_resized is gone"
    assert textual_fixes._private(Screen, "_screen_resized", "_size") is None


def test_pyproject_admits_only_the_tested_releases():
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("textual"))
    bounds = dict((op, tuple(int(x) for x in v.split("."))) for op, v in
                  re.findall(r"(>=|<)\s*([\d.]+)", spec))
    assert set(bounds) == {">=", "<"}, spec
    tested = textual_fixes.TESTED
    assert bounds[">="][:2] == min(tested) and bounds["<"][:2] > max(tested), spec
    # nothing untested in between: the upper bound is the next minor release
    assert bounds["<"][:2] == (max(tested)[0], max(tested)[1] + 1), spec
    assert textual_fixes.textual_version()[:2] in tested
