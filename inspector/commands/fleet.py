"""`inspector fleet DIR`: one row per host from the snapshots Ansible fetched into DIR
(DIR/<host>/<path>/<file>), worst first; `inspector fleet BEFORE_DIR AFTER_DIR`: per-host diff
summary, exit 0 no regressions, 1 regressions, 2 a host not compared (as `diff`)."""
from __future__ import annotations

import argparse
import json
import shutil
import sys

from inspector.commands.common import COLLECTOR_TIMEOUT, CliError, add_schema_argument
from inspector.compare.fleet import (
    FLEET_SCHEMA_VERSION,
    WHERE_KEYS,
    FleetError,
    compare,
    compare_status,
    matches,
    parse_where,
    read_fleet,
    row_json,
    summary,
    worst_diffs_first,
    worst_first,
)

LEVELS = ("ok", "warn", "unknown", "crit")

EPILOG = """\
layout: what `ansible all -m fetch -a "src=/var/tmp/inspector.json dest=DIR/"` writes,
DIR/<host>/var/tmp/inspector.json (a file directly in DIR is a host of its own). Snapshots
(*.json from `inspector snapshot`) and captures (*.tar.gz) are read; the newest readable
snapshot of a host makes its row; a file that cannot be read is a row of its own, with why.

exit status: one DIR: 0, or 2 when DIR holds nothing to read; two DIRs: as `inspector diff`,
0 no regressions, 1 a host regressed, 2 a host could not be compared (missing or unreadable
in one of them) and none regressed."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fleet", help="one row per host from snapshots fetched with Ansible; "
                                     "two directories: per-host diff",
                       description="A fleet at a glance from snapshots fetched with Ansible.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", metavar="DIR", help="fetch destination (BEFORE_DIR with two)")
    p.add_argument("after", metavar="AFTER_DIR", nargs="?",
                   help="compare each host's snapshot in DIR with the one here")
    p.add_argument("--where", action="append", default=[], metavar="KEY=PATTERN",
                   help=f"only hosts that match (glob, case-insensitive; KEY: "
                        f"{', '.join(WHERE_KEYS)}; e.g. virt=xen, host='db*', code='md.*')")
    p.add_argument("--level", choices=LEVELS,
                   help="only hosts whose worst finding is at least this bad (warn: warn, "
                        "unknown and crit)")
    p.add_argument("--json", action="store_true", help="rows as JSON")
    add_schema_argument(p, "fleet")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout for captures (default 15s, "
                        f"{COLLECTOR_TIMEOUT.bounds})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        where = parse_where(args.where)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.after is not None:
        if where or args.level:
            raise CliError("--where and --level go with one DIR (two compare every host)")
        return _compare(args)
    try:
        rows = read_fleet(args.directory, capture_timeout=args.timeout)
    except FleetError as exc:
        raise CliError(str(exc)) from None
    if not rows:
        raise CliError(f"{args.directory}: no snapshots or captures under it")
    counts = summary(rows)
    shown = worst_first([r for r in rows if matches(r, where, args.level)])
    if args.json:
        json.dump({"schema_version": FLEET_SCHEMA_VERSION, "kind": "inspector-fleet",
                   "directory": args.directory, "summary": counts,
                   "hosts": [row_json(r) for r in shown]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    from inspector.render.fleet import fleet_lines
    filtered = len(shown) if (where or args.level) else None
    for line in fleet_lines(shown, _width(), counts, filtered):
        print(line)
    return 0


def _compare(args: argparse.Namespace) -> int:
    try:
        rows = worst_diffs_first(compare(args.directory, args.after, args.timeout))
    except FleetError as exc:
        raise CliError(str(exc)) from None
    status = compare_status(rows)
    if args.json:
        from dataclasses import asdict
        json.dump({"schema_version": FLEET_SCHEMA_VERSION, "kind": "inspector-fleet-diff",
                   "before": args.directory, "after": args.after, "status": status,
                   "hosts": [{**asdict(r), "status": r.status} for r in rows]},
                  sys.stdout, indent=1)
        sys.stdout.write("\n")
        return status
    if not rows:
        raise CliError(f"{args.directory}, {args.after}: no snapshots or captures under them")
    from inspector.render.fleet import diff_lines
    for line in diff_lines(rows, _width()):
        print(line)
    return status


def _width() -> int:
    return max(60, shutil.get_terminal_size((120, 24)).columns)
