"""`inspector probe dns [NAME]`: each nameserver checked as glibc uses it, the failover delay
predicted (and measured with --measure-getaddrinfo).

Exit status: 0 all servers answered, 1 a server is down or misbehaving (findings), 2 usage or
input error, 130 interrupted by Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (partial results
printed)."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys

from typing import TYPE_CHECKING

from inspector.commands.common import (Bounded, CliError, Duration, add_root_argument, eprint,
                                       root_from_args)
from inspector.model import Level, Unknown, to_jsonable

if TYPE_CHECKING:   # the probe modules load dnspython: only when this command runs
    from inspector.probes.dns_failover import DnsProbeResult, DnsProbeSettings


ROUNDS = Bounded(1, 10000, integer=True)
ROUND_INTERVAL = Duration(maximum=3600, zero=True)
SERVER_TIMEOUT = Duration(maximum=300)       # glibc caps resolv.conf's timeout at 30 s


def register(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("dns", help="check each nameserver as glibc uses it; predict failover delay")
    add_root_argument(p)
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="name to look up (default: the host's domain, else '.' NS)")
    p.add_argument("--resolv-conf", metavar="FILE", help="read this file instead of /etc/resolv.conf")
    p.add_argument("--server", action="append", default=[], metavar="ADDR[:PORT]",
                   help="probe these servers instead of resolv.conf's (repeatable)")
    p.add_argument("--count", type=ROUNDS, default=1, metavar="N",
                   help=f"rounds (default 1, {ROUNDS.bounds})")
    p.add_argument("--interval", type=ROUND_INTERVAL, default=1.0, metavar="DURATION",
                   help=f"time between rounds (default 1s, {ROUND_INTERVAL.bounds})")
    p.add_argument("--timeout", type=SERVER_TIMEOUT, metavar="DURATION",
                   help=f"per-server wait (default: glibc's wait for that server; "
                        f"{SERVER_TIMEOUT.bounds})")
    p.add_argument("--tcp-timeout", type=SERVER_TIMEOUT, default=3.0, metavar="DURATION",
                   help=f"bound on the TCP retry after truncation (glibc has none; default 3s, "
                        f"{SERVER_TIMEOUT.bounds})")
    p.add_argument("--measure-getaddrinfo", action="store_true",
                   help="also time the real getaddrinfo (uses /etc/resolv.conf)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace) -> tuple["DnsProbeSettings", list[str]]:
    from inspector.discover.resolver_conf import parse_resolv_conf
    from inspector.probes.dns_failover import DnsProbeSettings
    from inspector.probes.dns_query import parse_server
    notes: list[str] = []
    root = root_from_args(args)
    env = {k: v for k in ("RES_OPTIONS", "LOCALDOMAIN") if (v := root.environ(k)) is not None}
    hostname = root.try_line("proc/sys/kernel/hostname")
    hostname = hostname if isinstance(hostname, str) else None
    resolver_kind = "glibc"
    if args.resolv_conf:
        try:
            with open(args.resolv_conf, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            raise CliError(f"--resolv-conf {args.resolv_conf}: {exc.strerror or exc}") from None
    else:
        from inspector.discover.resolver import collect
        section = collect(root)
        if isinstance(section.config, Unknown):
            if not args.server:
                raise CliError(f"cannot read the resolver configuration: {section.config.reason}")
            text = ""
        else:
            text = root.read_text(root.resolve("etc/resolv.conf"))
        if section.stub:
            resolver_kind = "systemd-resolved"
            notes.append("resolv.conf points at the systemd-resolved stub; its upstreams: "
                         + (", ".join(section.upstreams) if isinstance(section.upstreams, list)
                            else "unknown"))
    if _uses_musl(root):
        resolver_kind = "musl"
    cfg = parse_resolv_conf(text, env, hostname)
    if args.server:
        try:
            servers = [parse_server(s) for s in args.server]
        except ValueError as exc:
            raise CliError(f"--server: {exc}") from None
    else:
        servers = [parse_server(s) for s in cfg.used_nameservers]
        if cfg.ignored_nameservers:
            notes.append(f"glibc ignores nameservers past the third: {', '.join(cfg.ignored_nameservers)}")
    name = args.name or (cfg.search[0] if cfg.search else ".")
    rdtypes = ["A", "AAAA"] if name != "." else ["NS"]
    if cfg.no_aaaa:
        rdtypes = [t for t in rdtypes if t != "AAAA"]
    if args.measure_getaddrinfo and (args.server or args.resolv_conf or not root.live):
        notes.append("getaddrinfo reads /etc/resolv.conf of this host, not --server/--resolv-conf/--root")
    return DnsProbeSettings(servers=servers, resolver=cfg, name=name, rdtypes=rdtypes,
                            timeout=args.timeout, tcp_timeout=args.tcp_timeout, count=args.count,
                            interval=args.interval, measure_getaddrinfo=args.measure_getaddrinfo,
                            resolver_kind=resolver_kind), notes


def _uses_musl(root) -> bool:
    return any(n.startswith("ld-musl-") for n in root.try_listdir("lib"))


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run(args: argparse.Namespace) -> int:
    from inspector.probes.dns_failover import DnsFailoverProbe
    settings, notes = settings_from_args(args)
    try:
        probe = DnsFailoverProbe(settings)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    stopped: list[int] = []

    async def drive() -> None:
        # Ctrl-C stops the probe's waits at once (partial round kept), instead of cancelling
        # the task and then waiting in asyncio's executor shutdown for the slowest server
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            stopped.append(signum)
            probe.stop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            async for sample in probe.samples():
                if not args.json and settings.count > 1:
                    lat = "-" if sample.latency_ms is None else f"{sample.latency_ms:.1f} ms"
                    print(f"round {sample.round + 1} {sample.server:<22} {sample.kind:<13} {lat}",
                          flush=True)
        finally:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)

    try:
        asyncio.run(drive())
    except KeyboardInterrupt:
        stopped.append(signal.SIGINT)
        probe.stop()
    interrupted = bool(stopped)
    if probe._rounds == 0:
        eprint("inspector: interrupted before any server answered")
        return 128 + (stopped[0] if stopped else signal.SIGINT)
    result = probe.result()
    if args.json:
        doc = to_jsonable(result)
        doc["notes"] = notes
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_human(result, notes, settings)
    if interrupted:
        return 128 + stopped[0]
    # what-ifs about the configuration are findings, but no server misbehaves: status 0
    config_only = {"dns.failover_delay", "dns.single_server"}
    return 1 if any(f.level >= Level.WARN for f in result.findings if f.code not in config_only) else 0


def print_human(result: "DnsProbeResult", notes: list[str], settings: "DnsProbeSettings") -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    from inspector.render.findings import render_findings
    console = Console()
    console.print(Text.assemble(("DNS probe ", "bold"), f"{result.name} "
                                f"({'+'.join(settings.rdtypes)}), options: {' '.join(result.options)}"))
    title = "servers (as glibc queries them)" + (", last round" if result.rounds > 1 else "")
    table = Table(show_edge=False, title=title, title_justify="left")
    for col in ("#", "server", "state", "latency", "detail"):
        table.add_column(col, no_wrap=col != "detail")
    style = {"answered": "green", "timeout": "bold red", "refused": "red", "a-only": "yellow",
             "truncated": "yellow"}
    for i, r in enumerate(result.servers):
        lat = "-" if r.latency_s is None else f"{r.latency_s * 1000:.1f} ms"
        idx = str(i + 1) if i < 3 else "ignored"
        table.add_row(idx, r.server, Text(r.kind, style=style.get(r.kind, "yellow")), lat, r.detail)
    console.print(table)
    if result.rounds > 1:        # the table is the last round: say how every round went
        from collections import Counter
        rounds = Table(show_edge=False, title=f"every round ({result.rounds})",
                       title_justify="left")
        for col in ("server", "rounds"):
            rounds.add_column(col, no_wrap=col == "server")
        for server, kinds in result.history.items():
            tally = Counter(kinds)
            rounds.add_row(server, ", ".join(f"{k} {n}/{len(kinds)}"
                                             for k, n in tally.most_common()))
        console.print(rounds)
    pred = Table(show_edge=False, title="predicted lookup time (glibc)", title_justify="left")
    for col in ("case", "lookup"):
        pred.add_column(col)
    pred.add_row("now", result.prediction.text())
    if result.getaddrinfo is not None:
        m = result.getaddrinfo
        pred.add_row("measured getaddrinfo", f"{m.seconds:.3f} s: {m.result}" if m.seconds is not None
                     else m.result)
    for w in result.what_ifs:
        pred.add_row(f"if {w.server} refuses", w.refused.text())
        pred.add_row(f"if {w.server} is blackholed", w.blackholed.text())
    console.print(pred)
    for note in notes + ([result.other_resolver_note] if result.other_resolver_note else []):
        console.print(Text(f"note: {note}", style="cyan"))
    console.print(render_findings(result.findings))
