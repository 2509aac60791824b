"""`inspector history`: hour-of-day and per-day tables of recorded probe runs (`--checks`: of
the recorder's check results);
`inspector history import-ioping LOG`: import logs of periodic ioping runs."""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator

from inspector.commands import SUMMARIES, history_samples
from inspector.commands.common import (
    CliError,
    add_schema_argument,
    eprint,
    exit_epilog,
    path_argument,
)
from inspector.documents.kinds import stamped
from inspector.record.bounded_history import BoundedHistory
from inspector.record.history import (
    CHECK_LEVELS,
    HistoryError,
    ProbeRun,
    aggregate,
    aggregate_checks,
    default_db_path,
)
from inspector.record.history_table import (  # shared with the TUI's history view
    TIME_BASIS,
    render_buckets,
)
from inspector.text.escapes import visible

# a year of ioping runs every 5 minutes logs about 50 MB
MAX_LOG_BYTES = 256 << 20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help=SUMMARIES["history"],
                       epilog=exit_epilog(found="nothing recorded (--json still prints its "
                                                "document)"))
    _db_arg(p)
    p.add_argument("--probe", metavar="KIND:TARGET", help="e.g. io:/var/lib/mysql (default: all)")
    p.add_argument("--by", choices=("hour", "day"), default="hour")
    p.add_argument("--checks", action="store_true",
                   help="the recorder's check results (worst level, frequent findings) "
                        "instead of probe runs")
    history_samples.add_arguments(p)
    p.add_argument("--json", action="store_true")
    add_schema_argument(p, "history", "--json (with --checks, --samples)")
    p.set_defaults(func=run)
    actions = p.add_subparsers(dest="history_action", metavar="ACTION")
    imp = actions.add_parser("import-ioping", help="import a log of periodic ioping runs",
                             epilog=exit_epilog(found="the log held no run it could read"))
    imp.add_argument("log", metavar="LOG",
                     help=f"the log file (- reads stdin; at most {MAX_LOG_BYTES >> 20} MiB)")
    imp.add_argument("--target", help="target name to store (default: from the ioping header)")
    imp.add_argument("--tz", action="append", default=[], metavar="ABBR=ZONE|ZONE",
                     help="what a zone abbreviation in the log means (CST=+08:00, "
                          "IST=Asia/Kolkata); a bare ZONE is the zone of dates written "
                          "without one (date +%%s, date '+%%F %%T'); repeatable")
    _db_arg(imp)
    imp.set_defaults(func=run_import)


def _db_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="FILE", default=argparse.SUPPRESS, type=path_argument,
                   help=f"history database, opened read-only (import: a regular file or a "
                        f"new path; default {default_db_path()})")


def _open(args: argparse.Namespace, create: bool) -> BoundedHistory:
    """Reading (create=False) opens read-only and never writes; a database not there yet
    reads as nothing recorded. Writing creates the default database's directory only. The
    database is used from a child process (inspector.record.bounded_history): one on a hung
    filesystem is given up in seconds, and a signal ends the command."""
    given = getattr(args, "db", None)
    try:
        db = BoundedHistory(given or default_db_path(), create=create, make_dirs=not given,
                            missing_ok=not create)
    except (HistoryError, OSError) as exc:
        raise CliError(str(exc)) from None
    if db.note and not getattr(args, "_noted", False):
        eprint(f"note: {db.path}: {db.note}")
        args._noted = True
    return db


@contextlib.contextmanager
def _history(args: argparse.Namespace, create: bool) -> Iterator[BoundedHistory]:
    """_open's database, closed after the block; its errors (a filesystem that stopped
    answering, a write that failed) are the command's one line."""
    db = _open(args, create)
    try:
        yield db
    except HistoryError as exc:
        raise CliError(str(exc)) from None
    finally:
        db.close()


def _report_damage(db: BoundedHistory) -> None:
    """One line for what reading skipped or mended in a malformed database."""
    if db.damage:
        eprint(f"warning: {visible(db.damage.line(db.path))}")


def _missing(db: BoundedHistory) -> str:
    return (f" (no history database at {db.path} yet: `inspector record` creates it)"
            if db.missing else "")


def run_import(args: argparse.Namespace) -> int:
    # here, not at the top: the log's parser and its locales' dates serve import-ioping only
    from inspector.record.ioping_log import parse_ioping_log
    from inspector.record.log_dates import ZoneRules
    from inspector.roots.input_files import InputError, read_input
    try:
        zones = ZoneRules.parse(args.tz)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    try:   # a regular file or stdin, bounded: LOG=/dev/zero must not fill the memory
        text = read_input(args.log, MAX_LOG_BYTES, "ioping log").decode("utf-8", "replace")
    except InputError as exc:
        raise CliError(str(exc)) from None
    log = parse_ioping_log(text, zones)
    runs = [ProbeRun(ts=r.timestamp, tz_offset_s=r.tz_offset_s, probe="io",
                     target=args.target or r.target or "unknown", source="import-ioping",
                     requests=r.requests, duration_s=r.duration_s, ops_per_s=r.iops,
                     bytes_per_s=r.bytes_per_s, lat_min_us=r.min_us, lat_avg_us=r.avg_us,
                     lat_max_us=r.max_us, lat_mdev_us=r.mdev_us,
                     detail={"form": r.form, "date": r.date_form, "wall_iops": r.wall_iops,
                             "wall_bytes_per_s": r.wall_bytes_per_s, "log": args.log,
                             "line": r.line})
            for r in log.runs]
    if not runs:      # an empty log, empty stdin: nothing imported, no database created,
        _open(args, create=False).close()     # but a refused --db is said as such
    for w in log.warnings:
        eprint(f"{args.log}:{w.line}: warning: {w.message}")
    for p in log.problems:
        eprint(f"{args.log}:{p.line}: skipped: {visible(p.message)}")
    if not runs:
        what = "; ".join(filter(None, [f"{len(log.problems)} lines or runs skipped"
                                       if log.problems else "",
                                       "" if text.strip() else "it is empty"]))
        eprint(f"imported 0 runs from {args.log}: no ioping run in it" +
               (f" ({what})" if what else ""))
        return 1
    with _history(args, create=True) as db:
        added = db.add_runs(runs)
    eprint(f"imported {len(runs)} runs from {args.log} into {db.path}: "
           f"{added} new, {len(runs) - added} already present"
           + (f"; {len(log.problems)} lines or runs skipped" if log.problems else ""))
    return 0


def run_checks(args: argparse.Namespace) -> int:
    with _history(args, create=False) as db:
        checks = db.checks()
    _report_damage(db)
    buckets = aggregate_checks(checks, args.by)
    missing = _missing(db)
    if args.json:
        from inspector.model import to_jsonable
        json.dump(stamped("inspector-history-checks", {
                   "by": args.by, "time_basis": TIME_BASIS, "checks": to_jsonable(buckets),
                   "utc_offsets_s": sorted({c["tz_offset_s"] or 0 for c in checks})}),
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0 if buckets else 1    # the document stays valid; the status says "nothing"
    if not buckets:
        raise CliError("no recorded checks" + missing, status=1)
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    table = Table(show_edge=False, pad_edge=False, padding=(0, 1))
    table.add_column(args.by, no_wrap=True)
    for col in ("samples", *CHECK_LEVELS):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("most frequent findings (samples)")
    for b in buckets:
        table.add_row(b.key, str(b.samples), *(str(b.worst[level]) for level in CHECK_LEVELS),
                      visible(", ".join(f"{f['code']} ({f['samples']})" for f in b.findings))
                      or "-")
    what = "hour of day, local time of each sample" if args.by == "hour" else \
        "day, local date of each sample"
    Console().print(Text(f"recorded checks: by {what}", style="bold"), table)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.samples:
        if args.checks or args.probe:
            raise CliError("--samples, --checks and --probe: choose one")
        with _history(args, create=False) as db:
            return history_samples.run_samples(args, db)
    if args.disk:
        raise CliError("--disk goes with --samples")
    if args.checks:
        if args.probe:
            raise CliError("--checks and --probe: choose one (checks are per sample, not per probe)")
        return run_checks(args)
    probe = target = None
    if args.probe:
        probe, _, target = args.probe.partition(":")
        target = target or None
    with _history(args, create=False) as db:
        groups = [(p, t) for p, t, _ in db.targets() if (probe is None or p == probe)
                  and (target is None or t == target)]
        runs = {f"{p}:{t}": db.runs(p, t) for p, t in groups}
    _report_damage(db)
    tables = {name: aggregate(rows, args.by) for name, rows in runs.items()}
    offsets = {name: sorted({r["tz_offset_s"] or 0 for r in rows}) for name, rows in runs.items()}
    if args.json:
        from inspector.model import to_jsonable
        json.dump(stamped("inspector-history", {
                   "by": args.by, "time_basis": TIME_BASIS, "series": to_jsonable(tables),
                   "utc_offsets_s": offsets}), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0 if tables else 1     # as the text form: exit 1 when nothing was recorded
    if not tables:
        with _history(args, create=False) as db:
            checks = len(db.checks())
            intervals = history_samples.recorded_intervals(db)
        hint = (f" ({checks} recorded checks: inspector history --checks)" if checks
                else f" ({intervals} recorded sample intervals: inspector history --samples)"
                if intervals else _missing(db))
        raise CliError("no recorded runs" + (f" for {args.probe}" if args.probe else "") + hint,
                       status=1)
    from rich.console import Console
    console = Console()
    for name, buckets in tables.items():
        # a target named in an imported log never drives the terminal
        console.print(render_buckets(visible(name), buckets, args.by, offsets[name]))
    return 0


# One rule for every run, recorded here or imported from a log written in another zone: a run
# counts in the hour (and day) of the clock where it ran, i.e. its timestamp plus its stored UTC
# offset. "Slow every night from 3 to 8" is a local-time pattern; a 03:00 JST run and a 03:00
# UTC run both land in hour 03.
