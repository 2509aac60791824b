"""`inspector record`: a headless recorder (for systemd timers or cron) into SQLite.

Each tick runs the report's health rules and the requested probes, and writes them in one
transaction; rows older than --retention are pruned. `--once` suits a timer unit; without it
the recorder loops every --every until SIGTERM/SIGINT (it finishes the current tick first).
`--textfile FILE` also writes each sample's metrics and probe figures for node_exporter's
textfile collector (as `export --prometheus --probe`), atomically."""
from __future__ import annotations

import argparse
import threading
import time

from inspector.commands import SUMMARIES
from inspector.commands.byte_size import ByteSize
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    DURATION_EXAMPLES,
    PROBE_SECONDS,
    CliError,
    Duration,
    add_root_argument,
    eprint,
    exit_epilog,
    format_duration,
    non_negative_int,
    path_argument,
    root_from_args,
)
from inspector.model import known
from inspector.probes.base import ProbeError
from inspector.probes.driver import stop_signals
from inspector.probes.forked_runs import run_probe_forked
from inspector.probes.outcome import ProbeOutcome
from inspector.probes.request import parse_spec
from inspector.record.bounded_history import BoundedHistory
from inspector.record.history import (
    HistoryError,
    HistoryWriteError,
    ProbeRun,
    default_db_path,
    local_offset,
)
from inspector.record.recorder import SampleRecorder
from inspector.report.collect import build_report_forked

EVERY = Duration(maximum=7 * 86400)              # longer: a systemd timer is the tool
RETENTION = Duration(maximum=3650 * 86400)
SAMPLE_EVERY = Duration(maximum=3600)
MIN_SAMPLE_EVERY = 0.2           # each sample reads a few hundred files: not a busy loop
MAX_SIZE = ByteSize(minimum=1 << 20, maximum=1 << 50)
DEFAULT_MAX_SIZE = 512 << 20     # a month of samples of a host with a dozen busy disks


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("record", help=SUMMARIES["record"],
                       epilog=exit_epilog(ok="done, also when stopped by SIGTERM, SIGINT or "
                                             "SIGHUP (the sample under way is finished first)",
                                          found="a sample, an interval of --samples or the "
                                                "--textfile could not be written"))
    add_root_argument(p)
    p.add_argument("--every", type=EVERY, default=300.0, metavar="DURATION",
                   help=f"interval between samples ({DURATION_EXAMPLES}; default 5m, "
                        f"{EVERY.bounds})")
    p.add_argument("--probe", action="append", default=[], metavar="SPEC",
                   help="io:PATH | dns | memcached:HOST:PORT (repeatable)")
    p.add_argument("--probe-seconds", type=PROBE_SECONDS, default=3.0, metavar="DURATION",
                   help=f"time bound of each probe run (default 3s, {PROBE_SECONDS.bounds})")
    p.add_argument("--db", metavar="FILE", type=path_argument,
                   help=f"a regular file or a new path (default {default_db_path()})")
    p.add_argument("--retention", type=RETENTION, default=30 * 86400.0, metavar="DURATION",
                   help=f"prune rows older than this (default 30d, {RETENTION.bounds})")
    p.add_argument("--samples", action="store_true",
                   help="also record every interval of the live figures `top` shows (CPU "
                        "with iowait and steal, iostat -x per disk, NIC rates, errors and "
                        "stalls, top IO processes, D-state tasks) every --sample-every; "
                        "`top --db`, `tui --db --at` and `history --samples` read them back")
    p.add_argument("--sample-every", type=SAMPLE_EVERY, default=10.0, metavar="DURATION",
                   help="interval of --samples (default 10s, 200ms to 1h)")
    p.add_argument("--max-size", type=MAX_SIZE, default=DEFAULT_MAX_SIZE, metavar="SIZE",
                   help=f"keep the database under SIZE (512M, 2G): the oldest recorded "
                        f"samples are pruned first (default {DEFAULT_MAX_SIZE >> 20}M, "
                        f"{MAX_SIZE.bounds}; probe runs and checks are pruned by age only)")
    p.add_argument("--textfile", metavar="FILE.prom", type=path_argument,
                   help="also write each sample's metrics and probe figures (latency "
                        "quantiles, ops/s, errors, time) for node_exporter's textfile "
                        "collector, atomically")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    p.add_argument("--once", action="store_true", help="one sample, then exit (for timers)")
    p.add_argument("--count", type=non_negative_int, default=0, metavar="N",
                   help=f"stop after N samples (0 = forever; {non_negative_int.bounds})")
    p.set_defaults(func=run)


def probe_row(outcome: ProbeOutcome, ts: float, host: str | None) -> ProbeRun:
    """A run as the history database keeps it, filed under its request's target."""
    doc = outcome.to_json()
    s = doc["summary"]
    return ProbeRun(ts=ts, tz_offset_s=local_offset(ts), host=host, probe=doc["kind"],
                    target=outcome.target or "-", source="record", requests=s.get("requests"),
                    duration_s=s.get("duration_s"), ops_per_s=s.get("ops_per_s"),
                    bytes_per_s=s.get("bytes_per_s"), lat_min_us=s.get("min_us"),
                    lat_avg_us=s.get("avg_us"), lat_max_us=s.get("max_us"),
                    lat_mdev_us=s.get("mdev_us"), lat_p99_us=s.get("p99_us"),
                    error=outcome.error, detail=doc)


def run(args: argparse.Namespace) -> int:
    try:
        specs = [parse_spec(s) for s in args.probe]
    except ProbeError as exc:
        raise CliError(str(exc)) from None
    root = root_from_args(args)
    if specs and not root.live:
        # the probes would measure this machine and file it under the capture's hostname
        raise CliError("--probe needs the live host; it cannot run against --root")
    if args.samples and not root.live:
        raise CliError("--samples needs the live host; it cannot sample --root")
    if args.samples and args.sample_every < MIN_SAMPLE_EVERY:
        raise CliError(f"--sample-every must be at least {format_duration(MIN_SAMPLE_EVERY)}")
    if args.samples and args.once:
        raise CliError("--samples needs a running recorder, not --once: an interval is "
                       "between two samples (run `inspector record --samples` as a service)")
    if args.textfile is not None:     # a device or a directory: refused before the first tick
        from inspector.commands.export import check_textfile
        check_textfile(args.textfile)
    try:   # only the default database's directory is created: a --db typo is an error
        # used from a child process: a database on a hung filesystem is given up in seconds
        db = BoundedHistory(args.db or default_db_path(), make_dirs=args.db is None)
    except (HistoryError, OSError) as exc:
        raise CliError(str(exc)) from None
    stop = threading.Event()

    def on_signal(signum: int) -> None:
        eprint(f"inspector record: signal {signum}, finishing the current sample")
        stop.set()

    samples = skipped = textfile_failures = 0
    limit = 1 if args.once else args.count
    recorder = None
    if args.samples:
        recorder = SampleRecorder(db.path, root, args.sample_every, stop,
                                  retention=args.retention, max_bytes=args.max_size, log=eprint)
        eprint(f"recording samples every {format_duration(args.sample_every)} into {db.path}")
        recorder.start()
    # the probes' stop signals; one someone chose to ignore stays ignored (`nohup ... &`)
    with db, stop_signals(on_signal):
        while not stop.is_set():
            start = time.time()
            # reads and probes in a child: bounded
            report = build_report_forked(root, timeout=args.timeout)
            host = report.host.hostname if known(report.host.hostname) else None
            outcomes = [run_probe_forked(spec, args.probe_seconds) for spec in specs]
            findings = [{"level": f.level.label, "subject": f.subject, "code": f.code,
                         "message": f.message} for f in report.findings]
            samples += 1
            stamp = time.strftime('%Y-%m-%d %H:%M:%S')
            try:   # a full disk loses this sample, not the recorder: the next one may fit
                db.record_sample([probe_row(o, start, host) for o in outcomes],
                                 (start, report.worst().label, findings, host))
            except HistoryWriteError as exc:
                skipped += 1
                eprint(f"{stamp} sample {samples} skipped: {exc}")
            else:
                failed = [o.request.text for o in outcomes if o.error]
                eprint(f"{stamp} sample {samples}: worst {report.worst().label}, "
                       f"{len(outcomes)} probes"
                       + (f" (failed: {', '.join(failed)})" if failed else ""))
            if args.textfile is not None:
                from inspector.commands.export import write_textfile
                from inspector.outputs.live_metrics import live_finding_samples
                try:
                    write_textfile(args.textfile, report, [o.to_json() for o in outcomes],
                                   start, live_finding_samples(
                        recorder.live) if recorder is not None else [])
                except CliError as exc:
                    textfile_failures += 1
                    eprint(f"{stamp} textfile not written: {exc}")
            try:
                db.prune(time.time() - args.retention)
                db.prune_to_size(args.max_size)
            except HistoryWriteError as exc:
                eprint(f"{stamp} warning: {exc}")
            if limit and samples >= limit:
                break
            stop.wait(max(0.0, args.every - (time.time() - start)))
        if recorder is not None:
            stop.set()              # --count reached: the sampler ends its interval too
            recorder.join()
            eprint(f"samples: {recorder.stored} intervals recorded"
                   + (f", {recorder.lost} lost" if recorder.lost else ""))
    sample_failed = recorder is not None and bool(recorder.lost or recorder.failure)
    # a timer unit or service shows the failure
    return 1 if skipped or textfile_failures or sample_failed else 0
