"""Where Textual (8.2) misbehaves under what an operator does, worked around until it is fixed.

These patches reach into Textual's private parts, so they are bounded: pyproject.toml admits
only the Textual releases in TESTED, each patch first checks that what it relies on is still
there (else it stays out and says why in STATUS), and tests/tui/test_textual_fixes.py fails
when one did not apply or is no longer needed.

A screen that is handed two Resize events of different sizes spins for good. Screen._on_resize
lays the screen out at the event's size, and a layout that changes the screen's own region
posts the screen a Resize of that size. With an older size still queued (the window resized
while the screen's mode was being switched to), the two events re-post each other forever:
the TUI went on at full CPU, ignored keys, probe figures and SIGHUP (once for 13 minutes
after its tmux was killed, at 362 MB). patch_screen_resize lays a screen out at
the terminal's current size whatever size the event carries: a stale one then changes nothing
and posts nothing.

The Footer recomposes (unmounts and mounts every key, each styled anew) whenever the screen's
bindings may have changed: each screen switch and focus change, mostly to show the same keys.
That was a fifth of the UI's CPU while an operator flipped screens during a probe run, taken
from the run on a small machine. Ours recomposes only when what it shows has changed.

A screen's first visit re-parsed the whole stylesheet twice (App._init_mode, then
switch_mode: a new screen starts "out of date", and the first refresh_css brings only the
current, old screen up to date): about 30 ms of CPU per new screen on a small machine, a
third of what the first visits of five screens cost during a probe run. Nothing has changed
for a screen that brings no CSS of its own: its widgets are styled from the current
stylesheet as they mount. patch_new_screen_css marks such a screen up to date when it is
made, so neither re-parse happens.

Each screen switch then restyled the whole screen (ScreenResume.refresh_styles, Textual's
default for a mode switch) and laid it out again at the size it already had: a sixth of the
UI's CPU while an operator flipped screens during a probe run. A style only goes stale while
a screen is hidden when the stylesheet changes (switch_mode refreshes the CSS then) or a
widget's state does (focus, hover, disabled: their watchers restyle that widget as it
happens). patch_screen_resume restyles only when the stylesheet changed, and
patch_screen_resize lays out only at a new size.

Two places where Textual keeps widgets it has removed: each probe run left the
footer's keys behind, with their styles, rendered lines and message queues, most of what the
TUI grew by per run (tests/integration/test_tui_probe_runs_tmux.py prints its RSS over fifty
runs). Worked around here until Textual fixes them.

- The Footer recomposes on every change of the screen's bindings (each focus change; a probe
  run moves the focus twice). Each FooterKey binds its `compact` to the footer's
  (`data_bind`), which leaves a (key, setter) entry in the footer's own watcher list that
  Textual prunes only when `compact` changes: never, here (Textual issue #6666). Our Footer
  prunes closed keys after each recompose, by Textual's own rule.
- StylesCache.get_inner_outer is an lru_cache(1024) on an instance method: its keys hold up
  to 1024 StylesCache objects, each with every line it rendered, of widgets long removed
  (Textual issue #6665). patch_styles_cache keys the same cache by the two colours alone.
"""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from functools import lru_cache
from types import CodeType, FunctionType

import textual
from textual import events, reactive
from textual._styles_cache import StylesCache
from textual.app import App
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Footer as TextualFooter

WATCHERS = "__watchers"     # where textual.reactive._watch keeps an object's watchers
# the Textual releases these patches were written against and tested with; pyproject.toml
# admits only these (tests/tui/test_textual_fixes.py fails when one no longer applies)
TESTED = ((8, 2),)
# patch name -> None when applied, else why not (tests/tui/test_textual_fixes.py reads it)
STATUS: dict[str, str | None] = {}


def textual_version() -> tuple[int, ...]:
    parts = []
    for part in textual.__version__.split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _private(owner: type, *names: str) -> str | None:
    """Why a patch cannot apply: the first private attribute it relies on that is gone (a
    method or class attribute, or an instance attribute some class of the MRO sets)."""
    for name in names:
        if hasattr(owner, name):
            continue
        if not any(name in code.co_names for cls in owner.__mro__ for code in _codes(cls)):
            return f"{owner.__name__}.{name} is gone"
    return None


def _codes(holder: object) -> Iterator[CodeType]:
    """The code of every function defined in a class or module, nested ones included: the
    attribute names it uses are in its co_names and its strings in co_consts. (Not
    inspect.getsource: parsing Textual's sources with ast took 0.3 s of the TUI's start and
    left megabytes of source lines in linecache.)"""
    todo: list[CodeType] = [value.__code__ for value in vars(holder).values()
                            if isinstance(value, FunctionType)]
    todo += [value.fget.__code__ for value in vars(holder).values()
             if isinstance(value, property) and isinstance(value.fget, FunctionType)]
    while todo:
        code = todo.pop()
        yield code
        todo.extend(const for const in code.co_consts if isinstance(const, CodeType))


class Footer(TextualFooter):
    """Textual's Footer, recomposed only when what it shows has changed (see above)."""
    _shown: tuple | None = None

    async def recompose(self) -> None:
        shown = self.what_it_shows()
        if shown == self._shown and self.children:
            return
        await super().recompose()
        self._shown = shown
        self.prune_watchers()

    def what_it_shows(self) -> tuple:
        """Everything Footer.compose reads: the shown bindings, their state, the options."""
        keys = tuple((binding.key, self.app.get_key_display(binding), binding.description,
                      binding.action, enabled, tooltip, binding.group)
                     for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()
                     if binding.show)
        return keys, self.show_command_palette, self.compact

    def prune_watchers(self) -> None:
        """Drop the entries of closed nodes, Textual's own rule (Reactive._check_watchers)."""
        watchers = getattr(self, WATCHERS, None)
        if not watchers:
            return
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries
                          if not getattr(node, "_closing", False)]


def patch_styles_cache() -> None:
    """The colours' styles cached by the colours only (the body never reads its `self`)."""
    method = getattr(StylesCache, "get_inner_outer", None)
    if getattr(method, "keyed_by_colours", False):
        return              # done already
    original = getattr(method, "__wrapped__", None)
    if original is None:    # Textual fixed it (no lru_cache on the method), or it is gone
        STATUS["styles_cache"] = "StylesCache.get_inner_outer is no lru_cache any more"
        return
    by_colours = lru_cache(1024)(lambda base, background: original(None, base, background))

    def get_inner_outer(self, base_background, background):
        return by_colours(base_background, background)
    get_inner_outer.keyed_by_colours = True   # type: ignore[attr-defined]
    StylesCache.get_inner_outer = get_inner_outer   # type: ignore[method-assign, assignment]
    STATUS["styles_cache"] = None


def patch_screen_resize() -> None:
    """Screen._screen_resized at the app's current size (see above)."""
    why = _private(Screen, "_screen_resized", "_size")
    if why is None and list(inspect.signature(Screen._screen_resized).parameters) != ["self", "size"]:
        why = "Screen._screen_resized takes other arguments"
    if why:
        STATUS["screen_resize"] = why
        return
    original = Screen._screen_resized
    if getattr(original, "at_current_size", False):
        return

    def _screen_resized(self: Screen, size: Size) -> None:
        if self._size != self.app.size:     # the same size: the layout stands
            original(self, self.app.size)
    _screen_resized.at_current_size = True     # type: ignore[attr-defined]
    Screen._screen_resized = _screen_resized    # type: ignore[method-assign]
    STATUS["screen_resize"] = None


def patch_new_screen_css() -> None:
    """A new screen without CSS of its own is as up to date as the stylesheet (see above)."""
    why = _private(App, "_load_screen_css", "_css_update_count") \
        or _private(Screen, "_css_update_count")
    if why:
        STATUS["new_screen_css"] = why
        return
    original = App._load_screen_css
    if getattr(original, "marks_new_screens", False):
        return

    def _load_screen_css(self: App, screen: Screen) -> None:
        original(self, screen)
        if screen._css_update_count == -1 and not screen.CSS and not screen.css_path:
            screen._css_update_count = self._css_update_count
    _load_screen_css.marks_new_screens = True     # type: ignore[attr-defined]
    App._load_screen_css = _load_screen_css      # type: ignore[method-assign]
    STATUS["new_screen_css"] = None


def patch_screen_resume() -> None:
    """A resumed screen is restyled only when the stylesheet changed (see above)."""
    why = _private(Screen, "_on_screen_resume") or _private(App, "SUSPENDED_SCREEN_CLASS") \
        or ("ScreenResume.refresh_styles is gone"
            if "refresh_styles" not in getattr(events.ScreenResume, "__annotations__", {})
            else None)
    if why:
        STATUS["screen_resume"] = why
        return
    original = Screen._on_screen_resume
    if getattr(original, "restyles_on_change", False):
        return

    def _on_screen_resume(self: Screen, event: events.ScreenResume) -> None:
        if (self._css_update_count == self.app._css_update_count
                and not self.app.SUSPENDED_SCREEN_CLASS):
            event.refresh_styles = False
        original(self, event)
    _on_screen_resume.restyles_on_change = True     # type: ignore[attr-defined]
    Screen._on_screen_resume = _on_screen_resume   # type: ignore[method-assign]
    STATUS["screen_resume"] = None


def check_footer_watchers() -> None:
    """Footer.prune_watchers reads the watchers where textual.reactive keeps them."""
    holders = [reactive, *(v for v in vars(reactive).values()
                           if isinstance(v, type) and v.__module__ == reactive.__name__)]
    kept = any(WATCHERS in code.co_consts for holder in holders for code in _codes(holder))
    STATUS["footer_watchers"] = None if kept else f"textual.reactive no longer keeps {WATCHERS}"


def check_version() -> str | None:
    """Why the installed Textual is not a tested release, or None. Not run on import:
    textual.__version__ reads the installed distributions (importlib.metadata, email, zipfile:
    2 MB and 50 ms of the TUI's start), and pyproject.toml's pin already admits only TESTED
    (tests/tui/test_textual_fixes.py checks both)."""
    if textual_version()[:2] in TESTED:
        return None
    return (f"Textual {textual.__version__} is not a tested release "
            f"({', '.join('.'.join(map(str, v)) for v in TESTED)})")


# on import: every screen imports this module (tui.base)
check_footer_watchers()
patch_styles_cache()
patch_screen_resize()
patch_new_screen_css()
patch_screen_resume()
