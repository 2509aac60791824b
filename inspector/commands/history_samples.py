"""`inspector history --samples [--by hour|day] [--disk NAME]`: the samples `record --samples`
stored, per hour of day or per day: the CPU's iowait, steal and busy share, and per disk
IOPS, await and %util (mean ±sd across the intervals)."""
from __future__ import annotations

import argparse
import sys

from inspector.commands.common import CliError, eprint
from inspector.documents.kinds import stamped
from inspector.record.bounded_history import BoundedHistory
from inspector.record.history import HistoryError
from inspector.text.escapes import visible


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", action="store_true",
                   help="the recorded live samples (record --samples): CPU iowait and steal, "
                        "per-disk IOPS, await and %%util, instead of probe runs")
    p.add_argument("--disk", action="append", metavar="NAME", default=None,
                   help="with --samples: only this device (repeatable; partitions are shown "
                        "only when named)")


def run_samples(args: argparse.Namespace, db: BoundedHistory) -> int:
    from inspector.model import to_jsonable
    try:
        tables = db.sample_tables(args.by, args.disk)
        db.samples().span()          # counts the intervals the tables left out
    except HistoryError as exc:      # a hung filesystem, a damaged page under the queries
        raise CliError(str(exc)) from None
    if db.damage:
        eprint(f"warning: {visible(db.damage.line(db.path))}")
    if args.disk:
        unknown = [d for d in args.disk if d not in tables.disks]
        if unknown and tables.cpu:
            raise CliError(f"no recorded IO for {', '.join(visible(d) for d in unknown)} "
                           "(`inspector history --samples` lists the devices that did IO)",
                           status=1)
    if args.json:
        from inspector.commands.common import print_json
        from inspector.record.history_table import TIME_BASIS
        print_json(stamped("inspector-history-samples", {
            "by": args.by, "time_basis": TIME_BASIS.replace("run", "interval"),
            "cpu": to_jsonable(tables.cpu), "disks": to_jsonable(tables.disks),
            "utc_offsets_s": tables.offsets}))
        return 0 if tables.cpu else 1
    if not tables.cpu:
        missing = " (no history database yet: `inspector record --samples` creates it)" \
            if getattr(db, "missing", False) else " (`inspector record --samples` records them)"
        raise CliError("no recorded samples" + missing, status=1)
    from rich.console import Console

    from inspector.record.history_table import render_cpu_buckets, render_disk_buckets
    console = Console(file=sys.stdout)
    console.print(render_cpu_buckets(tables.cpu, args.by, tables.offsets))
    for name, buckets in tables.disks.items():
        console.print()
        console.print(render_disk_buckets(visible(name), buckets, args.by, tables.offsets))
    return 0


def recorded_intervals(db: BoundedHistory) -> int:
    return db.samples().span().intervals
