"""Generic views of report sections: labels, children and detail tables of any dataclass.

Sections are dataclasses whose fields may be Unknown; the screens must not break when a
collector adds, renames or cannot fill a field, so they walk the model instead of hard-coding it.
Specific screens still pick well-known attributes first (name, members, evidence ...).
"""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from inspector.model import Finding, Level, Unknown

LABEL_FIELDS = ("name", "device", "dev", "ifname", "iface", "server", "address", "path", "kind",
                "id", "title", "key")
LEVEL_STYLE = {Level.CRIT: "bold white on red", Level.WARN: "bold black on yellow",
               Level.UNKNOWN: "bold white on magenta", Level.OK: "bold black on green"}
LEVEL_ORDER = {Level.CRIT: 0, Level.UNKNOWN: 1, Level.WARN: 2, Level.OK: 3}


def is_dc(obj: Any) -> bool:
    """A structured record (Unknown is a dataclass too, but it is a value)."""
    return (dataclasses.is_dataclass(obj) and not isinstance(obj, type)
            and not isinstance(obj, Unknown))


def fields_of(obj: Any) -> list[tuple[str, Any]]:
    if is_dc(obj):
        return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    if isinstance(obj, dict):
        return [(str(k), v) for k, v in obj.items()]
    return []


def section_state(section: Any, name: str) -> str | None:
    """A plain sentence when a section cannot be shown, else None."""
    if section is None:
        return f"{name}: not collected yet"
    if isinstance(section, Unknown):
        return f"{name}: {section}"
    return None


def fmt_value(value: Any, limit: int = 200) -> Text:
    if isinstance(value, Unknown):
        # narrow cells show "?"; the reason is in the detail pane
        return Text(str(value) if limit > 40 else "?", style="yellow")
    if value is None:
        return Text("-", style="grey50")
    if isinstance(value, bool):
        return Text("yes" if value else "no", style="green" if value else "grey62")
    if isinstance(value, enum.Enum):
        return Text(value.name.lower() if isinstance(value, Level) else str(value.value))
    if isinstance(value, float):
        return Text(f"{value:.4g}")
    if isinstance(value, (list, tuple, set, frozenset)):
        if all(not is_dc(v) and not isinstance(v, (dict, list)) for v in value):
            text = ", ".join(str(fmt_value(v)) for v in value) or "(none)"
            return Text(text[:limit])
        return Text(f"{len(value)} items", style="grey62")
    if is_dc(value) or isinstance(value, dict):
        return Text(inline_fields(value)[:limit])
    return Text(str(value)[:limit])


def inline_fields(obj: Any, depth: int = 0) -> str:
    """A nested record as readable "key value · key value" text, never a repr or a class name
    (queue limits, NIC counters ...). Sizes in bytes are shown the way people read them."""
    parts = []
    for name, value in fields_of(obj):
        if is_dc(value) or isinstance(value, dict):
            text = f"({inline_fields(value, depth + 1)})" if depth < 2 else "..."
        elif isinstance(value, (list, tuple)) and any(is_dc(v) or isinstance(v, dict) for v in value):
            text = ", ".join(label_of(v) for v in value) or "(none)"
        else:
            text = str(field_value(name, value))
        parts.append(f"{name.replace('_', ' ')} {text}")
    return " · ".join(parts) or "(empty)"


def label_of(obj: Any, default: str = "") -> str:
    if isinstance(obj, str):
        return obj
    for name, value in fields_of(obj):
        if name in LABEL_FIELDS and isinstance(value, str) and value:
            return value
    for _name, value in fields_of(obj):
        if isinstance(value, str) and value:
            return value
    return default or inline_fields(obj)


def get(obj: Any, *names: str, default: Any = None) -> Any:
    """First present attribute among `names` (dataclass or dict)."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def child_groups(obj: Any) -> list[tuple[str, list[Any]]]:
    """Fields holding collections of structured items: [(field name, items)]."""
    out = []
    for name, value in fields_of(obj):
        if isinstance(value, dict):
            items = [v for v in value.values() if is_dc(v) or isinstance(v, dict)]
            if items:
                out.append((name, items))
        elif isinstance(value, (list, tuple)):
            items = [v for v in value if is_dc(v) or isinstance(v, dict)]
            if items:
                out.append((name, items))
        elif is_dc(value):
            out.append((name, [value]))
    return out


def scalar_fields(obj: Any) -> list[tuple[str, Any]]:
    out = []
    for name, value in fields_of(obj):
        if is_dc(value) or isinstance(value, dict):
            continue
        if isinstance(value, (list, tuple)) and any(is_dc(v) or isinstance(v, dict) for v in value):
            continue
        out.append((name, value))
    return out


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def field_value(name: str, value: Any) -> Text:
    """fmt_value, with sizes in bytes shown the way people read them."""
    if isinstance(value, int) and not isinstance(value, bool) and name.endswith(("_bytes", "size_b")):
        return Text(f"{human_bytes(value)} ({value})")
    if isinstance(value, int) and not isinstance(value, bool) and name.endswith("_kib"):
        return Text(human_bytes(value * 1024))
    return fmt_value(value)


def detail_table(obj: Any, title: str | None = None) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False, title=title, title_justify="left",
                  expand=True)
    table.add_column("field", style="bold cyan", no_wrap=True, ratio=1)
    table.add_column("value", ratio=3)
    for name, value in scalar_fields(obj):
        table.add_row(name.replace("_", " "), field_value(name, value))
    for name, items in child_groups(obj):
        value = get(obj, name)
        if is_dc(value):
            # one nested record (queue limits, counters): its fields, one per line
            table.add_row(name.replace("_", " "), Text("\n".join(
                f"{k.replace('_', ' ')}: {field_value(k, v)}" for k, v in fields_of(value))))
            continue
        table.add_row(name.replace("_", " "), Text(", ".join(label_of(i) for i in items)[:200],
                                                    style="grey62"))
    return table


def worst_level(findings: Iterable[Finding]) -> Level | None:
    levels = [f.level for f in findings]
    if not levels:
        return None
    return min(levels, key=lambda lv: LEVEL_ORDER[lv])


def badge(level: Level | None) -> Text:
    if level is None:
        return Text("")
    return Text(f" {level.label.upper()} ", style=LEVEL_STYLE[level])


def findings_for(findings: Iterable[Finding], subject: str) -> list[Finding]:
    return [f for f in findings if f.subject == subject]


def findings_block(findings: Iterable[Finding], subject: str, what: str) -> Table | Text:
    """A detail pane's first part: `subject`'s findings as badge + the report's message,
    evidence and advice grid (wrapped lines hang under the message), or that it has none."""
    from inspector.render.findings import finding_body
    own = findings_for(findings, subject)
    if not own:
        return Text(f"no findings for this {what}", style="green")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for f in own:
        grid.add_row(badge(f.level), finding_body(f))
    return grid


def find_text(obj: Any, names: tuple[str, ...]) -> list[str]:
    """Strings in list fields called one of `names` anywhere in obj (e.g. evidence)."""
    out: list[str] = []
    for name, value in fields_of(obj):
        if name in names and isinstance(value, (list, tuple)):
            out.extend(str(v) if not is_dc(v) else label_of(v) for v in value)
    for _, items in child_groups(obj):
        for item in items:
            out.extend(find_text(item, names))
    return out
