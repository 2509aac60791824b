"""`inspector history --samples [--by hour|day] [--disk NAME]`: the samples `record --samples`
stored, per hour of day or per day: the CPU's iowait, steal and busy share, and per disk
IOPS, await and %util (mean ±sd across the intervals)."""
from __future__ import annotations

import argparse
import sys

from inspector.commands.common import CliError, eprint
from inspector.escapes import visible
from inspector.outputs.documents import stamped
from inspector.record.store import SampleReader


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", action="store_true",
                   help="the recorded live samples (record --samples): CPU iowait and steal, "
                        "per-disk IOPS, await and %%util, instead of probe runs")
    p.add_argument("--disk", action="append", metavar="NAME", default=None,
                   help="with --samples: only this device (repeatable; partitions are shown "
                        "only when named)")


def run_samples(args: argparse.Namespace, db) -> int:
    import sqlite3

    from inspector.model import to_jsonable
    from inspector.record.sample_history import sample_tables
    try:
        tables = sample_tables(db.conn, args.by, disks=args.disk)
    except sqlite3.DatabaseError as exc:     # a damaged page under the tables' queries
        raise CliError(f"{db.path}: damaged: recorded samples unreadable ({exc}); "
                       f"`sqlite3 {db.path} .recover` salvages what is left") from None
    SampleReader(db.conn, db.damage).span()      # counts the intervals the tables left out
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


def recorded_intervals(db) -> int:
    return SampleReader(db.conn).span().intervals
