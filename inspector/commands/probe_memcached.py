"""`inspector probe memcached HOST[:PORT]`: memslap-class load with percentiles, server counters
and an optional connection ramp. Flags are named like memslap's where they mean the same."""
from __future__ import annotations

import argparse
import ipaddress
import signal
import socket
import sys

from inspector.commands.common import (
    EXIT_FOUND,
    EXIT_OK,
    MAX_COUNT,
    SIGNAL_EXIT,
    Bounded,
    CliError,
    Duration,
    add_root_argument,
    add_schema_argument,
    exit_epilog,
    positive_int,
    print_json,
)
from inspector.commands.probe_kinds import KIND_SUMMARIES
from inspector.documents.kinds import stamped
from inspector.model import to_jsonable
from inspector.probes.base import MAX_CONNECTIONS, Interval, McInterval, McTest, ProbeError
from inspector.probes.driver import STOP_SIGNALS, ProbeDriver, raise_on_signals
from inspector.probes.memcached.probe import MAX_KEY_COUNT, ProbeSummary, error_label, error_text
from inspector.probes.memcached.ramp import RampSummary, ramp_steps
from inspector.probes.memcached.run import DEADLINE_S, DEADLINE_SLACK_S, McRun, McRunConfig
from inspector.probes.memcached.target import DEFAULT_PORT
from inspector.probes.memcached.workload import MAX_KEY_BYTES, MAX_VALUE_BYTES, SizeRange

CONNECTIONS = Bounded(1, MAX_CONNECTIONS, integer=True)   # RLIMIT_NOFILE is checked later
REQUESTS = Bounded(1, MAX_COUNT, integer=True)
RUN_TIME = Duration(maximum=86400)
WAIT = Duration(maximum=3600)
RATE = Bounded(0, 1e9, above=True)
RATIO = Bounded(0, 1)
WORKERS = Bounded(1, 1024, integer=True)


def register(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser(
        "memcached", help=KIND_SUMMARIES["memcached"],
        description="Closed-loop load on N connections (one request in flight each), latency "
                    "percentiles per operation, errors by kind, the server's counters before "
                    "and after; --ramp steps the connection count up to find where it degrades.",
        epilog=exit_epilog(ok="completed without an error", signals=True,
                           found="errors, the server's counters disagree with what was sent, or "
                                 "the run could not complete (connection refused, timed out)")
        + " A name that does not resolve is a usage mistake (2).")
    add_root_argument(p)
    p.add_argument("server", metavar="HOST[:PORT]", help=f"memcached server (port {DEFAULT_PORT})")
    p.add_argument("-c", "--concurrency", type=CONNECTIONS, default=32,
                   help=f"connections (default 32, {CONNECTIONS.bounds})")
    bound = p.add_mutually_exclusive_group()
    bound.add_argument("-e", "--execute-number", type=REQUESTS,
                       help=f"requests per connection (default 10000, like memslap; "
                            f"{REQUESTS.bounds})")
    bound.add_argument("--duration", type=RUN_TIME, metavar="DURATION",
                       help=f"run for this long instead ({RUN_TIME.bounds})")
    p.add_argument("-t", "--test", choices=list(McTest), default="set",
                   help="set, get or mix (default set)")
    p.add_argument("--read-only", action="store_true",
                   help="get test without the preload: gets of keys the server does not hold, "
                        "nothing stored (what `--probe memcached:...` and the TUI run)")
    p.add_argument("--ratio", type=RATIO, default=0.1, metavar="R",
                   help="mix: fraction of sets (default 0.1, i.e. set:get 1:9)")
    p.add_argument("-F", "--flush", action="store_true", help="flush_all before the test")
    p.add_argument("-y", "--yes", action="store_true",
                   help="do not ask before flushing a server that is not on loopback")
    p.add_argument("--key-size", default="20-60", metavar="N|MIN-MAX",
                   help=f"key length in bytes (default 20-60 like memcslap; max {MAX_KEY_BYTES})")
    p.add_argument("--value-size", default="50-5000", metavar="N|MIN-MAX",
                   help="value length in bytes (default 50-5000 like memcslap)")
    p.add_argument("--key-count", type=positive_int,
                   help="distinct keys (default: the execute number, at most 100000; "
                        f"max {MAX_KEY_COUNT})")
    p.add_argument("--rate", type=RATE, metavar="OPS",
                   help="limit each connection to OPS requests/s (default: as fast as replies "
                        f"come; {RATE.bounds})")
    p.add_argument("--workers", type=WORKERS, default=1, metavar="N",
                   help="load processes sharing the connections (default 1; more when the "
                        f"client host has idle cores; {WORKERS.bounds})")
    p.add_argument("--connect-timeout", type=WAIT, default=3.0, metavar="DURATION",
                   help=f"default 3s, {WAIT.bounds}")
    p.add_argument("--timeout", type=WAIT, default=2.0, metavar="DURATION",
                   help=f"per-request timeout (default 2s, {WAIT.bounds})")
    p.add_argument("--deadline", type=RUN_TIME, metavar="DURATION",
                   help=f"hard bound on the whole run (default: --duration plus "
                        f"{DEADLINE_SLACK_S:g}s, else {DEADLINE_S / 60:g}m; {RUN_TIME.bounds})")
    p.add_argument("--ramp", action="store_true",
                   help="step connections 32, 64, 128 ... up to --max-connections")
    p.add_argument("--max-connections", type=CONNECTIONS, default=4096, metavar="N",
                   help=f"ramp: default 4096, {CONNECTIONS.bounds}")
    p.add_argument("--start-connections", type=CONNECTIONS, default=32, metavar="N",
                   help=f"ramp: default 32, {CONNECTIONS.bounds}")
    p.add_argument("--step-seconds", type=WAIT, default=2.0, metavar="DURATION",
                   help=f"ramp: load time per step (default 2s, {WAIT.bounds})")
    p.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    add_schema_argument(p, "probe memcached", "--json (and --ramp --json)")
    p.set_defaults(func=run)


def is_loopback(host: str) -> bool:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise CliError(f"cannot resolve {host}: {exc.strerror}") from None
    except UnicodeError as exc:     # a name IDNA cannot encode (a label over 63 characters)
        raise CliError(f"cannot resolve {host}: {exc}") from None
    return all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def confirm_flush(host: str, port: int, yes: bool) -> None:
    if yes or is_loopback(host):
        return
    if not sys.stdin.isatty():
        raise CliError(f"--flush would erase every item on {host}:{port} (not on loopback): "
                       "add --yes to confirm")
    answer = input(f"Flush ALL data on {host}:{port}? Type 'yes' to continue: ")
    if answer.strip().lower() != "yes":
        raise CliError("flush not confirmed; nothing was done")


def _sizes(args) -> tuple[SizeRange, SizeRange]:
    for option, given in (("--key-size", args.key_size), ("--value-size", args.value_size)):
        if isinstance(given, str) and (not given.isascii() or "_" in given):
            raise CliError(f"{option} {given!r}: not a size or a range in ASCII digits "
                           "(examples: 20, 20-60)")
    try:
        return (SizeRange.parse(args.key_size, "--key-size", 1, MAX_KEY_BYTES),
                SizeRange.parse(args.value_size, "--value-size", 0, MAX_VALUE_BYTES))
    except ValueError as exc:
        raise CliError(str(exc)) from None


def config_from_args(args: argparse.Namespace) -> McRunConfig:
    from inspector.probes.request import memcached_address
    try:
        host, port = memcached_address(args.server)
    except ProbeError as exc:
        raise CliError(str(exc)) from None
    key_size, value_size = _sizes(args)
    return McRunConfig(
        host=host, port=port, concurrency=args.concurrency, execute_number=args.execute_number,
        duration=args.duration, test=McTest(args.test), read_only=args.read_only,
        set_ratio=args.ratio, key_count=args.key_count, key_size=key_size,
        value_size=value_size, flush=args.flush, rate=args.rate, workers=args.workers,
        connect_timeout=args.connect_timeout, timeout=args.timeout, deadline=args.deadline,
        ramp=args.ramp, start_connections=args.start_connections,
        max_connections=args.max_connections, step_seconds=args.step_seconds)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "root", None):     # like probe io: a capture cannot be load-tested
        raise CliError("probe memcached loads a live server from this host; it cannot run on "
                       "--root")
    config = config_from_args(args)
    if args.flush:
        confirm_flush(config.host, config.port, args.yes)
    try:
        probe = McRun(config)
        with raise_on_signals(STOP_SIGNALS):
            probe.prepare()     # the file-descriptor limit: nothing has started yet
    except ProbeError as exc:
        raise CliError(str(exc)) from None
    if config.ramp:
        steps = ramp_steps(config.start_connections, config.max_connections)
        header = [f"ramp on {config.target}: {' '.join(map(str, steps))} connections, "
                  f"{config.step_seconds:g} s each, test {config.test}"]

        def on_step(step: Interval) -> None:
            if args.json:
                return
            if header:      # printed with the first step: a target that fails is one line
                print(header.pop(), flush=True)
            print_step(step)
        driver = ProbeDriver(probe, on_step, signals=STOP_SIGNALS).run()
        assert probe.result is not None and isinstance(probe.result.detail, RampSummary)
        ramp = probe.result.detail
        _raise_unresolvable(ramp)
        return report_ramp(ramp, args.json, driver.signum)
    live = sys.stderr.isatty() and not args.json
    samples: list[McInterval] = []

    def on_interval(interval: Interval) -> None:
        sample = interval.memcached
        assert sample is not None     # a load run's intervals carry their memcached part
        samples.append(sample)
        if live:
            p99 = max((v.get("p99", 0) for v in sample.latency_ns.values()), default=0)
            sys.stderr.write(f"\r{sample.t_s:7.2f} s  {sample.ops_per_s:10.0f} ops/s  "
                             f"p99 {p99 / 1e6:8.3f} ms  conns {sample.connections}   ")
            sys.stderr.flush()

    driver = ProbeDriver(probe, on_interval, signals=STOP_SIGNALS).run()
    if live and samples:
        sys.stderr.write("\n")
    assert probe.result is not None and isinstance(probe.result.detail, ProbeSummary)
    summary = probe.result.detail
    _raise_unresolvable(summary)
    return report_load(summary, samples, args.json, driver.signum)


def _raise_unresolvable(summary) -> None:
    """A name that does not resolve is a bad argument: one line, exit 2."""
    if summary is not None and summary.target_error == "resolve":
        raise CliError(summary.reason)


# --- text output -----------------------------------------------------------------------------
def _ms(ns) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def status_code(status: str, clean: bool, signum: int | None = None) -> int:
    if status == "stopped":
        return SIGNAL_EXIT + (signum or signal.SIGINT)
    return EXIT_OK if status == "completed" and clean else EXIT_FOUND


def report_load(s: ProbeSummary, samples: list, as_json: bool, signum: int | None = None) -> int:
    clean = not s.errors and not (s.server and s.server.mismatches)
    if as_json:
        print_json(stamped("inspector-probe-memcached",
                           {**to_jsonable(s), "samples": to_jsonable(samples)}), indent=1)
    elif not s.target_error:          # nothing was measured: the one line below says why
        print_load(s)
    if s.target_error:                # the reason already names the target
        print(f"inspector: probe memcached: {s.reason}", file=sys.stderr)
    elif s.status != "completed":
        print(f"inspector: probe memcached {s.target}: {s.status}: {s.reason}", file=sys.stderr)
    return status_code(s.status, clean, signum)


def print_load(s: ProbeSummary) -> None:
    bound = f"{s.execute_number} per connection" if s.execute_number else f"{s.duration_s:g} s"
    procs = f" in {s.workers} processes" if s.workers > 1 else ""
    where = s.target + (f" ({s.address})" if s.address and s.address != s.target else "")
    print(f"memcached {where}: test {s.test}, {s.concurrency} connections{procs}, {bound}, "
          f"{s.key_count} keys of {s.key_size} B, values {s.value_size} B"
          + (", flushed first" if s.flushed else ""))
    if s.preload:
        print(f"  preload: {s.preload.stored}/{s.preload.keys} keys stored in {s.preload.seconds:.2f} s"
              + (f" ({s.preload.error})" if s.preload.error else ""))
    print(f"  status: {s.status}" + (f" ({s.reason})" if s.reason and s.reason != s.status else ""))
    print(f"  connections opened: {s.connections_opened} in {s.open_s:.3f} s; "
          f"load {s.load_s:.3f} s; {s.ops_total} ops, {s.ops_per_s:.0f} ops/s")
    if s.ops:
        print(f"  {'op':4} {'sent':>9} {'ok':>9} {'err':>6} {'ops/s':>9} "
              f"{'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9} {'max ms':>8}")
        for name, o in s.ops.items():
            lat = o.latency
            print(f"  {name:4} {o.sent:>9} {o.ok:>9} {o.failed:>6} {o.ops_per_s:>9.0f} "
                  f"{_ms(lat.p('p50')):>8} {_ms(lat.p('p90')):>8} {_ms(lat.p('p99')):>8} "
                  f"{_ms(lat.p('p99.9')):>9} {_ms(lat.max_ns):>8}")
    if "get" in s.ops:
        print(f"  get hits {s.get_hits}, misses {s.get_misses}")
    if s.errors:
        print("  errors:")
        for kind, n in sorted(s.errors.items(), key=lambda kv: -kv[1]):
            print(f"    {n:>8}  {error_text(kind, s.error_details.get(kind, ''))}")
    else:
        print("  errors: none")
    print_server(s)
    print(summary_line(s))


def summary_line(s: ProbeSummary) -> str:
    """One line: what was measured, against which server, and the headline figures."""
    what = {"mix": "mixed set/get"}.get(s.test, s.test)
    p99 = max((o.latency.p("p99") or 0 for o in s.ops.values()), default=0) or None
    errors = s.error_total
    conns = f"{s.connections_opened} connection{'s' if s.connections_opened != 1 else ''}"
    if s.connections_failed:       # turned away by the server or died: not all carried load
        conns += f" ({s.connections_failed} failed)"
    return (f"summary: memcached {s.target}, {what} load on {conns}: "
            f"{s.ops_total} requests answered in {s.load_s:.2f} s, {s.ops_per_s:.0f} ops/s, "
            f"p99 {_ms(p99)} ms, {errors} error{'s' if errors != 1 else ''} ({s.status})")


def print_server(s: ProbeSummary) -> None:
    srv = s.server
    if srv is None:
        return
    if not srv.deltas:
        print(f"  server counters: unknown ({srv.error or 'stats reported none of them'})")
    else:
        if srv.error:
            print(f"  server counters: {srv.error}")
        print("  server counter deltas: " + ", ".join(f"{k} {v:+d}" for k, v in srv.deltas.items()))
        print("  server gauges before -> after: " + ", ".join(
            f"{k} {a if a is not None else '?'} -> {b if b is not None else '?'}"
            for k, (a, b) in srv.gauges.items()))
    for c in srv.checks:
        if c.ok is None:
            verdict = "UNKNOWN"
        else:
            verdict = "ok" if c.ok else "MISMATCH"
        print(f"  check {c.counter}: server {c.server_delta if c.server_delta is not None else '?'}"
              f", probe sent {c.probe_sent}: {verdict}" + (f" ({c.note})" if c.note else ""))


def print_step(interval: Interval) -> None:
    st = interval.memcached_ramp
    assert st is not None         # a ramp's intervals carry their ramp part
    errs = ", ".join(f"{error_label(k)} {v}" for k, v in sorted(st.errors.items())) or "none"
    rej = "?" if st.server_rejected is None else st.server_rejected
    print(f"  {st.connections:>6} conns: opened {st.opened} in {st.open_s:.3f} s, "
          f"{interval.ops_per_s:>9.0f} ops/s, p50 {_ms(interval.p50_ns)} ms, "
          f"p99 {_ms(interval.p99_ns)} ms, errors: {errs}; server rejected {rej}", flush=True)


def report_ramp(s: RampSummary, as_json: bool, signum: int | None = None) -> int:
    clean = not any(st.errors for st in s.steps)
    if as_json:
        print_json(stamped("inspector-probe-memcached-ramp", to_jsonable(s)), indent=1)
    elif not s.target_error:
        if not s.steps:
            print(f"ramp on {s.target}: no step ran")
        print(f"ramp {s.status}" + (f": {s.reason}" if s.reason != s.status else ""))
        if s.max_connections_server is not None:
            print(f"  server max_connections: {s.max_connections_server}")
        for line in ramp_verdict(s):
            print(line)
    if s.target_error:
        print(f"inspector: probe memcached ramp: {s.reason}", file=sys.stderr)
    elif s.status != "completed":
        print(f"inspector: probe memcached ramp {s.target}: {s.status}: {s.reason}",
              file=sys.stderr)
    return status_code(s.status, clean, signum)


def ramp_verdict(s: RampSummary) -> list[str]:
    """One verdict: the step where it degrades (with the server's limit when that is why), or
    no knee over the steps that ran, or nothing when no step ran."""
    if s.knee_connections:
        lines = [f"  degrades at {s.knee_connections} connections: {s.knee_reason}"]
        if any(st.errors.get("too_many_connections") for st in s.steps):
            limit = s.max_connections_server if s.max_connections_server is not None else "?"
            lines.append(f"  the server turned connections away at its limit (max_connections "
                         f"{limit}; memcached -c raises it)")
        return lines
    if s.steps:
        return [f"  no knee: p99 never grew over 2x between steps and no errors "
                f"up to {s.steps[-1].connections} connections"]
    return []
