"""One-line summaries the Overview shows: virtualization layers and live headline numbers."""
from __future__ import annotations

from typing import Any

from rich.text import Text

from inspector.model import known
from inspector.tui.live import LiveView
from inspector.tui.modelview import find_text, get, is_dc, label_of, section_state

EVIDENCE_FIELDS = ("evidence",)


def virt_layers(section: Any) -> list[str]:
    """Layer names, outermost first, from whatever shape the virt section has (its own
    one-line `summary` when it has one)."""
    summary = get(section, "summary", default=None)
    if isinstance(summary, str) and summary:
        return [summary]
    layers = get(section, "layers", default=None)
    out: list[str] = []
    if isinstance(layers, (list, tuple)):
        for layer in layers:
            if isinstance(layer, str):
                out.append(layer)
                continue
            parts = [str(v) for v in (get(layer, "kind", "type", "name"),
                                      get(layer, "flavor", "product", "vendor"),
                                      get(layer, "mode", "guest_mode"))
                     if v and known(v)]
            out.append(" ".join(dict.fromkeys(parts)) or label_of(layer))
    else:
        for name in ("summary", "hypervisor", "kind", "flavor"):
            value = get(section, name)
            if isinstance(value, str) and value:
                out.append(value)
                break
    return out


def virt_line(section: Any) -> Text:
    state = section_state(section, "virtualization")
    text = Text("virt  ", style="bold")
    if state:
        return text.append(state, style="yellow")
    layers = virt_layers(section)
    if not layers:
        text.append("bare metal or undetermined", style="grey62")
    else:
        text.append(" › ".join(layers), style="bold magenta")
    n = len(virt_evidence(section))
    if n:
        text.append(f"  ({n} pieces of evidence: e)", style="grey62")
    return text


def evidence_text(item: Any) -> str:
    """One evidence record as a line: "source: value -> verdict [weight] (note)"."""
    if isinstance(item, str):
        return item
    source, value = get(item, "source"), get(item, "value")
    if source is None:
        return label_of(item)
    line = f"{source}: {value}"
    points, weight, note = get(item, "points_to"), get(item, "weight"), get(item, "note")
    if points:
        line += f" -> {points}"
    if weight:
        line += f" [{weight}]"
    if note:
        line += f" ({note})"
    return line


def virt_evidence(section: Any) -> list[str]:
    """Every evidence line of the section, prefixed by the layer it supports."""
    if not is_dc(section) and not isinstance(section, dict):
        return []
    out: list[str] = []
    layers = get(section, "layers", default=None)
    if isinstance(layers, list):
        for layer in layers:
            name = " ".join(str(v) for v in (get(layer, "kind"), get(layer, "verdict")) if v)
            for ev in get(layer, "evidence", default=[]) or []:
                out.append(f"{name}: {evidence_text(ev)}")
        for role in get(section, "roles", default=[]) or []:
            for ev in get(role, "evidence", default=[]) or []:
                out.append(f"{get(role, 'role')}: {evidence_text(ev)}")
        return out
    return find_text(section, EVIDENCE_FIELDS)


def rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    for div, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if bps >= div:
            return f"{bps / div:.1f} {unit}"
    return f"{bps:.0f} B/s"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def headline(view: LiveView | None, reason: str | None, width: int | None = None) -> Text:
    """The live numbers in groups (disk, cpu, NICs). Given a width, a group that would not fit
    starts a new line instead of being cut: on 80 columns the NIC rates went past the edge."""
    if view is None:
        return Text(f"live  {reason or 'no live data'}", style="yellow", no_wrap=True,
                    overflow="ellipsis")
    groups: list[Text] = []
    disk = view.busiest_disk()
    group = Text().append("disk ", style="bold")
    if disk is None:
        group.append("-", style="grey62")
    else:
        style = "bold red" if (disk.util or 0) >= 90 else "bold yellow" if (disk.util or 0) >= 60 else ""
        group.append(f"{disk.name} {pct(disk.util)} util", style=style)
        if disk.await_ms is not None:
            group.append(f" {disk.await_ms:.1f} ms await")
    groups.append(group)
    group = Text().append("cpu ", style="bold")
    group.append(f"iowait {pct(view.iowait)}",
                 style="bold yellow" if (view.iowait or 0) >= 10 else "")
    group.append(f" steal {pct(view.steal)}",
                 style="bold red" if (view.steal or 0) >= 10 else "bold yellow" if (view.steal or 0) >= 2 else "")
    groups.append(group)
    busy = [n for n in view.nics if (n.rx_bps or 0) + (n.tx_bps or 0) > 0 or n.stalled]
    nics = sorted(busy or view.nics, key=lambda n: -((n.rx_bps or 0) + (n.tx_bps or 0)))[:2]
    for nic in nics:
        group = Text().append(f"{nic.name} ", style="bold")
        group.append(f"rx {rate(nic.rx_bps)} tx {rate(nic.tx_bps)}")
        if nic.stalled:
            group.append(" STALLED", style="bold red")
        groups.append(group)
    text = Text(no_wrap=True, overflow="ellipsis")
    used = 0
    for i, group in enumerate(groups):
        if i and width is not None and used + 2 + group.cell_len > width:
            text.append("\n")
            used = 0
        elif i:
            text.append("  ")
            used += 2
        text.append_text(group)
        used += group.cell_len
    return text
