"""One-line summaries the Overview shows: the virtualization and the resolver verdicts."""
from __future__ import annotations

from typing import Any

from rich.text import Text

from inspector.model import Unknown, known
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


def dns_line(section: Any, width: int = 200) -> Text:
    """The resolver verdict in one line: the servers glibc uses and what losing the first
    one costs each lookup (the failover delay). Within `width` the figures and their units
    stay whole: the words around them get shorter first."""
    for terse in (False, True):
        text = _dns_line(section, terse)
        if text.cell_len <= width:
            return text
    return text


def _dns_line(section: Any, terse: bool) -> Text:
    text = Text("dns   ", style="bold")
    state = section_state(section, "resolver")
    if state:
        return text.append(state, style="yellow")
    servers = get(section, "used_nameservers", default=[]) or []
    if get(section, "stub", default=False):
        ups = get(section, "upstreams")
        text.append("systemd-resolved stub", style="bold cyan")
        if isinstance(ups, list):
            text.append(f" → {', '.join(ups) or 'no upstream'}")
        if not terse:
            text.append("  (it fails over between its upstreams)", style="grey62")
        return text
    text.append(", ".join(servers) or "no nameserver", style="bold cyan")
    if not terse:
        text.append(f"  ({len(servers)} used)", style="grey62")
    first = get(section, "first_server_loss")
    seconds = get(first, "seconds", default=None)
    if first is not None and hasattr(first, "explanation"):
        text.append("  1st lost: " if terse else "  first server lost: ", style="grey62")
        if seconds is None:
            text.append("lookups hang", style="bold red")
        elif get(first, "fails", default=False):
            text.append(f"{'lookups fail' if terse else 'every lookup fails'} after {seconds:g} s",
                        style="bold red")
        else:
            text.append(f"+{seconds:g} s per lookup",
                        style="bold red" if seconds > 2 else "green")
    elif isinstance(first, Unknown):
        text.append(f"  first server lost: {first}", style="yellow")
    return text
