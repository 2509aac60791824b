"""`inspector report`: findings first, then sections; --json for the model."""
from __future__ import annotations

import argparse

from inspector.commands import SUMMARIES
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    CliError,
    add_root_argument,
    add_schema_argument,
    exit_epilog,
    print_json,
    root_from_args,
)
from inspector.documents.kinds import report_document
from inspector.report.collect import build_report_forked
from inspector.report.sections import NAMES, SECTIONS

SECTION_ALIASES = {alias: section.name for section in SECTIONS
                   for alias in (section.name, *section.aliases)}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help=SUMMARIES["report"],
                       epilog=exit_epilog(ok="printed, whatever the findings"))
    add_root_argument(p)
    p.add_argument("--json", action="store_true", help="print the model and findings as JSON")
    add_schema_argument(p, "report")
    p.add_argument("--section", action="append", metavar="NAME",
                   help=f"limit to {'|'.join(NAMES)} (repeatable)")
    p.add_argument("--diagnose", action="store_true", help="print how long each collector took")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout (default 15s, {COLLECTOR_TIMEOUT.bounds})")
    p.set_defaults(func=run)


def parse_sections(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    names: list[str] = []
    for value in values:
        for part in value.split(","):
            key = SECTION_ALIASES.get(part.strip().lower())
            if key is None:
                raise CliError(f"unknown section {part!r} (choose from {', '.join(NAMES)})")
            if key not in names:
                names.append(key)
    return names


def run(args: argparse.Namespace) -> int:
    sections = parse_sections(args.section)
    root = root_from_args(args)
    report = build_report_forked(root, sections, timeout=args.timeout)
    if args.json:
        print_json(report_document(report, timings=args.diagnose))
        return 0
    from rich.console import Console

    from inspector.render.findings import printable
    from inspector.render.report import render_report, render_timings
    console = Console()
    report = printable(report)   # host strings never reach the terminal as escape sequences
    render_report(report, console)
    if args.diagnose:
        console.print(render_timings(report))
    return 0
