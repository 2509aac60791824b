"""NIC counters from /sys/class/net/*/statistics, their rates, and the receive-stall detector.

The stall is the XenServer freeze pattern: the link says up and carrier on, the guest keeps
transmitting, but nothing is received any more. Counters alone show it: rx_packets stops moving
while tx_packets still climbs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from inspector.live.diskstats import counter_delta
from inspector.model import Finding, Level, Unknown
from inspector.roots.host import HostRoot, Unavailable

COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors", "tx_errors",
            "rx_dropped", "tx_dropped")
STATE_FILES = ("operstate", "carrier", "ifindex")
STALL_SECONDS = 10.0


@dataclass(slots=True)
class NicCounters:
    name: str
    operstate: str | Unknown
    carrier: bool | Unknown
    counters: tuple[int | None, ...]         # COUNTERS order; None when that file is unreadable
    # a NIC deleted and created again under the same name (a VPN's tun0 reconnecting, a
    # bond rebuilt) gets a new ifindex and counters from 0: no rate across that, never a wrap
    ifindex: int | None = None


@dataclass(slots=True)
class NicRates:
    name: str
    operstate: str | Unknown
    carrier: bool | Unknown
    rx_bytes_s: float | Unknown
    tx_bytes_s: float | Unknown
    rx_packets_s: float | Unknown
    tx_packets_s: float | Unknown
    rx_errors_s: float | Unknown
    tx_errors_s: float | Unknown
    rx_dropped_s: float | Unknown
    tx_dropped_s: float | Unknown


def read_nic(root: HostRoot, name: str) -> NicCounters:
    base = f"sys/class/net/{name}"
    # in one batch each (HostRoot.read_many): 11 files a NIC every second
    values = [_counter(data) for data in root.read_many(f"{base}/statistics", COUNTERS, 64)]
    # carrier: EINVAL while the interface is down
    operstate, carrier_raw, ifindex_raw = root.try_lines(base, STATE_FILES)
    carrier = carrier_raw if isinstance(carrier_raw, Unknown) else carrier_raw == "1"
    ifindex = int(ifindex_raw) if isinstance(ifindex_raw, str) and ifindex_raw.isdigit() \
        else None
    return NicCounters(name, operstate, carrier, tuple(values), ifindex)


def _counter(data: bytes | Unavailable) -> int | None:
    if isinstance(data, Unavailable):
        return None
    try:
        return int(data)
    except ValueError:
        return None


def read_nics(root: HostRoot) -> dict[str, NicCounters] | Unknown:
    try:
        names = root.listdir("sys/class/net")
    except Unavailable as exc:
        return exc.unknown()
    return {name: read_nic(root, name) for name in names}


_GONE = Unknown("counter unreadable")


def nic_rates(prev: NicCounters, cur: NicCounters, interval: float) -> NicRates:
    rates: list[float | Unknown] = []
    for p, c in zip(prev.counters, cur.counters):
        if p is None or c is None or interval <= 0:
            rates.append(_GONE)
        else:
            rates.append(counter_delta(p, c) / interval)
    return NicRates(cur.name, cur.operstate, cur.carrier, *rates)


def same_nic(prev: NicCounters, cur: NicCounters) -> bool:
    return prev.ifindex is None or cur.ifindex is None or prev.ifindex == cur.ifindex


def all_nic_rates(prev: dict[str, NicCounters], cur: dict[str, NicCounters],
                  interval: float) -> list[NicRates]:
    """Rates of the NICs present in both samples as the same interface (a NIC re-created
    under its name in between has no rate for this interval, like a new one)."""
    return [nic_rates(prev[name], c, interval) for name, c in cur.items()
            if name in prev and same_nic(prev[name], c)]


# ----------------------------------------------------------------------------- stall detector
@dataclass
class _NicTrack:
    rx_packets: int
    tx_packets: int
    rx_seen: bool = False           # traffic received at some point while watched
    last_rx_mono: float = 0.0       # when rx_packets last moved (monotonic) ...
    last_rx_wall: float = 0.0       # ... and the same moment on the wall clock
    tx_since_rx: int = 0            # packets sent since the last received one
    ifindex: int | None = None      # the interface these counters belong to


@dataclass
class StallDetector:
    """Feed it every NIC sample; it returns one `net.stall` finding per stalled NIC."""
    threshold: float = STALL_SECONDS
    _tracks: dict[str, _NicTrack] = field(default_factory=dict)

    def update(self, nics: dict[str, NicCounters], mono: float | None = None,
               wall: float | None = None) -> list[Finding]:
        mono = time.monotonic() if mono is None else mono
        wall = time.time() if wall is None else wall
        findings: list[Finding] = []
        for name in [n for n in self._tracks if n not in nics]:
            del self._tracks[name]          # interface went away: forget it
        for name, nic in nics.items():
            rx, tx = nic.counters[2], nic.counters[3]
            if rx is None or tx is None:
                self._tracks.pop(name, None)
                continue
            track = self._tracks.get(name)
            if track is None or track.ifindex != nic.ifindex:    # new, or re-created
                self._tracks[name] = _NicTrack(rx, tx, last_rx_mono=mono, last_rx_wall=wall,
                                               ifindex=nic.ifindex)
                continue
            if rx != track.rx_packets:
                track.rx_seen = True
                track.last_rx_mono, track.last_rx_wall = mono, wall
                track.tx_since_rx = 0
            else:
                track.tx_since_rx += counter_delta(track.tx_packets, tx)
            track.rx_packets, track.tx_packets = rx, tx
            link_up = nic.operstate == "up" and nic.carrier is True
            silent = mono - track.last_rx_mono
            if link_up and track.rx_seen and track.tx_since_rx > 0 and silent >= self.threshold:
                findings.append(stall_finding(nic, silent, track.last_rx_wall, track.tx_since_rx))
        return findings


def stall_finding(nic: NicCounters, silent: float, since_wall: float, tx_packets: int) -> Finding:
    started = time.strftime("%H:%M:%S", time.localtime(since_wall))
    return Finding(
        level=Level.CRIT, subject=nic.name, code="net.stall",
        message=f"{nic.name} has received nothing for {silent:.0f} s while still transmitting "
                f"(since {started})",
        evidence=["operstate up, carrier on",
                  f"rx_packets unchanged since {started} "
                  f"({time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since_wall))})",
                  f"tx_packets +{tx_packets} in the same time"],
        advice="A receive path frozen under a live link: on Xen netfront (vif) this is the "
               "XenServer freeze pattern; check the host side (dom0 vif, netback), then "
               "offloads (ethtool -K tso/gso off) and the switch port.")
