"""`inspector snapshot`: the full report plus short bounded probe runs, written atomically."""
from __future__ import annotations

import argparse
import os

from inspector.commands import SUMMARIES
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    PROBE_SECONDS,
    CliError,
    add_root_argument,
    add_schema_argument,
    check_output,
    eprint,
    exit_epilog,
    output_is_directory,
    parse_probe_specs,
    path_argument,
    root_from_args,
    write_output,
)
from inspector.compare.snapshot import build_snapshot, default_name, snapshot_bytes
from inspector.model import known
from inspector.report.collect import build_report_forked


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("snapshot", help=SUMMARIES["snapshot"],
                       epilog=exit_epilog(ok="written (a failed probe run is kept in the "
                                             "snapshot, with its error, and counted on stderr)"))
    add_root_argument(p)
    p.add_argument("-o", "--output", metavar="FILE", type=path_argument,
                   help="a regular file, a new path or a directory (default: "
                        "inspector-HOST-TIME.json); written atomically")
    p.add_argument("--probe", action="append", default=[], metavar="SPEC",
                   help="io:PATH | dns | memcached:HOST:PORT (repeatable; short bounded runs)")
    p.add_argument("--probe-seconds", type=PROBE_SECONDS, default=3.0, metavar="DURATION",
                   help=f"time bound of each probe run (default 3s, {PROBE_SECONDS.bounds})")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    add_schema_argument(p, "snapshot", "the snapshot file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    specs = parse_probe_specs(args.probe)
    # a device, a FIFO, another user's link in /tmp, `newdir/`: refused now, not after the
    # probes; an existing directory gets the default name
    into_directory = args.output is not None and output_is_directory(args.output)
    if args.output is not None and not into_directory:
        check_output(args.output)
    root = root_from_args(args)
    if specs and not root.live:
        raise CliError("--probe needs the live host; it cannot run against --root")
    report = build_report_forked(root, timeout=args.timeout)
    outcomes = _probe_runs(specs, args.probe_seconds)
    hostname = report.host.hostname if known(report.host.hostname) else None
    out = args.output or default_name(hostname)
    if into_directory:
        out = os.path.join(out, default_name(hostname))
    write_output(out, snapshot_bytes(build_snapshot(report, [o.to_json() for o in outcomes])))
    failed = [o for o in outcomes if o.error]
    eprint(f"wrote {out}: {len(report.findings)} findings, {len(outcomes)} probe runs"
           + (f" ({len(failed)} failed)" if failed else ""))
    print(out)
    return 0


def _probe_runs(specs: list, seconds: float) -> list:
    """Each probe in a bounded child: a hung target is a failed run, not a hung snapshot."""
    if not specs:
        return []
    from inspector.probes.forked_runs import run_probe_forked
    outcomes = []
    for spec in specs:
        eprint(f"probing {spec.text} for up to {seconds:g} s ...")
        outcomes.append(run_probe_forked(spec, seconds))
    return outcomes
