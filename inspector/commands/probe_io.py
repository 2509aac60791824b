"""`inspector probe io TARGET`: ioping-class IO latency probe with percentiles, workers, ramp.

TARGET is a directory or mountpoint (a private temporary file of the working-set size is
probed and leaves nothing behind), a regular file or a block device (read-only: writes are
refused). Human output follows ioping: one line per request with -i, one per interval sample
otherwise, then ioping's statistics block plus a percentile line.

Exit status (as every inspector command): 0 done; 1 a request failed mid-run (partial
results printed); 2 usage mistake or error: a bad value, a target that could not be prepared
(missing, permission denied, refused write) or a request size that does not fit it (zero or
negative, larger than the target, not a multiple of the device's logical block size with
O_DIRECT); 130 interrupted by Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (partial results printed:
`timeout 5 inspector probe io ...` still gets its figures). ioping's statuses differ (1 for
usage mistakes, 3 for a failed request).

With several workers (-j) the summary is the merge of the workers' figures: requests and busy
time summed, histograms added (percentiles of the merge), IOPS summed; "completed in" is the
busy time per worker. A line per worker follows the summary.
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from inspector.commands.bounded_stdout import stdout_never_blocks
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
    print_json,
)
from inspector.commands.probe_kinds import KIND_SUMMARIES
from inspector.documents.kinds import stamped
from inspector.probes.base import MAX_IO_JOBS

if TYPE_CHECKING:     # the probe machinery (asyncio, hdrh, threads) loads only when run
    from inspector.probes.base import Interval
    from inspector.probes.io.latency import IoResult, RampResult
    from inspector.probes.io.run import IoRunConfig

REQUESTS = Bounded(1, MAX_COUNT, integer=True)
DEADLINE = Duration(maximum=86400)
PAUSE = Duration(maximum=3600, zero=True)
JOBS = Bounded(1, MAX_IO_JOBS, integer=True)    # one thread each


def register(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser(
        "io", help=KIND_SUMMARIES["io"],
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_root_argument(p)
    p.add_argument("target", metavar="TARGET", help="directory, mountpoint, file or block device")
    p.add_argument("-c", "--count", type=REQUESTS,
                   help=f"stop after COUNT requests (warm-up included; {REQUESTS.bounds})")
    p.add_argument("-w", "--deadline", type=DEADLINE, metavar="DURATION",
                   help=f"stop after this time (3s default without -c; with --ramp: time per "
                        f"step, default 2s; {DEADLINE.bounds})")
    p.add_argument("-s", "--size", default="4k", help="request size (default 4k)")
    p.add_argument("-S", "--working-set", help="working set (default 64m for a directory, the "
                                               "whole file or device otherwise)")
    p.add_argument("-i", "--interval", type=PAUSE, default=0.0, metavar="DURATION",
                   help="pause between a worker's requests (default 0: as fast as possible; "
                        f"{PAUSE.bounds}); with an interval every request is printed")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true",
                      help="write requests (directory targets only: a private temporary file)")
    mode.add_argument("--mixed", action="store_true", help="half reads, half writes (directory)")
    p.add_argument("--cached", action="store_true",
                   help="buffered IO through the page cache (default: O_DIRECT)")
    p.add_argument("-L", "--sequential", action="store_true", help="sequential offsets")
    p.add_argument("-j", "--jobs", type=JOBS, default=1,
                   help=f"concurrent workers (default 1; {JOBS.bounds})")
    p.add_argument("--ramp", action="store_true",
                   help="run 1, 2, 4 ... JOBS workers for -w each; report IOPS, p99, the knee")
    p.add_argument("-q", "--quiet", action="store_true", help="only the final statistics")
    p.add_argument("--json", action="store_true", help="summary, histogram and samples as JSON")
    add_schema_argument(p, "probe io", "--json (and --ramp --json)")
    p.set_defaults(func=run)


def _signed_size(text: str) -> int:
    """parse_size, but "-4k" reads as -4096 so that it is refused as negative, not garbled."""
    from inspector.probes.io.format import parse_size
    stripped = text.strip()
    if not stripped.isascii() or "_" in stripped:     # '４k', '1_000': float() takes them
        raise ValueError(f"invalid size {text!r} (examples: 4k, 64m, 1g)")
    if stripped.startswith("-"):
        return -parse_size(stripped[1:])
    return parse_size(stripped)


def config_from_args(args: argparse.Namespace) -> IoRunConfig:
    from inspector.probes.base import IoMode
    from inspector.probes.io.run import IoRunConfig
    try:
        size = _signed_size(args.size)
        working_set = _signed_size(args.working_set) if args.working_set else None
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if size <= 0:
        raise CliError(f"request size {args.size} ({size} bytes) must be positive")
    if working_set is not None and working_set <= 0:
        raise CliError(f"working set {args.working_set} must be positive")
    if args.ramp and args.count is not None:     # each step runs for -w: -c was ignored
        raise CliError("--ramp runs every step for -w (default 2s): -c does not apply")
    mode = IoMode.WRITE if args.write else IoMode.MIXED if args.mixed else IoMode.READ
    return IoRunConfig(target=args.target, mode=mode, request_size=size,
                       working_set=working_set, direct=not args.cached, count=args.count,
                       deadline=args.deadline, interval=args.interval, jobs=args.jobs,
                       sequential=args.sequential, ramp=args.ramp)


def run(args: argparse.Namespace) -> int:
    from inspector.probes.base import ProbeError
    from inspector.probes.driver import STOP_SIGNALS, ProbeDriver, raise_on_signals
    from inspector.probes.io.run import IoRun
    if getattr(args, "root", None):
        raise CliError("probe io measures this host; it cannot run on --root")
    config = config_from_args(args)
    try:
        probe = IoRun(config)
        # a stop while the test file is written ends its writer, then the command (128 + N)
        with raise_on_signals(STOP_SIGNALS):
            probe.prepare()
    except ProbeError as exc:
        raise CliError(str(exc)) from None
    assert probe.target is not None
    out = _Printer(args, probe.target.path, probe.target.describe(), config)
    if not args.json:
        for note in probe.notes:
            print(f"note: {note}", file=sys.stderr)
    # a reader that stops reading our output must not hold the run past its bound
    with stdout_never_blocks():
        driver = ProbeDriver(probe, out.interval, signals=STOP_SIGNALS).run()
        from inspector.probes.io.latency import RampResult
        result = probe.result
        assert result is not None
        if isinstance(result.detail, RampResult):
            return out.ramp_done(result.detail, driver.signum)
        return out.done(result.detail, driver.signum, probe.notes)


class _Printer:
    def __init__(self, args: argparse.Namespace, path: str, description: str,
                 config: IoRunConfig):
        self.args, self.path, self.description, self.config = args, path, description, config
        self.request_no = 0

    def interval(self, s: Interval) -> None:
        from inspector.probes.base import IoMode
        from inspector.probes.io.format import fmt_int, fmt_size, fmt_time
        if self.args.json or self.args.quiet:
            return
        io, mode = s.io, self.config.mode
        assert io is not None     # an IO run's intervals carry their IO part
        arrow = ">>>" if mode == IoMode.WRITE else "<<<" if mode == IoMode.READ else "<->"
        head = f"{fmt_size(self.config.request_size)} {arrow} {self.path} ({self.description})"
        for ns in io.warmups_ns if self.config.interval > 0 else ():
            self.request_no += 1
            print(f"{head}: request={self.request_no} time={fmt_time(ns)} (warmup)", flush=True)
        for ns in io.latencies_ns:
            self.request_no += 1
            print(f"{head}: request={self.request_no} time={fmt_time(ns)}", flush=True)
        if self.config.interval > 0 or not s.ops:
            return
        jobs = f" jobs={io.jobs}" if self.args.ramp or io.jobs > 1 else ""
        print(f"{self.path}:{jobs} t={s.t:.2f} s {fmt_int(s.ops)} requests, "
              f"{fmt_int(round(s.ops_per_s))} iops, {fmt_size(io.bytes_per_s)}/s, "
              f"min/avg/max = {fmt_time(io.min_ns)} / {fmt_time(io.avg_ns)} / "
              f"{fmt_time(s.max_ns)}, p50 {fmt_time(s.p50_ns)}, p99 {fmt_time(s.p99_ns)}",
              flush=True)

    # -- single run ---------------------------------------------------------------------------
    def done(self, r: IoResult, signum: int | None, notes: list[str]) -> int:
        if self.args.json:
            print_json(stamped("inspector-probe-io", {
                "summary": r.summary_json(), "notes": notes,
                "histogram": [list(b) for b in r.histogram()],
                "samples": [s.to_json() for s in r.samples]}), indent=1)
        else:
            print()
            print("\n".join(statistics_lines(r)))
        return self._status(r.error, signum, r.interrupted)

    def _status(self, error: str | None, signum: int | None, cancelled: bool) -> int:
        import signal
        signum = signum or (signal.SIGINT if cancelled else None)
        if error:
            print(f"inspector: {error} (partial results kept)", file=sys.stderr)
            return EXIT_FOUND
        if signum == signal.SIGINT:
            print("inspector: interrupted (partial results kept)", file=sys.stderr)
        elif signum:
            print(f"inspector: stopped by {signal.Signals(signum).name} (partial "
                  "results kept)", file=sys.stderr)
        return SIGNAL_EXIT + signum if signum else EXIT_OK

    # -- ramp ---------------------------------------------------------------------------------
    def ramp_done(self, ramp: RampResult, signum: int | None) -> int:
        if self.args.json:
            print_json(stamped("inspector-probe-io-ramp", {
                "ramp": ramp.to_json(),
                "samples": [s.to_json() for step in ramp.steps for s in step.result.samples]}),
                indent=1)
        else:
            print()
            print("\n".join(ramp_lines(self.path, self.description, ramp)))
        return self._status(ramp.error, signum, ramp.interrupted)


def statistics_lines(r: IoResult) -> list[str]:
    """ioping's statistics block, plus percentiles (and workers when more than one)."""
    from inspector.probes.io.format import fmt_int, fmt_size, fmt_time
    from inspector.probes.io.latency import READ, WRITE
    lat = r.latency
    verb = {WRITE: "written", READ: "read"}.get(r.mode, "read/written")
    lines = [f"--- {r.path} ({r.description}) ioping statistics ---"]
    if r.requests:
        lines.append(f"{fmt_int(r.requests)} requests completed in "
                     f"{fmt_time(round(r.busy_per_worker_ns))}, "
                     f"{fmt_size(r.requests * r.request_size)} {verb}, "
                     f"{fmt_int(round(r.iops_mean))} iops, {fmt_size(r.bytes_per_s)}/s")
    else:
        lines.append("0 requests completed")
    lines.append(f"generated {fmt_int(r.total_requests)} requests in {fmt_time(r.wall_ns)}, "
                 f"{fmt_size(r.total_requests * r.request_size)}, "
                 f"{fmt_int(round(r.iops_wall))} iops, {fmt_size(r.wall_bytes_per_s)}/s")
    if r.requests:
        lines.append(f"min/avg/max/mdev = {fmt_time(lat.min_ns)} / {fmt_time(lat.avg_ns)} / "
                     f"{fmt_time(lat.max_ns)} / {fmt_time(lat.mdev_ns)}")
        p = lat.percentiles_ns
        lines.append(f"p50/p90/p99/p99.9 = {fmt_time(p['p50'])} / {fmt_time(p['p90'])} / "
                     f"{fmt_time(p['p99'])} / {fmt_time(p['p99.9'])}")
    extra = []
    if r.jobs > 1:
        extra.append(f"{r.jobs} workers")
    if r.mode == "mixed":
        extra.append(f"{r.reads} reads, {r.writes} writes")
    extra.append("O_DIRECT" if r.direct else "buffered")
    lines.append(", ".join(extra))
    if len(r.workers) > 1:
        lines.extend(worker_line(w) for w in r.workers)
    return lines


def worker_line(w) -> str:
    """One worker's share: its requests, busy time, IOPS and latencies."""
    from inspector.probes.io.format import fmt_int, fmt_time
    if w.stuck:
        return f"worker {w.index + 1}: still blocked in a request (left out of the summary)"
    if not w.requests:
        return f"worker {w.index + 1}: 0 requests completed"
    lat = w.latency
    return (f"worker {w.index + 1}: {fmt_int(w.requests)} requests in {fmt_time(w.busy_ns)}, "
            f"{fmt_int(round(w.iops_mean))} iops, min/avg/max = {fmt_time(lat.min_ns)} / "
            f"{fmt_time(lat.avg_ns)} / {fmt_time(lat.max_ns)}, p50 {fmt_time(lat.p('p50'))}, "
            f"p99 {fmt_time(lat.p('p99'))}")


def _workers(n: int) -> str:
    return f"{n} worker" if n == 1 else f"{n} workers"


def ramp_lines(path: str, description: str, ramp: RampResult) -> list[str]:
    from inspector.probes.io.format import fmt_int, fmt_time
    lines = [f"--- {path} ({description}) ramp ---",
             f"{'workers':>7} {'iops':>10} {'avg':>10} {'p99':>10}"]
    for s in ramp.steps:
        lines.append(f"{s.jobs:>7} {fmt_int(round(s.iops)):>10} "
                     f"{fmt_time(s.avg_ns) if s.avg_ns else '-':>10} "
                     f"{fmt_time(s.p99_ns) if s.p99_ns else '-':>10}")
    if ramp.max_iops:
        lines.append(f"Maximum Small IOPS={round(ramp.max_iops.iops)} @ Small={ramp.max_iops.jobs}")
    if ramp.min_latency and ramp.min_latency.avg_ns is not None:
        lines.append(f"Minimum Small Latency={ramp.min_latency.avg_ns / 1000:.2f} usecs "
                     f"@ Small={ramp.min_latency.jobs}")
    if ramp.knee:
        lines.append(f"Knee: {_workers(ramp.knee.jobs)} (IOPS={round(ramp.knee.iops)}, "
                     f"p99={fmt_time(ramp.knee.p99_ns)}): beyond it p99 grows faster than IOPS"
                     if ramp.knee is not ramp.steps[-1] else
                     f"Knee: not reached up to {_workers(ramp.knee.jobs)} "
                     "(p99 never grew faster than IOPS)")
    return lines
