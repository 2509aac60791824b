"""Adapter from the live samplers (inspector.live) to what the screens show.

The screens need a few normalised figures per sample (busiest disk, CPU iowait/steal, NIC
rates); this module is the only place that knows the samplers' API, so the screens keep working
while the samplers evolve. `make_sampler(root)` returns None on a capture (no live data) or when
the samplers are not available; `unavailable_reason(root)` says which, in plain words.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspector.host import HostRoot


@dataclass
class DiskRate:
    name: str
    util: float | None          # %util like iostat -x
    await_ms: float | None      # average of r_await/w_await weighted by ops
    r_s: float | None = None
    w_s: float | None = None
    rkb_s: float | None = None
    wkb_s: float | None = None
    aqu_sz: float | None = None


@dataclass
class NicRate:
    name: str
    rx_bps: float | None        # bytes per second
    tx_bps: float | None
    errors_s: float | None = None
    drops_s: float | None = None
    stalled: bool = False


@dataclass
class LiveView:
    interval: float
    disks: list[DiskRate] = field(default_factory=list)
    nics: list[NicRate] = field(default_factory=list)
    iowait: float | None = None  # percent of all CPUs
    steal: float | None = None
    busy: float | None = None
    notes: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)   # live findings (NIC stall, D state ...)

    def busiest_disk(self) -> DiskRate | None:
        known = [d for d in self.disks if d.util is not None]
        return max(known, key=lambda d: d.util) if known else None


def unavailable_reason(root: HostRoot) -> str | None:
    if not root.live:
        return "capture: no live data"
    return _api_missing()


def _api_missing() -> str | None:
    try:
        import inspector.live as live
    except Exception as exc:  # pragma: no cover - the package always exists
        return f"live samplers failed to import: {exc}"
    if not hasattr(live, "LiveSampler"):
        return "live samplers have not landed in this build"
    return None


class _Sampler:
    """Wraps inspector.live.LiveSampler; `sample()` runs in a worker thread and returns the
    rates since the previous call (None on the first call: rates need two samples)."""

    def __init__(self, root: HostRoot):
        import inspector.live as live
        self._live = live
        # per-process IO is not shown by the TUI: skip reading every /proc/PID/io
        self._inner = live.LiveSampler(root, process_io=False)
        self._prev = None

    def sample(self) -> LiveView | None:
        cur = self._inner.sample()
        prev, self._prev = self._prev, cur
        if prev is None:
            return None
        return normalise(self._live.rates(prev, cur))


def make_sampler(root: HostRoot) -> Any:
    if unavailable_reason(root) is not None:
        return None
    try:
        return _Sampler(root)
    except Exception:
        return None


def _num(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def normalise(raw: Any) -> LiveView | None:
    """inspector.live.Rates to a LiveView."""
    if raw is None or isinstance(raw, LiveView):
        return raw
    view = LiveView(interval=float(getattr(raw, "interval", 0.0) or 0.0),
                    findings=list(getattr(raw, "findings", []) or []))
    disks = getattr(raw, "disks", None)
    if isinstance(disks, list):
        for d in disks:
            r_s, w_s = _num(d.r_s) or 0.0, _num(d.w_s) or 0.0
            ops = r_s + w_s
            await_ms = ((r_s * (_num(d.r_await) or 0.0) + w_s * (_num(d.w_await) or 0.0)) / ops
                        if ops > 0 else 0.0)
            view.disks.append(DiskRate(d.name, _num(d.util), await_ms, r_s, w_s, _num(d.rkB_s),
                                       _num(d.wkB_s), _num(d.aqu_sz)))
    else:
        view.notes.append(f"disks: {disks}")
    stalled = {f.subject for f in view.findings if getattr(f, "code", "") == "net.stall"}
    nics = getattr(raw, "nics", None)
    if isinstance(nics, list):
        for n in nics:
            errors = sum(v for v in (_num(n.rx_errors_s), _num(n.tx_errors_s)) if v is not None)
            drops = sum(v for v in (_num(n.rx_dropped_s), _num(n.tx_dropped_s)) if v is not None)
            view.nics.append(NicRate(n.name, _num(n.rx_bytes_s), _num(n.tx_bytes_s), errors,
                                     drops, n.name in stalled))
    cpu = getattr(raw, "cpu", None)
    overall = getattr(cpu, "overall", None)
    if overall is not None:
        view.iowait, view.steal = _num(overall.iowait), _num(overall.steal)
        view.busy = 100.0 - (_num(overall.idle) or 0.0) - (view.iowait or 0.0)
    return view
