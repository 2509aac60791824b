"""`inspector fleet DIR`: one row per host from the snapshots Ansible fetched into DIR
(DIR/<host>/<path>/<file>), worst first; `inspector fleet BEFORE_DIR AFTER_DIR`: per-host diff
summary, exit 0 no regressions, 1 regressions, 2 a host not compared (as `diff`)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from inspector.commands import SUMMARIES
from inspector.commands import ssh as ssh_arguments
from inspector.commands.common import (
    COLLECTOR_TIMEOUT,
    EXIT_ERROR,
    Bounded,
    CliError,
    Duration,
    add_schema_argument,
    eprint,
    path_argument,
)
from inspector.compare.fleet import (
    FLEET_SCHEMA_VERSION,
    WHERE_KEYS,
    FleetError,
    compare,
    compare_status,
    hosts_per_code,
    mark_stale,
    matches,
    parse_where,
    read_fleet,
    row_json,
    summary,
    worst_diffs_first,
    worst_first,
)

LEVELS = ("ok", "warn", "unknown", "crit")
JOBS = Bounded(1, 256, integer=True)
SSH_DEADLINE = Duration(maximum=3600)
STALE_AFTER = Duration(maximum=3650 * 86400)

EPILOG = """\
layout: what `ansible all -m fetch -a "src=/var/tmp/inspector.json dest=DIR/"` writes,
DIR/<host>/var/tmp/inspector.json (a file directly in DIR is a host of its own). Snapshots
(*.json from `inspector snapshot`) and captures (*.tar.gz) are read; the newest readable
snapshot of a host makes its row; a file that cannot be read is a row of its own, with why.

exit status: one DIR: 0, or 2 when DIR holds nothing to read; two DIRs: as `inspector diff`,
0 no regressions, 1 a host regressed, 2 a host could not be compared (missing or unreadable
in one of them) and none regressed. With --ssh, --hosts or --inventory: also 2 when a host
could not be captured (each said on stderr, the others shown)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fleet", help=SUMMARIES["fleet"],
                       description="A fleet at a glance from snapshots fetched with Ansible.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", metavar="DIR", nargs="?",
                   help="fetch destination (BEFORE_DIR with two); with --ssh, -o names it")
    p.add_argument("after", metavar="AFTER_DIR", nargs="?",
                   help="compare each host's snapshot in DIR with the one here")
    p.add_argument("--where", action="append", default=[], metavar="KEY=PATTERN",
                   help=f"only hosts that match (glob, case-insensitive; KEY: "
                        f"{', '.join(WHERE_KEYS)}; e.g. virt=xen, host='db*', code='md.*')")
    p.add_argument("--level", choices=LEVELS,
                   help="only hosts whose worst finding is at least this bad (warn: warn, "
                        "unknown and crit)")
    p.add_argument("--json", action="store_true", help="rows as JSON")
    p.add_argument("--wide", action="store_true",
                   help="rows whole, whatever the terminal's width (they are whenever stdout "
                        "is not a terminal: less, a file)")
    p.add_argument("--stale-after", type=STALE_AFTER, default=86400.0, metavar="DURATION",
                   help=f"mark a host whose snapshot is older than this as stale (default 1d, "
                        f"{STALE_AFTER.bounds})")
    add_schema_argument(p, "fleet")
    hosts = p.add_argument_group("capturing the hosts first, over ssh (only a POSIX shell on them)")
    hosts.add_argument("--ssh", dest="ssh_hosts", metavar="HOST", nargs="+", default=[],
                       type=ssh_arguments._destination,
                       help="capture these hosts ([USER@]HOST or ssh://[USER@]HOST[:PORT]) "
                            "into -o DIR, then show the table")
    hosts.add_argument("--hosts", metavar="FILE", help="hosts to capture, one per line")
    hosts.add_argument("--inventory", metavar="FILE",
                       help="an Ansible inventory (INI, or the JSON of `ansible-inventory "
                            "--list`): its hosts, with ansible_host, ansible_user, ansible_port")
    hosts.add_argument("-o", "--output", metavar="DIR", type=path_argument,
                       help="where the captures go (DIR/<host>/inspector-<host>.tar.gz)")
    hosts.add_argument("--ssh-option", metavar="OPTION", action="append", default=[],
                       type=ssh_arguments._option,
                       help="an ssh -o option for every host (repeatable)")
    hosts.add_argument("--jobs", type=JOBS, default=8, metavar="N",
                       help=f"hosts captured at a time (default 8, {JOBS.bounds})")
    hosts.add_argument("--deadline", type=SSH_DEADLINE, default=None, metavar="DURATION",
                       help=f"give a host up after this long (default 3m, {SSH_DEADLINE.bounds})")
    p.add_argument("--timeout", type=COLLECTOR_TIMEOUT, default=15.0, metavar="DURATION",
                   help=f"per-collector timeout for captures (default 15s, "
                        f"{COLLECTOR_TIMEOUT.bounds})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        where = parse_where(args.where)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    failed = 0
    if args.ssh_hosts or args.hosts or args.inventory:
        failed = _capture_hosts(args)
    elif args.output is not None:
        raise CliError("-o goes with --ssh, --hosts or --inventory (the hosts to capture)")
    if args.directory is None:
        raise CliError("the directory to read is missing (DIR, or -o DIR with --ssh)")
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
    counts["stale"] = mark_stale(rows, args.stale_after)
    shown = worst_first([r for r in rows if matches(r, where, args.level)])
    codes = hosts_per_code(shown)
    if args.json:
        json.dump({"schema_version": FLEET_SCHEMA_VERSION, "kind": "inspector-fleet",
                   "directory": args.directory, "summary": counts, "codes": codes,
                   "hosts": [row_json(r) for r in shown]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return EXIT_ERROR if failed else 0
    from inspector.render.fleet import fleet_lines
    from inspector.text.durations import format_duration
    filtered = len(shown) if (where or args.level) else None
    for line in fleet_lines(shown, _width(args), counts, filtered, codes,
                            format_duration(args.stale_after)):
        print(line)
    return EXIT_ERROR if failed else 0


def _capture_hosts(args: argparse.Namespace) -> int:
    """Capture the hosts named into -o DIR (made private when new); their table is then read
    from DIR as any. Returns how many could not be captured (each said on stderr)."""
    from inspector.remote.fleet import (
        FleetListError,
        capture_fleet,
        host_dirs,
        hosts_from_file,
        hosts_from_inventory,
    )
    if args.output is None:
        raise CliError("--ssh, --hosts and --inventory need -o DIR (where the captures go)")
    if args.after is not None or (args.directory is not None and args.directory != args.output):
        raise CliError("with --ssh the table is read from -o DIR: give no other DIR")
    try:
        named = [(h, h) for h in args.ssh_hosts]
        if args.hosts:
            named += [(h, h) for h in hosts_from_file(args.hosts)]
        if args.inventory:
            named += list(hosts_from_inventory(args.inventory).items())
        hosts = host_dirs((_host_name(name), destination) for name, destination in named)
        if not hosts:
            raise CliError("no host to capture")
        os.makedirs(args.output, mode=0o700, exist_ok=True)
        results = capture_fleet(hosts, args.output, tuple(args.ssh_option), jobs=args.jobs,
                                deadline=args.deadline or 180.0,
                                tool_timeout=min(10.0, args.timeout))
    except FleetListError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"-o {args.output}: {exc.strerror or exc}") from None
    failed = [r for r in results if r.error]
    for r in results:
        if r.error:
            eprint(f"{r.host}: not captured: {r.error}")
        elif r.partial:
            eprint(f"{r.host}: partial capture: {r.partial}")
    eprint(f"captured {len(results) - len(failed)} of {len(results)} hosts into {args.output}")
    args.directory = args.output
    return len(failed)


def _host_name(name: str) -> str:
    from inspector.remote.ssh import host_label
    return host_label(name) if "@" in name or name.startswith("ssh://") else name


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
    for line in diff_lines(rows, _width(args)):
        print(line)
    return status


def _width(args: argparse.Namespace) -> int | None:
    """The terminal's width to fit rows to; None (rows whole) into a pipe or a file, where
    nothing reads the width and a cut row is lost (`fleet DIR | less` cut them at 126)."""
    if args.wide or not sys.stdout.isatty():
        return None
    return max(60, shutil.get_terminal_size((120, 24)).columns)
