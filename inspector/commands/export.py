"""`inspector export --prometheus [-o FILE]` (node_exporter textfile format, atomic write) or
`inspector export --json` (the report)."""
from __future__ import annotations

import argparse
import json
import sys

from inspector.collect import build_report_forked
from inspector.commands.common import (COLLECTOR_TIMEOUT, add_root_argument, check_output,
                                       eprint, root_from_args, write_output)
from inspector.export import prometheus_text
from inspector.model import to_jsonable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="Prometheus textfile or JSON export of the report")
    add_root_argument(p)
    fmt = p.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--prometheus", action="store_true", help="node_exporter textfile format")
    fmt.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write atomically to FILE, a regular file or a new path (default stdout)")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    to_file = bool(args.output) and args.output != "-"
    if to_file:
        check_output(args.output)     # refused before a 15 s collection, not after
    root = root_from_args(args)
    report = build_report_forked(root, timeout=args.timeout)
    if args.prometheus:
        text = prometheus_text(report)
    else:
        text = json.dumps(to_jsonable(report), indent=2) + "\n"
    if not to_file:
        sys.stdout.write(text)
        return 0
    if args.prometheus and not args.output.endswith(".prom"):
        eprint(f"note: node_exporter's textfile collector only reads *.prom files ({args.output})")
    write_output(args.output, text.encode())
    return 0
