"""The Network screen's model: one row per NIC (identity, link, main offloads) and its detail
(findings, link and queues, every offload under `ethtool -k`'s names, Xen advice). Rich only."""
from __future__ import annotations

from typing import Any

from rich.columns import Columns
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from inspector.model import Finding, Unknown
from inspector.tui.modelview import findings_block, get

MAIN_OFFLOADS = (("tcp-segmentation-offload", "tso"), ("generic-segmentation-offload", "gso"),
                 ("generic-receive-offload", "gro"), ("large-receive-offload", "lro"))
SOFTWARE_KINDS = ("loopback", "virtual", "bridge", "bond", "vlan", "veth", "tun", "tap",
                  "macvlan", "ipvlan", "vxlan", "wireguard", "dummy", "ifb")
XEN_ADVICE = ("Xen netfront: under XenServer the guest's receive path has frozen periodically "
              "(the STALLED marker: nothing received while transmitting). Turning TSO/GSO off "
              "(ethtool -K {nic} tso off gso off, persisted) only partly helped; check the host "
              "side too (dom0 vif and netback), and compare with a KVM guest.")


def offloads_text(nic: Any) -> Text:
    """tso gso gro lro in one cell: upper case when on, lower case when off (readable without
    colour too), "?" when the features could not be read."""
    from inspector.discover.net_offloads import find_offload
    offloads = get(nic, "offloads")
    if isinstance(offloads, Unknown):
        return Text("?", style="grey50")
    text = Text()
    for long, short in MAIN_OFFLOADS:
        item = find_offload(offloads, long)
        if text:
            text.append(" ")
        if item is None:
            text.append("-" * len(short), style="grey50")
        elif item.on:
            text.append(short.upper(), style="bold green")
        else:
            text.append(short, style="grey50")
    return text


def is_physical(nic: Any) -> bool:
    """A NIC with a device behind it (PCI, virtio, Xen vif, ENA ...), not a software one."""
    return get(nic, "device") is not None and get(nic, "kind") not in SOFTWARE_KINDS


def is_up(nic: Any) -> bool:
    return get(nic, "operstate") == "up" or (get(nic, "admin_up") is True
                                             and get(nic, "carrier") is True)


def default_nic(nics: list[Any]) -> str | None:
    """The first physical NIC that is up; else the first one up that is not lo; else any."""
    for test in (lambda n: is_physical(n) and is_up(n),
                 lambda n: is_up(n) and get(n, "kind") != "loopback",
                 lambda n: get(n, "kind") != "loopback", lambda n: True):
        found = next((n.name for n in nics if test(n)), None)
        if found is not None:
            return found
    return None


def state_text(nic: Any) -> Text:
    oper = nic.operstate if isinstance(nic.operstate, str) else "?"
    if nic.admin_up is False:
        return Text("down", style="grey62")
    if nic.kind == "loopback":
        return Text("up", style="green")
    if nic.carrier is False:
        return Text("no carrier", style="bold red")
    return Text(oper, style="green" if oper == "up" else "")


def _pairs(pairs: list[tuple[str, Any]]) -> Text:
    text = Text()
    for label, value in pairs:
        if value is None or isinstance(value, Unknown) or value == "" or value == []:
            continue
        if text:
            text.append("  ")
        text.append(f"{label} ", style="grey62")
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        text.append(value if isinstance(value, Text) else str(value))
    return text


def nic_detail(nic: Any, findings: list[Finding]) -> list[RenderableType]:
    head = Text(nic.name, style="bold cyan").append(f"  {nic.kind}", style="bold")
    head.append("  ").append_text(state_text(nic))
    parts: list[RenderableType] = [head]
    parts.append(findings_block(findings, nic.name, "NIC"))
    if nic.kind == "xen-netfront":
        parts.append(Text(XEN_ADVICE.format(nic=nic.name), style="italic cyan"))
    s = nic.statistics
    speed = f"{nic.speed_mbps} Mb/s" if isinstance(nic.speed_mbps, int) else None
    groups = [
        ("identity", _pairs([("driver", nic.driver), ("bus", f"{nic.bus}/{nic.transport}"
                                                       if nic.transport else nic.bus),
                             ("device", nic.device), ("type", nic.devtype), ("mac", nic.mac),
                             ("ports", nic.ports)])),
        ("link", _pairs([("admin up", nic.admin_up), ("carrier", nic.carrier), ("speed", speed),
                         ("duplex", nic.duplex), ("carrier changes", nic.carrier_changes)])),
        ("queues", _pairs([("mtu", nic.mtu), ("txqueuelen", nic.tx_queue_len),
                           ("rx queues", nic.rx_queues), ("tx queues", nic.tx_queues)])),
        ("counters", _pairs([("rx errors", s.rx_errors), ("tx errors", s.tx_errors),
                             ("rx dropped", s.rx_dropped), ("tx dropped", s.tx_dropped),
                             ("rx packets", s.rx_packets), ("tx packets", s.tx_packets)])),
        ("evidence", Text("; ".join(nic.evidence), style="grey70")),
    ]
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold cyan", no_wrap=True, min_width=9)
    grid.add_column()
    for name, text in groups:
        if text:
            grid.add_row(name, text)
    parts.append(grid)
    parts.append(Text("offloads (ethtool -k; * fixed)", style="bold"))
    if isinstance(nic.offloads, Unknown):
        parts.append(Text(str(nic.offloads), style="yellow"))
    else:
        cells = []
        for item in nic.offloads:
            line = Text(("  " if item.group else "") + f"{item.name}: ")
            line.append("on" if item.on else "off", style="green" if item.on else "grey62")
            if item.fixed:
                line.append(" [fixed]", style="grey50")
            if item.requested is not None:
                line.append(f" [requested {'on' if item.requested else 'off'}]", style="yellow")
            cells.append(line)
        parts.append(Columns(cells, column_first=True, padding=(0, 3)))
    return parts
