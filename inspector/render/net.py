"""Rich renderer for the net section: a NIC table, compact offloads per NIC, the sysctls."""
from __future__ import annotations

from typing import Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inspector.discover.net import NetSection, Nic
from inspector.discover.net_offloads import Offload, find_offload
from inspector.model import Unknown
from inspector.render.rows import add_row, label_grid

# (ethtool -k name, short label) shown by default; everything else is counted (JSON has all)
INTERESTING = (("tcp-segmentation-offload", "tso"), ("generic-segmentation-offload", "gso"),
               ("generic-receive-offload", "gro"), ("rx-gro-hw", "gro-hw"),
               ("large-receive-offload", "lro"), ("scatter-gather", "sg"),
               ("rx-checksumming", "rx-csum"), ("tx-checksumming", "tx-csum"),
               ("rx-vlan-offload", "rxvlan"), ("tx-vlan-offload", "txvlan"),
               ("receive-hashing", "rxhash"), ("tx-udp-segmentation", "uso"))


def cell(value: object, fmt: str = "{}") -> Text:
    if isinstance(value, Unknown):
        return Text("?", style="dim")
    if value is None:
        return Text("-", style="dim")
    return Text(fmt.format(value))


def _speed(nic: Nic) -> Text:
    if isinstance(nic.speed_mbps, int):
        speed = f"{nic.speed_mbps // 1000}G" if nic.speed_mbps >= 1000 and \
            nic.speed_mbps % 1000 == 0 else f"{nic.speed_mbps}M"
        duplex = nic.duplex if isinstance(nic.duplex, str) else "?"
        return Text(f"{speed} {duplex}")
    return Text("?", style="dim")


def _state(nic: Nic) -> Text:
    oper = nic.operstate if isinstance(nic.operstate, str) else "?"
    if nic.admin_up is False:
        return Text("down", style="dim")
    if nic.kind == "loopback" and nic.admin_up is True:
        return Text("up", style="green")       # lo's operstate is always "unknown"
    if nic.carrier is False:
        return Text(f"{oper}, no carrier", style="bold red")
    return Text(oper, style="green" if oper == "up" else "")


def _counter(value: object) -> Text:
    if isinstance(value, int) and value > 0:
        return Text(str(value), style="bold yellow")
    return cell(value)


def nic_table(nics: list[Nic]) -> Table:
    """Identity and link of each NIC; counters and offloads follow in `nic_details`."""
    table = Table(show_edge=False, pad_edge=False, expand=False)
    # Names and figures never wrap; the words around them do, so a narrow panel folds
    # "driver (bus)" or "down, no carrier" instead of cutting "1000" to "10…".
    columns: tuple[tuple[str, Literal["left", "right"], bool], ...] = (
        ("nic", "left", False), ("kind", "left", True), ("driver (bus)", "left", True),
        ("mtu", "right", False), ("qlen", "right", False), ("speed", "left", False),
        ("state", "left", True))
    for name, justify, wrap in columns:
        table.add_column(name, justify=justify, no_wrap=not wrap,
                         overflow="fold" if wrap else "ellipsis")
    for nic in nics:
        bus = nic.bus if isinstance(nic.bus, str) else "?"
        bus = f"{bus}/{nic.transport}" if nic.transport else bus
        driver = nic.driver if isinstance(nic.driver, str) else "-"
        kind_style = "bold magenta" if nic.kind.startswith(("xen", "virtio")) else ""
        table.add_row(Text(nic.name, style="bold"), Text(nic.kind, style=kind_style),
                      Text(f"{driver} ({bus})"), cell(nic.mtu), cell(nic.tx_queue_len),
                      _speed(nic), _state(nic))
    return table


def counters_line(nic: Nic) -> Text:
    s = nic.statistics
    return Text.assemble("carrier changes ", _counter(nic.carrier_changes) if
                         nic.kind != "loopback" else cell(nic.carrier_changes),
                         "  errors rx ", _counter(s.rx_errors), " tx ", _counter(s.tx_errors),
                         "  drops rx ", _counter(s.rx_dropped), " tx ", _counter(s.tx_dropped))


def offloads_line(nic: Nic) -> Text:
    line = Text()
    if isinstance(nic.offloads, Unknown):
        line.append(f"offloads {nic.offloads}", style="yellow")
        return line
    shown = 0
    for name, label in INTERESTING:
        item = find_offload(nic.offloads, name)
        if item is None:
            continue
        shown += 1
        line.append(f"{label} ", style="")
        line.append("on" if item.on else "off", style="green" if item.on else "dim")
        if item.fixed:
            line.append("*", style="dim")
        line.append("  ")
    line.append(f"+{max(len(nic.offloads) - shown, 0)} more features", style="dim")
    return line


def sysctl_table(section: NetSection) -> Table | Text:
    values = [sc.value for sc in section.sysctls]
    if values and all(isinstance(v, Unknown) for v in values):
        return Text(f"network sysctls: {values[0]}", style="yellow")
    # The verdict comes second so a narrow terminal folds the long values, never the verdict.
    table = Table(show_edge=False, pad_edge=False, title="network sysctls (vs. usual tuning)",
                  title_justify="left", title_style="bold")
    table.add_column("sysctl", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("tuned", overflow="fold", style="dim")
    for sc in section.sysctls:
        mark = Text("ok", style="green") if sc.meets_tuning is True else \
            Text("below" if sc.compare.endswith("at_least") else "differs", style="yellow") \
            if sc.meets_tuning is False else Text("?", style="dim")
        tuned = sc.tuned.replace(" ", " | ") if sc.compare == "one_of" else sc.tuned
        table.add_row(Text(sc.name), mark, cell(sc.value), Text(tuned))
    return table


def render(section: object) -> RenderableType:
    if not isinstance(section, NetSection):
        return Text(str(section), style="yellow")
    parts: list[RenderableType] = []
    if isinstance(section.nics, Unknown):
        parts.append(Text(f"interfaces: {section.nics}", style="yellow"))
    else:
        parts.append(nic_table(section.nics))
        details = label_grid()
        details.title = "counters and offloads (* fixed; --json has every feature ethtool -k lists)"
        details.title_justify, details.title_style = "left", "bold"
        for nic in section.nics:
            add_row(details, nic.name, Text.assemble(counters_line(nic), "\n", offloads_line(nic)))
        parts.append(details)
    parts.append(Text(""))
    parts.append(sysctl_table(section))
    return Group(*parts)


def ethtool_k_text(nic: Nic) -> str:
    """The full `ethtool -k` listing of one NIC (for detail screens)."""
    if isinstance(nic.offloads, Unknown):
        return f"Features for {nic.name}: {nic.offloads}"
    items: list[Offload] = nic.offloads
    return "\n".join([f"Features for {nic.name}:"] + [o.ethtool_line() for o in items])
