"""The network sysctls that tuning guides set, each beside the value those guides use.

Reference values: ESnet fasterdata "Linux tuning" for 10 GbE hosts (buffers, backlog,
congestion control) and the kernel's own modern defaults (somaxconn 4096, SACK and timestamps
on). `meets_tuning` compares the way the setting works: larger-is-enough for limits, the third
(max) field for tcp_rmem/tcp_wmem, equality for switches, membership for the congestion control.
"""
from __future__ import annotations

from dataclasses import dataclass

from inspector.model import Unknown
from inspector.roots.host import HostRoot


@dataclass
class NetSysctl:
    """A network sysctl beside the value tuning guides give it."""
    name: str                       # dotted sysctl name
    value: str | Unknown            # as the kernel prints it, whitespace normalised
    tuned: str                      # what tuning guides set
    compare: str                    # at_least | max_field_at_least | equals | one_of
    meets_tuning: bool | Unknown    # value satisfies `tuned` the `compare` way; Unknown: unread
    note: str = ""                  # what the setting does, for the operator


# name, tuned value, comparison, why it matters
TUNING: tuple[tuple[str, str, str, str], ...] = (
    ("net.core.netdev_max_backlog", "30000", "at_least",
     "packets queued per CPU before the stack drops them (default 1000)"),
    ("net.core.rmem_default", "262144", "at_least", "default socket receive buffer"),
    ("net.core.rmem_max", "67108864", "at_least", "largest receive buffer an app may set"),
    ("net.core.wmem_default", "262144", "at_least", "default socket send buffer"),
    ("net.core.wmem_max", "67108864", "at_least", "largest send buffer an app may set"),
    ("net.ipv4.tcp_rmem", "4096 87380 33554432", "max_field_at_least",
     "TCP receive autotuning min/default/max"),
    ("net.ipv4.tcp_wmem", "4096 65536 33554432", "max_field_at_least",
     "TCP send autotuning min/default/max"),
    ("net.ipv4.tcp_timestamps", "1", "equals", "RTT measurement and PAWS"),
    ("net.ipv4.tcp_sack", "1", "equals", "selective acknowledgements"),
    ("net.ipv4.tcp_congestion_control", "bbr htcp", "one_of",
     "bbr or htcp on long fat paths (cubic is the kernel default)"),
    ("net.core.somaxconn", "4096", "at_least", "listen() backlog cap (kernel default since 5.4)"),
)


def sysctl_path(name: str) -> str:
    return "proc/sys/" + name.replace(".", "/")


def meets(value: str, tuned: str, compare: str) -> bool | Unknown:
    try:
        if compare == "at_least":
            return int(value) >= int(tuned)
        if compare == "max_field_at_least":
            return int(value.split()[-1]) >= int(tuned.split()[-1])
        if compare == "equals":
            return value == tuned
        if compare == "one_of":
            return value in tuned.split()
    except (ValueError, IndexError):
        return Unknown(f"unparsable value {value[:40]!r}")
    return Unknown(f"unknown comparison {compare}")


def collect_sysctls(root: HostRoot) -> list[NetSysctl]:
    out = []
    for name, tuned, compare, note in TUNING:
        raw = root.try_line(sysctl_path(name))
        if isinstance(raw, Unknown):
            out.append(NetSysctl(name, raw, tuned, compare, raw, note))
            continue
        value = " ".join(raw.split())
        out.append(NetSysctl(name, value, tuned, compare, meets(value, tuned, compare), note))
    return out
