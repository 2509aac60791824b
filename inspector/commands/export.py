"""`inspector export --prometheus [-o FILE] [--probe SPEC]...` (node_exporter textfile format,
atomic write; probe runs as their last figures) or `inspector export --json` (the report)."""
from __future__ import annotations

import argparse
import json
import sys
import time

from inspector.commands import SUMMARIES
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    PROBE_SECONDS,
    CliError,
    Duration,
    add_root_argument,
    check_output,
    eprint,
    exit_epilog,
    parse_probe_specs,
    path_argument,
    root_from_args,
    write_output,
)
from inspector.documents.kinds import report_document
from inspector.outputs.export import prometheus_text
from inspector.outputs.metrics import Sample, probe_metrics
from inspector.report.collect import build_report_forked


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help=SUMMARIES["export"],
                       epilog=exit_epilog(ok="written (a failed --probe run is in the figures: "
                                             "probe_success 0)"))
    add_root_argument(p)
    fmt = p.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--prometheus", action="store_true", help="node_exporter textfile format")
    fmt.add_argument("--json", action="store_true",
                     help="the report as JSON, as report --json (schema: report --schema)")
    p.add_argument("-o", "--output", metavar="FILE", type=path_argument,
                   help="write atomically to FILE, a regular file or a new path (default stdout)")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    p.add_argument("--probe", action="append", default=[], metavar="SPEC",
                   help="with --prometheus: run a short bounded probe and write its latency "
                        "quantiles, ops/s, errors and start time (io:PATH | dns | "
                        "memcached:HOST:PORT, repeatable)")
    p.add_argument("--probe-seconds", type=PROBE_SECONDS, default=3.0, metavar="DURATION",
                   help=f"time bound of each probe run (default 3s, {PROBE_SECONDS.bounds})")
    p.add_argument("--live", type=LIVE_SECONDS, default=0.0, metavar="DURATION",
                   help="with --prometheus: sample the host this long first and write one "
                        "inspector_live_finding gauge per active live finding "
                        f"({LIVE_SECONDS.bounds})")
    p.set_defaults(func=run)


LIVE_SECONDS = Duration(maximum=600)


def run(args: argparse.Namespace) -> int:
    specs = parse_probe_specs(args.probe)
    if specs and not args.prometheus:
        raise CliError("--probe goes with --prometheus (a snapshot keeps probe runs as JSON)")
    if args.live and not args.prometheus:
        raise CliError("--live goes with --prometheus")
    to_file = args.output not in (None, "-")
    if to_file:
        check_output(args.output)     # refused before a 15 s collection, not after
    root = root_from_args(args)
    if specs and not root.live:
        raise CliError("--probe needs the live host; it cannot run against --root")
    live = _live_samples(root, args.live) if args.live else []
    report = build_report_forked(root, timeout=args.timeout)
    if args.prometheus:
        text = prometheus_text(report, run_probes(specs, args.probe_seconds) + live)
    else:
        text = json.dumps(report_document(report), indent=2) + "\n"
    if not to_file:
        sys.stdout.write(text)
        return 0
    if args.prometheus and not args.output.endswith(".prom"):
        eprint(f"note: node_exporter's textfile collector only reads *.prom files ({args.output})")
    write_output(args.output, text.encode())
    return 0


def _live_samples(root, seconds: float) -> list[Sample]:
    from inspector.config import ConfigError, load_config
    from inspector.health.live.session import sample_for
    from inspector.outputs.live_metrics import live_finding_samples
    try:
        thresholds = load_config().live
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    return live_finding_samples(sample_for(root, seconds, thresholds)[0])


def run_probes(specs: list, seconds: float) -> list[Sample]:
    """Each probe in a bounded child (a hung target is a failed run, not a hung export)."""
    if not specs:
        return []
    from inspector.probes.forked_runs import run_probe_forked
    samples: list[Sample] = []
    for spec in specs:
        eprint(f"probing {spec.text} for up to {seconds:g} s ...")
        started = time.time()
        samples += probe_metrics([run_probe_forked(spec, seconds).to_json()], started)
    return samples


def check_textfile(path: str) -> None:
    """`record --textfile PATH` refused at once when it names a device, a directory...."""
    check_output(path, "--textfile")


def write_textfile(path: str, report, runs: list[dict], started: float,
                   extra: list[Sample] | None = None) -> None:
    """The report's metrics, these probe runs' and `extra` (the live findings) into `path`,
    atomically (node_exporter never reads half a file); `record --textfile` writes one per
    sample. CliError when it fails."""
    text = prometheus_text(report, probe_metrics(runs, started) + list(extra or []))
    write_output(path, text.encode(), "--textfile")
