"""Reading the Overview's panels back from a screen's text (a tmux capture or the painted
lines): each panel by its title, and its rows of nothing."""
from __future__ import annotations

import re
from dataclasses import dataclass

TITLE = re.compile(r"(?:╭─|^─) ([A-Z][A-Za-z ·]+?)(?: [─╮]| \d| [a-z0-9])")


@dataclass
class Panel:
    title: str
    rows: list[str]          # the lines inside its frame, or under its title rule

    @property
    def blank_rows(self) -> int:
        return sum(1 for r in self.rows if not r.strip(" │▏▕"))


def panels(screen: str) -> list[Panel]:
    """Framed panels (╭─ Title ... ╮ down to ╰) and titled ones (─ Title ───, up to the next
    title rule or the end)."""
    lines = screen.splitlines()
    found: list[Panel] = []
    for y, text in enumerate(lines):
        for match in re.finditer(r"╭─ ([^─╮]+?) (?:[^╮]*?)╮", text):
            x0, x1 = match.start(), match.end() - 1
            title = match.group(1).split("  ")[0].strip()
            rows = []
            for below in lines[y + 1:]:
                if len(below) <= x0 or below[x0] == "╰":
                    break
                rows.append(below[x0 + 1:x1])
            found.append(Panel(_title(title), rows))
        if text.startswith("─ "):
            title = text[2:].split(" ─")[0].split("  ")[0]
            rows = []
            for below in lines[y + 1:]:
                if below.startswith("─ ") or below.lstrip().startswith(("⏎", "^p")) \
                        or re.match(r"^ \S+ [A-Z]\w+  ", below):
                    break
                rows.append(below)
            found.append(Panel(_title(title), rows))
    return found


def _title(text: str) -> str:
    for name in ("Memory · load · pressure", "CPU", "Filesystems", "Disks", "Network",
                 "Processes"):
        if text.startswith(name.split()[0]):
            return name
    return text.strip()
