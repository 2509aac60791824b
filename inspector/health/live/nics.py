"""Live NIC rules: errors and drops per second sustained, softnet backlog drops, carrier
flaps."""
from __future__ import annotations

from inspector.config import LiveThresholds
from inspector.health.live.window import Context, Window
from inspector.live.netstats import NicRates
from inspector.live.vmstat import SoftnetRates
from inspector.model import Finding, Level


def _sum(*values: object) -> float:
    return sum(v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))


def rules(window: Window, t: LiveThresholds, ctx: Context) -> list[Finding]:
    n = t.nic
    out: list[Finding] = []
    by_name: dict[str, list[tuple[float, NicRates]]] = {}
    for s in window.samples:
        if isinstance(s.nics, list):
            for nic in s.nics:
                by_name.setdefault(nic.name, []).append((s.interval, nic))
    last = window.last
    for name, seen in by_name.items():
        carriers = [x.carrier for _, x in seen if isinstance(x.carrier, bool)]
        flaps = sum(a != b for a, b in zip(carriers, carriers[1:]))
        series = window.series_of("carrier", name, 300.0)
        if carriers:
            series.add(last.wall, float(carriers[-1]))
        values = [v for _, v in series.points]
        flaps = max(flaps, sum(a != b for a, b in zip(values, values[1:])))
        if flaps >= n.carrier_flaps and len(values) >= 2:
            out.append(Finding(
                Level.WARN, name,
                f"{name} carrier changed {flaps} time{'s' * (flaps != 1)} in the last "
                f"{min(300.0, last.wall - series.points[0][0]):.0f} s (now "
                f"{'up' if carriers and carriers[-1] else 'down'})",
                evidence=[f"carrier samples: {''.join('1' if v else '0' for v in values[-30:])}"],
                advice="The link goes down and up: cable, transceiver, switch port or the "
                       "peer's NIC; the kernel log has the link messages.",
                code="live.nic.carrier_flaps"))
        if not window.full():
            continue
        span = sum(i for i, _ in seen)
        if span <= 0:
            continue
        errors = sum(i * _sum(x.rx_errors_s, x.tx_errors_s) for i, x in seen) / span
        drops = sum(i * _sum(x.rx_dropped_s, x.tx_dropped_s) for i, x in seen) / span
        if errors >= n.errors_s:
            out.append(Finding(
                Level.WARN, name, f"{name} {errors:.1f} errors/s over {span:.0f} s",
                evidence=[f"rx+tx errors {errors:.2f}/s"],
                advice="Errors on the wire or in the driver: check ethtool -S, the cable "
                       "and the switch port.", code="live.nic.errors"))
        if drops >= n.drops_s:
            out.append(Finding(
                Level.WARN, name, f"{name} dropping {drops:.1f} packets/s over {span:.0f} s",
                evidence=[f"rx+tx dropped {drops:.2f}/s"],
                advice="Packets dropped by the NIC or its driver: ring buffers (ethtool -g), "
                       "a full backlog, or traffic the host does not want.",
                code="live.nic.drops"))
    if window.full():
        softnet = window.mean(lambda s: s.softnet.dropped_s
                              if isinstance(s.softnet, SoftnetRates) else None)
        if softnet is not None and softnet >= n.softnet_drops_s:
            squeeze = window.mean(lambda s: s.softnet.time_squeeze_s
                                  if isinstance(s.softnet, SoftnetRates) else None)
            out.append(Finding(
                Level.WARN, "net",
                f"softnet backlog dropping {softnet:.1f} packets/s (time squeezed "
                f"{squeeze or 0:.1f}/s)",
                evidence=["/proc/net/softnet_stat dropped column, all CPUs"],
                advice="The per-CPU input backlog is full: raise net.core.netdev_max_backlog "
                       "or spread receive work over more CPUs (RPS/RSS).",
                code="live.net.softnet_drops"))
    return out
