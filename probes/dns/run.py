"""The DNS failover probe behind the probe interface (probes.base): config, run, summary.

DnsRunConfig is what `probe dns` fills from its options and what a request (`--probe dns`,
the TUI's form) becomes. resolve() reads the resolver configuration the way glibc on that host
does (resolv.conf, RES_OPTIONS, LOCALDOMAIN, the hostname; systemd-resolved's stub, musl) and
picks the servers, the name and the query types (`options no-aaaa` honoured), once for every
front end. Each round of queries is one Interval.

Every read of the host here is bounded: resolve() and the target's stat run in a forked child
(inspector.roots.bounded) under a deadline, so a resolv.conf, a hostname or a /lib on a filesystem
that never answers fails with one line instead of hanging; a --resolv-conf file must be a
regular file of at most RESOLV_CONF_LIMIT (a FIFO, /dev/zero or a 1 GiB file is refused)."""
from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeVar

from inspector.probes.base import (
    DnsFigures,
    DnsInterval,
    DnsServerFigures,
    DnsServerSample,
    Interval,
    ProbeError,
    ProbeKind,
    RunStatus,
    RunSummary,
)
from inspector.probes.dns.failover import (
    MAX_ROUNDS,
    DnsFailoverProbe,
    DnsProbeResult,
    DnsProbeSettings,
)
from inspector.probes.dns.query import FAILED_KINDS, parse_server
from inspector.probes.latency import LatencyRecorder

if TYPE_CHECKING:
    from inspector.roots.host import HostRoot

ROUND_INTERVAL_S = 1.0      # a request's rounds, one a second within its duration
RESOLVE_TIMEOUT = 5.0       # reading the resolver configuration (a few small files)
RESOLV_CONF_LIMIT = 1 << 20  # glibc reads every line; a real resolv.conf is a few hundred bytes
HUNG = "(a hung filesystem? look for processes in D state)"
T = TypeVar("T")


def parse_dns_target(text: str) -> tuple[str | None, list[str]]:
    """The one parser of a DNS target: "" (this host's resolver configuration), a resolv.conf
    file, or nameserver addresses "ADDR[:PORT],..." -> (resolv_conf, servers)."""
    text = text.strip()
    if not text:
        return None, []
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        for part in parts:
            parse_server(part)
        return None, parts
    except ValueError:
        pass
    mode = _bounded(lambda: _mode_of(text),
                    f"{text}: no answer after {RESOLVE_TIMEOUT:g} s {HUNG}")
    if mode is None:
        raise ProbeError(f"{text}: neither a resolv.conf file nor nameserver addresses "
                         "(ADDR[:PORT],...)", target=True)
    if not stat.S_ISREG(mode):
        raise ProbeError(f"{text}: not a resolv.conf file (a resolv.conf or nameserver "
                         "addresses ADDR[:PORT],...)", target=True)
    return text, []


@dataclass
class DnsRunConfig:
    kind: ClassVar[ProbeKind] = ProbeKind.DNS
    name: str | None = None             # default: the first search domain, else "." (NS)
    servers: list[str] = field(default_factory=list)   # ADDR[:PORT]; default: resolv.conf's
    resolv_conf: str | None = None      # default: the host's etc/resolv.conf
    rounds: int = 1
    interval: float = 1.0               # seconds between the rounds' starts
    timeout: float | None = None        # per-server wait (default: glibc's wait for it)
    tcp_timeout: float = 3.0            # bound on the TCP retry after truncation (glibc: none)
    deadline: float | None = None       # the run is stopped after this many seconds
    measure_getaddrinfo: bool = False   # also time the real getaddrinfo (this host's config)

    def validate(self) -> None:
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise ProbeError(f"rounds (--count) must be between 1 and {MAX_ROUNDS}")
        if self.interval < 0 or (self.timeout is not None and self.timeout <= 0):
            raise ProbeError("the interval must be >= 0 and the timeout positive")
        if self.deadline is not None and self.deadline <= 0:
            raise ProbeError("the deadline must be positive")
        for server in self.servers:
            try:
                parse_server(server)
            except ValueError as exc:
                raise ProbeError(f"nameserver {server}: {exc}", target=True) from None


def _mode_of(path: str) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def _bounded(func: Callable[[], T], hung: str) -> T:
    """func() in a forked child under RESOLVE_TIMEOUT (probes.bounded_ask): a ProbeError it
    raises is raised here, a child that does not answer is ProbeError(hung)."""
    from inspector.probes.bounded_ask import ask_bounded
    from inspector.roots.bounded import TimedOut, WorkerFailed

    def in_child() -> tuple[str, T | None, str, bool]:
        try:
            return "ok", func(), "", False
        except ProbeError as exc:       # by value: its `target` does not survive a pickle
            return "error", None, str(exc), exc.target
    try:
        status, value, message, target = ask_bounded(in_child, RESOLVE_TIMEOUT)
    except TimedOut:
        raise ProbeError(hung, target=True) from None
    except WorkerFailed as exc:
        raise ProbeError(f"reading the resolver configuration failed: {exc}") from None
    if status == "error":
        raise ProbeError(message, target=target)
    return value  # type: ignore[return-value]  # "ok" carries func()'s value


def read_resolv_conf(path: str) -> str:
    """A resolv.conf named by the operator: a regular file of at most RESOLV_CONF_LIMIT,
    read in this process (see resolve for the bounded way); ProbeError with one line."""
    from inspector.roots.input_files import InputError, read_input
    try:
        data = read_input(path, RESOLV_CONF_LIMIT, "resolv.conf")
    except InputError as exc:
        raise ProbeError(f"cannot read {exc}", target=True) from None
    except OSError as exc:      # read_input opens a directory, then fdopen refuses it
        raise ProbeError(f"cannot read {path}: {exc.strerror or exc}", target=True) from None
    return data.decode("utf-8", errors="replace")


def read_resolv_conf_bounded(path: str) -> str:
    """read_resolv_conf in a child under RESOLVE_TIMEOUT: for the TUI's form, whose process
    must never wait on a hung mount."""
    return _bounded(lambda: read_resolv_conf(path),
                    f"{path}: no answer after {RESOLVE_TIMEOUT:g} s {HUNG}")


def nameserver_problem(config: DnsRunConfig) -> str | None:
    """Why a DNS target names no nameserver, or None. A resolv.conf without one makes glibc
    fall back to 127.0.0.1, which is not what an operator naming the file asked to probe.
    The file is read in a bounded child (read_resolv_conf_bounded)."""
    if config.servers:
        return None
    from inspector.discover.resolver_conf import parse_resolv_conf
    path = config.resolv_conf or "/etc/resolv.conf"
    try:
        text = read_resolv_conf_bounded(path)
    except ProbeError as exc:
        return str(exc)
    parsed = parse_resolv_conf(text)
    if parsed.nameserver_defaulted or not parsed.used_nameservers:
        return (f"{path} names no nameserver (glibc would query 127.0.0.1): give a "
                "resolv.conf with nameserver lines, or addresses ADDR[:PORT],...")
    return None


def resolve(config: DnsRunConfig, root: HostRoot) -> tuple[DnsProbeSettings, list[str]]:
    """What glibc on `root` would do for this config: the probe's settings, plus notes for
    the operator (ignored nameservers, the stub's upstreams, what getaddrinfo reads). Read in
    a child under RESOLVE_TIMEOUT."""
    what = config.resolv_conf or "the resolver configuration"
    return _bounded(lambda: _resolve(config, root),
                    f"reading {what}: no answer after {RESOLVE_TIMEOUT:g} s {HUNG}")


def _resolve(config: DnsRunConfig, root: HostRoot) -> tuple[DnsProbeSettings, list[str]]:
    from inspector.discover.resolver import STUB_ADDRESSES, collect
    from inspector.discover.resolver_conf import parse_resolv_conf
    from inspector.model import Unknown, known
    notes: list[str] = []
    env = {k: v for k in ("RES_OPTIONS", "LOCALDOMAIN") if (v := root.environ(k)) is not None}
    # what gethostname() gives glibc (uname's node name), without a file read where known
    uname = root.uname()
    line = (uname["nodename"] if known(uname) and uname.get("nodename")
            else root.try_line("proc/sys/kernel/hostname"))
    hostname = line if isinstance(line, str) else None
    upstreams = None
    if config.resolv_conf:
        text = read_resolv_conf(config.resolv_conf)
    else:
        section = collect(root)
        if isinstance(section.config, Unknown):
            if not config.servers:
                raise ProbeError("cannot read the resolver configuration: "
                                 f"{section.config.reason}", target=True)
            text = ""
        else:
            text = root.read_text(root.resolve("etc/resolv.conf"))
        upstreams = section.upstreams
    cfg = parse_resolv_conf(text, env, hostname)
    resolver_kind = "glibc"
    if any(ns in STUB_ADDRESSES for ns in cfg.used_nameservers):
        resolver_kind = "systemd-resolved"
        if upstreams is not None:
            notes.append("resolv.conf points at the systemd-resolved stub; its upstreams: "
                         + (", ".join(upstreams) if isinstance(upstreams, list) else "unknown"))
    if any(n.startswith("ld-musl-") for n in root.try_listdir("lib")):
        resolver_kind = "musl"
    if config.servers:
        servers = [parse_server(s) for s in config.servers]
    else:
        servers = [parse_server(s) for s in cfg.used_nameservers]
        if cfg.ignored_nameservers:
            notes.append("glibc ignores nameservers past the third: "
                         + ", ".join(cfg.ignored_nameservers))
    name = config.name or (cfg.search[0] if cfg.search else ".")
    rdtypes = ["A", "AAAA"] if name != "." else ["NS"]
    if cfg.no_aaaa:
        rdtypes = [t for t in rdtypes if t != "AAAA"]
    if config.measure_getaddrinfo and (config.servers or config.resolv_conf or not root.live):
        notes.append("getaddrinfo reads /etc/resolv.conf of this host, not --server/"
                     "--resolv-conf/--root")
    return DnsProbeSettings(servers=servers, resolver=cfg, name=name, rdtypes=rdtypes,
                            timeout=config.timeout, tcp_timeout=config.tcp_timeout,
                            count=config.rounds, interval=config.interval,
                            measure_getaddrinfo=config.measure_getaddrinfo,
                            resolver_kind=resolver_kind), notes


@dataclass
class DnsRunResult:
    detail: DnsProbeResult
    stopped: bool
    queries: int                       # server answers (or failures) over every round
    errors: int                        # queries without an answer, over every round
    seconds: float
    latency: LatencyRecorder           # the answering servers' latencies, every round
    interval_p99_ns: list[float]
    interval_avg_ns: list[float]
    source: str                        # what named the servers (DnsFigures.source)

    def summary(self) -> RunSummary:
        r = self.detail
        down = [f"{s.server} {s.kind}" for s in r.servers if s.kind != "answered"]
        pred = r.prediction
        note = f"glibc lookup now: {pred.text()}"       # the outcome, its families, the time
        return RunSummary(
            ProbeKind.DNS, r.name, RunStatus.STOPPED if self.stopped else RunStatus.COMPLETED,
            self.latency.summary(), reason="partial rounds kept" if self.stopped else "",
            error="; ".join(down) or None, requests=self.queries, errors=self.errors,
            seconds=self.seconds,
            ops_per_s=self.queries / self.seconds if self.seconds else 0.0,
            histogram=self.latency.buckets(), interval_p99_ns=self.interval_p99_ns,
            interval_avg_ns=self.interval_avg_ns, note=note,
            dns=DnsFigures(r.name, r.rounds, {s.server: DnsServerFigures(
                s.kind, None if s.latency_s is None else s.latency_s * 1e6, s.detail)
                for s in r.servers}, pred.seconds,
                r.what_ifs[0].blackholed.seconds if r.what_ifs else None, self.source,
                predictions(r)))


def predictions(r: DnsProbeResult) -> dict[str, str]:
    """glibc's lookup now and if each server refused or went silent (probe dns's table)."""
    out = {"now": r.prediction.text()}
    for w in r.what_ifs:
        out[f"if {w.server} refuses"] = w.refused.text()
        out[f"if {w.server} is blackholed"] = w.blackholed.text()
    return out


class DnsRun:
    """The DNS probe as a Probe (probes.base). `root` answers the resolver configuration."""
    kind = ProbeKind.DNS
    uvloop = False

    def __init__(self, config: DnsRunConfig, root: HostRoot | None = None):
        config.validate()
        self.config = config
        self.root = root
        self.deadline = config.deadline
        self.settings: DnsProbeSettings | None = None
        self.notes: list[str] = []
        self._engine: DnsFailoverProbe | None = None
        self._stopped = False
        self._queries = self._errors = 0
        self._seconds = 0.0
        self._latency = LatencyRecorder()
        self._p99: list[float] = []
        self._avg: list[float] = []

    def prepare(self) -> None:
        if self._engine is not None:
            return
        from inspector.roots.host import HostRoot
        self.settings, self.notes = resolve(self.config, self.root or HostRoot("/"))
        try:
            self._engine = DnsFailoverProbe(self.settings)
        except ValueError as exc:       # no nameserver, a name no query can carry
            raise ProbeError(str(exc)) from None
        if self._stopped:
            self._engine.stop()

    @property
    def rounds_done(self) -> int:
        return self._engine.rounds_done if self._engine else 0

    async def intervals(self) -> AsyncIterator[Interval]:
        self.prepare()
        assert self._engine is not None
        last_t = 0.0
        async for samples in self._engine.rounds():
            if not samples:
                continue
            answered = sorted(s.latency_ms * 1e6 for s in samples
                              if s.kind == "answered" and s.latency_ms is not None)
            for ns in answered:
                self._latency.record(int(ns))
            failed = sum(s.kind in FAILED_KINDS for s in samples)
            self._errors += failed
            t = max(s.t for s in samples)
            seconds, last_t = t - last_t, t
            self._queries += len(samples)
            self._seconds = t
            avg = None
            if answered:
                avg = sum(answered) / len(answered)
                self._p99.append(answered[-1])
                self._avg.append(avg)
            yield Interval(
                t=t, seconds=seconds, ops=len(samples), ops_total=self._queries,
                ops_per_s=len(samples) / seconds if seconds > 0 else 0.0,
                p50_ns=answered[len(answered) // 2] if answered else None,
                p99_ns=answered[-1] if answered else None,
                max_ns=answered[-1] if answered else None, avg_ns=avg, errors=failed,
                errors_total=self._errors,
                dns=DnsInterval(samples[0].round, [DnsServerSample(s.server, s.kind, s.latency_ms)
                                                   for s in samples]))

    def stop(self) -> None:
        self._stopped = True
        if self._engine is not None:
            self._engine.stop()

    def close(self) -> None:
        pass

    @property
    def result(self) -> DnsRunResult | None:
        if self._engine is None or not self._engine.rounds_done:
            return None
        return DnsRunResult(self._engine.result(), self._stopped, self._queries, self._errors,
                            self._seconds, self._latency, self._p99, self._avg, self.source)

    @property
    def source(self) -> str:
        """What named the servers probed: addresses given, a resolv.conf, or this host's."""
        if self.config.servers:
            return "nameservers " + ", ".join(self.config.servers)
        return self.config.resolv_conf or "/etc/resolv.conf"
