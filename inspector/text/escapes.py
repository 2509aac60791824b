"""Host strings made safe for a terminal: control and invisible formatting characters shown as
escapes (\\x1b, \\u202e) instead of acted on.

A device model, a NIC name, a hostname or a vendor tool's line comes from the host, or from a
capture someone else made: ESC there would drive the operator's terminal (retitle the window,
clear the screen, worse on some terminals), and a bidi override (U+202E) would show a name or
a message reversed. Every text output (report, check, top, diff, history, the TUI, Prometheus
labels) passes host strings through here. Tab and newline are kept: callers that need one
line handle those themselves.

Escaped: the Unicode categories Cc (C0 and C1 controls, DEL), Cf (format characters: bidi
embeddings, overrides and isolates U+202A-202E and U+2066-2069, marks U+200E/F and U+061C,
zero-width characters, BOM...), Cs (lone surrogates, which a non-UTF-8 file name decodes to
and which cannot even be printed) and Zl/Zp (line and paragraph separators)."""
from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Any

# anything but printable ASCII, tab and newline: a quick filter before the category lookup
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escape_hidden(match: re.Match) -> str:
    char = match.group()
    return _escape(char) if unicodedata.category(char) in _HIDDEN_CATEGORIES else char


def visible(text: str) -> str:
    """`text` with control and invisible formatting characters as \\xNN, \\uNNNN escapes."""
    if not _SUSPECT.search(text):
        return text
    return _SUSPECT.sub(_escape_hidden, text)


def printable(obj: Any) -> Any:
    """A copy of a report (or any part of it: dataclasses, dicts, lists) whose strings went
    through visible(). Values without such characters are returned as they are."""
    if isinstance(obj, str):
        return visible(obj)
    if isinstance(obj, list):
        return [printable(v) for v in obj]
    if isinstance(obj, tuple):
        items = (printable(v) for v in obj)
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)   # NamedTuple
    if isinstance(obj, (set, frozenset)):
        return type(obj)(printable(v) for v in obj)
    if isinstance(obj, dict):
        return {printable(k): printable(v) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        copy = object.__new__(type(obj))     # no __init__: frozen, init=False fields alike
        state = getattr(obj, "__dict__", {})
        for name, value in state.items():
            object.__setattr__(copy, name, printable(value))
        for f in dataclasses.fields(obj):    # slots dataclasses have no __dict__
            if f.name not in state:          # done above: twice per level doubled each level
                object.__setattr__(copy, f.name, printable(getattr(obj, f.name)))
        return copy
    return obj
