"""A probe request: what to probe and for how long, the same from every front end, its limits,
and the table of probe kinds.

`--probe SPEC` (snapshot, record, export, the TUI), the TUI's form and `inspector --probe` make
a ProbeRequest; `validate()` holds every limit a request has, so the command line and the form
refuse the same things with the same words. config_for() turns it into the kind's config
(IoRunConfig, McRunConfig, DnsRunConfig), the same dataclass the `probe io|memcached|dns`
command fills from its options, so one request gives one probe wherever it starts.

KINDS is the one table of what differs between kinds (titles, what a target is, what the
concurrency counts, its bounds, what `write` does, how a spec and a request become a config):
a front end that needs one of those asks the table, never `if kind == ...`.

Spec strings: `io:PATH`, `dns` (or `dns:NAME`), `memcached:HOST[:PORT]`.

This module stays light (no asyncio, no hdrh): the CLI imports it to register its options; the
kinds' modules are imported when a request becomes a config.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from inspector.probes.base import MAX_CONNECTIONS, MAX_IO_JOBS, ProbeError, ProbeKind

if TYPE_CHECKING:
    from inspector.probes.base import Probe
    from inspector.probes.dns.run import DnsRunConfig
    from inspector.probes.io.run import IoRunConfig
    from inspector.probes.memcached.run import McRunConfig

    RunConfig: TypeAlias = IoRunConfig | McRunConfig | DnsRunConfig

# How long a run may go on past its time bound, or past a stop, before it is cut: the driver
# cancels it (probes.driver), a forked run is reported timed out (inspector.probes.forked_runs), the
# TUI kills its process. The one grace period of the probe layer.
GRACE_S = 5.0
MAX_DURATION_S = 86400.0        # a day: the longest run any front end asks for
MANY_CONNECTIONS = 100          # a memcached run opening this many says so in its confirmation
SPEC_HELP = "io:PATH | dns[:NAME] | memcached:HOST[:PORT]"


@dataclass(frozen=True)
class ProbeRequest:
    kind: ProbeKind
    target: str                 # io: a path; memcached: HOST[:PORT]; dns: a resolv.conf or
                                # ADDR[:PORT],... ("" = this host's resolver configuration)
    duration: float = 10.0      # seconds: the hard bound
    count: int | None = None    # operations: the other bound
    write: bool = False         # io: into a private temporary file; memcached: a set test
    concurrency: int = 0        # io workers, memcached connections (0: the kind's default)
    name: str | None = None     # dns: the name looked up (default: first search domain, '.')
    spec: str | None = None     # the --probe text it came from

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ProbeKind(self.kind))
        if not self.concurrency:
            object.__setattr__(self, "concurrency", KINDS[self.kind].default_concurrency)

    @property
    def info(self) -> KindInfo:
        return KINDS[self.kind]

    @property
    def text(self) -> str:
        """As a spec: how runs of this request are named in snapshots, history and metrics."""
        return self.spec or f"{self.kind}:{self.target}"

    @property
    def filed_under(self) -> str:
        """The target a run of this request is filed under in history and diff: the spec's text
        after `kind:` (`dns:example.com` -> example.com), whatever became of the run."""
        return self.text.partition(":")[2]

    def validate(self) -> None:
        """Every limit of a request, for every front end: ProbeError with one line naming the
        value and its bounds. Reads nothing of the host but a DNS target named as a file
        (a bounded stat: parse_dns_target)."""
        info = self.info
        if not 0 < self.duration <= MAX_DURATION_S:
            raise ProbeError(f"seconds must be within 0..{MAX_DURATION_S:g} (got {self.duration:g})")
        if self.count is not None and self.count < 1:
            raise ProbeError(f"the count must be at least 1 (got {self.count})")
        if info.concurrency is not None and not 1 <= self.concurrency <= info.max_concurrency:
            raise ProbeError(f"{info.concurrency} must be within 1..{info.max_concurrency} "
                             f"(got {self.concurrency})")
        if self.write and info.write is None:
            raise ProbeError(f"the {info.title} probe does not write")
        if info.needs_target and not self.target.strip():
            raise ProbeError(f"the {info.title} probe needs a target: {info.target_help}")
        config_for(self)


@dataclass(frozen=True)
class KindInfo:
    """What one probe kind is, for every front end."""
    title: str                  # "IO latency"
    spec: str                   # its --probe form
    target_help: str            # what a target is (the form's hint, messages)
    default_target: str         # the form's first value
    needs_target: bool
    concurrency: str | None     # what `concurrency` counts ("workers"); None: not used
    default_concurrency: int    # a short check, not a load test (`probe memcached` opens 32)
    max_concurrency: int
    write: str | None           # what `write` makes of a run; None: the kind does not write
    load: Callable[[ProbeRequest], str]                 # the load a request puts, in words
    # why the target, as this host has it, does not suit (read in bounded children), or None
    check: Callable[[ProbeRequest], str | None]
    # what a run does to its target that the operator confirms first, or None
    confirm: Callable[[ProbeRequest], str | None]
    spec_target: Callable[[str, str], tuple[str, str | None]]   # spec's rest -> target, name
    config: Callable[[ProbeRequest], RunConfig]
    probe: Callable[[RunConfig], Probe]


# --- io ------------------------------------------------------------------------------------
def _io_spec(text: str, rest: str) -> tuple[str, str | None]:
    if not rest:
        raise ProbeError(f"--probe {text}: io needs a path (io:PATH)")
    return rest, None


def _io_config(request: ProbeRequest) -> IoRunConfig:
    from inspector.probes.base import IoMode
    from inspector.probes.io.run import IoRunConfig
    return IoRunConfig(target=request.target, mode=IoMode.WRITE if request.write else IoMode.READ,
                       count=request.count, deadline=request.duration, jobs=request.concurrency)


def _io_probe(config: RunConfig) -> Probe:
    from inspector.probes.io.run import IoRun, IoRunConfig
    assert isinstance(config, IoRunConfig)
    return IoRun(config)


def _io_load(request: ProbeRequest) -> str:
    return f"{'WRITE' if request.write else 'read'}, {_count(request.concurrency, 'worker')}"


def _io_check(request: ProbeRequest) -> str | None:
    from inspector.probes.io.target_check import NoAnswer, target_kind
    try:
        kind = target_kind(request.target)
    except NoAnswer as exc:
        return str(exc)
    if request.write and kind != "dir":
        return (f"a write probe needs a directory (it writes a private temporary file there): "
                f"{request.target} is not one")
    if kind == "missing":
        return f"{request.target}: no such file, directory or block device"
    return None


def _io_confirm(request: ProbeRequest) -> str | None:
    from inspector.probes.io.target_check import NoAnswer, target_kind
    bound = f"(bound: {request.duration:g} s)"
    if request.write:
        return f"writes a private temporary file inside {request.target} {bound}"
    try:
        directory = target_kind(request.target) == "dir"
    except NoAnswer:        # asked to confirm rather than not
        directory = True
    if directory:
        return (f"writes a private 64 MiB temporary file inside {request.target} to read from "
                f"{bound}")
    return None


# --- memcached -----------------------------------------------------------------------------
def _mc_spec(text: str, rest: str) -> tuple[str, str | None]:
    try:
        memcached_address(rest)
    except ProbeError as exc:
        raise ProbeError(f"--probe {text}: {exc} (memcached:127.0.0.1:11211, "
                         "memcached:[::1]:11211)") from None
    return rest, None


def _mc_config(request: ProbeRequest) -> McRunConfig:
    from inspector.probes.base import McTest
    from inspector.probes.memcached.run import McRunConfig
    host, port = memcached_address(request.target)
    count, connections = request.count, request.concurrency
    return McRunConfig(host=host, port=port, concurrency=connections,
                       execute_number=math.ceil(count / connections) if count else None,
                       duration=None if count else request.duration,
                       test=McTest.SET if request.write else McTest.GET,
                       read_only=not request.write)


def _mc_probe(config: RunConfig) -> Probe:
    from inspector.probes.memcached.run import McRun, McRunConfig
    assert isinstance(config, McRunConfig)
    return McRun(config)


def _mc_load(request: ProbeRequest) -> str:
    return (f"{'set' if request.write else 'read-only get'} test, "
            f"{_count(request.concurrency, 'connection')}")


def _mc_check(request: ProbeRequest) -> str | None:
    return None             # its address is all there is to check (validate)


def _mc_confirm(request: ProbeRequest) -> str | None:
    many = " (many connections)" if request.concurrency >= MANY_CONNECTIONS else ""
    load = ("stores keys in its cache, which may evict real data" if request.write else
            "asks it for keys it does not hold (nothing is stored)")
    return (f"opens {_count(request.concurrency, 'connection')}{many} to {request.target} and "
            f"{load} (bound: {request.duration:g} s)")


def memcached_address(text: str) -> tuple[str, int]:
    """parse_address, stricter where it reads too much: an unbracketed 'H:P:EXTRA' is taken
    there for an IPv6 address and fails only at run time, and int() takes a port written in
    Unicode digits ('١١٢١١') or with '_'; a path or a space is no address. ProbeError."""
    from inspector.probes.memcached.target import is_numeric, parse_address
    if "/" in text or any(c.isspace() for c in text.strip()):
        raise ProbeError(f"{text}: not a memcached address (HOST:PORT, e.g. 127.0.0.1:11211)",
                         target=True)
    host, port = parse_address(text)
    if ":" in host and not is_numeric(host):
        raise ProbeError(f"bad server address {text!r} (an IPv6 address with a port is "
                         "[ADDR]:PORT)", target=True)
    stripped = text.strip()
    after_host = stripped[stripped.find("]") + 1:] if stripped.startswith("[") else \
        stripped if stripped.count(":") == 1 else ""
    port_text = after_host.partition(":")[2]
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        raise ProbeError(f"bad port in {text!r}", target=True)
    return host, port


# --- dns -----------------------------------------------------------------------------------
def _dns_spec(text: str, rest: str) -> tuple[str, str | None]:
    return "", rest or None


def _dns_config(request: ProbeRequest) -> DnsRunConfig:
    from inspector.probes.dns.run import ROUND_INTERVAL_S, DnsRunConfig, parse_dns_target
    resolv_conf, servers = parse_dns_target(request.target)
    rounds = request.count or max(1, int(request.duration // ROUND_INTERVAL_S))
    return DnsRunConfig(name=request.name, servers=servers, resolv_conf=resolv_conf,
                        rounds=rounds, interval=ROUND_INTERVAL_S, deadline=request.duration)


def _dns_probe(config: RunConfig) -> Probe:
    from inspector.probes.dns.run import DnsRun, DnsRunConfig
    assert isinstance(config, DnsRunConfig)
    return DnsRun(config)


def _dns_load(request: ProbeRequest) -> str:
    return f"looking up {request.name}" if request.name else "one lookup a second"


def _dns_check(request: ProbeRequest) -> str | None:
    from inspector.probes.dns.run import DnsRunConfig, nameserver_problem
    config = config_for(request)
    assert isinstance(config, DnsRunConfig)
    return nameserver_problem(config)


def _no_confirmation(request: ProbeRequest) -> str | None:
    return None             # a few queries a second: nothing to confirm


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


KINDS: dict[ProbeKind, KindInfo] = {
    ProbeKind.IO: KindInfo(
        "IO latency", "io:PATH", "a file, directory or block device (write: a directory)",
        "/tmp", True, "workers", 1, MAX_IO_JOBS, "writes a private temporary file",
        _io_load, _io_check, _io_confirm, _io_spec, _io_config, _io_probe),
    ProbeKind.MEMCACHED: KindInfo(
        "memcached", "memcached:HOST[:PORT]", "HOST:PORT", "127.0.0.1:11211", True,
        "connections", 4, MAX_CONNECTIONS, "a set test: stores keys, which may evict real data",
        _mc_load, _mc_check, _mc_confirm, _mc_spec, _mc_config, _mc_probe),
    ProbeKind.DNS: KindInfo(
        "DNS", "dns[:NAME]", "a resolv.conf, or ADDR[:PORT],...", "/etc/resolv.conf", False,
        None, 1, 1, None, _dns_load, _dns_check, _no_confirmation, _dns_spec, _dns_config,
        _dns_probe),
}


def parse_spec(text: str, duration: float = 3.0) -> ProbeRequest:
    """`io:PATH`, `dns`, `dns:NAME` or `memcached:HOST[:PORT]`, validated; ProbeError
    otherwise (one line that starts with the spec)."""
    kind, _, rest = text.partition(":")
    if kind not in KINDS:
        raise ProbeError(f"--probe {text}: unknown probe (use {SPEC_HELP})")
    target, name = KINDS[ProbeKind(kind)].spec_target(text, rest)
    request = ProbeRequest(ProbeKind(kind), target, duration, name=name, spec=text)
    try:
        request.validate()
    except ProbeError as exc:
        if str(exc).startswith("--probe "):
            raise
        raise ProbeError(f"--probe {text}: {exc}", target=exc.target) from None
    return request


def check_target(request: ProbeRequest) -> str | None:
    """Why this request cannot run, in one line, or None: its limits (validate), then its
    target as this host has it (the kind's check, in bounded children). Asked before a
    confirmation, so a dialog never names a target the run would refuse."""
    try:
        request.validate()
    except ProbeError as exc:
        return str(exc)
    return request.info.check(request)


def needs_confirmation(request: ProbeRequest) -> str | None:
    """What the run does to its target that the operator confirms first, or None."""
    return request.info.confirm(request)


def describe(request: ProbeRequest) -> str:
    """The request in one line, for a confirmation: kind, target, bound, load."""
    bound = f"{request.duration:g} s" + (f" or {request.count} ops" if request.count else "")
    target = request.target or "this host's resolver configuration"
    return f"{request.info.title} on {target} for at most {bound}, {request.info.load(request)}"


def config_for(request: ProbeRequest) -> RunConfig:
    """The kind's config for this request (validated: ProbeError)."""
    config = KINDS[request.kind].config(request)
    config.validate()
    return config


def make_probe(config: RunConfig) -> Probe:
    return KINDS[config.kind].probe(config)


def open_probe(request: ProbeRequest) -> Probe:
    return make_probe(config_for(request))
