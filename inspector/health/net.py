"""Health rules for the net section.

- net.xen_tso (warn): TSO or GSO on a Xen netfront NIC, the mitigation for the known XenServer
  guest network freezes is to turn them off.
- net.carrier_down (warn): an interface that is administratively up but has no carrier; the
  advice names what to check (cable, the device under a veth/VLAN, a bridge's or bond's ports).
  A bridge with no port at all (docker0 with no container) is only information (ok).
- net.errors (warn): rx/tx error counters above zero.
- net.drops (warn): dropped packets above 0.1% of the traffic (a few drops are normal: the
  kernel counts frames for protocols nobody listens to as rx_dropped).
Sysctls against their tuning values are information (the screens show them), not findings.
"""
from __future__ import annotations

from collections.abc import Iterable

from inspector.discover.net import NetSection, Nic
from inspector.discover.net_offloads import find_offload
from inspector.model import Finding, Level, Report

DROP_RATIO = 0.001      # 0.1 % of packets
DROP_MIN = 100          # and at least this many, so an idle NIC with 3 drops stays quiet
SEGMENTATION = ("tcp-segmentation-offload", "generic-segmentation-offload")


def rules(report: Report) -> Iterable[Finding]:
    section = report.section("net")
    if not isinstance(section, NetSection) or not isinstance(section.nics, list):
        return []
    out: list[Finding] = []
    for nic in section.nics:
        out.extend(_xen_tso(nic))
        out.extend(_carrier(nic))
        out.extend(_errors(nic))
        out.extend(_drops(nic))
    return out


def _xen_tso(nic: Nic) -> list[Finding]:
    if nic.kind != "xen-netfront":
        return []
    on = [o for o in (find_offload(nic.offloads, name) for name in SEGMENTATION) if o and o.on]
    if not on:
        return []
    names = " and ".join("TSO" if o.name.startswith("tcp") else "GSO" for o in on)
    return [Finding(
        Level.WARN, nic.name, f"{names} on a Xen netfront NIC (known XenServer network freezes)",
        [o.ethtool_line().strip() for o in on] + nic.evidence,
        f"ethtool -K {nic.name} tso off gso off (and persist it); operators saw this only "
        "partly help, so watch the memcached/network latency after the change.",
        code="net.xen_tso")]


def _carrier(nic: Nic) -> list[Finding]:
    if nic.admin_up is not True or nic.carrier is not False or nic.kind == "loopback":
        return []
    evidence = [f"operstate {nic.operstate}", f"carrier 0, carrier_changes {nic.carrier_changes}"]
    if nic.kind == "bridge" and not nic.ports:
        # docker0 or virbr0 with nothing running: normal, and no cable to check
        return [Finding(
            Level.OK, nic.name, "bridge has no carrier: no port attached",
            evidence + ["brif/: empty"],
            "Nothing to do on an idle container/VM host; otherwise attach its port "
            f"(ip link set PORT master {nic.name}).", code="net.carrier_down")]
    if nic.kind in ("bridge", "bond"):
        show = "bridge link" if nic.kind == "bridge" else f"cat /proc/net/bonding/{nic.name}"
        return [Finding(
            Level.WARN, nic.name, f"{nic.kind} is up but none of its ports has a link",
            evidence + [f"ports: {', '.join(nic.ports or []) or 'none'}"],
            f"Fix the ports' links (each port's own cable/switch port); {show} shows their "
            "states.", code="net.carrier_down")]
    if nic.operstate == "lowerlayerdown":
        return [Finding(
            Level.WARN, nic.name, "interface is up but the device under it is down",
            evidence,
            f"ip -d link show {nic.name} names that device after the @ (a veth's peer, a VLAN's "
            "or macvlan's parent): bring it up or fix its link.", code="net.carrier_down")]
    return [Finding(
        Level.WARN, nic.name, "interface is up but has no carrier (link down)", evidence,
        "Check the cable/switch port or the hypervisor's virtual switch; if the port is unused, "
        f"set it down (ip link set {nic.name} down).", code="net.carrier_down")]


def _errors(nic: Nic) -> list[Finding]:
    s = nic.statistics
    errors = {k: v for k, v in (("rx_errors", s.rx_errors), ("tx_errors", s.tx_errors))
              if isinstance(v, int) and v > 0}
    if not errors:
        return []
    return [Finding(
        Level.WARN, nic.name, "NIC errors: " + ", ".join(f"{k} {v}" for k, v in errors.items()),
        [f"{k}={v}" for k, v in errors.items()] + [f"rx_packets={s.rx_packets}",
                                                    f"tx_packets={s.tx_packets}"],
        f"ethtool -S {nic.name} names the kind of error (CRC, FIFO, missed); check cabling, "
        "ring sizes (ethtool -g) and the switch port counters.", code="net.errors")]


def _drops(nic: Nic) -> list[Finding]:
    s = nic.statistics
    out = []
    for direction, dropped, packets in (("rx", s.rx_dropped, s.rx_packets),
                                        ("tx", s.tx_dropped, s.tx_packets)):
        if not isinstance(dropped, int) or not isinstance(packets, int) or dropped < DROP_MIN:
            continue
        ratio = dropped / max(dropped + packets, 1)
        if ratio < DROP_RATIO:
            continue
        out.append(Finding(
            Level.WARN, nic.name, f"{direction} drops: {dropped} ({ratio:.2%} of packets)",
            [f"{direction}_dropped={dropped}", f"{direction}_packets={packets}"],
            "rx: raise the ring size (ethtool -G) or net.core.netdev_max_backlog, check CPU "
            "softirq load; tx: txqueuelen and qdisc drops (tc -s qdisc).",
            code="net.drops"))
    return out
