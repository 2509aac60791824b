"""`inspector probe dns [NAME]`: each nameserver checked as glibc uses it, the failover delay
predicted (and measured with --measure-getaddrinfo).

Exit status: 0 all servers answered, 1 a server is down or misbehaving (findings), 2 usage
mistake or error, 130 interrupted by Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (partial results
printed)."""
from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING

from inspector.commands.common import (
    EXIT_FOUND,
    EXIT_OK,
    SIGNAL_EXIT,
    Bounded,
    CliError,
    Duration,
    add_root_argument,
    add_schema_argument,
    eprint,
    exit_epilog,
    print_json,
    root_from_args,
)
from inspector.commands.probe_kinds import KIND_SUMMARIES
from inspector.documents.kinds import stamped
from inspector.model import Level, to_jsonable

if TYPE_CHECKING:   # the probe modules load dnspython: only when this command runs
    from inspector.model import Finding
    from inspector.probes.base import Interval
    from inspector.probes.dns.failover import DnsProbeResult
    from inspector.probes.dns.run import DnsRunConfig


ROUNDS = Bounded(1, 10000, integer=True)
ROUND_INTERVAL = Duration(maximum=3600, zero=True)
SERVER_TIMEOUT = Duration(maximum=300)       # glibc caps resolv.conf's timeout at 30 s
RUN_TIME = Duration(maximum=86400)


def register(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser(
        "dns", help=KIND_SUMMARIES["dns"],
        epilog=exit_epilog(ok="every server answered (what-ifs about the configuration "
                              "alone do not count)", found="a server is down or misbehaving",
                           signals=True))
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
    p.add_argument("--deadline", type=RUN_TIME, metavar="DURATION",
                   help=f"stop the run after this long, partial rounds kept (default: none; "
                        f"{RUN_TIME.bounds})")
    p.add_argument("--measure-getaddrinfo", action="store_true",
                   help="also time the real getaddrinfo (uses /etc/resolv.conf)")
    p.add_argument("--json", action="store_true")
    add_schema_argument(p, "probe dns")
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> DnsRunConfig:
    from inspector.probes.dns.run import DnsRunConfig
    return DnsRunConfig(name=args.name, servers=list(args.server), resolv_conf=args.resolv_conf,
                        rounds=args.count, interval=args.interval, timeout=args.timeout,
                        tcp_timeout=args.tcp_timeout, deadline=args.deadline,
                        measure_getaddrinfo=args.measure_getaddrinfo)


def run(args: argparse.Namespace) -> int:
    from inspector.health.dns import CONFIG_CODES, probe_rules
    from inspector.probes.base import ProbeError
    from inspector.probes.dns.run import DnsRun
    from inspector.probes.driver import STOP_SIGNALS, ProbeDriver, raise_on_signals
    try:
        probe = DnsRun(config_from_args(args), root_from_args(args))
        # a stop while the resolver configuration is read (in a child) ends that child too
        with raise_on_signals(STOP_SIGNALS):
            probe.prepare()
    except ProbeError as exc:
        raise CliError(str(exc)) from None

    def on_round(interval: Interval) -> None:
        if not args.json and probe.config.rounds > 1 and interval.dns is not None:
            for s in interval.dns.servers:
                lat = "-" if s.latency_ms is None else f"{s.latency_ms:.1f} ms"
                print(f"round {interval.dns.round + 1} {s.server:<22} {s.kind:<13} {lat}",
                      flush=True)
    driver = ProbeDriver(probe, on_round, signals=STOP_SIGNALS).run()
    run_result = probe.result
    if run_result is None:
        eprint("inspector: interrupted before any server answered")
        return SIGNAL_EXIT + (driver.signum or signal.SIGINT)
    result, findings = run_result.detail, probe_rules(run_result.detail)
    if args.json:
        print_json(stamped("inspector-probe-dns", {
            **to_jsonable(result), "findings": to_jsonable(findings), "notes": probe.notes}))
    else:
        assert probe.settings is not None     # set by prepare()
        print_human(result, findings, probe.notes, probe.settings.rdtypes)
    if driver.signum:
        return SIGNAL_EXIT + driver.signum
    # what-ifs about the configuration are findings, but no server misbehaves: status 0
    return EXIT_FOUND if any(f.level >= Level.WARN for f in findings
                             if f.code not in CONFIG_CODES) else EXIT_OK


def print_human(result: DnsProbeResult, findings: list[Finding], notes: list[str],
                rdtypes: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from inspector.render.findings import render_findings
    console = Console()
    console.print(Text.assemble(("DNS probe ", "bold"), f"{result.name} "
                                f"({'+'.join(rdtypes)}), options: {' '.join(result.options)}"))
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
    console.print(render_findings(findings))
