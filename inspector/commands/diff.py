"""`inspector diff BEFORE AFTER`: what changed; exit 0 no regressions, 1 regressions, 2 error."""
from __future__ import annotations

import argparse
import json
import sys

from inspector.commands.common import CliError
from inspector.diff import diff_snapshots
from inspector.model import to_jsonable
from inspector.snapshot import SnapshotError, read_snapshot


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="compare two snapshots (exit 1 on regressions)")
    p.add_argument("before", metavar="BEFORE")
    p.add_argument("after", metavar="AFTER")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        before, after = read_snapshot(args.before), read_snapshot(args.after)
    except SnapshotError as exc:
        raise CliError(str(exc)) from None
    result = diff_snapshots(before, after, args.before, args.after)
    status = 1 if result.regressions else 0
    if args.json:
        json.dump({"before": args.before, "after": args.after, "regressions": len(result.regressions),
                   "changes": to_jsonable(result.changes)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return status
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    console = Console()
    if not result.changes:
        console.print(Text(f"No changes between {args.before} and {args.after}.", style="green"))
        return 0
    table = Table(title=f"{args.before} -> {args.after}", title_justify="left", show_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column("area", no_wrap=True)
    table.add_column("what")
    table.add_column("before")
    table.add_column("after")
    order = sorted(result.changes, key=lambda c: (not c.regression, c.category, c.path))
    for c in order:
        mark = Text(" REGRESSION ", style="bold white on red") if c.regression else Text(c.kind)
        table.add_row(mark, c.category, c.note or c.path, _short(c.before), _short(c.after))
    console.print(table)
    console.print(f"{len(result.changes)} changes, {len(result.regressions)} regressions")
    return status


def _short(value) -> str:
    if value is None:
        return "-"
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
