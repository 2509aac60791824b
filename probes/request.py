"""A probe request: what to probe and for how long, the same from every front end.

`--probe SPEC` (snapshot, record), the TUI's form and its `--probe` all make a ProbeRequest;
config_for() turns it into the kind's config (IoRunConfig, McRunConfig, DnsRunConfig), the
same dataclass the `probe io|memcached|dns` command fills from its options, so one request
gives one probe wherever it starts.

Spec strings: `io:PATH`, `dns` (or `dns:NAME`), `memcached:HOST[:PORT]`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from inspector.probes.base import ProbeError, ProbeKind

if TYPE_CHECKING:
    from inspector.probes.base import Probe
    from inspector.probes.dns.run import DnsRunConfig
    from inspector.probes.io.run import IoRunConfig
    from inspector.probes.memcached.run import McRunConfig

# workers (io) or connections (memcached) when the request does not say: a short check, not
# a load test (`probe memcached` alone opens 32)
DEFAULT_CONCURRENCY = {ProbeKind.IO: 1, ProbeKind.MEMCACHED: 4, ProbeKind.DNS: 1}
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
            object.__setattr__(self, "concurrency", DEFAULT_CONCURRENCY[self.kind])

    @property
    def text(self) -> str:
        """As a spec: how runs of this request are named in snapshots and history."""
        return self.spec or f"{self.kind}:{self.target}"


def parse_spec(text: str, duration: float = 3.0) -> ProbeRequest:
    """`io:PATH`, `dns`, `dns:NAME` or `memcached:HOST[:PORT]`; ProbeError otherwise."""
    kind, _, rest = text.partition(":")
    if kind == ProbeKind.IO:
        if not rest:
            raise ProbeError(f"--probe {text}: io needs a path (io:PATH)")
        return ProbeRequest(ProbeKind.IO, rest, duration, spec=text)
    if kind == ProbeKind.DNS:
        return ProbeRequest(ProbeKind.DNS, "", duration, name=rest or None, spec=text)
    if kind == ProbeKind.MEMCACHED:
        try:
            memcached_address(rest)
        except ProbeError as exc:
            raise ProbeError(f"--probe {text}: {exc} (memcached:127.0.0.1:11211, "
                             "memcached:[::1]:11211)") from None
        return ProbeRequest(ProbeKind.MEMCACHED, rest, duration, spec=text)
    raise ProbeError(f"--probe {text}: unknown probe (use {SPEC_HELP})")


def memcached_address(text: str) -> tuple[str, int]:
    """parse_address, stricter where it reads too much: an unbracketed 'H:P:EXTRA' is taken
    there for an IPv6 address and fails only at run time, and int() takes a port written in
    Unicode digits ('١١٢١١') or with '_'. ProbeError for either."""
    from inspector.probes.memcached.target import is_numeric, parse_address
    host, port = parse_address(text)
    if ":" in host and not is_numeric(host):
        raise ProbeError(f"bad server address {text!r} (an IPv6 address with a port is "
                         "[ADDR]:PORT)")
    stripped = text.strip()
    after_host = stripped[stripped.find("]") + 1:] if stripped.startswith("[") else \
        stripped if stripped.count(":") == 1 else ""
    port_text = after_host.partition(":")[2]
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        raise ProbeError(f"bad port in {text!r}")
    return host, port


def config_for(request: ProbeRequest) -> IoRunConfig | McRunConfig | DnsRunConfig:
    """The kind's config for this request (validated: ProbeError)."""
    config: IoRunConfig | McRunConfig | DnsRunConfig
    if request.kind == ProbeKind.IO:
        from inspector.probes.io.run import IoRunConfig
        config = IoRunConfig.from_request(request)
    elif request.kind == ProbeKind.MEMCACHED:
        from inspector.probes.memcached.run import McRunConfig
        config = McRunConfig.from_request(request)
    else:
        from inspector.probes.dns.run import DnsRunConfig
        config = DnsRunConfig.from_request(request)
    config.validate()
    return config


def make_probe(config: IoRunConfig | McRunConfig | DnsRunConfig) -> Probe:
    if config.kind == ProbeKind.IO:
        from inspector.probes.io.run import IoRun, IoRunConfig
        assert isinstance(config, IoRunConfig)
        return IoRun(config)
    if config.kind == ProbeKind.MEMCACHED:
        from inspector.probes.memcached.run import McRun, McRunConfig
        assert isinstance(config, McRunConfig)
        return McRun(config)
    from inspector.probes.dns.run import DnsRun, DnsRunConfig
    assert isinstance(config, DnsRunConfig)
    return DnsRun(config)


def open_probe(request: ProbeRequest) -> Probe:
    return make_probe(config_for(request))
