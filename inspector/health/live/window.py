"""The sliding window of live samples the rules read, and the longer histories some need
(a disk's await baseline, a filesystem's growth), kept compact: only the last `window_s`
seconds keep whole samples (with their process lists)."""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from inspector.live.processes import ProcessRate
from inspector.live.sampler import Rates

HISTORY_MAX = 4000          # points per series, whatever the interval


@dataclass
class Series:
    """(wall time, value) points, oldest first, kept for `span` seconds."""
    span: float
    points: deque[tuple[float, float]] = field(default_factory=deque)

    def add(self, wall: float, value: float) -> None:
        self.points.append((wall, value))
        while self.points and (wall - self.points[0][0] > self.span
                               or len(self.points) > HISTORY_MAX):
            self.points.popleft()

    def before(self, wall: float) -> list[float]:
        return [v for t, v in self.points if t < wall]


@dataclass
class Context:
    """What the rules know besides the samples."""
    cpus: int = 0                     # from the samples when 0
    hypervisor: str | None = None     # the layer discovery found under us ("Xen HVM", "KVM")


class Window:
    def __init__(self, seconds: float, history_s: float):
        self.seconds = seconds
        self.history_s = history_s
        self.samples: deque[Rates] = deque()
        self.series: dict[tuple[str, str], Series] = {}

    def push(self, sample: Rates) -> None:
        self.samples.append(sample)
        # whole samples for the window (at least two), plus one to measure it from
        while len(self.samples) > 2 and self.covered(drop_first=True) >= self.seconds:
            self.samples.popleft()

    def covered(self, drop_first: bool = False) -> float:
        samples = list(self.samples)[1:] if drop_first else self.samples
        return sum(s.interval for s in samples)

    @property
    def last(self) -> Rates:
        return self.samples[-1]

    @property
    def wall(self) -> float:
        return self.samples[-1].wall

    def full(self, share: float = 0.6) -> bool:
        """Enough of the window sampled to call something sustained."""
        return len(self.samples) >= 2 and self.covered() >= self.seconds * share

    def mean(self, value: Callable[[Rates], float | None]) -> float | None:
        """Interval-weighted mean of value(sample) over the samples that have it."""
        total = weight = 0.0
        for s in self.samples:
            v = value(s)
            if v is not None:
                total += v * s.interval
                weight += s.interval
        return total / weight if weight > 0 else None

    def series_of(self, kind: str, name: str, span: float | None = None) -> Series:
        key = (kind, name)
        if key not in self.series:
            self.series[key] = Series(span or self.history_s)
        return self.series[key]

    def forget_series(self, kind: str, alive: Iterable[str]) -> None:
        keep = set(alive)
        for key in [k for k in self.series if k[0] == kind and k[1] not in keep]:
            del self.series[key]

    def process_means(self, value: Callable[[ProcessRate], float]) -> list[tuple[float, ProcessRate]]:
        """Per process over the window: the mean of value(p) (absent samples count 0), with
        its latest figures; largest first."""
        sums: dict[int, float] = {}
        latest: dict[int, ProcessRate] = {}
        time = 0.0
        for s in self.samples:
            if not isinstance(s.processes, list):
                continue
            time += s.interval
            for p in s.processes:
                v = value(p)
                if v:
                    sums[p.pid] = sums.get(p.pid, 0.0) + v * s.interval
                    latest[p.pid] = p
        if time <= 0:
            return []
        out = [(total / time, latest[pid]) for pid, total in sums.items()]
        out.sort(key=lambda pair: (-pair[0], pair[1].pid))
        return out


def stall_share(window: Window, resource: str, line: str = "some") -> float | None:
    """Percent of the window's wall time with tasks stalled on `resource` (PSI totals), or
    None without PSI totals in the window's first and last samples."""
    first, last = window.samples[0], window.samples[-1]
    a, b = _psi_total(first, resource, line), _psi_total(last, resource, line)
    span = last.wall - first.wall
    if a is None or b is None or span <= 0 or b < a:
        return None
    return min(100.0, (b - a) / span / 1e4)


def _psi_total(sample: Rates, resource: str, line: str) -> int | None:
    pressure = sample.pressure
    if not isinstance(pressure, dict):
        return None
    return getattr(pressure.get(resource), f"{line}_total_us", None)
