"""The one probe interface, and the typed figures every front end shares.

    probe = open_probe(request)              # probes.request; or IoRun(IoRunConfig(...)) ...
    probe.prepare()                          # opens the target; ProbeError with a one-line reason
    async for interval in probe.intervals(): # Interval, about 4 per second (DNS: one per round)
        ...
    probe.stop()                             # thread-safe: ends the run, partial figures kept
    summary = probe.result.summary()         # RunSummary: CLI text, --json, snapshots, history, TUI

probes.driver runs a probe (event loop, stop signals, hard deadline) the same way for the CLI,
snapshot/record and the TUI. Interval and RunSummary are plain data: `to_json()` gives a
JSON-able dict and `from_json()` reads it back, so a run can be streamed from another process.

This module stays light (no asyncio, no hdrh): the CLI imports it to register its options.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from inspector.probes.latency import LatencySummary


class ProbeError(Exception):
    """A probe cannot run as asked: a bad value (`target=False`) or a target that cannot be
    used (`target=True`: missing, refused, unresolvable). The message is one line for the
    operator, never an exception class name."""

    def __init__(self, message: str, *, target: bool = False):
        super().__init__(message)
        self.target = target


class ProbeKind(StrEnum):
    IO = "io"
    MEMCACHED = "memcached"
    DNS = "dns"


# the kinds' concurrency bounds (probes.request.KINDS; the `probe` commands' options)
MAX_IO_JOBS = 256           # IO workers are threads of one process: more cannot all run at once
MAX_CONNECTIONS = 1 << 30   # fs.nr_open's ceiling; RLIMIT_NOFILE is checked before a run


class RunStatus(StrEnum):
    """How a run ended."""
    COMPLETED = "completed"     # reached its count or its time
    STOPPED = "stopped"         # stop(): a signal, the operator, the driver's hard deadline
    DEADLINE = "deadline"       # the probe's own hard bound ended it early (memcached)
    FAILED = "failed"           # nothing (more) could be measured: `reason` says why


TimingLoop = Literal["c", "python"]     # the IO probe's request loop: the C one or Python's


class IoMode(StrEnum):
    READ = "read"
    WRITE = "write"             # directory targets only: a private temporary file
    MIXED = "mixed"


class McTest(StrEnum):
    SET = "set"
    GET = "get"
    MIX = "mix"


# --- interval samples ------------------------------------------------------------------------
@dataclass
class IoInterval:
    jobs: int
    bytes_per_s: float
    min_ns: int | None = None
    avg_ns: float | None = None
    loop: TimingLoop = "c"      # what timed the requests (python: GIL waits count)
    latencies_ns: list[int] = field(default_factory=list)   # each request, in ping mode (-i)
    warmups_ns: list[int] = field(default_factory=list)
    error: str | None = None


@dataclass
class McInterval:
    """memcached's own interval figures, per operation (set/get)."""
    t_s: float
    interval_s: float
    ops: dict[str, int]
    ops_per_s: float
    latency_ns: dict[str, dict[str, int]]   # {"get": {"p50", "p90", "p99", "p99.9", "max", "avg"}}
    errors: dict[str, int]                  # new in this interval, by kind
    connections: int
    in_flight: int


@dataclass
class McRampInterval:
    """One step of a memcached connection ramp."""
    connections: int            # asked for
    opened: int
    open_s: float
    errors: dict[str, int]
    server_rejected: int | None


@dataclass
class DnsServerSample:
    server: str
    kind: str                   # answered, timeout, refused ... (probes.dns_query.KINDS)
    latency_ms: float | None


@dataclass
class DnsInterval:
    round: int                  # 0-based
    servers: list[DnsServerSample] = field(default_factory=list)

    @property
    def per_server_ms(self) -> dict[str, float | None]:
        return {s.server: s.latency_ms for s in self.servers}


@dataclass
class Interval:
    """One interval of a run, the same shape for every kind (latencies in ns)."""
    t: float                    # seconds since the start, at the end of this interval
    seconds: float              # length of this interval
    ops: int                    # operations in this interval
    ops_total: int              # operations since the start
    ops_per_s: float            # in this interval
    p50_ns: float | None        # the interval's median; its mean when center == "avg"
    p99_ns: float | None
    max_ns: float | None
    avg_ns: float | None = None
    errors: int = 0             # in this interval
    errors_total: int = 0       # since the start
    center: Literal["p50", "avg"] = "p50"
    io: IoInterval | None = None
    memcached: McInterval | None = None
    memcached_ramp: McRampInterval | None = None
    dns: DnsInterval | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> Interval:
        doc = dict(doc)
        for name, kind in (("io", IoInterval), ("memcached", McInterval),
                           ("memcached_ramp", McRampInterval)):
            if doc.get(name) is not None:
                doc[name] = kind(**doc[name])
        if doc.get("dns") is not None:
            d = doc["dns"]
            doc["dns"] = DnsInterval(d["round"], [DnsServerSample(**s) for s in d["servers"]])
        return cls(**doc)


# --- run summary -----------------------------------------------------------------------------
@dataclass
class IoFigures:
    path: str
    description: str            # ioping's "(ext4 /dev/vda 20 GiB)"
    mode: IoMode
    request_size: int
    jobs: int
    direct: bool
    wall_ops_per_s: float       # achieved requests per wall second (ioping's "generated")
    bytes_per_s: float
    loop: TimingLoop = "c"


@dataclass
class McFigures:
    test: McTest | Literal["ramp"]
    connections: int            # opened
    address: str | None         # the numeric address measured
    errors: dict[str, int] = field(default_factory=dict)
    get_hits: int = 0
    get_misses: int = 0
    server_error: str | None = None


@dataclass
class DnsServerFigures:
    kind: str
    latency_us: float | None
    detail: str = ""


@dataclass
class DnsFigures:
    name: str
    rounds: int
    servers: dict[str, DnsServerFigures] = field(default_factory=dict)   # the last round
    predicted_lookup_s: float | None = None
    first_server_blackholed_s: float | None = None
    source: str = ""            # what named the servers: a resolv.conf's path, or the addresses
    # glibc's lookup time now and if each server refused or went silent: case -> outcome
    # ("now", "if 10.0.0.1 refuses", "if 10.0.0.1 is blackholed"), as `probe dns` prints them
    predictions: dict[str, str] = field(default_factory=dict)


@dataclass
class RunSummary:
    """What a run measured, for every front end. Latencies in ns; figures() gives the
    normalised dict (microseconds) that snapshots, diff and the history database store."""
    kind: ProbeKind
    target: str
    status: RunStatus
    latency: LatencySummary   # over the whole run
    reason: str = ""            # why it ended, when it did not complete
    error: str | None = None    # what went wrong: a failed request, errors, servers down
    requests: int = 0
    errors: int = 0             # failed operations over the run (io: failed requests;
                                # memcached: failed requests and refused connections; dns:
                                # queries without an answer, every round)
    seconds: float = 0.0        # measured time (load time for memcached, wall time for io)
    ops_per_s: float = 0.0
    histogram: list[tuple[int, int]] = field(default_factory=list)   # (upper bound ns, count)
    interval_p99_ns: list[float] = field(default_factory=list)       # the run-to-run spread
    interval_avg_ns: list[float] = field(default_factory=list)
    note: str = ""              # one line for a panel: the target's description, the verdict
    io: IoFigures | None = None
    memcached: McFigures | None = None
    dns: DnsFigures | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> RunSummary:
        from inspector.probes.latency import LatencySummary
        doc = dict(doc)
        doc["kind"], doc["status"] = ProbeKind(doc["kind"]), RunStatus(doc["status"])
        doc["latency"] = LatencySummary(**doc["latency"])
        doc["histogram"] = [tuple(b) for b in doc.get("histogram", [])]
        for name, kind in (("io", IoFigures), ("memcached", McFigures)):
            if doc.get(name) is not None:
                doc[name] = kind(**doc[name])
        if doc.get("dns") is not None:
            d = dict(doc["dns"])
            d["servers"] = {k: DnsServerFigures(**v) for k, v in d["servers"].items()}
            doc["dns"] = DnsFigures(**d)
        return cls(**{f.name: doc[f.name] for f in fields(cls) if f.name in doc})

    def figures(self) -> dict[str, Any]:
        """The snapshot/history form: requests, duration_s, ops_per_s, min/avg/max/mdev_us,
        p50..p99.9_us, `intervals` (per-interval p99_us/avg_us, diff's significance rule),
        plus the kind's own figures."""
        lat = self.latency
        out: dict[str, Any] = {
            "requests": self.requests, "duration_s": self.seconds, "ops_per_s": self.ops_per_s,
            "min_us": _us(lat.min_ns), "avg_us": _us(lat.avg_ns), "max_us": _us(lat.max_ns),
            "mdev_us": _us(lat.mdev_ns),
            **{f"{k}_us": _us(v) for k, v in lat.percentiles_ns.items()},
            "intervals": {"p99_us": [_us(v) for v in self.interval_p99_ns],
                          "avg_us": [_us(v) for v in self.interval_avg_ns]},
        }
        if self.io is not None:
            out.update(wall_ops_per_s=self.io.wall_ops_per_s, bytes_per_s=self.io.bytes_per_s,
                       direct=self.io.direct, description=self.io.description)
        if self.memcached is not None:
            m = self.memcached
            out.update(test=m.test, connections=m.connections, address=m.address,
                       errors=dict(m.errors), get_hits=m.get_hits, get_misses=m.get_misses,
                       server_error=m.server_error)
        if self.dns is not None:
            d = self.dns
            out.update(name=d.name, servers={k: {"kind": v.kind, "latency_us": v.latency_us}
                                             for k, v in d.servers.items()},
                       predicted_lookup_s=d.predicted_lookup_s,
                       first_server_blackholed_s=d.first_server_blackholed_s)
        return out


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000.0


# --- the interface ---------------------------------------------------------------------------
class ProbeResult(Protocol):
    detail: Any                 # the kind's own full result (IoResult, memcached's summary ...)

    def summary(self) -> RunSummary: ...


class Probe(Protocol):
    kind: ProbeKind
    uvloop: bool                # its load needs uvloop's lower per-request cost
    deadline: float | None      # seconds after which the driver stops it (None: bounds itself)

    def prepare(self) -> None: ...
    def intervals(self) -> AsyncIterator[Interval]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...

    @property
    def result(self) -> ProbeResult | None: ...
